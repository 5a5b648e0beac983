/* Learning a byte-level BPE vocabulary (as Hugging Face's BpeTrainer and GPT-2 do): the documents
 * are pre-tokenized (tok/pretok.h) and their pieces counted; starting from the 256 bytes, the most
 * frequent adjacent pair of tokens (summed over all pieces; ties: the smaller pair of ids) is merged
 * into a new token, until the vocabulary has vocab_size tokens counting <|endoftext|>, added last
 * (so GPT-2's layout: bytes 0..255, merges, then end of text), or no pair occurs min_frequency
 * times. The pieces are counted on the ranks of comm (each a share of the documents) and summed on
 * rank 0, which learns the merges: the same vocabulary for any rank count. Memory grows with the
 * number of distinct pieces, not with the corpus. */
#ifndef SURGE_TOK_TRAIN_H
#define SURGE_TOK_TRAIN_H

#include <mpi.h>
#include <stdint.h>

#include "tok/bpe.h"
#include "tok/files.h"

#define TRAIN_VOCAB_MIN 257 /* the bytes and end of text */

typedef struct train_opts {
  int vocab_size;         /* TRAIN_VOCAB_MIN .. BPE_VOCAB_MAX */
  uint64_t min_frequency; /* a pair seen fewer times is never merged (>= 1) */
} train_opts_t;

typedef struct train_stats {
  uint64_t bytes, pieces, distinct; /* text read; pieces; distinct pieces */
} train_stats_t;

/* Collective over comm: the vocabulary on rank 0, NULL on the other ranks. */
bpe_t *bpe_train(const file_list_t *docs, const train_opts_t *o, MPI_Comm comm, train_stats_t *st);

#endif
