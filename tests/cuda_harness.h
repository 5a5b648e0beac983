/* The host harness of the CUDA kernels written as functions of (block, thread) (cuda_rows.h,
 * cuda_cols.h, cuda_ln_bwd.h, cuda_embed.h): a recording CE_STORE and the checks built on it. A test
 * includes this before the kernel headers, registers each output with track(), runs a kernel's
 * whole grid, then check_writes(): no store out of bounds, each element stored exactly once
 * (track_rows: only the first row_len of every ld elements; track_some: those marked; the rest
 * never). Header-only: tap.h keeps its counts in the test's own unit. */
#ifndef SURGE_TESTS_CUDA_HARNESS_H
#define SURGE_TESTS_CUDA_HARNESS_H

#include <stddef.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/rng.h"
#include "rel_diff.h"
#include "tap.h"

typedef struct tracked {
  const void *base;
  long long n, row_len, ld;
  const unsigned char *want; /* or NULL: which elements are stored (once), the rest never */
  int *count;
  long long out_of_bounds;
} tracked_t;

enum { MAX_TRACKED = 6 };
static tracked_t tracked[MAX_TRACKED];
static int ntracked;

static rng_t harness_rng; /* the tests' random numbers, seeded by harness_seed */

/* 1 and count the store of element i of the registered output at base; 0 (and the store is not
 * made) when i is out of its bounds. Ends the test on an unregistered output. */
static inline int ce_record(const void *base, long long i) {
  for (int t = 0; t < ntracked; t++)
    if (tracked[t].base == base) {
      if (i < 0 || i >= tracked[t].n) {
        tracked[t].out_of_bounds++;
        return 0;
      }
      tracked[t].count[i]++;
      return 1;
    }
  surge_runtime_error("cuda harness: a store to an unregistered output");
}

static inline void track_rows(const void *base, long long rows, long long row_len, long long ld);
static inline void track(const void *base, long long n) { track_rows(base, 1, n, n); }
static inline void track_rows(const void *base, long long rows, long long row_len, long long ld) {
  if (ntracked == MAX_TRACKED) surge_runtime_error("cuda harness: more than %d outputs", MAX_TRACKED);
  long long n = rows > 0 ? (rows - 1) * ld + row_len : 0;
  tracked[ntracked++] = (tracked_t){base, n, row_len, ld, NULL, xcalloc((size_t)(n ? n : 1), sizeof(int)), 0};
}

/* n elements at base, element i stored once where want[i], never elsewhere */
static inline void track_some(const void *base, long long n, const unsigned char *want) {
  track(base, n);
  tracked[ntracked - 1].want = want;
}


/* Every registered output as it should be (a TAP line each, named by what), then forgotten. */
static inline void check_writes(const char *what) {
  for (int t = 0; t < ntracked; t++) {
    long long unwritten = 0, again = 0, stray = 0;
    for (long long i = 0; i < tracked[t].n; i++) {
      const int c = tracked[t].count[i];
      if (i % tracked[t].ld >= tracked[t].row_len || (tracked[t].want && !tracked[t].want[i])) stray += c > 0;
      else unwritten += c == 0, again += c > 1;
    }
    tap_ok(unwritten == 0 && again == 0 && stray == 0 && tracked[t].out_of_bounds == 0,
           "%s: output %d: each of its elements written once (%lld unwritten, %lld more than once, %lld where none "
           "belongs, %lld stores out of bounds)",
           what, t, unwritten, again, stray, tracked[t].out_of_bounds);
    free(tracked[t].count);
  }
  ntracked = 0;
}

static inline void harness_seed(uint64_t seed) { rng_seed(&harness_rng, seed); }

static inline float *uniform(size_t n, float lo, float hi) {
  float *x = xmalloc((n ? n : 1) * sizeof *x);
  rng_fill_uniform(&harness_rng, x, n, lo, hi);
  return x;
}

/* A TAP line: ours within tol (relative, rel_diff.h) of want. */
static inline void agree(const float *ours, const float *want, size_t n, double tol, const char *what) {
  double e = rel_diff(ours, want, n);
  tap_ok(e <= tol, "%s: rel %.1e <= %.0e", what, e, tol);
}

#define CE_STORE(p, i, v) (ce_record((p), (long long)(i)) ? (void)((p)[i] = (v)) : (void)0)

#endif
