/* What the host kernel harnesses (tests/test_cuda_rows.c, tests/test_cuda_attention.c) share: random
 * inputs, the comparison with ref, and the recording store: a kernel header's CE_STORE, defined here
 * before it is included, records every store to global memory. Outputs are registered with their length (track); a store
 * counts once per element and is refused (not made) out of bounds; check_writes then asks that each
 * element was written exactly once and nothing out of bounds, and forgets the outputs. */
#ifndef SURGE_TESTS_KERNEL_HARNESS_H
#define SURGE_TESTS_KERNEL_HARNESS_H

#include <stdlib.h>

#include "core/error.h"
#include "core/rng.h"
#include "rel_diff.h"
#include "tap.h"

#define TOL 1e-5 /* relative, against ref */

static rng_t rng;

static void agree(const float *ours, const float *want, size_t n, const char *what) {
  double e = rel_diff(ours, want, n);
  tap_ok(e <= TOL, "%s: rel %.1e <= %.0e", what, e, TOL);
}

static float *uniform(size_t n, float lo, float hi) {
  float *x = xmalloc((n ? n : 1) * sizeof *x);
  rng_fill_uniform(&rng, x, n, lo, hi);
  return x;
}

typedef struct tracked {
  const void *base;
  long long n;
  int *count;
  long long out_of_bounds;
} tracked_t;

enum { MAX_TRACKED = 3 };
static tracked_t tracked[MAX_TRACKED];
static int ntracked;

static int ce_record(const void *base, long long i) {
  for (int t = 0; t < ntracked; t++)
    if (tracked[t].base == base) {
      if (i < 0 || i >= tracked[t].n) {
        tracked[t].out_of_bounds++;
        return 0;
      }
      tracked[t].count[i]++;
      return 1;
    }
  surge_runtime_error("kernel harness: a store to an unregistered output");
}

#define CE_STORE(p, i, v) (ce_record((p), (long long)(i)) ? (void)((p)[i] = (v)) : (void)0)

static void track(const void *base, long long n) {
  if (ntracked == MAX_TRACKED) surge_runtime_error("kernel harness: more than %d outputs", MAX_TRACKED);
  tracked[ntracked++] = (tracked_t){base, n, xcalloc((size_t)(n ? n : 1), sizeof(int)), 0};
}

/* Every registered output written exactly once per element, nothing out of bounds; then forgotten. */
static void check_writes(const char *what) {
  for (int t = 0; t < ntracked; t++) {
    long long unwritten = 0, again = 0;
    for (long long i = 0; i < tracked[t].n; i++) unwritten += tracked[t].count[i] == 0, again += tracked[t].count[i] > 1;
    tap_ok(unwritten == 0 && again == 0 && tracked[t].out_of_bounds == 0,
           "%s: output %d: each of %lld elements written once (%lld unwritten, %lld more than once, %lld stores out of "
           "bounds)", what, t, tracked[t].n, unwritten, again, tracked[t].out_of_bounds);
    free(tracked[t].count);
  }
  ntracked = 0;
}

#endif
