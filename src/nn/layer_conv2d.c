/* 2-D convolution: x (C,H,W) -> y (O,OH,OW) with W (O,C,kh,kw), b (O), stride s, zero padding ph
 * rows and pw columns each side, OH = (H + 2ph - kh)/s + 1, OW = (W + 2pw - kw)/s + 1 (layer_t:
 * kernel, pad are kh, ph; kernel_w, pad_w are kw, pw). Forward and backward are one backend call
 * each over the whole batch (backend.h conv_fwd / conv_bwd, which lower blocks of samples to GEMMs
 * with the bias fused into the epilogue); the layer's scratch is the conv workspace, sized for any
 * batch. */
#include <string.h>

#include "nn/layer.h"
#include "nn/layer_common.h"

static conv_shape_t conv_shape_of(const layer_t *l) {
  return conv_shape_make(l->in_shape[0].d[0], l->in_shape[0].d[1], l->in_shape[0].d[2], l->out_channels,
                         l->kernel, l->kernel_w, l->stride, l->pad, l->pad_w);
}

static int conv2d_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "conv2d", 1, err, n) || layer_check_image(l, "conv2d", err, n) ||
      layer_check_at_least("conv2d", "out_channels", l->out_channels, 1, err, n) ||
      layer_check_at_least("conv2d", "kernel height", l->kernel, 1, err, n) ||
      layer_check_at_least("conv2d", "kernel width", l->kernel_w, 1, err, n) ||
      layer_check_at_least("conv2d", "stride", l->stride, 1, err, n) ||
      layer_check_at_least("conv2d", "row padding", l->pad, 0, err, n) ||
      layer_check_at_least("conv2d", "column padding", l->pad_w, 0, err, n))
    return -1;
  int C = l->in_shape[0].d[0], H = l->in_shape[0].d[1], W = l->in_shape[0].d[2];
  int kh = l->kernel, kw = l->kernel_w, O = l->out_channels;
  if (kh > H + 2 * l->pad || kw > W + 2 * l->pad_w) {
    snprintf(err, n, "conv2d: kernel %dx%d larger than padded input %dx%d (input %dx%d, padding %d,%d)", kh, kw,
             H + 2 * l->pad, W + 2 * l->pad_w, H, W, l->pad, l->pad_w);
    return -1;
  }
  conv_shape_t cs = conv_shape_of(l);
  l->out = shape3(O, cs.OH, cs.OW);
  l->np = l->bias ? 2 : 1;
  memset(l->pdesc, 0, sizeof l->pdesc);
  l->pdesc[0] = (layer_param_desc_t){"weight", 4, {O, C, kh, kw}};
  if (l->bias)
    l->pdesc[1] = (layer_param_desc_t){"bias", 1, {O, 0, 0, 0}};
  l->aux_per_sample = 0;
  l->scratch = conv_workspace_floats(&cs);
  /* 2*C*kh*kw multiply-adds per output, plus one add per output for the bias */
  l->flops_per_sample = (double)O * cs.OH * cs.OW * (2.0 * C * kh * kw + (l->bias ? 1 : 0));
  return 0;
}

static void conv2d_init(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme) {
  conv_shape_t s = conv_shape_of(l);
  int ckk = s.C * s.KH * s.KW;
  layer_init_weight_bias(w[0], (size_t)s.O * ckk, l->bias ? w[1] : NULL, l->bias ? (size_t)s.O : 0, ckk, rng,
                         scheme);
}

static void conv2d_forward(const layer_t *l, const layer_ctx_t *c) {
  conv_shape_t s = conv_shape_of(l);
  // y (B,O,OH,OW) = conv(x (B,C,H,W), W) + b, or relu of that when the model fused the ReLU after it
  c->be->conv_fwd(&s, c->B, c->x[0], c->w[0], l->bias ? c->w[1] : NULL, c->fuse_relu, c->y, c->scratch,
                  l->scratch);
}

static void conv2d_backward(const layer_t *l, const layer_ctx_t *c) {
  conv_shape_t s = conv_shape_of(l);
  // dx (B,C,H,W) (= when dx_write), dW (O,C,kh,kw), db (O) += gradients of dy (B,O,OH,OW); fused,
  // dy is the ReLU output's gradient and y that output, and conv_bwd runs the ReLU's backward on the way
  c->be->conv_bwd(&s, c->B, c->x[0], c->w[0], c->dy, c->fuse_relu ? c->y : NULL, c->dx[0], c->dx_write[0],
                  c->dw[0], l->bias ? c->dw[1] : NULL, c->scratch, l->scratch);
}

const layer_ops_t layer_conv2d_ops = {"conv2d", conv2d_infer, conv2d_init, conv2d_forward, conv2d_backward,
                                      1, NULL, NULL, 0, 0, 0, 0};
