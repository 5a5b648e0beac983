/* "cpu" backend optimizer steps over a flat slab of parameters, in float. */
#include <math.h>

#include "backend/cpu_ops.h"

/* One pass of momentum SGD; `first` is a constant at each call site, so each gets its own loop. */
static inline void cpu_sgd_momentum(size_t n, float *restrict p, const float *restrict g,
                                    float *restrict buf, float lr, float mom, int nesterov, float wd,
                                    const int first) {
  // step = nesterov ? g' + mom*buf : buf, as step = a_g g' + a_buf buf without a branch
  const float a_g = nesterov ? 1.0f : 0.0f, a_buf = nesterov ? mom : 1.0f;
  for (size_t i = 0; i < n; i++) {
    const float gi = g[i] + wd * p[i];
    const float b = first ? gi : mom * buf[i] + gi; /* buf = g' on the first step */
    buf[i] = b;
    p[i] -= lr * (a_g * gi + a_buf * b);
  }
}

CPU_CLONES void cpu_sgd_step(size_t n, float *restrict p, const float *restrict g, float *restrict buf,
                  float lr, float mom, int nesterov, float wd, int first) {
  if (mom == 0.0f)
    for (size_t i = 0; i < n; i++) p[i] -= lr * (g[i] + wd * p[i]);
  else if (first)
    cpu_sgd_momentum(n, p, g, buf, lr, mom, nesterov, wd, 1);
  else
    cpu_sgd_momentum(n, p, g, buf, lr, mom, nesterov, wd, 0);
}

CPU_CLONES void cpu_adamw_step(size_t n, float *restrict p, const float *restrict g, float *restrict m,
                    float *restrict v, float lr, float b1, float b2, float eps, float wd, float bc1,
                    float bc2) {
  const float decay = 1.0f - lr * wd, step = lr / bc1, inv_bc2 = 1.0f / bc2;
  for (size_t i = 0; i < n; i++) {
    float mi = b1 * m[i] + (1.0f - b1) * g[i];
    float vi = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step * mi / (sqrtf(vi * inv_bc2) + eps);
  }
}
