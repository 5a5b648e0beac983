/* "cpu" backend elementwise ops, reductions, bias and activations: flat loops over restrict
 * pointers that the compiler vectorises. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "backend/orth_rules.h"
#include "core/bf16.h"
#include "core/error.h"

void cpu_fill(float *restrict x, size_t n, float v) {
  if (v == 0.0f && !signbit(v)) { /* zeroing gradients every step: the C library's memset is fastest */
    memset(x, 0, n * sizeof *x);
    return;
  }
  for (size_t i = 0; i < n; i++) x[i] = v;
}

CPU_CLONES void cpu_scale(float *restrict x, size_t n, float a) {
  for (size_t i = 0; i < n; i++) x[i] *= a;
}

CPU_CLONES void cpu_axpy(size_t n, float a, const float *restrict x, float *restrict y) {
  for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

// y may alias a or b (y = y + b), so no restrict here.
CPU_CLONES void cpu_add(size_t n, const float *a, const float *b, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* a block of columns (a concatenation's part): row by row, each a contiguous run */
CPU_CLONES void cpu_copy_cols(int rows, int cols, const float *restrict src, size_t lds, float *restrict dst,
                              size_t ldd, int acc) {
  for (int r = 0; r < rows; r++) {
    const float *restrict in = src + (size_t)r * lds;
    float *restrict out = dst + (size_t)r * ldd;
    if (acc)
      for (int c = 0; c < cols; c++) out[c] += in[c];
    else
      memcpy(out, in, (size_t)cols * sizeof *out);
  }
}

/* The ops that return a value to the host count a wait (backend_context_t.waits); sumsq_add, which
 * keeps its value in backend memory, does not. */
double cpu_sumsq(const float *restrict x, size_t n) {
  host_mem_waited();
  return cpu_dot_sum(x, x, n);
}

void cpu_sumsq_add(const float *restrict x, size_t n, double *acc) { *acc += cpu_dot_sum(x, x, n); }

int cpu_all_finite(const float *restrict x, size_t n) {
  host_mem_waited();
  // A float is NaN or Inf exactly when its exponent bits are all ones.
  const uint32_t exponent = 0x7f800000u;
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &x[i], sizeof bits);
    bad |= (bits & exponent) == exponent;
  }
  return !bad;
}

/* ---- bias */

CPU_CLONES void cpu_bias_add_rows(int rows, int cols, const float *restrict b, float *restrict y) {
  for (int r = 0; r < rows; r++) {
    float *restrict yr = y + (size_t)r * cols;
    for (int c = 0; c < cols; c++) yr[c] += b[c];
  }
}

/* Columns summed per walk down the rows: 1024 (8 KiB of double sums, in L1). Walks of 256 columns read 1 KiB of
 * every row of 4 KiB (gpt's 1024 columns) and ran about half as fast over 2048 x 1024 floats: bias_grad_rows
 * 0.46-0.67 against 0.24-0.26 ms, gelu_bias_bwd 2.9-4.5 against 1.9-2.2 ms [AMD EPYC Zen 4, AVX-512, 2 vCPUs].
 * Each column's sum is in row order whatever the width, so the bits do not depend on it. */
enum { CPU_BIAS_CHUNK = 1024 };

// db[c] += sum over rows of dy[r,c], summed in double per chunk of columns (batches can be long).
CPU_CLONES void cpu_bias_grad_rows(int rows, int cols, const float *restrict dy, float *restrict db) {
  double acc[CPU_BIAS_CHUNK];
  for (int c0 = 0; c0 < cols; c0 += CPU_BIAS_CHUNK) {
    int width = cols - c0 < CPU_BIAS_CHUNK ? cols - c0 : CPU_BIAS_CHUNK;
    for (int c = 0; c < width; c++) acc[c] = 0.0;
    for (int r = 0; r < rows; r++) {
      const float *restrict row = dy + (size_t)r * cols + c0;
      for (int c = 0; c < width; c++) acc[c] += row[c];
    }
    for (int c = 0; c < width; c++) db[c0 + c] = (float)(db[c0 + c] + acc[c]);
  }
}

CPU_CLONES void cpu_bias_add_planes(int N, int C, int HW, const float *restrict b, float *restrict y) {
  for (size_t plane = 0; plane < (size_t)N * C; plane++) {
    const float v = b[plane % (size_t)C];
    float *restrict yp = y + plane * HW;
    for (int i = 0; i < HW; i++) yp[i] += v;
  }
}

// db[c] += sum over samples and positions, in double (N*HW terms per channel).
CPU_CLONES void cpu_bias_grad_planes(int N, int C, int HW, const float *restrict dy, float *restrict db) {
  for (int c = 0; c < C; c++) {
    double s = 0.0;
    for (int n = 0; n < N; n++) s += cpu_sum_d(dy + ((size_t)n * C + c) * HW, (size_t)HW);
    db[c] = (float)(db[c] + s);
  }
}

/* ---- activations */

CPU_CLONES void cpu_relu_fwd(size_t n, const float *restrict x, float *restrict y) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

CPU_CLONES void cpu_relu_bwd(size_t n, const float *restrict x, const float *restrict dy, float *restrict dx,
                             int write) {
  if (write)
    for (size_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
  else
    for (size_t i = 0; i < n; i++) dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
}

CPU_CLONES void cpu_add_relu_fwd(size_t n, const float *restrict a, const float *restrict b, float *restrict y) {
  for (size_t i = 0; i < n; i++) {
    const float v = a[i] + b[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

/* One pass into both; wa, wb: write rather than add (constants where this is inlined below). */
static inline __attribute__((always_inline)) void cpu_add_relu_bwd2(size_t n, const float *restrict y,
                                                                     const float *restrict dy, float *restrict da,
                                                                     float *restrict db, const int wa, const int wb) {
  for (size_t i = 0; i < n; i++) {
    const float g = y[i] > 0.0f ? dy[i] : 0.0f;
    da[i] = wa ? g : da[i] + g;
    db[i] = wb ? g : db[i] + g;
  }
}

/* dx += dy where y > 0, into one or both inputs' gradients (the same adds as relu_bwd then axpy
 * by 1 of its result, so bitwise the unfused pair); one pass where both are distinct */
CPU_CLONES void cpu_add_relu_bwd(size_t n, const float *restrict y, const float *restrict dy, float *da, float *db,
                                 int write_a, int write_b) {
  if (!da || !db || da == db) { /* x + x adds the gradient twice, as the unfused pair does */
    if (da) cpu_relu_bwd(n, y, dy, da, write_a);
    if (db) cpu_relu_bwd(n, y, dy, db, write_b);
    return;
  }
  if (write_a && write_b)
    cpu_add_relu_bwd2(n, y, dy, da, db, 1, 1);
  else if (write_a)
    cpu_add_relu_bwd2(n, y, dy, da, db, 1, 0);
  else if (write_b)
    cpu_add_relu_bwd2(n, y, dy, da, db, 0, 1);
  else
    cpu_add_relu_bwd2(n, y, dy, da, db, 0, 0);
}

/* GELU (tanh form) through the identity 0.5 (1 + tanh(u)) = sigmoid(2u), with
 * u = sqrt(2/pi) (x + 0.044715 x^3): y = x sigmoid(2u), and with s = sigmoid(2u),
 * gelu'(x) = s + 2 x s (1 - s) du/dx. */
#define CPU_GELU_K 0.7978845608f /* sqrt(2/pi) */
#define CPU_GELU_C 0.044715f

static inline float cpu_gelu_gate(float v) {
  return 1.0f / (1.0f + cpu_expf(-2.0f * CPU_GELU_K * v * (1.0f + CPU_GELU_C * v * v)));
}

/* GELU's input as GELU reads it, both ways: rounded to bfloat16 where r (precision = bf16), as a matrix product's
 * operand is, so an input held in bfloat16 (nn/act16.h) gives the same bits. r is a constant where this is inlined. */
static inline float cpu_gelu_in(float v, const int r) { return r ? bf16_round(v) : v; }

static inline float cpu_gelu(float v) { return v * cpu_gelu_gate(v); }

static inline __attribute__((always_inline)) void gelu_fwd_r(size_t n, const float *restrict x, float *restrict y,
                                                              const int r) {
  for (size_t i = 0; i < n; i++) y[i] = cpu_gelu(cpu_gelu_in(x[i], r));
}

CPU_CLONES void cpu_gelu_fwd(size_t n, const float *restrict x, float *restrict y) {
  if (host_products_bf16()) gelu_fwd_r(n, x, y, 1);
  else gelu_fwd_r(n, x, y, 0);
}

/* The second term through v within +-1e4: s (1 - s) is exactly 0 past |v| ~ 10, and v v past 1.8e19
 * (or 2 v past 1.7e38) would be inf, and 0 inf NaN where gelu' is 1 or 0. */
#define GELU_TERM_BOUND 1e4f

static inline float cpu_gelu_grad(float v) {
  const float w = fminf(fmaxf(v, -GELU_TERM_BOUND), GELU_TERM_BOUND);
  const float s = cpu_gelu_gate(v), du = CPU_GELU_K * (1.0f + 3.0f * CPU_GELU_C * w * w);
  return s + 2.0f * w * s * (1.0f - s) * du;
}

static inline __attribute__((always_inline)) void gelu_bwd_r(size_t n, const float *restrict x,
                                                              const float *restrict dy, float *restrict dx, int write,
                                                              const int r) {
  if (write)
    for (size_t i = 0; i < n; i++) dx[i] = dy[i] * cpu_gelu_grad(cpu_gelu_in(x[i], r));
  else
    for (size_t i = 0; i < n; i++) dx[i] += dy[i] * cpu_gelu_grad(cpu_gelu_in(x[i], r));
}

CPU_CLONES void cpu_gelu_bwd(size_t n, const float *restrict x, const float *restrict dy, float *restrict dx,
                             int write) {
  if (host_products_bf16()) gelu_bwd_r(n, x, dy, dx, write, 1);
  else gelu_bwd_r(n, x, dy, dx, write, 0);
}

/* ---- the fused forms' passes (issue 32) */

static inline __attribute__((always_inline)) void bias_gelu_rows_r(int rows, int cols, const float *restrict b,
                                                                    float *restrict pre, float *restrict y,
                                                                    const int rnd) {
  for (int r = 0; r < rows; r++) {
    float *restrict pr = pre + (size_t)r * cols, *restrict yr = y + (size_t)r * cols;
    if (b)
      for (int c = 0; c < cols; c++) pr[c] += b[c];
    for (int c = 0; c < cols; c++) yr[c] = cpu_gelu(cpu_gelu_in(pr[c], rnd));
  }
}

// pre[r,c] += b[c] (b NULL: none), y[r,c] = gelu(pre[r,c]), in one pass.
CPU_CLONES void cpu_bias_gelu_rows(int rows, int cols, const float *restrict b, float *restrict pre,
                                   float *restrict y) {
  if (host_products_bf16()) bias_gelu_rows_r(rows, cols, b, pre, y, 1);
  else bias_gelu_rows_r(rows, cols, b, pre, y, 0);
}

// dpre = dy gelu'(pre) (written) and db[c] += its column sums, in one pass over chunks of columns:
// per column the rows are summed in order in double, as cpu_bias_grad_rows does.
static inline __attribute__((always_inline)) void gelu_bias_bwd_r(int rows, int cols, const float *restrict pre,
                                                                   const float *restrict dy, float *restrict dpre,
                                                                   float *restrict db, const int rnd) {
  double acc[CPU_BIAS_CHUNK];
  for (int c0 = 0; c0 < cols; c0 += CPU_BIAS_CHUNK) {
    int width = cols - c0 < CPU_BIAS_CHUNK ? cols - c0 : CPU_BIAS_CHUNK;
    for (int c = 0; c < width; c++) acc[c] = 0.0;
    for (int r = 0; r < rows; r++) {
      const size_t at = (size_t)r * cols + c0;
      for (int c = 0; c < width; c++) {
        const float g = dy[at + c] * cpu_gelu_grad(cpu_gelu_in(pre[at + c], rnd));
        dpre[at + c] = g;
        acc[c] += g;
      }
    }
    for (int c = 0; c < width; c++) db[c0 + c] = (float)(db[c0 + c] + acc[c]);
  }
}

CPU_CLONES void cpu_gelu_bias_bwd(int rows, int cols, const float *restrict pre, const float *restrict dy,
                                  float *restrict dpre, float *restrict db) {
  if (!db) cpu_gelu_bwd((size_t)rows * (size_t)cols, pre, dy, dpre, 1);
  else if (host_products_bf16()) gelu_bias_bwd_r(rows, cols, pre, dy, dpre, db, 1);
  else gelu_bias_bwd_r(rows, cols, pre, dy, dpre, db, 0);
}

/* ---- low-rank compression */

double cpu_dot(const float *restrict x, const float *restrict y, size_t n) {
  host_mem_waited();
  return cpu_dot_sum(x, y, n);
}

CPU_CLONES double cpu_dot_sum(const float *restrict x, const float *restrict y, size_t n) {
  double lane[CPU_D_LANES] = {0};
  size_t i = 0;
  for (; i + CPU_D_LANES <= n; i += CPU_D_LANES)
    for (int l = 0; l < CPU_D_LANES; l++) lane[l] += (double)x[i + l] * (double)y[i + l];
  double s = cpu_lanes_total(lane);
  for (; i < n; i++) s += (double)x[i] * (double)y[i];
  return s;
}

static double dot_d(const double *restrict a, const double *restrict b, int n) {
  double lane[4] = {0};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++) lane[l] += a[i + l] * b[i + l];
  double s = (lane[0] + lane[2]) + (lane[1] + lane[3]);
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

/* Each matrix is transposed into a column-major double copy (contiguous columns), orthogonalised
 * there by modified Gram-Schmidt and transposed back. */
void cpu_orthonormalize(int batch, int n, int r, float *P, size_t sP) {
  double *c = xmalloc(((size_t)n * (size_t)r + 1) * sizeof *c); /* c[i n + row]: column i */
  double *in = xmalloc(((size_t)r + 1) * sizeof *in);                /* their squared norms as they came in */
  for (int b = 0; b < batch; b++) {
    float *p = P + (size_t)b * sP;
    for (int row = 0; row < n; row++)
      for (int i = 0; i < r; i++) c[(size_t)i * n + row] = p[(size_t)row * r + i];
    for (int i = 0; i < r; i++) in[i] = dot_d(c + (size_t)i * n, c + (size_t)i * n, n);
    for (int i = 0; i < r; i++) {
      double *ci = c + (size_t)i * n, ss = dot_d(ci, ci, n);
      ss = orth_settle_column(c, n, i, 1, (size_t)n, ss, in[i]); /* backend/orth_rules.h */
      double inv = 1.0 / (sqrt(ss) + 1e-8);
      for (int row = 0; row < n; row++) ci[row] *= inv;
      for (int j = i + 1; j < r; j++) {
        double *cj = c + (size_t)j * n, d = dot_d(ci, cj, n);
        for (int row = 0; row < n; row++) cj[row] -= d * ci[row];
      }
    }
    for (int row = 0; row < n; row++)
      for (int i = 0; i < r; i++) p[(size_t)row * r + i] = (float)c[(size_t)i * n + row];
  }
  free(c);
  free(in);
}

CPU_CLONES void cpu_mul(size_t n, const float *restrict a, const float *restrict b, float *restrict y, int acc) {
  if (acc)
    for (size_t i = 0; i < n; i++) y[i] += a[i] * b[i];
  else
    for (size_t i = 0; i < n; i++) y[i] = a[i] * b[i];
}
