/* A hash map from 64-bit keys to 64-bit values (open addressing, linear probing, grows at half
 * full). The tokenizer's tables: merge pairs, pair counts, string hashes. */
#ifndef SURGE_TOK_U64MAP_H
#define SURGE_TOK_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct u64map {
  uint64_t *keys, *vals; /* (cap) */
  uint8_t *used;         /* (cap) */
  size_t n, cap;         /* cap: a power of two */
} u64map_t;

void u64map_init(u64map_t *m);
void u64map_free(u64map_t *m);
/* The value's slot for key, created (value 0) when absent. The pointer lasts until the next put. */
uint64_t *u64map_put(u64map_t *m, uint64_t key);
/* The value of key, or NULL when absent. */
uint64_t *u64map_get(const u64map_t *m, uint64_t key);
/* 64-bit FNV-1a of bytes, the key of a string. */
uint64_t u64map_hash_bytes(const void *p, size_t n);

#endif
