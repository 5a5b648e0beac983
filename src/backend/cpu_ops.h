/* Internal to the "cpu" backend: the op implementations spread over cpu_*.c, gathered into the
 * table in cpu.c, plus small helpers (lane reductions, a branch-free expf) written so that loops
 * using them vectorise without -ffast-math. */
#ifndef SURGE_BACKEND_CPU_OPS_H
#define SURGE_BACKEND_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"

/* For loops over short rows (tens of floats): GCC would otherwise turn a plain copy or zeroing loop
 * into a call of memcpy/memset per row, which costs more than the row. */
#if defined(__GNUC__) && !defined(__clang__)
#define CPU_SHORT_ROWS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define CPU_SHORT_ROWS
#endif

/* Hot loops are compiled for AVX-512, AVX2 and plain x86-64, the best picked at load time (GCC
 * function multi-versioning). Results do not depend on the pick: no reduction here changes its
 * order with the vector width (lanes are explicit) and ISO C mode contracts no a*b+c into an FMA. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_CLONES
#endif

/* A convolution workspace carved into pieces on 64-byte boundaries: cpu_ws_start is ws's first
 * boundary (at most 15 floats in), cpu_ws_take hands out the next n floats and moves *at past them,
 * rounded up to the next boundary. */
static inline float *cpu_ws_start(float *ws) { return ws + (16 - ((uintptr_t)ws / sizeof(float)) % 16) % 16; }
static inline float *cpu_ws_take(float **at, size_t n) {
  float *p = *at;
  *at = p + (n + 15) / 16 * 16;
  return p;
}

/* Sum of x[0..n) in float with 8 independent lanes (vectorises without -ffast-math). */
static inline float cpu_sum_f(const float *restrict x, int n) {
  float lane[8] = {0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) lane[l] += x[i + l];
  float s = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; i < n; i++) s += x[i];
  return s;
}

/* Independent double lanes of the long sums below: enough to hide the add's latency (4 lanes were
 * one element a cycle, a fifth of a small model's step in the gradient norm). */
#define CPU_D_LANES 16

/* The lanes' total, as a fixed pairwise tree (every ISA build adds them in the same order). */
static inline double cpu_lanes_total(const double *lane) {
  double t[CPU_D_LANES / 2];
  for (int l = 0; l < CPU_D_LANES / 2; l++) t[l] = lane[l] + lane[l + CPU_D_LANES / 2];
  for (int w = CPU_D_LANES / 4; w >= 1; w /= 2)
    for (int l = 0; l < w; l++) t[l] = t[l] + t[l + w];
  return t[0];
}

/* Sum of x[0..n) in double lanes: the error stays at double rounding for any float n. */
static inline double cpu_sum_d(const float *restrict x, size_t n) {
  double lane[CPU_D_LANES] = {0};
  size_t i = 0;
  for (; i + CPU_D_LANES <= n; i += CPU_D_LANES)
    for (int l = 0; l < CPU_D_LANES; l++) lane[l] += (double)x[i + l];
  double s = cpu_lanes_total(lane);
  for (; i < n; i++) s += (double)x[i];
  return s;
}

/* Dot product of a[0..n) and b[0..n) in float with 8 lanes. */
static inline float cpu_dot_f(const float *restrict a, const float *restrict b, int n) {
  float lane[8] = {0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) lane[l] += a[i + l] * b[i + l];
  float s = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

/* Largest of x[0..n) (n >= 1) in 8 lanes; NaNs are skipped unless x[0] is one. */
static inline float cpu_max_f(const float *restrict x, int n) {
  float lane[8];
  for (int l = 0; l < 8; l++) lane[l] = x[0];
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
  float m = lane[0];
  for (int l = 1; l < 8; l++) m = lane[l] > m ? lane[l] : m;
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

static inline uint32_t cpu_float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static inline float cpu_bits_float(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* e^x in float without a libm call, so loops over it vectorise: x = n ln2 + r with |r| <= ln2/2,
 * e^r by its degree-7 Taylor polynomial (relative error below 1e-7), 2^n through the exponent bits.
 * Outside |x| <= 87 the result is 0 (x < -87), Inf (x > 87) or NaN (x NaN): the polynomial result
 * is computed for every x and replaced through bit masks, since a branch (or a select the compiler
 * can fold into one) would keep loops over it from vectorising. */
static inline float cpu_expf(float x) {
  const uint32_t bits = cpu_float_bits(x), abs_bits = bits & 0x7fffffffu;
  const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  const float t = x * 1.44269504f + round_magic;
  const float n = t - round_magic;
  const float r = x - n * 0.693145752f - n * 1.42860677e-6f; /* ln 2 split: n ln2 is exact */
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                                           r * (1.0f / 720 + r * (1.0f / 5040)))))));
  /* n sits in the low mantissa bits of t */
  const uint32_t scale_bits = (cpu_float_bits(t) - cpu_float_bits(round_magic) + 127u) << 23;
  const uint32_t inside = cpu_float_bits(p * cpu_bits_float(scale_bits));
  const uint32_t keep = 0u - (uint32_t)(abs_bits <= 0x42ae0000u);          /* |x| <= 87 */
  const uint32_t nan_mask = 0u - (uint32_t)(abs_bits > 0x7f800000u);      /* x is NaN */
  const uint32_t inf_or_zero = 0x7f800000u & ((bits >> 31) - 1u);          /* +Inf for x > 0 */
  const uint32_t outside = inf_or_zero | (nan_mask & 0x7fc00000u);
  return cpu_bits_float((inside & keep) | (outside & ~keep));
}

/* The table's numerical ops: cpu_NAME for every NAME of BACKEND_MATH_OPS (backend.h), in
 * cpu_gemm.c (the GEMMs, gemm_tn_rows), cpu_elementwise.c (elementwise ops, bias, activations,
 * dot, orthonormalize), cpu_conv.c (im2col, col2im, pooling), cpu_conv_batch.c (the convolution
 * ops), cpu_linear.c (the linear forward and the linear + GELU one), cpu_seq.c (layer norm and
 * add + layer norm, embedding, causal softmax, cross-entropy), cpu_attention.c (blocked causal
 * attention), cpu_norm.c (batch norm) and cpu_optim.c (the optimizers). */
#define CPU_DECLARE(ret, name, params) ret cpu_##name params;
BACKEND_MATH_OPS(CPU_DECLARE)
#undef CPU_DECLARE

/* The table's dot without counting a wait (backend_context_t.waits): for the ops built on it. */
double cpu_dot_sum(const float *x, const float *y, size_t n);

/* cpu_fpmode.c: open = host_open, then the denormal modes of o->flush_denormals on this thread;
 * set/get return 0 where the CPU has no such modes (then denormals stay). */
const char *cpu_open(const backend_options_t *o, int *input_error);
/* host_context with weights16_rows set in precision = bf16 (cpu_linear.c reads the bfloat16 copy where
 * cpu_gemm_bf16_rows says) */
const backend_context_t *cpu_context(void);
int cpu_set_flush_denormals(int on);
int cpu_flush_denormals_on(void);

/* Whether the hand-written kernels (cpu_kern_w16.c, cpu_kern_w8.c) are in this build: x86-64 GCC. */
#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_KERNELS_BUILT 1
#else
#define CPU_KERNELS_BUILT 0
#endif

/* cpu_simd.c: the vector width of the hand-written kernels (direct convolutions, the 2x2 max-pool,
 * the unpacked linear forward). cpu_simd: the width in use (never AUTO; the best the CPU has until
 * cpu_simd_use chose one); cpu_simd_best: the widest this CPU executes; cpu_simd_use: use `want`
 * (AUTO: the best) from now on and return NULL, or return why this CPU cannot (nothing changes). */
backend_simd_t cpu_simd(void);
backend_simd_t cpu_simd_best(void);
const char *cpu_simd_use(backend_simd_t want);
const char *cpu_simd_name(backend_simd_t w);

/* The kernels at 16 floats (AVX-512F) and 8 (AVX2 + FMA), cpu_kern_w16.c and cpu_kern_w8.c: the
 * 2x2 stride-2 max-pool (cpu_pool_kern.h; H/2 x W/2 outputs a plane), the unpacked linear
 * forward's tiles (cpu_linear_kern.h: Y (M,N) = Xt^T W^T + b from Xt (K, Mp), Mp >= M a multiple
 * of 16), the packed SGEMM (cpu_gemm_kern.h: cblas_sgemm's row-major contract, M, N, K >= 1), its
 * rounding to bfloat16 values (as cpu_round_bf16, in registers) and the product of a few rows
 * (cpu_rows_kern.h: C (M,N) = alpha A B^T + beta C, B stored (N, K)). */
#define CPU_WIDTH_KERNELS(W)                                                                                  \
  void cpu_maxpool_2x2_w##W(int P, int H, int Wd, const float *restrict x, float *restrict y,              \
                            float *restrict argmax);                                                        \
  void cpu_linear_tiles_w##W(int M, int N, int K, const float *Xt, int Mp, const float *Wt, const float *b, \
                             float *Y);                                                                     \
  void cpu_sgemm_w##W(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,            \
                      const float *B, int ldb, float beta, float *C, int ldc);                              \
  void cpu_sgemm_round_w##W(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,      \
                            const float *B, int ldb, float beta, float *C, int ldc);                        \
  void cpu_gemm_rows_w##W(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, \
                          float beta, float *C, int ldc);                                                   \
  void cpu_round_bf16_w##W(const float *x, float *y, size_t n);
CPU_WIDTH_KERNELS(16)
CPU_WIDTH_KERNELS(8)
#undef CPU_WIDTH_KERNELS
/* precision = bf16's packed GEMM: cpu_sgemm_round_wW rounds its operands to bfloat16 and multiplies
 * in float (every width); cpu_sgemm_bf16 (cpu_kern_bf16.c) multiplies bfloat16 pairs (AVX-512 BF16,
 * where cpu_gemm_bf16_pairs says the CPU has it). cpu_gemm_kern.h has the details. */
void cpu_sgemm_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc);
/* out[i ldo + j] = sum_k a[i lda + k] B[j ldb + k] (i < M, j < N, k < K) in bfloat16 pairs, each row of B
 * read once for all M rows (cpu_kern_bf16.c) */
void cpu_rows_bf16_dots(int M, int N, int K, const float *a, int lda, const float *B, const uint16_t *B16, int ldb,
                        float *out, int ldo);
int cpu_gemm_bf16_pairs(void);

/* cpu_gemm.c: OpenBLAS's threads per rank; which GEMM runs the shapes where the own kernel
 * (cpu_sgemm_w16) beats OpenBLAS (backend.gemm: AUTO there, BLAS never); whether cpu_gemm runs a
 * shape (M, N, K) on the own kernel now. In precision = bf16 (host_products_bf16) every product
 * runs on the own kernel's bf16 forms, at any shape, thread count and gemm setting. */
void cpu_set_threads(int nthreads);
/* [backend] threads as set (OpenBLAS's, and the team's of the kernels that split their work: cpu_team.h) */
int cpu_threads(void);
/* The team the own packed GEMM splits a product of (M, N, K) over (cpu_gemm_kern.h): [backend] threads, fewer
 * for a small product; 1: none. */
int cpu_gemm_team(int M, int N, int K);
void cpu_gemm_use(backend_gemm_t g);
/* cpu_gemm with B's bfloat16 copy B16 beside it (or NULL), the same bits as cpu_gemm on B: in precision = bf16
 * the paths that read B once for a few rows (cpu_gemm_bf16_rows: generation's products, a linear layer's w16, a
 * key/value cache's queries) read B16, half the bytes. B may be NULL where B16 is given (B held only as
 * bfloat16, gemm_grid_b16): elsewhere op(B) is then widened into floats first. */
void cpu_gemm_b16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                  const uint16_t *B16, int ldb, float beta, float *C, int ldc);
int cpu_gemm_own(int M, int N, int K);
/* Whether cpu_gemm runs an fp32 product on the few-row kernel (cpu_gemm_rows_wW): A as stored, B
 * stored (N, K), 2 to CPU_FEW_ROWS rows, single-threaded, gemm = auto, a kernel width, at the shapes
 * where it wins. */
enum { CPU_FEW_ROWS = 16 };
int cpu_gemm_few_rows(int ta, int tb, int M, int N, int K);

/* A buffer of at least `bytes` (*buf, *cap bytes; both start 0) kept for the thread's next call: ops
 * that run every step with the same shapes would pay page faults for fresh megabytes each call (1%
 * of a gpt step in gemm_tn_rows). 64-byte aligned. Reachable until exit, like OpenBLAS's own buffers. */
void *cpu_kept_buffer(void **buf, size_t *cap, size_t bytes);

/* y[0..n) = x[0..n) rounded to bfloat16 values (core/bf16.h's bf16_round, vectorised; y may be x):
 * precision = bf16's operands for kernels that multiply floats (cpu_gemm_kern.h, cpu_bf16.c). */
void cpu_round_bf16(const float *x, float *y, size_t n);

/* cpu_conv.c */
void cpu_im2col_ld(const float *x, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *col,
                   size_t ld);
void cpu_col2im_ld(const float *col, size_t ld, int C, int H, int W, int KH, int KW, int stride, int ph, int pw,
                   float *dx);

/* cpu_conv_batch.c: the batch is lowered to GEMMs in blocks of whole samples of up to
 * CPU_CONV_BLOCK_COLUMNS output positions (OpenBLAS runs these shapes fastest at 200..800 columns);
 * cpu_conv_lowered_blocks is the samples per block a workspace of ws_n floats holds (0: not one). */
#define CPU_CONV_BLOCK_COLUMNS 512
int cpu_conv_lowered_blocks(const conv_shape_t *s, size_t ws_n);

/* cpu_elementwise.c: pre[r,c] += b[c] (b NULL: none) and y = gelu(pre) over (rows, cols) in one pass
 * (the linear + GELU forward's epilogue on OpenBLAS's path). */
void cpu_bias_gelu_rows(int rows, int cols, const float *b, float *pre, float *y);

/* cpu_linear.c: whether a shape takes the linear forward's path that does not pack the weight (few
 * rows, many outputs: faster than OpenBLAS there). */
int cpu_linear_unpacked(int rows, int out, int in);

/* cpu_bf16.c: a few rows in precision = bf16, C (M, N) = alpha op(A) op(B) + beta C, reading B once (one
 * row; several where B is stored (N, K) and the CPU has bfloat16 pairs), from B16 (B as bfloat16, B then
 * unread: it may be NULL) where it is not NULL. cpu_gemm_bf16_rows: whether cpu_gemm takes that path for M rows;
 * cpu_gemm_bf16_rows_max: the most rows it takes there with B stored (N, K) (the context's weights16_rows). */
enum { CPU_BF16_FEW_ROWS = 32 }; /* the most rows cpu_gemm gives cpu_gemm_rows_bf16 beside one */
void cpu_gemm_rows_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        const uint16_t *B16, int ldb, float beta, float *C, int ldc);
int cpu_gemm_bf16_rows(int M, int tb);
int cpu_gemm_bf16_rows_max(void);

/* cpu_conv_direct.c: "same" convolutions (stride 1; stride 2 on even sizes) with AVX-512 tiles.
 * cpu_conv_direct_blocks is the samples per block it can run in ws_n floats, 0 where it does not
 * apply (shape, CPU, workspace). */
int cpu_conv_direct_blocks(const conv_shape_t *s, size_t ws_n);
size_t cpu_conv_direct_floats(const conv_shape_t *s); /* what it wants; 0 where it does not apply */
void cpu_conv_direct_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu,
                         float *y, float *ws, size_t ws_n);
void cpu_conv_direct_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                         const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n);

#endif
