/* Flatten: any per-sample shape, e.g. (C,H,W), -> (C*H*W) in the same row-major order, so the data
 * is unchanged: forward copies and backward accumulates, or copies where it writes its input
 * gradient whole (dx_write: it is that gradient's only consumer). */
#include "nn/layer.h"
#include "nn/layer_common.h"

static int flatten_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "flatten", 1, err, n))
    return -1;
  size_t size = shape_size(l->in_shape[0]);
  if (l->in_shape[0].ndim < 1 || size < 1 || size > (size_t)0x7fffffff) {
    char buf[64];
    snprintf(err, n, "flatten: input %s has no elements or too many",
             shape_str(l->in_shape[0], buf, sizeof buf));
    return -1;
  }
  l->out = shape1((int)size);
  layer_set_no_params(l, 0, 0.0); /* a copy, no arithmetic */
  return 0;
}

static void flatten_forward(const layer_t *l, const layer_ctx_t *c) {
  c->be->copy(c->y, c->x[0], (size_t)c->B * shape_size(l->out));
}

static void flatten_backward(const layer_t *l, const layer_ctx_t *c) {
  layer_pass_grad(c, 0, (size_t)c->B * shape_size(l->out));
}

const layer_ops_t layer_flatten_ops = {"flatten", flatten_infer, layer_init_none, flatten_forward,
                                       flatten_backward, 1, NULL, NULL, 0, 0, 0, 0};
