/* "cpu" backend GEMMs: OpenBLAS cblas_sgemm, row-major. */
#include <cblas.h>
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "core/error.h"

void cpu_set_threads(int nthreads) {
  if (nthreads > 0) openblas_set_num_threads(nthreads);
}

static enum CBLAS_TRANSPOSE cpu_trans(int t) { return t ? CblasTrans : CblasNoTrans; }

void cpu_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  cblas_sgemm(CblasRowMajor, cpu_trans(ta), cpu_trans(tb), M, N, K, alpha, A, lda, B, ldb, beta, C,
              ldc);
}

void cpu_gemm_strided(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      size_t sA, const float *B, int ldb, size_t sB, float beta, float *C, int ldc,
                      size_t sC, int batch) {
  for (int i = 0; i < batch; i++)
    cpu_gemm(ta, tb, M, N, K, alpha, A + i * sA, lda, B + i * sB, ldb, beta, C + i * sC, ldc);
}

/* Rows per block of gemm_tn_rows: one GEMM sums at most this many rows in float. */
enum { CPU_GEMM_ROW_BLOCK = 1024 };

/* C (M,N) += A^T B over K rows: K <= CPU_GEMM_ROW_BLOCK is one GEMM; longer sums run a GEMM per
 * block of rows into a float temporary and add the blocks in double, so the float rounding covers
 * one block whatever K is. */
void cpu_gemm_tn_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  if (K <= CPU_GEMM_ROW_BLOCK) {
    cpu_gemm(1, 0, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
    return;
  }
  size_t mn = surge_mul_size((size_t)M, (size_t)N, "gemm_tn_rows temporary");
  float *blk = xmalloc(mn * sizeof *blk);
  double *acc = xmalloc(mn * sizeof *acc);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) acc[(size_t)i * N + j] = C[(size_t)i * ldc + j];
  for (int k0 = 0; k0 < K; k0 += CPU_GEMM_ROW_BLOCK) {
    int kb = K - k0 < CPU_GEMM_ROW_BLOCK ? K - k0 : CPU_GEMM_ROW_BLOCK;
    cpu_gemm(1, 0, M, N, kb, 1.0f, A + (size_t)k0 * lda, lda, B + (size_t)k0 * ldb, ldb, 0.0f, blk, N);
    for (size_t i = 0; i < mn; i++) acc[i] += (double)blk[i];
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = (float)acc[(size_t)i * N + j];
  free(blk);
  free(acc);
}
