/* Writing vocab.json (tokens in id order, in GPT-2's byte symbols, raw UTF-8) and merges.txt
 * ("#version: 0.2", then one "A B" per merge in rank order), as Hugging Face's tokenizers save them.
 * Both are written whole under their names + ".tmp" first, then linked to their names (which never
 * replaces a file) and the temporary names removed: a run killed while it wrote them left half a
 * vocab.json and an empty merges.txt under their names, which a rerun refused to replace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/outfile.h"
#include "tok/bpe.h"
#include "tok/bytemap.h"

static _Noreturn void create_failed(const char *path) {
  if (errno == EEXIST) surge_input_error("%s: the file exists (hint: remove it or name another directory)", path);
  surge_input_error("%s: cannot create: %s", path, strerror(errno));
}

typedef struct out_file {
  const char *path;
  char *tmp; /* core/outfile.h's temporary name */
  FILE *f;
} out_file_t;

/* o->path's temporary file, a killed run's leftover there replaced; path itself must not exist. On a
 * failure the other file's temporary one (if made) goes first. */
static void create(out_file_t *o, const char *path, const out_file_t *other) {
  o->path = path;
  o->f = NULL;
  o->tmp = NULL;
  if (access(path, F_OK) != 0) {
    o->tmp = outfile_temp(path);
    o->f = fopen(o->tmp, "wx");
  } else {
    errno = EEXIST;
  }
  if (o->f) return;
  const int e = errno;
  if (other && other->f) fclose(other->f), unlink(other->tmp);
  errno = e;
  create_failed(e == EEXIST ? path : o->tmp);
}

/* The written file closed; on a failure both temporary files go. */
static void finish(out_file_t *o, out_file_t *other) {
  errno = 0;
  const int failed = ferror(o->f) | (fclose(o->f) != 0);
  const int e = errno;
  o->f = NULL;
  if (!failed) return;
  if (other->f) fclose(other->f), other->f = NULL;
  unlink(o->tmp), unlink(other->tmp);
  surge_runtime_error("%s: write failed: %s (nothing was written)", o->tmp, e ? strerror(e) : "an I/O error");
}

/* Token id as shown in the files (byte symbols; a special token's name). */
static const char *shown(const bpe_t *b, int id, char *buf) {
  if (b->special[id]) {
    memcpy(buf, b->tok[id], b->len[id]);
    buf[b->len[id]] = '\0';
  } else {
    bytemap_show(b->tok[id], b->len[id], buf);
  }
  return buf;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static size_t longest(const bpe_t *b) {
  size_t m = 0;
  for (int i = 0; i < b->n; i++) m = b->len[i] > m ? b->len[i] : m;
  return m;
}

void bpe_save(const bpe_t *b, const char *vocab_path, const char *merges_path) {
  char *buf = xmalloc(2 * longest(b) + 2);
  out_file_t vocab, merges; /* both made before either is written: never half a tokenizer */
  create(&vocab, vocab_path, NULL);
  create(&merges, merges_path, &vocab);
  FILE *f = vocab.f;
  fputc('{', f);
  for (int id = 0; id < b->n; id++) {
    if (id) fputc(',', f);
    json_string(f, shown(b, id, buf));
    fprintf(f, ":%d", id);
  }
  fputs("}\n", f);
  finish(&vocab, &merges);

  /* the merges by rank: (left, right) of each */
  uint32_t(*by_rank)[2] = xcalloc((size_t)b->nmerges + 1, sizeof *by_rank);
  for (size_t i = 0; i < b->merges.cap; i++) {
    if (!b->merges.used[i]) continue;
    uint32_t rank = (uint32_t)(b->merges.vals[i] >> 32);
    by_rank[rank][0] = (uint32_t)(b->merges.keys[i] >> 32);
    by_rank[rank][1] = (uint32_t)b->merges.keys[i];
  }
  f = merges.f;
  fputs("#version: 0.2\n", f);
  for (int r = 0; r < b->nmerges; r++) {
    fputs(shown(b, (int)by_rank[r][0], buf), f);
    fputc(' ', f);
    fputs(shown(b, (int)by_rank[r][1], buf), f);
    fputc('\n', f);
  }
  finish(&merges, &vocab);
  if (outfile_publish_new(vocab.tmp, vocab.path) != 0) {
    const int e = errno;
    unlink(vocab.tmp), unlink(merges.tmp);
    errno = e;
    create_failed(vocab_path);
  }
  if (outfile_publish_new(merges.tmp, merges.path) != 0) {
    const int e = errno;
    unlink(vocab_path), unlink(merges.tmp);
    errno = e;
    create_failed(merges_path);
  }
  free(vocab.tmp), free(merges.tmp);
  free(by_rank);
  free(buf);
}
