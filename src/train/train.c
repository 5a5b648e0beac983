#include "train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_open.h"
#include "core/error.h"
#include "core/events.h"
#include "core/rss.h"
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
  backend_options_t bo = trainer_backend_opts(cfg, comm_local_rank(world));
  t->be = backend_open(backend_deck(cfg)->name, &bo, backend_opts_where(cfg, deck), world->mpi);
  t->be->set_threads(backend_deck(cfg)->threads);
  if (!t->be->host_memory) { /* the layouts' groups, split from world, inherit its device side */
    const backend_context_t *bc = t->be->context();
    const char *how = comm_use_device(world, device_comm_of(cfg), bc->stream);
    if (world->rank == 0)
      printf("backend %s: %s (device %d of rank 0), %s products, cuBLASLt epilogues %s, attention kernels %s; device "
             "buffers between ranks: %s\n",
             t->be->name, bc->device, bc->index, bc->precision, bc->epilogues, bc->attention, how);
  }
  if (cfg->global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg->global_batch);
  world->bucket_bytes = sync_bucket_bytes(sync_opts(cfg));

  t->ds = dataset_open(data_opts_of(cfg));
  t->rss_before_model = rss_now_bytes();
  t->dev_before_model = (double)t->be->device_used();
  char err[320];
  if (zoo_build(zoo_opts_of(cfg), dataset_sample_shape(t->ds), dataset_classes(t->ds), &t->g, err, sizeof err) != 0)
    surge_input_error("%s: [model] zoo = %s: %s (hint: check the [model] sizes)",
                      deck_where(deck, "model.zoo"), cfg->zoo, err);
  t->g.recompute = recompute_mode_of(cfg); /* the layouts' models plan it (nn/recompute.h) */
  layout_opts_t lo = layout_opts_of(cfg, deck);
  t->layout = layout_build(&lo, &t->g, t->be, world);
  const layout_t *l = t->layout; /* a sharded optimizer holds the state of this rank's shard only */
  if (l->sharded_state && l->update_ranges)
    optim_init_ranges(&t->opt, optim_opts_of(cfg), t->be, l->local->total, l->update_ranges, l->nupdate_ranges);
  else
    optim_init_shard(&t->opt, optim_opts_of(cfg), t->be, l->local->total, l->sharded_state ? l->update_lo : 0,
                     l->sharded_state ? l->update_hi : l->local->total);
  sampler_init_for(&t->sampler, t->ds, cfg->seed);
  t->ids = xcalloc((size_t)cfg->global_batch, sizeof *t->ids);
  t->rss_peak_steps = rss_peak_bytes(); /* a run without steps (resumed at its end): the set-up's */
  note_device_peak(t);
}

void trainer_free(trainer_t *t) {
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
  };
  return m;
}

/* A step whose loss or gradient norm is NaN or Inf ends the run with an error. */
static void check_finite(const trainer_t *t, const train_stats_t *s) {
  if (!isfinite(s->loss) || !isfinite(s->grad_norm))
    surge_runtime_error("step %ld: the %s is not finite (loss %g, gradient norm %g) (hint: lower [train] lr, "
                        "or set [train] clip_norm; the last checkpoint is untouched)",
                        t->step + 1, isfinite(s->loss) ? "gradient" : "loss", s->loss, s->grad_norm);
}

/* This rank's part of the update at rate lr, its seconds added to *update_s; with_norm: returns
 * this rank's part of the squared gradient norm from the update's own pass (else 0); gs: the
 * clipping factor the step applies to the gradients as it reads them (1: none). */
static double update_part(trainer_t *t, float lr, int with_norm, float gs, double *update_s) {
  layout_t *l = t->layout;
  ev_raise(EV_WORK, EV_UPDATE, 0);
  double u0 = surge_now(), part = 0;
  if (l->update_ranges)
    part = optim_step_ranges(&t->opt, l->m->params, l->m->grads, lr, gs, l->update_ranges, l->nupdate_ranges,
                             l->norm.ranges, l->norm.nranges, with_norm);
  else if (with_norm)
    part = norm_update(&t->opt, l->m->params, l->m->grads, lr, l->update_lo, l->update_hi, &l->norm);
  else
    optim_step_part(&t->opt, l->m->params, l->m->grads, lr, gs, l->update_lo, l->update_hi);
  *update_s += surge_now() - u0;
  return part;
}

train_stats_t trainer_step(trainer_t *t, int stop_request) {
  train_stats_t s;
  memset(&s, 0, sizeof s);
  layout_t *l = t->layout;
  const norm_plan_t *np = &l->norm;
  double t0 = surge_now();
  double targets = (double)t->cfg.global_batch * (double)t->g.targets_per_sample;
  ev_raise(EV_WORK, EV_STEP, 0);
  sampler_batch(&t->sampler, t->step, t->cfg.global_batch, t->ids);
  layout_step_t ls = {.stop = stop_request ? 1.0 : 0.0, .step = t->step};
  l->ops->step(l, t->ds, t->ids, (float)(1.0 / targets), &ls);
  if (np->sum == NORM_SUM_JOB && ls.summed)
    surge_runtime_error("the %s layout sums its metrics itself but leaves the norm to the job (a layout bug)", l->name);

  s.lr = lr_at(&t->opt.schedule, t->step);
  double update_s = 0, t1 = surge_now();
  /* this rank's part of the squared gradient norm (optim/norm.h): without clipping from the update's
   * own pass, before the metrics; with clipping apart, before the update, and summed first where
   * the layout sums it */
  double clip_norm = optim_opts(&t->cfg)->clip_norm;
  int clip = clip_norm > 0, at_updated = !clip && np->sum == NORM_SUM_LAYOUT;
  double part = clip ? norm_part(t->be, l->m->grads, l->update_lo, l->update_hi, np)
                     : update_part(t, (float)s.lr, 1, 1.0f, &update_s);
  if (clip && np->sum == NORM_SUM_LAYOUT) {
    ev_raise(EV_COLLECTIVE, EV_METRICS, 0);
    part = l->ops->norm_sum(l, part);
  }

  /* loss, the norm's parts and stop requests of every rank: summed by the layout on the gradient
   * reduction where it can, else here in one reduction */
  double sums[3] = {ls.loss, np->sum == NORM_SUM_JOB ? part : 0.0, ls.summed ? ls.stop : stop_request ? 1.0 : 0.0};
  if (!ls.summed && ls.idle) { /* a rank left out of the step waits here for the others' whole step */
    ev_raise(EV_WAIT, EV_METRICS, 0);
    comm_allreduce_sum_double_waiting(t->world, sums, 3, TRAFFIC_OTHER);
  } else if (!ls.summed) {
    ev_raise(EV_COLLECTIVE, EV_METRICS, 0);
    comm_allreduce_sum_double(t->world, sums, 3, TRAFFIC_OTHER);
  }
  s.stop = sums[2] > 0;
  s.loss = sums[0] / targets;
  s.grad_norm = sqrt(np->sum == NORM_SUM_JOB ? sums[1] : part); /* NaN or Inf when a gradient is */
  /* a norm from the update is checked after it: the parameters in memory are lost with the run,
   * the checkpoint is not; one the layout sums at `updated` is checked there */
  if (!at_updated) check_finite(t, &s);
  if (clip) /* the clipping factor is folded into the update: no pass of its own over the gradients */
    update_part(t, (float)s.lr, 0, clip_scale(s.grad_norm, clip_norm), &update_s);
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
