/* Datasets and the sampler: real Fashion-MNIST (skipped without the package), bad IDX files made
 * at run time in a temporary directory, byte-level text windows, the synthetic generator, and the
 * epoch permutations of the training stream. Paths that must exit run in a forked child whose exit
 * status and stderr are checked. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "child.h"
#include "tap.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define FORTUNES_DIR "/usr/share/games/fortunes"
#define PIX 784

static char tmpdir[128];

static data_opts_t make_cfg(const char *source, const char *path) {
  data_opts_t c;
  memset(&c, 0, sizeof c);
  snprintf(c.source, sizeof c.source, "%s", source);
  snprintf(c.path, sizeof c.path, "%s", path);
  c.seed = 1234;
  c.context = 8;
  c.val_fraction = 0.1;
  c.synthetic_samples = 600;
  return c;
}

/* ---- children that must fail ---------------------------------------------------------------- */

static void open_in_child(const void *cfg) { dataset_close(dataset_open(*(const data_opts_t *)cfg)); }

/* dataset_open(cfg) must exit with `code` and print one line holding needle (and needle2 unless NULL). */
static void expect_open_fails(const data_opts_t *cfg, int code, const char *what, const char *needle, const char *needle2) {
  child_result_t res = run_in_child(open_in_child, cfg);
  const char *needles[] = {needle, needle2};
  tap_diag("%s: %s", what, res.err);
  tap_ok(res.status == code, "%s: exit status %d (expected %d)", what, res.status, code);
  tap_ok(child_wrote_one_line_with(&res, needles, 2), "%s: one-line message names '%s'%s%s", what, needle,
         needle2 ? " and " : "", needle2 ? needle2 : "");
}

/* dataset_open with the address space limited to 1 GiB: a header that lies about its size must be
 * refused from what the file holds, never by trying to allocate what it claims. (AddressSanitizer
 * maps terabytes of shadow memory, so under it the limit is left out: its allocator then reports
 * nothing, and the message is checked all the same.) */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
static void open_in_small_child(const void *cfg) {
#ifndef UNDER_ASAN
  struct rlimit lim = {1ul << 30, 1ul << 30};
  setrlimit(RLIMIT_AS, &lim);
#endif
  open_in_child(cfg);
}

static void expect_small_open_fails(const data_opts_t *cfg, const char *what, const char *needle, const char *needle2) {
  child_result_t res = run_in_child(open_in_small_child, cfg);
  const char *needles[] = {needle, needle2};
  tap_diag("%s: %s", what, res.err);
  tap_ok(res.status == 2 && child_wrote_one_line_with(&res, needles, 2),
         "%s: exit 2 (got %d) within 1 GiB, one line naming '%s' and '%s'", what, res.status, needle, needle2);
}

/* ---- Fashion-MNIST -------------------------------------------------------------------------- */

static void test_fmnist_real(void) {
  const char *need = FMNIST_DIR "/train-images-idx3-ubyte.gz";
  if (access(need, R_OK) != 0) {
    for (int i = 0; i < 12; i++) tap_skip("dataset-fashion-mnist is not installed");
    return;
  }
  data_opts_t cfg = make_cfg("fashion-mnist", "");
  dataset_t *ds = dataset_open(cfg);
  shape_t s = dataset_sample_shape(ds);
  tap_ok(strcmp(dataset_name(ds), "fashion-mnist") == 0, "name is fashion-mnist");
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 60000 && dataset_size(ds, SPLIT_TEST) == 10000,
         "60000 training and 10000 test images (got %llu, %llu)", (unsigned long long)dataset_size(ds, SPLIT_TRAIN),
         (unsigned long long)dataset_size(ds, SPLIT_TEST));
  tap_ok(s.ndim == 3 && s.d[0] == 1 && s.d[1] == 28 && s.d[2] == 28 && dataset_classes(ds) == 10 &&
             dataset_targets_per_sample(ds) == 1 && !dataset_is_tokens(ds),
         "sample shape (1,28,28), 10 classes, 1 target, not tokens");

  /* Whole training split in batches: label histogram and pixel statistics. */
  enum { CHUNK = 1000 };
  float *x = malloc(sizeof(float) * CHUNK * PIX), y[CHUNK];
  uint64_t ids[CHUNK];
  long hist[10] = {0};
  double sum = 0, first_sum = 0;
  float lo = 1, hi = 0, first_label = -1;
  int bad_label = 0;
  for (uint64_t base = 0; base < 60000; base += CHUNK) {
    for (int i = 0; i < CHUNK; i++) ids[i] = base + (uint64_t)i;
    dataset_get(ds, SPLIT_TRAIN, ids, CHUNK, x, y);
    if (base == 0) {
      first_label = y[0];
      for (int p = 0; p < PIX; p++) first_sum += x[p];
    }
    for (size_t p = 0; p < (size_t)CHUNK * PIX; p++) {
      sum += x[p];
      if (x[p] < lo) lo = x[p];
      if (x[p] > hi) hi = x[p];
    }
    for (int i = 0; i < CHUNK; i++) {
      int l = (int)y[i];
      if (l < 0 || l > 9 || (float)l != y[i]) bad_label = 1;
      else hist[l]++;
    }
  }
  tap_ok(first_label == 9.0f, "first training label is 9 (ankle boot), got %g", first_label);
  tap_ok(fabs(first_sum - 76247.0 / 255.0) < 1e-3, "first image pixel sum %.4f (expected 76247/255 = %.4f)",
         first_sum, 76247.0 / 255.0);
  double mean = sum / (60000.0 * PIX);
  tap_ok(fabs(mean - 0.2860406) < 1e-6, "training pixel mean %.7f (expected 0.2860406)", mean);
  tap_ok(lo == 0.0f && hi == 1.0f, "pixels span [0,1] (min %g, max %g)", lo, hi);
  int balanced = !bad_label;
  for (int c = 0; c < 10; c++) balanced &= hist[c] == 6000;
  tap_ok(balanced, "6000 training images per class");

  ids[0] = 0;
  dataset_get(ds, SPLIT_TEST, ids, 1, x, y);
  tap_ok(y[0] == 9.0f, "first test label is 9, got %g", y[0]);

  /* Limits keep the first N samples. */
  float *x0 = malloc(sizeof(float) * PIX), y0;
  ids[0] = 99;
  dataset_get(ds, SPLIT_TRAIN, ids, 1, x0, &y0);
  data_opts_t lim = cfg;
  lim.train_samples = 100;
  lim.test_samples = 50;
  dataset_t *dl = dataset_open(lim);
  dataset_get(dl, SPLIT_TRAIN, ids, 1, x, y);
  tap_ok(dataset_size(dl, SPLIT_TRAIN) == 100 && dataset_size(dl, SPLIT_TEST) == 50 &&
             memcmp(x, x0, sizeof(float) * PIX) == 0 && y[0] == y0,
         "train_samples=100, test_samples=50: sizes 100/50, sample 99 unchanged");
  dataset_close(dl);
  lim.train_samples = 60001;
  expect_open_fails(&lim, 2, "train_samples beyond the split", "train_samples = 60001", "60000");
  free(x0);
  free(x);
  dataset_close(ds);
}

/* Write an IDX file (gzip-compressed when the name ends in .gz): magic, dims, then `bytes` bytes
 * of data (data may be shorter or longer than the dims say, to make bad files). */
static void write_idx(const char *name, uint32_t magic, int ndim, const uint32_t *dims, const uint8_t *data,
                      size_t bytes) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  uint8_t hdr[16];
  uint32_t words[4] = {magic, dims[0], ndim > 1 ? dims[1] : 0, ndim > 2 ? dims[2] : 0};
  for (int w = 0; w < 1 + ndim; w++)
    for (int b = 0; b < 4; b++) hdr[4 * w + b] = (uint8_t)(words[w] >> (24 - 8 * b));
  size_t len = strlen(name);
  int gz = len > 3 && strcmp(name + len - 3, ".gz") == 0;
  gzFile f = gzopen(path, gz ? "wb" : "wbT");
  gzwrite(f, hdr, (unsigned)(4 + 4 * ndim));
  if (bytes) gzwrite(f, data, (unsigned)bytes);
  gzclose(f);
}

/* A tiny valid set: n_train and n_test images whose pixel p of image i is (i * 7 + p) % 256;
 * labels i % 10. ext is ".gz" or "". */
static void write_tiny_set(uint32_t n_train, uint32_t n_test, const char *ext) {
  static uint8_t pix[16 * PIX], lab[16];
  for (int i = 0; i < 16; i++) {
    lab[i] = (uint8_t)(i % 10);
    for (int p = 0; p < PIX; p++) pix[i * PIX + p] = (uint8_t)((i * 7 + p) % 256);
  }
  char name[64];
  const char *prefix[2] = {"train", "t10k"};
  uint32_t n[2] = {n_train, n_test};
  for (int s = 0; s < 2; s++) {
    uint32_t idims[3] = {n[s], 28, 28}, ldims[1] = {n[s]};
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", prefix[s], ext);
    write_idx(name, 0x803, 3, idims, pix, (size_t)n[s] * PIX);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", prefix[s], ext);
    write_idx(name, 0x801, 1, ldims, lab, n[s]);
  }
}

static void clear_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  char path[600];
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
    if (unlink(path) != 0) rmdir(path);
  }
  if (d) closedir(d);
}

static void test_fmnist_files(void) {
  data_opts_t cfg = make_cfg("fashion-mnist", tmpdir);
  char train_images[512];
  snprintf(train_images, sizeof train_images, "%s/train-images-idx3-ubyte.gz", tmpdir);

  write_tiny_set(5, 3, ".gz");
  dataset_t *ds = dataset_open(cfg);
  float x[2 * PIX], y[2];
  uint64_t ids[2] = {4, 1};
  dataset_get(ds, SPLIT_TRAIN, ids, 2, x, y);
  int pixels_ok = 1;
  for (int p = 0; p < PIX; p++) {
    pixels_ok &= x[p] == (float)((4 * 7 + p) % 256) / 255.0f;
    pixels_ok &= x[PIX + p] == (float)((1 * 7 + p) % 256) / 255.0f;
  }
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 5 && dataset_size(ds, SPLIT_TEST) == 3 && pixels_ok && y[0] == 4 &&
             y[1] == 1,
         "tiny gzip set: sizes 5/3, pixels /255 and labels of ids {4,1} as written");
  dataset_close(ds);

  clear_tmpdir();
  write_tiny_set(4, 2, "");
  ds = dataset_open(cfg);
  dataset_get(ds, SPLIT_TEST, ids + 1, 1, x, y);
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 4 && x[10] == (float)(7 + 10) / 255.0f && y[0] == 1,
         "uncompressed IDX files are read when the .gz names are absent");
  dataset_close(ds);

  uint8_t junk[8 * PIX] = {0}, labels[8] = {0};
  uint32_t d5[3] = {5, 28, 28}, l5[1] = {5};

  clear_tmpdir();
  write_tiny_set(5, 3, ".gz");
  write_idx("train-images-idx3-ubyte.gz", 0x12345678, 3, d5, junk, 5 * PIX);
  expect_open_fails(&cfg, 2, "bad magic", train_images, "bad IDX magic 0x12345678 (expected 0x00000803");

  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, d5, junk, 4 * PIX + 100);
  expect_open_fails(&cfg, 2, "truncated images", train_images, "truncated");

  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, d5, junk, 5 * PIX + 1);
  expect_open_fails(&cfg, 2, "extra bytes", train_images, "more data than the header");

  uint32_t huge[3] = {0x80000000u, 28, 28};
  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, huge, junk, 5 * PIX);
  expect_open_fails(&cfg, 2, "header claiming 2^31 images", train_images, "header claims 2147483648 images");

  /* 4 MiB files whose headers claim 3.9 GB: an uncompressed one holds just its bytes; a gzip one
   * (incompressible content) may claim 1032 times its size, and is read only as far as its data go */
  size_t big = (size_t)4 << 20;
  uint8_t *noise = xmalloc(big);
  rng_t rng;
  rng_seed(&rng, 17);
  for (size_t i = 0; i < big; i++) noise[i] = (uint8_t)(rng_u64(&rng) >> 56);
  uint32_t claims[3] = {5000000, 28, 28};
  char train_raw[512];
  snprintf(train_raw, sizeof train_raw, "%s/train-images-idx3-ubyte", tmpdir);
  clear_tmpdir();
  write_tiny_set(5, 3, "");
  write_idx("train-images-idx3-ubyte", 0x803, 3, claims, noise, big);
  expect_small_open_fails(&cfg, "uncompressed file claiming 1000 times its size", train_raw,
                          "more than this uncompressed 4194320-byte file can hold");
  clear_tmpdir();
  write_tiny_set(5, 3, ".gz");
  uint8_t *zeros = xcalloc(claims[0], 1); /* labels as many as the images claim: the count agrees */
  write_idx("train-labels-idx1-ubyte.gz", 0x801, 1, claims, zeros, claims[0]);
  free(zeros);
  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, claims, noise, big);
  expect_small_open_fails(&cfg, "gzip file claiming 900 times its data", train_images,
                          "data ends after 4194304 of the 3920000000 bytes");
  /* a small gzip file of images whose header claims another shape: refused on the header, before a
   * byte of its data is inflated */
  clear_tmpdir();
  write_tiny_set(5, 3, ".gz");
  uint32_t wide[3] = {5, 28, 5000000};
  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, wide, noise, big);
  expect_small_open_fails(&cfg, "gzip images of another shape, on the header", train_images,
                          "images are 28x5000000, expected 28x28 for Fashion-MNIST");
  free(noise);
  clear_tmpdir();
  write_tiny_set(5, 3, ".gz");

  uint32_t d27[3] = {5, 27, 28};
  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, d27, junk, 5 * 27 * 28);
  expect_open_fails(&cfg, 2, "27x28 images", train_images, "expected 28x28");

  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, d5, junk, 5 * PIX);
  uint32_t l4[1] = {4};
  write_idx("train-labels-idx1-ubyte.gz", 0x801, 1, l4, labels, 4);
  expect_open_fails(&cfg, 2, "4 labels for 5 images (on the images' header, before their data)",
                    "train-images-idx3-ubyte.gz: 5 images, but the labels file", "train-labels-idx1-ubyte.gz holds 4");

  labels[3] = 10;
  write_idx("train-labels-idx1-ubyte.gz", 0x801, 1, l5, labels, 5);
  expect_open_fails(&cfg, 2, "label 10", "train-labels-idx1-ubyte.gz", "label 10 of sample 3 is out of range");

  write_idx("train-labels-idx1-ubyte.gz", 0x803, 1, l5, labels, 5);
  expect_open_fails(&cfg, 2, "images magic in a labels file", "train-labels-idx1-ubyte.gz",
                    "expected 0x00000801 for labels");

  /* Corrupt gzip: flip bytes in the middle of a valid compressed file. */
  write_tiny_set(5, 3, ".gz");
  FILE *f = fopen(train_images, "r+b");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, size / 2, SEEK_SET);
  uint8_t garbage[16];
  memset(garbage, 0xA5, sizeof garbage);
  fwrite(garbage, 1, sizeof garbage, f);
  fclose(f);
  expect_open_fails(&cfg, 2, "corrupt gzip", train_images, "corrupt gzip data");

  /* A download cut short: half of a valid compressed file. */
  write_tiny_set(5, 3, ".gz");
  if (truncate(train_images, size / 2) != 0) perror("truncate");
  expect_open_fails(&cfg, 2, "gzip file cut in half", train_images, "unexpected end of file");

  /* Cut short by just its 8-byte trailer (CRC32, size): zlib reads data larger than its buffer
   * without an error, and nothing would check it (a flipped bit in the pixels trained with exit 0). */
  write_tiny_set(5, 3, ".gz");
  enum { MANY = 64 }; /* 50 KB of pixels: read past zlib's buffer */
  static uint8_t many_pix[MANY * PIX], many_lab[MANY];
  for (int i = 0; i < MANY * PIX; i++) many_pix[i] = (uint8_t)(i * 2654435761u >> 24);
  uint32_t dm[3] = {MANY, 28, 28}, lm[1] = {MANY};
  write_idx("train-images-idx3-ubyte.gz", 0x803, 3, dm, many_pix, sizeof many_pix);
  write_idx("train-labels-idx1-ubyte.gz", 0x801, 1, lm, many_lab, MANY);
  f = fopen(train_images, "rb");
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fclose(f);
  if (truncate(train_images, size - 8) != 0) perror("truncate");
  expect_open_fails(&cfg, 2, "gzip file without its trailer", train_images, "ends before its trailer");

  clear_tmpdir();
  expect_open_fails(&cfg, 2, "missing files", "train-labels-idx1-ubyte.gz", "no such file (hint:");

  char notdir[512];
  snprintf(notdir, sizeof notdir, "%s/nothing-here", tmpdir);
  data_opts_t cfg2 = make_cfg("fashion-mnist", notdir);
  expect_open_fails(&cfg2, 2, "[data] path that is not a directory", notdir, "not a directory");

  data_opts_t cfg3 = make_cfg("mnist", "");
  expect_open_fails(&cfg3, 2, "unknown source", "source = 'mnist'", "fashion-mnist, text, tokens, synthetic");
}

/* ---- text ----------------------------------------------------------------------------------- */

static void write_file(const char *name, const uint8_t *data, size_t n) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  fwrite(data, 1, n, f);
  fclose(f);
}

typedef struct get_args {
  const dataset_t *ds;
  data_split_t split;
  uint64_t id;
} get_args_t;

static void get_in_child(const void *p) {
  const get_args_t *a = p;
  float x[64], y[64];
  dataset_get(a->ds, a->split, &a->id, 1, x, y);
}

static void test_text(void) {
  clear_tmpdir();
  enum { N = 200, T = 8 };
  uint8_t buf[N];
  for (int i = 0; i < N; i++) buf[i] = (uint8_t)(i % 251);
  write_file("corpus.txt", buf, N);
  char path[512];
  snprintf(path, sizeof path, "%s/corpus.txt", tmpdir);
  data_opts_t cfg = make_cfg("text", path);
  cfg.context = T;
  cfg.val_fraction = 0.25; /* 50 validation bytes, 150 training bytes */
  dataset_t *ds = dataset_open(cfg);
  shape_t s = dataset_sample_shape(ds);
  tap_ok(s.ndim == 1 && s.d[0] == T && dataset_classes(ds) == 256 && dataset_targets_per_sample(ds) == T &&
             dataset_is_tokens(ds),
         "text: sample shape (T), 256 classes, T targets, tokens");
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 150 - T && dataset_size(ds, SPLIT_TEST) == (50 - 1) / T,
         "text: %llu training windows (expected %d), %llu validation windows (expected %d)",
         (unsigned long long)dataset_size(ds, SPLIT_TRAIN), 150 - T,
         (unsigned long long)dataset_size(ds, SPLIT_TEST), (50 - 1) / T);

  float x[3 * T], y[3 * T];
  uint64_t ids[3] = {3, 0, 150 - T - 1};
  dataset_get(ds, SPLIT_TRAIN, ids, 3, x, y);
  int win_ok = 1;
  for (int k = 0; k < 3; k++)
    for (int t = 0; t < T; t++) {
      win_ok &= x[k * T + t] == (float)(ids[k] + (uint64_t)t);
      win_ok &= y[k * T + t] == (float)(ids[k] + (uint64_t)t + 1);
    }
  tap_ok(win_ok, "text: training window i is bytes [i, i+T), targets shifted by one");
  float last_train_byte = y[3 * T - 1];

  uint64_t vids[2] = {0, 5};
  dataset_get(ds, SPLIT_TEST, vids, 2, x, y);
  int val_ok = 1;
  for (int k = 0; k < 2; k++)
    for (int t = 0; t < T; t++) {
      val_ok &= x[k * T + t] == (float)(150 + vids[k] * T + (uint64_t)t);
      val_ok &= y[k * T + t] == (float)(150 + vids[k] * T + (uint64_t)t + 1);
    }
  tap_ok(val_ok, "text: validation window j is bytes [150 + j*T, ...), non-overlapping");
  tap_ok(last_train_byte == 149.0f && x[0] == 150.0f,
         "text: splits are disjoint (last training target byte %g, first validation byte %g)", last_train_byte, x[0]);

  get_args_t ga = {ds, SPLIT_TEST, (50 - 1) / T};
  child_result_t res = run_in_child(get_in_child, &ga);
  tap_ok(res.status == 1 && strstr(res.err, "sample id 6 is outside the validation split"),
         "dataset_get of an id past the split is a runtime error (status %d: %s)", res.status, res.err);
  dataset_close(ds);

  data_opts_t lim = cfg;
  lim.train_samples = 10;
  lim.test_samples = 2;
  ds = dataset_open(lim);
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 10 && dataset_size(ds, SPLIT_TEST) == 2, "text: limits 10/2 apply");
  dataset_close(ds);
  lim.test_samples = 7;
  expect_open_fails(&lim, 2, "text test_samples beyond the split", "test_samples = 7", "6 validation samples");

  data_opts_t c = cfg;
  c.context = 150;
  expect_open_fails(&c, 2, "context longer than the training split", path, "training split has 150 bytes");
  c = cfg;
  c.val_fraction = 0.02;
  expect_open_fails(&c, 2, "validation split too short", path, "validation split has 4 bytes");
  c = cfg;
  snprintf(c.path, sizeof c.path, "%s/absent.txt", tmpdir);
  expect_open_fails(&c, 2, "missing text file", "absent.txt: no such file", NULL);

  /* A directory: regular files in name order, hidden files and subdirectories skipped. */
  clear_tmpdir();
  uint8_t a[100], b[60], h[10];
  memset(a, 'a', sizeof a);
  memset(b, 'b', sizeof b);
  memset(h, 'h', sizeof h);
  write_file("b-second", b, sizeof b);
  write_file("a-first", a, sizeof a);
  write_file(".hidden", h, sizeof h);
  char sub[600];
  snprintf(sub, sizeof sub, "%s/sub", tmpdir);
  mkdir(sub, 0700);
  c = make_cfg("text", tmpdir);
  c.context = T;
  c.val_fraction = 0.25; /* 160 bytes: 120 training, 40 validation */
  ds = dataset_open(c);
  uint64_t edge = 100 - T; /* the window whose targets end at the first 'b' */
  dataset_get(ds, SPLIT_TRAIN, &edge, 1, x, y);
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 120 - T && x[0] == 'a' && x[T - 1] == 'a' && y[T - 1] == 'b',
         "text directory: files concatenated in name order, hidden file and subdirectory skipped");
  dataset_close(ds);
  rmdir(sub);
}

static void test_fortunes(void) {
  DIR *d = opendir(FORTUNES_DIR);
  if (!d) {
    for (int i = 0; i < 2; i++) tap_skip("the fortunes package is not installed");
    return;
  }
  /* Expected length: every file without an extension; the first in name order starts the text. */
  uint64_t total = 0;
  char first[256] = "";
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", FORTUNES_DIR, e->d_name);
    if (strchr(e->d_name, '.') || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    total += (uint64_t)st.st_size;
    if (!first[0] || strcmp(e->d_name, first) < 0) snprintf(first, sizeof first, "%s", e->d_name);
  }
  closedir(d);
  data_opts_t cfg = make_cfg("text", "");
  cfg.context = 64;
  cfg.val_fraction = 0.1;
  dataset_t *ds = dataset_open(cfg);
  uint64_t val = (uint64_t)((double)total * 0.1), train = total - val;
  tap_diag("fortunes: %llu bytes from files without an extension, first '%s'", (unsigned long long)total, first);
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == train - 64 && dataset_size(ds, SPLIT_TEST) == (val - 1) / 64,
         "default text (fortunes): %llu training and %llu validation windows",
         (unsigned long long)dataset_size(ds, SPLIT_TRAIN), (unsigned long long)dataset_size(ds, SPLIT_TEST));
  char path[600];
  snprintf(path, sizeof path, "%s/%s", FORTUNES_DIR, first);
  FILE *f = fopen(path, "rb");
  uint8_t head[64] = {0};
  size_t got = f ? fread(head, 1, sizeof head, f) : 0;
  if (f) fclose(f);
  float x[64], y[64];
  uint64_t id = 0;
  dataset_get(ds, SPLIT_TRAIN, &id, 1, x, y);
  int same = got == 64;
  for (int t = 0; t < 64 && same; t++) same = x[t] == (float)head[t] && (t == 0 || y[t - 1] == x[t]);
  tap_ok(same, "default text starts with the first 64 bytes of '%s'", first);
  dataset_close(ds);
}

/* ---- synthetic ------------------------------------------------------------------------------ */

#define SYNTHETIC_PINNED_HASH 0x2da49ec62143642cULL

static void test_synthetic(void) {
  data_opts_t cfg = make_cfg("synthetic", "");
  cfg.seed = 7;
  dataset_t *ds = dataset_open(cfg);
  tap_ok(dataset_size(ds, SPLIT_TRAIN) == 600 && dataset_size(ds, SPLIT_TEST) == 100 && dataset_classes(ds) == 10 &&
             shape_size(dataset_sample_shape(ds)) == PIX,
         "synthetic images: 600 training and 100 test samples of (1,28,28), 10 classes");
  float x[3 * PIX], y[3];
  uint64_t ids[3] = {17, 5, 17};
  dataset_get(ds, SPLIT_TRAIN, ids, 3, x, y);
  tap_ok(memcmp(x, x + 2 * PIX, sizeof(float) * PIX) == 0 && y[0] == y[2] &&
             memcmp(x, x + PIX, sizeof(float) * PIX) != 0,
         "synthetic: id 17 gives the same sample twice, id 5 another");
  /* Pinned: the generator's bytes are its definition (tests and benchmarks train on them); a
   * faster implementation must give the same samples. FNV-1a of samples 17 and 5. */
  uint64_t hash = 1469598103934665603ULL;
  const unsigned char *bytes = (const unsigned char *)x;
  for (size_t i = 0; i < sizeof(float) * 2 * PIX; i++) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  tap_ok(hash == SYNTHETIC_PINNED_HASH, "synthetic: samples 17 and 5 are the generator's pinned bytes (%016llx)",
         (unsigned long long)hash);
  dataset_t *again = dataset_open(cfg);
  float x2[PIX], y2;
  dataset_get(again, SPLIT_TRAIN, ids, 1, x2, &y2);
  tap_ok(memcmp(x, x2, sizeof x2) == 0 && y[0] == y2, "synthetic: the same seed gives the same sample");
  dataset_close(again);
  data_opts_t huge = cfg; /* the key's 10^9 samples: no 4 GB table of their order */
  huge.synthetic_samples = 1000000000;
  dataset_t *big = dataset_open(huge);
  tap_ok(!dataset_order_implicit(ds) && dataset_order_implicit(big),
         "synthetic: 600 samples drawn from a table, 10^9 in an order computed as it goes");
  dataset_close(big);
  data_opts_t other = cfg;
  other.seed = 8;
  again = dataset_open(other);
  dataset_get(again, SPLIT_TRAIN, ids, 1, x2, &y2);
  tap_ok(memcmp(x, x2, sizeof x2) != 0, "synthetic: another seed gives another sample");
  dataset_close(again);

  /* Learnable: a nearest-class-mean classifier fit on the training split labels the test split. */
  static double mean[10][PIX];
  long count[10] = {0};
  for (uint64_t i = 0; i < 600; i++) {
    dataset_get(ds, SPLIT_TRAIN, &i, 1, x, y);
    int c = (int)y[0];
    count[c]++;
    for (int p = 0; p < PIX; p++) mean[c][p] += x[p];
  }
  int every_class = 1;
  for (int c = 0; c < 10; c++) {
    every_class &= count[c] > 20;
    for (int p = 0; p < PIX; p++) mean[c][p] /= count[c] ? (double)count[c] : 1.0;
  }
  int correct = 0;
  for (uint64_t i = 0; i < 100; i++) {
    dataset_get(ds, SPLIT_TEST, &i, 1, x, y);
    int best = 0;
    double best_d = INFINITY;
    for (int c = 0; c < 10; c++) {
      double dist = 0;
      for (int p = 0; p < PIX; p++) dist += (x[p] - mean[c][p]) * (x[p] - mean[c][p]);
      if (dist < best_d) best_d = dist, best = c;
    }
    correct += best == (int)y[0];
  }
  tap_ok(every_class && correct >= 80, "synthetic images are learnable: nearest class mean gets %d/100 test right",
         correct);
  dataset_close(ds);

  cfg.synthetic_samples = 0;
  expect_open_fails(&cfg, 2, "synthetic_samples = 0", "synthetic_samples = 0", NULL);

  /* Token sequences for gpt. */
  enum { T = 16, NSEQ = 400 };
  data_opts_t g = make_cfg("synthetic", "");
  g.sequences = 1;
  g.context = T;
  g.synthetic_samples = NSEQ;
  ds = dataset_open(g);
  shape_t s = dataset_sample_shape(ds);
  tap_ok(s.ndim == 1 && s.d[0] == T && dataset_classes(ds) == 256 && dataset_targets_per_sample(ds) == T &&
             dataset_is_tokens(ds),
         "synthetic tokens: shape (T), 256 classes, T targets");
  /* Targets are the inputs shifted by one; each token's most frequent successor covers ~80%. */
  static int follow[256][256];
  int shifted = 1, in_range = 1;
  long pairs = 0;
  float tx[T], ty[T];
  for (uint64_t i = 0; i < NSEQ; i++) {
    dataset_get(ds, SPLIT_TRAIN, &i, 1, tx, ty);
    for (int t = 0; t < T; t++) {
      in_range &= tx[t] >= 0 && tx[t] < 256 && ty[t] >= 0 && ty[t] < 256 && tx[t] == (int)tx[t];
      if (t + 1 < T) shifted &= ty[t] == tx[t + 1];
      follow[(int)tx[t]][(int)ty[t]]++;
      pairs++;
    }
  }
  long top = 0;
  for (int a = 0; a < 256; a++) {
    int m = 0;
    for (int b = 0; b < 256; b++) m = follow[a][b] > m ? follow[a][b] : m;
    top += m;
  }
  double frac = (double)top / (double)pairs;
  tap_ok(shifted && in_range, "synthetic tokens: byte values, targets are the inputs shifted by one");
  tap_ok(frac > 0.75 && frac < 0.9, "synthetic tokens: the likeliest successor follows %.3f of the time (~0.8)", frac);
  dataset_close(ds);
}

/* ---- sampler -------------------------------------------------------------------------------- */

static void test_sampler(void) {
  enum { N = 10, B = 4, STEPS = 10 }; /* 40 positions: four epochs */
  sampler_t s, same, other;
  sampler_init(&s, 42, N);
  sampler_init(&same, 42, N);
  sampler_init(&other, 43, N);
  uint64_t ids[STEPS * B], ids_same[STEPS * B], ids_other[STEPS * B];
  for (long step = 0; step < STEPS; step++) {
    sampler_batch(&s, step, B, ids + step * B);
    sampler_batch(&same, step, B, ids_same + step * B);
    sampler_batch(&other, step, B, ids_other + step * B);
  }
  int perms = 1;
  for (int e = 0; e < STEPS * B / N; e++) {
    int seen[N] = {0};
    for (int k = 0; k < N; k++) {
      uint64_t id = ids[e * N + k];
      if (id < N) seen[id]++;
    }
    for (int k = 0; k < N; k++) perms &= seen[k] == 1;
  }
  tap_ok(perms, "sampler: every epoch's %d positions hold each id exactly once", N);
  tap_ok(memcmp(ids, ids_same, sizeof ids) == 0, "sampler: the same seed gives the same batches");
  tap_ok(memcmp(ids, ids_other, sizeof ids) != 0, "sampler: another seed gives other batches");
  tap_ok(memcmp(ids, ids + N, sizeof(uint64_t) * N) != 0, "sampler: epochs 0 and 1 are different permutations");

  /* The stream is defined by rng_permutation on stream (seed, epoch, 0x5a); step 2 spans positions
   * 8..11, i.e. epoch 0 indices 8,9 and epoch 1 indices 0,1. */
  uint32_t p0[N], p1[N];
  rng_t r;
  rng_seed_stream(&r, 42, 0, 0x5a);
  rng_permutation(&r, p0, N);
  rng_seed_stream(&r, 42, 1, 0x5a);
  rng_permutation(&r, p1, N);
  uint64_t straddle[B];
  sampler_batch(&s, 2, B, straddle); /* called after later epochs: the cache is redrawn */
  tap_ok(straddle[0] == p0[8] && straddle[1] == p0[9] && straddle[2] == p1[0] && straddle[3] == p1[1] &&
             memcmp(straddle, ids + 8, sizeof straddle) == 0,
         "sampler: a batch straddling epochs 0/1 takes the tail of one permutation and the head of the next");
  uint64_t big[25];
  sampler_batch(&s, 1, 25, big); /* positions 25..49 cross epochs 2, 3 and 4 in one batch */
  tap_ok(memcmp(big, ids + 25, sizeof(uint64_t) * 15) == 0, "sampler: a batch longer than an epoch crosses two boundaries");
  sampler_free(&s);
  sampler_free(&same);
  sampler_free(&other);
}

/* The implicit sampler: each epoch a permutation (n = 1 .. odd sizes just above a power of 4),
 * reproducible, other across epochs and seeds, and defined for n beyond a table's reach. */
static void test_sampler_implicit(void) {
  static const uint64_t sizes[] = {1, 2, 3, 17, 1000, 4097};
  int perms = 1, same = 1, other_epoch = 0, other_seed = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    uint64_t n = sizes[k];
    sampler_t s, t, u;
    sampler_init_implicit(&s, 7, n);
    sampler_init_implicit(&t, 7, n);
    sampler_init_implicit(&u, 8, n);
    uint64_t *a = xmalloc(2 * n * sizeof *a), *b = xmalloc(2 * n * sizeof *b), *c = xmalloc(2 * n * sizeof *c);
    sampler_batch(&s, 0, (long)(2 * n), a);
    sampler_batch(&t, 0, (long)(2 * n), b);
    sampler_batch(&u, 0, (long)(2 * n), c);
    for (int e = 0; e < 2; e++) {
      uint8_t *seen = xcalloc(n, 1);
      for (uint64_t i = 0; i < n; i++) perms &= a[e * n + i] < n && !seen[a[e * n + i]]++;
      free(seen);
    }
    same &= memcmp(a, b, 2 * n * sizeof *a) == 0;
    if (n >= 17) other_epoch += memcmp(a, a + n, n * sizeof *a) != 0, other_seed += memcmp(a, c, n * sizeof *a) != 0;
    free(a), free(b), free(c);
    sampler_free(&s), sampler_free(&t), sampler_free(&u);
  }
  tap_ok(perms, "implicit sampler: every epoch holds each id exactly once (n = 1 .. 4097)");
  tap_ok(same, "implicit sampler: the same seed gives the same stream");
  tap_ok(other_epoch == 3 && other_seed == 3, "implicit sampler: other epochs and seeds give other orders");
  sampler_t big;
  sampler_init_implicit(&big, 1, (uint64_t)1 << 40);
  uint64_t ids[4];
  sampler_batch(&big, 1000000, 4, ids);
  int below = 1;
  for (int i = 0; i < 4; i++) below &= ids[i] < ((uint64_t)1 << 40);
  tap_ok(big.perm == NULL && below, "implicit sampler: 2^40 samples without a table");
  sampler_free(&big);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/surge-test-data-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_fmnist_real();
  test_fmnist_files();
  test_text();
  test_fortunes();
  test_synthetic();
  test_sampler_implicit();
  test_sampler();
  clear_tmpdir();
  rmdir(tmpdir);
  return tap_done();
}
