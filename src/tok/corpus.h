/* Encoding a corpus into llm.c token shards (data/shard.h) on the ranks of a communicator.
 *
 * Each file is a document; every document is written as <|endoftext|> then its tokens, in the
 * order of the file list, so the shards start with the end-of-text token as llm.c's do. Document i
 * goes to the validation set when floor((i+1) f) > floor(i f) for val_fraction f (every 1/f-th
 * document), else to the training set. Each set is one token stream cut into shards of
 * shard_tokens: PREFIX_train_000000.bin, ... and PREFIX_val_000000.bin, ... Ranks take documents
 * round-robin and write their tokens at their place in the stream, so the files are byte for byte
 * the same for any rank count. A rank holds the tokens of CORPUS_ROUND documents at a time.
 * Collective. */
#ifndef SURGE_TOK_CORPUS_H
#define SURGE_TOK_CORPUS_H

#include <mpi.h>
#include <stdint.h>

#include "tok/bpe.h"
#include "tok/files.h"

#define CORPUS_DOC_MAX ((size_t)1 << 30) /* the most bytes of one document */
#define CORPUS_PREFIX_MAX 3900
#define CORPUS_ROUND 16 /* documents a rank encodes between two exchanges of token counts */

typedef struct corpus_opts {
  const char *prefix;    /* output path prefix (its directory must exist) */
  double val_fraction;   /* 0 <= f < 1 */
  uint64_t shard_tokens; /* 1 .. SHARD_TOKENS_MAX */
  int progress;          /* draw a progress line on standard error (rank 0) */
} corpus_opts_t;

typedef struct corpus_stats {
  uint64_t docs, bytes;        /* read */
  uint64_t tokens[2], shards[2]; /* [0] training, [1] validation */
  double seconds;
} corpus_stats_t;

/* The validation test of document i. */
int corpus_is_val(uint64_t i, double val_fraction);
void corpus_encode(const bpe_t *b, const file_list_t *docs, const corpus_opts_t *o, MPI_Comm comm,
                   corpus_stats_t *st);

#endif
