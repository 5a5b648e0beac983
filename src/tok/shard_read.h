/* Token ids back from files, for decoding: llm.c shards (data/shard.h; header checked, tokens read
 * in bounded chunks) and text lists of ids. */
#ifndef SURGE_TOK_SHARD_READ_H
#define SURGE_TOK_SHARD_READ_H

#include "tok/bpe.h"

/* Append the tokens of a shard; a token >= vocab is an input error naming the file and offset. */
void shard_read_all(const char *path, uint32_t vocab, ids_t *out);
/* Append the ids of a text file of whitespace-separated decimal numbers; an id >= vocab is an input
 * error naming the file and offset. */
void ids_read_text(const char *path, uint32_t vocab, ids_t *out);

#endif
