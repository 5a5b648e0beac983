#include "train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/events.h"
#include "core/rss.h"
#include "core/say.h"
#include "core/timer.h"
#include "io/options.h"
#include "mux/mux.h"
#include "mux/options.h"
#include "train/recompute_options.h"
#include "nn/zoo.h"
#include "sync/options.h"

backend_options_t trainer_backend_opts(const config_t *cfg, int local_rank) {
  const multiplex_opts_t *mo = multiplex_opts(cfg);
  backend_options_t bo = backend_opts_of(cfg, local_rank);
  bo.low_priority = mo->role == MUX_ROLE_BACKGROUND; /* its streams yield to the foreground's */
  if (bo.low_priority && mo->in_process) { /* a thread of its foreground's process, on its GPU */
    bo.in_process = 1;
    bo.local_rank = mo->host_local_rank;
  }
  return bo;
}

/* A device backend's memory in use now, kept when it is the most so far. Allocations are made before
 * the steps and scratch only grows, so the end of a step sees the step's peak (cudaMalloc is
 * synchronous); one driver query a step. */
static void note_device_peak(trainer_t *t) {
  double now = (double)t->be->device_used();
  if (now > t->dev_peak_steps) t->dev_peak_steps = now;
}

void trainer_init(trainer_t *t, const config_t *cfg, const deck_t *deck, comm_t *world) {
  memset(t, 0, sizeof *t);
  t->cfg = *cfg;
  t->world = world;
  optim_check_trainable(cfg, deck);
  backend_options_t bo = trainer_backend_opts(cfg, comm_local_rank(world));
  t->be = backend_open_of(cfg, deck, &bo, world->mpi);
  if (!t->be->host_memory) { /* the layouts' groups, split from world, inherit its device side */
    const backend_context_t *bc = t->be->context();
    const char *how = comm_use_device(world, device_comm_of(cfg), bc->stream);
    if (world->rank == 0)
      say("backend %s: %s (device %d of rank 0), %s products, cuBLASLt epilogues %s, attention kernels %s; device "
          "buffers between ranks: %s\n",
          t->be->name, bc->device, bc->index, bc->precision, bc->epilogues, bc->attention, how);
  }
  if (cfg->global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg->global_batch);
  world->bucket_bytes = sync_bucket_bytes(sync_opts(cfg));

  t->ds = dataset_open(data_opts_of(cfg));
  t->rss_before_model = rss_now_bytes();
  t->dev_before_model = (double)t->be->device_used();
  zoo_build_of(cfg, deck, t->ds, &t->g);
  t->g.recompute = recompute_mode_of(cfg); /* the layouts' models plan it (nn/recompute.h) */
  layout_opts_t lo = layout_opts_of(cfg, deck);
  t->layout = layout_build(&lo, &t->g, t->be, world);
  const layout_t *l = t->layout; /* a sharded optimizer holds the state of this rank's shard only */
  if (l->sharded_state && l->update_ranges)
    optim_init_ranges(&t->opt, optim_opts_of(cfg), t->be, l->local->total, l->update_ranges, l->nupdate_ranges);
  else
    optim_init_shard(&t->opt, optim_opts_of(cfg), t->be, l->local->total, l->sharded_state ? l->update_lo : 0,
                     l->sharded_state ? l->update_hi : l->local->total);
  optim_exempt_vectors(&t->opt, l->local);
  sampler_init_for(&t->sampler, t->ds, cfg->seed);
  t->ids = xcalloc((size_t)cfg->global_batch, sizeof *t->ids);
  t->scalars = t->be->alloc(TRAIN_SCALAR_FLOATS);
  t->rss_peak_steps = rss_peak_bytes(); /* a run without steps (resumed at its end): the set-up's */
  note_device_peak(t);
}

void trainer_free(trainer_t *t) {
  if (t->scalars) t->be->free(t->scalars);
  layout_free(t->layout);
  free(t->ids);
  sampler_free(&t->sampler);
  optim_free(&t->opt);
  graph_free(&t->g);
  dataset_close(t->ds);
  memset(t, 0, sizeof *t);
}

train_memory_t trainer_memory(const trainer_t *t) {
  const layout_t *l = t->layout;
  train_memory_t m = {
      .state_bytes = sizeof(float) * (2 * (double)l->local->total + (double)l->m->act_floats) +
                     (double)optim_state_bytes(&t->opt),
      .optim_bytes = (double)optim_state_bytes(&t->opt),
      .optim_floats = (double)t->opt.floats,
      .peak_bytes = rss_peak_bytes() - t->rss_before_model,
      .process_bytes = rss_peak_bytes(),
      .window = l->window,
      .act_bytes = sizeof(float) * (double)l->m->act_floats,
      .before_bytes = t->rss_before_model,
      .steps_peak_bytes = t->rss_peak_steps,
      .dev_before_bytes = t->dev_before_model,
      .dev_peak_bytes = t->dev_peak_steps,
      .grad_buffers = l->m->npool,
      .acts_held16 = l->m->nact16,
      .adds_passing = l->m->nadd_shared,
  };
  for (int i = 0; i < l->m->g->n; i++) m.grads_shared += (l->m->pooled[i] & MODEL_POOLED_GRAD) != 0;
  return m;
}

/* A step whose loss or gradient norm is NaN or Inf ends the run with an error. */
static void check_finite(const trainer_t *t, const train_stats_t *s) {
  if (!isfinite(s->loss) || !isfinite(s->grad_norm))
    surge_runtime_error("step %ld: the %s is not finite (loss %g, gradient norm %g) (hint: lower [train] lr, "
                        "or set [train] clip_norm; the last checkpoint is untouched)",
                        t->step + 1, isfinite(s->loss) ? "gradient" : "loss", s->loss, s->grad_norm);
}

/* The trainer's scalars (train.h) in backend memory. */
static double *loss_acc(const trainer_t *t) { return (double *)(void *)t->scalars; }
static double *sumsq_acc(const trainer_t *t) { return (double *)(void *)t->scalars + 1; }
static float *clip_factor(const trainer_t *t) { return (float *)(void *)((double *)(void *)t->scalars + 2); }

/* The loss sum and the squared norm part, on the host: on a device, the step's one wait for it. */
static void read_scalars(const trainer_t *t, double out[2]) {
  t->be->download((float *)(void *)out, t->scalars, 2 * sizeof(double) / sizeof(float)); /* a byte copy */
}

/* This rank's part of the update at rate lr, its seconds added to *update_s; sumsq not NULL: adds
 * this rank's part of the squared gradient norm, from the update's own pass, to it (backend
 * memory); gs: the clipping factor (backend memory) the step applies to the gradients as it reads
 * them (NULL: none). */
static void update_part(trainer_t *t, float lr, double *sumsq, const float *gs, double *update_s) {
  layout_t *l = t->layout;
  ev_raise(EV_WORK, EV_UPDATE, 0);
  double u0 = surge_now();
  if (l->update_ranges)
    optim_step_ranges(&t->opt, l->m->params, l->m->grads, lr, gs, l->update_ranges, l->nupdate_ranges,
                      l->norm.ranges, l->norm.nranges, sumsq);
  else if (sumsq)
    norm_update(&t->opt, l->m->params, l->m->grads, lr, l->update_lo, l->update_hi, &l->norm, sumsq);
  else
    optim_step_part(&t->opt, l->m->params, l->m->grads, lr, gs, l->update_lo, l->update_hi);
  *update_s += surge_now() - u0;
}

/* The update where the host needs nothing before it: the norm is this rank's own (no sum over the
 * ranks) and the loss and stop are summed already. The clipping factor is computed where the
 * gradients are (clip_factor), and the loss and norm read once, after the update is queued: on a
 * device the step waits for them once. The norm is checked after the update (the parameters in
 * memory are lost with the run, the checkpoint is not). */
static void update_local(trainer_t *t, const layout_step_t *ls, double clip_norm, double targets, train_stats_t *s,
                         double *update_s) {
  layout_t *l = t->layout;
  if (clip_norm > 0) {
    norm_part(t->be, l->m->grads, l->update_lo, l->update_hi, &l->norm, sumsq_acc(t));
    t->be->clip_factor(sumsq_acc(t), clip_norm, clip_factor(t));
    update_part(t, (float)s->lr, NULL, clip_factor(t), update_s);
  } else {
    update_part(t, (float)s->lr, sumsq_acc(t), NULL, update_s);
  }
  double v[2];
  read_scalars(t, v);
  s->loss = (ls->loss_on_device ? v[0] : ls->loss) / targets;
  s->grad_norm = sqrt(v[1]);
  s->stop = ls->stop > 0;
  check_finite(t, s);
}

/* The update where the host sums first: this rank's part of the squared norm (from the update's own
 * pass without clipping; with clipping apart, before the update, and summed first where the layout
 * sums it), then the loss, the norm's parts and stop requests of every rank, summed by the layout on
 * the gradient reduction where it could, else here in one reduction. Returns this rank's part of
 * the norm for a layout that sums it at `updated`. */
static double update_summed(trainer_t *t, const layout_step_t *ls, int stop_request, double clip_norm,
                            double targets, train_stats_t *s, double *update_s) {
  layout_t *l = t->layout;
  const norm_plan_t *np = &l->norm;
  int clip = clip_norm > 0;
  if (clip) norm_part(t->be, l->m->grads, l->update_lo, l->update_hi, np, sumsq_acc(t));
  else update_part(t, (float)s->lr, sumsq_acc(t), NULL, update_s);
  double v[2];
  read_scalars(t, v);
  double part = v[1], loss = ls->loss_on_device ? v[0] : ls->loss;
  if (clip && np->sum == NORM_SUM_LAYOUT) {
    ev_raise(EV_COLLECTIVE, EV_METRICS, 0);
    part = l->ops->norm_sum(l, part);
  }
  double sums[3] = {loss, np->sum == NORM_SUM_JOB ? part : 0.0, ls->summed ? ls->stop : stop_request ? 1.0 : 0.0};
  if (!ls->summed && ls->idle) { /* a rank left out of the step waits here for the others' whole step */
    ev_raise(EV_WAIT, EV_METRICS, 0);
    comm_allreduce_sum_double_waiting(t->world, sums, 3, TRAFFIC_OTHER);
  } else if (!ls->summed) {
    ev_raise(EV_COLLECTIVE, EV_METRICS, 0);
    comm_allreduce_sum_double(t->world, sums, 3, TRAFFIC_OTHER);
  }
  s->stop = sums[2] > 0;
  s->loss = sums[0] / targets;
  s->grad_norm = sqrt(np->sum == NORM_SUM_JOB ? sums[1] : part); /* NaN or Inf when a gradient is */
  /* a norm from the update is checked after it; one the layout sums at `updated` is checked there */
  if (clip || np->sum != NORM_SUM_LAYOUT) check_finite(t, s);
  if (clip) { /* the clipping factor is folded into the update: no pass of its own over the gradients */
    float gs = clip_scale(s->grad_norm, clip_norm);
    if (gs != 1.0f) t->be->upload(clip_factor(t), &gs, 1);
    update_part(t, (float)s->lr, NULL, gs != 1.0f ? clip_factor(t) : NULL, update_s);
  }
  return part;
}

train_stats_t trainer_step(trainer_t *t, int stop_request) {
  train_stats_t s;
  memset(&s, 0, sizeof s);
  layout_t *l = t->layout;
  const norm_plan_t *np = &l->norm;
  double t0 = surge_now();
  long waits = t->be->context()->waits;
  double targets = (double)t->cfg.global_batch * (double)t->g.targets_per_sample;
  ev_raise(EV_WORK, EV_STEP, 0);
  sampler_batch(&t->sampler, t->step, t->cfg.global_batch, t->ids);
  t->be->fill(t->scalars, TRAIN_SCALAR_FLOATS, 0.0f); /* the step's sums start from zero */
  layout_step_t ls = {.stop = stop_request ? 1.0 : 0.0, .step = t->step, .loss_acc = loss_acc(t)};
  l->ops->step(l, t->ds, t->ids, (float)(1.0 / targets), &ls);
  if (np->sum == NORM_SUM_JOB && ls.summed)
    surge_runtime_error("the %s layout sums its metrics itself but leaves the norm to the job (a layout bug)", l->name);

  s.lr = lr_at(&t->opt.schedule, t->step);
  double update_s = 0, t1 = surge_now();
  double clip_norm = optim_opts(&t->cfg)->clip_norm, part = 0;
  int at_updated = clip_norm <= 0 && np->sum == NORM_SUM_LAYOUT;
  if (ls.summed && np->sum == NORM_SUM_NONE)
    update_local(t, &ls, clip_norm, targets, &s, &update_s);
  else
    part = update_summed(t, &ls, stop_request, clip_norm, targets, &s, &update_s);
  double t3 = surge_now();
  if (l->ops->updated) { /* the others' parts: waiting for them is communication, not the update */
    ev_raise(EV_COLLECTIVE, EV_SYNC, 0);
    double total = l->ops->updated(l, at_updated ? part : 0.0);
    if (at_updated) {
      s.grad_norm = sqrt(total);
      check_finite(t, &s);
    }
  }
  t->step++;
  s.step = t->step;
  t->step_waits += t->be->context()->waits - waits;
  t->steps_run++;
  double t4 = surge_now();

  s.seconds = t4 - t0;
  s.backward_done = ls.backward_done;
  s.sums = ls.sums;
  s.sums_overlapped = ls.sums_overlapped;
  s.phase[PHASE_DATA] = ls.data;
  s.phase[PHASE_FORWARD] = ls.forward;
  s.phase[PHASE_BACKWARD] = ls.backward;
  s.phase[PHASE_WAIT] = ls.wait;
  s.phase[PHASE_COMM] = ls.comm + (t3 - t1 - update_s) + (t4 - t3);
  s.phase[PHASE_OPTIMIZER] = update_s;
  t->rss_peak_steps = rss_peak_bytes(); /* one getrusage: what the steps took, before evaluation and checkpoints */
  note_device_peak(t);
  return s;
}

/* Evaluation runs on the true parameters: replicas are made consistent first. */
eval_stats_t trainer_eval(trainer_t *t) {
  eval_stats_t e;
  memset(&e, 0, sizeof e);
  float *slabs[1] = {t->layout->m->params};
  t->layout->ops->sync_replicas(t->layout, slabs, 1);
  uint64_t n = dataset_size(t->ds, SPLIT_TEST);
  double sums[2]; /* loss, correct */
  t->layout->ops->eval(t->layout, t->ds, SPLIT_TEST, n, sums);
  comm_allreduce_sum_double(t->world, sums, 2, TRAFFIC_OTHER);
  double targets = (double)n * (double)t->g.targets_per_sample;
  e.samples = (long)n;
  e.loss = n ? sums[0] / targets : 0;
  e.accuracy = n ? sums[1] / targets : 0;
  return e;
}

void trainer_sync_replicas(trainer_t *t) {
  int sharded = t->layout->sharded_state; /* the moments of a shard are its rank's alone: nothing to sync */
  float *slabs[3] = {t->layout->m->params, sharded ? NULL : t->opt.m, sharded ? NULL : t->opt.v};
  t->layout->ops->sync_replicas(t->layout, slabs, 3);
}
