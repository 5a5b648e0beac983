/* The trainer's word counts: every distinct pre-tokenized piece of a corpus (tok/pretok.h) with how
 * often it occurs. Counted per rank over a share of the documents, then summed on rank 0, so the
 * counts (and the vocabulary learnt from them) do not depend on the rank count. */
#ifndef SURGE_TOK_PIECES_H
#define SURGE_TOK_PIECES_H

#include <mpi.h>
#include <stdint.h>

#include "tok/files.h"
#include "tok/u64map.h"

typedef struct pieces {
  u64map_t index;            /* hash of the bytes -> piece + 1 (while counting) */
  uint8_t *bytes;            /* all pieces' bytes, back to back */
  size_t nbytes, cap_bytes;
  uint64_t *off, *count;     /* (n) where a piece's bytes start; how often it occurs */
  uint32_t *len;             /* (n) its bytes */
  size_t n, cap;
  uint64_t text_bytes;       /* bytes of text counted */
} pieces_t;

/* Count the pieces of documents rank, rank + size, ... of docs on each rank of comm, then sum them
 * on rank 0 (collective). On rank 0 *p holds every distinct piece of the corpus (index freed); on
 * the others it is empty. */
void pieces_count(pieces_t *p, const file_list_t *docs, MPI_Comm comm);
void pieces_free(pieces_t *p);

#endif
