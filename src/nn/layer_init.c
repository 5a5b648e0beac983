/* Parameter initialisation shared by the layers with weights. */
#include <math.h>

#include "nn/layer.h"

void layer_init_weight_bias(float *w, size_t n_w, float *b, size_t n_b, int fan_in, rng_t *rng,
                            init_scheme_t scheme) {
  if (scheme == INIT_NORMAL_002) {
    rng_fill_normal(rng, w, n_w, 0.0f, 0.02f);
    for (size_t i = 0; i < n_b; i++) b[i] = 0.0f;
    return;
  }
  /* PyTorch's kaiming_uniform_(a=sqrt(5)) gives bound sqrt(6/((1+a^2) fan_in)) = 1/sqrt(fan_in);
   * its bias init uses the same bound. */
  float bound = 1.0f / sqrtf((float)fan_in);
  rng_fill_uniform(rng, w, n_w, -bound, bound);
  if (b) rng_fill_uniform(rng, b, n_b, -bound, bound);
}
