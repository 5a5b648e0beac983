/* Pooling over the planes of an image: max pool (C,H,W) -> (C,OH,OW) with kernel k, stride s and
 * padding pad <= k/2 (PyTorch's bound: every window holds an element of the plane, the padding is
 * never chosen), OH = (H + 2 pad - k)/s + 1, saving the argmax of each output for backward; the
 * windowed average pool of the same geometry, its zero padding counted in the divisor k*k
 * (count_include_pad, torchvision's default: Inception-v3's branch pools); and global average
 * pool (C,H,W) -> (C). */
#include "nn/layer.h"
#include "nn/layer_common.h"

/* infer of a k x k pool with stride and padding: aux_per_output floats saved per output for
 * backward, k*k operations (comparisons or adds) per output */
static int window_pool_infer(layer_t *l, const char *kind, size_t aux_per_output, char *err, size_t n) {
  if (layer_check_nin(l, kind, 1, err, n) || layer_check_image(l, kind, err, n) ||
      layer_check_at_least(kind, "kernel", l->kernel, 1, err, n) ||
      layer_check_at_least(kind, "stride", l->stride, 1, err, n) ||
      layer_check_at_least(kind, "pad", l->pad, 0, err, n))
    return -1;
  int C = l->in_shape[0].d[0], H = l->in_shape[0].d[1], W = l->in_shape[0].d[2], k = l->kernel, p = l->pad;
  if (2 * p > k) {
    snprintf(err, n, "%s: pad %d more than half the kernel %d (a window would hold only padding)", kind, p, k);
    return -1;
  }
  if (k > H + 2 * p || k > W + 2 * p) {
    snprintf(err, n, "%s: kernel %d larger than padded input %dx%d (input %dx%d, pad %d)", kind, k, H + 2 * p,
             W + 2 * p, H, W, p);
    return -1;
  }
  l->out = shape3(C, (H + 2 * p - k) / l->stride + 1, (W + 2 * p - k) / l->stride + 1);
  size_t outs = shape_size(l->out);
  layer_set_no_params(l, outs * aux_per_output, (double)outs * k * k);
  return 0;
}

/* aux: one argmax per output */
static int maxpool2d_infer(layer_t *l, char *err, size_t n) { return window_pool_infer(l, "maxpool2d", 1, err, n); }

static void maxpool2d_forward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  // x (B*C planes, H, W) -> y (B*C, OH, OW), aux = argmax (B*C, OH, OW)
  c->be->maxpool_fwd(c->B * in.d[0], in.d[1], in.d[2], l->kernel, l->stride, l->pad, c->x[0], c->y, c->aux);
}

static void maxpool2d_backward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  if (c->dx[0])
    c->be->maxpool_bwd(c->B * in.d[0], in.d[1], in.d[2], l->kernel, l->stride, l->pad, c->dy, c->aux, c->dx[0],
                       c->dx_write[0]);
}

/* nothing saved: backward needs only the geometry */
static int avgpool2d_infer(layer_t *l, char *err, size_t n) { return window_pool_infer(l, "avgpool2d", 0, err, n); }

static void avgpool2d_forward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  // x (B*C planes, H, W) -> y (B*C, OH, OW)
  c->be->avgpool2d_fwd(c->B * in.d[0], in.d[1], in.d[2], l->kernel, l->stride, l->pad, c->x[0], c->y);
}

static void avgpool2d_backward(const layer_t *l, const layer_ctx_t *c) {
  const shape_t in = l->in_shape[0];
  if (c->dx[0])
    c->be->avgpool2d_bwd(c->B * in.d[0], in.d[1], in.d[2], l->kernel, l->stride, l->pad, c->dy, c->dx[0],
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

/* all three write their input gradient whole where asked (dx_write) */
const layer_ops_t layer_maxpool2d_ops = {"maxpool2d", maxpool2d_infer, layer_init_none,
                                         maxpool2d_forward, maxpool2d_backward, 1, NULL, NULL, 0, 0, 0, 0};
const layer_ops_t layer_avgpool_ops = {"avgpool", avgpool_infer, layer_init_none, avgpool_forward,
                                       avgpool_backward, 1, NULL, NULL, 0, 0, 0, 0};
const layer_ops_t layer_avgpool2d_ops = {"avgpool2d", avgpool2d_infer, layer_init_none, avgpool2d_forward,
                                         avgpool2d_backward, 1, NULL, NULL, 0, 0, 0, 0};
