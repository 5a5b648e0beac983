/* Inside the vocabulary module: building its tables (bpe.c), shared by the reader and the builders. */
#ifndef SURGE_TOK_BPE_IMPL_H
#define SURGE_TOK_BPE_IMPL_H

#include "tok/bpe.h"

bpe_t *bpe_empty(void); /* no tokens, no merges */
/* Give id its bytes (the tables grow to hold it; a special token's bytes are its name). Returns 0,
 * or -1 when another normal token already has these bytes (*other set to it). */
int bpe_set_token(bpe_t *b, int id, const uint8_t *bytes, size_t n, int special, int *other);
/* The special token whose name is these bytes made a normal token (a merge makes it: "<|" + "|>"
 * gives "<||>", which a trainer learns from text like any token), its id; -1 when there is none. */
int bpe_make_normal(bpe_t *b, const uint8_t *bytes, size_t n);

#endif
