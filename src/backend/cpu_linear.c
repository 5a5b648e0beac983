/* "cpu" backend: a linear layer's forward, Y (M,N) = X (M,K) W (N,K)^T + b, for few rows M without
 * packing W; OpenBLAS and a bias pass otherwise.
 *
 * OpenBLAS copies W into its packed layout on every call (W is N x K: a layer's whole weight), a
 * cost that does not shrink with the rows; at the few rows of a data-parallel rank's share of a
 * small batch it is a large part of the call. Here X, the small operand, is copied transposed
 * into the layer's workspace (Xt: K x Mp, Mp = M rounded up to 16, zero rows past M; the model
 * holds it, cpu_linear_workspace) and W is read in place, in one pass, by register tiles of the
 * kernels' width (cpu_linear_kern.h): on AVX-512 a tile holds 4 vectors of 16 rows x 6 columns in
 * 24 zmm accumulators; per k it loads 4 vectors of Xt and broadcasts W[n][k] of its 6 columns (6
 * rows of W streamed in order, in L1 across the row blocks); on AVX2 3 vectors of 8 rows x 4
 * columns. The bias is added as the tile is written out.
 *
 * Stand-alone, one core, against OpenBLAS on the same shapes (GFLOP/s): M = 64, N = 512, K = 784:
 * 138 vs 116; K = 512: 131 vs 110; M = 32: 115 vs 85; M = 16: 92 vs 59; M = 128 about even (138 vs
 * 133, 128 vs 133) and behind for N <= 256 (the copy of X is paid over few columns). Inside a step
 * the gain is larger, since OpenBLAS's packed copies also push the step's other data out of cache:
 * mlp (784-512-512-10) on 1 rank at batch 128 +0-4%, on 2 ranks at 64 each +10-12% (bench_models
 * --rate, side by side). Hence the limits below (AVX2: doc/results.md). One row (generation, a token
 * at a time) is a matrix-vector product: cpu_gemm's, which reads W once in place (the tile would pad
 * it to 16); in precision = bf16 it reads a forward-only model's bfloat16 copy of W where one is given. */
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "core/error.h"

enum {
  NT_MAX_ROWS = 128,  /* M at most: beyond, OpenBLAS's packing is paid over enough rows */
  NT_MIN_COLS = 384,  /* N at least: below, the copy of X is paid over too few columns */
  NT_MIN_DEPTH = 64,  /* K at least */
};

int cpu_linear_unpacked(int rows, int out, int in) {
  return CPU_KERNELS_BUILT && cpu_simd() != BACKEND_SIMD_NONE && !host_products_bf16() && rows >= 2 &&
         rows <= NT_MAX_ROWS && out >= NT_MIN_COLS && in >= NT_MIN_DEPTH &&
         !cpu_gemm_few_rows(0, 1, rows, out, in); /* its tiles compute 16 rows however few there are */
}

/* Xt for up to NT_MAX_ROWS rows where this CPU takes the unpacked path for the layer's shape. */
size_t cpu_linear_workspace(int out, int in) {
  return cpu_linear_unpacked(NT_MAX_ROWS, out, in) ? (size_t)NT_MAX_ROWS * (size_t)in : 0;
}

/* Xt (K, Mp) = X (M, K) transposed, rows past M zero (Mp a multiple of 16). */
static void transpose_rows(int M, int K, const float *X, int ldx, float *Xt, int Mp) {
  for (int k = 0; k < K; k++) {
    float *row = Xt + (size_t)k * Mp;
    for (int m = 0; m < M; m++) row[m] = X[(size_t)m * ldx + k];
    for (int m = M; m < Mp; m++) row[m] = 0.0f;
  }
}

/* Y = X W^T + b through the tiles of the width in use (cpu_linear_kern.h); Xt: K x Mp floats of
 * workspace. */
static void linear_unpacked(int M, int N, int K, const float *X, const float *W, const float *b, float *Y, float *Xt) {
  const int Mp = (M + 15) / 16 * 16;
  transpose_rows(M, K, X, K, Xt, Mp);
#if CPU_KERNELS_BUILT
  if (cpu_simd() == BACKEND_SIMD_AVX512) cpu_linear_tiles_w16(M, N, K, Xt, Mp, W, b, Y);
  else cpu_linear_tiles_w8(M, N, K, Xt, Mp, W, b, Y);
#else
  (void)N, (void)W, (void)b, (void)Y;
#endif
}

/* Y (M, N) = X (M, K) W (N, K)^T, reading W16 (W as bfloat16) where cpu_gemm_b16 does */
static void product(int M, int N, int K, const float *X, const float *W, const uint16_t *W16, float *Y) {
  cpu_gemm_b16(0, 1, M, N, K, 1.0f, X, K, W, W16, K, 0.0f, Y, N);
}

/* Whether linear_fwd takes the unpacked path for these rows with a workspace of ws_n floats. */
static int takes_unpacked(int rows, int out, int in, size_t ws_n) {
  return cpu_linear_unpacked(rows, out, in) && ws_n >= (size_t)(rows + 15) / 16 * 16 * (size_t)in;
}

void cpu_linear_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b,
                    float *y, float *ws, size_t ws_n) {
  if (rows <= 0 || out <= 0) return;
  if (takes_unpacked(rows, out, in, ws_n)) {
    linear_unpacked(rows, out, in, x, w, b, y, ws);
    return;
  }
  product(rows, out, in, x, w, w16, y);
  if (b) cpu_bias_add_rows(rows, out, b, y);
}

/* The linear forward and the GELU after it: on OpenBLAS's path the bias and the GELU are one pass
 * over the product (pre = pre + b, y = gelu(pre)), where apart they were two; the unpacked tiles
 * add the bias as they write, and the GELU follows. pre is bitwise linear_fwd's y either way. */
void cpu_linear_gelu_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b,
                         float *pre, float *y, float *ws, size_t ws_n) {
  if (rows <= 0 || out <= 0) return;
  if (takes_unpacked(rows, out, in, ws_n)) {
    linear_unpacked(rows, out, in, x, w, b, pre, ws);
    cpu_gelu_fwd((size_t)rows * (size_t)out, pre, y);
    return;
  }
  product(rows, out, in, x, w, w16, pre);
  cpu_bias_gelu_rows(rows, out, b, pre, y);
}
