#include "train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/profiler.h"
#include "core/error.h"
#include "core/timer.h"
#include "io/options.h"
#include "mux/mux.h"
#include "nn/zoo.h"
#include "train/plan_text.h"

/* Positions [lo, hi) of n items that rank r of R takes: contiguous, sizes differ by at most one. */
static void share(long n, int r, int R, long *lo, long *hi) {
  *lo = (long)((__int128)n * r / R);
  *hi = (long)((__int128)n * (r + 1) / R);
}

/* Burst mode: the plan is [parallel] plan (its errors name file:line) or, without one, searched at
 * start-up from [parallel] profile under [parallel] amplification (rank 0 prints its table). With
 * both, the profile predicts the plan file's costs. The trainer keeps the plan and its text for the log. */
static void burst_init(trainer_t *t) {
  const config_t *cfg = &t->cfg;
  burst_opts_t o = {.ranks = t->world->size, .batch = (int)cfg->global_batch, .amp = BURST_NO_LIMIT,
                    .policy = BURST_RANKS_DIVISORS};
  burst_profile_t prof;
  int profiled = cfg->profile_file[0] != 0;
  if (cfg->plan_file[0]) {
    burst_plan_read(cfg->plan_file, &t->g, cfg->zoo, &o, &t->plan);
    if (profiled) {
      burst_profile_read(cfg->profile_file, &t->g, cfg->zoo, &o, &prof);
      burst_plan_evaluate(&t->g, &prof, &o, &t->plan);
    }
    t->plan_text = plan_text_read(cfg->plan_file);
    plan_text_predictions(t->plan_text, &t->plan);
  } else {
    o.amp = cfg->amplification;
    burst_profile_read(cfg->profile_file, &t->g, cfg->zoo, &o, &prof);
    burst_plan_search(&t->g, &prof, &o, &t->plan);
    t->plan_text = plan_text_of(&t->g, cfg->zoo, &t->plan);
  }
  if (profiled) {
    if (t->world->rank == 0) {
      burst_plan_t dp;
      burst_plan_data_parallel(&t->g, &prof, &o, &dp);
      printf("burst plan from profile %s%s\n", cfg->profile_file, cfg->plan_file[0] ? " (evaluating the plan file)" : "");
      burst_plan_print(stdout, &t->g, &t->plan, &dp);
      burst_plan_free(&dp);
    }
    burst_profile_free(&prof);
  }
  t->burst = xcalloc(1, sizeof *t->burst);
  burst_exec_init(t->burst, &t->plan, &t->g, &t->m, t->world, o.batch, shape_size(dataset_sample_shape(t->ds)),
                  (size_t)dataset_targets_per_sample(t->ds));
}

void trainer_init(trainer_t *t, const config_t *cfg, const deck_t *deck, comm_t *world) {
  memset(t, 0, sizeof *t);
  t->cfg = *cfg;
  t->world = world;
  t->be = backend_find(cfg->backend);
  if (!t->be) surge_input_error("%s: [backend] name: unknown backend '%s' (accepted: %s)",
                                deck_where(deck, "backend.name"), cfg->backend, backend_names());
  t->be->set_threads(cfg->threads);
  if (cfg->global_batch < world->size)
    surge_input_error("%s: [train] global_batch = %ld is smaller than the %d ranks (hint: every rank needs "
                      "at least one sample: raise global_batch or use fewer ranks)",
                      deck_where(deck, "train.global_batch"), cfg->global_batch, world->size);
  if (cfg->global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg->global_batch);
  share(cfg->global_batch, world->rank, world->size, &t->lo, &t->hi);
  t->batch = (int)(t->hi - t->lo);
  world->bucket_bytes = (size_t)(cfg->bucket_mb * 1048576.0);
  if (world->bucket_bytes < sizeof(float)) world->bucket_bytes = sizeof(float);

  t->ds = dataset_open(data_opts_of(cfg));
  char err[320];
  if (zoo_build(zoo_opts_of(cfg), dataset_sample_shape(t->ds), dataset_classes(t->ds), &t->g, err, sizeof err) != 0)
    surge_input_error("%s: [model] zoo = %s: %s (hint: check the [model] sizes)",
                      deck_where(deck, "model.zoo"), cfg->zoo, err);
  int burst = strcmp(cfg->parallel_mode, "burst") == 0;
  model_init(&t->m, &t->g, t->be, burst ? (int)cfg->global_batch : t->batch);
  model_init_params(&t->m, cfg->seed);
  optim_init(&t->opt, optim_opts_of(cfg), t->be, t->g.params.total);
  sampler_init(&t->sampler, cfg->seed, dataset_size(t->ds, SPLIT_TRAIN));

  size_t xs = shape_size(dataset_sample_shape(t->ds));
  size_t ys = (size_t)dataset_targets_per_sample(t->ds);
  t->ids = xcalloc((size_t)cfg->global_batch, sizeof *t->ids);
  t->x = xcalloc(surge_mul_size((size_t)t->batch, xs, "input batch"), sizeof(float));
  t->y = xcalloc(surge_mul_size((size_t)t->batch, ys, "target batch"), sizeof(float));
  if (burst) burst_init(t);
}

void trainer_free(trainer_t *t) {
  if (t->burst) {
    burst_exec_free(t->burst);
    burst_plan_free(&t->plan);
  }
  free(t->burst);
  free(t->plan_text);
  free(t->ids);
  free(t->x);
  free(t->y);
  sampler_free(&t->sampler);
  optim_free(&t->opt);
  model_free(&t->m);
  graph_free(&t->g);
  dataset_close(t->ds);
  memset(t, 0, sizeof *t);
}

/* Foreground states outside the executor (mux/mux.h); sites apart from the executor's 4i+k. */
enum { SITE_STEP = 0x7fff0000, SITE_DP_SYNC, SITE_METRICS, SITE_UPDATE };

/* A background job's gate before a piece of work that is not a node (data, optimizer). */
static void gate(trainer_t *t) {
  if (t->m.before_node) t->m.before_node();
}

/* The end of a step on every rank: the mean loss, the finiteness check, the optimizer update. */
static void finish_step(trainer_t *t, train_stats_t *s, double loss_sum, double targets) {
  s->loss = loss_sum / targets;
  if (!isfinite(s->loss) || !isfinite(s->grad_norm))
    surge_runtime_error("step %ld: the %s is not finite (loss %g, gradient norm %g) (hint: lower [train] lr, "
                        "or set [train] clip_norm; the last checkpoint is untouched)",
                        t->step + 1, isfinite(s->loss) ? "gradient" : "loss", s->loss, s->grad_norm);
  s->lr = lr_at(&t->opt.schedule, t->step);
  mux_fg_set(MUX_COMPUTING, SITE_UPDATE);
  gate(t);
  optim_step(&t->opt, t->m.params, t->m.grads, (float)s->lr);
  t->step++;
  s->step = t->step;
}

/* A burst step: the executor runs the plan; the loss and the stop flag are summed over the world and
 * the gradient norm counts every node once. */
static train_stats_t burst_step(trainer_t *t, int stop_request) {
  train_stats_t s;
  memset(&s, 0, sizeof s);
  double t0 = surge_now();
  double targets = (double)t->cfg.global_batch * (double)t->g.targets_per_sample;
  sampler_batch(&t->sampler, t->step, t->cfg.global_batch, t->ids);
  mux_fg_set(MUX_COMPUTING, SITE_STEP);
  gate(t);
  burst_times_t bt;
  double loss_stop[2] = {burst_exec_step(t->burst, t->ds, t->ids, (float)(1.0 / targets), &bt),
                         stop_request ? 1.0 : 0.0};
  double t1 = surge_now();
  mux_fg_set(MUX_ALLREDUCE, SITE_METRICS);
  comm_allreduce_sum_double(t->world, loss_stop, 2, TRAFFIC_OTHER);
  s.stop = loss_stop[1] > 0;
  s.grad_norm = burst_exec_grad_norm(t->burst);
  double t2 = surge_now();
  clip_to_norm(t->be, t->m.grads, t->g.params.total, s.grad_norm, t->cfg.clip_norm);
  finish_step(t, &s, loss_stop[0], targets);
  double t3 = surge_now();
  s.seconds = t3 - t0;
  s.phase[PHASE_DATA] = bt.data;
  s.phase[PHASE_FORWARD] = bt.forward;
  s.phase[PHASE_BACKWARD] = bt.backward;
  s.phase[PHASE_WAIT] = bt.wait;
  s.phase[PHASE_COMM] = bt.comm + (t2 - t1);
  s.phase[PHASE_OPTIMIZER] = t3 - t2;
  return s;
}

train_stats_t trainer_step(trainer_t *t, int stop_request) {
  if (t->burst) return burst_step(t, stop_request);
  train_stats_t s;
  memset(&s, 0, sizeof s);
  double t0 = surge_now();
  int B = t->batch;
  double targets = (double)t->cfg.global_batch * (double)t->g.targets_per_sample;

  /* this rank's samples of the step's global batch */
  mux_fg_set(MUX_COMPUTING, SITE_STEP);
  gate(t);
  sampler_batch(&t->sampler, t->step, t->cfg.global_batch, t->ids);
  dataset_get(t->ds, SPLIT_TRAIN, t->ids + t->lo, B, t->x, t->y);
  model_set_batch(&t->m, t->x, t->y, B);
  double t1 = surge_now();

  model_zero_grads(&t->m);
  model_forward(&t->m, B);
  double loss_stop[2] = {model_loss(&t->m, 0, B, (float)(1.0 / targets)), stop_request ? 1.0 : 0.0};
  double t2 = surge_now();
  model_backward(&t->m, B);
  double t3 = surge_now();

  /* the gradient of the global loss: sum over ranks (waiting for the slowest rank apart) */
  size_t n = t->g.params.total;
  double t4 = t3, t5 = t3;
  if (t->world->size > 1) {
    mux_fg_set(MUX_ALLREDUCE, SITE_DP_SYNC); /* a data-parallel step has no idle layers */
    comm_barrier(t->world);
    t4 = surge_now();
    comm_allreduce_sum(t->world, t->m.grads, n, TRAFFIC_DP);
    comm_allreduce_sum_double(t->world, loss_stop, 2, TRAFFIC_OTHER);
    t5 = surge_now();
  }

  s.stop = loss_stop[1] > 0;
  s.grad_norm = clip_by_global_norm(t->be, t->m.grads, n, t->cfg.clip_norm); /* NaN/Inf if any is */
  finish_step(t, &s, loss_stop[0], targets);
  double t6 = surge_now();
  s.seconds = t6 - t0;
  s.phase[PHASE_DATA] = t1 - t0;
  s.phase[PHASE_FORWARD] = t2 - t1;
  s.phase[PHASE_BACKWARD] = t3 - t2;
  s.phase[PHASE_WAIT] = t4 - t3;
  s.phase[PHASE_COMM] = t5 - t4;
  s.phase[PHASE_OPTIMIZER] = t6 - t5;
  return s;
}

/* Burst mode evaluates with the data-parallel path on the true parameters: one parameter broadcast
 * per evaluation. */
eval_stats_t trainer_eval(trainer_t *t) {
  eval_stats_t e;
  memset(&e, 0, sizeof e);
  trainer_sync_replicas(t);
  uint64_t n = dataset_size(t->ds, SPLIT_TEST);
  long lo, hi;
  share((long)n, t->world->rank, t->world->size, &lo, &hi);
  double sums[2] = {0, 0}; /* loss, correct */
  for (long at = lo; at < hi; at += t->batch) {
    int B = (int)(hi - at < t->batch ? hi - at : t->batch);
    for (int i = 0; i < B; i++) t->ids[i] = (uint64_t)(at + i);
    dataset_get(t->ds, SPLIT_TEST, t->ids, B, t->x, t->y);
    model_set_batch(&t->m, t->x, t->y, B);
    model_forward(&t->m, B);
    sums[0] += model_loss(&t->m, 0, B, 0.0f);
    sums[1] += (double)model_correct(&t->m, 0, B);
  }
  if (t->world->size > 1) comm_allreduce_sum_double(t->world, sums, 2, TRAFFIC_OTHER);
  double targets = (double)n * (double)t->g.targets_per_sample;
  e.samples = (long)n;
  e.loss = n ? sums[0] / targets : 0;
  e.accuracy = n ? sums[1] / targets : 0;
  return e;
}

void trainer_sync_replicas(trainer_t *t) {
  if (!t->burst) return;
  float *slabs[3] = {t->m.params, t->opt.m, t->opt.v};
  burst_exec_gather(t->burst, slabs, 3);
}

float *trainer_params_host(trainer_t *t) {
  trainer_sync_replicas(t);
  size_t n = t->g.params.total;
  float *p = xmalloc(surge_mul_size(n ? n : 1, sizeof(float), "parameters"));
  t->be->download(p, t->m.params, n);
  return p;
}
