#include "train/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/model_file.h"
#include "train/progress.h"
#include "train/train.h"

/* mkdir -p without a shell: deck values never reach one. */
static void make_dirs(const char *path) {
  char buf[CFG_STR + 1];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char c = *p;
      *p = 0;
      if (mkdir(buf, 0775) != 0 && errno != EEXIST)
        surge_input_error("cannot create the output directory %s: %s (hint: set [run] out_dir)", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
}

static void report_setup(const trainer_t *t) {
  if (surge_rank() != 0) return;
  printf("model %s: %zu parameters, %.2f MFLOP forward per sample, %d nodes\n", t->cfg.zoo,
         t->g.params.total, graph_flops_per_sample(&t->g) / 1e6, t->g.n);
  graph_print(&t->g, stdout);
  printf("data %s: %llu training samples, %llu %s samples; global batch %ld; backend %s (%d thread%s)\n",
         dataset_name(t->ds), (unsigned long long)dataset_size(t->ds, SPLIT_TRAIN),
         (unsigned long long)dataset_size(t->ds, SPLIT_TEST), dataset_is_tokens(t->ds) ? "validation" : "test",
         t->cfg.global_batch, t->be->name, t->cfg.threads, t->cfg.threads == 1 ? "" : "s");
  fflush(stdout);
}

int train_run(const config_t *cfg, const deck_t *deck) {
  char model_path[CFG_STR + 32];
  snprintf(model_path, sizeof model_path, "%s/model.h5", cfg->out_dir);
  struct stat st;
  if (stat(model_path, &st) == 0 && !cfg->overwrite)
    surge_input_error("%s exists: a finished run is never overwritten (hint: another [run] name or out_dir, "
                      "or -D run.overwrite=true)", model_path);

  trainer_t t;
  trainer_init(&t, cfg, deck);
  report_setup(&t);
  make_dirs(cfg->out_dir);

  progress_t p;
  progress_init(&p, cfg->steps, cfg->global_batch, cfg->print_every);
  int tokens = dataset_is_tokens(t.ds);
  eval_stats_t e = {0};
  int evaluated_last = 0;
  while (t.step < cfg->steps) {
    train_stats_t s = trainer_step(&t);
    progress_step(&p, &s);
    evaluated_last = 0;
    if (cfg->eval_every > 0 && t.step % cfg->eval_every == 0) {
      e = trainer_eval(&t);
      progress_eval(&p, t.step, &e, tokens);
      evaluated_last = 1;
    }
  }
  if (!evaluated_last) {
    e = trainer_eval(&t);
    progress_eval(&p, t.step, &e, tokens);
  }

  char *deck_text = deck_resolved_text(cfg);
  float *params = trainer_params_host(&t);
  if (surge_rank() == 0) model_file_write(model_path, &t.g, params, t.step, cfg->zoo, deck_text);
  free(params);
  free(deck_text);

  char dur[32];
  progress_format_duration(p.run_sec, dur, sizeof dur);
  if (surge_rank() == 0) {
    printf("done: %ld steps in %s (%.1f ms/step, %.0f samples/s)\n", t.step, dur,
           t.step ? 1e3 * p.run_sec / (double)t.step : 0.0,
           p.run_sec > 0 ? (double)(t.step * cfg->global_batch) / p.run_sec : 0.0);
    if (tokens)
      printf("final validation loss %.4f nats/byte\n", e.loss);
    else
      printf("final test accuracy %.2f%%\n", 100.0 * e.accuracy);
    printf("output: %s (final parameters and resolved deck; inspect with h5ls -r %s)\n", model_path, model_path);
  }
  trainer_free(&t);
  return 0;
}
