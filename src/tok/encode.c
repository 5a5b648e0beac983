/* Byte-level BPE encoding: pre-tokenize, then merge each piece by rank. A piece's merges use a
 * min-heap of candidate pairs ordered by (rank, position), as Hugging Face's BPE does, so long
 * pieces (runs of spaces) cost n log n, not n^2. */
#include <stdlib.h>

#include "core/error.h"
#include "tok/bpe.h"
#include "tok/pretok.h"

typedef struct cand {
  uint32_t rank, pos; /* merge rank; position of the left symbol */
  uint32_t left, right, joined; /* ids it expects, and the result */
} cand_t;

typedef struct heap {
  cand_t *v;
  size_t n, cap;
} heap_t;

static int before(const cand_t *a, const cand_t *b) { return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos; }

static void heap_push(heap_t *h, cand_t c) {
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 64;
    h->v = xrealloc(h->v, h->cap * sizeof *h->v);
  }
  size_t i = h->n++;
  for (; i > 0 && before(&c, &h->v[(i - 1) / 2]); i = (i - 1) / 2) h->v[i] = h->v[(i - 1) / 2];
  h->v[i] = c;
}

static cand_t heap_pop(heap_t *h) {
  cand_t top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
    if (!before(&h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

/* Symbols of a piece: a doubly linked list over positions 0..n-1 (dead ones merged away). */
typedef struct word {
  uint32_t *id;
  int32_t *prev, *next; /* -1: none */
  size_t cap;
  heap_t heap;
} word_t;

static void consider(const bpe_t *b, word_t *w, int32_t pos) {
  if (pos < 0 || w->next[pos] < 0) return;
  uint32_t l = w->id[pos], r = w->id[w->next[pos]];
  const uint64_t *m = u64map_get(&b->merges, (uint64_t)l << 32 | r);
  if (m) heap_push(&w->heap, (cand_t){(uint32_t)(*m >> 32), (uint32_t)pos, l, r, (uint32_t)*m});
}

static void word_reserve(word_t *w, size_t n) {
  if (n <= w->cap) return;
  w->cap = n;
  w->id = xrealloc(w->id, n * sizeof *w->id);
  w->prev = xrealloc(w->prev, n * sizeof *w->prev);
  w->next = xrealloc(w->next, n * sizeof *w->next);
}

static void merge_piece(const bpe_t *b, word_t *w, const uint8_t *piece, size_t n, ids_t *out) {
  if (n > INT32_MAX) surge_input_error("encode: a piece of %zu bytes is too long", n);
  word_reserve(w, n);
  w->heap.n = 0;
  for (size_t i = 0; i < n; i++) {
    w->id[i] = (uint32_t)b->byte_id[piece[i]];
    w->prev[i] = (int32_t)i - 1;
    w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
  }
  for (size_t i = 0; i + 1 < n; i++) consider(b, w, (int32_t)i);
  while (w->heap.n) {
    cand_t c = heap_pop(&w->heap);
    int32_t p = (int32_t)c.pos, q = w->next[p];
    if (w->prev[p] == -2 || q < 0 || w->id[p] != c.left || w->id[q] != c.right) continue; /* stale */
    w->id[p] = c.joined;
    w->next[p] = w->next[q];
    if (w->next[q] >= 0) w->prev[w->next[q]] = p;
    w->prev[q] = -2; /* dead */
    consider(b, w, w->prev[p]);
    consider(b, w, p);
  }
  for (int32_t i = 0; i >= 0; i = w->next[i]) ids_push(out, w->id[i]);
}

static void word_free(word_t *w) {
  free(w->id);
  free(w->prev);
  free(w->next);
  free(w->heap.v);
}

void bpe_merge_piece(const bpe_t *b, const uint8_t *piece, size_t n, ids_t *out) {
  if (n == 0) return;
  word_t w = {0};
  merge_piece(b, &w, piece, n, out);
  word_free(&w);
}

typedef struct encoding {
  const bpe_t *b;
  word_t w;
  ids_t *out;
} encoding_t;

static void on_piece(const uint8_t *piece, size_t n, void *ctx) {
  encoding_t *e = ctx;
  merge_piece(e->b, &e->w, piece, n, e->out);
}

void bpe_encode(const bpe_t *b, pretok_t *p, const uint8_t *text, size_t n, ids_t *out) {
  encoding_t e = {.b = b, .out = out};
  pretok_split(p, text, n, on_piece, &e);
  word_free(&e.w);
}
