/* 2-D convolution: x (C,H,W) -> y (O,OH,OW) with W (O,C,k,k), b (O), stride s, zero padding p,
 * OH = (H + 2p - k)/s + 1. Lowered per sample to one GEMM: im2col gives col (C*k*k, OH*OW), then
 * y_b (O, OH*OW) = W (O, C*k*k) col. A 1x1 stride-1 unpadded conv uses x_b itself as col. */
#include <string.h>

#include "nn/layer.h"
#include "nn/layer_common.h"

typedef struct conv_geom {
  int C, H, W, O, k, s, p, OH, OW;
  int ckk;       /* rows of col: C*k*k */
  int ohow;      /* columns of col: OH*OW */
  int pointwise; /* k = 1, s = 1, p = 0: col is x_b */
} conv_geom_t;

static conv_geom_t conv_geom(const layer_t *l) {
  conv_geom_t g;
  g.C = l->in_shape[0].d[0];
  g.H = l->in_shape[0].d[1];
  g.W = l->in_shape[0].d[2];
  g.O = l->out.d[0];
  g.OH = l->out.d[1];
  g.OW = l->out.d[2];
  g.k = l->kernel;
  g.s = l->stride;
  g.p = l->pad;
  g.ckk = g.C * g.k * g.k;
  g.ohow = g.OH * g.OW;
  g.pointwise = g.k == 1 && g.s == 1 && g.p == 0;
  return g;
}

static int conv2d_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "conv2d", 1, err, n) || layer_check_image(l, "conv2d", err, n) ||
      layer_check_at_least("conv2d", "out_channels", l->out_channels, 1, err, n) ||
      layer_check_at_least("conv2d", "kernel", l->kernel, 1, err, n) ||
      layer_check_at_least("conv2d", "stride", l->stride, 1, err, n) ||
      layer_check_at_least("conv2d", "pad", l->pad, 0, err, n))
    return -1;
  int C = l->in_shape[0].d[0], H = l->in_shape[0].d[1], W = l->in_shape[0].d[2];
  int k = l->kernel, O = l->out_channels;
  if (k > H + 2 * l->pad || k > W + 2 * l->pad) {
    snprintf(err, n, "conv2d: kernel %d larger than padded input %dx%d (input %dx%d, pad %d)", k,
             H + 2 * l->pad, W + 2 * l->pad, H, W, l->pad);
    return -1;
  }
  l->out = shape3(O, (H + 2 * l->pad - k) / l->stride + 1, (W + 2 * l->pad - k) / l->stride + 1);
  l->np = l->bias ? 2 : 1;
  memset(l->pdesc, 0, sizeof l->pdesc);
  l->pdesc[0] = (layer_param_desc_t){"weight", 4, {O, C, k, k}};
  if (l->bias)
    l->pdesc[1] = (layer_param_desc_t){"bias", 1, {O, 0, 0, 0}};
  conv_geom_t g = conv_geom(l);
  l->aux_per_sample = 0;
  l->scratch = g.pointwise ? 0 : (size_t)g.ckk * (size_t)g.ohow; /* one sample's col */
  /* 2*C*k*k multiply-adds per output, plus one add per output for the bias */
  l->flops_per_sample = (double)O * g.ohow * (2.0 * g.ckk + (l->bias ? 1 : 0));
  return 0;
}

static void conv2d_init(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme) {
  conv_geom_t g = conv_geom(l);
  layer_init_weight_bias(w[0], (size_t)g.O * g.ckk, l->bias ? w[1] : NULL,
                         l->bias ? (size_t)g.O : 0, g.ckk, rng, scheme);
}

/* col (ckk, ohow) of one sample x_b (C,H,W): x_b itself when pointwise, else im2col in scratch. */
static const float *conv_lower(const conv_geom_t *g, const backend_t *be, const float *xb,
                               float *scratch) {
  if (g->pointwise)
    return xb;
  be->im2col(xb, g->C, g->H, g->W, g->k, g->k, g->s, g->p, scratch);
  return scratch;
}

static void conv2d_forward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  conv_geom_t g = conv_geom(l);
  size_t in_n = shape_size(l->in_shape[0]), out_n = shape_size(l->out);
  for (int b = 0; b < c->B; b++) {
    const float *col = conv_lower(&g, be, c->x[0] + (size_t)b * in_n, c->scratch);
    // y_b (O, ohow) = W (O, ckk) col (ckk, ohow)
    be->gemm(0, 0, g.O, g.ohow, g.ckk, 1.0f, c->w[0], g.ckk, col, g.ohow, 0.0f,
             c->y + (size_t)b * out_n, g.ohow);
  }
  if (l->bias)
    be->bias_add_planes(c->B, g.O, g.ohow, c->w[1], c->y);
}

static void conv2d_backward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  conv_geom_t g = conv_geom(l);
  size_t in_n = shape_size(l->in_shape[0]), out_n = shape_size(l->out);
  // db (O) += sums of dy (B, O, ohow) over samples and positions
  if (l->bias && c->dw[1])
    be->bias_grad_planes(c->B, g.O, g.ohow, c->dy, c->dw[1]);
  for (int b = 0; b < c->B; b++) {
    const float *dyb = c->dy + (size_t)b * out_n; // (O, ohow)
    if (c->dw[0]) {
      const float *col = conv_lower(&g, be, c->x[0] + (size_t)b * in_n, c->scratch);
      // dW (O, ckk) += dy_b (O, ohow) col^T (ohow, ckk)
      be->gemm(0, 1, g.O, g.ckk, g.ohow, 1.0f, dyb, g.ohow, col, g.ohow, 1.0f, c->dw[0], g.ckk);
    }
    if (!c->dx[0])
      continue;
    float *dxb = c->dx[0] + (size_t)b * in_n; // (C,H,W)
    if (g.pointwise) {
      // dx_b (C, HW) += W^T (C, O) dy_b (O, HW)
      be->gemm(1, 0, g.ckk, g.ohow, g.O, 1.0f, c->w[0], g.ckk, dyb, g.ohow, 1.0f, dxb, g.ohow);
    } else {
      // dcol (ckk, ohow) = W^T dy_b, scattered back into dx_b
      be->gemm(1, 0, g.ckk, g.ohow, g.O, 1.0f, c->w[0], g.ckk, dyb, g.ohow, 0.0f, c->scratch,
               g.ohow);
      be->col2im(c->scratch, g.C, g.H, g.W, g.k, g.k, g.s, g.p, dxb);
    }
  }
}

const layer_ops_t layer_conv2d_ops = {"conv2d", conv2d_infer, conv2d_init, conv2d_forward,
                                      conv2d_backward};
