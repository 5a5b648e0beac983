/* The corpus encoder: documents round-robin over ranks, tokens written in place with pwrite. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "data/shard.h"
#include "core/outfile.h"
#include "tok/corpus.h"
#include "tok/pretok.h"

static const char *const split_names[2] = {"train", "val"};

int corpus_is_val(uint64_t i, double f) { return floor((double)(i + 1) * f) > floor((double)i * f); }

/* A shard's name; while the corpus is written, its temporary name (+ ".tmp"): the shards take their
 * names only once every token and header is in them, so a run stopped or killed half-way leaves no
 * shard under its name (it left them there, headers zero, and a rerun refused to replace them). */
enum { SHARD_PATH_MAX = CORPUS_PREFIX_MAX + 40 };
static void shard_path(const corpus_opts_t *o, int split, uint64_t k, int temporary, char *out, size_t n) {
  snprintf(out, n, "%s_%s_%06" PRIu64 ".bin%s", o->prefix, split_names[split], k, temporary ? ".tmp" : "");
}

/* Rank 0: the temporary shards a killed run left (PREFIX_{train,val}_*.bin.tmp, any numbers: the ranks
 * write shards in any order) go, so that no stale bytes stay past what this run writes. */
static void remove_stale_temps(const corpus_opts_t *o) {
  char dir[CORPUS_PREFIX_MAX + 1], base[CORPUS_PREFIX_MAX + 1];
  snprintf(dir, sizeof dir, "%s", o->prefix);
  snprintf(base, sizeof base, "%s", o->prefix);
  const char *d = dirname(dir), *b = basename(base);
  DIR *h = opendir(d);
  for (struct dirent *e; h && (e = readdir(h)) != NULL;) {
    const size_t nb = strlen(b), n = strlen(e->d_name);
    const char *rest = e->d_name + nb;
    if (strncmp(e->d_name, b, nb) != 0 || n < nb + 8 || strcmp(e->d_name + n - 8, ".bin.tmp") != 0 ||
        (strncmp(rest, "_train_", 7) != 0 && strncmp(rest, "_val_", 5) != 0))
      continue;
    char p[CORPUS_PREFIX_MAX + 300];
    snprintf(p, sizeof p, "%s/%s", d, e->d_name);
    unlink(p);
  }
  if (h) closedir(h);
}

/* Rank 0 refuses to replace an earlier corpus; every rank learns the verdict before any writes. */
static void check_fresh(const corpus_opts_t *o, MPI_Comm comm) {
  int rank, exists = -1;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    for (int s = 0; s < 2 && exists < 0; s++) {
      char p[SHARD_PATH_MAX];
      shard_path(o, s, 0, 0, p, sizeof p);
      if (access(p, F_OK) == 0) exists = s;
    }
    if (exists < 0) remove_stale_temps(o);
  }
  MPI_Bcast(&exists, 1, MPI_INT, 0, comm);
  if (exists >= 0) {
    char p[SHARD_PATH_MAX];
    shard_path(o, exists, 0, 0, p, sizeof p);
    surge_input_error("%s exists (hint: surge-tokenize never replaces shards; remove them or give another --out)", p);
  }
}

/* A shard's temporary file, opened for writing; its name in path (SHARD_PATH_MAX). */
static int open_shard(const corpus_opts_t *o, int split, uint64_t k, char *path) {
  shard_path(o, split, k, 1, path, SHARD_PATH_MAX);
  int fd = open(path, O_WRONLY | O_CREAT, 0644);
  if (fd < 0)
    surge_input_error("%s: cannot create: %s (hint: does the directory of --out exist?)", path, strerror(errno));
  return fd;
}

static void pwrite_all(int fd, const void *p, size_t n, uint64_t at, const char *path) {
  for (const uint8_t *b = p; n > 0;) {
    ssize_t w = pwrite(fd, b, n, (off_t)at);
    if (w <= 0) surge_runtime_error("writing %s: %s (no shard took its name)", path, strerror(errno));
    b += w, n -= (size_t)w, at += (uint64_t)w;
  }
}

static void close_shard(int fd, const char *path) {
  if (close(fd) != 0) surge_runtime_error("closing %s: %s (no shard took its name)", path, strerror(errno));
}

/* Tokens t[0..n) at stream position pos of a split, cut at shard boundaries. */
static void write_tokens(const corpus_opts_t *o, int split, uint64_t pos, const uint32_t *t, size_t n) {
  uint8_t *le = xmalloc(2 * (n ? n : 1));
  for (size_t i = 0; i < n; i++) le[2 * i] = (uint8_t)t[i], le[2 * i + 1] = (uint8_t)(t[i] >> 8);
  for (size_t done = 0; done < n;) {
    uint64_t k = (pos + done) / o->shard_tokens, off = (pos + done) % o->shard_tokens;
    size_t part = (size_t)(o->shard_tokens - off) < n - done ? (size_t)(o->shard_tokens - off) : n - done;
    char path[SHARD_PATH_MAX];
    int fd = open_shard(o, split, k, path);
    pwrite_all(fd, le + 2 * done, 2 * part, SHARD_HEADER_BYTES + 2 * off, path);
    close_shard(fd, path);
    done += part;
  }
  free(le);
}

/* Rank 0, at the end: each shard's header with its count. */
static void write_headers(const corpus_opts_t *o, int split, uint64_t total, uint64_t *shards) {
  *shards = (total + o->shard_tokens - 1) / o->shard_tokens;
  for (uint64_t k = 0; k < *shards; k++) {
    uint64_t n = k + 1 < *shards ? o->shard_tokens : total - k * o->shard_tokens;
    uint8_t h[SHARD_HEADER_BYTES];
    shard_header_make(n, h);
    char path[SHARD_PATH_MAX];
    int fd = open_shard(o, split, k, path);
    pwrite_all(fd, h, sizeof h, 0, path);
    close_shard(fd, path);
  }
}

/* Rank 0, last: every shard of a split from its temporary name to its own. */
static void name_shards(const corpus_opts_t *o, int split, uint64_t shards) {
  for (uint64_t k = 0; k < shards; k++) {
    char tmp[SHARD_PATH_MAX], final[SHARD_PATH_MAX];
    shard_path(o, split, k, 1, tmp, sizeof tmp);
    shard_path(o, split, k, 0, final, sizeof final);
    if (outfile_publish_new(tmp, final) != 0)
      surge_runtime_error("cannot give %s its name %s: %s (shards are never replaced)", tmp, final, strerror(errno));
  }
}

static void check_opts(const bpe_t *b, const file_list_t *docs, const corpus_opts_t *o) {
  if (b->eot < 0) surge_input_error("the vocabulary has no " BPE_EOT " token, which separates documents");
  if (strlen(o->prefix) > CORPUS_PREFIX_MAX) surge_input_error("--out: a prefix of at most %d bytes", CORPUS_PREFIX_MAX);
  if (!(o->val_fraction >= 0 && o->val_fraction < 1)) surge_input_error("--val-fraction %g must be in [0, 1)", o->val_fraction);
  if (o->shard_tokens < 1 || o->shard_tokens > SHARD_TOKENS_MAX)
    surge_input_error("--shard-tokens %" PRIu64 " must be 1 .. %d", o->shard_tokens, SHARD_TOKENS_MAX);
  uint64_t nval = 0;
  for (uint64_t i = 0; i < docs->n; i++) nval += (uint64_t)corpus_is_val(i, o->val_fraction);
  if (o->val_fraction > 0 && nval == 0)
    surge_input_error("--val-fraction %g of %zu documents selects none (hint: more documents, or a larger fraction)",
                      o->val_fraction, docs->n);
  if (nval == docs->n) surge_input_error("--val-fraction %g leaves no training document", o->val_fraction);
}

static void progress(const corpus_opts_t *o, const corpus_stats_t *st, uint64_t ndocs, int last) {
  if (!o->progress) return;
  double mb = (double)st->bytes / 1e6, t = MPI_Wtime() - st->seconds;
  fprintf(stderr, "\rencode: %" PRIu64 "/%" PRIu64 " documents, %.1f MB, %.1f MB/s%s", st->docs, ndocs, mb,
          t > 0 ? mb / t : 0.0, last ? "\n" : "");
}

void corpus_encode(const bpe_t *b, const file_list_t *docs, const corpus_opts_t *o, MPI_Comm comm,
                   corpus_stats_t *st) {
  check_opts(b, docs, o);
  check_fresh(o, comm);
  MPI_Barrier(comm);
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  *st = (corpus_stats_t){.seconds = MPI_Wtime()};
  pretok_t *pt = pretok_new();
  /* a round: documents first + k*size + rank for k < CORPUS_ROUND, then one exchange of counts */
  uint64_t per_round = (uint64_t)CORPUS_ROUND * (uint64_t)size;
  uint64_t(*counts)[CORPUS_ROUND][2] = xcalloc((size_t)size, sizeof *counts); /* tokens, bytes per document */
  uint64_t mine[CORPUS_ROUND][2];
  ids_t ids = {0};
  for (uint64_t first = 0; first < docs->n; first += per_round) {
    ids.n = 0;
    for (int k = 0; k < CORPUS_ROUND; k++) {
      uint64_t d = first + (uint64_t)k * (uint64_t)size + (uint64_t)rank;
      size_t before = ids.n, len = 0;
      if (d < docs->n) {
        unsigned char *text = file_read_all(docs->path[d], CORPUS_DOC_MAX, "a document", "split it", &len);
        ids_push(&ids, (uint32_t)b->eot);
        bpe_encode(b, pt, text, len, &ids);
        free(text);
      }
      mine[k][0] = ids.n - before, mine[k][1] = len;
    }
    MPI_Allgather(mine, 2 * CORPUS_ROUND, MPI_UINT64_T, counts, 2 * CORPUS_ROUND, MPI_UINT64_T, comm);
    size_t at = 0; /* this rank's next document in ids */
    for (int k = 0; k < CORPUS_ROUND; k++)
      for (int r = 0; r < size; r++) {
        uint64_t d = first + (uint64_t)k * (uint64_t)size + (uint64_t)r;
        if (d >= docs->n) continue;
        int split = corpus_is_val(d, o->val_fraction);
        if (r == rank) {
          write_tokens(o, split, st->tokens[split], ids.v + at, (size_t)counts[r][k][0]);
          at += (size_t)counts[r][k][0];
        }
        st->tokens[split] += counts[r][k][0];
        st->bytes += counts[r][k][1];
        st->docs++;
      }
    if (rank == 0) progress(o, st, docs->n, 0);
  }
  MPI_Barrier(comm); /* every token is written before the headers say the shards are complete */
  for (int s = 0; s < 2; s++) {
    st->shards[s] = (st->tokens[s] + o->shard_tokens - 1) / o->shard_tokens;
    if (rank == 0) write_headers(o, s, st->tokens[s], &st->shards[s]);
  }
  for (int s = 0; s < 2 && rank == 0; s++) name_shards(o, s, st->shards[s]);
  MPI_Barrier(comm);
  if (rank == 0) progress(o, st, docs->n, 1);
  st->seconds = MPI_Wtime() - st->seconds;
  ids_free(&ids);
  free(counts);
  pretok_free(pt);
}
