/* "cpu" backend: a linear layer's forward, Y (M,N) = X (M,K) W (N,K)^T + b, for few rows M without
 * packing W; OpenBLAS and a bias pass otherwise.
 *
 * OpenBLAS copies W into its packed layout on every call (W is N x K: a layer's whole weight), a
 * cost that does not shrink with the rows; at the few rows of a data-parallel rank's share of a
 * small batch it is a large part of the call. Here X, the small operand, is copied transposed
 * into the layer's workspace (Xt: K x Mp, Mp = M rounded up to 16, zero rows past M; the model
 * holds it, cpu_linear_workspace) and W is read in place, in one pass: a tile holds 4 vectors of 16
 * rows x 6 columns in 24 zmm accumulators; per k it loads 4 vectors of Xt and broadcasts W[n][k] of
 * its 6 columns (6 rows of W streamed in order, in L1 across the row blocks). The bias is added as
 * the tile is written out.
 *
 * Stand-alone, one core, against OpenBLAS on the same shapes (GFLOP/s): M = 64, N = 512, K = 784:
 * 138 vs 116; K = 512: 131 vs 110; M = 32: 115 vs 85; M = 16: 92 vs 59; M = 128 about even (138 vs
 * 133, 128 vs 133) and behind for N <= 256 (the copy of X is paid over few columns). Inside a step
 * the gain is larger, since OpenBLAS's packed copies also push the step's other data out of cache:
 * mlp (784-512-512-10) on 1 rank at batch 128 +0-4%, on 2 ranks at 64 each +10-12% (bench_models
 * --rate, side by side). Hence the limits below. One row (generation, a token at a time) is a
 * matrix-vector product: cpu_gemm's, which reads W once in place (the tile would pad it to 16). */
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "core/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NT_BUILT 1
#define NT_AVX512 __attribute__((target("avx512f,fma")))
#else
#define NT_BUILT 0
#endif

enum {
  NT_MAX_ROWS = 128,  /* M at most: beyond, OpenBLAS's packing is paid over enough rows */
  NT_MIN_COLS = 384,  /* N at least: below, the copy of X is paid over too few columns */
  NT_MIN_DEPTH = 64,  /* K at least */
  NT_TILE_ROWS = 64,  /* 4 vectors of 16 rows */
  NT_TILE_COLS = 6
};

int cpu_linear_unpacked(int rows, int out, int in) {
  return NT_BUILT && cpu_has_avx512() && rows >= 2 && rows <= NT_MAX_ROWS && out >= NT_MIN_COLS && in >= NT_MIN_DEPTH;
}

/* Xt for up to NT_MAX_ROWS rows where this CPU takes the unpacked path for the layer's shape. */
size_t cpu_linear_workspace(int out, int in) {
  return cpu_linear_unpacked(NT_MAX_ROWS, out, in) ? (size_t)NT_MAX_ROWS * (size_t)in : 0;
}

#if NT_BUILT
#define NT_ACC(j) __m512 a0##j = _mm512_setzero_ps(), a1##j = a0##j, a2##j = a0##j, a3##j = a0##j;
#define NT_FMA(j)                                                                                  \
  if (nj > (j)) {                                                                                  \
    const __m512 w_ = _mm512_set1_ps(wr[j][k]);                                                    \
    a0##j = _mm512_fmadd_ps(x0, w_, a0##j);                                                        \
    if (mv > 1) a1##j = _mm512_fmadd_ps(x1, w_, a1##j);                                            \
    if (mv > 2) a2##j = _mm512_fmadd_ps(x2, w_, a2##j);                                            \
    if (mv > 3) a3##j = _mm512_fmadd_ps(x3, w_, a3##j);                                            \
  }
#define NT_STORE(j)                                                                                \
  if (nj > (j)) {                                                                                  \
    _mm512_store_ps(T[j], a0##j);                                                                  \
    if (mv > 1) _mm512_store_ps(T[j] + 16, a1##j);                                                 \
    if (mv > 2) _mm512_store_ps(T[j] + 32, a2##j);                                                 \
    if (mv > 3) _mm512_store_ps(T[j] + 48, a3##j);                                                 \
  }

/* T[j][m] = sum over k of xt[k][m] * wr[j][k] for mv vectors of 16 rows m and nj columns j (both
 * constants where this is inlined). */
NT_AVX512 static inline __attribute__((always_inline)) void
nt_tile(const float *xt, int Mp, int K, const float *const *wr, float (*T)[NT_TILE_ROWS], const int mv, const int nj) {
  NT_ACC(0) NT_ACC(1) NT_ACC(2) NT_ACC(3) NT_ACC(4) NT_ACC(5)
  for (int k = 0; k < K; k++) {
    const float *xk = xt + (size_t)k * Mp;
    const __m512 x0 = _mm512_loadu_ps(xk), x1 = mv > 1 ? _mm512_loadu_ps(xk + 16) : x0,
                 x2 = mv > 2 ? _mm512_loadu_ps(xk + 32) : x0, x3 = mv > 3 ? _mm512_loadu_ps(xk + 48) : x0;
    NT_FMA(0) NT_FMA(1) NT_FMA(2) NT_FMA(3) NT_FMA(4) NT_FMA(5)
  }
  NT_STORE(0) NT_STORE(1) NT_STORE(2) NT_STORE(3) NT_STORE(4) NT_STORE(5)
}

/* The full tile, and any other (the last row block or columns). */
NT_AVX512 static void nt_tile_full(const float *xt, int Mp, int K, const float *const *wr, float (*T)[NT_TILE_ROWS]) {
  nt_tile(xt, Mp, K, wr, T, 4, NT_TILE_COLS);
}
NT_AVX512 static void nt_tile_part(const float *xt, int Mp, int K, const float *const *wr, float (*T)[NT_TILE_ROWS],
                                   int mv, int nj) {
  nt_tile(xt, Mp, K, wr, T, mv, nj);
}

/* Xt (K, Mp) = X (M, K) transposed, rows past M zero (Mp a multiple of 16). */
static void transpose_rows(int M, int K, const float *X, int ldx, float *Xt, int Mp) {
  for (int k = 0; k < K; k++) {
    float *row = Xt + (size_t)k * Mp;
    for (int m = 0; m < M; m++) row[m] = X[(size_t)m * ldx + k];
    for (int m = M; m < Mp; m++) row[m] = 0.0f;
  }
}

#endif

/* Y = X W^T + b through the tiles; Xt: K x Mp floats of workspace. */
static void linear_unpacked(int M, int N, int K, const float *X, const float *W, const float *b, float *Y, float *Xt) {
#if NT_BUILT
  const int Mp = (M + 15) / 16 * 16;
  transpose_rows(M, K, X, K, Xt, Mp);
  float T[NT_TILE_COLS][NT_TILE_ROWS] __attribute__((aligned(64)));
  for (int n0 = 0; n0 < N; n0 += NT_TILE_COLS) {
    const int nj = N - n0 < NT_TILE_COLS ? N - n0 : NT_TILE_COLS;
    const float *wr[NT_TILE_COLS]; /* past the last column: any valid row, never used */
    float bias[NT_TILE_COLS] = {0};
    for (int j = 0; j < NT_TILE_COLS; j++) wr[j] = W + (size_t)(n0 + (j < nj ? j : 0)) * K;
    for (int j = 0; j < nj && b; j++) bias[j] = b[n0 + j];
    for (int m0 = 0; m0 < M; m0 += NT_TILE_ROWS) {
      const int rows = M - m0 < NT_TILE_ROWS ? M - m0 : NT_TILE_ROWS, mv = (rows + 15) / 16;
      if (mv == 4 && nj == NT_TILE_COLS) nt_tile_full(Xt + m0, Mp, K, wr, T);
      else nt_tile_part(Xt + m0, Mp, K, wr, T, mv, nj);
      for (int m = 0; m < rows; m++) {
        float *y = Y + (size_t)(m0 + m) * N + n0;
        for (int j = 0; j < nj; j++) y[j] = T[j][m] + bias[j];
      }
    }
  }
#else
  (void)M, (void)N, (void)K, (void)X, (void)W, (void)b, (void)Y, (void)Xt;
#endif
}

void cpu_linear_fwd(int rows, int out, int in, const float *x, const float *w, const float *b, float *y, float *ws,
                    size_t ws_n) {
  if (rows <= 0 || out <= 0) return;
  if (cpu_linear_unpacked(rows, out, in) && ws_n >= (size_t)(rows + 15) / 16 * 16 * (size_t)in) {
    linear_unpacked(rows, out, in, x, w, b, y, ws);
    return;
  }
  cpu_gemm(0, 1, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  if (b) cpu_bias_add_rows(rows, out, b, y);
}
