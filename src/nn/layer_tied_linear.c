/* Tied output projection (GPT-2's lm_head): logits = x wte^T, x (..., C) -> (..., V), where wte
 * (V,C) is the token table of an embedding node. The layer owns no parameters (np = 0): the engine
 * passes the shared tensor (slab index l->tied_param, set by nn_tied_linear) as w[0] and its
 * gradient as dw[0], so the embedding and the projection sum their gradients into one tensor.
 * The embedding initialises the shared weight. Hyperparameters vocab V and out_features = C are
 * copied from the embedding node. */
#include "nn/layer.h"
#include "nn/layer_common.h"

static int tied_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "tied_linear", 1, err, n)) return -1;
  if (layer_check_at_least("tied_linear", "vocab", l->vocab, 1, err, n)) return -1;
  if (layer_check_at_least("tied_linear", "channels", l->out_features, 1, err, n)) return -1;
  shape_t in = l->in_shape[0];
  if (in.ndim < 1 || in.d[in.ndim - 1] != l->out_features) {
    char buf[64];
    snprintf(err, n, "tied_linear: input %s must end in the embedding width %d",
             shape_str(in, buf, sizeof buf), l->out_features);
    return -1;
  }
  l->out = in;
  l->out.d[in.ndim - 1] = l->vocab;
  double rows = (double)(shape_size(in) / (size_t)l->out_features);
  layer_set_no_params(l, 0, rows * 2.0 * l->out_features * l->vocab);
  return 0;
}

/* Rows of the folded (rows, C) input for a call on B samples. */
static int tied_rows(const layer_t *l, int B) {
  return (int)((size_t)B * (shape_size(l->in_shape[0]) / (size_t)l->out_features));
}

static void tied_forward(const layer_t *l, const layer_ctx_t *c) {
  int rows = tied_rows(l, c->B), C = l->out_features, V = l->vocab;
  // y (rows,V) = x (rows,C) wte^T, wte (V,C): a linear forward without a bias where the model keeps wte's
  // bfloat16 copy (c->w16[0], for the backend to read instead: the same products)
  if (c->w16[0]) c->be->linear_fwd(rows, V, C, c->x[0], c->w[0], c->w16[0], NULL, c->y, NULL, 0);
  else c->be->gemm(0, 1, rows, V, C, 1.0f, c->x[0], C, c->w[0], C, 0.0f, c->y, V);
}

static void tied_backward(const layer_t *l, const layer_ctx_t *c) {
  int rows = tied_rows(l, c->B), C = l->out_features, V = l->vocab;
  // dwte (V,C) += dy^T (V,rows) x (rows,C)
  if (c->dw[0]) c->be->gemm_tn_rows(V, C, rows, c->dy, V, c->x[0], C, c->dw[0], C);
  // dx (rows,C) += (dx_write: =) dy (rows,V) wte (V,C)
  if (c->dx[0]) c->be->gemm(0, 0, rows, C, V, 1.0f, c->dy, V, c->w[0], C, layer_dx_beta(c, 0), c->dx[0], C);
}

/* writes its input's gradient whole where asked (dx_write: a GEMM with beta 0) */
const layer_ops_t layer_tied_linear_ops = {"tied_linear", tied_infer, layer_init_none, tied_forward,
                                           tied_backward, 1, NULL, NULL, .rounds_input = 1};
