/* The CUDA embedding gradient by positions sorted by token (cuda_kern_embed.cu), as functions of
 * (block, thread) that compile for the GPU and for the host; tests/test_cuda_embed runs every launch
 * on the host through them.
 *
 * dwte's row v is the sum of dy over the positions holding token lo + v, in position order, in
 * double, rounded once when added (ref's embed_bwd). Instead of every row reading every position,
 * the positions are sorted by token first: each position's key is (row << 32 | position), or
 * CE_SORT_NONE for a token outside [lo, lo+V); the keys are distinct, so sorting them gives exactly
 * a stable counting sort's order (by token, each token's positions in order), with no histogram over
 * the vocabulary and no atomics. The sort is a bitonic network over n2 = the power of two at or
 * above the positions (the rest CE_SORT_NONE): stages k = 2, 4, .. n2, each of steps j = k/2 .. 1
 * comparing keys i and i + j (i & j = 0) into ascending order where i & k = 0, descending elsewhere.
 * Steps with j < CE_SORT_LOCAL / 2 stay inside an aligned run of CE_SORT_LOCAL keys, which one
 * block sorts in shared memory; ce_sort_plan lists the launches. Then one block per sorted position:
 * the first of each token's run adds that run's dy rows, in order, into the token's row of dwte
 * (rows of tokens absent are not touched). */
#ifndef SURGE_BACKEND_CUDA_EMBED_H
#define SURGE_BACKEND_CUDA_EMBED_H

#include "backend/cuda_rows.h"

enum { CE_SORT_LOCAL = 2048 }; /* keys one block sorts in shared memory (CE_SORT_LOCAL / 2 threads) */
#define CE_SORT_NONE (~0ULL)   /* the key of a position whose token is not in this table */

CE_FN unsigned long long ce_embed_key(const float *idx, long long pos, long long n, int lo, int V) {
  if (pos >= n) return CE_SORT_NONE;
  const long row = ce_embed_row(idx[pos], lo, V);
  return row >= 0 ? ((unsigned long long)row << 32) | (unsigned long long)pos : CE_SORT_NONE;
}
CE_FN long long ce_key_row(unsigned long long key) { return (long long)(key >> 32); }
CE_FN long long ce_key_position(unsigned long long key) { return (long long)(key & 0xffffffffULL); }

/* n2: the power of two at or above n (2 at least) */
CE_FN long long ce_sort_size(long long n) {
  long long n2 = 2;
  while (n2 < n) n2 <<= 1;
  return n2;
}

/* ---- the launches: ce_sort_plan_next moves p to the next one (0: none left). j > 0: a global
 * step (k, j), n2 / 2 threads; j == 0: a local launch, n2 / L blocks of L / 2 threads, running stages
 * k_first .. k with their steps j < L (the first local launch reads the keys from the ids). */
typedef struct ce_sort_plan {
  long long n2, L, k_first, k, j;
} ce_sort_plan_t;

CE_FN ce_sort_plan_t ce_sort_plan(long long n) {
  ce_sort_plan_t p;
  p.n2 = ce_sort_size(n);
  p.L = p.n2 < CE_SORT_LOCAL ? p.n2 : CE_SORT_LOCAL;
  p.k_first = p.k = p.j = 0;
  return p;
}

CE_FN int ce_sort_plan_next(ce_sort_plan_t *p) {
  if (p->k == 0) { /* the first: stages 2 .. L in shared memory */
    p->k_first = 2, p->k = p->L, p->j = 0;
    return 1;
  }
  if (p->j == 0) { /* after a local launch: the next stage's first global step */
    if (p->k >= p->n2) return 0;
    p->k <<= 1, p->k_first = p->k, p->j = p->k / 2;
    return 1;
  }
  p->j >>= 1; /* the next global step, or, below L, the stage's local rest */
  if (p->j < p->L) p->j = 0;
  return 1;
}

/* The lower key of thread t's pair at step j, and the compare-exchange of keys i and l into
 * ascending (up) or descending order. */
CE_FN long long ce_pair_low(long long t, long long j) { return (t / j) * 2 * j + t % j; }
CE_FN void ce_sort_exchange(unsigned long long *key, long long i, long long l, int up) {
  const unsigned long long a = key[i], b = key[l];
  if (up ? a > b : a < b) key[i] = b, key[l] = a;
}

/* global step (k, j), thread t < n2 / 2 */
CE_FN void ce_sort_global_step(unsigned long long *key, long long t, long long k, long long j) {
  const long long i = ce_pair_low(t, j);
  ce_sort_exchange(key, i, i + j, (i & k) == 0);
}

/* local launch, block b: thread t (< L / 2) loads (from the ids on the first launch) and, after every
 * step, stores its two keys i = t and t + L / 2 of the block's run sh */
CE_FN void ce_sort_local_load(const ce_sort_plan_t *p, long long b, int t, const unsigned long long *key,
                              const float *idx, long long n, int lo, int V, unsigned long long *sh) {
  for (long long i = t; i < p->L; i += p->L / 2)
    sh[i] = p->k_first == 2 ? ce_embed_key(idx, b * p->L + i, n, lo, V) : key[b * p->L + i];
}
/* one step (k, j) of block b, thread t (between the block's barriers) */
CE_FN void ce_sort_local_step(const ce_sort_plan_t *p, long long b, int t, long long k, long long j,
                              unsigned long long *sh) {
  const long long i = ce_pair_low(t, j);
  ce_sort_exchange(sh, i, i + j, ((b * p->L + i) & k) == 0);
}
CE_FN long long ce_sort_local_first_j(const ce_sort_plan_t *p, long long k) { return (k < p->L ? k : p->L) / 2; }
CE_FN void ce_sort_local_store(const ce_sort_plan_t *p, long long b, int t, const unsigned long long *sh,
                               unsigned long long *key) {
  for (long long i = t; i < p->L; i += p->L / 2) key[b * p->L + i] = sh[i];
}

/* ---- the gradient: block b < n (a sorted position) works when it starts a token's run; thread t of
 * `threads` takes the columns c = t, t + threads, .. of that token's row */
CE_FN int ce_embed_run_starts(const unsigned long long *key, long long b) {
  return key[b] != CE_SORT_NONE && (b == 0 || ce_key_row(key[b - 1]) != ce_key_row(key[b]));
}
CE_FN void ce_embed_run_add(const unsigned long long *key, long long b, long long n, int C, const float *dy,
                            float *dwte, int t, int threads) {
  const long long v = ce_key_row(key[b]);
  for (int c = t; c < C; c += threads) {
    double acc = 0.0;
    for (long long j = b; j < n && ce_key_row(key[j]) == v; j++) acc += dy[ce_key_position(key[j]) * C + c];
    CE_STORE(dwte, v * C + c, (float)((double)dwte[v * C + c] + acc));
  }
}

#endif
