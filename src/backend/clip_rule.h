/* The clipping factor of PyTorch's clip_grad_norm_, written once for the host (optim/clip.c) and
 * for the backends' clip_factor ops, a GPU's kernel among them (nvcc: __host__ __device__), so a
 * factor computed on a device has the bits of the host's. */
#ifndef SURGE_BACKEND_CLIP_RULE_H
#define SURGE_BACKEND_CLIP_RULE_H

#include <math.h>

#ifdef __CUDACC__
#define CLIP_RULE_FN static inline __host__ __device__
#else
#define CLIP_RULE_FN static inline
#endif

/* clip_grad_norm_ divides by norm + 1e-6 so a tiny norm never blows up the scale. */
#define CLIP_NORM_EPS 1e-6

/* The factor that scales gradients of global norm `norm` to max_norm: below or at it, and for a
 * norm that is not finite (the step then fails its check) or max_norm <= 0 (no clipping), 1. */
CLIP_RULE_FN float clip_rule(double norm, double max_norm) {
  return max_norm > 0.0 && isfinite(norm) && norm > max_norm ? (float)(max_norm / (norm + CLIP_NORM_EPS)) : 1.0f;
}

/* The same from the squared norm, as the trainer keeps it (sumsq_add): the norm is its double sqrt. */
CLIP_RULE_FN float clip_rule_sumsq(double sumsq, double max_norm) { return clip_rule(sqrt(sumsq), max_norm); }

#endif
