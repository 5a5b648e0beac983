/* Open-addressing hash map of 64-bit keys. */
#include <stdlib.h>

#include "core/error.h"
#include "tok/u64map.h"

static size_t slot_of(uint64_t key, size_t cap) {
  key ^= key >> 33; /* murmur3's finaliser spreads keys made of small ids */
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

void u64map_init(u64map_t *m) {
  m->n = 0;
  m->cap = 64;
  m->keys = xcalloc(m->cap, sizeof *m->keys);
  m->vals = xcalloc(m->cap, sizeof *m->vals);
  m->used = xcalloc(m->cap, 1);
}

void u64map_free(u64map_t *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  *m = (u64map_t){0};
}

static size_t find(const u64map_t *m, uint64_t key) {
  size_t i = slot_of(key, m->cap);
  while (m->used[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

static void grow(u64map_t *m) {
  u64map_t big = {.cap = surge_mul_size(m->cap, 2, "hash map")};
  big.keys = xcalloc(big.cap, sizeof *big.keys);
  big.vals = xcalloc(big.cap, sizeof *big.vals);
  big.used = xcalloc(big.cap, 1);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    size_t j = find(&big, m->keys[i]);
    big.used[j] = 1;
    big.keys[j] = m->keys[i];
    big.vals[j] = m->vals[i];
  }
  big.n = m->n;
  u64map_free(m);
  *m = big;
}

uint64_t *u64map_put(u64map_t *m, uint64_t key) {
  if (2 * (m->n + 1) > m->cap) grow(m);
  size_t i = find(m, key);
  if (!m->used[i]) {
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = 0;
    m->n++;
  }
  return &m->vals[i];
}

uint64_t *u64map_get(const u64map_t *m, uint64_t key) {
  size_t i = find(m, key);
  return m->used[i] ? &m->vals[i] : NULL;
}

uint64_t u64map_hash_bytes(const void *p, size_t n) {
  const uint8_t *b = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}
