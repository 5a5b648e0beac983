/* The unpacked linear forward's tiles (cpu_linear.c tells the method), written once over the
 * vector width SIMD_W of cpu_simd.h and included once per width (cpu_kern_w16.c, cpu_kern_w8.c).
 * A tile holds NT_MV vectors of W rows x NT_COLS columns of Y in accumulators (AVX-512: 4 x 16
 * rows x 6 columns, 24 zmm; AVX2: 3 x 8 rows x 4 columns, 12 ymm); per k it loads NT_MV vectors
 * of Xt and broadcasts W[n][k] of its columns. */
#include "backend/cpu_ops.h"
#include "backend/cpu_simd.h"

#if SIMD_W == 16
#define NT_MV 4
#define NT_COLS 6
#else
#define NT_MV 3
#define NT_COLS 4
#endif
#define NT_ROWS (NT_MV * SIMD_W)

#define NT_ACC(j) vf a0##j = vf_zero(), a1##j = a0##j, a2##j = a0##j, a3##j = a0##j;
#define NT_FMA(j)                                                                                  \
  if ((j) < NT_COLS && nj > (j)) {                                                                 \
    const vf w_ = vf_set1(wr[j][k]);                                                               \
    a0##j = vf_fmadd(x0, w_, a0##j);                                                               \
    if (mv > 1) a1##j = vf_fmadd(x1, w_, a1##j);                                                   \
    if (mv > 2) a2##j = vf_fmadd(x2, w_, a2##j);                                                   \
    if (mv > 3) a3##j = vf_fmadd(x3, w_, a3##j);                                                   \
  }
#define NT_STORE(j)                                                                                \
  if ((j) < NT_COLS && nj > (j)) {                                                                 \
    vf_store(T[j], a0##j);                                                                         \
    if (mv > 1) vf_store(T[j] + SIMD_W, a1##j);                                                    \
    if (mv > 2) vf_store(T[j] + 2 * SIMD_W, a2##j);                                                \
    if (mv > 3) vf_store(T[j] + 3 * SIMD_W, a3##j);                                                \
  }

/* T[j][m] = sum over k of xt[k][m] * wr[j][k] for mv vectors of W rows m and nj columns j (both
 * constants where this is inlined). */
SIMD_INLINE void nt_tile(const float *xt, int Mp, int K, const float *const *wr, float (*T)[NT_ROWS], const int mv,
                         const int nj) {
  NT_ACC(0) NT_ACC(1) NT_ACC(2) NT_ACC(3) NT_ACC(4) NT_ACC(5)
  for (int k = 0; k < K; k++) {
    const float *xk = xt + (size_t)k * Mp;
    const vf x0 = vf_loadu(xk), x1 = mv > 1 ? vf_loadu(xk + SIMD_W) : x0, x2 = mv > 2 ? vf_loadu(xk + 2 * SIMD_W) : x0,
             x3 = mv > 3 ? vf_loadu(xk + 3 * SIMD_W) : x0;
    NT_FMA(0) NT_FMA(1) NT_FMA(2) NT_FMA(3) NT_FMA(4) NT_FMA(5)
  }
  NT_STORE(0) NT_STORE(1) NT_STORE(2) NT_STORE(3) NT_STORE(4) NT_STORE(5)
}

/* The full tile, and any other (the last row block or columns). */
SIMD_TARGET static void nt_tile_full(const float *xt, int Mp, int K, const float *const *wr, float (*T)[NT_ROWS]) {
  nt_tile(xt, Mp, K, wr, T, NT_MV, NT_COLS);
}
SIMD_TARGET static void nt_tile_part(const float *xt, int Mp, int K, const float *const *wr, float (*T)[NT_ROWS],
                                     int mv, int nj) {
  nt_tile(xt, Mp, K, wr, T, mv, nj);
}

SIMD_TARGET void SIMD_NAME(cpu_linear_tiles)(int M, int N, int K, const float *Xt, int Mp, const float *W,
                                             const float *b, float *Y) {
  float T[NT_COLS][NT_ROWS] __attribute__((aligned(64)));
  for (int n0 = 0; n0 < N; n0 += NT_COLS) {
    const int nj = N - n0 < NT_COLS ? N - n0 : NT_COLS;
    const float *wr[NT_COLS]; /* past the last column: any valid row, never used */
    float bias[NT_COLS] = {0};
    for (int j = 0; j < NT_COLS; j++) wr[j] = W + (size_t)(n0 + (j < nj ? j : 0)) * K;
    for (int j = 0; j < nj && b; j++) bias[j] = b[n0 + j];
    for (int m0 = 0; m0 < M; m0 += NT_ROWS) {
      const int rows = M - m0 < NT_ROWS ? M - m0 : NT_ROWS, mv = (rows + SIMD_W - 1) / SIMD_W;
      if (mv == NT_MV && nj == NT_COLS) nt_tile_full(Xt + m0, Mp, K, wr, T);
      else nt_tile_part(Xt + m0, Mp, K, wr, T, mv, nj);
      for (int m = 0; m < rows; m++) {
        float *y = Y + (size_t)(m0 + m) * N + n0;
        for (int j = 0; j < nj; j++) y[j] = T[j][m] + bias[j];
      }
    }
  }
}

#undef NT_MV
#undef NT_COLS
#undef NT_ROWS
