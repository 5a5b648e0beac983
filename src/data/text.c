/* Byte-level text: the tokens are the bytes of a file, or of every regular file of a directory in
 * name order, concatenated. The last val_fraction of the bytes is the validation split. A sample is
 * a window of T+1 bytes: x = bytes[s..s+T), y = bytes[s+1..s+T]. Training windows start at every
 * byte (id i starts at byte i); validation windows do not overlap (id j starts at j*T of the split),
 * so evaluation is a small fixed set. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/infile.h"
#include "data/dataset_impl.h"

#define TEXT_DEFAULT_DIR "/usr/share/games/fortunes"
#define TEXT_DEFAULT_HINT "apt-get install fortunes, or set [data] path to a text file or directory"
#define TEXT_USER_HINT "[data] path names a text file, or a directory whose files are read in name order"
#define TEXT_VOCAB 256

typedef struct text {
  uint8_t *bytes;       /* (total) */
  uint64_t total;
  uint64_t train_bytes; /* training split: bytes[0, train_bytes); validation: the rest */
  int T;
} text_t;

typedef struct byte_buf {
  uint8_t *p;
  size_t n, cap;
} byte_buf_t;

static void reserve(byte_buf_t *b, size_t extra) {
  if (extra <= b->cap - b->n) return;
  size_t cap = b->cap ? b->cap : 1 << 16;
  while (cap - b->n < extra) cap = surge_mul_size(cap, 2, "text buffer");
  b->p = xrealloc(b->p, cap);
  b->cap = cap;
}

static void append_file(byte_buf_t *b, const char *path, const char *hint) {
  FILE *f = infile_fopen(path, hint);
  if (!f) {
    if (errno == ENOENT) surge_input_error("%s: no such file or directory (hint: %s)", path, hint);
    surge_input_error("%s: cannot open: %s", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && st.st_size > 0) reserve(b, (size_t)st.st_size);
  for (;;) {
    reserve(b, 1 << 16);
    size_t got = fread(b->p + b->n, 1, b->cap - b->n, f);
    b->n += got;
    if (got == 0) break;
  }
  if (ferror(f)) surge_input_error("%s: read error: %s", path, strerror(errno));
  fclose(f);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Append the directory's regular files in byte-wise name order, skipping hidden files, and, when
 * plain_names_only, names with an extension (the fortunes package's *.dat indexes and *.u8 links). */
static void append_directory(byte_buf_t *b, const char *dir, int plain_names_only, const char *hint) {
  DIR *d = opendir(dir);
  if (!d) surge_input_error("%s: cannot read directory: %s (hint: %s)", dir, strerror(errno), hint);
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || (plain_names_only && strchr(e->d_name, '.'))) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      names = xrealloc(names, cap * sizeof *names);
    }
    names[n++] = xstrdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  int files = 0;
  for (size_t i = 0; i < n; i++) {
    char path[PATH_MAX];
    struct stat st;
    int k = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (k > 0 && (size_t)k < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      append_file(b, path, hint);
      files++;
    }
    free(names[i]);
  }
  free(names);
  if (files == 0) surge_input_error("%s: no text files in this directory (hint: %s)", dir, hint);
}

static void text_get(const dataset_t *ds, data_split_t split, uint64_t id, float *x, float *y) {
  const text_t *t = ds->source;
  uint64_t start = split == SPLIT_TRAIN ? id : t->train_bytes + id * (uint64_t)t->T;
  const uint8_t *w = t->bytes + start; // w is (T+1)
  for (int i = 0; i < t->T; i++) {
    x[i] = (float)w[i];
    y[i] = (float)w[i + 1];
  }
}

static void text_free(void *source) {
  text_t *t = source;
  free(t->bytes);
  free(t);
}

static void check_split_length(const char *path, const char *split, uint64_t bytes, int T, const char *hint) {
  if (bytes < (uint64_t)T + 1)
    surge_input_error("%s: the %s split has %" PRIu64 " bytes, fewer than one sequence of gpt_context+1 = %d "
                      "(hint: %s)", path, split, bytes, T + 1, hint);
}

void text_open(dataset_t *ds, const data_opts_t *o) {
  int T = o->context;
  if (T < 1) surge_input_error("[model] gpt_context = %d must be at least 1 for the text source", T);
  if (!(o->val_fraction > 0.0 && o->val_fraction < 1.0))
    surge_input_error("[data] val_fraction = %g must be in (0, 1): every run evaluates on the validation split",
                      o->val_fraction);

  const char *path = o->path[0] ? o->path : TEXT_DEFAULT_DIR;
  byte_buf_t b = {0};
  struct stat st;
  if (!o->path[0]) {
    append_directory(&b, path, 1, TEXT_DEFAULT_HINT);
  } else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    append_directory(&b, path, 0, TEXT_USER_HINT);
  } else {
    append_file(&b, path, TEXT_USER_HINT);
  }

  text_t *t = xcalloc(1, sizeof *t);
  t->bytes = b.p;
  t->total = b.n;
  t->T = T;
  uint64_t val_bytes = (uint64_t)((double)t->total * o->val_fraction);
  t->train_bytes = t->total - val_bytes;
  check_split_length(path, "training", t->train_bytes, T,
                     "a longer text, a smaller [model] gpt_context or a smaller [data] val_fraction");
  check_split_length(path, "validation", val_bytes, T,
                     "a larger [data] val_fraction, a longer text or a smaller [model] gpt_context");
  ds->size[SPLIT_TRAIN] = t->train_bytes - (uint64_t)T;
  ds->size[SPLIT_TEST] = (val_bytes - 1) / (uint64_t)T;

  snprintf(ds->name, sizeof ds->name, "text");
  ds->test_split = "validation";
  ds->sample_shape = shape1(T);
  ds->classes = TEXT_VOCAB;
  ds->targets_per_sample = T;
  ds->is_tokens = 1;
  ds->token_unit = "byte";
  ds->get_sample = text_get;
  ds->free_source = text_free;
  ds->source = t;
}
