#include "train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "nn/zoo.h"

void trainer_init(trainer_t *t, const config_t *cfg, const deck_t *deck) {
  memset(t, 0, sizeof *t);
  t->cfg = *cfg;
  t->be = backend_find(cfg->backend);
  if (!t->be) surge_input_error("%s: [backend] name: unknown backend '%s' (accepted: %s)",
                                deck_where(deck, "backend.name"), cfg->backend, backend_names());
  t->be->set_threads(cfg->threads);
  t->ds = dataset_open(cfg);

  char err[320];
  if (zoo_build(cfg, dataset_sample_shape(t->ds), dataset_classes(t->ds), &t->g, err, sizeof err) != 0)
    surge_input_error("%s: [model] zoo = %s: %s (hint: check the [model] sizes)",
                      deck_where(deck, "model.zoo"), cfg->zoo, err);

  if (cfg->global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg->global_batch);
  t->batch = (int)cfg->global_batch;
  model_init(&t->m, &t->g, t->be, t->batch);
  model_init_params(&t->m, cfg->seed);
  optim_init(&t->opt, cfg, t->be, t->g.params.total);
  sampler_init(&t->sampler, cfg->seed, dataset_size(t->ds, SPLIT_TRAIN));

  size_t xs = shape_size(dataset_sample_shape(t->ds));
  size_t ys = (size_t)dataset_targets_per_sample(t->ds);
  t->ids = xcalloc((size_t)t->batch, sizeof *t->ids);
  t->x = xcalloc(surge_mul_size((size_t)t->batch, xs, "input batch"), sizeof(float));
  t->y = xcalloc(surge_mul_size((size_t)t->batch, ys, "target batch"), sizeof(float));
}

void trainer_free(trainer_t *t) {
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

train_stats_t trainer_step(trainer_t *t) {
  train_stats_t s;
  memset(&s, 0, sizeof s);
  double t0 = surge_now();
  int B = t->batch;
  double targets = (double)t->cfg.global_batch * (double)t->g.targets_per_sample;

  sampler_batch(&t->sampler, t->step, t->cfg.global_batch, t->ids);
  dataset_get(t->ds, SPLIT_TRAIN, t->ids, B, t->x, t->y);
  model_set_batch(&t->m, t->x, t->y, B);
  double t1 = surge_now();

  model_zero_grads(&t->m);
  model_forward(&t->m, B);
  double loss_sum = model_loss(&t->m, 0, B, (float)(1.0 / targets));
  double t2 = surge_now();
  model_backward(&t->m, B);
  double t3 = surge_now();

  s.loss = loss_sum / targets;
  size_t n = t->g.params.total;
  s.grad_norm = clip_by_global_norm(t->be, t->m.grads, n, t->cfg.clip_norm); /* NaN/Inf if any is */
  if (!isfinite(s.loss) || !isfinite(s.grad_norm))
    surge_runtime_error("step %ld: the %s is not finite (loss %g, gradient norm %g) (hint: lower [train] lr, "
                        "or set [train] clip_norm)",
                        t->step + 1, isfinite(s.loss) ? "gradient" : "loss", s.loss, s.grad_norm);
  s.lr = lr_at(&t->cfg, t->step);
  optim_step(&t->opt, t->m.params, t->m.grads, (float)s.lr);
  t->step++;
  s.step = t->step;
  double t4 = surge_now();
  s.seconds = t4 - t0;
  s.data_sec = t1 - t0;
  s.forward_sec = t2 - t1;
  s.backward_sec = t3 - t2;
  s.optim_sec = t4 - t3;
  return s;
}

eval_stats_t trainer_eval(trainer_t *t) {
  eval_stats_t e;
  memset(&e, 0, sizeof e);
  uint64_t n = dataset_size(t->ds, SPLIT_TEST);
  double loss = 0, correct = 0;
  for (uint64_t lo = 0; lo < n; lo += (uint64_t)t->batch) {
    int B = (int)(n - lo < (uint64_t)t->batch ? n - lo : (uint64_t)t->batch);
    for (int i = 0; i < B; i++) t->ids[i] = lo + (uint64_t)i;
    dataset_get(t->ds, SPLIT_TEST, t->ids, B, t->x, t->y);
    model_set_batch(&t->m, t->x, t->y, B);
    model_forward(&t->m, B);
    loss += model_loss(&t->m, 0, B, 0.0f);
    correct += (double)model_correct(&t->m, 0, B);
  }
  double targets = (double)n * (double)t->g.targets_per_sample;
  e.samples = (long)n;
  e.loss = n ? loss / targets : 0;
  e.accuracy = n ? correct / targets : 0;
  return e;
}

float *trainer_params_host(const trainer_t *t) {
  size_t n = t->g.params.total;
  float *p = xmalloc(surge_mul_size(n ? n : 1, sizeof(float), "parameters"));
  t->be->download(p, t->m.params, n);
  return p;
}
