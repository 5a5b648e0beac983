/* The CUDA embedding gradient by sorted positions run on the host (issue 32 items 2 and 5):
 * cuda_embed.h's launches, as cuda_kern_embed.cu makes them (ce_sort_plan), each block's threads
 * step by step between its barriers. Checked: every launch's pairs inside their run and the array,
 * the sorted keys equal to a stable counting sort's order of the positions by token (written here
 * as the plainest loops), the gradient's stores one per element of the rows of tokens present and
 * none elsewhere, and dwte bit for bit ref's embed_bwd (repeated tokens, tokens absent, tokens of
 * other shards, widths past a block's threads, positions past one block's sort). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cuda_harness.h" /* before the kernels: its CE_STORE records every store */
#include "backend/cuda_embed.h"

static const backend_t *ref = &backend_ref;

/* The keys sorted by ce_sort_plan's launches; returns 0 when some pair fell outside its run. */
static int run_sort(const float *idx, long long n, int lo, int V, unsigned long long *key) {
  ce_sort_plan_t p = ce_sort_plan(n);
  int inside = 1;
  unsigned long long *sh = xmalloc((size_t)p.L * sizeof *sh);
  while (ce_sort_plan_next(&p)) {
    if (p.j) {
      for (long long t = 0; t < p.n2 / 2; t++) {
        inside &= ce_pair_low(t, p.j) + p.j < p.n2;
        ce_sort_global_step(key, t, p.k, p.j);
      }
      continue;
    }
    for (long long b = 0; b < p.n2 / p.L; b++) {
      for (int t = 0; t < p.L / 2; t++) ce_sort_local_load(&p, b, t, key, idx, n, lo, V, sh);
      for (long long k = p.k_first; k <= p.k; k <<= 1)
        for (long long j = ce_sort_local_first_j(&p, k); j > 0; j >>= 1)
          for (int t = 0; t < p.L / 2; t++) {
            inside &= ce_pair_low(t, j) + j < p.L;
            ce_sort_local_step(&p, b, t, k, j, sh);
          }
      for (int t = 0; t < p.L / 2; t++) ce_sort_local_store(&p, b, t, sh, key);
    }
  }
  free(sh);
  return inside;
}

/* The positions of tokens in [lo, lo+V) by a stable counting sort: by row, each row's in order. */
static long long counting_sort(const float *idx, long long n, int lo, int V, long long *pos) {
  long long *start = xcalloc((size_t)V + 1, sizeof *start), placed = 0;
  for (long long i = 0; i < n; i++) {
    long row = ce_embed_row(idx[i], lo, V);
    if (row >= 0) start[row + 1]++;
  }
  for (int v = 0; v < V; v++) start[v + 1] += start[v];
  for (long long i = 0; i < n; i++) {
    long row = ce_embed_row(idx[i], lo, V);
    if (row >= 0) pos[start[row]++] = i, placed++;
  }
  free(start);
  return placed;
}

/* B x T positions of tokens drawn from [0, draw) (repeats when draw is small), the table holding ids
 * [lo, lo+V) of C columns. */
static void test_embed_bwd(int B, int T, int C, int draw, int lo, int V) {
  const long long n = (long long)B * T;
  float *idx = xmalloc((size_t)n * sizeof *idx), *dy = uniform((size_t)n * C, -1, 1);
  float *dwte = uniform((size_t)V * C, -1, 1), *want = xmalloc((size_t)V * C * sizeof *want);
  for (long long i = 0; i < n; i++) idx[i] = (float)rng_below(&harness_rng, (uint64_t)draw);
  memcpy(want, dwte, (size_t)V * C * sizeof *want);
  ref->embed_bwd(B, T, C, idx, lo, V, dy, want, NULL);
  char what[128];
  snprintf(what, sizeof what, "embed_bwd B=%d T=%d C=%d tokens<%d, rows [%d,%d)", B, T, C, draw, lo, lo + V);

  const long long n2 = ce_sort_size(n);
  unsigned long long *key = xmalloc((size_t)n2 * sizeof *key);
  long long *pos = xmalloc((size_t)n * sizeof *pos), mismatched = 0;
  const int inside = run_sort(idx, n, lo, V, key);
  tap_ok(inside, "%s: every sort step's pairs inside their run", what);
  const long long placed = counting_sort(idx, n, lo, V, pos);
  for (long long i = 0; i < n2; i++) {
    const unsigned long long w = i < placed ? (unsigned long long)ce_embed_row(idx[pos[i]], lo, V) << 32 | pos[i]
                                            : CE_SORT_NONE;
    mismatched += key[i] != w;
  }
  tap_ok(mismatched == 0, "%s: the sorted keys are the stable counting sort's order (%lld of %lld keys differ)", what,
         mismatched, n2);

  unsigned char *used = xcalloc((size_t)V * C, 1);
  for (long long i = 0; i < placed; i++)
    memset(used + (size_t)ce_embed_row(idx[pos[i]], lo, V) * C, 1, (size_t)C);
  track_some(dwte, (long long)V * C, used);
  const int threads = C < 256 ? ((C + 31) / 32) * 32 : 256; /* the launcher's */
  for (long long b = 0; b < n; b++)
    if (ce_embed_run_starts(key, b))
      for (int t = 0; t < threads; t++) ce_embed_run_add(key, b, n, C, dy, dwte, t, threads);
  check_writes(what);
  tap_ok(memcmp(dwte, want, (size_t)V * C * sizeof *want) == 0, "%s: dwte bit for bit ref's", what);
  free(idx), free(dy), free(dwte), free(want), free(key), free(pos), free(used);
}

int main(void) {
  harness_seed(32);
  test_embed_bwd(1, 1, 1, 1, 0, 1);
  test_embed_bwd(2, 7, 33, 5, 0, 9);       /* repeats; rows 5..8 absent */
  test_embed_bwd(3, 11, 300, 40, 10, 17);  /* a shard: tokens below and above it; C past 256 threads */
  test_embed_bwd(4, 512, 8, 3, 0, 3);      /* 2048 positions: one local launch, three long runs */
  test_embed_bwd(3, 1500, 20, 200, 50, 77); /* 4500 positions: global steps and local rests */
  return tap_done();
}
