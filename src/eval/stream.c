/* eval_stream: the loss of a token stream over windows x = ids[wT .. wT+T), y = ids[wT+1 .. wT+T+1)
 * (the last window partial, its missing targets left out), window w on rank w % size. */
#include <stdlib.h>

#include "core/error.h"
#include "eval/eval.h"

eval_lm_t eval_stream(scorer_t *s, const uint32_t *ids, size_t n, const uint32_t *bytes_per_id, comm_t *world) {
  size_t T = (size_t)s->T, windows = n > 1 ? (n - 2) / T + 1 : 0;
  int B = s->B;
  int32_t *x = xcalloc((size_t)B * T, sizeof *x), *y = xcalloc((size_t)B * T, sizeof *y);
  double *sum = xcalloc((size_t)B, sizeof *sum), tot[3] = {0, 0, 0}; /* nats, targets, bytes */
  long *count = xcalloc((size_t)B, sizeof *count);
  size_t mine = 0;
  for (size_t w = (size_t)world->rank; w < windows; w += (size_t)world->size) {
    for (size_t t = 0; t < T; t++) {
      size_t i = w * T + t;
      x[mine * T + t] = i < n ? (int32_t)ids[i] : 0;
      y[mine * T + t] = i + 1 < n ? (int32_t)ids[i + 1] : -1;
      if (i + 1 < n) tot[2] += bytes_per_id ? bytes_per_id[ids[i + 1]] : 1;
    }
    if (++mine == (size_t)B || w + (size_t)world->size >= windows) {
      scorer_rows(s, x, y, (int)mine, sum, count);
      for (size_t r = 0; r < mine; r++) tot[0] -= sum[r], tot[1] += (double)count[r];
      mine = 0;
    }
  }
  comm_allreduce_sum_double(world, tot, 3, TRAFFIC_OTHER);
  free(x);
  free(y);
  free(sum);
  free(count);
  return (eval_lm_t){.nats = tot[0], .targets = (long)tot[1], .bytes = tot[2]};
}
