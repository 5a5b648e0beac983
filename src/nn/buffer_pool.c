/* The greedy assignment of tensors to shared buffers by their lives (buffer_pool.h). */
#include "nn/buffer_pool.h"

#include <stdlib.h>

#include "core/error.h"

/* The smallest free slot (free after its last phase, before lo) that holds `need`; else the largest
 * free one (it grows); else -1. */
static int pick(const size_t *floats, const int *free_after, int ns, int lo, size_t need) {
  int fit = -1, big = -1;
  for (int p = 0; p < ns; p++) {
    if (free_after[p] >= lo) continue;
    if (floats[p] >= need && (fit < 0 || floats[p] < floats[fit])) fit = p;
    if (big < 0 || floats[p] > floats[big]) big = p;
  }
  return fit >= 0 ? fit : big;
}

int buffer_pool_assign(int n, const int *lo, const int *hi, const size_t *need, int *slot_of, size_t *slot_floats) {
  int *order = xcalloc((size_t)n + 1, sizeof *order), *free_after = xcalloc((size_t)n + 1, sizeof *free_after);
  int nc = 0; /* the shared tensors, in the order their lives begin */
  for (int b = 0; b < n; b++) {
    slot_of[b] = -1;
    if (lo[b] >= 0) order[nc++] = b;
  }
  for (int a = 1; a < nc; a++) /* insertion sort by the life's start: a few hundred tensors at most */
    for (int c = a; c > 0 && lo[order[c]] < lo[order[c - 1]]; c--) {
      const int t = order[c];
      order[c] = order[c - 1];
      order[c - 1] = t;
    }
  int ns = 0;
  for (int c = 0; c < nc; c++) {
    const int b = order[c];
    int p = pick(slot_floats, free_after, ns, lo[b], need[b]);
    if (p < 0) {
      p = ns++;
      slot_floats[p] = 0;
    }
    if (need[b] > slot_floats[p]) slot_floats[p] = need[b];
    free_after[p] = hi[b];
    slot_of[b] = p;
  }
  free(order), free(free_after);
  return ns;
}
