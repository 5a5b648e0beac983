/* Writing vocab.json (tokens in id order, in GPT-2's byte symbols, raw UTF-8) and merges.txt
 * ("#version: 0.2", then one "A B" per merge in rank order), as Hugging Face's tokenizers save them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "tok/bpe.h"
#include "tok/bytemap.h"

static _Noreturn void create_failed(const char *path) {
  if (errno == EEXIST) surge_input_error("%s: the file exists (hint: remove it or name another directory)", path);
  surge_input_error("%s: cannot create: %s", path, strerror(errno));
}

/* path created, never replaced */
static FILE *create(const char *path) {
  FILE *f = fopen(path, "wx");
  if (!f) create_failed(path);
  return f;
}

static void finish(FILE *f, const char *path) {
  if (ferror(f) | (fclose(f) != 0)) surge_runtime_error("%s: write failed", path);
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
  FILE *f = create(vocab_path);
  FILE *fm = fopen(merges_path, "wx"); /* both before either is written: never half a tokenizer */
  if (!fm) {
    int err = errno;
    fclose(f);
    unlink(vocab_path);
    errno = err;
    create_failed(merges_path);
  }
  fputc('{', f);
  for (int id = 0; id < b->n; id++) {
    if (id) fputc(',', f);
    json_string(f, shown(b, id, buf));
    fprintf(f, ":%d", id);
  }
  fputs("}\n", f);
  finish(f, vocab_path);

  /* the merges by rank: (left, right) of each */
  uint32_t(*by_rank)[2] = xcalloc((size_t)b->nmerges + 1, sizeof *by_rank);
  for (size_t i = 0; i < b->merges.cap; i++) {
    if (!b->merges.used[i]) continue;
    uint32_t rank = (uint32_t)(b->merges.vals[i] >> 32);
    by_rank[rank][0] = (uint32_t)(b->merges.keys[i] >> 32);
    by_rank[rank][1] = (uint32_t)b->merges.keys[i];
  }
  f = fm;
  fputs("#version: 0.2\n", f);
  for (int r = 0; r < b->nmerges; r++) {
    fputs(shown(b, (int)by_rank[r][0], buf), f);
    fputc(' ', f);
    fputs(shown(b, (int)by_rank[r][1], buf), f);
    fputc('\n', f);
  }
  finish(f, merges_path);
  free(by_rank);
  free(buf);
}
