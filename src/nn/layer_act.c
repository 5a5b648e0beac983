/* Elementwise activations, shape-preserving: ReLU and GELU (tanh approximation). Backward reads the
 * forward input from ctx.x, so nothing is saved in aux. */
#include "nn/layer.h"
#include "nn/layer_common.h"

/* FLOPs per element counted for forward: ReLU is one compare; the tanh GELU is about ten
 * (cube, two scalings, add, tanh, add one, two multiplies), counting tanh as one. */
#define RELU_FLOPS_PER_ELEMENT 1.0
#define GELU_FLOPS_PER_ELEMENT 10.0

static int act_infer(layer_t *l, const char *kind, double flops_per_element, char *err, size_t n) {
  if (layer_check_nin(l, kind, 1, err, n))
    return -1;
  l->out = l->in_shape[0];
  layer_set_no_params(l, 0, flops_per_element * (double)shape_size(l->out));
  return 0;
}

static size_t act_count(const layer_t *l, const layer_ctx_t *c) {
  return (size_t)c->B * shape_size(l->out);
}

static int relu_infer(layer_t *l, char *err, size_t n) {
  return act_infer(l, "relu", RELU_FLOPS_PER_ELEMENT, err, n);
}
static void relu_forward(const layer_t *l, const layer_ctx_t *c) {
  c->be->relu_fwd(act_count(l, c), c->x[0], c->y);
}
static void relu_backward(const layer_t *l, const layer_ctx_t *c) {
  if (c->dx[0])
    c->be->relu_bwd(act_count(l, c), c->x[0], c->dy, c->dx[0], c->dx_write[0]);
}

static int gelu_infer(layer_t *l, char *err, size_t n) {
  return act_infer(l, "gelu", GELU_FLOPS_PER_ELEMENT, err, n);
}
static void gelu_forward(const layer_t *l, const layer_ctx_t *c) {
  c->be->gelu_fwd(act_count(l, c), c->x[0], c->y);
}
static void gelu_backward(const layer_t *l, const layer_ctx_t *c) {
  if (c->dx[0])
    c->be->gelu_bwd(act_count(l, c), c->x[0], c->dy, c->dx[0], c->dx_write[0]);
}

/* both write their input gradient whole where asked (dx_write) */
const layer_ops_t layer_relu_ops = {"relu", relu_infer, layer_init_none, relu_forward,
                                    relu_backward, 1, NULL, NULL, 0, 0, 0, 0};
/* reads its input rounded to bfloat16 in bf16, both ways (backend.h's gelu_fwd): rounds_input, as a product */
const layer_ops_t layer_gelu_ops = {"gelu", gelu_infer, layer_init_none, gelu_forward,
                                    gelu_backward, 1, NULL, NULL, .rounds_input = 1, .output_unread = 1};
