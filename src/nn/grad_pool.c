/* Activation gradients in shared buffers (model_init_on's order, model.h): a node's gradient is
 * needed only from the backward of its first consumer, which writes it whole (model_t.writer), to
 * its own backward, which reads it last; nodes whose spans do not overlap take turns in one buffer.
 * A gpt then holds a few gradients at a time instead of one per node. A residual add's inputs may take the add's
 * own buffer (grad_alias.h). */
#include "nn/grad_pool.h"

#include <stdlib.h>

#include "core/error.h"
#include "nn/buffer_pool.h"
#include "nn/grad_alias.h"

/* The first and last position of each node in the backward pass's list (-1: not in it). */
static void positions(int n, const int *bwd, int nbwd, int *first, int *last) {
  for (int i = 0; i < n; i++) first[i] = last[i] = -1;
  for (int e = 0; e < nbwd; e++) {
    const int i = bwd[e];
    if (i <= 0 || i >= n) surge_runtime_error("a layout's backward order names node %d of a graph of %d nodes", i, n);
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

/* Whether node b's gradient may share a buffer: overwritten by its first consumer (model_t.writer:
 * so a gradient the model allocates, of a node not fused into its ReLU, whose consumers all run on
 * its samples and none is staged), not the output's (the loss writes it, in forward), and not
 * inside a recomputed segment (whose interiors share their buffers already, zeroed when
 * re-filled). */
static int poolable(const model_t *m, const int *interior, int b) {
  return m->writer[b] && b != graph_output(m->g) && !interior[b];
}

int grad_pool_plan(const model_t *m, const int *bwd, int nbwd, int *slot_of, size_t *slot_floats) {
  const graph_t *g = m->g;
  const int n = g->n;
  int *interior = xcalloc((size_t)n, sizeof *interior); /* nodes lo..hi-1 of a recomputed segment */
  for (int hi = 1; hi < n; hi++)
    for (int i = m->seg_first[hi]; i > 0 && i < hi; i++) interior[i] = 1;
  int *first = xcalloc((size_t)n, sizeof *first), *last = xcalloc((size_t)n, sizeof *last);
  int *lo = xcalloc((size_t)n, sizeof *lo), *hi = xcalloc((size_t)n, sizeof *hi);
  size_t *need = xcalloc((size_t)n, sizeof *need);
  positions(n, bwd, nbwd, first, last);
  for (int b = 0; b < n; b++) {
    lo[b] = hi[b] = -1;
    if (b > 0 && poolable(m, interior, b) && !span(m, first, last, b, &lo[b], &hi[b])) lo[b] = -1;
    need[b] = surge_mul_size((size_t)m->B_cap, shape_size(g->l[b].out), "activation gradients");
  }
  int *group = xcalloc((size_t)n, sizeof *group);
  grad_alias_plan(m, first, last, lo, hi, group);
  for (int b = 0; b < n; b++)
    if (group[b] != b) { /* in another's buffer: its span and size are that one's */
      if (need[b] > need[group[b]]) need[group[b]] = need[b];
      lo[b] = -1;
    }
  const int ns = buffer_pool_assign(n, lo, hi, need, slot_of, slot_floats);
  for (int b = 0; b < n; b++)
    if (group[b] != b) slot_of[b] = slot_of[group[b]];
  free(interior), free(first), free(last), free(lo), free(hi), free(need), free(group);
  return ns;
}
