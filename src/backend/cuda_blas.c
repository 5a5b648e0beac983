/* The CUDA backend's GEMMs through cuBLAS. Surge's matrices are row-major and cuBLAS's are
 * column-major: a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so every
 * call passes B before A with the sizes N, M swapped; no data moves. The model's products run in
 * its compute type ([backend] precision and tf32, cuda.c); sums the backend owes in true float32
 * (`exact`) always run in CUBLAS_COMPUTE_32F, which cuBLAS never lowers to TF32 in its default math
 * mode. precision = bf16 is cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF on the float operands: cuBLAS may
 * then multiply in bf16 or in TF32 (on an H200 it chose TF32 kernels for most of GPT's shapes);
 * converting the operands to bfloat16 first, which forces bf16 kernels, was measured no faster there
 * (the conversions cost what the kernels saved: doc/gpu.md). */
#include <stdint.h>

#include "backend/cuda_blas_api.h"
#include "backend/cuda_impl.h"
#include "backend/tn_parts.h"
#include "core/error.h"

static cublasOperation_t op(int t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

void cuda_gemm_strided_as(int exact, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                          size_t sA, const float *B, int ldb, size_t sB, float beta, float *C, int ldc, size_t sC,
                          int batch) {
  if (M <= 0 || N <= 0 || batch <= 0) return;
  if (K <= 0) { /* an empty sum: C = beta C */
    for (int b = 0; b < batch; b++) cuk_scale_matrix(M, N, beta, C + b * sC, ldc, cuda_stream());
    return;
  }
  cublasComputeType_t ct = exact ? CUBLAS_COMPUTE_32F : cuda_model_compute();
  if (batch == 1)
    cuda_check_blas(cublasGemmEx(cuda_blas(), op(tb), op(ta), N, M, K, &alpha, B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda,
                                 &beta, C, CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmEx");
  else
    cuda_check_blas(cublasGemmStridedBatchedEx(cuda_blas(), op(tb), op(ta), N, M, K, &alpha, B, CUDA_R_32F, ldb,
                                               (long long)sB, A, CUDA_R_32F, lda, (long long)sA, &beta, C, CUDA_R_32F,
                                               ldc, (long long)sC, batch, ct, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx");
}

void cuda_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc) {
  cuda_gemm_strided_as(0, ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

void cuda_gemm_strided(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, size_t sA,
                       const float *B, int ldb, size_t sB, float beta, float *C, int ldc, size_t sC, int batch) {
  cuda_gemm_strided_as(0, ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
}

/* A grid whose matrices are one stride apart after all (one dimension of 1, or the outer stride a
 * multiple of the inner one) is one strided batch; otherwise cuBLAS's batched GEMM takes arrays of
 * the matrices' addresses, computed on the device. Either way one call for the whole grid. */
void cuda_gemm_grid(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc, const gemm_grid_t *g) {
  int n0 = g->batch[0], n1 = g->batch[1];
  if (n0 <= 0 || n1 <= 0 || M <= 0 || N <= 0) return;
  if (n1 == 1 || n0 == 1) {
    int k = n1 == 1 ? 0 : 1;
    cuda_gemm_strided(ta, tb, M, N, K, alpha, A, lda, g->sA[k], B, ldb, g->sB[k], beta, C, ldc, g->sC[k], n0 * n1);
    return;
  }
  if (g->sA[0] == (size_t)n1 * g->sA[1] && g->sB[0] == (size_t)n1 * g->sB[1] && g->sC[0] == (size_t)n1 * g->sC[1]) {
    cuda_gemm_strided(ta, tb, M, N, K, alpha, A, lda, g->sA[1], B, ldb, g->sB[1], beta, C, ldc, g->sC[1], n0 * n1);
    return;
  }
  if (K <= 0) {
    for (int i = 0; i < n0; i++)
      for (int j = 0; j < n1; j++) cuk_scale_matrix(M, N, beta, C + i * g->sC[0] + j * g->sC[1], ldc, cuda_stream());
    return;
  }
  size_t n = (size_t)n0 * n1;
  void **ptr = cuda_workspace(CUDA_WS_PTR, 3 * n * sizeof(void *)); /* A's, B's, C's addresses */
  cuk_grid_pointers(A, B, C, g, ptr, cuda_stream());
  cuda_check_blas(cublasGemmBatchedEx(cuda_blas(), op(tb), op(ta), N, M, K, &alpha, (const void *const *)(ptr + n),
                                      CUDA_R_32F, ldb, (const void *const *)ptr, CUDA_R_32F, lda, &beta,
                                      (void *const *)(ptr + 2 * n), CUDA_R_32F, ldc, (int)n, cuda_model_compute(),
                                      CUBLAS_GEMM_DEFAULT),
                  "cublasGemmBatchedEx");
}

/* B's span, whatever it covers of the grid (strides and ldb in elements), widened into floats and given to
 * cuda_gemm_grid (the bfloat16 cache is a host backend's: the context's kv16 is 0 here, so this runs in the
 * op tests alone). */
void cuda_gemm_grid_b16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B16,
                        int ldb, float beta, float *C, int ldc, const gemm_grid_t *g) {
  if (g->batch[0] <= 0 || g->batch[1] <= 0 || M <= 0 || N <= 0) return;
  const int rows = tb ? N : K, cols = tb ? K : N; /* B as stored */
  size_t span = 0;                                 /* its elements from the first to the last, gaps included */
  if (rows > 0 && cols > 0)
    span = (size_t)(g->batch[0] - 1) * g->sB[0] + (size_t)(g->batch[1] - 1) * g->sB[1] + (size_t)(rows - 1) * ldb +
           (size_t)cols;
  float *B = cuda_workspace(CUDA_WS_WIDE, surge_mul_size(span ? span : 1, sizeof(float), "bfloat16 operand"));
  cuk_from_bf16(span, B16, B, cuda_stream());
  cuda_gemm_grid(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, g);
}

size_t cuda_linear_workspace(int out, int in) {
  (void)out, (void)in;
  return 0;
}

/* The forward of a linear layer: with a bias, cuBLASLt's product with the bias in its epilogue where
 * cuda_lt_linear takes it; otherwise cuBLAS's GEMM, then the bias kernel. */
void cuda_linear_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b,
                     float *y, float *ws, size_t ws_n) {
  (void)w16, (void)ws, (void)ws_n; /* no bfloat16 copy is made for it (context: weights16 = 0) */
  if (b && cuda_lt_linear(rows, out, in, x, w, b, NULL, y)) return;
  cuda_gemm(0, 1, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  if (b) cuda_bias_add_rows(rows, out, b, y);
}

/* C (M,N) += A^T B over K rows: up to cuda_row_block() rows in one GEMM; longer sums run the
 * blocks as one strided batch into float partials (and the remainder as one more GEMM), whose sum
 * over the blocks is taken in double and added to C once. C's rows run in parts (tn_parts.h), so the
 * partials stay within 16 MiB (at 124M's classifier, 8 blocks in float32 were 1.2 GB of them). */
void cuda_gemm_tn_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  int rb = cuda_row_block();
  if (K <= rb) {
    cuda_gemm(1, 0, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
    return;
  }
  int full = K / rb, rest = K % rb, blocks = full + (rest > 0);
  const int parts = tn_parts(M, N, sizeof(float) * (size_t)blocks), rows_most = (M + parts - 1) / parts;
  size_t mn = surge_mul_size((size_t)rows_most, (size_t)N, "gemm_tn_rows partial sums");
  if (mn > (size_t)INT32_MAX) surge_runtime_error("gemm_tn_rows: a %d x %d part is too large", rows_most, N);
  float *part = cuda_workspace(CUDA_WS_PART, surge_mul_size(mn * sizeof(float), (size_t)blocks, "gemm_tn_rows"));
  for (int p = 0; p < parts; p++) {
    const int i0 = tn_part_row(M, parts, p), m = tn_part_row(M, parts, p + 1) - i0;
    const size_t pn = (size_t)m * N; /* this part's elements: its partials lie pn apart */
    cuda_gemm_strided(1, 0, m, N, rb, 1.0f, A + i0, lda, (size_t)rb * lda, B, ldb, (size_t)rb * ldb, 0.0f, part, N,
                      pn, full);
    if (rest)
      cuda_gemm(1, 0, m, N, rest, 1.0f, A + (size_t)full * rb * lda + i0, lda, B + (size_t)full * rb * ldb, ldb, 0.0f,
                part + (size_t)full * pn, N);
    cuk_colsum_add(part, blocks, (int)pn, (long)pn, C + (size_t)i0 * ldc, N, ldc, cuda_stream());
  }
}
