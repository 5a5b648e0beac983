/* Residual join: y = a + b for two inputs of one shape; the gradient flows to both unchanged (or,
 * with the ReLU after it fused, y = relu(a + b) and the gradient passes where y > 0). */
#include "core/error.h"
#include "nn/layer.h"
#include "nn/layer_common.h"

static int shapes_equal(shape_t a, shape_t b) {
  if (a.ndim != b.ndim)
    return 0;
  for (int i = 0; i < a.ndim; i++)
    if (a.d[i] != b.d[i])
      return 0;
  return 1;
}

static int add_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "add", 2, err, n))
    return -1;
  if (!shapes_equal(l->in_shape[0], l->in_shape[1])) {
    char a[64], b[64];
    snprintf(err, n, "add: input shapes %s and %s differ", shape_str(l->in_shape[0], a, sizeof a),
             shape_str(l->in_shape[1], b, sizeof b));
    return -1;
  }
  l->out = l->in_shape[0];
  layer_set_no_params(l, 0, (double)shape_size(l->out));
  return 0;
}

static void add_forward(const layer_t *l, const layer_ctx_t *c) {
  const size_t count = (size_t)c->B * shape_size(l->out);
  if (c->fuse_relu) { /* y = relu(a + b): the ReLU after the join, fused */
    c->be->add_relu_fwd(count, c->x[0], c->x[1], c->y);
  } else if (c->epi) { /* and the layer norm it feeds: (B, rows, C) into its output and stats */
    const int C = c->epi->pdesc[0].d[0], rows = (int)(shape_size(l->out) / (size_t)C);
    c->be->add_layernorm_fwd(c->B, rows, C, c->x[0], c->x[1], c->epi_w[0], c->epi_w[1], c->epi->eps, c->y, c->epi_y,
                             c->epi_aux);
  } else {
    c->be->add(count, c->x[0], c->x[1], c->y);
  }
}

static void add_backward(const layer_t *l, const layer_ctx_t *c) {
  const size_t count = (size_t)c->B * shape_size(l->out);
  if (c->fuse_relu) { /* dy is the ReLU output's gradient: it passes where y > 0 */
    c->be->add_relu_bwd(count, c->y, c->dy, c->dx[0], c->dx[1], c->dx_write[0], c->dx_write[1]);
    return;
  }
  for (int k = 0; k < 2; k++) {
    if (c->dx[k] == c->dy) { /* the input's gradient takes this one's buffer (nn/grad_alias.h): it is dy already */
      if (!c->dx_write[k]) surge_runtime_error("add: an input's gradient in the add's own buffer is added into");
      continue;
    }
    layer_pass_grad(c, k, count);
  }
}

/* writes an input's gradient whole where asked (dx_write); its backward reads only dy (and, fused with its ReLU, its
 * own output) */
const layer_ops_t layer_add_ops = {"add", add_infer, layer_init_none, add_forward, add_backward, 1, NULL, NULL,
                                   .inputs_unread = 1};
