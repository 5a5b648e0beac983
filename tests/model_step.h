/* One training step's arithmetic on a fixed batch, for tests that build a model and compare what a
 * step computes: B samples drawn from the stream (seed, 0, 0) (images: N(0, 1) pixels; token
 * sequences: ids below `classes`), targets i mod classes, then forward, the loss as a mean over the
 * targets, and backward into the model's zeroed gradients. Returns the loss summed over the targets
 * (divide by B * targets_per_sample for the mean). */
#ifndef SURGE_TEST_MODEL_STEP_H
#define SURGE_TEST_MODEL_STEP_H

#include <stdlib.h>

#include "core/error.h"
#include "core/rng.h"
#include "nn/model.h"

static inline double test_model_step(model_t *m, int B, int classes, uint64_t seed) {
  const graph_t *g = m->g;
  size_t xs = shape_size(g->l[0].out), ys = (size_t)B * (size_t)g->targets_per_sample;
  float *x = xcalloc((size_t)B * xs, sizeof *x), *y = xcalloc(ys, sizeof *y);
  rng_t r;
  rng_seed_stream(&r, seed, 0, 0);
  if (g->targets_per_sample > 1) /* token sequences: ids below the vocabulary, the next ones as targets */
    for (size_t i = 0; i < (size_t)B * xs; i++) x[i] = (float)rng_below(&r, (uint64_t)classes);
  else
    rng_fill_normal(&r, x, (size_t)B * xs, 0.0f, 1.0f);
  for (size_t i = 0; i < ys; i++) y[i] = (float)(i % (size_t)classes);
  model_set_batch(m, x, y, B);
  model_zero_grads(m);
  model_forward(m, B);
  double loss = model_loss(m, 0, B, 1.0f / (float)ys);
  model_backward(m, B);
  free(x);
  free(y);
  return loss;
}

#endif
