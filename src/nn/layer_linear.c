/* Linear layer over the last dim: x (..., in) -> y (..., out) = x W^T + b, W (out, in), b (out).
 * All leading dims of all samples are folded into rows, so one GEMM serves flat features (N) and
 * sequences (T,C) alike. */
#include <string.h>

#include "nn/layer.h"
#include "nn/layer_common.h"

static int linear_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "linear", 1, err, n))
    return -1;
  if (layer_check_at_least("linear", "out_features", l->out_features, 1, err, n))
    return -1;
  shape_t in = l->in_shape[0];
  if (in.ndim < 1 || in.d[in.ndim - 1] < 1) {
    char buf[64];
    snprintf(err, n, "linear: input needs a positive last dim, got %s",
             shape_str(in, buf, sizeof buf));
    return -1;
  }
  int in_f = in.d[in.ndim - 1], out_f = l->out_features;
  l->out = in;
  l->out.d[in.ndim - 1] = out_f;
  l->np = l->bias ? 2 : 1;
  memset(l->pdesc, 0, sizeof l->pdesc);
  l->pdesc[0] = (layer_param_desc_t){"weight", 2, {out_f, in_f, 0, 0}};
  if (l->bias)
    l->pdesc[1] = (layer_param_desc_t){"bias", 1, {out_f, 0, 0, 0}};
  l->aux_per_sample = 0;
  l->scratch = linear_workspace_floats(out_f, in_f); /* the backend's linear_fwd: one size for any batch */
  /* per row: 2*in*out for the product, plus one add per output for the bias */
  double rows = (double)(shape_size(in) / (size_t)in_f);
  l->flops_per_sample = rows * (2.0 * in_f * out_f + (l->bias ? out_f : 0));
  return 0;
}

static void linear_init(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme) {
  int out_f = l->pdesc[0].d[0], in_f = l->pdesc[0].d[1];
  layer_init_weight_bias(w[0], (size_t)out_f * in_f, l->bias ? w[1] : NULL,
                         l->bias ? (size_t)out_f : 0, in_f, rng, scheme);
}

/* Rows of the folded (rows, in) input matrix for a call on B samples. */
static int linear_rows(const layer_t *l, int B) {
  shape_t in = l->in_shape[0];
  return (int)((size_t)B * (shape_size(in) / (size_t)in.d[in.ndim - 1]));
}

static void linear_forward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  int rows = linear_rows(l, c->B), out_f = l->pdesc[0].d[0], in_f = l->pdesc[0].d[1];
  const float *b = l->bias ? c->w[1] : NULL;
  // y (rows,out) = x (rows,in) W^T + b, W (out,in); with the GELU after it (c->epi): its output too; W's
  // bfloat16 copy (c->w16[0]) where the model keeps one
  if (c->epi)
    be->linear_gelu_fwd(rows, out_f, in_f, c->x[0], c->w[0], c->w16[0], b, c->y, c->epi_y, c->scratch, l->scratch);
  else
    be->linear_fwd(rows, out_f, in_f, c->x[0], c->w[0], c->w16[0], b, c->y, c->scratch, l->scratch);
}

static void linear_backward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  int rows = linear_rows(l, c->B), out_f = l->pdesc[0].d[0], in_f = l->pdesc[0].d[1];
  float *db = l->bias ? c->dw[1] : NULL;
  const float *dy = c->dy;
  if (c->epi) { // with its GELU: dy is the GELU output's; this output's (rows,out) = dy gelu'(y), db += its sums
    be->gelu_bias_bwd(rows, out_f, c->y, c->dy, c->epi_grad, db);
    dy = c->epi_grad;
  } else if (db) { // db (out) += column sums of dy (rows,out)
    be->bias_grad_rows(rows, out_f, dy, db);
  }
  // dW (out,in) += dy^T (out,rows) x (rows,in), summed over rows without growing error
  if (c->dw[0])
    be->gemm_tn_rows(out_f, in_f, rows, dy, out_f, c->x[0], in_f, c->dw[0], in_f);
  // dx (rows,in) += (dx_write: =) dy (rows,out) W (out,in)
  if (c->dx[0])
    be->gemm(0, 0, rows, in_f, out_f, 1.0f, dy, out_f, c->w[0], in_f, layer_dx_beta(c, 0), c->dx[0], in_f);
}

/* writes its input's gradient whole where asked (dx_write: a GEMM with beta 0); its backward reads its own output
 * only where it runs its GELU (gelu_bias_bwd's pre-activation), and a node that runs another's forward is never
 * held in bfloat16 (act16.h) */
const layer_ops_t layer_linear_ops = {"linear", linear_infer, linear_init, linear_forward,
                                      linear_backward, 1, NULL, NULL, .rounds_input = 1,
                                      .output_unread = 1};
