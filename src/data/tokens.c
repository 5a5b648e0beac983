/* Token shards (llm.c's format, data/shard.h): the training split is the shards of [data] path
 * (a glob, or a directory's *train*.bin), the validation split those of val_path (default: the
 * *val*.bin of path's directory), each in name order. A shard of N tokens holds floor((N-1)/T)
 * samples: sample j is the window of T+1 tokens from token j*T (x = tokens[jT .. jT+T),
 * y = tokens[jT+1 .. jT+T]), so windows never cross shards and a split's samples are numbered
 * through its shards in order. Files are never loaded: opening checks every header and scans the
 * tokens in bounded chunks (a token not below the vocabulary is refused naming file and offset);
 * a sample is one bounded read. Memory: O(shards), whatever the corpus size. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "data/dataset_impl.h"
#include "data/shard.h"
#include "tok/bpe.h"

#define TOKENS_SHARDS_MAX 100000
#define TOKENS_SCAN_BYTES (1 << 20)

typedef struct shard {
  char *path;
  uint64_t first;   /* the split's id of its first sample */
  uint64_t samples; /* floor((tokens - 1) / T) */
} shard_t;

typedef struct split_shards {
  shard_t *s;
  size_t n;
} split_shards_t;

typedef struct tokens {
  split_shards_t split[2];
  int T;
  uint32_t vocab;
} tokens_t;

static void pread_all(int fd, void *buf, size_t n, uint64_t at, const char *path) {
  for (uint8_t *p = buf; n > 0;) {
    ssize_t r = pread(fd, p, n, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      surge_input_error("%s: offset %" PRIu64 ": %s", path, at, r < 0 ? strerror(errno) : "the file ends here");
    p += r, n -= (size_t)r, at += (uint64_t)r;
  }
}

static int open_shard(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) surge_input_error("%s: cannot open the shard: %s", path, strerror(errno));
  return fd;
}

/* The first token at or after i that may be other than 0: a hole of a sparse file reads as zeros,
 * token 0, below any vocabulary, so the scan skips it (SEEK_DATA; where unsupported, nothing). */
static uint64_t skip_hole(int fd, uint64_t i, uint64_t n) {
  off_t at = lseek(fd, (off_t)(SHARD_HEADER_BYTES + 2 * i), SEEK_DATA);
  if (at < 0) return errno == ENXIO ? n : i; /* ENXIO: only a hole up to the end */
  uint64_t t = ((uint64_t)at - SHARD_HEADER_BYTES) / 2;
  return t > i ? t : i;
}

/* Check one shard whole (header, then every token in bounded chunks); returns its token count. */
static uint64_t check_shard(const char *path, uint32_t vocab, uint8_t *buf) {
  int fd = open_shard(path);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) surge_input_error("%s: not a regular file", path);
  uint8_t h[SHARD_HEADER_BYTES] = {0};
  uint64_t n, size = (uint64_t)st.st_size;
  char err[256];
  if (size >= SHARD_HEADER_BYTES) pread_all(fd, h, sizeof h, 0, path);
  if (shard_header_check(h, size, &n, err, sizeof err) != 0) surge_input_error("%s: %s", path, err);
  for (uint64_t i = 0; i < n;) {
    i = skip_hole(fd, i, n);
    if (i >= n) break;
    size_t k = n - i < TOKENS_SCAN_BYTES / 2 ? (size_t)(n - i) : TOKENS_SCAN_BYTES / 2;
    pread_all(fd, buf, 2 * k, SHARD_HEADER_BYTES + 2 * i, path);
    for (size_t j = 0; j < k; j++) {
      uint32_t id = (uint32_t)buf[2 * j] | (uint32_t)buf[2 * j + 1] << 8;
      if (id >= vocab)
        surge_input_error("%s: offset %" PRIu64 ": token %" PRIu32 " is not below the vocabulary of %" PRIu32
                          " (hint: [data] tokenizer or vocab_size must be the one that made the shards)",
                          path, SHARD_HEADER_BYTES + 2 * (i + j), id, vocab);
    }
    i += k;
  }
  close(fd);
  return n;
}

/* s with glob(3)'s special characters escaped into out (n bytes): -1 when it does not fit. */
static int glob_escaped(const char *s, char *out, size_t n) {
  size_t k = 0;
  for (; *s; s++) {
    if (strchr("*?[\\", *s) && k + 1 < n) out[k++] = '\\';
    if (k + 1 >= n) return -1;
    out[k++] = *s;
  }
  out[k] = '\0';
  return 0;
}

/* The shards a path names: a directory's files whose names hold `part` and end in .bin, a file, or
 * (a path that does not exist) a glob. An existing path is taken as it is written, whatever
 * characters its name holds: tk[x] is that directory, not tkx. */
static void find_shards(const char *path, const char *part, split_shards_t *sp, const char *key) {
  char pattern[PATH_MAX], dir[PATH_MAX];
  struct stat st;
  int exists = stat(path, &st) == 0, k;
  if (exists && S_ISDIR(st.st_mode))
    k = glob_escaped(path, dir, sizeof dir) != 0 ? -1 : snprintf(pattern, sizeof pattern, "%s/*%s*.bin", dir, part);
  else if (exists)
    k = glob_escaped(path, pattern, sizeof pattern);
  else
    k = snprintf(pattern, sizeof pattern, "%s", path);
  if (k < 0 || (size_t)k >= sizeof pattern) surge_input_error("[data] %s: the path is too long", key);
  if (!strpbrk(path, "*?[") && stat(path, &st) != 0)
    surge_input_error("[data] %s = %s: %s (hint: tools/make-corpus.sh builds the corpus of the shipped decks; "
                      "surge-tokenize encode any other, doc/data.md)", key, path, strerror(errno));
  glob_t g;
  int rc = glob(pattern, GLOB_ERR, NULL, &g);
  if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0))
    surge_input_error("[data] %s = %s: no shard matches %s (hint: surge-tokenize encode writes PREFIX_train_*.bin "
                      "and PREFIX_val_*.bin; doc/data.md)", key, path, pattern);
  if (rc != 0) surge_input_error("[data] %s = %s: cannot list %s", key, path, pattern);
  if (g.gl_pathc > TOKENS_SHARDS_MAX)
    surge_input_error("[data] %s: %zu shards, more than %d", key, (size_t)g.gl_pathc, TOKENS_SHARDS_MAX);
  sp->n = g.gl_pathc;
  sp->s = xcalloc(sp->n, sizeof *sp->s);
  for (size_t i = 0; i < sp->n; i++) sp->s[i].path = xstrdup(g.gl_pathv[i]); /* glob sorts them */
  globfree(&g);
}

typedef struct file_id {
  dev_t dev;
  ino_t ino;
  size_t shard;
} file_id_t;

static int by_file(const void *a, const void *b) {
  const file_id_t *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return (x->ino > y->ino) - (x->ino < y->ino);
}

/* No shard in both splits (the same file, by device and inode): a validation loss measured on the
 * training data would say nothing. One stat a shard, the training ones sorted (up to 10^5 each). */
static void check_apart(const split_shards_t *train, const split_shards_t *val) {
  file_id_t *ids = xcalloc(train->n + 1, sizeof *ids);
  size_t n = 0;
  struct stat st;
  for (size_t j = 0; j < train->n; j++)
    if (stat(train->s[j].path, &st) == 0) ids[n++] = (file_id_t){st.st_dev, st.st_ino, j};
  qsort(ids, n, sizeof *ids, by_file);
  for (size_t i = 0; i < val->n; i++) {
    file_id_t key = {0, 0, 0};
    if (stat(val->s[i].path, &st) != 0) continue; /* (check_shard names it) */
    key.dev = st.st_dev;
    key.ino = st.st_ino;
    const file_id_t *same = bsearch(&key, ids, n, sizeof *ids, by_file);
    if (same)
      surge_input_error("[data] val_path: the shard %s is also a training shard (%s): the validation loss would be "
                        "measured on the training data (hint: val_path names the *val*.bin shards)",
                        val->s[i].path, train->s[same->shard].path);
  }
  free(ids);
}

static uint64_t count_samples(split_shards_t *sp, int T, uint32_t vocab, const char *what) {
  uint8_t *buf = xmalloc(TOKENS_SCAN_BYTES);
  uint64_t total = 0;
  for (size_t i = 0; i < sp->n; i++) {
    uint64_t n = check_shard(sp->s[i].path, vocab, buf);
    sp->s[i].first = total;
    sp->s[i].samples = n > 0 ? (n - 1) / (uint64_t)T : 0;
    total += sp->s[i].samples;
  }
  free(buf);
  if (total == 0)
    surge_input_error("%s: the %s shards hold no window of gpt_context+1 = %d tokens (hint: more text, or a smaller "
                      "[model] gpt_context)", sp->s[0].path, what, T + 1);
  return total;
}

static void tokens_get(const dataset_t *ds, data_split_t split, uint64_t id, float *x, float *y) {
  const tokens_t *t = ds->source;
  const split_shards_t *sp = &t->split[split];
  size_t lo = 0, hi = sp->n; /* the last shard with first <= id */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (sp->s[mid].first <= id) lo = mid;
    else hi = mid;
  }
  const shard_t *s = &sp->s[lo];
  uint64_t at = SHARD_HEADER_BYTES + 2 * (id - s->first) * (uint64_t)t->T;
  size_t n = (size_t)t->T + 1;
  uint8_t *w = xmalloc(2 * n); /* (T+1) little-endian uint16 */
  int fd = open_shard(s->path);
  pread_all(fd, w, 2 * n, at, s->path);
  close(fd);
  for (size_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)w[2 * i] | (uint32_t)w[2 * i + 1] << 8;
    if (v >= t->vocab) /* the file changed since it was checked */
      surge_input_error("%s: offset %" PRIu64 ": token %" PRIu32 " is not below the vocabulary of %" PRIu32, s->path,
                        at + 2 * i, v, t->vocab);
    if (i < n - 1) x[i] = (float)v;
    if (i > 0) y[i - 1] = (float)v;
  }
  free(w);
}

static void tokens_free(void *source) {
  tokens_t *t = source;
  for (int s = 0; s < 2; s++) {
    for (size_t i = 0; i < t->split[s].n; i++) free(t->split[s].s[i].path);
    free(t->split[s].s);
  }
  free(t);
}

/* The vocabulary: the tokenizer's, or [data] vocab_size; both given must agree. */
static uint32_t vocabulary(const data_opts_t *o, char hash[17]) {
  hash[0] = '\0';
  if (!o->tokenizer[0]) {
    if (o->vocab_size < 1)
      surge_input_error("[data] source = tokens needs the vocabulary: [data] tokenizer = the directory of the "
                        "vocab.json + merges.txt that made the shards, or [data] vocab_size (GPT-2: 50257)");
    return (uint32_t)o->vocab_size;
  }
  struct stat st;
  errno = 0;
  if (stat(o->tokenizer, &st) != 0 || !S_ISDIR(st.st_mode))
    surge_input_error("[data] tokenizer = %s: %s (hint: the directory of vocab.json + merges.txt; "
                      "tools/make-corpus.sh builds the shipped decks' one)", o->tokenizer,
                      errno ? strerror(errno) : "not a directory");
  bpe_t *b = bpe_load_dir(o->tokenizer);
  uint32_t n = (uint32_t)b->n;
  memcpy(hash, b->hash, 17);
  bpe_free(b);
  if (o->vocab_size && (uint32_t)o->vocab_size != n)
    surge_input_error("[data] vocab_size = %ld, but the tokenizer %s has %" PRIu32 " tokens (hint: leave vocab_size 0)",
                      o->vocab_size, o->tokenizer, n);
  return n;
}

void tokens_open(dataset_t *ds, const data_opts_t *o) {
  int T = o->context;
  if (T < 1) surge_input_error("[model] gpt_context = %d must be at least 1 for the tokens source", T);
  if (!o->path[0]) surge_input_error("[data] source = tokens needs [data] path: the training shards (doc/data.md)");
  tokens_t *t = xcalloc(1, sizeof *t);
  t->T = T;
  t->vocab = vocabulary(o, ds->vocab_hash);
  find_shards(o->path, "train", &t->split[SPLIT_TRAIN], "path");
  char val[DATA_PATH_MAX];
  if (o->val_path[0]) {
    snprintf(val, sizeof val, "%s", o->val_path);
  } else {
    struct stat st;
    if (stat(o->path, &st) != 0 || !S_ISDIR(st.st_mode))
      surge_input_error("[data] path = %s is a glob: name the validation shards with [data] val_path", o->path);
    snprintf(val, sizeof val, "%s", o->path);
  }
  find_shards(val, "val", &t->split[SPLIT_TEST], "val_path");
  check_apart(&t->split[SPLIT_TRAIN], &t->split[SPLIT_TEST]);
  ds->size[SPLIT_TRAIN] = count_samples(&t->split[SPLIT_TRAIN], T, t->vocab, "training");
  ds->size[SPLIT_TEST] = count_samples(&t->split[SPLIT_TEST], T, t->vocab, "validation");

  snprintf(ds->name, sizeof ds->name, "tokens");
  ds->test_split = "validation";
  ds->sample_shape = shape1(T);
  ds->classes = (int)t->vocab;
  ds->targets_per_sample = T;
  ds->is_tokens = 1;
  ds->token_unit = "token";
  ds->order_implicit = 1;
  ds->get_sample = tokens_get;
  ds->free_source = tokens_free;
  ds->source = t;
}
