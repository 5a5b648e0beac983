/* The naive reference backend "ref": the most obvious loops, double accumulation for every sum
 * and dot product. It is slow on purpose and exists as the truth that tests compare "cpu" against. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref_fused.h" /* its fused forms, in the table below */
#include "backend/backend.h"
#include "backend/step_rules.h"
#include "backend/host_mem.h"
#include "backend/orth_rules.h"
#include "core/bf16.h"
#include "core/error.h"

static void ref_set_threads(int nthreads) { (void)nthreads; }

/* ---- dense linear algebra */

// Element (i,k) of op(A) where op(A) is (M,K); A is stored (K,M) when transposed.
static double ref_op_a(int ta, const float *A, int lda, int i, int k) {
  return ref_operand(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
}

// Element (k,j) of op(B) where op(B) is (K,N); B is stored (N,K) when transposed; read from B16 (bfloat16)
// instead where given.
static double ref_op_b(int tb, const float *B, const uint16_t *B16, int ldb, int k, int j) {
  const size_t at = tb ? (size_t)j * ldb + k : (size_t)k * ldb + j;
  return ref_operand(B16 ? bf16_value(B16[at]) : B[at]);
}

static void ref_gemm_either(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                            const float *B, const uint16_t *B16, int ldb, float beta, float *C, int ldc) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      double acc = 0.0;
      for (int k = 0; k < K; k++) acc += ref_op_a(ta, A, lda, i, k) * ref_op_b(tb, B, B16, ldb, k, j);
      float *c = &C[(size_t)i * ldc + j];
      // BLAS semantics: with beta == 0 the old C is not read (it may hold NaN)
      double old = beta == 0.0f ? 0.0 : (double)beta * *c;
      *c = (float)(alpha * acc + old);
    }
  }
}

static void ref_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
  ref_gemm_either(ta, tb, M, N, K, alpha, A, lda, B, NULL, ldb, beta, C, ldc);
}

static void ref_gemm_strided(int ta, int tb, int M, int N, int K, float alpha, const float *A,
                             int lda, size_t sA, const float *B, int ldb, size_t sB, float beta,
                             float *C, int ldc, size_t sC, int batch) {
  for (int b = 0; b < batch; b++)
    ref_gemm(ta, tb, M, N, K, alpha, A + b * sA, lda, B + b * sB, ldb, beta, C + b * sC, ldc);
}

static void ref_gemm_grid(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc, const gemm_grid_t *g) {
  for (int i = 0; i < g->batch[0]; i++)
    for (int j = 0; j < g->batch[1]; j++)
      ref_gemm(ta, tb, M, N, K, alpha, A + i * g->sA[0] + j * g->sA[1], lda, B + i * g->sB[0] + j * g->sB[1], ldb,
               beta, C + i * g->sC[0] + j * g->sC[1], ldc);
}

static void ref_gemm_grid_b16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                              const uint16_t *B16, int ldb, float beta, float *C, int ldc, const gemm_grid_t *g) {
  for (int i = 0; i < g->batch[0]; i++)
    for (int j = 0; j < g->batch[1]; j++)
      ref_gemm_either(ta, tb, M, N, K, alpha, A + i * g->sA[0] + j * g->sA[1], lda, NULL,
                      B16 + i * g->sB[0] + j * g->sB[1], ldb, beta, C + i * g->sC[0] + j * g->sC[1], ldc);
}

/* ---- elementwise and reductions */

static void ref_fill(float *x, size_t n, float v) {
  for (size_t i = 0; i < n; i++) x[i] = v;
}

static void ref_scale(float *x, size_t n, float a) {
  for (size_t i = 0; i < n; i++) x[i] = x[i] * a;
}

static void ref_axpy(size_t n, float a, const float *x, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = y[i] + a * x[i];
}

static void ref_add(size_t n, const float *a, const float *b, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* The ops that return a value to the host count a wait (backend_context_t.waits); their _add forms,
 * which keep the value in backend memory, do not. */
static double sum_squares(const float *x, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
  return s;
}

static double ref_sumsq(const float *x, size_t n) {
  host_mem_waited();
  return sum_squares(x, n);
}

static void ref_sumsq_add(const float *x, size_t n, double *acc) { *acc += sum_squares(x, n); }

static int ref_all_finite(const float *x, size_t n) {
  host_mem_waited();
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

/* ---- bias */

static void ref_bias_add_rows(int rows, int cols, const float *b, float *y) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) y[(size_t)r * cols + c] += b[c];
}

static void ref_bias_grad_rows(int rows, int cols, const float *dy, float *db) {
  for (int c = 0; c < cols; c++) {
    double s = 0.0;
    for (int r = 0; r < rows; r++) s += dy[(size_t)r * cols + c];
    db[c] = (float)(db[c] + s);
  }
}

static void ref_bias_add_planes(int N, int C, int HW, const float *b, float *y) {
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int i = 0; i < HW; i++) y[((size_t)n * C + c) * HW + i] += b[c];
}

static void ref_bias_grad_planes(int N, int C, int HW, const float *dy, float *db) {
  for (int c = 0; c < C; c++) {
    double s = 0.0;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < HW; i++) s += dy[((size_t)n * C + c) * HW + i];
    db[c] = (float)(db[c] + s);
  }
}

/* ---- activations */

static void ref_relu_fwd(size_t n, const float *x, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void ref_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int write) {
  for (size_t i = 0; i < n; i++)
    if (write)
      dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
    else if (x[i] > 0.0f)
      dx[i] += dy[i];
}

static void ref_add_relu_fwd(size_t n, const float *a, const float *b, float *y) {
  for (size_t i = 0; i < n; i++) {
    float v = a[i] + b[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

static void ref_add_relu_bwd(size_t n, const float *y, const float *dy, float *da, float *db, int write_a, int write_b) {
  if (da) ref_relu_bwd(n, y, dy, da, write_a);
  if (db) ref_relu_bwd(n, y, dy, db, write_b);
}

static const double ref_gelu_k = 0.7978845608028654; /* sqrt(2/pi) */
static const double ref_gelu_c = 0.044715;

/* GELU reads its input as a product's operand: rounded to bfloat16 in precision = bf16 (ref_operand), both ways */
static void ref_gelu_fwd(size_t n, const float *x, float *y) {
  for (size_t i = 0; i < n; i++) {
    double v = ref_operand(x[i]);
    y[i] = (float)(0.5 * v * (1.0 + tanh(ref_gelu_k * (v + ref_gelu_c * v * v * v))));
  }
}

static void ref_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int write) {
  for (size_t i = 0; i < n; i++) {
    double v = ref_operand(x[i]);
    double t = tanh(ref_gelu_k * (v + ref_gelu_c * v * v * v));
    double du = ref_gelu_k * (1.0 + 3.0 * ref_gelu_c * v * v);
    double grad = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du;
    dx[i] = (float)((write ? 0.0f : dx[i]) + dy[i] * grad);
  }
}

/* ---- convolution lowering */

/* Walks every element of col (C*KH*KW, OH*OW) with the element of the image (C,H,W) it reads:
 * gather (im2col) writes col from x, 0 in the padding; scatter (col2im) adds col into the image. */
static void ref_conv_walk(float *img, float *col, int C, int H, int W, int KH, int KW, int stride,
                          int ph, int pw, int scatter) {
  int OH = (H + 2 * ph - KH) / stride + 1, OW = (W + 2 * pw - KW) / stride + 1;
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++)
      for (int kw = 0; kw < KW; kw++) {
        size_t row = ((size_t)c * KH + kh) * KW + kw;
        for (int oh = 0; oh < OH; oh++)
          for (int ow = 0; ow < OW; ow++) {
            int h = oh * stride - ph + kh, w = ow * stride - pw + kw;
            int inside = h >= 0 && h < H && w >= 0 && w < W;
            float *cell = &col[row * OH * OW + (size_t)oh * OW + ow];
            float *pixel = inside ? &img[((size_t)c * H + h) * W + w] : NULL;
            if (scatter && pixel) *pixel += *cell;
            if (!scatter) *cell = pixel ? *pixel : 0.0f;
          }
      }
}

static void ref_im2col(const float *x, int C, int H, int W, int KH, int KW, int stride, int ph, int pw,
                       float *col) {
  ref_conv_walk((float *)x, col, C, H, W, KH, KW, stride, ph, pw, 0); /* x is only read */
}

static void ref_col2im(const float *col, int C, int H, int W, int KH, int KW, int stride, int ph, int pw,
                       float *dx) {
  ref_conv_walk(dx, (float *)col, C, H, W, KH, KW, stride, ph, pw, 1); /* col is only read */
}

/* ---- convolution over a batch: the definition, summed in double */

/* Input pixel of x (C,H,W) read by output (oh,ow) through kernel tap (kh,kw), or -1 in the padding. */
static long ref_conv_tap(const conv_shape_t *s, int c, int oh, int ow, int kh, int kw) {
  int h = oh * s->stride - s->ph + kh, w = ow * s->stride - s->pw + kw;
  if (h < 0 || h >= s->H || w < 0 || w >= s->W) return -1;
  return ((long)c * s->H + h) * s->W + w;
}

static size_t ref_conv_workspace(const conv_shape_t *s) {
  (void)s;
  return 0; /* the definition needs no workspace */
}

static void ref_conv_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias,
                         int relu, float *y, float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  size_t in_n = (size_t)s->C * s->H * s->W;
  for (int b = 0; b < B; b++)
    for (int o = 0; o < s->O; o++)
      for (int oh = 0; oh < s->OH; oh++)
        for (int ow = 0; ow < s->OW; ow++) {
          double acc = 0.0;
          for (int c = 0; c < s->C; c++)
            for (int kh = 0; kh < s->KH; kh++)
              for (int kw = 0; kw < s->KW; kw++) {
                long at = ref_conv_tap(s, c, oh, ow, kh, kw);
                if (at >= 0)
                  acc += ref_operand(w[(((size_t)o * s->C + c) * s->KH + kh) * s->KW + kw]) *
                         ref_operand(x[b * in_n + (size_t)at]);
              }
          // the bias is added to the float result, as the float backends do: a sum in double
          // rounded with its bias would turn some exact zeros into tiny values and so move ReLU
          // and max-pool decisions (ties) away from every float implementation
          float v = (float)acc + (bias ? bias[o] : 0.0f);
          y[(((size_t)b * s->O + o) * s->OH + oh) * s->OW + ow] = relu && v < 0.0f ? 0.0f : v;
        }
}

static void ref_conv_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                         const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  size_t in_n = (size_t)s->C * s->H * s->W, nw = (size_t)s->O * s->C * s->KH * s->KW;
  double *gx = xcalloc(in_n ? in_n : 1, sizeof *gx), *gw = xcalloc(nw, sizeof *gw), *gb = xcalloc((size_t)s->O, sizeof *gb);
  for (int b = 0; b < B; b++) {
    for (size_t i = 0; i < in_n; i++) gx[i] = 0.0;
    for (int o = 0; o < s->O; o++)
      for (int oh = 0; oh < s->OH; oh++)
        for (int ow = 0; ow < s->OW; ow++) {
          const size_t at = (((size_t)b * s->O + o) * s->OH + oh) * s->OW + ow;
          const double g = relu_y && !(relu_y[at] > 0.0f) ? 0.0 : dy[at]; /* through the fused ReLU */
          const double gp = ref_operand(g); /* the products' operand; the bias sum is no product */
          gb[o] += g;
          for (int c = 0; c < s->C; c++)
            for (int kh = 0; kh < s->KH; kh++)
              for (int kw = 0; kw < s->KW; kw++) {
                long at = ref_conv_tap(s, c, oh, ow, kh, kw);
                size_t wi = (((size_t)o * s->C + c) * s->KH + kh) * s->KW + kw;
                if (at < 0) continue;
                gw[wi] += gp * ref_operand(x[b * in_n + (size_t)at]);
                gx[at] += gp * ref_operand(w[wi]);
              }
        }
    if (dx)
      for (size_t i = 0; i < in_n; i++) dx[b * in_n + i] = dx_write ? (float)gx[i] : (float)(dx[b * in_n + i] + gx[i]);
  }
  if (dw)
    for (size_t i = 0; i < nw; i++) dw[i] = (float)(dw[i] + gw[i]);
  if (db)
    for (int o = 0; o < s->O; o++) db[o] = (float)(db[o] + gb[o]);
  free(gx), free(gw), free(gb);
}

static size_t ref_linear_workspace(int out, int in) {
  (void)out, (void)in;
  return 0;
}

/* w16 unread: the truth is w's products (its bfloat16 copy holds the same rounded values) */
static void ref_linear_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16,
                           const float *b, float *y, float *ws, size_t ws_n) {
  (void)w16, (void)ws, (void)ws_n;
  ref_gemm(0, 1, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  if (b) ref_bias_add_rows(rows, out, b, y);
}

static void ref_gemm_tn_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                             int ldc) {
  ref_gemm(1, 0, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc); /* double dot products */
}

/* ---- pooling */

/* The window of output (oh, ow) of a k x k pool with stride s and padding pad over an H x W plane:
 * rows [h0, h1) and columns [w0, w1), clipped to the plane. */
static void ref_pool_window(int H, int W, int k, int s, int pad, int oh, int ow, int *h0, int *h1, int *w0,
                            int *w1) {
  *h0 = oh * s - pad, *w0 = ow * s - pad;
  *h1 = *h0 + k < H ? *h0 + k : H, *w1 = *w0 + k < W ? *w0 + k : W;
  if (*h0 < 0) *h0 = 0;
  if (*w0 < 0) *w0 = 0;
}

static void ref_maxpool_fwd(int P, int H, int W, int k, int s, int pad, const float *x, float *y,
                            float *argmax) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  for (int p = 0; p < P; p++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int h0, h1, w0, w1;
        ref_pool_window(H, W, k, s, pad, oh, ow, &h0, &h1, &w0, &w1);
        int best = h0 * W + w0; /* the window's first element inside the plane; a later one wins if larger */
        for (int i = h0; i < h1; i++)
          for (int j = w0; j < w1; j++) {
            int at = i * W + j;
            if (x[(size_t)p * H * W + at] > x[(size_t)p * H * W + best]) best = at;
          }
        size_t o = ((size_t)p * OH + oh) * OW + ow;
        y[o] = x[(size_t)p * H * W + best];
        argmax[o] = (float)best;
      }
}

static void ref_maxpool_bwd(int P, int H, int W, int k, int s, int pad, const float *dy, const float *argmax,
                            float *dx, int dx_write) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  if (dx_write) memset(dx, 0, (size_t)P * H * W * sizeof *dx);
  for (int p = 0; p < P; p++)
    for (int o = 0; o < OH * OW; o++) {
      size_t at = (size_t)p * OH * OW + o;
      dx[(size_t)p * H * W + (size_t)argmax[at]] += dy[at];
    }
}

/* Windowed average pool, count_include_pad: each window's sum (in double) over k*k. */
static void ref_avgpool2d_fwd(int P, int H, int W, int k, int s, int pad, const float *x, float *y) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  for (int p = 0; p < P; p++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int h0, h1, w0, w1;
        ref_pool_window(H, W, k, s, pad, oh, ow, &h0, &h1, &w0, &w1);
        double acc = 0.0;
        for (int i = h0; i < h1; i++)
          for (int j = w0; j < w1; j++) acc += x[((size_t)p * H + i) * W + j];
        y[((size_t)p * OH + oh) * OW + ow] = (float)(acc / ((double)k * k));
      }
}

static void ref_avgpool2d_bwd(int P, int H, int W, int k, int s, int pad, const float *dy, float *dx,
                              int dx_write) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  double *g = xcalloc((size_t)H * W, sizeof *g);
  for (int p = 0; p < P; p++) {
    for (size_t i = 0; i < (size_t)H * W; i++) g[i] = 0.0;
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int h0, h1, w0, w1;
        ref_pool_window(H, W, k, s, pad, oh, ow, &h0, &h1, &w0, &w1);
        double share = dy[((size_t)p * OH + oh) * OW + ow] / ((double)k * k);
        for (int i = h0; i < h1; i++)
          for (int j = w0; j < w1; j++) g[(size_t)i * W + j] += share;
      }
    float *plane = dx + (size_t)p * H * W;
    for (size_t i = 0; i < (size_t)H * W; i++) plane[i] = (float)((dx_write ? 0.0 : plane[i]) + g[i]);
  }
  free(g);
}

static void ref_copy_cols(int rows, int cols, const float *src, size_t lds, float *dst, size_t ldd, int acc) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) dst[r * ldd + c] = acc ? dst[r * ldd + c] + src[r * lds + c] : src[r * lds + c];
}

static void ref_avgpool_fwd(int P, int HW, const float *x, float *y) {
  for (int p = 0; p < P; p++) {
    double s = 0.0;
    for (int i = 0; i < HW; i++) s += x[(size_t)p * HW + i];
    y[p] = (float)(s / HW);
  }
}

static void ref_avgpool_bwd(int P, int HW, const float *dy, float *dx, int dx_write) {
  for (int p = 0; p < P; p++)
    for (int i = 0; i < HW; i++)
      dx[(size_t)p * HW + i] = (float)((dx_write ? 0.0 : dx[(size_t)p * HW + i]) + (double)dy[p] / HW);
}

/* ---- batch norm: x (N, C, HW) */

static void ref_bn_stats(int N, int C, int HW, const float *x, float *part) {
  part[0] = (float)((double)N * HW);
  for (int c = 0; c < C; c++) {
    double m = 0.0, m2 = 0.0;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < HW; i++) m += x[((size_t)n * C + c) * HW + i];
    m /= (double)N * HW;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < HW; i++) {
        double d = x[((size_t)n * C + c) * HW + i] - m;
        m2 += d * d;
      }
    part[1 + c] = (float)m;
    part[1 + C + c] = (float)(m - (double)(float)m);
    part[1 + 2 * C + c] = (float)m2;
  }
}

static void ref_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running,
                          float *stats) {
  const size_t P = 1 + 3 * (size_t)C;
  for (int c = 0; c < C; c++) {
    if (R == 0) {
      stats[c] = running[c];
      stats[C + c] = (float)(1.0 / sqrt((double)running[C + c] + eps));
      continue;
    }
    double n = 0.0, mean = 0.0, m2 = 0.0; /* Chan et al.: one part at a time, in order */
    for (int r = 0; r < R; r++) {
      const float *p = parts + (size_t)r * P;
      double nb = p[0], d = ((double)p[1 + c] + p[1 + C + c]) - mean, nab = n + nb;
      if (nb == 0.0) continue;
      mean += d * nb / nab;
      m2 += p[1 + 2 * C + c] + d * d * n * nb / nab;
      n = nab;
    }
    double var = n > 0.0 ? m2 / n : 0.0;
    stats[c] = (float)mean;
    stats[C + c] = (float)(1.0 / sqrt(var + eps));
    if (!running) continue;
    double unbiased = n > 1.0 ? m2 / (n - 1.0) : var;
    running[c] = (float)((1.0 - momentum) * running[c] + momentum * mean);
    running[C + c] = (float)((1.0 - momentum) * running[C + c] + momentum * unbiased);
  }
}

static void ref_bn_fwd(int N, int C, int HW, const float *x, const float *stats, const float *w, const float *b,
                       int relu, float *y) {
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int i = 0; i < HW; i++) {
        size_t k = ((size_t)n * C + c) * HW + i;
        double v = ((double)x[k] - stats[c]) * stats[C + c] * w[c] + b[c];
        y[k] = (float)(relu && v < 0.0 ? 0.0 : v);
      }
}

/* The gradient the normalisation sees at element k: dy, masked by the fused ReLU's output. */
static double ref_bn_g(const float *dy, const float *relu_y, size_t k) {
  return relu_y && !(relu_y[k] > 0.0f) ? 0.0 : dy[k];
}

static void ref_bn_bwd_sums(int N, int C, int HW, const float *x, const float *stats, const float *dy,
                            const float *relu_y, float *part) {
  for (int c = 0; c < C; c++) {
    double sg = 0.0, sgx = 0.0;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < HW; i++) {
        size_t k = ((size_t)n * C + c) * HW + i;
        double g = ref_bn_g(dy, relu_y, k);
        sg += g;
        sgx += g * ((double)x[k] - stats[c]) * stats[C + c];
      }
    part[c] = (float)sg;
    part[C + c] = (float)sgx;
  }
}

static void ref_bn_bwd(int N, int C, int HW, double M, const float *x, const float *stats, const float *w,
                       const float *dy, const float *relu_y, const float *sums, float *dx, int dx_write) {
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int i = 0; i < HW; i++) {
        size_t k = ((size_t)n * C + c) * HW + i;
        double xhat = ((double)x[k] - stats[c]) * stats[C + c];
        double v = (double)w[c] * stats[C + c] * (ref_bn_g(dy, relu_y, k) - sums[c] / M - xhat * sums[C + c] / M);
        dx[k] = (float)((dx_write ? 0.0 : dx[k]) + v);
      }
}

static void ref_mul(size_t n, const float *a, const float *b, float *y, int acc) {
  for (size_t i = 0; i < n; i++) y[i] = (float)((acc ? (double)y[i] : 0.0) + (double)a[i] * b[i]);
}

/* ---- layer norm */

static void ref_layernorm_fwd(int N, int rows, int C, const float *x, const float *w, const float *b,
                              float eps, float *y, float *stats) {
  for (int n = 0; n < N; n++)
    for (int r = 0; r < rows; r++) {
      const float *xr = x + ((size_t)n * rows + r) * C;
      double m = 0.0;
      for (int c = 0; c < C; c++) m += xr[c];
      m /= C;
      double var = 0.0;
      for (int c = 0; c < C; c++) var += (xr[c] - m) * (xr[c] - m);
      var /= C;
      double rs = 1.0 / sqrt(var + eps);
      for (int c = 0; c < C; c++) y[((size_t)n * rows + r) * C + c] = (float)((xr[c] - m) * rs * w[c] + b[c]);
      stats[(size_t)n * 2 * rows + r] = (float)m;
      stats[(size_t)n * 2 * rows + rows + r] = (float)rs;
    }
}

static void ref_layernorm_bwd(int N, int rows, int C, const float *x, const float *w, const float *stats,
                              const float *dy, float *dx, int dx_write, float *dw, float *db) {
  size_t total = (size_t)N * rows;
  for (size_t r = 0; r < total; r++) {
    const float *xr = x + r * C, *dyr = dy + r * C;
    const double mean = stats[(r / rows) * 2 * rows + r % rows], rstd = stats[(r / rows) * 2 * rows + rows + r % rows];
    // dxhat = dy * w; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
    for (int c = 0; c < C; c++) {
      double xhat = (xr[c] - mean) * rstd;
      double dxhat = (double)dyr[c] * w[c];
      mean_dxhat += dxhat;
      mean_dxhat_xhat += dxhat * xhat;
    }
    mean_dxhat /= C;
    mean_dxhat_xhat /= C;
    for (int c = 0; c < C; c++) {
      double xhat = (xr[c] - mean) * rstd;
      double dxhat = (double)dyr[c] * w[c];
      size_t i = r * C + c;
      dx[i] = (float)((dx_write ? 0.0 : dx[i]) + rstd * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
  }
  for (int c = 0; c < C; c++) {
    double sw = 0.0, sb = 0.0;
    for (size_t r = 0; r < total; r++) {
      size_t i = r * C + c;
      const double mean = stats[(r / rows) * 2 * rows + r % rows], rstd = stats[(r / rows) * 2 * rows + rows + r % rows];
      sw += (double)dy[i] * (x[i] - mean) * rstd;
      sb += dy[i];
    }
    dw[c] = (float)(dw[c] + sw);
    db[c] = (float)(db[c] + sb);
  }
}

/* ---- embedding */

static void ref_embed_fwd(int B, int T, int C, const float *idx, int lo, int V, const float *wte, const float *wpe,
                          float *y) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      long id = (long)idx[(size_t)b * T + t] - lo;
      int mine = id >= 0 && id < V;
      for (int c = 0; c < C; c++) {
        double v = (mine ? wte[(size_t)id * C + c] : 0.0) + (wpe ? wpe[(size_t)t * C + c] : 0.0);
        y[((size_t)b * T + t) * C + c] = (float)v;
      }
    }
}

static void ref_embed_bwd(int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte,
                          float *dwpe) {
  for (int v = 0; v < V; v++) /* the rows of ids [lo, lo+V), each summed over its uses in double */
    for (int c = 0; c < C; c++) {
      double s = 0.0;
      int used = 0;
      for (size_t i = 0; i < (size_t)B * T; i++)
        if ((long)idx[i] - lo == v) s += dy[i * C + c], used = 1;
      if (used) dwte[(size_t)v * C + c] = (float)(dwte[(size_t)v * C + c] + s);
    }
  for (int t = 0; dwpe && t < T; t++)
    for (int c = 0; c < C; c++) {
      double s = 0.0;
      for (int b = 0; b < B; b++) s += dy[((size_t)b * T + t) * C + c];
      dwpe[(size_t)t * C + c] = (float)(dwpe[(size_t)t * C + c] + s);
    }
}

/* ---- causal softmax */

/* One row of n: softmax of its first `valid` scaled entries, 0 after them. */
static void ref_softmax_row(int n, int valid, float scale, const float *si, float *pi) {
  double mx = (double)scale * si[0];
  for (int j = 1; j < valid; j++)
    if ((double)scale * si[j] > mx) mx = (double)scale * si[j];
  double sum = 0.0;
  for (int j = 0; j < valid; j++) sum += exp((double)scale * si[j] - mx);
  for (int j = 0; j < n; j++) pi[j] = j < valid ? (float)(exp((double)scale * si[j] - mx) / sum) : 0.0f;
}

static void ref_causal_softmax_fwd(int BH, int T, float scale, const float *s, float *p) {
  for (size_t row = 0; row < (size_t)BH * T; row++)
    ref_softmax_row(T, (int)(row % (size_t)T) + 1, scale, s + row * T, p + row * T);
}

static void ref_softmax_rows(int rows, int n, float scale, const float *s, float *p) {
  for (size_t row = 0; row < (size_t)rows; row++) ref_softmax_row(n, n, scale, s + row * n, p + row * n);
}

static void ref_causal_softmax_bwd(int BH, int T, float scale, const float *p, const float *dp,
                                   float *ds) {
  for (size_t row = 0; row < (size_t)BH * T; row++) {
    const float *pr = p + row * T, *dpr = dp + row * T;
    double dot = 0.0;
    for (int k = 0; k < T; k++) dot += (double)pr[k] * dpr[k];
    for (int j = 0; j < T; j++) ds[row * T + j] = (float)(scale * pr[j] * (dpr[j] - dot));
  }
}

/* ---- softmax cross-entropy */

static double xent_sum(int rows, int V, const float *logits, const float *targets, float grad_scale,
                       float *dlogits) {
  double loss = 0.0;
  for (int r = 0; r < rows; r++) {
    const float *l = logits + (size_t)r * V;
    int target = (int)targets[r];
    double mx = l[0];
    for (int v = 1; v < V; v++)
      if (l[v] > mx) mx = l[v];
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp(l[v] - mx);
    double logz = mx + log(sum);
    loss += logz - l[target];
    if (dlogits)
      for (int v = 0; v < V; v++) {
        double prob = exp(l[v] - logz);
        dlogits[(size_t)r * V + v] = (float)(grad_scale * (prob - (v == target ? 1.0 : 0.0)));
      }
  }
  return loss;
}

static double ref_xent_fwd_bwd(int rows, int V, const float *logits, const float *targets, float grad_scale,
                               float *dlogits) {
  host_mem_waited();
  return xent_sum(rows, V, logits, targets, grad_scale, dlogits);
}

static void ref_xent_add(int rows, int V, const float *logits, const float *targets, float grad_scale, float *dlogits,
                         double *loss) {
  *loss += xent_sum(rows, V, logits, targets, grad_scale, dlogits);
}

static void ref_float_pair(const double *x, float *pair) { float_pair_rule(*x, pair); }

static void ref_to_bf16(size_t n, const float *x, uint16_t *y) {
  for (size_t i = 0; i < n; i++) y[i] = bf16_bits(x[i]);
}

static void ref_from_bf16(size_t n, const uint16_t *x, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = bf16_value(x[i]);
}

static long ref_count_correct(int rows, int V, const float *logits, const float *targets) {
  host_mem_waited();
  long correct = 0;
  for (int r = 0; r < rows; r++) {
    int best = 0;
    for (int v = 1; v < V; v++)
      if (logits[(size_t)r * V + v] > logits[(size_t)r * V + best]) best = v;
    if (best == (int)targets[r]) correct++;
  }
  return correct;
}

/* ---- vocabulary-parallel cross-entropy */

static void ref_row_max(int rows, int V, const float *logits, float *mx) {
  for (int r = 0; r < rows; r++) {
    float m = logits[(size_t)r * V];
    for (int v = 1; v < V; v++)
      if (logits[(size_t)r * V + v] > m) m = logits[(size_t)r * V + v];
    mx[r] = m;
  }
}

static void ref_xent_shard_stats(int rows, int V, int lo, const float *logits, const float *targets,
                                 const float *mx, float *sumexp, float *tgt) {
  for (int r = 0; r < rows; r++) {
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp((double)logits[(size_t)r * V + v] - mx[r]);
    long t = (long)targets[r] - lo;
    sumexp[r] = (float)sum;
    tgt[r] = t >= 0 && t < V ? logits[(size_t)r * V + t] : 0.0f;
  }
}

static void ref_xent_shard_bwd(int rows, int V, int lo, const float *logits, const float *targets,
                               const float *mx, const float *sumexp, float grad_scale, float *dlogits) {
  for (int r = 0; r < rows; r++) {
    long t = (long)targets[r] - lo;
    for (int v = 0; v < V; v++) {
      double prob = exp((double)logits[(size_t)r * V + v] - mx[r]) / sumexp[r];
      dlogits[(size_t)r * V + v] = (float)(grad_scale * (prob - (v == t ? 1.0 : 0.0)));
    }
  }
}

static void ref_row_first_index(int rows, int V, int lo, const float *logits, const float *mx, float *first) {
  for (int r = 0; r < rows; r++) {
    first[r] = 3e38f;
    for (int v = V - 1; v >= 0; v--)
      if (logits[(size_t)r * V + v] == mx[r]) first[r] = (float)(lo + v);
  }
}

/* ---- low-rank compression */

static double ref_dot(const float *x, const float *y, size_t n) {
  host_mem_waited();
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += (double)x[i] * y[i];
  return s;
}

/* Modified Gram-Schmidt on a double copy of each (n, r) matrix, in place and row-major. */
static void ref_orthonormalize(int batch, int n, int r, float *P, size_t sP) {
  double *a = xmalloc(((size_t)n * (size_t)r + 1) * sizeof *a), *in = xmalloc(((size_t)r + 1) * sizeof *in);
  for (int b = 0; b < batch; b++) {
    float *p = P + (size_t)b * sP;
    for (size_t k = 0; k < (size_t)n * (size_t)r; k++) a[k] = p[k];
    for (int i = 0; i < r; i++) { /* each column's squared norm as it came in */
      in[i] = 0.0;
      for (int row = 0; row < n; row++) in[i] += a[(size_t)row * r + i] * a[(size_t)row * r + i];
    }
    for (int i = 0; i < r; i++) {
      double norm = 0.0;
      for (int row = 0; row < n; row++) norm += a[(size_t)row * r + i] * a[(size_t)row * r + i];
      norm = orth_settle_column(a, n, i, (size_t)r, 1, norm, in[i]); /* backend/orth_rules.h */
      norm = sqrt(norm) + 1e-8;
      for (int row = 0; row < n; row++) a[(size_t)row * r + i] /= norm;
      for (int j = i + 1; j < r; j++) {
        double d = 0.0;
        for (int row = 0; row < n; row++) d += a[(size_t)row * r + i] * a[(size_t)row * r + j];
        for (int row = 0; row < n; row++) a[(size_t)row * r + j] -= d * a[(size_t)row * r + i];
      }
    }
    for (size_t k = 0; k < (size_t)n * (size_t)r; k++) p[k] = (float)a[k];
  }
  free(a);
  free(in);
}

/* ---- optimizers: the gradient read as gs g is the float product, as a scale op first would leave it */

static void ref_sgd_step(size_t n, float *p, const float *g, float *buf, float lr, float mom,
                         int nesterov, float wd, int first, const float *gsp) {
  const float gs = gsp ? *gsp : 1.0f;
  for (size_t i = 0; i < n; i++) {
    double gi = (double)(g[i] * gs) + (double)wd * p[i];
    double step = gi;
    if (mom != 0.0f) {
      double b = first ? gi : (double)mom * buf[i] + gi;
      buf[i] = (float)b;
      step = nesterov ? gi + (double)mom * b : b;
    }
    p[i] = (float)(p[i] - (double)lr * step);
  }
}

static void ref_adamw_step(size_t n, float *p, const float *g, float *m, float *v, adamw_coefs_t c,
                           const float *gsp) {
  const float gs = gsp ? *gsp : 1.0f;
  const float lr = c.lr, b1 = c.b1, b2 = c.b2, eps = c.eps, wd = c.wd, bc1 = c.bc1, bc2 = c.bc2;
  for (size_t i = 0; i < n; i++) {
    const float gi = g[i] * gs;
    double pi = (double)p[i] * (1.0 - (double)lr * wd);
    double mi = (double)b1 * m[i] + (1.0 - (double)b1) * gi;
    double vi = (double)b2 * v[i] + (1.0 - (double)b2) * gi * gi;
    pi -= (double)lr * (mi / bc1) / (sqrt(vi / bc2) + eps);
    m[i] = (float)mi;
    v[i] = (float)vi;
    p[i] = (float)pi;
  }
}

static void ref_clip_factor(const double *sumsq, double max_norm, float *gs) {
  *gs = clip_rule_sumsq(*sumsq, max_norm);
}

/* Every numerical op of backend.h from this backend's function ref_NAME. */
#define REF_OP(ret, name, params) .name = ref_##name,
const backend_t backend_ref = {
    .name = "ref",
    HOST_BACKEND_SLOTS,
    .open = host_open,
    .context = host_context,
    .set_threads = ref_set_threads,
    BACKEND_MATH_OPS(REF_OP)
};
