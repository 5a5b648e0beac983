#include "data/walk.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/share.h"

void data_walk(const dataset_t *ds, data_split_t split, uint64_t n, uint64_t k, uint64_t parts, int window,
               data_chunk_fn fn, void *ctx, double sums[2]) {
  share_t s = share_of(n, k, parts);
  uint64_t w = (uint64_t)window;
  uint64_t *ids = xcalloc((size_t)window, sizeof *ids);
  sums[0] = sums[1] = 0;
  int c = 0;
  for (uint64_t at = s.lo; at < s.hi; at += w, c++) {
    int B = (int)(s.hi - at < w ? s.hi - at : w);
    for (int i = 0; i < B; i++) ids[i] = at + (uint64_t)i;
    fn(ctx, ds, split, ids, B, c, sums);
  }
  free(ids);
}
