/* One training run's state on this rank: data, the layout that holds this rank's part of the model,
 * the optimizer over the layout's local slabs, and the step. The trainer runs any layout
 * (layout/layout.h) without knowing which: the layout computes a step's summed gradients; the
 * trainer reduces the loss and the gradient norm over the job, clips, and updates. The loss is the
 * sum over the batch's targets divided by the global number of targets, never a per-rank mean, so
 * any rank count and layout computes the same gradient. */
#ifndef SURGE_TRAIN_H
#define SURGE_TRAIN_H

#include <stdint.h>

#include "comm/comm.h"
#include "data/dataset.h"
#include "io/config.h"
#include "io/deck.h"
#include "io/log.h"
#include "layout/layout.h"
#include "nn/graph.h"
#include "optim/optim.h"

typedef struct train_stats {
  long step;        /* steps completed after this one */
  double loss;      /* mean loss over the global batch's targets */
  double lr;
  double grad_norm; /* global gradient norm before clipping */
  double seconds;   /* wall time of the step on this rank */
  double phase[PHASE_COUNT]; /* this rank's time per phase (io/log.h) */
  double backward_done; /* surge_now() when this rank's backward pass ended */
  int sums, sums_overlapped; /* this rank's sums inside the passes and those overlapped (layout_step_t) */
  int stop;         /* a rank saw SIGTERM/SIGUSR1 before this step's reduction (see trainer_step) */
} train_stats_t;

typedef struct eval_stats {
  double loss;      /* mean over evaluated targets */
  double accuracy;  /* fraction of targets predicted (argmax) */
  long samples;
} eval_stats_t;

/* The trainer's scalars in backend memory: doubles [0] the loss sum, [1] the squared norm part; the
 * float after them, the clipping factor (5 floats, rounded up to whole doubles). */
enum { TRAIN_SCALAR_FLOATS = 6 };

typedef struct trainer {
  config_t cfg;
  comm_t *world;
  const backend_t *be;
  dataset_t *ds;
  graph_t g;          /* the whole model; the layout holds this rank's part of it */
  layout_t *layout;
  optim_t opt;        /* over the layout's local slabs */
  sampler_t sampler;
  long step;          /* optimizer steps done */
  char run_id[17];    /* the run's identity (io/run_dir.h), kept in its checkpoints and model file */
  uint64_t *ids;      /* (global batch) the step's sample ids */
  double rss_before_model; /* resident bytes after the data was opened, before the model existed */
  double rss_peak_steps;   /* peak resident bytes at the end of the latest step (of the set-up before any) */
  double dev_before_model; /* a device backend's bytes in use on the device before the model existed */
  double dev_peak_steps;   /* the most in use at the end of a step (of the set-up before any); 0 on the host */
  float *scalars; /* backend memory, TRAIN_SCALAR_FLOATS: the step's loss sum and squared norm part (two
                   * doubles) and the clipping factor (a float), kept where the gradients are so a step
                   * on a device waits for them once (train.c) */
  long step_waits, steps_run; /* the backend's waits (backend_context_t.waits) in the steps this process ran,
                               * and those steps */
} trainer_t;

/* What this rank's training state needs and what the process took for it. */
typedef struct train_memory {
  double state_bytes;  /* parameters, gradients, optimizer moments and activations (with staging) */
  double peak_bytes;   /* peak resident memory above rss_before_model */
  double process_bytes; /* peak resident memory of the process, data included */
  int window;          /* samples the activations hold */
  double optim_bytes;  /* of state_bytes, the optimizer's moments (a sharded optimizer: its shard's) */
  double optim_floats; /* the slab floats the moments cover (the whole slab, or this rank's shard) */
  double act_bytes;    /* of state_bytes, the activations (with staging) the layout's model holds */
  double before_bytes; /* resident bytes before the model existed (the data, libraries, MPI) */
  double steps_peak_bytes; /* peak resident bytes up to the end of the last step (not the evaluation and
                            * checkpoint after it) */
  double dev_before_bytes; /* a device backend's: device bytes in use before the model (context, libraries) */
  double dev_peak_bytes;   /* and the most in use at the end of a step; both 0 on a host backend */
  int grad_buffers;        /* the shared buffers the activation gradients take turns in (model_t.pool) */
  int grads_shared;        /* the activation gradients in them */
  int acts_held16;         /* the activations held in bfloat16 (model_t.act16: [backend] activations) */
  int adds_passing;        /* add inputs whose gradient takes the add's buffer (model_t.nadd_shared) */
} train_memory_t;
train_memory_t trainer_memory(const trainer_t *t);

/* Open the data, build the model (shape errors blame the deck's [model] keys) and its layout
 * (parameters initialised from the seed), and the optimizer. Collective over world (which must
 * outlive t). */
void trainer_init(trainer_t *t, const config_t *cfg, const deck_t *deck, comm_t *world);
/* The backend's options of a run (io/options.h's backend_opts_of), a background job's at low
 * priority (mux/options.h: its launch role); an in-process background's on its foreground rank's
 * device (local_rank is then its host's, not the background job's own). */
backend_options_t trainer_backend_opts(const config_t *cfg, int local_rank);
void trainer_free(trainer_t *t);


/* One optimizer step on the next global batch (collective). A non-finite loss or gradient stops
 * the run. stop_request is this rank's "a stop signal arrived"; the result's stop is 1 when any rank
 * had one, so all ranks agree to stop after this step. */
train_stats_t trainer_step(trainer_t *t, int stop_request);

/* Loss and accuracy on the test (images) or validation (text) split, limited by test_samples;
 * collective. */
eval_stats_t trainer_eval(trainer_t *t);

/* Collective: make every replica of the parameters and optimizer moments the true one (a layout may
 * leave stale copies where a rank does not run a part). Checkpoints and the model file call it. */
void trainer_sync_replicas(trainer_t *t);

#endif
