/* The vocabulary's tables: tokens by id, ids by bytes, merges by pair; building and decoding. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/bpe.h"
#include "tok/bpe_impl.h"
#include "tok/bytemap.h"

bpe_t *bpe_empty(void) {
  bpe_t *b = xcalloc(1, sizeof *b);
  b->eot = -1;
  for (int i = 0; i < 256; i++) b->byte_id[i] = -1;
  u64map_init(&b->by_bytes);
  u64map_init(&b->merges);
  return b;
}

void bpe_free(bpe_t *b) {
  if (!b) return;
  for (int i = 0; i < b->n; i++) free(b->tok[i]);
  free(b->tok);
  free(b->len);
  free(b->special);
  u64map_free(&b->by_bytes);
  u64map_free(&b->merges);
  free(b);
}

int bpe_lookup(const bpe_t *b, const uint8_t *bytes, size_t n) {
  const uint64_t *v = u64map_get(&b->by_bytes, u64map_hash_bytes(bytes, n));
  if (!v) return -1;
  int id = (int)*v;
  return b->len[id] == n && memcmp(b->tok[id], bytes, n) == 0 ? id : -1;
}

int bpe_set_token(bpe_t *b, int id, const uint8_t *bytes, size_t n, int special, int *other) {
  if (id >= b->n) {
    b->tok = xrealloc(b->tok, (size_t)(id + 1) * sizeof *b->tok);
    b->len = xrealloc(b->len, (size_t)(id + 1) * sizeof *b->len);
    b->special = xrealloc(b->special, (size_t)(id + 1));
    for (int i = b->n; i <= id; i++) b->tok[i] = NULL, b->len[i] = 0, b->special[i] = 0;
    b->n = id + 1;
  }
  if (!special) {
    int old = bpe_lookup(b, bytes, n);
    if (old >= 0) {
      *other = old;
      return -1;
    }
    uint64_t h = u64map_hash_bytes(bytes, n);
    const uint64_t *same = u64map_get(&b->by_bytes, h);
    if (same) /* two strings with one 64-bit hash: never seen, but refused */
      surge_runtime_error("vocabulary: tokens %d and %d have the same 64-bit hash", (int)*same, id);
    *u64map_put(&b->by_bytes, h) = (uint64_t)id;
    if (n == 1) b->byte_id[bytes[0]] = id;
  } else if (n == strlen(BPE_EOT) && memcmp(bytes, BPE_EOT, n) == 0) {
    b->eot = id;
  }
  b->tok[id] = xmalloc(n ? n : 1);
  memcpy(b->tok[id], bytes, n);
  b->len[id] = (uint32_t)n;
  b->special[id] = (uint8_t)special;
  return 0;
}

int bpe_make_normal(bpe_t *b, const uint8_t *bytes, size_t n) {
  for (int id = 0; id < b->n; id++)
    if (b->special[id] && b->len[id] == n && memcmp(b->tok[id], bytes, n) == 0) {
      uint8_t *name = b->tok[id];
      int other;
      if (b->eot == id) b->eot = -1;
      b->tok[id] = NULL;
      bpe_set_token(b, id, name, n, 0, &other); /* (no normal token has these bytes: the caller looked) */
      free(name);
      return id;
    }
  return -1;
}

bpe_t *bpe_new_bytes(void) {
  bpe_t *b = bpe_empty();
  int other;
  for (int i = 0; i < 256; i++) {
    uint8_t byte = bytemap_order(i);
    bpe_set_token(b, i, &byte, 1, 0, &other);
  }
  return b;
}

int bpe_add_merge(bpe_t *b, int left, int right) {
  size_t n = (size_t)b->len[left] + b->len[right];
  uint8_t *joined = xmalloc(n);
  memcpy(joined, b->tok[left], b->len[left]);
  memcpy(joined + b->len[left], b->tok[right], b->len[right]);
  int id = bpe_lookup(b, joined, n), other;
  if (id < 0) bpe_set_token(b, id = b->n, joined, n, 0, &other);
  free(joined);
  *u64map_put(&b->merges, (uint64_t)left << 32 | (uint32_t)right) = (uint64_t)b->nmerges++ << 32 | (uint32_t)id;
  return id;
}

int bpe_add_special(bpe_t *b, const char *name) {
  int id = b->n, other;
  bpe_set_token(b, id, (const uint8_t *)name, strlen(name), 1, &other);
  return id;
}

void ids_push(ids_t *a, uint32_t id) {
  if (a->n == a->cap) {
    a->cap = a->cap ? surge_mul_size(a->cap, 2, "token ids") : 1024;
    a->v = xrealloc(a->v, a->cap * sizeof *a->v);
  }
  a->v[a->n++] = id;
}

void ids_free(ids_t *a) {
  free(a->v);
  *a = (ids_t){0};
}

void bpe_decode(const bpe_t *b, const uint32_t *ids, size_t n, int skip_special, uint8_t **buf, size_t *len,
                size_t *cap) {
  for (size_t i = 0; i < n; i++) {
    if (ids[i] >= (uint32_t)b->n)
      surge_input_error("decode: token %zu is id %u, outside the vocabulary of %d", i, ids[i], b->n);
    if (skip_special && b->special[ids[i]]) continue;
    size_t k = b->len[ids[i]];
    if (k > *cap - *len) {
      while (k > *cap - *len) *cap = *cap ? surge_mul_size(*cap, 2, "decoded text") : 4096;
      *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, b->tok[ids[i]], k);
    *len += k;
  }
}
