/* The per-element arithmetic of the CUDA backend's kernels, as functions that compile both for the
 * GPU (nvcc: __host__ __device__) and for the host (plain C), so that tests/test_cuda_elem.c checks
 * them against the "ref" backend on a machine without a GPU. A kernel maps threads to elements,
 * rows or windows and calls these; what differs on the GPU is only the order of its sums.
 *
 * Every function here is pure: no memory other than its arguments, float arithmetic as the kernels
 * do it (sums that a kernel accumulates in double are marked). */
#ifndef SURGE_BACKEND_CUDA_ELEM_H
#define SURGE_BACKEND_CUDA_ELEM_H

#include <math.h>

#include "backend/adamw_coefs.h"

#ifdef __CUDACC__
#define CE_FN static inline __host__ __device__
#else
#define CE_FN static inline
#endif

/* ---- batch norm (backend.h: bn_stats .. bn_bwd) */

/* bn_finish for channel c: Chan's parallel combination of the R parts (1 + 3C floats each: count,
 * means as float pairs, M2s) in order, in double, into stats[c] (mean) and stats[C + c] (rstd), and PyTorch's
 * momentum update of running (unbiased variance) unless running is NULL; R = 0: from running. */
CE_FN void ce_bn_finish(int c, int C, int R, const float *parts, float eps, float momentum, float *running,
                        float *stats) {
  if (R == 0) {
    stats[c] = running[c];
    stats[C + c] = (float)(1.0 / sqrt((double)running[C + c] + (double)eps));
    return;
  }
  const long P = 1 + 3 * (long)C;
  double n = 0.0, mean = 0.0, m2 = 0.0;
  for (int r = 0; r < R; r++) {
    double nb = parts[r * P], delta = ((double)parts[r * P + 1 + c] + parts[r * P + 1 + C + c]) - mean;
    if (nb > 0.0) {
      double nab = n + nb;
      mean += delta * (nb / nab);
      m2 += (double)parts[r * P + 1 + 2 * C + c] + delta * delta * (n * nb / nab);
      n = nab;
    }
  }
  double var = n > 0.0 ? m2 / n : 0.0;
  stats[c] = (float)mean;
  stats[C + c] = (float)(1.0 / sqrt(var + (double)eps));
  if (running) {
    double unbiased = n > 1.0 ? m2 / (n - 1.0) : var, keep = 1.0 - (double)momentum;
    running[c] = (float)(keep * running[c] + (double)momentum * mean);
    running[C + c] = (float)(keep * running[C + c] + (double)momentum * unbiased);
  }
}

/* The normalised value: (x - mean) rstd w + b, through max(0, .) when relu. */
CE_FN float ce_bn_y(float x, float mean, float rstd, float w, float b, int relu) {
  float v = (x - mean) * rstd * w + b;
  return relu && !(v > 0.0f) ? 0.0f : v;
}

/* The input gradient: w rstd (g - mean_g - xhat mean_gx), with the batch's means of g and g xhat. */
CE_FN float ce_bn_dx(float g, float xhat, float w, float rstd, float mean_g, float mean_gx) {
  return w * rstd * (g - mean_g - xhat * mean_gx);
}

/* ---- activations */

CE_FN float ce_relu(float x) { return x > 0.0f ? x : 0.0f; }

/* dy where x > 0, else 0 (relu_bwd adds it to dx). */
CE_FN float ce_relu_grad(float x, float dy) { return x > 0.0f ? dy : 0.0f; }

#define CE_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define CE_GELU_C 0.044715f

/* GELU, tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as
 * x s with s = sigmoid(2u) = 0.5 (1 + tanh(u)) (the cpu backend's form): 1 + tanhf(u) loses the
 * digits of a small result to cancellation where x is below -3 (1.2e-4 relative on an H200). */
CE_FN float ce_gelu_u(float x) { return CE_GELU_K * (x + CE_GELU_C * x * x * x); }
CE_FN float ce_gelu(float x) { return x / (1.0f + expf(-2.0f * ce_gelu_u(x))); }

/* d gelu / dx at x: s + 2 x s (1 - s) du/dx, 1 - s = sigmoid(-2u) computed as such (no cancellation
 * either way). The second term through x within +-1e4 (the cpu backend's rule): s (1 - s) is exactly
 * 0 there already, and x x past 1.8e19 would be inf, 0 inf NaN. */
CE_FN float ce_gelu_grad(float x) {
  const float u = ce_gelu_u(x), s = 1.0f / (1.0f + expf(-2.0f * u)), r = 1.0f / (1.0f + expf(2.0f * u));
  const float w = fminf(fmaxf(x, -1e4f), 1e4f), du = CE_GELU_K * (1.0f + 3.0f * CE_GELU_C * w * w);
  return s + 2.0f * w * s * r * du;
}

/* The conv epilogue: v + bias, through max(0, .) when relu. */
CE_FN float ce_bias_act(float v, float bias, int relu) {
  v += bias;
  return relu && v < 0.0f ? 0.0f : v;
}

/* ---- optimizers (PyTorch semantics, backend.h); one element, updated in place */

/* SGD: g' = g + wd p; buf = mom buf + g' (buf = g' when first); step = nesterov ? g' + mom buf : buf
 * (mom == 0: step = g', buf untouched); p -= lr step. */
CE_FN void ce_sgd(float *p, float g, float *buf, float lr, float mom, int nesterov, float wd, int first) {
  float gi = g + wd * *p, step = gi;
  if (mom != 0.0f) {
    float b = first ? gi : mom * *buf + gi;
    *buf = b;
    step = nesterov ? gi + mom * b : b;
  }
  *p -= lr * step;
}

/* AdamW: p *= 1 - lr wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m/bc1) / (sqrt(v/bc2) + eps). */
CE_FN void ce_adamw(float *p, float g, float *m, float *v, adamw_coefs_t c) {
  float mi = c.b1 * *m + (1.0f - c.b1) * g;
  float vi = c.b2 * *v + (1.0f - c.b2) * g * g;
  float pi = *p * (1.0f - c.lr * c.wd);
  *p = pi - c.lr * (mi / c.bc1) / (sqrtf(vi / c.bc2) + c.eps);
  *m = mi;
  *v = vi;
}

/* ---- softmax and cross-entropy rows (a kernel finds the maximum and the sum over its row first) */

/* causal softmax: p = exp(scale s - mx) / sum, where mx is the row's max of scale s over the valid
 * columns and inv_sum = 1 / the sum of those exponentials. */
CE_FN float ce_softmax_prob(float s, float scale, float mx, float inv_sum) { return expf(scale * s - mx) * inv_sum; }

/* causal softmax backward: ds = scale p (dp - dot), dot = sum_k p_k dp_k over the row (a double sum). */
CE_FN float ce_softmax_grad(float p, float dp, float dot, float scale) { return scale * p * (dp - (float)dot); }

/* cross-entropy gradient of one logit: grad_scale (exp(l - mx) / sumexp - [target]). */
CE_FN float ce_xent_grad(float logit, float mx, float sumexp, int is_target, float grad_scale) {
  return grad_scale * (expf(logit - mx) / sumexp - (is_target ? 1.0f : 0.0f));
}

/* The row's loss: log(sumexp) + mx - the target's logit (sumexp over exp(l - mx), a double sum). */
CE_FN double ce_xent_loss(double mx, double sumexp, double target_logit) { return mx + log(sumexp) - target_logit; }

/* A target id stored as float, as a column of this shard [lo, lo+V), or -1 when it is not here. */
CE_FN long ce_shard_column(float id, int lo, int V) {
  long t = (long)id - lo;
  return t >= 0 && t < V ? t : -1;
}

/* ---- layer norm of one row (a kernel computes the row's mean and rstd, in double, first) */

/* y = (x - mean) rstd w + b. */
CE_FN float ce_layernorm_y(float x, float mean, float rstd, float w, float b) { return (x - mean) * rstd * w + b; }

/* rstd = 1 / sqrt(var + eps) of the row's variance (population, over C). */
CE_FN float ce_layernorm_rstd(double var, float eps) { return (float)(1.0 / sqrt(var + (double)eps)); }

/* dx += rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy w, xhat = (x - mean) rstd;
 * the two means over the row are double sums divided by C. */
CE_FN float ce_layernorm_dx(float x, float dy, float w, float mean, float rstd, double mean_dxhat,
                            double mean_dxhat_xhat) {
  float xhat = (x - mean) * rstd;
  return rstd * (dy * w - (float)mean_dxhat - xhat * (float)mean_dxhat_xhat);
}

/* ---- convolution and pooling geometry */

/* The pixel of an image (C,H,W) that column (row = (c,kh,kw), position (oh,ow)) of the lowering
 * reads: its flat index, or -1 in the padding (ph rows, pw columns each side). */
CE_FN long ce_conv_src(int c, int kh, int kw, int oh, int ow, int H, int W, int stride, int ph, int pw) {
  int h = oh * stride - ph + kh, w = ow * stride - pw + kw;
  if (h < 0 || h >= H || w < 0 || w >= W) return -1;
  return ((long)c * H + h) * W + w;
}

/* The outputs (along one axis of length n_out) whose window of size k and step `stride`, starting
 * at out * stride - pad, covers input position i: [*lo, *hi) (empty when *lo >= *hi); output o
 * reads i through its tap i + pad - o * stride. Used where a kernel gathers instead of scattering
 * (col2im, pool backwards), so no two threads write one element and sums keep one order. */
CE_FN void ce_window_range(int i, int k, int stride, int pad, int n_out, int *lo, int *hi) {
  int a = i + pad - k + 1; /* the first output whose window may reach i: out * stride >= i + pad - k + 1 */
  int first = a <= 0 ? 0 : (a + stride - 1) / stride;
  int last = (i + pad) / stride; /* out * stride <= i + pad */
  *lo = first;
  *hi = last + 1 < n_out ? last + 1 : n_out;
}

/* A pool window along one axis: output o's window [o*s - pad, o*s - pad + k) clipped to [0, n). */
CE_FN void ce_pool_span(int o, int k, int s, int pad, int n, int *lo, int *hi) {
  int a = o * s - pad, b = a + k;
  *lo = a < 0 ? 0 : a;
  *hi = b < n ? b : n;
}

/* Max pool, one output: the flat index (h*W+w) of the first maximum (row by row) of the k x k
 * window of output (oh, ow), stride s and padding pad, inside a plane x (H,W) (the padding is never
 * chosen: PyTorch's -inf). */
CE_FN int ce_maxpool_argmax(const float *x, int H, int W, int k, int s, int pad, int oh, int ow) {
  int h0, h1, w0, w1;
  ce_pool_span(oh, k, s, pad, H, &h0, &h1);
  ce_pool_span(ow, k, s, pad, W, &w0, &w1);
  int best = h0 * W + w0;
  for (int i = h0; i < h1; i++)
    for (int j = w0; j < w1; j++) {
      int at = i * W + j;
      if (x[at] > x[best]) best = at;
    }
  return best;
}

/* Windowed average pool, one output of a plane x (H,W): the sum of the window's elements inside
 * the plane over k*k (count_include_pad), the sum in float row by row. */
CE_FN float ce_avgpool2d_value(const float *x, int H, int W, int k, int s, int pad, int oh, int ow) {
  int h0, h1, w0, w1;
  ce_pool_span(oh, k, s, pad, H, &h0, &h1);
  ce_pool_span(ow, k, s, pad, W, &w0, &w1);
  float acc = 0.0f;
  for (int i = h0; i < h1; i++)
    for (int j = w0; j < w1; j++) acc += x[i * W + j];
  return acc / (float)(k * k);
}

/* Its backward as a gather: what pixel (h,w) receives, the dy (OH,OW) of every output whose window
 * covers it, over k*k. */
CE_FN float ce_avgpool2d_grad_pixel(const float *dy, int h, int w, int k, int s, int pad, int OH, int OW) {
  int oh_lo, oh_hi, ow_lo, ow_hi;
  ce_window_range(h, k, s, pad, OH, &oh_lo, &oh_hi);
  ce_window_range(w, k, s, pad, OW, &ow_lo, &ow_hi);
  float g = 0.0f;
  for (int oh = oh_lo; oh < oh_hi; oh++)
    for (int ow = ow_lo; ow < ow_hi; ow++) g += dy[oh * OW + ow];
  return g / (float)(k * k);
}

/* im2col of one image x (C,H,W): the value at row (c,kh,kw) = `row`, output position `pos` of the
 * lowering (C*KH*KW, OH*OW): the pixel read, 0 in the padding. */
CE_FN float ce_im2col_value(const float *x, long row, long pos, int H, int W, int KH, int KW, int stride, int ph,
                            int pw, int OW) {
  int kw = (int)(row % KW), kh = (int)(row / KW % KH), c = (int)(row / ((long)KW * KH));
  long at = ce_conv_src(c, kh, kw, (int)(pos / OW), (int)(pos % OW), H, W, stride, ph, pw);
  return at < 0 ? 0.0f : x[at];
}

/* col2im as a gather: what pixel (c,h,w) of the image receives from a lowering col (C*KH*KW, OH*OW),
 * the sum over every (kh, kw, oh, ow) that reads it, in that order. */
CE_FN float ce_col2im_pixel(const float *col, int c, int h, int w, int KH, int KW, int stride, int ph, int pw,
                            int OH, int OW) {
  int oh_lo, oh_hi, ow_lo, ow_hi;
  ce_window_range(h, KH, stride, ph, OH, &oh_lo, &oh_hi);
  ce_window_range(w, KW, stride, pw, OW, &ow_lo, &ow_hi);
  float s = 0.0f;
  for (int oh = oh_lo; oh < oh_hi; oh++)
    for (int ow = ow_lo; ow < ow_hi; ow++) {
      int kh = h + ph - oh * stride, kw = w + pw - ow * stride;
      long row = ((long)c * KH + kh) * KW + kw;
      s += col[row * OH * OW + (long)oh * OW + ow];
    }
  return s;
}

/* Max-pool backward as a gather: what pixel (h,w) of a plane receives, the dy of every output of
 * that plane (dy and argmax (OH,OW)) whose window covers it and chose it. */
CE_FN float ce_maxpool_grad_pixel(const float *dy, const float *argmax, int h, int w, int W, int k, int s, int pad,
                                  int OH, int OW) {
  int oh_lo, oh_hi, ow_lo, ow_hi;
  ce_window_range(h, k, s, pad, OH, &oh_lo, &oh_hi);
  ce_window_range(w, k, s, pad, OW, &ow_lo, &ow_hi);
  float g = 0.0f, me = (float)(h * W + w);
  for (int oh = oh_lo; oh < oh_hi; oh++)
    for (int ow = ow_lo; ow < ow_hi; ow++)
      if (argmax[oh * OW + ow] == me) g += dy[oh * OW + ow];
  return g;
}

/* ---- embedding */

/* The row of a table holding ids [lo, lo+V) that token id (stored as float) reads, or -1. */
CE_FN long ce_embed_row(float id, int lo, int V) { return ce_shard_column(id, lo, V); }

/* y[b,t,c] of embed_fwd: the token's row of wte (ids [lo, lo+V)) when it holds it, plus wpe[t] when
 * there is one; `id` is the token at (b,t). */
CE_FN float ce_embed_value(float id, int t, int c, int C, int lo, int V, const float *wte, const float *wpe) {
  long row = ce_embed_row(id, lo, V);
  return (row >= 0 ? wte[row * C + c] : 0.0f) + (wpe ? wpe[(long)t * C + c] : 0.0f);
}

#endif
