/* The cpu backend's product of a few rows times a matrix stored (N, K), in float at the vector width
 * SIMD_W of cpu_simd.h, included once per width (cpu_kern_w16.c, cpu_kern_w8.c): cpu_gemm's route
 * for C = alpha A B^T + beta C with 2 to CPU_FEW_ROWS rows (several samples generated at once times a
 * linear layer's weight), where the packed GEMM would copy the whole of B for them.
 *
 * Dot products, each row of B read from memory once: a block of 4 rows of A and SIMD_W / 4 rows of B
 * keeps its SIMD_W sums in registers, one vector each (the k's in its lanes), and folds them into one
 * vector at the end, lane i the sum of vector i. The block's rows of B meet every 4 rows of A while
 * they are in the first-level cache. Each sum adds K / SIMD_W lane products per lane, then the lanes
 * in a tree: another order than the packed GEMM's, as every route's is. */
#include "backend/cpu_ops.h"
#include "backend/cpu_simd.h"

#define RB_ROWS 4             /* rows of A per block */
#define RB_COLS (SIMD_W / 4) /* rows of B per block: RB_ROWS x RB_COLS = SIMD_W sums */

/* Lane RB_COLS r + j of the result: the dot product over K of A's row min(r, R-1) with B's row
 * min(j, J-1) (rows past R and J repeat the last: their sums are not kept). */
SIMD_TARGET static vf SIMD_NAME(rows_block)(int K, const float *a, int lda, int R, const float *b, int ldb, int J) {
  vf acc[SIMD_W];
  const float *ar[RB_ROWS], *br[RB_COLS];
#pragma GCC unroll 16
  for (int i = 0; i < SIMD_W; i++) acc[i] = vf_zero();
  for (int r = 0; r < RB_ROWS; r++) ar[r] = a + (size_t)(r < R ? r : R - 1) * lda;
  for (int j = 0; j < RB_COLS; j++) br[j] = b + (size_t)(j < J ? j : J - 1) * ldb;
  for (int k = 0; k < K; k += SIMD_W) {
    const int n = K - k < SIMD_W ? K - k : SIMD_W; /* the tail's lanes past K load zeros */
    vf bv[RB_COLS];
#pragma GCC unroll 4
    for (int j = 0; j < RB_COLS; j++) bv[j] = n == SIMD_W ? vf_loadu(br[j] + k) : vf_loadu_n(br[j] + k, n);
#pragma GCC unroll 4
    for (int r = 0; r < RB_ROWS; r++) {
      const vf av = n == SIMD_W ? vf_loadu(ar[r] + k) : vf_loadu_n(ar[r] + k, n);
#pragma GCC unroll 4
      for (int j = 0; j < RB_COLS; j++) acc[RB_COLS * r + j] = vf_fmadd(av, bv[j], acc[RB_COLS * r + j]);
    }
  }
  vf sums[SIMD_W]; /* acc's address is never taken, so it stays in registers through the loop */
#pragma GCC unroll 16
  for (int i = 0; i < SIMD_W; i++) sums[i] = acc[i];
  return vf_fold_sums(sums);
}

/* C (M, N) = alpha A (M, K) B^T + beta C, B stored (N, K); beta 0: C unread. */
SIMD_TARGET void SIMD_NAME(cpu_gemm_rows)(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                                          int ldb, float beta, float *C, int ldc) {
  for (int j0 = 0; j0 < N; j0 += RB_COLS) {
    const int J = N - j0 < RB_COLS ? N - j0 : RB_COLS;
    for (int i0 = 0; i0 < M; i0 += RB_ROWS) {
      const int R = M - i0 < RB_ROWS ? M - i0 : RB_ROWS;
      float d[SIMD_W];
      vf_storeu(d, SIMD_NAME(rows_block)(K, A + (size_t)i0 * lda, lda, R, B + (size_t)j0 * ldb, ldb, J));
      for (int r = 0; r < R; r++)
        for (int j = 0; j < J; j++) {
          float *c = C + (size_t)(i0 + r) * ldc + j0 + j;
          *c = alpha * d[RB_COLS * r + j] + (beta == 0.0f ? 0.0f : beta * *c);
        }
    }
  }
}

#undef RB_ROWS
#undef RB_COLS
