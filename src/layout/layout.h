/* Parallel layouts: which ranks run which part of the model on which samples. The trainer
 * (src/train/) runs any layout through this table without knowing which it is, as layers run
 * through backend_t. A layout owns this rank's model (its buffers, its parameter and gradient
 * slabs), the communicators it needs and its gradient synchronisation; the trainer owns the data
 * order, the optimizer over the layout's local slabs, clipping, metrics and checkpoints.
 *
 * Layouts today (layouts.c has the table):
 *   dp     data parallelism: the burst executor running the plan in which every node has all ranks
 *   burst  DeepPool burst parallelism: a plan gives every node its own rank set (burst/)
 *   3d     tensor x pipeline x data parallelism of the gpt with a 1F1B schedule (pipe/)
 * A new layout is one more entry: a builder that fills a layout_t.
 *
 * Every layout computes the same mathematical step as one rank does on the whole global batch, so
 * without lossy compression all layouts reproduce the 1-rank weights to float tolerance. */
#ifndef SURGE_LAYOUT_H
#define SURGE_LAYOUT_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "core/keys.h"
#include "core/state.h"
#include "data/dataset.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "optim/norm.h"
#include "sync/gradsync.h"

typedef struct config config_t; /* io/config.h: the deck's values (each layout reads its own part) */
typedef struct deck deck_t;     /* io/deck.h: where they came from, for messages */
typedef struct run_log run_log_t; /* io/log.h: the run's metrics log */

/* What a step did on this rank. */
typedef struct layout_step {
  double loss;  /* this rank's part of the loss SUM (sum over world: the global sum) */
  double stop;  /* in: this rank's stop request (0 or 1), read before the step clears the rest */
  long step;    /* in: the step's number (0-based): what draws per step (dropout's masks) reads it */
  int summed;   /* 1: loss and stop are already the job's totals (they rode on the gradient
                 * reduction, no collective of their own); 0: sum them over world */
  int idle;     /* 1: this rank had no part in the step's work (a burst plan left it out): it only
                 * waits for the others */
  double *loss_acc;   /* in: one double of backend memory, zero, where the layout may add the loss sum
                       * instead of filling `loss` (a device then need not wait for it); NULL: it may not */
  int loss_on_device; /* 1: the loss sum went to *loss_acc (loss is 0); 0: it is in `loss` (layouts that
                       * sum it on the host, or keep no accumulator, leave this 0) */
  double data, forward, backward, comm, wait; /* seconds */
  double backward_done;                       /* surge_now() when the backward pass ended */
  int sums, sums_overlapped; /* this rank's sums over a node's ranks inside the passes (batch norm's
                              * statistics), and of them those in flight while other work of the pass
                              * ran here (0 where the layout has none) */
} layout_step_t;

typedef struct layout layout_t;

typedef struct layout_ops {
  /* Collective: the gradients of one step on the global batch ids[0..B) of ds's training split,
   * scaled by grad_scale (1 / global targets) and summed over the ranks that share them. */
  void (*step)(layout_t *l, const dataset_t *ds, const uint64_t *ids, float grad_scale, layout_step_t *out);
  /* Collective (after sync_replicas): loss sum and correct targets of this rank's part of positions
   * [0, n) of split; the sums over world are the totals. */
  void (*eval)(layout_t *l, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]);
  /* Collective: make every replica of the local slabs (parameters, optimizer moments: each NULL or
   * a slab of the local layout) hold the true values. */
  void (*sync_replicas)(layout_t *l, float *slabs[], int nslabs);
  /* This rank's piece of each global tensor, in local slab order: out[t] describes local tensor t
   * (name, global shape, hyperslab, replicas; data left NULL), and the hyperslab has exactly the
   * local tensor's floats. */
  void (*describe)(const layout_t *l, state_tensor_t *out);
  /* Collective, once at the start: the layout describes its own groups of the log (io/log.h: a
   * table of series it appends rows to by handle, fixed tables, attributes: a burst plan, a
   * pipeline and its compressor). NULL: none. */
  void (*log)(layout_t *l, run_log_t *log);
  /* Collective, after each step's row: the layout's own rows for the step just taken (`step` steps
   * done) through the handles its `log` op got: a pipeline's timeline, the compressor's numbers.
   * NULL: none. */
  void (*log_step)(layout_t *l, long step);
  /* Collective: the layout's own state regions for a checkpoint, beside the reducer's (a pipeline
   * compressor's error feedback), host views made current: how many it filled into out (at most
   * max). NULL: none. */
  int (*state)(layout_t *l, state_region_t *out, int max);
  /* After a checkpoint was read into the regions state gave: take the values. NULL: nothing. */
  void (*state_loaded)(layout_t *l);
  /* Collective, after each rank updated its part of the parameters (layout_t.update_lo, hi): every
   * rank may read all of them from then on through the layout's ops (a sharded optimizer's all-gather
   * may still be in flight, waited for where the next op reads them); returns the sum over the ranks of norm_part (this rank's
   * part of the squared gradient norm where the layout's norm plan sums there, else 0). NULL:
   * nothing to do (each rank updated all it holds). */
  double (*updated)(layout_t *l, double norm_part);
  /* Collective, where the norm plan sums in the layout (NORM_SUM_LAYOUT) and the step clips before
   * its update: the sum of norm_part over the ranks. NULL where the plan sums elsewhere. */
  double (*norm_sum)(layout_t *l, double norm_part);
  /* With sharded_state: the ranks that hold the same rows of local tensor t's optimizer state as
   * this one (a box of the checkpoint, sync/shard.h), this rank being *replica of *replicas. NULL:
   * it alone (0 of 1). */
  void (*shard_replica)(const layout_t *l, int t, int *replica, int *replicas);
  void (*free)(layout_t *l);
} layout_ops_t;

struct layout {
  const layout_ops_t *ops;
  const char *name;         /* the [parallel] mode */
  model_t *m;               /* this rank's model: m->params and m->grads are the local slabs */
  const slab_layout_t *local; /* their layout */
  gradsync_t *sync;         /* the gradient synchronisation (its reducer's state goes in checkpoints) */
  int window;               /* most samples this rank holds at any point of a step */
  size_t update_lo, update_hi; /* the floats [lo, hi) of the local slabs this rank's optimizer
                                * updates (its gradients there are the step's sums): set by a
                                * builder whose layout has an `updated` op, else the whole slab */
  const size_t *update_ranges; /* NULL, or the sorted disjoint [r[2i], r[2i+1]) within [update_lo,
                                * update_hi) that the optimizer updates, the rest left as it is (a
                                * burst plan: the tensors of this rank's nodes); set by the builder */
  int nupdate_ranges;
  int sharded_state;        /* 1: a distributed optimizer (sync/shard.h): [update_lo, update_hi) is this
                             * rank's shard alone, the optimizer's state is held for it only, and
                             * `updated` all-gathers the parameters; set by the builder */
  norm_plan_t norm;         /* the gradients this rank counts in the norm, and how the ranks' parts
                             * add up (optim/norm.h): set by the builder */
  const char *note;         /* what the layout chose that the run's banner states; NULL: nothing */
  void *impl;
};

/* What a layout is built from: the run's settings every layout takes, and the whole configuration
 * from which a layout reads its own part (burst/options.h, pipe/options.h, sync/options.h). */
typedef struct layout_opts {
  char mode[16];            /* dp | burst | 3d */
  const char *model;        /* the zoo name plan files are checked against */
  long global_batch;
  int micro_batches;        /* [train] micro_batches: each step's batch in this many parts */
  long steps;               /* the run's optimizer steps */
  uint64_t seed;            /* parameter initialisation */
  gradsync_opts_t sync;     /* the gradient synchronisation's buckets and overlap */
  int node_shared;          /* dp: through node-shared memory where possible (sync/node_sum.h) */
  int shard_optimizer;      /* a distributed optimizer (sync/shard.h): dp (node_shared wins where it
                             * applies), burst rank sets, the 3d layout's dp axis */
  const config_t *cfg;      /* the layouts' own options: cfg_part (core/keys.h) */
  const deck_t *deck;       /* blamed by input errors (deck_where); may be NULL */
} layout_opts_t;

/* The [parallel] mode key: the layouts of the table (a field of config_t). */
extern const cfg_part_t layout_options;

/* The options of cfg (deck: where its values came from, or NULL). */
layout_opts_t layout_opts_of(const config_t *cfg, const deck_t *deck);
/* Where a deck key's value came from, for messages (deck_where's "DECK:LINE", "-D ...", "DECK (default
 * value)"; "deck" without a deck), and whether it is the schema's default (0 without a deck). */
const char *layout_where(const layout_opts_t *o, const char *section_key);
int layout_is_default(const layout_opts_t *o, const char *section_key);

/* Collective over world: the layout the options name, its parameters initialised from the seed.
 * g and world must outlive it. Bad plans or options are input errors. */
layout_t *layout_build(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world);
void layout_free(layout_t *l);

/* The layouts' names for messages ("dp, burst, 3d"). */
const char *layout_names(void);

#endif
