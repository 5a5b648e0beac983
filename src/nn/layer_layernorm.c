/* Layer normalisation over the last dim C of any input (PyTorch nn.LayerNorm(C)): every row of C
 * values is normalised with its mean and biased variance, y = (x - mean) * rstd * weight + bias with
 * rstd = 1/sqrt(var + eps). Parameters weight (C), init 1, and bias (C), init 0, under every scheme.
 * Each sample's aux holds its rows' mean then rstd: (2, rows_per_sample), so backward can run on any
 * sample range that forward covered. */
#include <string.h>

#include "nn/layer.h"
#include "nn/layer_common.h"

#define LAYERNORM_DEFAULT_EPS 1e-5f

static int layernorm_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "layernorm", 1, err, n)) return -1;
  shape_t in = l->in_shape[0];
  if (in.ndim < 1 || in.d[in.ndim - 1] < 1) {
    char buf[64];
    snprintf(err, n, "layernorm: input needs a positive last dim, got %s", shape_str(in, buf, sizeof buf));
    return -1;
  }
  if (l->eps < 0.0f) {
    snprintf(err, n, "layernorm: eps must not be negative, got %g", (double)l->eps);
    return -1;
  }
  if (l->eps == 0.0f) l->eps = LAYERNORM_DEFAULT_EPS; /* unset in the prototype */
  int C = in.d[in.ndim - 1];
  size_t rows = shape_size(in) / (size_t)C;
  l->out = in;
  l->np = 2;
  memset(l->pdesc, 0, sizeof l->pdesc);
  l->pdesc[0] = (layer_param_desc_t){"weight", 1, {C, 0, 0, 0}};
  l->pdesc[1] = (layer_param_desc_t){"bias", 1, {C, 0, 0, 0}};
  l->aux_per_sample = 2 * rows;
  l->scratch = shape_size(in); /* a throw-away dx for one sample when the input needs no gradient */
  /* per element: mean, variance (sub, square, add), normalise and affine (sub, 2 mul, add) */
  l->flops_per_sample = 8.0 * (double)shape_size(in);
  return 0;
}

static void layernorm_init(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme) {
  (void)rng, (void)scheme;
  int C = l->pdesc[0].d[0];
  for (int i = 0; i < C; i++) {
    w[0][i] = 1.0f;
    w[1][i] = 0.0f;
  }
}

/* The geometry of one sample: rows of C values. */
typedef struct ln_dims {
  int rows, C;
  size_t size; /* rows * C */
} ln_dims_t;

static ln_dims_t ln_dims(const layer_t *l) {
  ln_dims_t d;
  d.C = l->pdesc[0].d[0];
  d.size = shape_size(l->in_shape[0]);
  d.rows = (int)(d.size / (size_t)d.C);
  return d;
}

static void layernorm_forward(const layer_t *l, const layer_ctx_t *c) {
  ln_dims_t d = ln_dims(l);
  // x, y (B, rows, C); aux (B, 2, rows): each sample's row means then row rstd
  c->be->layernorm_fwd(c->B, d.rows, d.C, c->x[0], c->w[0], c->w[1], l->eps, c->y, c->aux);
}

static void layernorm_backward(const layer_t *l, const layer_ctx_t *c) {
  ln_dims_t d = ln_dims(l);
  if (c->dx[0]) {
    c->be->layernorm_bwd(c->B, d.rows, d.C, c->x[0], c->w[0], c->aux, c->dy, c->dx[0], c->dx_write[0], c->dw[0],
                         c->dw[1]);
    return;
  }
  // no input gradient wanted: each sample's dx is written to the throw-away scratch (one sample's size)
  for (int b = 0; b < c->B; b++)
    c->be->layernorm_bwd(1, d.rows, d.C, c->x[0] + (size_t)b * d.size, c->w[0], c->aux + (size_t)b * l->aux_per_sample,
                         c->dy + (size_t)b * d.size, c->scratch, 1, c->dw[0], c->dw[1]);
}

/* writes its input's gradient whole where asked (dx_write) */
const layer_ops_t layer_layernorm_ops = {"layernorm", layernorm_infer, layernorm_init, layernorm_forward,
                                         layernorm_backward, 1, NULL, NULL, .output_unread = 1};
