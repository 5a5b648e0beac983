/* One training run's state on this rank: data, model, optimizer and the step. Data parallelism is
 * the trivial layout of the per-layer engine: every node runs on all ranks, each rank on its
 * contiguous share [lo, hi) of the global batch's sample ids (shares differ by at most one sample
 * when the batch does not divide evenly), and the gradient slab is summed over ranks. The loss is
 * the sum over the batch's targets divided by the global number of targets, never a per-rank mean,
 * so any rank count computes the same gradient. */
#ifndef SURGE_TRAIN_H
#define SURGE_TRAIN_H

#include <stdint.h>

#include "burst/executor.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "io/config.h"
#include "io/deck.h"
#include "io/log.h"
#include "nn/model.h"
#include "optim/optim.h"

typedef struct train_stats {
  long step;        /* steps completed after this one */
  double loss;      /* mean loss over the global batch's targets */
  double lr;
  double grad_norm; /* global gradient norm before clipping */
  double seconds;   /* wall time of the step on this rank */
  double phase[PHASE_COUNT]; /* this rank's time per phase (io/log.h) */
  int stop;         /* a rank saw SIGTERM/SIGUSR1 before this step's reduction (see trainer_step) */
} train_stats_t;

typedef struct eval_stats {
  double loss;      /* mean over evaluated targets */
  double accuracy;  /* fraction of targets predicted (argmax) */
  long samples;
} eval_stats_t;

typedef struct trainer {
  config_t cfg;
  comm_t *world;
  const backend_t *be;
  dataset_t *ds;
  graph_t g;
  model_t m;
  optim_t opt;
  sampler_t sampler;
  long step;     /* optimizer steps done */
  long lo, hi;   /* this rank's share of each global batch: positions [lo, hi) */
  int batch;     /* hi - lo: samples per step on this rank */
  uint64_t *ids; /* (global batch) */
  burst_exec_t *burst; /* [parallel] mode = burst: the plan's executor (model buffers hold the global
                        * batch); NULL for data parallelism */
  burst_plan_t plan;   /* burst mode: the plan run, with the predictions its file records */
  char *plan_text;     /* burst mode: the plan file's text (for the log); NULL otherwise */
  float *x, *y;  /* host batch: (batch, sample), (batch, targets_per_sample) */
} trainer_t;

/* Open the data, build the model (shape errors blame the deck's [model] keys), initialise
 * parameters from the seed and the optimizer. Collective over world (which must outlive t). */
void trainer_init(trainer_t *t, const config_t *cfg, const deck_t *deck, comm_t *world);
void trainer_free(trainer_t *t);

/* One optimizer step on the next global batch (collective). A non-finite loss or gradient stops
 * the run. stop_request is this rank's "a stop signal arrived"; the result's stop is 1 when any rank
 * had one, so all ranks agree to stop after this step. */
train_stats_t trainer_step(trainer_t *t, int stop_request);

/* Loss and accuracy on the test (images) or validation (text) split, limited by test_samples;
 * collective: each rank evaluates a contiguous share. */
eval_stats_t trainer_eval(trainer_t *t);

/* Collective: make every rank's parameters and optimizer moments the true ones (burst mode leaves
 * stale copies of the nodes outside a rank's sets; data parallelism has nothing to do). Evaluation
 * and trainer_params_host call it; checkpoints must. */
void trainer_sync_replicas(trainer_t *t);

/* Parameters copied to host memory (g.params.total floats, caller frees); collective (see
 * trainer_sync_replicas). */
float *trainer_params_host(trainer_t *t);

#endif
