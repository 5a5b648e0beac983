/* Gradient norm and clipping by the global norm over the whole gradient slab. */
#include "optim/optim.h"

#include <math.h>

#include "backend/step_rules.h"

double grad_global_norm(const backend_t *be, const float *grads, size_t n) {
  return sqrt(be->sumsq(grads, n));
}

float clip_scale(double norm, double max_norm) { return clip_rule(norm, max_norm); }

void clip_to_norm(const backend_t *be, float *grads, size_t n, double norm, double max_norm) {
  const float s = clip_scale(norm, max_norm);
  if (s != 1.0f) be->scale(grads, n, s);
}

double clip_by_global_norm(const backend_t *be, float *grads, size_t n, double max_norm) {
  double norm = grad_global_norm(be, grads, n);
  clip_to_norm(be, grads, n, norm, max_norm);
  return norm;
}
