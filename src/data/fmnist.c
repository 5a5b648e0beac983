/* Fashion-MNIST: 28x28 grey images of 10 kinds of clothing, 60000 for training and 10000 for test,
 * as the four IDX files the Debian package dataset-fashion-mnist installs. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "data/dataset_impl.h"
#include "data/idx.h"

#define FMNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define FMNIST_SIDE 28
#define FMNIST_PIXELS (FMNIST_SIDE * FMNIST_SIDE)
#define FMNIST_CLASSES 10

typedef struct fmnist {
  uint8_t *pixels[2]; /* per split: (n, 28, 28) */
  uint8_t *labels[2]; /* per split: (n) */
} fmnist_t;

static const char *const split_prefix[2] = {"train", "t10k"};

/* dir/<prefix>-<kind>-ubyte.gz, or the uncompressed name when only that exists. */
static void split_file(char *path, size_t n, const char *dir, data_split_t split, const char *kind) {
  int k = snprintf(path, n, "%s/%s-%s-ubyte.gz", dir, split_prefix[split], kind);
  if (k < 0 || (size_t)k >= n) surge_input_error("[data] path '%s' is too long", dir);
  if (access(path, F_OK) == 0) return;
  path[k - 3] = '\0'; /* try the uncompressed name */
  if (access(path, F_OK) != 0) path[k - 3] = '.'; /* neither: messages name the .gz file */
}

static void load_split(fmnist_t *f, uint64_t *size, const char *dir, const char *missing_hint, data_split_t split) {
  char ipath[PATH_MAX], lpath[PATH_MAX];
  split_file(ipath, sizeof ipath, dir, split, "images-idx3");
  split_file(lpath, sizeof lpath, dir, split, "labels-idx1");
  idx_array_t images, labels;
  /* the labels first (a byte each): their count, and the side, are checked on the images' header */
  idx_read(lpath, 1, "labels", missing_hint, NULL, &labels);
  char from[PATH_MAX + 32];
  snprintf(from, sizeof from, "the labels file %s", lpath);
  idx_expect_t want = {.dims = {labels.dims[0], FMNIST_SIDE, FMNIST_SIDE}, .set = "Fashion-MNIST", .from = from};
  idx_read(ipath, 3, "images", missing_hint, &want, &images);
  for (size_t i = 0; i < labels.bytes; i++)
    if (labels.data[i] >= FMNIST_CLASSES)
      surge_input_error("%s: label %u of sample %zu is out of range (expected 0..%d); a different data set?", lpath,
                        (unsigned)labels.data[i], i, FMNIST_CLASSES - 1);
  f->pixels[split] = images.data;
  f->labels[split] = labels.data;
  *size = images.dims[0];
}

static void fmnist_get(const dataset_t *ds, data_split_t split, uint64_t id, float *x, float *y) {
  const fmnist_t *f = ds->source;
  const uint8_t *img = f->pixels[split] + id * FMNIST_PIXELS; // img is (28,28)
  for (int p = 0; p < FMNIST_PIXELS; p++) x[p] = (float)img[p] / 255.0f;
  y[0] = (float)f->labels[split][id];
}

static void fmnist_free(void *source) {
  fmnist_t *f = source;
  for (int s = 0; s < 2; s++) {
    free(f->pixels[s]);
    free(f->labels[s]);
  }
  free(f);
}

void fmnist_open(dataset_t *ds, const data_opts_t *o) {
  int is_default = o->path[0] == '\0';
  const char *dir = is_default ? FMNIST_DEFAULT_DIR : o->path;
  const char *missing_hint = is_default
      ? "apt-get install dataset-fashion-mnist, or set [data] path"
      : "[data] path must be a directory holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
        "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz";
  struct stat st;
  if (!is_default && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
    surge_input_error("[data] path '%s' is not a directory (hint: %s)", dir, missing_hint);
  fmnist_t *f = xcalloc(1, sizeof *f);
  load_split(f, &ds->size[SPLIT_TRAIN], dir, missing_hint, SPLIT_TRAIN);
  load_split(f, &ds->size[SPLIT_TEST], dir, missing_hint, SPLIT_TEST);
  snprintf(ds->name, sizeof ds->name, "fashion-mnist");
  ds->test_split = "test";
  ds->sample_shape = shape3(1, FMNIST_SIDE, FMNIST_SIDE);
  ds->classes = FMNIST_CLASSES;
  ds->targets_per_sample = 1;
  ds->is_tokens = 0;
  ds->get_sample = fmnist_get;
  ds->free_source = fmnist_free;
  ds->source = f;
}
