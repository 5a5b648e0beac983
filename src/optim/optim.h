/* Optimizers, learning-rate schedules and gradient clipping over flat slabs.
 *
 * An optimizer updates the whole parameter slab in one backend call per step (be->sgd_step or
 * be->adamw_step), with PyTorch's semantics (see backend.h): SGD with momentum, Nesterov and L2
 * weight decay added to the gradient; AdamW with bias-corrected moments and decoupled weight decay
 * p *= 1 - lr*wd. Its state (moment slabs, step count) lives here so a checkpoint can save it. */
#ifndef SURGE_OPTIM_H
#define SURGE_OPTIM_H

#include <stddef.h>

#include "backend/backend.h"
#include "core/keys.h"

typedef enum { OPTIM_SGD, OPTIM_ADAMW } optim_kind_t;

/* The learning rate over the steps of a run (lr_at). */
typedef struct lr_schedule {
  char kind[16];      /* constant | cosine */
  double lr;          /* peak learning rate */
  double min_lr;      /* cosine: the final one */
  long warmup_steps;  /* cosine: linear warm-up steps */
  long steps;         /* cosine: steps of the whole run (the decay ends at the last) */
} lr_schedule_t;

/* What to optimise with: the deck's [train] keys of the update rule (this part's rows,
 * optim/options.c); schedule.steps is the run's [run] steps, set by the trainer. */
typedef struct optim_opts {
  char name[16];                               /* sgd | adamw */
  double momentum, weight_decay, beta1, beta2, eps;
  char decay[16];                              /* all | matrices: the tensors weight_decay applies to */
  int nesterov;
  lr_schedule_t schedule;
  double clip_norm;                            /* clip the global gradient norm to this (0: no clipping) */
} optim_opts_t;

/* The [train] rows of the update rule, and their check (min_lr <= lr). */
extern const cfg_part_t optim_options;

/* A parsed configuration's values (schedule.steps left 0). */
static inline const optim_opts_t *optim_opts(const struct config *cfg) {
  return (const optim_opts_t *)cfg_part(cfg, &optim_options);
}

typedef struct optim {
  optim_kind_t kind;
  /* hyperparameters of optim_opts_t; the learning rate comes per step from the schedule (lr_at) */
  float momentum, weight_decay, beta1, beta2, eps;
  int nesterov;
  lr_schedule_t schedule;
  /* state: backend memory of `floats` floats each, the floats of the ranges of the parameter slab's
   * layout one after the other (a sharded optimizer holds its shard only; else the range [0, n)).
   * sgd: m is the momentum buffer (NULL when momentum == 0), v is NULL; adamw: m and v moments. */
  float *m, *v;
  long t; /* steps taken */
  const backend_t *be;
  size_t n;       /* floats in the parameter slab */
  size_t *ranges; /* (nranges, 2) the sorted disjoint [ranges[2i], ranges[2i+1]) the state covers: a
                   * step may update only within one of them */
  int nranges;
  size_t floats;  /* in all of them */
  size_t lo, hi;  /* the first range's start, the last one's end */
  int matrices_only; /* [train] decay = matrices: the spans below take no weight decay */
  size_t *undecayed; /* (nundecayed, 2) sorted disjoint slab spans of the tensors of fewer than 2 dimensions */
  int nundecayed;
} optim_t;

/* Set up an optimizer for a slab of n floats from opts.name ("sgd" or "adamw"; anything else is an
 * input error) with zeroed state; it keeps opts.schedule. */
void optim_init(optim_t *o, optim_opts_t opts, const backend_t *be, size_t n);
/* optim_init whose state covers only the floats [lo, hi) of the slab (a rank's shard of a distributed
 * optimizer, sync/shard.h): m and v hold hi - lo floats, and steps update only within [lo, hi). */
void optim_init_shard(optim_t *o, optim_opts_t opts, const backend_t *be, size_t n, size_t lo, size_t hi);
/* optim_init_shard over several ranges: sorted, disjoint [ranges[2i], ranges[2i+1]) (none: an empty shard) of
 * the slab, their state held one after the other (a shard over several rank groups, sync/shard.h). */
void optim_init_ranges(optim_t *o, optim_opts_t opts, const backend_t *be, size_t n, const size_t *ranges,
                       int nranges);
/* Where slab float i's state lies in m and v (i within a range, or the end of one). */
size_t optim_state_at(const optim_t *o, size_t i);
/* Bytes of the optimizer's state (its moments) on this rank. */
size_t optim_state_bytes(const optim_t *o);
void optim_free(optim_t *o);
struct slab_layout;
/* With [train] decay = matrices: the tensors of the slab's layout of fewer than 2 dimensions (biases, norm
 * parameters) take no weight decay. Call once after init with the layout the slab follows; a no-op for
 * decay = all. */
void optim_exempt_vectors(optim_t *o, const struct slab_layout *layout);

/* One step over the whole slab: params (n) -= update from grads (n) at learning rate lr; t += 1.
 * SGD's first step (t == 0) initialises the momentum buffer with the gradient; AdamW's bias
 * corrections use the step number t+1. */
void optim_step(optim_t *o, float *params, const float *grads, float lr);
/* optim_step on the floats [lo, hi) of the slabs only (params, grads and the moments there): a
 * rank that updates its part of a slab shared with others (sync/node_sum.h); the gradients are read
 * as gs[0] grads (gs one float of backend memory: the clipping factor folded into the step,
 * clip_scale's or the backend's clip_factor; NULL: as they are), the slab left unscaled. */
void optim_step_part(optim_t *o, float *params, const float *grads, float lr, const float *gs, size_t lo, size_t hi);
/* optim_step_part that also adds to *acc (one double of backend memory) the sum of the squares of
 * the gradients it read that lie in the sorted, disjoint float ranges [ranges[2i], ranges[2i+1])
 * (ranges NULL: all of [lo, hi)), range by range: on a host-memory backend block by block, each
 * block's squares taken just before its update reads it again from L1, so the step reads the
 * gradients from memory once rather than once more for their norm (a trainer that does not clip
 * takes the norm here). */
void optim_step_part_sumsq(optim_t *o, float *params, const float *grads, float lr, size_t lo, size_t hi,
                           const size_t *ranges, int nranges, double *acc);
/* One step (t += 1) that updates only the sorted, disjoint float ranges [upd[2i], upd[2i+1]) of
 * the slabs (nupd of them): a rank that updates only the tensors it holds (a burst plan's nodes of
 * this rank; the others' parameters and moments stay as they were). acc not NULL: also adds to
 * *acc, as optim_step_part_sumsq does, the squares of the gradients in `ranges` (NULL: all of upd)
 * that lie within upd (the gradients read as they are); acc NULL: none are taken, and the
 * gradients are read scaled by gs (the clipping factor, as optim_step_part's). */
void optim_step_ranges(optim_t *o, float *params, const float *grads, float lr, const float *gs, const size_t *upd,
                       int nupd, const size_t *ranges, int nranges, double *acc);

/* Learning rate at step (0-based). "constant": s->lr. "cosine": linear warm-up
 * lr*(step+1)/warmup for step < warmup, then min_lr + 0.5*(lr - min_lr)*(1 + cos(pi*progress))
 * with progress = (step - warmup)/(steps - warmup), clamped to [0, 1]. Another kind is an input
 * error. */
double lr_at(const lr_schedule_t *s, long step);

/* sqrt(sum of grads^2) over n floats of backend memory. */
double grad_global_norm(const backend_t *be, const float *grads, size_t n);

/* Clip grads (n) to a global norm of max_norm as PyTorch's clip_grad_norm_: scale by
 * min(1, max_norm/(norm + 1e-6)). max_norm <= 0 disables clipping. Returns the norm
 * before clipping (NaN or Inf when the gradients are not finite; they are then left alone). */
double clip_by_global_norm(const backend_t *be, float *grads, size_t n, double max_norm);
/* The same scaling for a norm computed elsewhere (e.g. over gradients spread across ranks). */
void clip_to_norm(const backend_t *be, float *grads, size_t n, double norm, double max_norm);
/* clip_to_norm's factor (1 where it leaves the gradients alone), for an optimizer step that reads
 * the gradients scaled (optim_step_part's gs) instead of a pass of its own. */
float clip_scale(double norm, double max_norm);

#endif
