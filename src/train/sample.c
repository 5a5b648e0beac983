#include "train/sample.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gen/engine.h"
#include "gen/generate.h"
#include "gen/model.h"
#include "gen/vocab.h"
#include "io/strbuf.h"
#include "train/state.h"

/* /samples: one row per sample, its text (written as gen_vocab_printable writes it). */
static const log_column_decl_t sample_column = {
    {"text", "text",
     "the sample: [run] sample_tokens tokens after one start token, decoded (bytes, or the tokenizer's text; ids in "
     "brackets without one), control characters and invalid UTF-8 escaped"},
    LOG_VALUE_TEXT,
    0,
};

log_rows_t *trainer_sample_log(const trainer_t *t, run_log_t *log) {
  if (t->cfg.sample_every <= 0) return NULL;
  log_group_decl_t d = {.path = "/samples", .feature = "samples", .each_step = 0, .ncolumns = 1,
                        .column = &sample_column};
  return run_log_rows(log, &d);
}

int trainer_samples_after(const trainer_t *t, long step, int last) {
  long every = t->cfg.sample_every;
  return every > 0 && (last || step % every == 0);
}

static int start_token(const gen_vocab_t *v) {
  if (v->bpe && v->bpe->eot >= 0) return v->bpe->eot;
  return v->bytes ? '\n' : 0;
}

void trainer_sample(trainer_t *t, log_rows_t *samples, progress_t *p) {
  int root = t->world->rank == 0;
  gen_model_t m;
  if (root) gen_model_build(&m, &t->cfg, NULL, dataset_classes(t->ds));
  trainer_params_on_root(t, root ? m.params : NULL);
  if (!root) return;
  gen_vocab_t v;
  gen_vocab_open(&v, &t->cfg, NULL, NULL);
  int n = (int)t->cfg.sample_tokens, first = start_token(&v), *out = xcalloc((size_t)n + 1, sizeof *out);
  const int *prompt[1] = {&first}, len[1] = {1};
  int *dst[1] = {out};
  uint64_t stream[1] = {0}; /* surge-sample's first sample: MODEL --ids START --seed SEED gives it again */
  gen_batch_t b = {.B = 1, .prompt = prompt, .len = len, .stream = stream, .out = dst};
  gen_pick_opts_t pick = {.temperature = 1.0, .top_p = 1.0};
  /* no bfloat16 copy of the weights: it would hold half the parameters' memory again beside the run's own
   * state (the run's peak matters more than a short sample's speed); the cache in bfloat16 where it can be,
   * which holds less */
  gen_engine_t *e = gen_engine_cache(&m, t->be, 1, n + 1, GEN_KV16);
  gen_stats_t st = gen_run(e, &b, n, m.context, m.classes, &pick, t->cfg.seed);
  e->free(e);
  uint32_t *ids = xcalloc((size_t)n, sizeof *ids);
  for (int i = 0; i < n; i++) ids[i] = (uint32_t)out[i + 1];
  char *text = gen_vocab_printable(&v, ids, (size_t)n);
  free(ids);
  strbuf_t line = STRBUF_INIT;
  sb_printf(&line, "sample at step %ld (%d tokens, %.0f tokens/s): %s", t->step, n,
            st.seconds > 0 ? n / st.seconds : 0.0, text);
  progress_note(p, sb_str(&line));
  const void *row[1] = {&text};
  run_log_append(samples, t->step, row);
  sb_free(&line);
  free(text), free(out);
  gen_vocab_free(&v);
  gen_model_free(&m);
}
