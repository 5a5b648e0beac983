/* The cuda backend's GEMMs (src/backend/cuda_blas.c) as built, on the host: cuBLAS's three products
 * (cublasGemmEx, cublasGemmStridedBatchedEx, cublasGemmBatchedEx) are column-major loops in double
 * here, checking their arguments as cuBLAS does (sizes, leading dimensions, types), and the kernels
 * the file launches (scale, grid pointers, bfloat16 widening, column sums) are their contracts in
 * plain C. So what runs is the file's own arithmetic: the row-major to column-major mapping, the
 * strides of a batch and of a grid's three forms, the widened bfloat16 operand's span, and
 * gemm_tn_rows's blocks of rows and parts of C (issue 32: never run on a GPU). Each result is
 * compared with a row-major product in double. CUDA builds (the toolkit's headers, no GPU, no CUDA
 * library). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_blas_api.h"
#include "backend/cuda_impl.h"
#include "backend/tn_parts.h"
#include "core/bf16.h"
#include "core/error.h"
#include "tap.h"

/* ---- cuBLAS as loops (column-major, as the library) */

static int calls_gemm, calls_strided, calls_batched, refused;

/* op(X)(i, j) of a column-major X with leading dimension ld */
static double at(const float *X, int ld, int trans, int i, int j) {
  return trans ? X[(size_t)j + (size_t)i * ld] : X[(size_t)i + (size_t)j * ld];
}

/* cuBLAS's checks of one product's arguments: CUBLAS_STATUS_INVALID_VALUE where it refuses them. */
static cublasStatus_t valid(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc,
                            cudaDataType at_, cudaDataType bt, cudaDataType ct) {
  int a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
  if (m < 0 || n < 0 || k < 0 || lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
      ldc < (m > 1 ? m : 1) || at_ != CUDA_R_32F || bt != CUDA_R_32F || ct != CUDA_R_32F ||
      (ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T)) {
    refused++;
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

static void product(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float *A,
                    int lda, const float *B, int ldb, float beta, float *C, int ldc) {
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double s = 0;
      for (int p = 0; p < k; p++) s += at(A, lda, ta != CUBLAS_OP_N, i, p) * at(B, ldb, tb != CUBLAS_OP_N, p, j);
      float *c = &C[(size_t)i + (size_t)j * ldc];
      *c = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * *c)); /* beta 0: C is not read */
    }
}

static cublasStatus_t gemm_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const void *alpha, const void *A, cudaDataType at_, int lda, const void *B,
                              cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                              cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)h, (void)compute, (void)algo;
  calls_gemm++;
  cublasStatus_t s = valid(ta, tb, m, n, k, lda, ldb, ldc, at_, bt, ct);
  if (s == CUBLAS_STATUS_SUCCESS)
    product(ta, tb, m, n, k, *(const float *)alpha, A, lda, B, ldb, *(const float *)beta, C, ldc);
  return s;
}

static cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void *alpha, const void *A, cudaDataType at_, int lda, long long sA,
                                   const void *B, cudaDataType bt, int ldb, long long sB, const void *beta, void *C,
                                   cudaDataType ct, int ldc, long long sC, int batch, cublasComputeType_t compute,
                                   cublasGemmAlgo_t algo) {
  (void)h, (void)compute, (void)algo;
  calls_strided++;
  cublasStatus_t s = valid(ta, tb, m, n, k, lda, ldb, ldc, at_, bt, ct);
  if (batch < 0 || sA < 0 || sB < 0 || sC < 0) s = CUBLAS_STATUS_INVALID_VALUE;
  for (int b = 0; s == CUBLAS_STATUS_SUCCESS && b < batch; b++)
    product(ta, tb, m, n, k, *(const float *)alpha, (const float *)A + b * sA, lda, (const float *)B + b * sB, ldb,
            *(const float *)beta, (float *)C + b * sC, ldc);
  return s;
}

static cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void *alpha, const void *const A[], cudaDataType at_, int lda,
                                   const void *const B[], cudaDataType bt, int ldb, const void *beta, void *const C[],
                                   cudaDataType ct, int ldc, int batch, cublasComputeType_t compute,
                                   cublasGemmAlgo_t algo) {
  (void)h, (void)compute, (void)algo;
  calls_batched++;
  cublasStatus_t s = valid(ta, tb, m, n, k, lda, ldb, ldc, at_, bt, ct);
  for (int b = 0; s == CUBLAS_STATUS_SUCCESS && b < batch; b++)
    product(ta, tb, m, n, k, *(const float *)alpha, A[b], lda, B[b], ldb, *(const float *)beta, C[b], ldc);
  return s;
}

cuda_blas_api_t cuda_blas_api;

/* ---- what cuda_blas.c takes from the rest of the backend */

static int row_block = 4;
cudaStream_t cuda_stream(void) { return NULL; }
cublasHandle_t cuda_blas(void) { return (cublasHandle_t)&row_block; /* any handle */ }
cublasComputeType_t cuda_model_compute(void) { return CUBLAS_COMPUTE_32F; }
int cuda_row_block(void) { return row_block; }
void cuda_check_blas(cublasStatus_t e, const char *what) {
  if (e != CUBLAS_STATUS_SUCCESS) surge_fail(1, "cuda: %s failed (cuBLAS status %d)", what, (int)e);
}
int cuda_lt_linear(int rows, int out, int in, const float *x, const float *w, const float *b, float *pre, float *y) {
  (void)rows, (void)out, (void)in, (void)x, (void)w, (void)b, (void)pre, (void)y;
  return 0; /* cuBLASLt declines: cuBLAS's GEMM and the bias kernel */
}
void cuda_bias_add_rows(int rows, int cols, const float *b, float *y) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) y[(size_t)r * cols + c] += b[c];
}

static void *slot[CUDA_WS_SLOTS];
static size_t slot_bytes[CUDA_WS_SLOTS], most_part;
void *cuda_workspace(int s, size_t bytes) {
  if (s < 0 || s >= CUDA_WS_SLOTS) abort();
  if (bytes > slot_bytes[s]) slot[s] = realloc(slot[s], bytes), slot_bytes[s] = bytes;
  if (s == CUDA_WS_PART && bytes > most_part) most_part = bytes;
  for (size_t i = 0; i < bytes / sizeof(float); i++) ((float *)slot[s])[i] = NAN; /* what a call left is not read */
  return slot[s];
}

void cuk_scale_matrix(int M, int N, float beta, float *C, int ldc, cudaStream_t s) {
  (void)s;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
}

void cuk_grid_pointers(const float *A, const float *B, float *C, const gemm_grid_t *g, void **ptr, cudaStream_t s) {
  (void)s;
  size_t n = (size_t)g->batch[0] * g->batch[1];
  for (int i = 0; i < g->batch[0]; i++)
    for (int j = 0; j < g->batch[1]; j++) {
      size_t q = (size_t)i * g->batch[1] + j;
      ptr[q] = (void *)(A + i * g->sA[0] + j * g->sA[1]);
      ptr[n + q] = (void *)(B + i * g->sB[0] + j * g->sB[1]);
      ptr[2 * n + q] = C + i * g->sC[0] + j * g->sC[1];
    }
}

void cuk_from_bf16(size_t n, const uint16_t *x, float *y, cudaStream_t s) {
  (void)s;
  for (size_t i = 0; i < n; i++) y[i] = bf16_value(x[i]);
}

void cuk_colsum_add(const float *x, long rows, int cols, long ld, float *out, int ocols, long ld_out, cudaStream_t s) {
  (void)s;
  for (int c = 0; c < cols; c++) {
    double sum = 0;
    for (long r = 0; r < rows; r++) sum += x[r * ld + c];
    float *o = &out[(c / ocols) * ld_out + c % ocols];
    *o = (float)(*o + sum);
  }
}

/* ---- the checks: row-major products in double */

static float *randoms(size_t n, unsigned seed) {
  float *x = xmalloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return x;
}

/* The largest |C - (alpha op(A) op(B) + beta C0)| relative to the terms' size, over one matrix. */
static double worst(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                    float beta, const float *C0, const float *C, int ldc) {
  double w = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0, size = 0;
      for (int p = 0; p < K; p++) {
        double a = ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
        double b = tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
        s += a * b, size += fabs(a * b);
      }
      double want = alpha * s + (double)beta * C0[(size_t)i * ldc + j];
      double scale = fabs(alpha) * size + fabs(beta * C0[(size_t)i * ldc + j]) + 1e-30;
      double d = fabs(C[(size_t)i * ldc + j] - want) / scale;
      if (d > w) w = d;
    }
  return w;
}

/* gemm for every transposition, leading dimensions above the minimum, beta 0 over NaNs and beta 0.5. */
static void check_gemm(void) {
  const int M = 7, N = 5, K = 9, pad = 3;
  for (int ta = 0; ta <= 1; ta++)
    for (int tb = 0; tb <= 1; tb++)
      for (int b = 0; b <= 1; b++) {
        const float beta = b ? 0.5f : 0.0f;
        int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
        float *A = randoms((size_t)(ta ? K : M) * lda, 1), *B = randoms((size_t)(tb ? N : K) * ldb, 2);
        float *C0 = randoms((size_t)M * ldc, 3), *C = xmalloc((size_t)M * ldc * sizeof *C);
        if (!b) /* beta 0: C is not read, whatever it holds */
          for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = NAN, C0[i] = 0.0f;
        else
          memcpy(C, C0, (size_t)M * ldc * sizeof *C);
        cuda_gemm(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C, ldc);
        double w = worst(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C0, C, ldc);
        tap_ok(w < 1e-6, "gemm ta=%d tb=%d beta=%g (%dx%dx%d, leading dimensions +%d): within %.1e of the product",
               ta, tb, (double)beta, M, N, K, pad, w);
        free(A), free(B), free(C0), free(C);
      }
}

/* The grid's matrix (i, j) checked against its product; returns the worst. */
static double worst_grid(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float beta, const float *C0, const float *C, int ldc, const gemm_grid_t *g) {
  double w = 0;
  for (int i = 0; i < g->batch[0]; i++)
    for (int j = 0; j < g->batch[1]; j++) {
      double d = worst(ta, tb, M, N, K, 0.75f, A + i * g->sA[0] + j * g->sA[1], lda, B + i * g->sB[0] + j * g->sB[1],
                       ldb, beta, C0 + i * g->sC[0] + j * g->sC[1], C + i * g->sC[0] + j * g->sC[1], ldc);
      if (d > w) w = d;
    }
  return w;
}

/* gemm_grid's three forms (one dimension of 1, strides one apart, pointer arrays) and its bfloat16 form. */
static void check_grid(void) {
  const int M = 6, N = 4, K = 5;
  struct {
    const char *form;
    gemm_grid_t g;
    int strided, batched;
  } cases[] = {
      {"a dimension of 1", {{3, 1}, {40, 0}, {30, 0}, {30, 0}}, 1, 0},
      {"strides one apart", {{2, 3}, {120, 40}, {90, 30}, {90, 30}}, 1, 0},
      {"pointer arrays", {{2, 3}, {130, 40}, {100, 30}, {95, 30}}, 0, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int t = 0; t <= 1; t++) {
      const gemm_grid_t *g = &cases[c].g;
      int ta = t, tb = !t, lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 1;
      size_t nA = 400, nB = 400, nC = 400;
      float *A = randoms(nA, 4), *B = randoms(nB, 5), *C0 = randoms(nC, 6), *C = xmalloc(nC * sizeof *C);
      memcpy(C, C0, nC * sizeof *C);
      int s0 = calls_strided, b0 = calls_batched;
      cuda_gemm_grid(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, 0.25f, C, ldc, g);
      double w = worst_grid(ta, tb, M, N, K, A, lda, B, ldb, 0.25f, C0, C, ldc, g);
      int form = (calls_strided - s0 == cases[c].strided) && (calls_batched - b0 == cases[c].batched);
      tap_ok(w < 1e-6 && form, "gemm_grid %dx%d, %s, ta=%d tb=%d: each matrix within %.1e of its product, one %s call",
             g->batch[0], g->batch[1], cases[c].form, ta, tb, w, cases[c].batched ? "batched" : "strided");

      // the same grid with B held as bfloat16: the product of B rounded to bfloat16, bit for bit
      uint16_t *B16 = xmalloc(nB * sizeof *B16);
      float *Br = xmalloc(nB * sizeof *Br), *C16 = xmalloc(nC * sizeof *C16);
      for (size_t i = 0; i < nB; i++) B16[i] = bf16_bits(B[i]), Br[i] = bf16_value(B16[i]);
      memcpy(C, C0, nC * sizeof *C);
      memcpy(C16, C0, nC * sizeof *C16);
      cuda_gemm_grid(ta, tb, M, N, K, 0.75f, A, lda, Br, ldb, 0.25f, C, ldc, g);
      cuda_gemm_grid_b16(ta, tb, M, N, K, 0.75f, A, lda, B16, ldb, 0.25f, C16, ldc, g);
      tap_ok(memcmp(C, C16, nC * sizeof *C) == 0,
             "gemm_grid_b16 %dx%d, %s, ta=%d tb=%d: bit for bit gemm_grid on B rounded to bfloat16", g->batch[0],
             g->batch[1], cases[c].form, ta, tb);
      free(A), free(B), free(C0), free(C), free(B16), free(Br), free(C16);
    }

  // an empty sum over a grid of pointer arrays: C = beta C, no product
  gemm_grid_t g = cases[2].g;
  float *C = randoms(400, 7), *C0 = xmalloc(400 * sizeof *C0);
  memcpy(C0, C, 400 * sizeof *C0);
  int calls = calls_gemm + calls_strided + calls_batched;
  float one = 0;
  cuda_gemm_grid(0, 0, M, N, 0, 1.0f, &one, 1, &one, N, 0.5f, C, N + 1, &g);
  int ok = calls_gemm + calls_strided + calls_batched == calls;
  for (int i = 0; i < g.batch[0]; i++)
    for (int j = 0; j < g.batch[1]; j++)
      for (int r = 0; r < M; r++)
        for (int q = 0; q < N; q++) {
          size_t e = i * g.sC[0] + j * g.sC[1] + (size_t)r * (N + 1) + q;
          ok &= C[e] == 0.5f * C0[e];
        }
  tap_ok(ok, "gemm_grid with K = 0 over pointer arrays: every matrix scaled by beta, no product");
  free(C), free(C0);
}

/* gemm_tn_rows: C (M,N) += A^T B over K rows (A (K,M), B (K,N)), in blocks of row_block rows, C in parts. */
static void check_tn_rows(int M, int N, int K, int lda_pad, int want_parts) {
  int lda = M + lda_pad, ldb = N, ldc = N + 2;
  float *A = randoms((size_t)K * lda, 8), *B = randoms((size_t)K * ldb, 9);
  float *C0 = randoms((size_t)M * ldc, 10), *C = xmalloc((size_t)M * ldc * sizeof *C);
  memcpy(C, C0, (size_t)M * ldc * sizeof *C);
  most_part = 0;
  cuda_gemm_tn_rows(M, N, K, A, lda, B, ldb, C, ldc);
  double w = worst(1, 0, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C0, C, ldc);
  int blocks = K / row_block + (K % row_block > 0);
  int parts = K <= row_block ? 1 : tn_parts(M, N, sizeof(float) * (size_t)blocks);
  size_t rows_most = (size_t)(M + parts - 1) / parts;
  int ok = w < 1e-6 && parts == want_parts &&
           (K <= row_block ? most_part == 0 : most_part == rows_most * N * sizeof(float) * blocks);
  tap_ok(ok, "gemm_tn_rows %dx%d over %d rows (%d blocks of %d, %d parts of C): within %.1e of the product, "
         "partials %zu bytes", M, N, K, blocks, row_block, parts, w, most_part);
  free(A), free(B), free(C0), free(C);
}

int main(void) {
  cuda_blas_api.GemmEx = gemm_ex;
  cuda_blas_api.GemmStridedBatchedEx = gemm_strided;
  cuda_blas_api.GemmBatchedEx = gemm_batched;

  check_gemm();
  float a = 1, b = 1, *C = randoms(12, 11), C0[12];
  memcpy(C0, C, sizeof C0);
  cuda_gemm(0, 0, 3, 4, 0, 1.0f, &a, 1, &b, 4, 2.0f, C, 4);
  int ok = 1;
  for (int i = 0; i < 12; i++) ok &= C[i] == 2.0f * C0[i];
  tap_ok(ok, "gemm with K = 0: C = beta C");
  free(C);

  // a strided batch of 3 with gaps between the matrices
  {
    const int M = 5, N = 6, K = 4;
    float *A = randoms(200, 12), *B = randoms(200, 13), *C1 = randoms(200, 14), *C2 = xmalloc(200 * sizeof *C2);
    memcpy(C2, C1, 200 * sizeof *C2);
    cuda_gemm_strided(1, 0, M, N, K, 1.0f, A, M, 23, B, N, 29, 1.0f, C2, N, 37, 3);
    double w = 0;
    for (int q = 0; q < 3; q++) {
      double d = worst(1, 0, M, N, K, 1.0f, A + 23 * q, M, B + 29 * q, N, 1.0f, C1 + 37 * q, C2 + 37 * q, N);
      if (d > w) w = d;
    }
    tap_ok(w < 1e-6, "gemm_strided, 3 matrices with gaps: each within %.1e of its product", w);
    free(A), free(B), free(C1), free(C2);
  }

  check_grid();

  check_tn_rows(9, 7, 4, 1, 1);       /* one block: a plain GEMM */
  check_tn_rows(9, 7, 19, 3, 1);      /* 4 full blocks and a rest of 3 */
  check_tn_rows(9, 7, 16, 0, 1);      /* full blocks only */
  check_tn_rows(1024, 1024, 35, 5, 3); /* 9 blocks: 36 MiB of partials, so C in 3 parts */
  check_tn_rows(200, 700, 600, 0, 3); /* 150 blocks: as many parts as 64-row parts allow, 66, 67, 67 rows */

  // linear forward without cuBLASLt: the GEMM, then the bias
  {
    const int rows = 3, out = 4, in = 5;
    float *x = randoms(rows * in, 15), *w = randoms(out * in, 16), *bias = randoms(out, 17), y[12], zero[12] = {0};
    cuda_linear_fwd(rows, out, in, x, w, NULL, bias, y, NULL, 0);
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < out; c++) y[r * out + c] -= bias[c];
    double d = worst(0, 1, rows, out, in, 1.0f, x, in, w, in, 0.0f, zero, y, out);
    tap_ok(d < 1e-6, "linear forward: x w^T + b within %.1e", d);
    free(x), free(w), free(bias);
  }
  tap_ok(refused == 0, "cuBLAS refused no call's arguments (%d refused; %d GEMMs, %d strided, %d batched)", refused,
         calls_gemm, calls_strided, calls_batched);
  return tap_done();
}
