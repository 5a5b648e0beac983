/* Counting pieces, and summing the ranks' counts on rank 0 (one Gatherv of (length, count, bytes)
 * records, at most PIECES_SEND_MAX bytes a rank). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/corpus.h"
#include "tok/pieces.h"
#include "tok/pretok.h"

#define PIECES_SEND_MAX ((size_t)INT_MAX)

static void add(pieces_t *p, const uint8_t *s, size_t n, uint64_t count) {
  if (n > UINT32_MAX) surge_input_error("train: a piece of %zu bytes is too long", n);
  uint64_t *slot = u64map_put(&p->index, u64map_hash_bytes(s, n));
  if (*slot) {
    size_t i = (size_t)*slot - 1;
    if (p->len[i] != n || memcmp(p->bytes + p->off[i], s, n) != 0)
      surge_runtime_error("train: two distinct pieces share a 64-bit hash");
    p->count[i] += count;
    return;
  }
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 4096;
    p->off = xrealloc(p->off, p->cap * sizeof *p->off);
    p->count = xrealloc(p->count, p->cap * sizeof *p->count);
    p->len = xrealloc(p->len, p->cap * sizeof *p->len);
  }
  if (n > p->cap_bytes - p->nbytes) {
    while (n > p->cap_bytes - p->nbytes) p->cap_bytes = p->cap_bytes ? surge_mul_size(p->cap_bytes, 2, "pieces") : 1 << 20;
    p->bytes = xrealloc(p->bytes, p->cap_bytes);
  }
  memcpy(p->bytes + p->nbytes, s, n);
  p->off[p->n] = p->nbytes;
  p->len[p->n] = (uint32_t)n;
  p->count[p->n] = count;
  p->nbytes += n;
  *slot = ++p->n;
}

static void on_piece(const uint8_t *s, size_t n, void *ctx) { add(ctx, s, n, 1); }

/* This rank's pieces as records: uint32 length, uint64 count, the bytes. */
static uint8_t *records(const pieces_t *p, size_t *len) {
  size_t total = p->nbytes + p->n * 12;
  if (total > PIECES_SEND_MAX)
    surge_input_error("train: %zu bytes of distinct pieces on one rank, more than %zu (hint: more ranks)", total,
                      PIECES_SEND_MAX);
  uint8_t *r = xmalloc(total ? total : 1), *w = r;
  for (size_t i = 0; i < p->n; i++) {
    memcpy(w, &p->len[i], 4);
    memcpy(w + 4, &p->count[i], 8);
    memcpy(w + 12, p->bytes + p->off[i], p->len[i]);
    w += 12 + p->len[i];
  }
  *len = total;
  return r;
}

/* Rank 0: the ranks' records summed, in rank order, into a fresh table. */
static void sum_records(pieces_t *p, const uint8_t *all, const int *sizes, int nranks) {
  pieces_free(p);
  u64map_init(&p->index);
  size_t at = 0;
  for (int r = 0; r < nranks; at += (size_t)sizes[r++])
    for (const uint8_t *q = all + at; q < all + at + sizes[r];) {
      uint32_t n;
      uint64_t count;
      memcpy(&n, q, 4);
      memcpy(&count, q + 4, 8);
      add(p, q + 12, n, count);
      q += 12 + n;
    }
}

static void gather(pieces_t *p, MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  uint64_t bytes = p->text_bytes;
  MPI_Reduce(&bytes, &p->text_bytes, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
  size_t len;
  uint8_t *mine = records(p, &len);
  int n = (int)len, *sizes = xcalloc((size_t)size, sizeof *sizes), *at = xcalloc((size_t)size, sizeof *at);
  MPI_Gather(&n, 1, MPI_INT, sizes, 1, MPI_INT, 0, comm);
  size_t total = 0;
  for (int r = 0; r < size; r++) at[r] = (int)total, total += (size_t)sizes[r];
  if (rank == 0 && total > PIECES_SEND_MAX)
    surge_input_error("train: %zu bytes of distinct pieces over the ranks, more than %zu", total, PIECES_SEND_MAX);
  uint8_t *all = rank == 0 ? xmalloc(total ? total : 1) : NULL;
  MPI_Gatherv(mine, n, MPI_BYTE, all, sizes, at, MPI_BYTE, 0, comm);
  uint64_t text = p->text_bytes;
  if (rank == 0) sum_records(p, all, sizes, size);
  else pieces_free(p);
  p->text_bytes = rank == 0 ? text : 0;
  free(all);
  free(mine);
  free(sizes);
  free(at);
}

void pieces_count(pieces_t *p, const file_list_t *docs, MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  *p = (pieces_t){0};
  u64map_init(&p->index);
  pretok_t *pt = pretok_new();
  for (size_t d = (size_t)rank; d < docs->n; d += (size_t)size) {
    size_t len;
    unsigned char *text = file_read_all(docs->path[d], CORPUS_DOC_MAX, "a document", "split it", &len);
    pretok_split(pt, text, len, on_piece, p);
    p->text_bytes += len;
    free(text);
  }
  pretok_free(pt);
  if (size > 1) gather(p, comm);
  u64map_free(&p->index);
}

void pieces_free(pieces_t *p) {
  free(p->bytes);
  free(p->off);
  free(p->count);
  free(p->len);
  if (p->index.cap) u64map_free(&p->index);
  *p = (pieces_t){0};
}
