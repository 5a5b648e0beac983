/* The CUDA kernels' per-element arithmetic (src/backend/cuda_elem.h), run on the host against the
 * "ref" backend: each op is composed here the way its kernel composes it (the reductions first, in
 * double where the kernel sums in double, then the per-element function), so the arithmetic is
 * tested on a machine without a GPU. Agreement per output array as in test_backend:
 * ||ours - ref|| / ||ref|| <= 1e-5, exact for indices and copies. */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda_elem.h"
#include "core/error.h"
#include "core/rng.h"
#include "rel_diff.h"
#include "tap.h"

#define TOL 1e-5

static rng_t rng;
static const backend_t *ref = &backend_ref;

static float *uniform(size_t n, float lo, float hi) {
  float *x = xmalloc((n ? n : 1) * sizeof *x);
  rng_fill_uniform(&rng, x, n, lo, hi);
  return x;
}

static float *zeros(size_t n) { return xcalloc(n ? n : 1, sizeof(float)); }

static float *copy_of(const float *x, size_t n) {
  float *y = xmalloc((n ? n : 1) * sizeof *y);
  memcpy(y, x, n * sizeof *y);
  return y;
}

static void agree(const float *ours, const float *want, size_t n, const char *what) {
  double e = rel_diff(ours, want, n);
  tap_ok(e <= TOL, "%s: rel %.1e <= %.0e", what, e, TOL);
}

static void same(const float *ours, const float *want, size_t n, const char *what) {
  tap_ok(memcmp(ours, want, n * sizeof *ours) == 0, "%s: identical", what);
}

/* ---- activations and the conv epilogue */

static void test_activations(size_t n) {
  float *x = uniform(n, -6, 6), *dy = uniform(n, -1, 1), *dx0 = uniform(n, -1, 1);
  x[0] = 0.0f; /* ReLU's kink: no gradient at 0 */
  float *y = zeros(n), *want = zeros(n), *dx = copy_of(dx0, n), *dxw = copy_of(dx0, n);
  for (size_t i = 0; i < n; i++) y[i] = ce_relu(x[i]), dx[i] += ce_relu_grad(x[i], dy[i]);
  ref->relu_fwd(n, x, want);
  ref->relu_bwd(n, x, dy, dxw, 0);
  same(y, want, n, "relu");
  same(dx, dxw, n, "relu_grad added to dx");
  memcpy(dx, dx0, n * sizeof *dx), memcpy(dxw, dx0, n * sizeof *dx);
  for (size_t i = 0; i < n; i++) y[i] = ce_gelu(x[i]), dx[i] += dy[i] * ce_gelu_grad(x[i]);
  ref->gelu_fwd(n, x, want);
  ref->gelu_bwd(n, x, dy, dxw, 0);
  agree(y, want, n, "gelu");
  agree(dx, dxw, n, "gelu_grad added to dx");
  float tails[] = {-1e4f, -30, 30, 1e4f}, ty[4], tw[4];
  for (int i = 0; i < 4; i++) ty[i] = ce_gelu(tails[i]);
  ref->gelu_fwd(4, tails, tw);
  tap_ok(ty[0] == 0.0f && ty[3] == 1e4f && fabsf(ty[1] - tw[1]) <= 1e-6f && ty[2] == tw[2],
         "gelu tails saturate to 0 and x (%g, %g, %g, %g)", ty[0], ty[1], ty[2], ty[3]);
  /* each value on its own where GELU is small (x in [-6, -3]): no digits lost to 1 + tanh(u) ~ 0 */
  double worst = 0;
  for (int i = 0; i <= 300; i++) {
    float v = -3.0f - 0.01f * (float)i, got = ce_gelu(v), g = ce_gelu_grad(v), want1, gw = 0.0f, one = 1.0f;
    ref->gelu_fwd(1, &v, &want1);
    ref->gelu_bwd(1, &v, &one, &gw, 0); /* added into gw = 0 */
    worst = fmax(worst, fmax(fabs((double)got - want1) / fabs(want1), fabs((double)g - gw) / fabs(gw)));
  }
  tap_ok(worst <= TOL, "gelu and its gradient each within %.1e <= %.0e of ref for x in [-6, -3]", worst, TOL);
  tap_ok(ce_bias_act(-1.0f, 0.5f, 0) == -0.5f && ce_bias_act(-1.0f, 0.5f, 1) == 0.0f &&
             ce_bias_act(1.0f, 0.5f, 1) == 1.5f, "bias + relu epilogue");
  free(x), free(dy), free(dx0), free(y), free(want), free(dx), free(dxw);
}

/* ---- optimizers */

static void test_sgd(size_t n, float mom, int nesterov, float wd, int first) {
  float *p = uniform(n, -1, 1), *g = uniform(n, -1, 1), *buf = uniform(n, -1, 1);
  float *p2 = copy_of(p, n), *buf2 = copy_of(buf, n);
  for (size_t i = 0; i < n; i++) ce_sgd(&p[i], g[i], &buf[i], 0.05f, mom, nesterov, wd, first);
  ref->sgd_step(n, p2, g, mom == 0.0f ? NULL : buf2, 0.05f, mom, nesterov, wd, first, NULL);
  char what[80];
  snprintf(what, sizeof what, "sgd mom=%g nesterov=%d wd=%g first=%d: p", mom, nesterov, wd, first);
  agree(p, p2, n, what);
  if (mom != 0.0f) {
    snprintf(what, sizeof what, "sgd mom=%g nesterov=%d wd=%g first=%d: buf", mom, nesterov, wd, first);
    agree(buf, buf2, n, what);
  }
  free(p), free(g), free(buf), free(p2), free(buf2);
}

static void test_adamw(size_t n, int t, float wd) {
  float *p = uniform(n, -1, 1), *g = uniform(n, -1, 1), *m = uniform(n, -0.1f, 0.1f), *v = uniform(n, 0, 0.02f);
  float *p2 = copy_of(p, n), *m2 = copy_of(m, n), *v2 = copy_of(v, n);
  float b1 = 0.9f, b2 = 0.999f, bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
  const adamw_coefs_t c = {.lr = 1e-3f, .b1 = b1, .b2 = b2, .eps = 1e-8f, .wd = wd, .bc1 = bc1, .bc2 = bc2};
  for (size_t i = 0; i < n; i++) ce_adamw(&p[i], g[i], &m[i], &v[i], c);
  ref->adamw_step(n, p2, g, m2, v2, c, NULL);
  char what[64];
  snprintf(what, sizeof what, "adamw t=%d wd=%g: p, m, v", t, wd);
  double e = fmax(rel_diff(p, p2, n), fmax(rel_diff(m, m2, n), rel_diff(v, v2, n)));
  tap_ok(e <= TOL, "%s: rel %.1e", what, e);
  free(p), free(g), free(m), free(v), free(p2), free(m2), free(v2);
}

/* ---- causal softmax: a row's max and sum first (the kernel's block reductions), then each element */

static void test_causal_softmax(int BH, int T) {
  size_t n = (size_t)BH * T * T;
  float scale = 0.35f, *s = uniform(n, -6, 6), *dp = uniform(n, -1, 1), *p = zeros(n), *want = zeros(n);
  for (size_t row = 0; row < (size_t)BH * T; row++) {
    int valid = (int)(row % (size_t)T) + 1;
    const float *sr = s + row * T;
    float mx = scale * sr[0];
    for (int j = 1; j < valid; j++) mx = fmaxf(mx, scale * sr[j]);
    double sum = 0;
    for (int j = 0; j < valid; j++) sum += expf(scale * sr[j] - mx);
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < T; j++) p[row * T + j] = j < valid ? ce_softmax_prob(sr[j], scale, mx, inv) : 0.0f;
  }
  ref->causal_softmax_fwd(BH, T, scale, s, want);
  char what[64];
  snprintf(what, sizeof what, "causal softmax BH=%d T=%d", BH, T);
  agree(p, want, n, what);
  float *ds = zeros(n), *dsw = zeros(n);
  for (size_t row = 0; row < (size_t)BH * T; row++) {
    double dot = 0;
    for (int j = 0; j < T; j++) dot += (double)want[row * T + j] * dp[row * T + j];
    for (int j = 0; j < T; j++) ds[row * T + j] = ce_softmax_grad(want[row * T + j], dp[row * T + j], dot, scale);
  }
  ref->causal_softmax_bwd(BH, T, scale, want, dp, dsw);
  snprintf(what, sizeof what, "causal softmax backward BH=%d T=%d", BH, T);
  agree(ds, dsw, n, what);
  free(s), free(dp), free(p), free(want), free(ds), free(dsw);
}

/* ---- cross-entropy, whole rows and vocabulary shards */

static void test_xent(int rows, int V, float offset, float spread) {
  size_t n = (size_t)rows * V;
  float *l = uniform(n, offset - spread, offset + spread), *tg = zeros((size_t)rows), *d = zeros(n), *dw = zeros(n);
  for (int r = 0; r < rows; r++) tg[r] = (float)rng_below(&rng, (uint64_t)V);
  double loss = 0;
  for (int r = 0; r < rows; r++) {
    const float *lr = l + (size_t)r * V;
    float mx = lr[0];
    for (int v = 1; v < V; v++) mx = fmaxf(mx, lr[v]);
    double sum = 0;
    for (int v = 0; v < V; v++) sum += expf(lr[v] - mx);
    long t = ce_shard_column(tg[r], 0, V);
    loss += ce_xent_loss(mx, sum, lr[t]);
    for (int v = 0; v < V; v++) d[(size_t)r * V + v] = ce_xent_grad(lr[v], mx, (float)sum, v == t, 0.5f);
  }
  double want = ref->xent_fwd_bwd(rows, V, l, tg, 0.5f, dw);
  char what[80];
  snprintf(what, sizeof what, "xent rows=%d V=%d logits %g+-%g: dlogits", rows, V, offset, spread);
  agree(d, dw, n, what);
  tap_ok(fabs(loss - want) <= TOL * fabs(want), "xent rows=%d V=%d: loss %.9g vs %.9g", rows, V, loss, want);
  tap_ok(ce_shard_column(5.0f, 4, 3) == 1 && ce_shard_column(3.0f, 4, 3) == -1 && ce_shard_column(7.0f, 4, 3) == -1,
         "shard column of a target: inside [lo, lo+V) only");
  free(l), free(tg), free(d), free(dw);
}

/* ---- layer norm: a row's mean and variance in double first, then each element */

static void test_layernorm(int N, int rows, int C) {
  size_t n = (size_t)N * rows * C, ns = (size_t)N * 2 * rows;
  float *x = uniform(n, 2, 5), *w = uniform((size_t)C, 0.5f, 1.5f), *b = uniform((size_t)C, -1, 1);
  float *dy = uniform(n, -1, 1), *y = zeros(n), *yw = zeros(n), *st = zeros(ns), *stw = zeros(ns);
  float eps = 1e-5f;
  for (size_t r = 0; r < (size_t)N * rows; r++) {
    const float *xr = x + r * C;
    double m = 0, var = 0;
    for (int c = 0; c < C; c++) m += xr[c];
    m /= C;
    for (int c = 0; c < C; c++) var += ((double)xr[c] - m) * ((double)xr[c] - m);
    var /= C;
    float mean = (float)m, rstd = ce_layernorm_rstd(var, eps);
    for (int c = 0; c < C; c++) y[r * C + c] = ce_layernorm_y(xr[c], mean, rstd, w[c], b[c]);
    st[(r / rows) * 2 * rows + r % rows] = mean;
    st[(r / rows) * 2 * rows + rows + r % rows] = rstd;
  }
  ref->layernorm_fwd(N, rows, C, x, w, b, eps, yw, stw);
  char what[64];
  snprintf(what, sizeof what, "layernorm N=%d rows=%d C=%d: y", N, rows, C);
  agree(y, yw, n, what);
  snprintf(what, sizeof what, "layernorm N=%d rows=%d C=%d: stats", N, rows, C);
  agree(st, stw, ns, what);
  float *dx = uniform(n, -1, 1), *dxw = copy_of(dx, n), *dwr = zeros((size_t)C), *dbr = zeros((size_t)C);
  for (size_t r = 0; r < (size_t)N * rows; r++) {
    float mean = stw[(r / rows) * 2 * rows + r % rows], rstd = stw[(r / rows) * 2 * rows + rows + r % rows];
    double md = 0, mdx = 0;
    for (int c = 0; c < C; c++) {
      double dxhat = (double)dy[r * C + c] * w[c];
      md += dxhat;
      mdx += dxhat * (((double)x[r * C + c] - mean) * rstd);
    }
    md /= C, mdx /= C;
    for (int c = 0; c < C; c++) dx[r * C + c] += ce_layernorm_dx(x[r * C + c], dy[r * C + c], w[c], mean, rstd, md, mdx);
  }
  ref->layernorm_bwd(N, rows, C, x, w, stw, dy, dxw, 0, dwr, dbr);
  snprintf(what, sizeof what, "layernorm N=%d rows=%d C=%d: dx added", N, rows, C);
  agree(dx, dxw, n, what);
  free(x), free(w), free(b), free(dy), free(y), free(yw), free(st), free(stw), free(dx), free(dxw), free(dwr), free(dbr);
}

/* ---- convolution lowering and pooling, element by element */

/* Batch norm over N samples of (C, HW), as the kernels run it per channel and per element: the R
 * parts combined by ce_bn_finish (running statistics updated), ce_bn_y with and without the fused
 * ReLU, ce_bn_dx with the batch's sums: all against ref. */
static void test_batchnorm(int N, int C, int HW, int R) {
  size_t n = (size_t)N * C * HW, P = 1 + 3 * (size_t)C;
  float *x = uniform(n, 2, 5), *w = uniform((size_t)C, 0.5f, 1.5f), *b = uniform((size_t)C, -1, 1);
  float *dy = uniform(n, -1, 1), *parts = zeros((size_t)R * P), *run = uniform(2 * (size_t)C, 0.5f, 1.5f);
  float *runw = copy_of(run, 2 * (size_t)C), *st = zeros(2 * (size_t)C), *stw = zeros(2 * (size_t)C);
  for (int r = 0, lo = 0; r < R; r++) { /* R ranks' shares of the batch */
    int hi = N * (r + 1) / R;
    ref->bn_stats(hi - lo, C, HW, x + (size_t)lo * C * HW, parts + (size_t)r * P);
    lo = hi;
  }
  for (int c = 0; c < C; c++) ce_bn_finish(c, C, R, parts, 1e-5f, 0.1f, run, st);
  ref->bn_finish(C, R, parts, 1e-5f, 0.1f, runw, stw);
  char what[80];
  snprintf(what, sizeof what, "batchnorm N=%d C=%d HW=%d, %d parts: statistics", N, C, HW, R);
  agree(st, stw, 2 * (size_t)C, what);
  snprintf(what, sizeof what, "batchnorm N=%d C=%d HW=%d, %d parts: running statistics", N, C, HW, R);
  agree(run, runw, 2 * (size_t)C, what);
  float *y = zeros(n), *yw = zeros(n), *sums = zeros(2 * (size_t)C), *dx = uniform(n, -1, 1), *dxw = copy_of(dx, n);
  for (int relu = 0; relu <= 1; relu++) {
    for (size_t i = 0; i < n; i++) {
      int c = (int)(i / (size_t)HW % (size_t)C);
      y[i] = ce_bn_y(x[i], stw[c], stw[C + c], w[c], b[c], relu);
    }
    ref->bn_fwd(N, C, HW, x, stw, w, b, relu, yw);
    snprintf(what, sizeof what, "batchnorm N=%d C=%d HW=%d: y%s", N, C, HW, relu ? " (relu)" : "");
    agree(y, yw, n, what);
    const float *ry = relu ? yw : NULL;
    ref->bn_bwd_sums(N, C, HW, x, stw, dy, ry, sums);
    double M = (double)N * HW;
    for (size_t i = 0; i < n; i++) {
      int c = (int)(i / (size_t)HW % (size_t)C);
      float g = ry && !(ry[i] > 0.0f) ? 0.0f : dy[i], rstd = stw[C + c];
      dx[i] += ce_bn_dx(g, (x[i] - stw[c]) * rstd, w[c], rstd, (float)(sums[c] / M), (float)(sums[C + c] / M));
    }
    ref->bn_bwd(N, C, HW, M, x, stw, w, dy, ry, sums, dxw, 0);
    snprintf(what, sizeof what, "batchnorm N=%d C=%d HW=%d: dx added%s", N, C, HW, relu ? " (relu)" : "");
    agree(dx, dxw, n, what);
  }
  free(x), free(w), free(b), free(dy), free(parts), free(run), free(runw), free(st), free(stw), free(y), free(yw);
  free(sums), free(dx), free(dxw);
}

static void test_lowering(int C, int H, int W, int KH, int KW, int stride, int ph, int pw) {
  int OH = (H + 2 * ph - KH) / stride + 1, OW = (W + 2 * pw - KW) / stride + 1;
  size_t rows = (size_t)C * KH * KW, pos = (size_t)OH * OW, nx = (size_t)C * H * W;
  float *x = uniform(nx, -1, 1), *col = zeros(rows * pos), *want = zeros(rows * pos);
  for (size_t r = 0; r < rows; r++)
    for (size_t q = 0; q < pos; q++)
      col[r * pos + q] = ce_im2col_value(x, (long)r, (long)q, H, W, KH, KW, stride, ph, pw, OW);
  ref->im2col(x, C, H, W, KH, KW, stride, ph, pw, want);
  char what[80];
  snprintf(what, sizeof what, "im2col C=%d %dx%d k=%dx%d s=%d p=%d,%d", C, H, W, KH, KW, stride, ph, pw);
  same(col, want, rows * pos, what);
  float *g = uniform(rows * pos, -1, 1), *dx = uniform(nx, -1, 1), *dxw = copy_of(dx, nx);
  for (int c = 0; c < C; c++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++)
        dx[((size_t)c * H + h) * W + w] += ce_col2im_pixel(g, c, h, w, KH, KW, stride, ph, pw, OH, OW);
  ref->col2im(g, C, H, W, KH, KW, stride, ph, pw, dxw);
  snprintf(what, sizeof what, "col2im gather C=%d %dx%d k=%dx%d s=%d p=%d,%d", C, H, W, KH, KW, stride, ph, pw);
  agree(dx, dxw, nx, what);
  free(x), free(col), free(want), free(g), free(dx), free(dxw);
}

static void test_maxpool(int P, int H, int W, int k, int s, int pad, int ties) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  size_t nx = (size_t)P * H * W, ny = (size_t)P * OH * OW;
  float *x = uniform(nx, -1, 1), *am = zeros(ny), *amw = zeros(ny), *yw = zeros(ny), *dy = uniform(ny, -1, 1);
  if (ties)
    for (size_t i = 0; i < nx; i++) x[i] = fmaxf(x[i], 0.0f);
  for (int p = 0; p < P; p++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++)
        am[((size_t)p * OH + oh) * OW + ow] = (float)ce_maxpool_argmax(x + (size_t)p * H * W, H, W, k, s, pad, oh, ow);
  ref->maxpool_fwd(P, H, W, k, s, pad, x, yw, amw);
  char what[80];
  snprintf(what, sizeof what, "maxpool argmax P=%d %dx%d k=%d s=%d p=%d%s", P, H, W, k, s, pad, ties ? " ties" : "");
  same(am, amw, ny, what);
  float *dx = uniform(nx, -1, 1), *dxw = copy_of(dx, nx);
  for (int p = 0; p < P; p++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++)
        dx[((size_t)p * H + h) * W + w] += ce_maxpool_grad_pixel(dy + (size_t)p * OH * OW, amw + (size_t)p * OH * OW,
                                                                 h, w, W, k, s, pad, OH, OW);
  ref->maxpool_bwd(P, H, W, k, s, pad, dy, amw, dxw, 0);
  snprintf(what, sizeof what, "maxpool gather backward P=%d %dx%d k=%d s=%d p=%d%s", P, H, W, k, s, pad,
           ties ? " ties" : "");
  agree(dx, dxw, nx, what);
  free(x), free(am), free(amw), free(yw), free(dy), free(dx), free(dxw);
}

/* The windowed average pool's per-output value and per-pixel gather (the CUDA kernels') against
 * ref. */
static void test_avgpool2d(int P, int H, int W, int k, int s, int pad) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  size_t nx = (size_t)P * H * W, ny = (size_t)P * OH * OW;
  float *x = uniform(nx, -1, 1), *y = zeros(ny), *yw = zeros(ny), *dy = uniform(ny, -1, 1);
  for (int p = 0; p < P; p++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++)
        y[((size_t)p * OH + oh) * OW + ow] = ce_avgpool2d_value(x + (size_t)p * H * W, H, W, k, s, pad, oh, ow);
  ref->avgpool2d_fwd(P, H, W, k, s, pad, x, yw);
  char what[80];
  snprintf(what, sizeof what, "avgpool2d P=%d %dx%d k=%d s=%d p=%d", P, H, W, k, s, pad);
  agree(y, yw, ny, what);
  float *dx = uniform(nx, -1, 1), *dxw = copy_of(dx, nx);
  for (int p = 0; p < P; p++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++)
        dx[((size_t)p * H + h) * W + w] += ce_avgpool2d_grad_pixel(dy + (size_t)p * OH * OW, h, w, k, s, pad, OH, OW);
  ref->avgpool2d_bwd(P, H, W, k, s, pad, dy, dxw, 0);
  snprintf(what, sizeof what, "avgpool2d gather backward P=%d %dx%d k=%d s=%d p=%d", P, H, W, k, s, pad);
  agree(dx, dxw, nx, what);
  free(x), free(y), free(yw), free(dy), free(dx), free(dxw);
}

/* ce_window_range against a brute-force scan of the windows. */
static void test_window_range(void) {
  int bad = 0;
  for (int k = 1; k <= 5; k++)
    for (int s = 1; s <= 3; s++)
      for (int pad = 0; pad < k; pad++)
        for (int n = 1; n <= 9; n++) {
          int nout = (n + 2 * pad - k) / s + 1;
          if (n + 2 * pad < k) continue;
          for (int i = 0; i < n; i++) {
            int lo, hi, want_lo = -1, want_hi = -1;
            ce_window_range(i, k, s, pad, nout, &lo, &hi);
            for (int o = 0; o < nout; o++)
              if (o * s - pad <= i && i < o * s - pad + k) {
                if (want_lo < 0) want_lo = o;
                want_hi = o + 1;
              }
            int empty = want_lo < 0;
            if (empty ? lo < hi : (lo != want_lo || hi != want_hi)) bad++;
          }
        }
  tap_ok(bad == 0, "window range = the windows covering a position, all k<=5 s<=3 pad<k n<=9 (%d wrong)", bad);
}

/* ---- embedding */

static void test_embed(int B, int T, int C, int vocab, int lo, int V, int positions) {
  size_t ny = (size_t)B * T * C;
  float *ids = zeros((size_t)B * T), *wte = uniform((size_t)V * C, -1, 1), *wpe = uniform((size_t)T * C, -1, 1);
  float *y = zeros(ny), *yw = zeros(ny);
  for (size_t i = 0; i < (size_t)B * T; i++) ids[i] = (float)rng_below(&rng, (uint64_t)vocab);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int c = 0; c < C; c++)
        y[((size_t)b * T + t) * C + c] = ce_embed_value(ids[(size_t)b * T + t], t, c, C, lo, V, wte, positions ? wpe : NULL);
  ref->embed_fwd(B, T, C, ids, lo, V, wte, positions ? wpe : NULL, yw);
  char what[80];
  snprintf(what, sizeof what, "embed ids [%d,%d) of %d%s", lo, lo + V, vocab, positions ? "" : ", no positions");
  same(y, yw, ny, what);
  free(ids), free(wte), free(wpe), free(y), free(yw);
}

int main(void) {
  rng_seed(&rng, 20251130);
  test_activations(1001);
  for (int first = 1; first >= 0; first--) {
    test_sgd(1001, 0.9f, 0, 0.0f, first);
    test_sgd(1001, 0.9f, 1, 1e-2f, first);
  }
  test_sgd(1001, 0.0f, 0, 1e-2f, 0);
  test_adamw(1001, 1, 0.0f);
  test_adamw(1001, 10, 1e-2f);
  test_causal_softmax(3, 1);
  test_causal_softmax(3, 5);
  test_causal_softmax(2, 33);
  test_xent(6, 10, 0.0f, 3.0f);
  test_xent(5, 1000, 0.0f, 5.0f);
  test_xent(4, 37, 1000.0f, 30.0f);
  test_layernorm(1, 5, 7);
  test_layernorm(3, 8, 64);
  test_batchnorm(6, 4, 49, 3);
  test_batchnorm(9, 7, 1, 4); /* the 1-D form */
  test_window_range();
  const int convs[][8] = {{3, 7, 7, 3, 3, 1, 1, 1}, {2, 8, 9, 3, 3, 2, 1, 1}, {3, 6, 5, 3, 3, 1, 0, 0},
                          {1, 9, 9, 2, 2, 2, 0, 0}, {2, 5, 5, 5, 5, 1, 2, 2}, {4, 8, 8, 1, 1, 1, 0, 0},
                          {2, 7, 6, 1, 1, 2, 1, 1}, {2, 4, 4, 3, 3, 2, 0, 0}, {2, 8, 9, 1, 7, 1, 0, 3},
                          {2, 9, 8, 7, 1, 1, 3, 0}, {3, 5, 6, 3, 1, 2, 1, 0}};
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
    test_lowering(convs[i][0], convs[i][1], convs[i][2], convs[i][3], convs[i][4], convs[i][5], convs[i][6],
                  convs[i][7]);
  test_maxpool(3, 8, 8, 2, 2, 0, 0);
  test_maxpool(2, 9, 7, 3, 2, 0, 0);
  test_maxpool(2, 6, 6, 2, 1, 0, 0);
  test_maxpool(4, 8, 8, 2, 2, 0, 1);
  test_maxpool(2, 9, 9, 3, 2, 0, 1);
  test_maxpool(3, 9, 9, 3, 2, 1, 0);
  test_maxpool(2, 8, 10, 3, 2, 1, 1);
  test_maxpool(2, 7, 6, 3, 1, 1, 1);
  test_avgpool2d(4, 7, 7, 3, 1, 1);
  test_avgpool2d(3, 9, 8, 3, 2, 1);
  test_avgpool2d(2, 6, 7, 5, 1, 2);
  test_embed(2, 5, 8, 11, 0, 11, 1);
  test_embed(3, 6, 8, 12, 4, 4, 0);
  return tap_done();
}
