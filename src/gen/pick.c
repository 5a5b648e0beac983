#include "gen/pick.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"

void gen_pick_work_init(gen_pick_work_t *w, int V) {
  w->V = V;
  w->ranked = xcalloc(V > 0 ? (size_t)V : 1, sizeof *w->ranked);
}

void gen_pick_work_free(gen_pick_work_t *w) {
  free(w->ranked);
  w->ranked = NULL;
}

static int argmax_first(const float *x, int V) {
  int best = 0;
  for (int j = 1; j < V; j++)
    if (x[j] > x[best]) best = j;
  return best;
}

/* Most likely first; equal logits by id. */
static int by_likelihood(const void *pa, const void *pb) {
  const struct gen_ranked *a = pa, *b = pb;
  if (a->logit != b->logit) return a->logit > b->logit ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

int gen_pick(const float *logits, int V, const gen_pick_opts_t *o, rng_t *r, gen_pick_work_t *w) {
  if (V < 1 || V > w->V) surge_runtime_error("gen_pick: %d logits for scratch of %d (a bug)", V, w->V);
  if (!(o->temperature > 0)) return argmax_first(logits, V);
  struct gen_ranked *c = w->ranked;
  for (int j = 0; j < V; j++) c[j] = (struct gen_ranked){logits[j], j};
  int n = V;
  int ranked = (o->top_k > 0 && o->top_k < V) || o->top_p < 1.0;
  if (ranked) qsort(c, (size_t)V, sizeof *c, by_likelihood);
  if (o->top_k > 0 && o->top_k < n) n = o->top_k;
  float mx = ranked ? c[0].logit : logits[argmax_first(logits, V)];
  double inv_t = 1.0 / o->temperature, total = 0.0;
  for (int j = 0; j < n; j++) total += exp((double)(c[j].logit - mx) * inv_t);
  if (o->top_p < 1.0) { /* the shortest most-likely prefix holding top_p of the mass */
    double keep = o->top_p * total, cum = 0.0;
    int m = 0;
    while (m < n && (m == 0 || cum < keep)) cum += exp((double)(c[m++].logit - mx) * inv_t);
    n = m;
    total = cum;
  }
  double u = (double)rng_uniform(r) * total, cum = 0.0;
  for (int j = 0; j < n; j++) {
    cum += exp((double)(c[j].logit - mx) * inv_t);
    if (u < cum) return c[j].id;
  }
  return c[n - 1].id; /* u rounded up to the total */
}
