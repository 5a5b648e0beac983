/* llm.c's token shard (karpathy/llm.c dev/data/data_common.py write_datafile): a header of 256
 * little-endian int32 (header[0] = magic 20240520, header[1] = version 1, header[2] = the token
 * count N, the rest 0), then N little-endian uint16 tokens. File size = 1024 + 2 N. */
#ifndef SURGE_SHARD_H
#define SURGE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256
#define SHARD_HEADER_BYTES (SHARD_HEADER_INTS * 4)
#define SHARD_TOKENS_MAX INT32_MAX /* the count is an int32 */

/* The header bytes of a shard of n tokens (n <= SHARD_TOKENS_MAX). */
void shard_header_make(uint64_t n, uint8_t out[SHARD_HEADER_BYTES]);
/* Check a header read from a file of file_bytes bytes; on success *n is its token count. On failure
 * returns -1 with err saying what is wrong and at which byte offset. */
int shard_header_check(const uint8_t h[SHARD_HEADER_BYTES], uint64_t file_bytes, uint64_t *n, char *err,
                       size_t errlen);

#endif
