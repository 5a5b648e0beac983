/* The engine without a cache: step pos builds the model for pos + 1 positions on the parameters
 * uploaded once, runs its whole forward on every sequence's tokens 0..pos and keeps the logits of
 * position pos. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gen/engine.h"
#include "nn/model.h"

typedef struct full_engine {
  gen_engine_t base;
  const gen_model_t *gm;
  const backend_t *be;
  float *params;         /* the backend slab the per-step models share (forward only: no gradients): on a
                          * host backend the model's own (gen_model_t.params) */
  float *tokens;         /* (B, context) host: the tokens fed so far */
  float *x, *y;          /* (B, context) host: one step's batch (tokens 0..pos) and zero targets */
} full_engine_t;

static void full_step(gen_engine_t *base, const float *tok, int pos, float *logits) {
  full_engine_t *e = (full_engine_t *)base;
  int B = base->B, Tm = e->gm->context, L = pos + 1;
  if (pos < 0 || pos >= Tm) surge_runtime_error("position %d outside the context %d (a bug)", pos, Tm);
  for (int b = 0; b < B; b++) {
    e->tokens[(size_t)b * Tm + pos] = tok[b];
    memcpy(e->x + (size_t)b * L, e->tokens + (size_t)b * Tm, (size_t)L * sizeof *e->x);
  }
  graph_t g;
  gen_model_graph(e->gm, L, &g);
  model_t m;
  model_init_forward(&m, &g, e->be, B, e->params);
  model_set_batch(&m, e->x, e->y, B);
  model_forward(&m, B);
  const float *out = m.act[graph_output(&g)]; /* (B, L, V) */
  for (int b = 0; b < B; b++)
    e->be->download(logits + (size_t)b * base->V, out + ((size_t)b * L + pos) * base->V, (size_t)base->V);
  model_free(&m);
  graph_free(&g);
}

static void full_free(gen_engine_t *base) {
  full_engine_t *e = (full_engine_t *)base;
  if (e->params != e->gm->params) e->be->free(e->params);
  free(e->tokens), free(e->x), free(e->y);
  free(e);
}

gen_engine_t *gen_engine_full(const gen_model_t *gm, const backend_t *be, int B) {
  full_engine_t *e = xcalloc(1, sizeof *e);
  e->base = (gen_engine_t){.name = "full", .B = B, .V = gm->vocab_out, .step = full_step, .free = full_free};
  e->gm = gm;
  e->be = be;
  /* a host backend reads the model's own slab in place; a device gets a copy */
  e->params = be->host_memory ? gm->params : be->alloc(gm->g.params.total);
  if (!be->host_memory) be->upload(e->params, gm->params, gm->g.params.total);
  size_t n = surge_mul_size((size_t)B, (size_t)gm->context, "token buffer");
  e->tokens = xcalloc(n, sizeof *e->tokens);
  e->x = xcalloc(n, sizeof *e->x);
  e->y = xcalloc(n, sizeof *e->y);
  return &e->base;
}

gen_engine_t *gen_engine_open(const char *name, const gen_model_t *m, const backend_t *be, int B, int positions) {
  if (!strcmp(name, "cache")) return gen_engine_cache(m, be, B, positions, GEN_WEIGHTS16 | GEN_KV16);
  if (!strcmp(name, "full")) return gen_engine_full(m, be, B);
  return NULL;
}
