/* The segments of activation recomputation (nn/recompute.h): found from the graph's structure (a
 * GPT block is the run of nodes the zoo numbers as one block; an attention segment is an attention
 * node and its only consumer), checked to be self-contained, and matched form by form for the shared buffers. */
#include "nn/recompute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nn/zoo.h"

const char *recompute_name(int mode) {
  static const char *const names[] = {RECOMPUTE_NAMES};
  return mode >= 0 && mode <= RECOMPUTE_ATTENTION ? names[mode] : "?";
}

/* The gpt block number of node l, or -1 (the zoo owns the names). */
static int block_of(const layer_t *l) { return zoo_gpt_block_of(l->name); }

/* The candidate segments of the mode as pairs lo[s], hi[s]; returns how many. */
static int find_segments(const graph_t *g, int mode, int *lo, int *hi) {
  int n = 0;
  for (int i = 1; i < g->n; i++) {
    if (mode == RECOMPUTE_BLOCK && block_of(&g->l[i]) >= 0) {
      int j = i;
      while (j + 1 < g->n && block_of(&g->l[j + 1]) == block_of(&g->l[i])) j++;
      lo[n] = i, hi[n++] = j;
      i = j;
    } else if (mode == RECOMPUTE_ATTENTION && g->l[i].kind == LAYER_ATTENTION) {
      int c = graph_sole_consumer(g, i);
      if (c == i + 1) lo[n] = i, hi[n++] = c;
    }
  }
  return n;
}

/* Whether segment [lo, hi] can be dropped and re-run: 0, or -1 with the reason in err. */
static int check_segment(const graph_t *g, int lo, int hi, const int *fused, const int *epi,
                         int (*allowed)(void *, int, int), void *arg, char *err, size_t errlen) {
  const layer_t *L = g->l;
  if (hi <= lo) {
    snprintf(err, errlen, "'%s' has no interior to recompute", L[lo].name);
    return -1;
  }
  for (int j = lo; j < g->n; j++)
    for (int k = 0; k < L[j].nin; k++) {
      int p = L[j].in[k];
      if (j > hi && p >= lo && p < hi) {
        snprintf(err, errlen, "'%s' reads '%s' inside the segment '%s'..'%s'", L[j].name, L[p].name, L[lo].name,
                 L[hi].name);
        return -1;
      }
      if (j <= hi && p >= lo && allowed && !allowed(arg, p, j)) {
        snprintf(err, errlen, "'%s' and '%s' run on different samples (the burst plan's rank sets)", L[p].name,
                 L[j].name);
        return -1;
      }
    }
  for (int i = lo; i < hi; i++) {
    const char *why = L[i].nb || L[i].keep ? "keeps running state"
                      : fused[i] > 0 && fused[i] > hi - 1 ? "fuses a ReLU outside it"
                      : epi[i] > 0 && epi[i] >= hi ? "runs a node outside it in its epilogue"
                                                   : NULL;
    if (why) {
      snprintf(err, errlen, "'%s' %s", L[i].name, why);
      return -1;
    }
  }
  return 0;
}

/* Whether interior node a can use the buffers of node b: the same output, state and gradient. */
static int same_form(const graph_t *g, const int *fused, int a, int b) {
  const layer_t *x = &g->l[a], *y = &g->l[b];
  return x->kind == y->kind && shape_size(x->out) == shape_size(y->out) && x->aux_per_sample == y->aux_per_sample &&
         x->needs_grad == y->needs_grad && fused[a] == 0 && fused[b] == 0;
}

int recompute_plan(const graph_t *g, const int *fused, const int *epi, int (*allowed)(void *arg, int i, int j),
                   void *arg, int *first, int *share, char *err, size_t errlen) {
  memset(first, 0, (size_t)g->n * sizeof *first);
  memset(share, 0, (size_t)g->n * sizeof *share);
  if (g->recompute == RECOMPUTE_NONE) return 0;
  int *lo = xcalloc((size_t)g->n, sizeof *lo), *hi = xcalloc((size_t)g->n, sizeof *hi);
  int n = find_segments(g, g->recompute, lo, hi), bad = n == 0;
  if (bad)
    snprintf(err, errlen, "the model has no %s to recompute",
             g->recompute == RECOMPUTE_BLOCK ? "transformer block (nodes blocks.N.*)" : "attention layer");
  for (int s = 0; s < n && !bad; s++) {
    bad = check_segment(g, lo[s], hi[s], fused, epi, allowed, arg, err, errlen);
    first[hi[s]] = lo[s];
    /* the first earlier segment of the same form lends its interior's buffers */
    for (int t = 0; t < s && !bad; t++) {
      int len = hi[s] - lo[s], k = 0;
      if (hi[t] - lo[t] != len) continue;
      while (k < len && same_form(g, fused, lo[s] + k, lo[t] + k)) k++;
      if (k < len) continue;
      for (k = 0; k < len; k++) share[lo[s] + k] = share[lo[t] + k] ? share[lo[t] + k] : lo[t] + k;
      break;
    }
  }
  free(lo);
  free(hi);
  return bad ? -1 : n;
}
