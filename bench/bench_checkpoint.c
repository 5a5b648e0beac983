/* Checkpoint write and read speed and file size for each [checkpoint] compression, against plain
 * sequential I/O of the same bytes by one rank in the same run.
 *
 *   mpiexec -n 2 bench/bench_checkpoint [steps] [dir]
 *
 * The state: zoo gpt, 4 layers, width 256, context 128 (3.3M parameters) trained `steps` AdamW
 * steps (default 4) on the synthetic token data with the trainer, so parameters and both moments
 * hold what training puts there (trained values compress differently from random ones). Logical
 * bytes = parameters + m + v as float32. Each row is the best of 3 (wall time on the slowest rank,
 * barrier to barrier; the trainer's own trainer_checkpoint and trainer_resume, which include the
 * MPI_File_sync and the rename). The baseline
 * is rank 0 alone: fwrite + fflush + fsync of the three slabs, then fread; the page cache is not
 * flushed between writing and reading, for either. dir defaults to $TMPDIR or /tmp.
 * A second table: shuffle + deflate by zlib alone on the parameters, per level, one core: what
 * the level costs and buys, to choose CKPT_DEFLATE_LEVEL. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "comm/comm.h"
#include "core/error.h"
#include "core/timer.h"
#include "io/checkpoint.h"
#include "io/deck.h"
#include "train/state.h"
#include "train/train.h"

enum { REPEATS = 3 };
#define MB 1e6

static const char *const bench_deck = "[run]\n"
                                      "seed = 3\n"
                                      "[model]\n"
                                      "zoo = gpt\n"
                                      "gpt_layers = 4\n"
                                      "gpt_width = 256\n"
                                      "gpt_heads = 4\n"
                                      "gpt_context = 128\n"
                                      "[data]\n"
                                      "source = synthetic\n"
                                      "synthetic_samples = 512\n"
                                      "[train]\n"
                                      "optimizer = adamw\n"
                                      "lr = 0.001\n"
                                      "weight_decay = 0.1\n"
                                      "global_batch = 8\n"
                                      "[checkpoint]\n"
                                      "keep = 1\n";

static comm_t world;

static double slowest(double seconds) {
  comm_allreduce_max_double(&world, &seconds, 1, TRAFFIC_OTHER);
  return seconds;
}

/* Host copies of this rank's parameters and AdamW moments (each n floats). */
typedef struct slabs {
  float *p[3]; /* params, m, v */
  size_t n;
} slabs_t;

static void slabs_take(trainer_t *t, slabs_t *s) {
  float *dev[3] = {t->layout->m->params, t->opt.m, t->opt.v};
  s->n = t->layout->local->total;
  for (int k = 0; k < 3; k++) {
    s->p[k] = xmalloc(s->n * sizeof(float));
    t->be->download(s->p[k], dev[k], s->n);
  }
}

static int slabs_equal(const slabs_t *a, const slabs_t *b) {
  int same = a->n == b->n;
  for (int k = 0; k < 3 && same; k++) same = memcmp(a->p[k], b->p[k], a->n * sizeof(float)) == 0;
  return same;
}

static void slabs_free(slabs_t *s) {
  for (int k = 0; k < 3; k++) free(s->p[k]);
}

static void train(trainer_t *t, int steps) {
  for (int i = 0; i < steps; i++) {
    train_stats_t st = trainer_step(t, 0);
    if (world.rank == 0) printf("# training step %ld: loss %.4f\n", st.step, st.loss);
  }
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

typedef struct row {
  const char *name;
  double write_s, read_s;
  long bytes;
  int exact;
} row_t;

/* Write t's state as a checkpoint with `compression` (the trainer's own path) and read it back
 * into t, REPEATS times; exact when the state read back is bitwise the state written. */
static row_t bench_compression(const char *compression, const char *top, trainer_t *t, const slabs_t *trained,
                               const char *deck_text) {
  row_t r = {.name = compression, .write_s = 1e30, .read_s = 1e30, .exact = 1};
  char why[512], path[4096];
  if (!checkpoint_compression_available(compression, why, sizeof why)) {
    if (world.rank == 0) printf("# %s skipped: %s\n", compression, why);
    r.bytes = -1;
    return r;
  }
  snprintf(t->cfg.ckpt_compression, sizeof t->cfg.ckpt_compression, "%s", compression);
  snprintf(t->cfg.ckpt_dir, sizeof t->cfg.ckpt_dir, "%s/%s", top, compression);
  for (int rep = 0; rep < REPEATS; rep++) {
    comm_barrier(&world);
    double t0 = surge_now();
    trainer_checkpoint(t, deck_text, path, sizeof path);
    comm_barrier(&world);
    double w = slowest(surge_now() - t0);
    t->be->fill(t->layout->m->params, trained->n, 0.0f); /* what is read must come from the file */
    comm_barrier(&world);
    t0 = surge_now();
    trainer_resume(t, path);
    comm_barrier(&world);
    double rd = slowest(surge_now() - t0);
    if (w < r.write_s) r.write_s = w;
    if (rd < r.read_s) r.read_s = rd;
  }
  slabs_t back;
  slabs_take(t, &back);
  r.exact = slabs_equal(&back, trained);
  slabs_free(&back);
  r.bytes = world.rank == 0 ? file_size(path) : 0;
  if (world.rank == 0) {
    unlink(path);
    rmdir(t->cfg.ckpt_dir);
  }
  return r;
}

/* Rank 0: fwrite + fsync, then fread, of the three slabs; best of REPEATS. */
static row_t bench_plain(const char *top, const slabs_t *s) {
  row_t r = {.name = "plain fwrite/fread (1 rank)", .write_s = 1e30, .read_s = 1e30, .exact = 1};
  char path[4096];
  snprintf(path, sizeof path, "%s/plain.bin", top);
  size_t n = s->n;
  float *const *slabs = s->p, *back = xmalloc(n * sizeof(float));
  for (int rep = 0; rep < REPEATS; rep++) {
    double t0 = surge_now();
    FILE *f = fopen(path, "wb");
    if (!f) surge_runtime_error("cannot create %s", path);
    for (int k = 0; k < 3; k++)
      if (fwrite(slabs[k], sizeof(float), n, f) != n) surge_runtime_error("cannot write %s", path);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) surge_runtime_error("cannot write %s", path);
    double w = surge_now() - t0;
    t0 = surge_now();
    f = fopen(path, "rb");
    for (int k = 0; f && k < 3; k++) {
      if (fread(back, sizeof(float), n, f) != n) surge_runtime_error("cannot read %s", path);
      r.exact = r.exact && memcmp(back, slabs[k], n * sizeof(float)) == 0;
    }
    if (f) fclose(f);
    double rd = surge_now() - t0;
    if (w < r.write_s) r.write_s = w;
    if (rd < r.read_s) r.read_s = rd;
  }
  r.bytes = file_size(path);
  unlink(path);
  free(back);
  return r;
}

static void print_row(const row_t *r, double logical, const row_t *base) {
  if (r->bytes < 0) return;
  printf("| %-28s | %10.0f | %9.0f | %6.2f | %6.2f | %9.2f | %6.3f | %-5s |\n", r->name, logical / r->write_s / MB,
         logical / r->read_s / MB, base->write_s / r->write_s, base->read_s / r->read_s, (double)r->bytes / MB,
         (double)r->bytes / logical, r->exact ? "yes" : "NO");
}

/* zlib alone: byte-shuffle each 1 MiB chunk of x, deflate it at `level`; seconds and bytes out. */
static void deflate_level(const float *x, size_t n, int level, double *seconds, size_t *out_bytes) {
  const size_t chunk = (1u << 20) / sizeof(float);
  unsigned char *shuf = xmalloc(chunk * sizeof(float));
  uLong cap = compressBound(chunk * sizeof(float));
  unsigned char *out = xmalloc(cap);
  *out_bytes = 0;
  double t0 = surge_now();
  for (size_t off = 0; off < n; off += chunk) {
    size_t len = n - off < chunk ? n - off : chunk;
    const unsigned char *b = (const unsigned char *)(x + off);
    for (size_t i = 0; i < len; i++) // byte k of every float together, as HDF5's shuffle filter
      for (size_t k = 0; k < sizeof(float); k++) shuf[k * len + i] = b[i * sizeof(float) + k];
    uLongf got = cap;
    if (compress2(out, &got, shuf, len * sizeof(float), level) != Z_OK) surge_runtime_error("compress2 failed");
    *out_bytes += got;
  }
  *seconds = surge_now() - t0;
  free(shuf);
  free(out);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  comm_world(&world);
  int steps = argc > 1 ? atoi(argv[1]) : 4;
  char top[4096] = "";
  if (world.rank == 0) {
    const char *base = argc > 2 ? argv[2] : getenv("TMPDIR");
    snprintf(top, sizeof top, "%s/surge-bench-ckpt.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(top)) surge_runtime_error("cannot create a directory like %s", top);
  }
  comm_bcast(&world, top, sizeof top, 0, TRAFFIC_OTHER);

  config_t cfg;
  deck_parse(bench_deck, "bench_checkpoint.deck", 0, NULL, &cfg, NULL);
  char *deck_text = deck_resolved_text(&cfg);
  trainer_t t;
  trainer_init(&t, &cfg, NULL, &world);
  train(&t, steps);
  trainer_sync_replicas(&t); /* the whole state on every rank, as a checkpoint writes it (dp on one
                              * node keeps each rank's moments right on its slice only) */
  slabs_t s;
  slabs_take(&t, &s);
  double logical = 3.0 * (double)t.g.params.total * sizeof(float);

  row_t rows[4];
  const char *names[3] = {"none", "shuffle-deflate", "bitshuffle-lz4"};
  for (int i = 0; i < 3; i++) rows[i] = bench_compression(names[i], top, &t, &s, deck_text);
  row_t plain = {0};
  if (world.rank == 0) plain = bench_plain(top, &s);

  if (world.rank == 0) {
    printf("\ncheckpoint of gpt 4x256 (%zu parameters + AdamW m, v = %.1f MB logical) after %d steps, %d ranks, "
           "best of %d, in %s\n\n",
           t.g.params.total, logical / MB, steps, world.size, REPEATS, top);
    printf("| %-28s | %10s | %9s | %6s | %6s | %9s | %6s | %-5s |\n", "method", "write MB/s", "read MB/s", "w/base",
           "r/base", "file MB", "ratio", "exact");
    printf("|%s|------------|-----------|--------|--------|-----------|--------|-------|\n",
           "------------------------------");
    print_row(&plain, logical, &plain);
    for (int i = 0; i < 3; i++) print_row(&rows[i], logical, &plain);

    printf("\nshuffle + deflate by zlib alone on the parameters (%.1f MB), one core\n\n",
           (double)s.n * sizeof(float) / MB);
    printf("| level | MB/s | ratio |\n|-------|------|-------|\n");
    static const int levels[] = {1, 2, 3, 4, 6, 9};
    for (int i = 0; i < (int)(sizeof levels / sizeof levels[0]); i++) {
      int level = levels[i];
      double sec;
      size_t out;
      deflate_level(s.p[0], s.n, level, &sec, &out);
      printf("| %5d | %4.0f | %5.3f |\n", level, (double)s.n * sizeof(float) / sec / MB,
             (double)out / ((double)s.n * sizeof(float)));
    }
    rmdir(top);
  }
  slabs_free(&s);
  free(deck_text);
  trainer_free(&t);
  comm_free(&world);
  MPI_Finalize();
  return 0;
}
