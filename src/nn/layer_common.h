/* Helpers shared by the layer kinds. The checks used by infer write a one-line reason prefixed with
 * the layer kind and return -1 on failure, 0 otherwise. */
#ifndef SURGE_LAYER_COMMON_H
#define SURGE_LAYER_COMMON_H

#include <stdio.h>

#include "nn/layer.h"

/* The layer has exactly `want` inputs. */
static inline int layer_check_nin(const layer_t *l, const char *kind, int want, char *err,
                                  size_t n) {
  if (l->nin == want)
    return 0;
  snprintf(err, n, "%s: needs %d input%s, got %d", kind, want, want == 1 ? "" : "s", l->nin);
  return -1;
}

/* Input 0 is an image (C,H,W) with positive dims. */
static inline int layer_check_image(const layer_t *l, const char *kind, char *err, size_t n) {
  shape_t s = l->in_shape[0];
  if (s.ndim == 3 && s.d[0] > 0 && s.d[1] > 0 && s.d[2] > 0)
    return 0;
  char buf[64];
  snprintf(err, n, "%s: input must be an image (C,H,W), got %s", kind,
           shape_str(s, buf, sizeof buf));
  return -1;
}

/* A hyperparameter is at least `min` (1 for sizes, 0 for padding). */
static inline int layer_check_at_least(const char *kind, const char *what, int v, int min,
                                       char *err, size_t n) {
  if (v >= min)
    return 0;
  if (min == 1)
    snprintf(err, n, "%s: %s must be positive, got %d", kind, what, v);
  else
    snprintf(err, n, "%s: %s must be at least %d, got %d", kind, what, min, v);
  return -1;
}

/* init of a kind without parameters. */
static inline void layer_init_none(const layer_t *l, float *const *w, rng_t *rng,
                                   init_scheme_t scheme) {
  (void)l, (void)w, (void)rng, (void)scheme;
}

/* Backward of a layer that passes its output gradient on unchanged to input k (add, flatten): dx
 * = dy where the layer writes that gradient whole (dx_write), else dx += dy; n floats. */
static inline void layer_pass_grad(const layer_ctx_t *c, int k, size_t n) {
  if (c->dx[k] && c->dx_write[k])
    c->be->copy(c->dx[k], c->dy, n);
  else if (c->dx[k])
    c->be->axpy(n, 1.0f, c->dy, c->dx[k]);
}

/* The beta of a GEMM that produces input k's gradient: 0 where the layer writes it whole
 * (dx_write: its old contents are never read, so never zeroed), 1 where it adds into it. */
static inline float layer_dx_beta(const layer_ctx_t *c, int k) { return c->dx_write[k] ? 0.0f : 1.0f; }

/* infer's bookkeeping for a kind without parameters. */
static inline void layer_set_no_params(layer_t *l, size_t aux_per_sample, double flops_per_sample) {
  l->np = 0;
  l->aux_per_sample = aux_per_sample;
  l->scratch = 0;
  l->scratch_per_sample = 0;
  l->flops_per_sample = flops_per_sample;
}

#endif
