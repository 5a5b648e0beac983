/* One training run on this rank: data, model, optimizer and the step loop. The batch of a step is
 * the global batch's sample ids (data/dataset.h); the loss is the sum over the batch's targets
 * divided by the global number of targets, never a per-rank mean, so any layout computes the same
 * gradient. */
#ifndef SURGE_TRAIN_H
#define SURGE_TRAIN_H

#include <stdint.h>

#include "data/dataset.h"
#include "io/config.h"
#include "io/deck.h"
#include "nn/model.h"
#include "optim/optim.h"

typedef struct train_stats {
  long step;        /* steps completed after this one */
  double loss;      /* mean loss over the global batch's targets */
  double lr;
  double grad_norm; /* global gradient norm before clipping */
  double seconds;   /* wall time of the step */
  /* its phases (seconds): fetching the batch, forward + loss, backward, gradient checks + clipping
   * + optimizer */
  double data_sec, forward_sec, backward_sec, optim_sec;
} train_stats_t;

typedef struct eval_stats {
  double loss;      /* mean over evaluated targets */
  double accuracy;  /* fraction of targets predicted (argmax) */
  long samples;
} eval_stats_t;

typedef struct trainer {
  config_t cfg;
  const backend_t *be;
  dataset_t *ds;
  graph_t g;
  model_t m;
  optim_t opt;
  sampler_t sampler;
  long step;     /* optimizer steps done */
  int batch;     /* samples per step on this rank */
  uint64_t *ids; /* (batch) */
  float *x, *y;  /* host batch: (batch, sample), (batch, targets_per_sample) */
} trainer_t;

/* Open the data, build the model (shape errors blame the deck's [model] keys), initialise
 * parameters from the seed and the optimizer. */
void trainer_init(trainer_t *t, const config_t *cfg, const deck_t *deck);
void trainer_free(trainer_t *t);

/* One optimizer step on the next global batch. A non-finite loss or gradient stops the run. */
train_stats_t trainer_step(trainer_t *t);

/* Loss and accuracy on the test (images) or validation (text) split, limited by test_samples. */
eval_stats_t trainer_eval(trainer_t *t);

/* Parameters copied to host memory (g.params.total floats, caller frees). */
float *trainer_params_host(const trainer_t *t);

#endif
