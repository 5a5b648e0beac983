/* The even share rule: n items over `parts` parts, part k holds [n k / parts, n (k + 1) / parts).
 * Shares differ by at most one, and the rule depends on (n, k, parts) alone, so every rank that
 * computes another's share finds the same range. Products are 128-bit: exact for any n < 2^64.
 * Every split of a batch, a slab or a chunk list over ranks or micro-batches uses it (an evaluation's
 * walk over its share of a split: data/walk.h). */
#ifndef SURGE_SHARE_H
#define SURGE_SHARE_H

#include <stdint.h>

typedef struct share {
  uint64_t lo, hi; /* [lo, hi) */
} share_t;

/* Where part k of n items over `parts` starts (k = parts: n). parts >= 1, 0 <= k <= parts. */
static inline uint64_t share_start(uint64_t n, uint64_t k, uint64_t parts) {
  return (uint64_t)((unsigned __int128)n * k / parts);
}

/* Part k's range of n items over `parts`. */
static inline share_t share_of(uint64_t n, uint64_t k, uint64_t parts) {
  return (share_t){share_start(n, k, parts), share_start(n, k + 1, parts)};
}

#endif
