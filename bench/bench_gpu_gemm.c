/* bench_gpu_gemm [fp32|bf16]: the cuda backend's gemm against cuBLAS called alone (its own handle
 * and stream, the same compute type), on the matrix products of the zoo models' decks: the linear
 * layers of the GPT decks (rows = batch x context) and the MLP, forward (x W^T), input gradient
 * (dy W) and weight gradient (dy^T x). Row-major shapes: op(A) (M,K) times op(B) (K,N).
 * Prints one line per shape: TFLOP/s of each and their ratio; exits 77 without a GPU. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/timer.h"

typedef struct shape {
  const char *what;
  int ta, tb, M, N, K;
} shape_t;

/* gpt-3d.deck: batch 32 x context 256 = 8192 rows, width 512; gpt-fortunes.deck: 16 x 128 = 2048
 * rows, width 256; mlp-fmnist.deck: batch 128, 784-512-512-10. */
static const shape_t shapes[] = {
    {"gpt-3d qkv fwd", 0, 1, 8192, 1536, 512},     {"gpt-3d qkv dgrad", 0, 0, 8192, 512, 1536},
    {"gpt-3d qkv wgrad", 1, 0, 1536, 512, 8192},   {"gpt-3d proj fwd", 0, 1, 8192, 512, 512},
    {"gpt-3d fc1 fwd", 0, 1, 8192, 2048, 512},     {"gpt-3d fc2 fwd", 0, 1, 8192, 512, 2048},
    {"gpt-3d fc1 wgrad", 1, 0, 2048, 512, 8192},   {"gpt-3d head fwd", 0, 1, 8192, 256, 512},
    {"gpt-fortunes qkv fwd", 0, 1, 2048, 768, 256}, {"gpt-fortunes fc1 fwd", 0, 1, 2048, 1024, 256},
    {"gpt-fortunes fc2 fwd", 0, 1, 2048, 256, 1024}, {"mlp 784-512 fwd", 0, 1, 128, 512, 784},
    {"mlp 512-512 fwd", 0, 1, 128, 512, 512},
};

static cublasHandle_t blas;
static cudaStream_t stream;
static cublasComputeType_t compute;

/* Row-major C = op(A) op(B) through cuBLAS (column-major: C^T = op(B)^T op(A)^T). */
static void direct(const shape_t *s, const float *A, const float *B, float *C) {
  const float one = 1.0f, zero = 0.0f;
  int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
  cublasStatus_t st = cublasGemmEx(blas, s->tb ? CUBLAS_OP_T : CUBLAS_OP_N, s->ta ? CUBLAS_OP_T : CUBLAS_OP_N, s->N,
                                   s->M, s->K, &one, B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda, &zero, C, CUDA_R_32F,
                                   s->N, compute, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "bench_gpu_gemm: cublasGemmEx: status %d\n", (int)st);
    exit(1);
  }
}

static void through_backend(const shape_t *s, const float *A, const float *B, float *C) {
  backend_cuda.gemm(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, s->ta ? s->M : s->K, B, s->tb ? s->K : s->N, 0.0f, C,
                    s->N);
}

/* Seconds per call: 3 warm-up calls, then repetitions until 0.2 s have passed (at least 5). */
static double time_it(void (*f)(const shape_t *, const float *, const float *, float *), const shape_t *s,
                      const float *A, const float *B, float *C) {
  for (int i = 0; i < 3; i++) f(s, A, B, C);
  cudaStreamSynchronize(stream);
  backend_cuda.synchronize();
  int n = 0;
  double t0 = surge_now(), t = 0;
  while (n < 5 || t < 0.2) {
    f(s, A, B, C);
    n++;
    if (n % 5 == 0) {
      cudaStreamSynchronize(stream);
      backend_cuda.synchronize();
      t = surge_now() - t0;
    }
  }
  return t / n;
}

int main(int argc, char **argv) {
  backend_options_t o = backend_default_options();
  o.precision = argc > 1 && strcmp(argv[1], "bf16") == 0 ? BACKEND_BF16 : BACKEND_FP32;
  int input_error = 0;
  const char *why = backend_cuda.open(&o, &input_error);
  if (why) {
    printf("bench_gpu_gemm: skipped, no GPU: %s\n", why);
    return 77;
  }
  const backend_context_t *c = backend_cuda.context();
  compute = o.precision == BACKEND_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cudaStreamCreate(&stream) != cudaSuccess ||
      cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "bench_gpu_gemm: cannot make a cuBLAS handle and stream\n");
    return 1;
  }
  printf("# %s, %s products (dense peak %.0f TFLOP/s)\n", c->device, c->precision, c->peak_flops * 1e-12);
  printf("%-24s %6s %6s %6s %14s %14s %7s\n", "gemm", "M", "N", "K", "backend TF/s", "cuBLAS TF/s", "ratio");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const shape_t *s = &shapes[i];
    size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
    float *A = backend_cuda.alloc(na), *B = backend_cuda.alloc(nb), *C = backend_cuda.alloc(nc);
    backend_cuda.fill(A, na, 0.01f);
    backend_cuda.fill(B, nb, 0.02f);
    double flop = 2.0 * s->M * s->N * s->K;
    double tb = time_it(through_backend, s, A, B, C), td = time_it(direct, s, A, B, C);
    printf("%-24s %6d %6d %6d %14.2f %14.2f %7.3f\n", s->what, s->M, s->N, s->K, flop / tb * 1e-12,
           flop / td * 1e-12, td / tb);
    backend_cuda.free(A), backend_cuda.free(B), backend_cuda.free(C);
  }
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  backend_cuda.close();
  return 0;
}
