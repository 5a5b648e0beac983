/* Generation (src/gen): the key/value cache gives the logits of recomputing the whole context at
 * every token (cpu and ref, a vocabulary with padding), so greedy generation is the same token for
 * token; it holds the positions the steps reach, and in bf16 its bfloat16 form gives the bits of its
 * float form in half the bytes; a sample does not depend on the batch it is generated in; and the
 * choice of a token (greedy, temperature, top-k, top-p) follows its definition. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "gen/engine.h"
#include "gen/generate.h"
#include "gen/model.h"
#include "gen/pick.h"
#include "io/deck.h"
#include "nn/model.h"
#include "tap.h"

/* 2 blocks of width 32, 4 heads, context 12; a vocabulary of 200 padded to 256 */
static const char deck_text[] = "[model]\nzoo = gpt\ngpt_layers = 2\ngpt_width = 32\ngpt_heads = 4\n"
                                "gpt_context = 12\ngpt_vocab_multiple = 128\n[data]\nsource = tokens\n"
                                "vocab_size = 200\n";
enum { VOCAB = 200, CONTEXT = 12, B = 3 };

static void make_model(gen_model_t *m) {
  config_t cfg;
  deck_t *deck;
  deck_parse(deck_text, "test deck", 0, NULL, &cfg, &deck);
  gen_model_build(m, &cfg, deck, VOCAB);
  graph_init_params(&m->g, 7, m->params);
  /* larger weights than GPT-2's 0.02 so the logits differ clearly between tokens and positions */
  for (size_t i = 0; i < m->g.params.total; i++) m->params[i] *= 10.0f;
  deck_free(deck);
}

/* Step both engines through the same tokens: the logits agree at every position. */
static void test_logits(const gen_model_t *m, const backend_t *be) {
  gen_engine_t *c = gen_engine_cache(m, be, B, CONTEXT, GEN_WEIGHTS16 | GEN_KV16), *f = gen_engine_full(m, be, B);
  tap_ok(c->V == 256 && f->V == 256, "%s: the engines give the padded vocabulary's 256 logits", be->name);
  float tok[B], *lc = malloc(sizeof(float) * B * 256), *lf = malloc(sizeof(float) * B * 256);
  double worst = 0, scale = 0;
  int argmax_same = 1;
  for (int pos = 0; pos < CONTEXT; pos++) {
    for (int b = 0; b < B; b++) tok[b] = (float)((pos * 37 + b * 101 + 5) % VOCAB);
    c->step(c, tok, pos, lc);
    f->step(f, tok, pos, lf);
    for (int b = 0; b < B; b++) {
      int ac = 0, af = 0;
      for (int v = 0; v < VOCAB; v++) {
        double d = fabs((double)lc[b * 256 + v] - lf[b * 256 + v]);
        if (d > worst) worst = d;
        if (fabs(lf[b * 256 + v]) > scale) scale = fabs(lf[b * 256 + v]);
        if (lc[b * 256 + v] > lc[b * 256 + ac]) ac = v;
        if (lf[b * 256 + v] > lf[b * 256 + af]) af = v;
      }
      argmax_same = argmax_same && ac == af;
    }
  }
  tap_ok(scale > 0.1 && worst <= 1e-5 * scale, "%s: cached logits = recomputed ones at all %d positions of %d "
         "sequences (max diff %.1e, logits up to %.2f)", be->name, CONTEXT, B, worst, scale);
  tap_ok(argmax_same, "%s: the most likely token is the same at every position", be->name);
  free(lc), free(lf);
  c->free(c), f->free(f);
}

/* Generate with prompts of different lengths on an engine. */
static void generate(const gen_model_t *m, const backend_t *be, const char *engine, int nseq, const uint64_t *streams,
                     const gen_pick_opts_t *o, int out[][CONTEXT]) {
  static const int p0[] = {3, 1, 4, 1, 5}, p1[] = {9}, p2[] = {2, 7, 1};
  const int *all[] = {p0, p1, p2}, lens[] = {5, 1, 3};
  const int *prompt[B];
  int len[B], *dst[B], longest = 0;
  for (int s = 0; s < nseq; s++) {
    prompt[s] = all[streams[s]];
    len[s] = lens[streams[s]];
    dst[s] = out[s];
    if (len[s] > longest) longest = len[s];
  }
  /* the cache engine holds exactly the positions the steps reach (the last token chosen is not fed): 2 layers'
   * keys and values of width 32, floats */
  const int positions = longest + CONTEXT - 5 - 1;
  gen_engine_t *e = gen_engine_open(engine, m, be, nseq, positions);
  const size_t bytes = strcmp(engine, "cache") ? 0 : (size_t)2 * 2 * nseq * positions * 32 * sizeof(float);
  gen_batch_t batch = {.B = nseq, .prompt = prompt, .len = len, .stream = streams, .out = dst};
  gen_stats_t st = gen_run(e, &batch, CONTEXT - 5, CONTEXT, VOCAB, o, 11);
  tap_ok(st.tokens == (long)nseq * (CONTEXT - 5) && st.steps == longest + CONTEXT - 5 - 1 && e->cache_bytes == bytes,
         "%s %s: %ld new tokens in %ld steps, a cache of %zu bytes", be->name, engine, st.tokens, st.steps,
         e->cache_bytes);
  e->free(e);
}

static int same_rows(int a[][CONTEXT], int b[][CONTEXT], int n, const int *lens) {
  for (int s = 0; s < n; s++)
    if (memcmp(a[s], b[s], sizeof(int) * (size_t)(lens[s] + CONTEXT - 5))) return 0;
  return 1;
}

static void test_generation(const gen_model_t *m, const backend_t *be) {
  uint64_t streams[B] = {0, 1, 2};
  const int lens[B] = {5, 1, 3};
  int c[B][CONTEXT], f[B][CONTEXT];
  gen_pick_opts_t greedy = {.temperature = 0, .top_p = 1};
  generate(m, be, "cache", B, streams, &greedy, c);
  generate(m, be, "full", B, streams, &greedy, f);
  tap_ok(same_rows(c, f, B, lens), "%s: greedy generation with the cache = recomputing the whole context, token "
         "for token (prompts of 5, 1 and 3 tokens)", be->name);
  int distinct = 0;
  for (int j = 1; j < CONTEXT; j++) distinct += c[1][j] != c[1][j - 1];
  tap_ok(distinct > 0, "%s: the greedy sample is not one token repeated (%d changes)", be->name, distinct);
  gen_pick_opts_t warm = {.temperature = 1.0, .top_k = 50, .top_p = 0.95};
  generate(m, be, "cache", B, streams, &warm, c);
  generate(m, be, "full", B, streams, &warm, f);
  tap_ok(same_rows(c, f, B, lens), "%s: sampled with top-k and top-p: the same samples on both engines", be->name);
  /* sample 2 alone, then samples 0 and 1 together: the same as in the batch of three */
  int one[B][CONTEXT], two[B][CONTEXT];
  generate(m, be, "cache", 1, streams + 2, &warm, one);
  generate(m, be, "cache", 2, streams, &warm, two);
  tap_ok(!memcmp(one[0], c[2], sizeof(int) * 10) && same_rows(two, c, 2, lens),
         "%s: a sample does not depend on the batch it is generated in", be->name);
}

static void test_pick(void) {
  const float l[6] = {0.5f, 2.0f, 1.0f, 2.0f, -1.0f, 0.0f};
  gen_pick_work_t w;
  gen_pick_work_init(&w, 6);
  rng_t r;
  rng_seed(&r, 3);
  gen_pick_opts_t g = {.temperature = 0, .top_p = 1};
  tap_ok(gen_pick(l, 6, &g, &r, &w) == 1, "greedy: the first of two maxima");
  gen_pick_opts_t k1 = {.temperature = 1, .top_k = 1, .top_p = 1}, p0 = {.temperature = 5, .top_p = 1e-6};
  int ok1 = 1, ok2 = 1;
  for (int i = 0; i < 200; i++) {
    ok1 = ok1 && gen_pick(l, 6, &k1, &r, &w) == 1;
    ok2 = ok2 && gen_pick(l, 6, &p0, &r, &w) == 1;
  }
  tap_ok(ok1 && ok2, "top-k 1 and a tiny top-p keep only the most likely token (the lower id of a tie)");
  /* top-k 3: ids 1, 3, 2 only, in proportion e^2 : e^2 : e^1 */
  gen_pick_opts_t k3 = {.temperature = 1, .top_k = 3, .top_p = 1};
  int count[6] = {0}, N = 40000;
  for (int i = 0; i < N; i++) count[gen_pick(l, 6, &k3, &r, &w)]++;
  double z = 2 * exp(2.0) + exp(1.0), e1 = N * exp(2.0) / z, e2 = N * exp(1.0) / z;
  tap_ok(count[0] + count[4] + count[5] == 0 && fabs(count[1] - e1) < 4 * sqrt(e1) &&
             fabs(count[3] - e1) < 4 * sqrt(e1) && fabs(count[2] - e2) < 4 * sqrt(e2),
         "top-k 3: only the 3 most likely, as often as softmax says (%d %d %d of %d; expected %.0f %.0f %.0f)",
         count[1], count[3], count[2], N, e1, e1, e2);
  /* top-p 0.8 at temperature 1: the two 2.0s hold 0.61 of the mass, with the 1.0 0.83: three kept */
  gen_pick_opts_t p8 = {.temperature = 1, .top_p = 0.8};
  memset(count, 0, sizeof count);
  for (int i = 0; i < N; i++) count[gen_pick(l, 6, &p8, &r, &w)]++;
  tap_ok(count[0] + count[4] + count[5] == 0 && count[1] > 0 && count[2] > 0 && count[3] > 0,
         "top-p 0.8: the smallest set reaching 0.8 (ids 1, 3, 2), nothing else");
  /* a high temperature flattens: every token appears; the plain draw follows softmax(l / 2) */
  gen_pick_opts_t t2 = {.temperature = 2, .top_p = 1};
  memset(count, 0, sizeof count);
  for (int i = 0; i < N; i++) count[gen_pick(l, 6, &t2, &r, &w)]++;
  double zz = 0, worst = 0;
  for (int j = 0; j < 6; j++) zz += exp(l[j] / 2.0);
  for (int j = 0; j < 6; j++) {
    double e = N * exp(l[j] / 2.0) / zz;
    worst = fmax(worst, fabs(count[j] - e) / sqrt(e));
  }
  tap_ok(worst < 4.5, "temperature 2: every token as often as softmax(l / 2) says (worst %.1f sigma)", worst);
  rng_t a, b;
  rng_seed(&a, 9), rng_seed(&b, 9);
  int same = 1;
  for (int i = 0; i < 100; i++) same = same && gen_pick(l, 6, &t2, &a, &w) == gen_pick(l, 6, &t2, &b, &w);
  tap_ok(same, "the same stream draws the same tokens");
  gen_pick_work_free(&w);
}

/* precision = bf16: the cache held in bfloat16 (kv16, where the context allows it) gives the bits of the cache
 * in floats at every position, as it should, its products rounding the keys and values anyway. */
static void test_kv16(const gen_model_t *m, const backend_t *be) {
  gen_engine_t *e[2] = {gen_engine_cache(m, be, B, CONTEXT, 0), gen_engine_cache(m, be, B, CONTEXT, GEN_KV16)};
  tap_ok(!e[0]->kv16 && e[1]->kv16 == be->context()->kv16 && e[1]->kv16 && 2 * e[1]->cache_bytes == e[0]->cache_bytes,
         "%s in bf16: the cache is held in bfloat16 when asked (kv16), in half the bytes (%zu against %zu), and in "
         "floats when not", be->name, e[1]->cache_bytes, e[0]->cache_bytes);
  float tok[B], *l[2] = {malloc(sizeof(float) * B * 256), malloc(sizeof(float) * B * 256)};
  int same = 1;
  for (int pos = 0; pos < CONTEXT; pos++) {
    for (int b = 0; b < B; b++) tok[b] = (float)((pos * 37 + b * 101 + 5) % VOCAB);
    for (int k = 0; k < 2; k++) e[k]->step(e[k], tok, pos, l[k]);
    same &= !memcmp(l[0], l[1], sizeof(float) * B * 256);
  }
  tap_ok(same, "%s in bf16: the cache in bfloat16 gives the logits of the cache in floats, bit for bit, at all %d "
         "positions", be->name, CONTEXT);
  for (int k = 0; k < 2; k++) free(l[k]), e[k]->free(e[k]);
}

int main(void) {
  gen_model_t m;
  make_model(&m);
  tap_ok(m.vocab_out == 256 && m.context == CONTEXT, "the model: %d logits (200 padded to 256), context %d",
         m.vocab_out, m.context);
  const backend_t *bes[2] = {&backend_cpu, &backend_ref};
  for (int i = 0; i < 2; i++) {
    int input_error;
    backend_options_t bo = backend_default_options();
    const char *why = bes[i]->open(&bo, &input_error);
    if (why) return tap_ok(0, "%s opens: %s", bes[i]->name, why), 1;
    test_logits(&m, bes[i]);
    test_generation(&m, bes[i]);
  }
  for (int i = 0; i < 2; i++) {
    int input_error;
    backend_options_t bo = backend_default_options();
    bo.precision = BACKEND_BF16;
    const char *why = bes[i]->open(&bo, &input_error);
    if (why) tap_skip("%s in bf16: %s", bes[i]->name, why);
    else test_kv16(&m, bes[i]);
  }
  test_pick();
  gen_model_free(&m);
  return tap_done();
}
