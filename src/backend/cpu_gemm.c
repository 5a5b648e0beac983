/* "cpu" backend GEMMs: OpenBLAS cblas_sgemm, row-major. */
#include <cblas.h>

#include "backend/cpu_ops.h"

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
