/* llm.c's shard header: made and checked (bounds first: the count must fit the file). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "data/shard.h"

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return (int32_t)v;
}

void shard_header_make(uint64_t n, uint8_t out[SHARD_HEADER_BYTES]) {
  memset(out, 0, SHARD_HEADER_BYTES);
  put32(out, SHARD_MAGIC);
  put32(out + 4, SHARD_VERSION);
  put32(out + 8, (uint32_t)n);
}

int shard_header_check(const uint8_t h[SHARD_HEADER_BYTES], uint64_t file_bytes, uint64_t *n, char *err,
                       size_t errlen) {
  if (file_bytes < SHARD_HEADER_BYTES) {
    snprintf(err, errlen, "offset %" PRIu64 ": the file ends inside the %d-byte header (a short file)", file_bytes,
             SHARD_HEADER_BYTES);
    return -1;
  }
  int32_t magic = get32(h), version = get32(h + 4), count = get32(h + 8);
  if (magic != SHARD_MAGIC) {
    snprintf(err, errlen, "offset 0: magic %" PRId32 ", expected %d (not an llm.c token shard)", magic, SHARD_MAGIC);
    return -1;
  }
  if (version != SHARD_VERSION) {
    snprintf(err, errlen, "offset 4: version %" PRId32 ", expected %d (uint16 tokens)", version, SHARD_VERSION);
    return -1;
  }
  uint64_t room = (file_bytes - SHARD_HEADER_BYTES) / 2;
  if (count < 0 || (uint64_t)count > room) {
    snprintf(err, errlen, "offset 8: the header counts %" PRId32 " tokens, but the file holds %" PRIu64 " (from offset %d)",
             count, room, SHARD_HEADER_BYTES);
    return -1;
  }
  *n = (uint64_t)count;
  return 0;
}
