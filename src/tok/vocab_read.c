/* Reading vocab.json + merges.txt, checking each against the other as it goes. */
#include <cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/bpe_impl.h"
#include "tok/bytemap.h"
#include "tok/files.h"

/* The whole of a small file (at most BPE_FILE_MAX bytes), NUL-terminated; its FNV-1a folded into *h. */
static char *read_small(const char *path, size_t *len, uint64_t *h) {
  unsigned char *s = file_read_all(path, BPE_FILE_MAX, "a tokenizer file",
                                   "GPT-2's vocab.json is 1 MiB: is this the right file?", len);
  for (size_t i = 0; i < *len; i++) *h = (*h ^ s[i]) * 0x100000001b3ULL;
  return (char *)s;
}

static int is_special_name(const char *k) {
  size_t n = strlen(k);
  return n >= 4 && strncmp(k, "<|", 2) == 0 && strcmp(k + n - 2, "|>") == 0;
}

/* One vocab.json entry: key (in byte symbols) -> id. */
static void add_entry(bpe_t *b, const char *path, const cJSON *e, uint8_t *scratch) {
  const char *k = e->string;
  double v = cJSON_IsNumber(e) ? e->valuedouble : -1; /* range first: converting a huge double is undefined */
  if (!(v >= 0 && v < BPE_VOCAB_MAX) || v != floor(v))
    surge_input_error("%s: token \"%s\": the id must be an integer 0..%d", path, k, BPE_VOCAB_MAX - 1);
  int id = (int)v, other = -1;
  if (id < b->n && b->tok[id]) {
    char *was = xmalloc(2 * b->len[id] + 2);
    if (b->special[id]) snprintf(was, 2 * b->len[id] + 2, "%.*s", (int)b->len[id], (const char *)b->tok[id]);
    else bytemap_show(b->tok[id], b->len[id], was);
    surge_input_error("%s: tokens \"%s\" and \"%s\" both have id %d", path, was, k, id);
  }
  int special = is_special_name(k);
  size_t n = strlen(k);
  long bytes = special ? (long)n : bytemap_unshow(k, n, scratch);
  if (bytes < 0)
    surge_input_error("%s: token \"%s\" (id %d) has a character that is not one of GPT-2's byte symbols "
                      "(hint: a byte-level BPE vocabulary, as GPT-2's and Hugging Face's ByteLevel write)",
                      path, k, id);
  if (bytes == 0) surge_input_error("%s: an empty token has id %d", path, id);
  if (bpe_set_token(b, id, special ? (const uint8_t *)k : scratch, (size_t)bytes, special, &other) != 0)
    surge_input_error("%s: token \"%s\" (id %d) is the same bytes as id %d", path, k, id, other);
}

static void read_vocab(bpe_t *b, const char *path, uint64_t *h) {
  size_t len;
  char *text = read_small(path, &len, h);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  size_t rest = root && end ? (size_t)(text + len - end) : 0;
  if (root && strspn(end, " \t\r\n") < rest) /* (text after the object: another file joined on?) */
    surge_input_error("%s: text after the JSON object at byte %zu (hint: one object of token -> id)", path,
                      (size_t)(end - text));
  if (!root || !cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    char near[21] = "";
    if (at && root == NULL) snprintf(near, sizeof near, "%s", at);
    for (char *c = near; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' '; /* (the message stays one line) */
    surge_input_error("%s: not a JSON object of token -> id%s%s", path, near[0] ? " near: " : "", near);
  }
  uint8_t *scratch = xmalloc(len + 1);
  for (const cJSON *e = root->child; e; e = e->next) add_entry(b, path, e, scratch);
  free(scratch);
  cJSON_Delete(root);
  free(text);
  if (b->n == 0) surge_input_error("%s: no tokens", path);
  for (int id = 0; id < b->n; id++)
    if (!b->tok[id]) surge_input_error("%s: no token has id %d (hint: ids must be 0..%d, each once)", path, id, b->n - 1);
  for (int c = 0; c < 256; c++)
    if (b->byte_id[c] < 0) {
      char shown[3];
      uint8_t byte = (uint8_t)c;
      bytemap_show(&byte, 1, shown);
      surge_input_error("%s: no token for byte 0x%02x (\"%s\"): a byte-level vocabulary has all 256", path, c, shown);
    }
}

/* One merges.txt line "A B" (line number ln): A and B known tokens whose bytes joined are one. */
static void add_merge(bpe_t *b, const char *path, int ln, char *line, uint8_t *scratch) {
  char *sp = strchr(line, ' ');
  if (!sp || sp == line || !sp[1] || strchr(sp + 1, ' '))
    surge_input_error("%s:%d: expected two tokens separated by one space, got \"%.60s\"", path, ln, line);
  *sp = '\0';
  const char *side[2] = {line, sp + 1};
  int id[2];
  size_t total = 0;
  for (int s = 0; s < 2; s++) {
    long n = bytemap_unshow(side[s], strlen(side[s]), scratch + total);
    id[s] = n > 0 ? bpe_lookup(b, scratch + total, (size_t)n) : -1;
    if (id[s] < 0) surge_input_error("%s:%d: \"%s\" is not a token of the vocabulary", path, ln, side[s]);
    total += (size_t)n;
  }
  int joined = bpe_lookup(b, scratch, total);
  if (joined < 0) joined = bpe_make_normal(b, scratch, total); /* "<||>": a name like a special's, learnt */
  if (joined < 0)
    surge_input_error("%s:%d: \"%s%s\", the merge of \"%s\" and \"%s\", is not a token of the vocabulary", path, ln,
                      side[0], side[1], side[0], side[1]);
  uint64_t key = (uint64_t)id[0] << 32 | (uint32_t)id[1];
  if (u64map_get(&b->merges, key)) surge_input_error("%s:%d: the merge \"%s %s\" is listed twice", path, ln, side[0], side[1]);
  *u64map_put(&b->merges, key) = (uint64_t)b->nmerges++ << 32 | (uint32_t)joined;
}

static void read_merges(bpe_t *b, const char *path, uint64_t *h) {
  size_t len;
  char *text = read_small(path, &len, h);
  if (memchr(text, '\0', len)) surge_input_error("%s: holds a NUL byte: not a merges.txt", path);
  uint8_t *scratch = xmalloc(len + 1);
  int ln = 0;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    ln++;
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r') line[--n] = '\0';
    if ((ln == 1 && strncmp(line, "#version", 8) == 0) || n == 0) continue;
    add_merge(b, path, ln, line, scratch);
  }
  free(scratch);
  free(text);
}

bpe_t *bpe_load(const char *vocab_path, const char *merges_path) {
  bpe_t *b = bpe_empty();
  uint64_t h = 0xcbf29ce484222325ULL;
  read_vocab(b, vocab_path, &h);
  read_merges(b, merges_path, &h);
  snprintf(b->hash, sizeof b->hash, "%016" PRIx64, h);
  return b;
}

void bpe_dir_files(const char *dir, char *vocab, char *merges, size_t n) {
  if ((size_t)snprintf(vocab, n, "%s/vocab.json", dir) >= n || (size_t)snprintf(merges, n, "%s/merges.txt", dir) >= n)
    surge_input_error("%s: a tokenizer directory's name of at most %zu bytes", dir, n - sizeof "/merges.txt");
}

bpe_t *bpe_load_dir(const char *dir) {
  char v[PATH_MAX], m[PATH_MAX];
  bpe_dir_files(dir, v, m, PATH_MAX);
  return bpe_load(v, m);
}
