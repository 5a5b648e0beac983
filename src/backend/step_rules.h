/* The rules for a step's scalars, written once for the host and for the backends' ops, a GPU's
 * kernels among them (nvcc: __host__ __device__), so a value computed on a device has the bits of
 * the host's: PyTorch's clipping factor (optim/clip.c, the clip_factor ops) and the float pair a
 * double travels in through float buffers (the float_pair ops, the burst executor's side slots). */
#ifndef SURGE_BACKEND_STEP_RULES_H
#define SURGE_BACKEND_STEP_RULES_H

#include <math.h>

#ifdef __CUDACC__
#define STEP_RULE_FN static inline __host__ __device__
#else
#define STEP_RULE_FN static inline
#endif

/* clip_grad_norm_ divides by norm + 1e-6 so a tiny norm never blows up the scale. */
#define CLIP_NORM_EPS 1e-6

/* The factor that scales gradients of global norm `norm` to max_norm, PyTorch's min(1, max_norm /
 * (norm + 1e-6)): below 1 from a norm of max_norm - 1e-6 on (clipping only above max_norm left norms
 * in that window unscaled); for a norm that is not finite (the step then fails its check) or
 * max_norm <= 0 (no clipping), 1. */
STEP_RULE_FN float clip_rule(double norm, double max_norm) {
  const double coef = max_norm / (norm + CLIP_NORM_EPS);
  return max_norm > 0.0 && isfinite(norm) && coef < 1.0 ? (float)coef : 1.0f;
}

/* The same from the squared norm, as the trainer keeps it (sumsq_add): the norm is its double sqrt. */
STEP_RULE_FN float clip_rule_sumsq(double sumsq, double max_norm) { return clip_rule(sqrt(sumsq), max_norm); }

/* x as two floats whose (double) sum is x to about twice float precision: x rounded, then what
 * that rounding missed. */
STEP_RULE_FN void float_pair_rule(double x, float *pair) {
  pair[0] = (float)x;
  pair[1] = (float)(x - (double)pair[0]);
}

#endif
