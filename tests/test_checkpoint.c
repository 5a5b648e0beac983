/* Checkpoints (io/checkpoint.h). An MPI program with several modes; tests/test_checkpoint.sh runs
 * them on 1, 2 and 4 ranks and checks the failing ones (exit code and the one-line message) from
 * the outside, since a process that must exit cannot be forked inside an MPI job.
 *
 *   test_checkpoint roundtrip DIR              TAP: write/read bit for bit with every compression,
 *                                              the file's layout, reads of checkpoints that runs
 *                                              on other rank counts left in DIR/xrank, pruning,
 *                                              checkpoint_latest
 *   test_checkpoint write DIR STEP [OPTS]      write the test state of STEP (prints the path)
 *   test_checkpoint read PATH [OPTS]           read it and compare with the test state of its step
 *   test_checkpoint latest DIR                 print checkpoint_latest's answer ("none")
 *   test_checkpoint damage IN OUT KIND         damaged copy (one rank): flip | tamper | attr |
 *                                              truncate | scramble | version1 (format_version 1) |
 *                                              forge:ATTR=V | forge-tensor:DATASET=X@I (element I
 *                                              of a 1-D tensor set to X, nan and inf too, its
 *                                              hash64 written anew: the checksum holds) |
 *                                              extlink:FILE (the largest tensor replaced by an
 *                                              external link to FILE's /x; FILE may be a fifo)
 *   test_checkpoint sharded-write DIR          (2 ranks) write the test state of step 77 with
 *                                              fc1.weight split by columns and fc1.bias by rows
 *                                              between the ranks, the rest replicated
 *   test_checkpoint sharded-read PATH          read it on any rank count: whole tensors, and on
 *                                              4 ranks fc1.weight in 4 row blocks; prints whether
 *                                              every piece is bitwise the unsharded state's
 * OPTS: -D section.key=value (the run's deck), -G section.key=value (the model's graph only, to
 * make a shape differ), --file-size-limit BYTES (RLIMIT_FSIZE: writes past it fail), --call-chunks N
 * (chunks a rank filters in one collective transfer, ckpt_set_call_chunks: fewer than the default
 * 64, so the test's small tensors take several transfers). */
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/slab.h"
#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"
#include "io/deck.h"
#include "io/options.h"
#include "io/strbuf.h"
#include "optim/optim.h"
#include "tap.h"

enum { INPUT = 500, CLASSES = 3, MAX_OPTS = 16 };

/* The model: fc1 (600,500) spans two ~1 MiB chunks; fc2 (1,600) and its bias (1) leave ranks with
 * no rows to write (empty selections). */
static const char *const base_deck = "[run]\n"
                                     "steps = 10000\n"
                                     "seed = 5\n"
                                     "[model]\n"
                                     "zoo = mlp\n"
                                     "mlp_hidden = 600,1\n"
                                     "[data]\n"
                                     "source = synthetic\n"
                                     "[train]\n"
                                     "optimizer = adamw\n"
                                     "lr = 0.001\n"
                                     "global_batch = 16\n"
                                     "[checkpoint]\n"
                                     "compression = none\n"
                                     "keep = 3\n";
static const char *const compressions[] = {"shuffle-deflate", "bitshuffle-lz4", "none"};

static comm_t world;

/* ---- the test state */

/* The state of a run: the slabs (params, and m, v for AdamW) in host memory, every rank holding all
 * of them (replicated, as data parallelism holds them), described as the checkpoint's regions. */
typedef struct test_run {
  config_t cfg;
  graph_t g;
  int nslabs;
  float *slab[3];
  state_region_t reg[3];
  ckpt_state_t s;
} test_run_t;

static void add_slab(test_run_t *t, const char *group) {
  int k = t->nslabs++;
  t->slab[k] = slab_alloc(&t->g.params);
  state_region_t *r = &t->reg[k];
  snprintf(r->group, sizeof r->group, "%s", group);
  r->n = t->g.params.n;
  r->t = xcalloc((size_t)r->n, sizeof *r->t);
  for (int i = 0; i < r->n; i++) {
    state_tensor_replicated(&r->t[i], &t->g.params.t[i], world.rank, world.size);
    r->t[i].data = t->slab[k] + t->g.params.t[i].off;
  }
}

/* cfg from the base deck with overrides; the graph from cfg with graph_ov applied on top. */
static void run_init(test_run_t *t, int nov, char **ov, int ngraph, char **graph_ov) {
  char *all[2 * MAX_OPTS];
  for (int i = 0; i < nov; i++) all[i] = ov[i];
  for (int i = 0; i < ngraph; i++) all[nov + i] = graph_ov[i];
  config_t graph_cfg;
  memset(t, 0, sizeof *t);
  deck_parse(base_deck, "test.deck", nov, ov, &t->cfg, NULL);
  deck_parse(base_deck, "test.deck", nov + ngraph, all, &graph_cfg, NULL);
  char err[256];
  if (zoo_build(zoo_opts_of(&graph_cfg), shape3(1, 20, INPUT / 20), CLASSES, &t->g, err, sizeof err) != 0) {
    fprintf(stderr, "test_checkpoint: %s\n", err);
    exit(99);
  }
  add_slab(t, "/params");
  if (strcmp(optim_opts(&t->cfg)->name, "adamw") == 0) {
    add_slab(t, "/optim/m");
    add_slab(t, "/optim/v");
  }
  t->s = (ckpt_state_t){.regions = t->reg, .nregions = t->nslabs, .layout = "test"};
}

static void run_free(test_run_t *t) {
  for (int k = 0; k < t->nslabs; k++) {
    slab_free(t->slab[k]);
    free(t->reg[k].t);
  }
  graph_free(&t->g);
}

/* Values of a slab: N(0, 0.02) from a stream of (step, k), squared for k = 2 (v is positive). */
static void slab_fill(float *x, size_t n, long step, int k) {
  rng_t r;
  rng_seed_stream(&r, 1234, (uint64_t)step, (uint64_t)k);
  rng_fill_normal(&r, x, n, 0.0f, 0.02f);
  if (k == 2)
    for (size_t i = 0; i < n; i++) x[i] *= x[i];
}

/* The state of a step, and in the parameters the values a lossy or converting path would change:
 * -0, a denormal, the extremes, infinity and a NaN with a payload. */
static void state_fill(test_run_t *t, long step) {
  size_t n = t->g.params.total;
  for (int k = 0; k < t->nslabs; k++) slab_fill(t->slab[k], n, step, k);
  uint32_t nan_bits = 0x7fc12345u;
  float specials[6] = {-0.0f, 1e-40f, FLT_MAX, -FLT_MIN, INFINITY, 0};
  memcpy(&specials[5], &nan_bits, sizeof nan_bits);
  for (int i = 0; i < 6 && (size_t)i < n; i++) t->slab[0][i * 7] = specials[i];
  t->s.step = step;
  t->s.opt_t = (step + 1) / 2; // its own value, and within 0..step as a checkpoint's must be
}

static void state_zero(test_run_t *t) {
  for (int k = 0; k < t->nslabs; k++) memset(t->slab[k], 0, t->g.params.total * sizeof(float));
  t->s.step = t->s.opt_t = -1;
}

/* Bit for bit, every slab, step and opt_t. */
static int state_equal(const test_run_t *a, const test_run_t *b) {
  size_t bytes = a->g.params.total * sizeof(float);
  int same = a->nslabs == b->nslabs && a->s.step == b->s.step && a->s.opt_t == b->s.opt_t;
  for (int k = 0; same && k < a->nslabs; k++) same = memcmp(a->slab[k], b->slab[k], bytes) == 0;
  return same;
}

/* The largest parameter tensor (the one damaged). */
static const slab_tensor_t *largest_tensor(const graph_t *g) {
  const slab_tensor_t *best = &g->params.t[0];
  for (int i = 1; i < g->params.n; i++)
    if (g->params.t[i].n > best->n) best = &g->params.t[i];
  return best;
}

/* ---- checks that hold on every rank, reported once by rank 0 */

static int check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int check(int cond, const char *fmt, ...) {
  double failed = cond ? 0 : 1;
  comm_allreduce_max_double(&world, &failed, 1, TRAFFIC_OTHER);
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (world.rank == 0) tap_ok(failed == 0, "%s", msg);
  return failed == 0;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void touch(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(99);
  }
  fputs("not a checkpoint\n", f);
  fclose(f);
}

static void make_dir(const char *path) {
  if (mkdir(path, 0777) != 0 && !exists(path)) {
    perror(path);
    exit(99);
  }
}

/* The names in dir (not . and ..), sorted, joined by blanks. */
static void listing(const char *dir, char *out, size_t len) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | tr '\\n' ' '", dir);
  FILE *p = popen(cmd, "r");
  out[0] = '\0';
  if (p) {
    if (!fgets(out, (int)len, p)) out[0] = '\0';
    pclose(p);
  }
}

/* ---- the file's layout, read directly (rank 0, serial access) */

/* Filter ids of /params/<name>, in pipeline order; returns the count. */
static int dataset_filters(const char *path, const char *name, int *ids, int max) {
  char dset_path[256];
  snprintf(dset_path, sizeof dset_path, "/params/%s", name);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = f < 0 ? -1 : H5Dopen2(f, dset_path, H5P_DEFAULT);
  hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
  int n = dcpl < 0 ? -1 : H5Pget_nfilters(dcpl);
  for (int i = 0; i < n && i < max; i++) {
    unsigned flags, cd[8];
    size_t ncd = 8;
    char fname[64];
    ids[i] = (int)H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname, fname, NULL);
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (d >= 0) H5Dclose(d);
  if (f >= 0) H5Fclose(f);
  return n;
}

static int64_t root_attr_i64(const char *path, const char *name) {
  int64_t v = -1;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t a = f < 0 ? -1 : H5Aopen(f, name, H5P_DEFAULT);
  if (a >= 0) H5Aread(a, H5T_NATIVE_INT64, &v);
  if (a >= 0) H5Aclose(a);
  if (f >= 0) H5Fclose(f);
  return v;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* ---- roundtrip mode */

static void test_compression(const char *top, const char *compression) {
  char why[512], dir[4096], written[4096], latest[4096], tmp[4200];
  if (!checkpoint_compression_available(compression, why, sizeof why)) {
    if (world.rank == 0) tap_ok(1, "%s round trip # SKIP %s", compression, why);
    return;
  }
  char ov[64];
  snprintf(ov, sizeof ov, "checkpoint.compression=%s", compression);
  char *ovs[1] = {ov};
  test_run_t a, b;
  run_init(&a, 1, ovs, 0, NULL);
  run_init(&b, 1, ovs, 0, NULL);
  long step = 100 + world.size;
  state_fill(&a, step);
  snprintf(dir, sizeof dir, "%s/np%d/%s", top, world.size, compression);
  checkpoint_write(dir, &a.s, &a.cfg, "[model]\nzoo = mlp\n", &world, written, sizeof written);
  snprintf(tmp, sizeof tmp, "%s/ckpt-%08ld.h5", dir, step);
  check(strcmp(written, tmp) == 0 && exists(written), "%s: %d ranks wrote %s", compression, world.size, written);
  snprintf(tmp, sizeof tmp, "%s/.ckpt-%08ld.h5.tmp", dir, step);
  check(!exists(tmp), "%s: no temporary file left", compression);
  check(checkpoint_latest(dir, latest, sizeof latest, &world) && strcmp(latest, written) == 0,
        "%s: checkpoint_latest finds it", compression);

  state_zero(&b);
  checkpoint_read(written, &b.s, &b.cfg, &world);
  check(state_equal(&a, &b), "%s: read back bit for bit (params, m, v with -0, denormal, inf, NaN payload; "
                                 "step %ld, opt_t %ld)",
        compression, b.s.step, b.s.opt_t);

  int ids[8], n = -1, want[3], nwant = 0;
  long size = -1, raw = (long)(3 * a.g.params.total * sizeof(float));
  int64_t ranks = -1, seen = -1;
  if (world.rank == 0) {
    n = dataset_filters(written, largest_tensor(&a.g)->name, ids, 8);
    ranks = root_attr_i64(written, "ranks");
    seen = root_attr_i64(written, "samples_seen");
    size = file_size(written);
  }
  if (strcmp(compression, "shuffle-deflate") == 0) {
    want[nwant++] = H5Z_FILTER_SHUFFLE;
    want[nwant++] = H5Z_FILTER_DEFLATE;
  }
  if (strcmp(compression, "bitshuffle-lz4") == 0) want[nwant++] = 32008;
  want[nwant++] = H5Z_FILTER_FLETCHER32;
  int same = world.rank != 0 || n == nwant;
  for (int i = 0; world.rank == 0 && same && i < n; i++) same = ids[i] == want[i];
  check(same, "%s: dataset filters are the compression's, then Fletcher32 (%d filters)", compression, n);
  check(world.rank != 0 || (ranks == world.size && seen == step * 16),
        "%s: attributes ranks = %lld, samples_seen = %lld", compression, (long long)ranks, (long long)seen);
  if (world.rank == 0)
    tap_diag("%s: file %ld bytes for %ld raw bytes (%.3f)", compression, size, raw, (double)size / (double)raw);
  if (strcmp(compression, "none") == 0)
    check(world.rank != 0 || (size > raw && size < raw + raw / 10), "none: file holds the raw bytes (%ld of %ld)",
          size, raw);
  else
    check(world.rank != 0 || (size > 0 && size < raw), "%s: file smaller than the raw bytes (%ld of %ld)",
          compression, size, raw);
  run_free(&a);
  run_free(&b);
}

/* Checkpoints of runs on other rank counts, left in top/xrank/np<N> by earlier invocations. */
static void test_other_rank_counts(const char *top) {
  char dir[4096], path[4096];
  snprintf(dir, sizeof dir, "%s/xrank", top);
  if (world.rank == 0) make_dir(dir);
  comm_barrier(&world);
  char *ov[1] = {"checkpoint.compression=shuffle-deflate"};
  test_run_t a, b;
  run_init(&a, 1, ov, 0, NULL);
  run_init(&b, 1, ov, 0, NULL);
  snprintf(dir, sizeof dir, "%s/xrank/np%d", top, world.size);
  state_fill(&a, 1000 + world.size);
  checkpoint_write(dir, &a.s, &a.cfg, "", &world, NULL, 0);
  int others = 0;
  for (int np = 1; np <= 8; np *= 2) {
    if (np == world.size) continue;
    snprintf(dir, sizeof dir, "%s/xrank/np%d", top, np);
    if (!checkpoint_latest(dir, path, sizeof path, &world)) continue;
    others++;
    state_fill(&a, 1000 + np);
    state_zero(&b);
    checkpoint_read(path, &b.s, &b.cfg, &world);
    check(state_equal(&a, &b), "a checkpoint written by %d ranks reads bit for bit on %d", np, world.size);
  }
  if (world.rank == 0) tap_diag("%d checkpoints of other rank counts were there to read", others);
  run_free(&a);
  run_free(&b);
}

/* keep = 2 over steps 1..5 leaves exactly the newest two and every file that is not exactly a
 * checkpoint name; stale temporary files go. */
static void test_prune(const char *top) {
  char dir[4096], got[4096];
  snprintf(dir, sizeof dir, "%s/prune-np%d", top, world.size);
  const char *foreign[] = {"notes.txt", "ckpt-1.h5", "ckpt-00000003.h5.bak", "ckpt-000000007.h5",
                           "xckpt-00000001.h5", ".ckpt-00000002.h5.tmp.keep", "ckpt-00000002.H5"};
  int nforeign = (int)(sizeof foreign / sizeof foreign[0]);
  if (world.rank == 0) {
    make_dir(dir);
    for (int i = 0; i < nforeign; i++) touch(dir, foreign[i]);
    touch(dir, ".ckpt-00000002.h5.tmp"); // a crashed writer's
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/ckpt-00000099.h5", dir); // a directory named like a checkpoint
    make_dir(sub);
  }
  comm_barrier(&world);
  char *ov[2] = {"checkpoint.keep=2", "checkpoint.compression=shuffle-deflate"};
  test_run_t a;
  run_init(&a, 2, ov, 0, NULL);
  for (long step = 1; step <= 5; step++) {
    state_fill(&a, step);
    checkpoint_write(dir, &a.s, &a.cfg, "", &world, NULL, 0);
  }
  const char *want = ".ckpt-00000002.h5.tmp.keep ckpt-000000007.h5 ckpt-00000002.H5 ckpt-00000003.h5.bak "
                     "ckpt-00000004.h5 ckpt-00000005.h5 ckpt-00000099.h5 ckpt-1.h5 notes.txt xckpt-00000001.h5 ";
  if (world.rank == 0) listing(dir, got, sizeof got);
  check(world.rank != 0 || strcmp(got, want) == 0, "keep=2: newest two kept, stale temp removed, other names "
                                                   "untouched [%s]",
        world.rank == 0 ? got : "");
  run_free(&a);

  // a checkpoint with a higher step (another run's) is neither counted nor removed
  snprintf(dir, sizeof dir, "%s/prune-high-np%d", top, world.size);
  if (world.rank == 0) {
    make_dir(dir);
    touch(dir, "ckpt-00000009.h5");
  }
  comm_barrier(&world);
  char *ov1[1] = {"checkpoint.keep=1"};
  run_init(&a, 1, ov1, 0, NULL);
  for (long step = 1; step <= 3; step++) {
    state_fill(&a, step);
    checkpoint_write(dir, &a.s, &a.cfg, "", &world, NULL, 0);
  }
  if (world.rank == 0) listing(dir, got, sizeof got);
  check(world.rank != 0 || strcmp(got, "ckpt-00000003.h5 ckpt-00000009.h5 ") == 0,
        "keep=1: the written one stays, a higher step is left alone [%s]", world.rank == 0 ? got : "");
  run_free(&a);
}

static void test_latest(const char *top) {
  char dir[4096], path[4096] = "unset";
  snprintf(dir, sizeof dir, "%s/latest-np%d", top, world.size);
  check(!checkpoint_latest(dir, path, sizeof path, &world), "latest: a missing directory has none");
  if (world.rank == 0) {
    make_dir(dir);
    const char *junk[] = {".ckpt-00000009.h5.tmp", "ckpt-00000008.h5x", "ckpt-00000007.h5.tmp", "ckpt-0000006.h5",
                          "ckpt-00000005.h5~"};
    for (int i = 0; i < 5; i++) touch(dir, junk[i]);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/ckpt-00000099.h5", dir);
    make_dir(sub);
  }
  comm_barrier(&world);
  check(!checkpoint_latest(dir, path, sizeof path, &world),
        "latest: temporary files, other names and a directory do not count");
  test_run_t a;
  run_init(&a, 0, NULL, 0, NULL);
  state_fill(&a, 3);
  checkpoint_write(dir, &a.s, &a.cfg, "", &world, NULL, 0);
  state_fill(&a, 2);
  checkpoint_write(dir, &a.s, &a.cfg, "", &world, NULL, 0);
  char want[4200];
  snprintf(want, sizeof want, "%s/ckpt-00000003.h5", dir);
  int found = checkpoint_latest(dir, path, sizeof path, &world);
  check(found && strcmp(path, want) == 0, "latest: the highest step, not the newest file (%s)", path);
  run_free(&a);
}

/* Text without its line for `key` ("[section] key"). malloc'd. */
static char *without_line(const char *text, const char *key) {
  char *out = xmalloc(strlen(text) + 1), *o = out;
  for (const char *l = text; *l;) {
    size_t n = strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n');
    if (strncmp(l, key, strlen(key)) != 0 || strncmp(l + strlen(key), " = ", 3) != 0) memcpy(o, l, n), o += n;
    l += n;
  }
  *o = '\0';
  return out;
}

/* The configuration a checkpoint was written by against this run's, key by key: a key the
 * checkpoint lacks is equal where this run leaves it at its default (a key added since). Every
 * rank computes it (check is collective). */
static void test_config_diff(void) {
  char *ov[] = {"train.clip_norm=0.5"};
  config_t cfg;
  deck_parse(base_deck, "test.deck", 1, ov, &cfg, NULL);
  char *now = ckpt_config_text(&cfg), diff[512] = "";
  char *no_default = without_line(now, "[model] vgg_fc"), *no_set = without_line(now, "[train] clip_norm");
  check(!ckpt_config_first_diff(now, now, &cfg, diff, sizeof diff), "config diff: the same text has no difference");
  check(!ckpt_config_first_diff(no_default, now, &cfg, diff, sizeof diff),
        "config diff: a key the checkpoint lacks, at its default here, is no difference");
  check(ckpt_config_first_diff(no_set, now, &cfg, diff, sizeof diff) && strstr(diff, "[train] clip_norm = 0.5 is not in"),
        "config diff: a key the checkpoint lacks, set here, is one: %s", diff);
  strbuf_t more = STRBUF_INIT;
  sb_printf(&more, "%s[train] bogus = 1\n", now);
  check(ckpt_config_first_diff(sb_str(&more), now, &cfg, diff, sizeof diff) &&
            strstr(diff, "[train] bogus = 1 is in the checkpoint, not in this run"),
        "config diff: a key only the checkpoint has is one: %s", diff);
  sb_clear(&more);
  const char *nl = strchr(now, '\n');
  sb_printf(&more, "%s%.*s", nl + 1, (int)(nl + 1 - now), now); /* the first line moved last */
  check(!ckpt_config_first_diff(sb_str(&more), now, &cfg, diff, sizeof diff), "config diff: the order of keys does not matter");
  sb_free(&more);
  free(no_set);
  free(no_default);
  free(now);
}

static int mode_roundtrip(const char *top) {
  test_config_diff();
  if (world.rank == 0) make_dir(top);
  comm_barrier(&world);
  for (int i = 0; i < 3; i++) test_compression(top, compressions[i]);
  test_other_rank_counts(top);
  test_prune(top);
  test_latest(top);
  return world.rank == 0 ? tap_done() : 0;
}

/* ---- single-purpose modes for the script */

typedef struct opts {
  int nov, ngraph;
  char *ov[MAX_OPTS], *graph[MAX_OPTS];
} opts_t;

static void parse_opts(int argc, char **argv, int first, opts_t *o) {
  memset(o, 0, sizeof *o);
  for (int i = first; i < argc; i++) {
    if (strcmp(argv[i], "-D") == 0 && i + 1 < argc && o->nov < MAX_OPTS)
      o->ov[o->nov++] = argv[++i];
    else if (strcmp(argv[i], "-G") == 0 && i + 1 < argc && o->ngraph < MAX_OPTS)
      o->graph[o->ngraph++] = argv[++i];
    else if (strcmp(argv[i], "--file-size-limit") == 0 && i + 1 < argc) {
      // a file may grow to this many bytes, then writes fail with EFBIG (set after MPI_Init,
      // whose shared-memory files are larger): a full disk for one process, without root
      struct rlimit lim = {.rlim_cur = (rlim_t)atol(argv[++i]), .rlim_max = RLIM_INFINITY};
      signal(SIGXFSZ, SIG_IGN);
      if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
        perror("setrlimit");
        exit(99);
      }
    } else if (strcmp(argv[i], "--call-chunks") == 0 && i + 1 < argc)
      ckpt_set_call_chunks(atoi(argv[++i])); // several transfers for a tensor of a few MiB
    else {
      fprintf(stderr, "test_checkpoint: unknown option %s\n", argv[i]);
      exit(99);
    }
  }
}

static int mode_write(const char *dir, long step, opts_t *o) {
  test_run_t a;
  run_init(&a, o->nov, o->ov, o->ngraph, o->graph);
  state_fill(&a, step);
  char written[4096];
  checkpoint_write(dir, &a.s, &a.cfg, "", &world, written, sizeof written);
  if (world.rank == 0) printf("%s\n", written);
  run_free(&a);
  return 0;
}

static int mode_read(const char *path, opts_t *o) {
  test_run_t a, b;
  run_init(&a, o->nov, o->ov, o->ngraph, o->graph);
  run_init(&b, o->nov, o->ov, o->ngraph, o->graph);
  state_zero(&b);
  checkpoint_read(path, &b.s, &b.cfg, &world);
  state_fill(&a, b.s.step);
  int same = state_equal(&a, &b);
  if (world.rank == 0) printf("loaded step %ld: %s\n", b.s.step, same ? "contents as written" : "CONTENTS DIFFER");
  run_free(&a);
  run_free(&b);
  return same ? 0 : 3;
}

/* ---- sharded state: a test layout that splits tensors between ranks */

/* Give rank r of R the r-th of R equal blocks of tensor `name` along dimension dim (no replicas):
 * its piece becomes a copy of that hyperslab of the whole values in every region. */
static void shard(test_run_t *t, const char *name, int dim, int r, int R) {
  int i = slab_layout_find(&t->g.params, name);
  for (int k = 0; k < t->nslabs; k++) {
    state_tensor_t *x = &t->reg[k].t[i];
    const float *whole = x->data;
    size_t block = x->dims[dim] / (size_t)R, row = 1, cols = 1;
    for (int d = dim + 1; d < x->ndim; d++) row *= x->dims[d];
    for (int d = 0; d < dim; d++) cols *= x->dims[d];
    x->start[dim] = block * (size_t)r;
    x->count[dim] = block;
    x->replica = 0;
    x->replicas = 1;
    float *piece = xcalloc(state_tensor_floats(x), sizeof *piece);
    // the tensor is (cols, dims[dim], row): the piece takes (cols, block, row) from start[dim]
    for (size_t c = 0; c < cols; c++)
      memcpy(piece + c * block * row, whole + (c * x->dims[dim] + x->start[dim]) * row, block * row * sizeof *piece);
    x->data = piece;
  }
}

static int mode_sharded_write(const char *dir) {
  test_run_t a;
  run_init(&a, 0, NULL, 0, NULL);
  state_fill(&a, 77);
  if (world.size != 2) {
    fprintf(stderr, "test_checkpoint: sharded-write runs on 2 ranks\n");
    return 99;
  }
  shard(&a, "fc1.weight", 1, world.rank, 2);
  shard(&a, "fc1.bias", 0, world.rank, 2);
  char written[4096];
  checkpoint_write(dir, &a.s, &a.cfg, "", &world, written, sizeof written);
  if (world.rank == 0) printf("%s\n", written);
  return 0; // the pieces are freed with the process
}

static int mode_sharded_read(const char *path) {
  test_run_t a, b;
  run_init(&a, 0, NULL, 0, NULL);
  run_init(&b, 0, NULL, 0, NULL);
  state_zero(&b);
  state_fill(&a, 77);
  if (world.size == 4) { // read fc1.weight as 4 row blocks, compared with the same blocks of the truth
    shard(&a, "fc1.weight", 0, world.rank, 4);
    shard(&b, "fc1.weight", 0, world.rank, 4);
  }
  checkpoint_read(path, &b.s, &b.cfg, &world);
  int same = a.s.step == b.s.step && a.s.opt_t == b.s.opt_t;
  for (int k = 0; k < a.nslabs; k++)
    for (int i = 0; i < a.reg[k].n; i++)
      same = same && memcmp(a.reg[k].t[i].data, b.reg[k].t[i].data,
                            state_tensor_floats(&a.reg[k].t[i]) * sizeof(float)) == 0;
  double differ = same ? 0.0 : 1.0; // on any rank
  comm_allreduce_max_double(&world, &differ, 1, TRAFFIC_OTHER);
  if (world.rank == 0)
    printf("sharded step %ld on %d ranks: %s\n", b.s.step, world.size,
           differ == 0 ? "every piece bitwise as written" : "PIECES DIFFER");
  return differ == 0 ? 0 : 3;
}

static int mode_latest(const char *dir) {
  char path[4096];
  int found = checkpoint_latest(dir, path, sizeof path, &world);
  if (world.rank == 0) printf("%s\n", found ? path : "none");
  return 0;
}

static int copy_file(const char *in, const char *out, long bytes) {
  FILE *a = fopen(in, "rb"), *b = fopen(out, "wb");
  char buf[65536];
  size_t n;
  long left = bytes < 0 ? -1 : bytes;
  while (a && b && left != 0 &&
         (n = fread(buf, 1, left < 0 || left > (long)sizeof buf ? sizeof buf : (size_t)left, a)) > 0) {
    fwrite(buf, 1, n, b);
    if (left > 0) left -= (long)n;
  }
  int ok = a && b;
  if (a) fclose(a);
  if (b && fclose(b) != 0) ok = 0;
  return ok ? 0 : -1;
}

/* XOR bytes at file offsets [off, off + n) with step `stride`. */
static int flip_bytes(const char *path, long off, long n, long stride) {
  FILE *f = fopen(path, "r+b");
  if (!f) return -1;
  for (long i = 0; i < n; i += stride) {
    fseek(f, off + i, SEEK_SET);
    int c = fgetc(f);
    if (c == EOF) break;
    fseek(f, off + i, SEEK_SET);
    fputc(c ^ 0xA5, f);
  }
  return fclose(f);
}

/* kind "forge:ATTR=VALUE": an integer attribute of / set to VALUE, with every attribute and
 * state_crc32 written anew, as a hostile tool that knows the format would (the CRC holds). */
static int forge(const char *path, const char *kind) {
  char attr[64];
  long long value;
  if (sscanf(kind, "forge:%63[a-z_]=%lld", attr, &value) != 2) return -1;
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  ckpt_root_t root;
  const char *failed;
  if (f < 0 || ckpt_root_read(f, &root, &failed) != 0) return -1;
  int64_t *field = strcmp(attr, "step") == 0           ? &root.step
                   : strcmp(attr, "opt_t") == 0        ? &root.opt_t
                   : strcmp(attr, "samples_seen") == 0 ? &root.samples_seen
                   : strcmp(attr, "ranks") == 0        ? &root.ranks
                                                       : NULL;
  if (!field) return -1;
  *field = (int64_t)value;
  H5O_info_t info;
  H5Oget_info(f, &info);
  for (int n = (int)info.num_attrs; n > 0; n--) H5Adelete_by_idx(f, ".", H5_INDEX_NAME, H5_ITER_DEC, 0, H5P_DEFAULT);
  int rc = ckpt_root_write(f, &root, &failed);
  ckpt_root_free(&root);
  return H5Fclose(f) < 0 || rc != 0 ? -1 : 0;
}

/* kind "forge-tensor:DATASET=X@I": as a hostile tool that knows the format would write it */
static int forge_tensor(const char *path, const char *kind) {
  char name[256], value[64];
  long long at;
  if (sscanf(kind, "forge-tensor:%255[^=]=%63[^@]@%lld", name, value, &at) != 3) return -1;
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT), d = f < 0 ? -1 : H5Dopen2(f, name, H5P_DEFAULT);
  hid_t s = d < 0 ? -1 : H5Dget_space(d);
  hsize_t n = 0;
  if (s < 0 || H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &n, NULL) != 1 || at < 0 ||
      (hsize_t)at >= n)
    return -1;
  state_tensor_t t = {.ndim = 1, .dims = {(size_t)n}, .count = {(size_t)n}, .replicas = 1};
  t.data = xcalloc((size_t)n, sizeof(float));
  int rc = H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data) < 0 ? -1 : 0;
  t.data[at] = strtof(value, NULL);
  if (rc == 0) rc = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data) < 0 ? -1 : 0;
  uint64_t hash = state_hash_rows(&t, 0, (size_t)n);
  hid_t a = H5Aopen(d, "hash64", H5P_DEFAULT);
  if (rc == 0) rc = a < 0 || H5Awrite(a, H5T_NATIVE_UINT64, &hash) < 0 ? -1 : 0;
  if (a >= 0) H5Aclose(a);
  free(t.data);
  H5Sclose(s), H5Dclose(d);
  return H5Fclose(f) < 0 || rc != 0 ? -1 : 0;
}

static int mode_damage(const char *in, const char *out, const char *kind) {
  test_run_t a;
  run_init(&a, 0, NULL, 0, NULL);
  char name[128];
  snprintf(name, sizeof name, "/params/%s", largest_tensor(&a.g)->name);
  long size = file_size(in);
  int rc = copy_file(in, out, strcmp(kind, "truncate") == 0 ? size / 2 : -1);
  if (rc == 0 && strcmp(kind, "flip") == 0) { // one byte in the middle of the first chunk's stored bytes
    hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t space = H5Dget_space(d);
    haddr_t addr = 0;
    hsize_t chunk_bytes = 0, offset[4];
    unsigned mask;
    rc = H5Dget_chunk_info(d, space, 0, offset, &mask, &addr, &chunk_bytes) < 0 ? -1 : 0;
    H5Sclose(space), H5Dclose(d), H5Fclose(f);
    if (rc == 0) rc = flip_bytes(out, (long)(addr + chunk_bytes / 2), 1, 1);
  } else if (rc == 0 && strcmp(kind, "scramble") == 0) // every 997th byte past the superblock
    rc = flip_bytes(out, 2048, size, 997);
  else if (rc == 0 && strcmp(kind, "tamper") == 0) { // rewritten through HDF5: Fletcher32 stays valid
    hid_t f = H5Fopen(out, H5F_ACC_RDWR, H5P_DEFAULT), d = H5Dopen2(f, name, H5P_DEFAULT);
    const slab_tensor_t *t = largest_tensor(&a.g);
    float *x = xmalloc(t->n * sizeof *x);
    rc = H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0 ? -1 : 0;
    x[t->n / 2] += 1.0f;
    if (rc == 0) rc = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0 ? -1 : 0;
    free(x);
    H5Dclose(d), H5Fclose(f);
  } else if (rc == 0 && strcmp(kind, "attr") == 0) { // a step that the attributes' CRC32 does not cover
    hid_t f = H5Fopen(out, H5F_ACC_RDWR, H5P_DEFAULT), at = H5Aopen(f, "step", H5P_DEFAULT);
    int64_t step = 4242;
    rc = H5Awrite(at, H5T_NATIVE_INT64, &step) < 0 ? -1 : 0;
    H5Aclose(at), H5Fclose(f);
  } else if (rc == 0 && strcmp(kind, "version1") == 0) {
    hid_t f = H5Fopen(out, H5F_ACC_RDWR, H5P_DEFAULT), at = H5Aopen(f, "format_version", H5P_DEFAULT);
    int64_t version = 1;
    rc = H5Awrite(at, H5T_NATIVE_INT64, &version) < 0 ? -1 : 0;
    H5Aclose(at), H5Fclose(f);
  } else if (rc == 0 && strncmp(kind, "forge:", 6) == 0)
    rc = forge(out, kind);
  else if (rc == 0 && strncmp(kind, "forge-tensor:", 13) == 0)
    rc = forge_tensor(out, kind);
  else if (rc == 0 && strncmp(kind, "extlink:", 8) == 0) {
    hid_t f = H5Fopen(out, H5F_ACC_RDWR, H5P_DEFAULT);
    rc = f < 0 || H5Ldelete(f, name, H5P_DEFAULT) < 0 ||
                 H5Lcreate_external(kind + 8, "/x", f, name, H5P_DEFAULT, H5P_DEFAULT) < 0
             ? -1
             : 0;
    if (f >= 0 && H5Fclose(f) < 0) rc = -1;
  }
  else if (rc == 0 && strcmp(kind, "truncate") != 0)
    rc = -1;
  run_free(&a);
  if (rc != 0) fprintf(stderr, "test_checkpoint: damage %s %s %s failed\n", in, out, kind);
  return rc == 0 ? 0 : 99;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); // as surge-train: errors are one line from Surge
  comm_world(&world);
  opts_t o;
  int rc = 99;
  if (argc == 3 && strcmp(argv[1], "roundtrip") == 0)
    rc = mode_roundtrip(argv[2]);
  else if (argc >= 4 && strcmp(argv[1], "write") == 0) {
    parse_opts(argc, argv, 4, &o);
    rc = mode_write(argv[2], atol(argv[3]), &o);
  } else if (argc >= 3 && strcmp(argv[1], "read") == 0) {
    parse_opts(argc, argv, 3, &o);
    rc = mode_read(argv[2], &o);
  } else if (argc == 3 && strcmp(argv[1], "latest") == 0)
    rc = mode_latest(argv[2]);
  else if (argc == 5 && strcmp(argv[1], "damage") == 0)
    rc = mode_damage(argv[2], argv[3], argv[4]);
  else if (argc == 3 && strcmp(argv[1], "sharded-write") == 0)
    rc = mode_sharded_write(argv[2]);
  else if (argc == 3 && strcmp(argv[1], "sharded-read") == 0)
    rc = mode_sharded_read(argv[2]);
  else
    fprintf(stderr, "usage: see the comment at the top of tests/test_checkpoint.c\n");
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
