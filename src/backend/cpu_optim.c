/* "cpu" backend optimizer steps over a flat slab of parameters, in float. */
#include <math.h>

#include "backend/step_rules.h"
#include "backend/cpu_ops.h"

/* The gradient as the step reads it: g, or gs g where the clipping factor is folded in (scaled, a
 * constant where this is inlined, so an unclipped step computes exactly what it did before). */
static inline __attribute__((always_inline)) float cpu_grad(const float *restrict g, size_t i, float gs,
                                                            const int scaled) {
  return scaled ? g[i] * gs : g[i];
}

/* One pass of momentum SGD; `first` and `scaled` are constants at each call site, so each gets its
 * own loop. */
static inline __attribute__((always_inline)) void cpu_sgd_momentum(size_t n, float *restrict p,
                                                                   const float *restrict g, float *restrict buf,
                                                                   float lr, float mom, int nesterov, float wd,
                                                                   const int first, float gs, const int scaled) {
  // step = nesterov ? g' + mom*buf : buf, as step = a_g g' + a_buf buf without a branch
  const float a_g = nesterov ? 1.0f : 0.0f, a_buf = nesterov ? mom : 1.0f;
  for (size_t i = 0; i < n; i++) {
    const float gi = cpu_grad(g, i, gs, scaled) + wd * p[i];
    const float b = first ? gi : mom * buf[i] + gi; /* buf = g' on the first step */
    buf[i] = b;
    p[i] -= lr * (a_g * gi + a_buf * b);
  }
}

static inline __attribute__((always_inline)) void cpu_sgd(size_t n, float *restrict p, const float *restrict g,
                                                          float *restrict buf, float lr, float mom, int nesterov,
                                                          float wd, int first, float gs, const int scaled) {
  if (mom == 0.0f)
    for (size_t i = 0; i < n; i++) p[i] -= lr * (cpu_grad(g, i, gs, scaled) + wd * p[i]);
  else if (first)
    cpu_sgd_momentum(n, p, g, buf, lr, mom, nesterov, wd, 1, gs, scaled);
  else
    cpu_sgd_momentum(n, p, g, buf, lr, mom, nesterov, wd, 0, gs, scaled);
}

CPU_CLONES void cpu_sgd_step(size_t n, float *restrict p, const float *restrict g, float *restrict buf,
                  float lr, float mom, int nesterov, float wd, int first, const float *gsp) {
  const float gs = gsp ? *gsp : 1.0f;
  if (gs == 1.0f) cpu_sgd(n, p, g, buf, lr, mom, nesterov, wd, first, gs, 0);
  else cpu_sgd(n, p, g, buf, lr, mom, nesterov, wd, first, gs, 1);
}

static inline __attribute__((always_inline)) void cpu_adamw(size_t n, float *restrict p, const float *restrict g,
                                                            float *restrict m, float *restrict v, adamw_coefs_t c,
                                                            float gs, const int scaled) {
  const float decay = 1.0f - c.lr * c.wd, step = c.lr / c.bc1, inv_bc2 = 1.0f / c.bc2;
  const float b1 = c.b1, b2 = c.b2, eps = c.eps;
  for (size_t i = 0; i < n; i++) {
    const float gi = cpu_grad(g, i, gs, scaled);
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step * mi / (sqrtf(vi * inv_bc2) + eps);
  }
}

CPU_CLONES void cpu_adamw_step(size_t n, float *restrict p, const float *restrict g, float *restrict m,
                    float *restrict v, adamw_coefs_t c, const float *gsp) {
  const float gs = gsp ? *gsp : 1.0f;
  if (gs == 1.0f) cpu_adamw(n, p, g, m, v, c, gs, 0);
  else cpu_adamw(n, p, g, m, v, c, gs, 1);
}

void cpu_clip_factor(const double *sumsq, double max_norm, float *gs) { *gs = clip_rule_sumsq(*sumsq, max_norm); }
