#include "gen/generate.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/timer.h"

gen_stats_t gen_run(gen_engine_t *e, const gen_batch_t *b, int tokens, int context, int vocab,
                    const gen_pick_opts_t *o, uint64_t seed) {
  int B = b->B, longest = 0;
  if (B != e->B) surge_runtime_error("gen_run: %d sequences on an engine of %d (a bug)", B, e->B);
  for (int s = 0; s < B; s++) {
    if (b->len[s] < 1 || b->len[s] + tokens > context)
      surge_runtime_error("gen_run: a prompt of %d tokens + %d does not fit the context %d (a bug)", b->len[s], tokens,
                          context);
    if (b->len[s] > longest) longest = b->len[s];
  }
  rng_t *rng = xcalloc((size_t)B, sizeof *rng);
  int *have = xcalloc((size_t)B, sizeof *have); /* tokens of sequence s known so far */
  for (int s = 0; s < B; s++) {
    rng_seed_stream(&rng[s], seed, b->stream[s], 0);
    have[s] = b->len[s];
    for (int j = 0; j < b->len[s]; j++) b->out[s][j] = b->prompt[s][j];
  }
  float *tok = xcalloc((size_t)B, sizeof *tok);
  float *logits = xcalloc(surge_mul_size((size_t)B, (size_t)e->V, "logits"), sizeof *logits);
  gen_pick_work_t w;
  gen_pick_work_init(&w, vocab);
  gen_stats_t st = {0};
  double t0 = surge_now();
  int steps = tokens > 0 ? longest + tokens - 1 : 0; /* the last new token is chosen, never fed */
  for (int pos = 0; pos < steps; pos++) {
    for (int s = 0; s < B; s++) tok[s] = (float)b->out[s][pos < have[s] ? pos : have[s] - 1];
    e->step(e, tok, pos, logits);
    for (int s = 0; s < B; s++)
      if (pos == have[s] - 1 && have[s] < b->len[s] + tokens) {
        b->out[s][have[s]] = gen_pick(logits + (size_t)s * e->V, vocab, o, &rng[s], &w);
        have[s]++;
      }
  }
  st.seconds = surge_now() - t0;
  st.steps = steps;
  st.tokens = (long)B * tokens;
  gen_pick_work_free(&w);
  free(logits), free(tok), free(have), free(rng);
  return st;
}
