/* Activations in shared buffers in a model that only runs forward (act_pool.h): nothing reads an
 * activation after its last consumer's forward, so a gpt holds a few at a time instead of one per
 * node. Evaluation and generation hold the parameters and little else. */
#include "nn/act_pool.h"

#include <stdlib.h>

#include "core/error.h"
#include "nn/buffer_pool.h"

/* Widen [*lo, *hi] to phase j (node j's forward). */
static void touch(int j, int *lo, int *hi) {
  if (*lo < 0 || j < *lo) *lo = j;
  if (j > *hi) *hi = j;
}

/* The life of the buffer node b owns: from its first writer (b, or the node fused into it, or the
 * node that runs b in its epilogue) to its last reader. */
static void life(const model_t *m, int b, int *lo, int *hi) {
  const graph_t *g = m->g;
  touch(b, lo, hi);
  if (m->epi[b] < 0) touch(-m->epi[b], lo, hi);
  for (int j = 1; j < g->n; j++) {
    if (m->fused[j] == b) touch(j, lo, hi);
    for (int k = 0; k < g->l[j].nin; k++)
      if (g->l[j].in[k] == b) touch(j, lo, hi);
  }
}

int act_pool_plan(const model_t *m, int *slot_of, size_t *slot_floats) {
  const graph_t *g = m->g;
  const int n = g->n, out = graph_output(g);
  int *lo = xcalloc((size_t)n, sizeof *lo), *hi = xcalloc((size_t)n, sizeof *hi);
  size_t *need = xcalloc((size_t)n, sizeof *need);
  for (int b = 0; b < n; b++) {
    lo[b] = hi[b] = -1;
    /* not the input (the batch is uploaded before the pass), the output (read after it), a node that
     * writes its ReLU's buffer, or a recomputed segment's (which shares buffers already) */
    if (b > 0 && b != out && m->fused[b] <= 0 && !m->shares[b] && !m->seg_first[b]) life(m, b, &lo[b], &hi[b]);
    need[b] = surge_mul_size((size_t)m->B_cap, shape_size(g->l[b].out), "activations");
  }
  const int ns = buffer_pool_assign(n, lo, hi, need, slot_of, slot_floats);
  free(lo), free(hi), free(need);
  return ns;
}
