/* Pooling over the planes of an image: max pool (C,H,W) -> (C,OH,OW) with kernel k and stride s, no
 * padding, OH = (H - k)/s + 1, saving the argmax of each output for backward; and global average
 * pool (C,H,W) -> (C). */
#include "nn/layer.h"
#include "nn/layer_common.h"

static int maxpool2d_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "maxpool2d", 1, err, n) || layer_check_image(l, "maxpool2d", err, n) ||
      layer_check_at_least("maxpool2d", "kernel", l->kernel, 1, err, n) ||
      layer_check_at_least("maxpool2d", "stride", l->stride, 1, err, n))
    return -1;
  int C = l->in_shape[0].d[0], H = l->in_shape[0].d[1], W = l->in_shape[0].d[2], k = l->kernel;
  if (k > H || k > W) {
    snprintf(err, n, "maxpool2d: kernel %d larger than input %dx%d", k, H, W);
    return -1;
  }
  l->out = shape3(C, (H - k) / l->stride + 1, (W - k) / l->stride + 1);
  size_t outs = shape_size(l->out);
  /* aux: one argmax per output; k*k comparisons per output */
  layer_set_no_params(l, outs, (double)outs * k * k);
  return 0;
}

static void maxpool2d_forward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  // x (B*C planes, H, W) -> y (B*C, OH, OW), aux = argmax (B*C, OH, OW)
  c->be->maxpool_fwd(c->B * in.d[0], in.d[1], in.d[2], l->kernel, l->stride, c->x[0], c->y, c->aux);
}

static void maxpool2d_backward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  if (c->dx[0])
    c->be->maxpool_bwd(c->B * in.d[0], in.d[1], in.d[2], l->kernel, l->stride, c->dy, c->aux, c->dx[0],
                       c->dx_write[0]);
}

static int avgpool_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "avgpool", 1, err, n) || layer_check_image(l, "avgpool", err, n))
    return -1;
  l->out = shape1(l->in_shape[0].d[0]);
  layer_set_no_params(l, 0, (double)shape_size(l->in_shape[0]));
  return 0;
}

static void avgpool_forward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  // x (B*C planes, H*W) -> y (B*C)
  c->be->avgpool_fwd(c->B * in.d[0], in.d[1] * in.d[2], c->x[0], c->y);
}

static void avgpool_backward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  if (c->dx[0])
    c->be->avgpool_bwd(c->B * in.d[0], in.d[1] * in.d[2], c->dy, c->dx[0], c->dx_write[0]);
}

/* both write their input gradient whole where asked (dx_write) */
const layer_ops_t layer_maxpool2d_ops = {"maxpool2d", maxpool2d_infer, layer_init_none,
                                         maxpool2d_forward, maxpool2d_backward, 1};
const layer_ops_t layer_avgpool_ops = {"avgpool", avgpool_infer, layer_init_none, avgpool_forward,
                                       avgpool_backward, 1};
