#include "gradcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"

typedef struct gc_state {
  const layer_ops_t *ops;
  const layer_t *l;
  const backend_t *be;
  int B;
  float *x[LAYER_MAX_IN], *w[LAYER_MAX_PARAMS], *y, *aux, *scratch, *r;
  layer_ctx_t state; /* keep, buffers, training mode (gradcheck_state_alloc) */
  size_t nx[LAYER_MAX_IN], nw[LAYER_MAX_PARAMS], ny;
  int nparams;
} gc_state_t;

static double gc_loss(gc_state_t *s) {
  layer_ctx_t c;
  memset(&c, 0, sizeof c);
  c.be = s->be;
  c.B = s->B;
  for (int k = 0; k < s->l->nin; k++) c.x[k] = s->x[k];
  for (int k = 0; k < s->nparams; k++) c.w[k] = s->w[k];
  c.y = s->y;
  c.aux = s->aux;
  c.scratch = s->scratch;
  c.keep = s->state.keep;
  c.train = s->state.train;
  memcpy(c.st, s->state.st, sizeof c.st);
  s->ops->forward(s->l, &c);
  double L = 0;
  for (size_t i = 0; i < s->ny; i++) L += (double)s->y[i] * (double)s->r[i];
  return L;
}

/* Relative error of analytic gradient a (minus the pre-fill) against central differences of v. */
static double check_tensor(gc_state_t *s, float *v, size_t n, const float *a, float prefill, rng_t *rng) {
  const float eps = 1e-3f;
  size_t count = n <= 256 ? n : 256;
  double num2 = 0, diff2 = 0;
  for (size_t j = 0; j < count; j++) {
    size_t i = n <= 256 ? j : (size_t)rng_below(rng, n);
    float old = v[i];
    v[i] = old + eps;
    double lp = gc_loss(s);
    v[i] = old - eps;
    double lm = gc_loss(s);
    v[i] = old;
    double numeric = (lp - lm) / (2.0 * (double)eps);
    double analytic = (double)a[i] - (double)prefill;
    num2 += numeric * numeric;
    diff2 += (analytic - numeric) * (analytic - numeric);
  }
  return sqrt(diff2) / fmax(sqrt(num2), 1e-6);
}

static void fill_grid(float *x, size_t n, rng_t *rng) {
  double step = fmax(0.01, 3.0 / (double)n);
  uint32_t *perm = xmalloc(n * sizeof *perm);
  rng_permutation(rng, perm, (uint32_t)n);
  for (size_t i = 0; i < n; i++) x[i] = (float)(((double)perm[i] + 0.5) * step - (double)n * step / 2.0);
  free(perm);
}

layer_t gradcheck_proto(layer_kind_t kind, shape_t in) {
  layer_t l;
  memset(&l, 0, sizeof l);
  l.kind = kind;
  l.nin = 1;
  l.in_shape[0] = in;
  snprintf(l.name, sizeof l.name, "%s", layer_kind_name(kind));
  return l;
}

/* Keep the worst tensor's error and name ("x0", "w1"). */
static void note_error(gradcheck_result_t *res, double e, char what, int k) {
  res->tensors_checked++;
  if (e >= res->max_rel_err) {
    res->max_rel_err = e;
    snprintf(res->worst, sizeof res->worst, "%c%d", what, k);
  }
}

gradcheck_result_t gradcheck_layer(const layer_ops_t *ops, layer_t l, int B, const backend_t *be,
                                   uint64_t seed) {
  gradcheck_result_t res;
  memset(&res, 0, sizeof res);
  char err[200];
  if (ops->infer(&l, err, sizeof err) != 0) surge_runtime_error("gradcheck: infer failed: %s", err);
  rng_t rng;
  rng_seed(&rng, seed);
  gc_state_t s;
  memset(&s, 0, sizeof s);
  s.ops = ops;
  s.l = &l;
  s.be = be;
  s.B = B;
  int tokens = l.kind == LAYER_EMBED;
  for (int k = 0; k < l.nin; k++) {
    s.nx[k] = (size_t)B * shape_size(l.in_shape[k]);
    s.x[k] = be->alloc(s.nx[k]);
    if (tokens)
      for (size_t i = 0; i < s.nx[k]; i++) s.x[k][i] = (float)rng_below(&rng, (uint64_t)l.vocab);
    else
      fill_grid(s.x[k], s.nx[k], &rng);
  }
  if (l.kind == LAYER_TIED_LINEAR) {
    s.nparams = 1;
    s.nw[0] = (size_t)l.vocab * (size_t)l.out_features;
  } else {
    s.nparams = l.np;
    for (int k = 0; k < l.np; k++) {
      s.nw[k] = 1;
      for (int d = 0; d < l.pdesc[k].ndim; d++) s.nw[k] *= (size_t)l.pdesc[k].d[d];
    }
  }
  for (int k = 0; k < s.nparams; k++) {
    s.w[k] = be->alloc(s.nw[k]);
    rng_fill_normal(&rng, s.w[k], s.nw[k], 0.0f, 0.5f);
  }
  s.ny = (size_t)B * shape_size(l.out);
  s.y = be->alloc(s.ny);
  s.r = be->alloc(s.ny);
  rng_fill_normal(&rng, s.r, s.ny, 0.0f, 1.0f);
  s.aux = be->alloc((size_t)B * l.aux_per_sample + 1);
  s.scratch = be->alloc(layer_scratch_floats(&l, B) + 1);
  gradcheck_state_alloc(&l, be, &s.state);

  /* analytic gradients, pre-filled to check accumulation */
  const float prefill = 0.25f;
  float *dx[LAYER_MAX_IN] = {0}, *dw[LAYER_MAX_PARAMS] = {0};
  layer_ctx_t c;
  memset(&c, 0, sizeof c);
  c.be = be;
  c.B = B;
  for (int k = 0; k < l.nin; k++) {
    c.x[k] = s.x[k];
    if (!tokens) {
      dx[k] = be->alloc(s.nx[k]);
      be->fill(dx[k], s.nx[k], prefill);
      c.dx[k] = dx[k];
    }
  }
  for (int k = 0; k < s.nparams; k++) {
    c.w[k] = s.w[k];
    dw[k] = be->alloc(s.nw[k]);
    be->fill(dw[k], s.nw[k], prefill);
    c.dw[k] = dw[k];
  }
  c.y = s.y;
  c.aux = s.aux;
  c.scratch = s.scratch;
  c.keep = s.state.keep;
  c.train = s.state.train;
  memcpy(c.st, s.state.st, sizeof c.st);
  c.dy = s.r;
  ops->forward(&l, &c);
  ops->backward(&l, &c);

  for (int k = 0; k < l.nin; k++)
    if (dx[k]) note_error(&res, check_tensor(&s, s.x[k], s.nx[k], dx[k], prefill, &rng), 'x', k);
  for (int k = 0; k < s.nparams; k++)
    note_error(&res, check_tensor(&s, s.w[k], s.nw[k], dw[k], prefill, &rng), 'w', k);
  for (int k = 0; k < l.nin; k++) {
    be->free(s.x[k]);
    if (dx[k]) be->free(dx[k]);
  }
  for (int k = 0; k < s.nparams; k++) {
    be->free(s.w[k]);
    be->free(dw[k]);
  }
  be->free(s.y);
  be->free(s.r);
  be->free(s.aux);
  be->free(s.scratch);
  gradcheck_state_free(&l, be, &s.state);
  return res;
}

void gradcheck_state_alloc(const layer_t *l, const backend_t *be, layer_ctx_t *c) {
  c->train = 1;
  c->keep = be->alloc(l->keep + 1);
  for (int k = 0; k < l->nb; k++) {
    size_t n = 1;
    for (int d = 0; d < l->bdesc[k].ndim; d++) n *= (size_t)l->bdesc[k].d[d];
    float *host = xmalloc(n * sizeof *host);
    for (size_t i = 0; i < n; i++) host[i] = l->bfill[k];
    c->st[k] = be->alloc(n);
    be->upload(c->st[k], host, n);
    free(host);
  }
}

void gradcheck_state_free(const layer_t *l, const backend_t *be, layer_ctx_t *c) {
  be->free(c->keep);
  for (int k = 0; k < l->nb; k++) be->free(c->st[k]);
}
