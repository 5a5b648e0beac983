/* The BPE trainer: distinct pieces with counts; pair counts kept up to date merge by merge, each
 * pair remembering the pieces it occurs in; the most frequent pair from a max-heap whose stale
 * entries (counts that fell) are re-pushed with their count when they surface. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/pieces.h"
#include "tok/train.h"

typedef struct pair {
  uint64_t count;            /* sum of the counts of the pieces, once per occurrence */
  uint32_t *piece;           /* pieces it may occur in (repeats and stale ones allowed) */
  size_t n, cap;
} pair_t;

typedef struct trainer {
  bpe_t *b;
  pieces_t p;                /* the distinct pieces; len: a piece's symbols (merges shorten it) */
  uint32_t **sym;            /* (pieces) each piece's tokens */
  u64map_t pair_index;       /* (a << 32 | b) -> pair + 1 */
  pair_t *pairs;
  size_t npairs, cap_pairs;
  struct top { uint64_t count, key; } *heap;
  size_t nheap, cap_heap;
  uint32_t *stamp;           /* (pieces) the merge that last visited a piece */
} trainer_t;

/* ---- the pieces' symbols */

static void count_pieces(trainer_t *t, const file_list_t *docs, MPI_Comm comm, train_stats_t *st) {
  pieces_count(&t->p, docs, comm);
  st->bytes = t->p.text_bytes;
  st->distinct = t->p.n;
  for (size_t i = 0; i < t->p.n; i++) st->pieces += t->p.count[i];
  t->sym = xmalloc((t->p.n ? t->p.n : 1) * sizeof *t->sym);
  for (size_t i = 0; i < t->p.n; i++) {
    t->sym[i] = xmalloc(t->p.len[i] * sizeof **t->sym);
    for (uint32_t k = 0; k < t->p.len[i]; k++) t->sym[i][k] = (uint32_t)t->b->byte_id[t->p.bytes[t->p.off[i] + k]];
  }
  free(t->p.bytes);
  t->p.bytes = NULL;
}

/* ---- pairs and the heap */

static int above(const struct top *x, const struct top *y) { return x->count != y->count ? x->count > y->count : x->key < y->key; }

static void heap_push(trainer_t *t, uint64_t count, uint64_t key) {
  if (t->nheap == t->cap_heap) {
    t->cap_heap = t->cap_heap ? 2 * t->cap_heap : 4096;
    t->heap = xrealloc(t->heap, t->cap_heap * sizeof *t->heap);
  }
  struct top c = {count, key};
  size_t i = t->nheap++;
  for (; i > 0 && above(&c, &t->heap[(i - 1) / 2]); i = (i - 1) / 2) t->heap[i] = t->heap[(i - 1) / 2];
  t->heap[i] = c;
}

static struct top heap_pop(trainer_t *t) {
  struct top top = t->heap[0], last = t->heap[--t->nheap];
  size_t i = 0;
  for (size_t c; (c = 2 * i + 1) < t->nheap; i = c) {
    if (c + 1 < t->nheap && above(&t->heap[c + 1], &t->heap[c])) c++;
    if (!above(&t->heap[c], &last)) break;
    t->heap[i] = t->heap[c];
  }
  if (t->nheap) t->heap[i] = last;
  return top;
}

static pair_t *pair_of(trainer_t *t, uint64_t key, int create) {
  uint64_t *slot = create ? u64map_put(&t->pair_index, key) : u64map_get(&t->pair_index, key);
  if (!slot) return NULL;
  if (!*slot) {
    if (t->npairs == t->cap_pairs) {
      t->cap_pairs = t->cap_pairs ? 2 * t->cap_pairs : 4096;
      t->pairs = xrealloc(t->pairs, t->cap_pairs * sizeof *t->pairs);
    }
    t->pairs[t->npairs] = (pair_t){0};
    *slot = ++t->npairs;
  }
  return &t->pairs[*slot - 1];
}

static void remember(pair_t *p, uint32_t piece) {
  if (p->n && p->piece[p->n - 1] == piece) return;
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 4;
    p->piece = xrealloc(p->piece, p->cap * sizeof *p->piece);
  }
  p->piece[p->n++] = piece;
}

static uint64_t key_of(uint32_t a, uint32_t b) { return (uint64_t)a << 32 | b; }

/* Add sign * count of piece i to each of its pairs; on adding, the pairs with id `fresh` remember
 * the piece. */
static void tally(trainer_t *t, uint32_t i, int sign, uint32_t fresh) {
  const uint32_t *s = t->sym[i];
  for (uint32_t k = 0; k + 1 < t->p.len[i]; k++) {
    pair_t *p = pair_of(t, key_of(s[k], s[k + 1]), sign > 0);
    if (sign > 0) {
      p->count += t->p.count[i];
      if (s[k] == fresh || s[k + 1] == fresh) remember(p, i);
    } else {
      p->count -= t->p.count[i];
    }
  }
}

/* Merge every (a, b) of piece i, left to right. Returns whether it held one. */
static int merge_in(trainer_t *t, uint32_t i, uint32_t a, uint32_t b, uint32_t joined) {
  uint32_t *s = t->sym[i], n = t->p.len[i], w = 0;
  int found = 0;
  for (uint32_t r = 0; r < n; r++) {
    if (r + 1 < n && s[r] == a && s[r + 1] == b) {
      s[w++] = joined, r++, found = 1;
    } else {
      s[w++] = s[r];
    }
  }
  t->p.len[i] = w;
  return found;
}

static void merge_pair(trainer_t *t, uint64_t key, uint32_t joined, uint32_t step) {
  uint32_t a = (uint32_t)(key >> 32), b = (uint32_t)key;
  pair_t *pp = pair_of(t, key, 0);
  uint32_t *list = pp->piece; /* detached: tally may grow the pair table */
  size_t n = pp->n;
  pp->piece = NULL, pp->n = pp->cap = 0;
  for (size_t k = 0; k < n; k++) {
    uint32_t i = list[k];
    if (t->stamp[i] == step) continue;
    t->stamp[i] = step;
    uint32_t len = t->p.len[i];
    uint32_t *s = t->sym[i];
    int holds = 0;
    for (uint32_t r = 0; r + 1 < len && !holds; r++) holds = s[r] == a && s[r + 1] == b;
    if (!holds) continue;
    tally(t, i, -1, joined);
    merge_in(t, i, a, b, joined);
    tally(t, i, +1, joined);
  }
  /* the pairs with the new token: pushed with their counts (the only counts that grew) */
  for (size_t k = 0; k < n; k++) {
    uint32_t i = list[k];
    if (t->stamp[i] != step) continue;
    t->stamp[i] = step + 1; /* once per piece */
    const uint32_t *s = t->sym[i];
    for (uint32_t r = 0; r + 1 < t->p.len[i]; r++)
      if (s[r] == joined || s[r + 1] == joined) {
        uint64_t pk = key_of(s[r], s[r + 1]);
        heap_push(t, pair_of(t, pk, 0)->count, pk);
      }
  }
  free(list);
}

static void init_pairs(trainer_t *t) {
  u64map_init(&t->pair_index);
  for (uint32_t i = 0; i < t->p.n; i++) {
    const uint32_t *s = t->sym[i];
    for (uint32_t k = 0; k + 1 < t->p.len[i]; k++) {
      pair_t *p = pair_of(t, key_of(s[k], s[k + 1]), 1);
      p->count += t->p.count[i];
      remember(p, i);
    }
  }
  for (size_t i = 0; i < t->pair_index.cap; i++)
    if (t->pair_index.used[i]) heap_push(t, t->pairs[t->pair_index.vals[i] - 1].count, t->pair_index.keys[i]);
  t->stamp = xcalloc(t->p.n ? t->p.n : 1, sizeof *t->stamp);
}

static void trainer_free(trainer_t *t) {
  for (size_t i = 0; i < t->p.n; i++) free(t->sym[i]);
  free(t->sym);
  pieces_free(&t->p);
  for (size_t i = 0; i < t->npairs; i++) free(t->pairs[i].piece);
  free(t->pairs);
  u64map_free(&t->pair_index);
  free(t->heap);
  free(t->stamp);
}

bpe_t *bpe_train(const file_list_t *docs, const train_opts_t *o, MPI_Comm comm, train_stats_t *st) {
  if (o->vocab_size < TRAIN_VOCAB_MIN || o->vocab_size > BPE_VOCAB_MAX)
    surge_input_error("--vocab-size %d must be %d .. %d (the 256 bytes, the merges, end of text)", o->vocab_size,
                      TRAIN_VOCAB_MIN, BPE_VOCAB_MAX);
  if (o->min_frequency < 1) surge_input_error("--min-frequency must be at least 1");
  *st = (train_stats_t){0};
  trainer_t t = {.b = bpe_new_bytes()};
  count_pieces(&t, docs, comm, st);
  int rank;
  MPI_Comm_rank(comm, &rank);
  if (rank != 0) {
    trainer_free(&t);
    bpe_free(t.b);
    return NULL;
  }
  init_pairs(&t);
  uint32_t step = 2; /* stamps: step, step + 1 per merge */
  while (t.b->n < o->vocab_size - 1 && t.nheap) {
    struct top top = heap_pop(&t);
    uint64_t now = pair_of(&t, top.key, 0)->count;
    if (now != top.count) { /* stale: the count fell since it was pushed */
      if (now > 0) heap_push(&t, now, top.key);
      continue;
    }
    if (now < o->min_frequency || now == 0) break;
    uint32_t joined = (uint32_t)bpe_add_merge(t.b, (int)(top.key >> 32), (int)(uint32_t)top.key);
    merge_pair(&t, top.key, joined, step);
    step += 2;
  }
  bpe_add_special(t.b, BPE_EOT);
  trainer_free(&t);
  return t.b;
}
