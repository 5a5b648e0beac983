/* Activation gradients in shared buffers (model_pool_grads, model.h): a node's gradient is needed
 * only from the backward of its first consumer, which writes it whole (model_t.writer), to its own
 * backward, which reads it last; nodes whose spans do not overlap take turns in one buffer. A gpt's
 * block then holds a few gradients at a time instead of one per node. */
#include <stdlib.h>

#include "core/error.h"
#include "nn/model.h"

/* The first and last position of each node in the backward pass's list (-1: not in it). */
static void positions(int n, const int *bwd, int nbwd, int *first, int *last) {
  for (int i = 0; i < n; i++) first[i] = last[i] = -1;
  for (int e = 0; e < nbwd; e++) {
    const int i = bwd[e];
    if (i <= 0 || i >= n) surge_runtime_error("model_pool_grads: node %d in a backward pass of %d nodes", i, n);
    if (first[i] < 0) first[i] = e;
    last[i] = e;
  }
}

/* Widen [*lo, *hi] to node j's phases; 0 when j has none in the pass. */
static int touch(const int *first, const int *last, int j, int *lo, int *hi) {
  if (first[j] < 0) return 0;
  if (*lo < 0 || first[j] < *lo) *lo = first[j];
  if (last[j] > *hi) *hi = last[j];
  return 1;
}

/* The span of node b's gradient buffer in the pass: every phase of a node that writes it (its
 * consumers), reads it (b; a node fused with b, its ReLU, whose gradient b's buffer is; the node
 * that runs b in its epilogue, a linear its GELU), or writes it as its own (that linear). 0 when
 * one of them does not run in the pass (nothing then says when the buffer is free). */
static int span(const model_t *m, const int *first, const int *last, int b, int *lo, int *hi) {
  const graph_t *g = m->g;
  int ok = touch(first, last, b, lo, hi);
  if (m->epi[b] < 0) ok &= touch(first, last, -m->epi[b], lo, hi);
  for (int j = 1; j < g->n; j++) {
    if (m->fused[j] == b) ok &= touch(first, last, j, lo, hi);
    for (int k = 0; k < g->l[j].nin; k++)
      if (g->l[j].in[k] == b) ok &= touch(first, last, j, lo, hi);
  }
  return ok && *lo >= 0;
}

/* Whether node b's gradient may share a buffer: its own (not its fused node's), overwritten by its
 * first consumer, not the output's (the loss writes it, in forward), not inside a recomputed
 * segment (whose interiors share their buffers already, zeroed when re-filled), and read through
 * the model's wiring only (no staged slot of a layout's). */
static int poolable(const model_t *m, const int *interior, int b) {
  const graph_t *g = m->g;
  if (!m->dact[b] || m->fused[b] > 0 || !m->writer[b] || b == graph_output(g) || interior[b]) return 0;
  for (int j = 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++)
      if (g->l[j].in[k] == b && m->din[j][k] != m->dact[b]) return 0;
  return 1;
}

typedef struct slot {
  size_t floats; /* the most any of its nodes needs */
  int free_after; /* the last phase of its latest node */
} slot_t;

/* The smallest free slot (free after its last phase, before lo) that holds `need`; else the largest
 * free one (it grows); else -1. */
static int pick(const slot_t *s, int ns, int lo, size_t need) {
  int fit = -1, big = -1;
  for (int p = 0; p < ns; p++) {
    if (s[p].free_after >= lo) continue;
    if (s[p].floats >= need && (fit < 0 || s[p].floats < s[fit].floats)) fit = p;
    if (big < 0 || s[p].floats > s[big].floats) big = p;
  }
  return fit >= 0 ? fit : big;
}

int model_pool_grads(model_t *m, const int *bwd, int nbwd) {
  const graph_t *g = m->g;
  const int n = g->n;
  if (m->pooled) surge_runtime_error("model_pool_grads: called twice");
  int *interior = xcalloc((size_t)n, sizeof *interior); /* nodes lo..hi-1 of a recomputed segment */
  for (int hi = 1; hi < n; hi++)
    for (int i = m->seg_first[hi]; i > 0 && i < hi; i++) interior[i] = 1;
  int *first = xcalloc((size_t)n, sizeof *first), *last = xcalloc((size_t)n, sizeof *last);
  int *lo = xcalloc((size_t)n, sizeof *lo), *hi = xcalloc((size_t)n, sizeof *hi);
  int *slot_of = xcalloc((size_t)n, sizeof *slot_of), *order = xcalloc((size_t)n, sizeof *order);
  slot_t *slots = xcalloc((size_t)n, sizeof *slots);
  positions(n, bwd, nbwd, first, last);
  int nc = 0; /* candidates, in the order their spans begin */
  for (int b = 1; b < n; b++) {
    lo[b] = hi[b] = -1;
    slot_of[b] = -1;
    if (poolable(m, interior, b) && span(m, first, last, b, &lo[b], &hi[b])) order[nc++] = b;
  }
  for (int a = 1; a < nc; a++) /* insertion sort by the span's start: a few hundred nodes at most */
    for (int c = a; c > 0 && lo[order[c]] < lo[order[c - 1]]; c--) {
      const int t = order[c];
      order[c] = order[c - 1];
      order[c - 1] = t;
    }
  int ns = 0;
  for (int c = 0; c < nc; c++) {
    const int b = order[c];
    const size_t need = surge_mul_size((size_t)m->B_cap, shape_size(g->l[b].out), "activation gradients");
    int p = pick(slots, ns, lo[b], need);
    if (p < 0) p = ns++;
    if (need > slots[p].floats) slots[p].floats = need;
    slots[p].free_after = hi[b];
    slot_of[b] = p;
  }
  m->pooled = xcalloc((size_t)n, sizeof *m->pooled);
  m->pool = xcalloc((size_t)(ns ? ns : 1), sizeof *m->pool);
  m->npool = ns;
  for (int p = 0; p < ns; p++) {
    m->pool[p] = m->be->alloc(slots[p].floats);
    m->act_floats += slots[p].floats;
  }
  for (int c = 0; c < nc; c++) {
    const int b = order[c];
    float *own = m->dact[b], *shared = m->pool[slot_of[b]];
    for (int j = 1; j < n; j++) { /* the wiring and the fused node that read the old buffer */
      if (m->dact[j] == own) m->dact[j] = shared;
      for (int k = 0; k < g->l[j].nin; k++)
        if (m->din[j][k] == own) m->din[j][k] = shared;
    }
    m->be->free(own);
    m->act_floats -= (size_t)m->B_cap * shape_size(g->l[b].out);
    m->pooled[b] = 1;
  }
  free(interior), free(first), free(last), free(lo), free(hi), free(slot_of), free(order), free(slots);
  return nc;
}
