/* "cpu" backend: precision = bf16 (backend.h) where the cpu multiplies floats itself rather than in
 * bfloat16 pairs (cpu_gemm_kern.h): the rounding, the direct convolutions and one-row products.
 *
 * Direct convolutions (cpu_conv_direct.c) get their operands rounded to bfloat16 values first, into
 * buffers kept per thread (x, w and dy: an extra copy of a layer's largest activation while it
 * runs); a product of two bfloat16 values is exact in float, so the float kernels then compute what
 * bf16 products with float sums do, at 0.91-0.95x fp32's speed (vgg-mini, resnet-mini: the rounding
 * passes); lowered to the bf16 GEMM instead they ran 0.63-0.88x. The bias gradient is a sum, no
 * product: it reads dy unrounded, as ref does.
 *
 * One row (a token generated at a time) is a matrix-vector product that reads the matrix once:
 * in bfloat16 pairs where the CPU has them and the matrix is stored (N, K) (a linear layer's weight,
 * cpu_kern_bf16.c), rounding each element as it goes elsewhere; the packed GEMM would convert the
 * whole weight for one row (generation ran 10x slower through it). A few rows (several samples
 * generated at once) take the same dot products where the CPU has the pairs, each row of the matrix
 * read once for all of them (up to CPU_BF16_FEW_ROWS, cpu_ops.h). */
#include <stdint.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "core/bf16.h"
#include "core/error.h"

CPU_CLONES void cpu_round_bf16(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = bf16_round(x[i]);
}

/* out[0..n) = dy where the fused ReLU passed (relu_y > 0), else 0 */
static CPU_CLONES void relu_masked(const float *restrict dy, const float *restrict relu_y, float *restrict out,
                                   size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float d = dy[i], y = relu_y[i]; /* both loaded: a select, not a branch */
    out[i] = y > 0.0f ? d : 0.0f;
  }
}

/* the thread's buffer `which` (0: x, 1: w, 2: dy) of at least n floats */
static float *kept(int which, size_t n, const char *what) {
  static _Thread_local void *buf[3];
  static _Thread_local size_t cap[3];
  return cpu_kept_buffer(&buf[which], &cap[which], surge_mul_size(n ? n : 1, sizeof(float), what));
}

static const float *rounded(int which, const float *x, size_t n, const char *what) {
  float *r = kept(which, n, what);
  cpu_round_bf16(x, r, n);
  return r;
}

void cpu_conv_direct_fwd_bf16(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias,
                              int relu, float *y, float *ws, size_t ws_n) {
  const size_t in_n = (size_t)B * s->C * s->H * s->W, nw = (size_t)s->O * s->C * s->KH * s->KW;
  cpu_conv_direct_fwd(s, B, rounded(0, x, in_n, "conv_fwd bf16 input"), rounded(1, w, nw, "conv_fwd bf16 weight"),
                      bias, relu, y, ws, ws_n);
}

void cpu_conv_direct_bwd_bf16(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                              const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws,
                              size_t ws_n) {
  const size_t P = (size_t)s->OH * s->OW, in_n = (size_t)B * s->C * s->H * s->W,
               nw = (size_t)s->O * s->C * s->KH * s->KW, out_n = (size_t)B * s->O * P;
  const float *xr = dw ? rounded(0, x, in_n, "conv_bwd bf16 input") : x,
              *wr = dx ? rounded(1, w, nw, "conv_bwd bf16 weight") : w;
  /* dy rounded plane by plane, the ReLU's mask applied first (so the kernels need none) and the bias
   * sums taken from the unrounded values */
  float *dyr = kept(2, out_n, "conv_bwd bf16 gradient");
  for (int o = 0; o < s->O; o++) {
    double sum = 0.0;
    for (int b = 0; b < B; b++) {
      const size_t at = ((size_t)b * s->O + o) * P;
      const float *g = dy + at; /* the plane's gradient through the ReLU, unrounded */
      if (relu_y) {
        relu_masked(g, relu_y + at, dyr + at, P);
        g = dyr + at;
      }
      if (db) sum += cpu_sum_d(g, P);
      cpu_round_bf16(g, dyr + at, P); /* in place where masked: the plane is still in cache */
    }
    if (db) db[o] = (float)((double)db[o] + sum);
  }
  cpu_conv_direct_bwd(s, B, xr, wr, dyr, NULL, dx, dx_write, dw, NULL, ws, ws_n);
}

/* sum over k of a[k] b[k] with b rounded as read (a already rounded), in float with 16 lanes */
static CPU_CLONES float dot_rounding_b(const float *restrict a, const float *restrict b, int n) {
  float lane[16] = {0};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; l++) lane[l] += a[i + l] * bf16_round(b[i + l]);
  float s = 0.0f;
  for (int l = 0; l < 16; l++) s += lane[l];
  for (; i < n; i++) s += a[i] * bf16_round(b[i]);
  return s;
}

/* acc[0..n) += a b[0..n) with b rounded as read */
static CPU_CLONES void axpy_rounding_b(float a, const float *restrict b, float *restrict acc, int n) {
  for (int i = 0; i < n; i++) acc[i] += a * bf16_round(b[i]);
}

void cpu_gemm_rows_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        int ldb, float beta, float *C, int ldc) {
  static _Thread_local void *buf;
  static _Thread_local size_t cap;
  const size_t mk = surge_mul_size((size_t)M, (size_t)K, "bf16 rows"), mn = surge_mul_size((size_t)M, (size_t)N, "");
  float *a = cpu_kept_buffer(&buf, &cap, surge_mul_size(mk + mn, sizeof(float), "bf16 rows operand"));
  float *acc = a + mk; /* (M, N): the sums before alpha and beta */
  for (int i = 0; i < M; i++) /* op(A)'s rows (M, K), rounded */
    if (ta)
      for (int k = 0; k < K; k++) a[(size_t)i * K + k] = bf16_round(A[(size_t)k * lda + i]);
    else
      cpu_round_bf16(A + (size_t)i * lda, a + (size_t)i * K, (size_t)K);
  if (tb && cpu_gemm_bf16_pairs()) /* B stored (N, K): dot products in bfloat16 pairs, B read once */
    cpu_gemv_bf16_dots(M, N, K, a, K, B, ldb, acc, N);
  else
    for (int i = 0; i < M; i++) {
      float *out = acc + (size_t)i * N;
      if (tb) /* rounding B's elements as they are read */
        for (int j = 0; j < N; j++) out[j] = dot_rounding_b(a + (size_t)i * K, B + (size_t)j * ldb, K);
      else { /* B stored (K, N): its rows added in k order */
        memset(out, 0, (size_t)N * sizeof *out);
        for (int k = 0; k < K; k++) axpy_rounding_b(a[(size_t)i * K + k], B + (size_t)k * ldb, out, N);
      }
    }
  for (int i = 0; i < M; i++) /* beta 0: C unread */
    for (int j = 0; j < N; j++) {
      float *c = C + (size_t)i * ldc + j;
      *c = alpha * acc[(size_t)i * N + j] + (beta == 0.0f ? 0.0f : beta * *c);
    }
}
