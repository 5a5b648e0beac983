#include "optim/norm.h"

#include <stdlib.h>

static int by_start(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

int norm_ranges_merge(size_t *r, int n) {
  qsort(r, (size_t)n, 2 * sizeof *r, by_start);
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (r[2 * i + 1] <= r[2 * i]) continue;
    if (k > 0 && r[2 * i] <= r[2 * k - 1]) {
      if (r[2 * i + 1] > r[2 * k - 1]) r[2 * k - 1] = r[2 * i + 1];
      continue;
    }
    r[2 * k] = r[2 * i];
    r[2 * k + 1] = r[2 * i + 1];
    k++;
  }
  return k;
}

void norm_part(const backend_t *be, const float *grads, size_t lo, size_t hi, const norm_plan_t *p, double *acc) {
  if (!p->ranges) {
    if (hi > lo) be->sumsq_add(grads + lo, hi - lo, acc);
    return;
  }
  for (int i = 0; i < p->nranges; i++) {
    size_t a = p->ranges[2 * i] > lo ? p->ranges[2 * i] : lo, b = p->ranges[2 * i + 1] < hi ? p->ranges[2 * i + 1] : hi;
    if (b > a) be->sumsq_add(grads + a, b - a, acc);
  }
}

void norm_update(optim_t *o, float *params, const float *grads, float lr, size_t lo, size_t hi, const norm_plan_t *p,
                 double *acc) {
  optim_step_part_sumsq(o, params, grads, lr, lo, hi, p->ranges, p->nranges, acc);
}
