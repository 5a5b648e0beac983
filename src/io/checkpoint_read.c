/* checkpoint_read: open the file collectively, trust nothing in it until checked (what it is, its
 * format version, the checksum of its attributes, the model and configuration it belongs to, every
 * tensor's presence, type and global shape), then read on every rank the hyperslabs its layout
 * holds and verify each tensor's hash over the ranks (each element counted by exactly one rank).
 * Any failure is one input error naming the file and, where it applies, the dataset; the job then
 * exits, so a partly read state is never used. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/exact.h"
#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"
#include "io/h5serial.h"
#include "io/printable.h"

#define DAMAGED "the file is damaged; remove it to resume from an earlier checkpoint"
#define FORGED "the file was not written by a Surge run; remove it to resume from an earlier checkpoint"
#define REFUSED                                                                                                  \
  "refusing to resume (hint: resume with the deck it was written with, or start the run in another "            \
  "[checkpoint] dir)"

/* A compressor's state is kept per rank of the layout that wrote it (its pipeline boundaries, data-
 * parallel replicas and micro-batch shape), unlike parameters and optimizer moments. */
#define LAYOUT_REFUSED                                                                                           \
  "refusing to resume (hint: a compressor's state resumes only on the layout that wrote it, its ranks, "        \
  "[parallel] tp, pp, dp, stages and scatter_gather and [train] micro_batches: resume with those, or start the " \
  "run in another [checkpoint] dir)"

typedef struct reader {
  const char *path;
  comm_t *world;
  ckpt_status_t st;
  hid_t file, dxpl, group, dset; /* what is open (-1: nothing) */
} reader_t;

/* Collective: when any rank failed, close what is open and report. Every rank reaches the same
 * agreement points, so none is left alone in a collective call. */
static void agree_or_refuse(reader_t *r) {
  if (!ckpt_any_failed(&r->st)) return;
  if (r->st.alone) ckpt_report(&r->st, SURGE_EXIT_INPUT); // the others are stuck in HDF5: no closing
  if (r->dset >= 0) H5Dclose(r->dset);
  if (r->group >= 0) H5Gclose(r->group);
  if (r->dxpl >= 0) H5Pclose(r->dxpl);
  if (r->file >= 0) H5Fclose(r->file);
  H5Eclear2(H5E_DEFAULT);
  ckpt_report(&r->st, SURGE_EXIT_INPUT);
}

/* Why H5Fopen failed, said for people. */
static void fail_open(reader_t *r) {
  char why[512];
  h5util_error_text(why, sizeof why, CKPT_H5_NO_ERROR);
  struct stat sb;
  if (stat(r->path, &sb) != 0)
    ckpt_fail(&r->st, "%s: cannot open checkpoint: %s", r->path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    ckpt_fail(&r->st, "%s: cannot open checkpoint: not a regular file", r->path);
  else if (access(r->path, R_OK) != 0) /* (not damage: MPI-IO's own error would be blamed on the file) */
    ckpt_fail(&r->st, "%s: cannot open checkpoint: %s", r->path, strerror(errno));
  else if (strstr(why, "truncated"))
    ckpt_fail(&r->st, "%s: the file is truncated (HDF5: %s): it was not written completely; remove it to resume "
                      "from an earlier checkpoint",
              r->path, why);
  else if (strstr(why, "signature"))
    ckpt_fail(&r->st, "%s: not an HDF5 file, so not a Surge checkpoint (HDF5: %s)", r->path, why);
  else
    ckpt_fail(&r->st, "%s: cannot open as HDF5 (%s): %s", r->path, why, DAMAGED);
}

/* The counters of / against what any run, and this one, can reach (they were checked against
 * their CRC before, so a value out of range was written so, not damaged on the way). */
static void check_counters(reader_t *r, const config_t *cfg, const ckpt_root_t *root) {
  const char *hint = FORGED;
  if (root->step < 0 || root->step > CHECKPOINT_MAX_STEP)
    ckpt_fail(&r->st, "%s: step %lld is out of range (0 to %ld): %s", r->path, (long long)root->step,
              CHECKPOINT_MAX_STEP, hint);
  else if (root->step > cfg->steps)
    ckpt_fail(&r->st, "%s holds step %lld, beyond this run's [run] steps = %ld: refusing to resume (hint: raise "
                      "run.steps to continue past it, or resume with the deck it was written with)",
              r->path, (long long)root->step, cfg->steps);
  else if (root->opt_t < 0 || root->opt_t > root->step)
    ckpt_fail(&r->st, "%s: opt_t %lld is out of range (0 to the step, %lld): %s", r->path, (long long)root->opt_t,
              (long long)root->step, hint);
  else if (root->global_batch < 1 || (root->step > 0 && root->global_batch > INT64_MAX / root->step) ||
           root->samples_seen != root->step * root->global_batch)
    ckpt_fail(&r->st, "%s: samples_seen %lld is not step %lld x global_batch %lld: %s", r->path,
              (long long)root->samples_seen, (long long)root->step, (long long)root->global_batch, hint);
  else if (root->ranks < 1 || root->ranks > (1 << 24))
    ckpt_fail(&r->st, "%s: ranks %lld is out of range (1 to %d): %s", r->path, (long long)root->ranks, 1 << 24,
              hint);
}

/* What the file is and which run it belongs to; fills step, opt_t and run_id. */
static void check_root(reader_t *r, const config_t *cfg, long *step, long *opt_t, char *run_id, const char *vocab,
                       const char *rank_grid) {
  char *format = NULL, why[512];
  int64_t version = 0;
  htri_t has_format = H5Aexists(r->file, "format");
  if (has_format < 0) { // the object header of / does not read back
    h5util_error_text(why, sizeof why, CKPT_H5_NO_ERROR);
    ckpt_fail(&r->st, "%s: cannot read the attributes of / (%s): %s", r->path, why, DAMAGED);
  } else if (!has_format || h5util_attr_read_string(r->file, "format", &format) != 0 ||
             strcmp(format, CKPT_FORMAT_NAME) != 0)
    ckpt_fail(&r->st, "%s: not a Surge checkpoint (no attribute format = \"%s\" on /)", r->path, CKPT_FORMAT_NAME);
  else if (h5util_attr_read_i64(r->file, "format_version", &version) != 0)
    ckpt_fail(&r->st, "%s: attribute format_version of / is missing or not an integer (%s)", r->path, DAMAGED);
  else if (version != CHECKPOINT_FORMAT_VERSION)
    ckpt_fail(&r->st, "%s: checkpoint format version %lld; this Surge reads version %d%s", r->path,
              (long long)version, CHECKPOINT_FORMAT_VERSION,
              version == 1 ? " (hint: version 1 checkpoints hold whole replicated tensors, from before state could "
                             "be sharded; continue that run with the Surge that wrote it, or start anew)"
                           : "");
  free(format);
  if (r->st.failed) return;

  ckpt_root_t root;
  const char *attr;
  int rc = ckpt_root_read(r->file, &root, &attr);
  char *config = ckpt_config_text(cfg), diff[512], shown[128];
  if (rc == -1)
    ckpt_fail(&r->st, "%s: attribute %s of / is missing or of another type (%s)", r->path, attr, DAMAGED);
  else if (rc == -2)
    ckpt_fail(&r->st, "%s: attributes of /: checksum mismatch (%s)", r->path, DAMAGED);
  else if (strcmp(root.model, cfg->zoo) != 0)
    ckpt_fail(&r->st, "%s was written by model %s, this run's [model] zoo is %s: %s", r->path,
              printable(root.model, shown, sizeof shown), cfg->zoo, REFUSED);
  else if (root.fingerprint != ckpt_fnv1a64(config) && ckpt_config_first_diff(root.config, config, cfg, diff, sizeof diff)) {
    char shown_diff[sizeof diff];
    ckpt_fail(&r->st, "%s was written by another configuration (%s): %s", r->path,
              printable(diff, shown_diff, sizeof shown_diff), REFUSED);
  } else if (root.seed != cfg->seed)
    ckpt_fail(&r->st, "%s was written by another configuration ([run] seed is %llu in the checkpoint, %llu in this "
                      "run: the data order would differ): %s",
              r->path, (unsigned long long)root.seed, (unsigned long long)cfg->seed, REFUSED);
  else if (strspn(root.run_id, "0123456789abcdef") != strlen(root.run_id) ||
           strlen(root.run_id) >= CHECKPOINT_RUN_ID_LEN)
    ckpt_fail(&r->st, "%s: run_id \"%s\" is not 16 hex digits (%s)", r->path,
              printable(root.run_id, shown, sizeof shown), DAMAGED);
  else if (root.vocab[0] && strcmp(root.vocab, vocab) != 0)
    ckpt_fail(&r->st, "%s was trained on the vocabulary %s (size:hash of its files), this run's data has %s: %s",
              r->path, printable(root.vocab, shown, sizeof shown), vocab[0] ? vocab : "none", REFUSED);
  else if (root.rank_grid[0] && rank_grid[0] && strcmp(root.rank_grid, rank_grid) != 0) {
    char shown_grid[CHECKPOINT_GRID_LEN + 8]; /* (a run without such state refuses it below) */
    ckpt_fail(&r->st, "%s holds the compressors' state of %s; this run is %s: %s", r->path,
              printable(root.rank_grid, shown_grid, sizeof shown_grid), rank_grid, LAYOUT_REFUSED);
  } else
    check_counters(r, cfg, &root);
  if (!r->st.failed) {
    *step = (long)root.step;
    *opt_t = (long)root.opt_t;
    snprintf(run_id, CHECKPOINT_RUN_ID_LEN, "%s", root.run_id);
  }
  free(config);
  ckpt_root_free(&root);
}

static void shape_text(char *out, size_t len, int ndim, const hsize_t *d) {
  int n = snprintf(out, len, "(");
  for (int i = 0; i < ndim && n > 0 && (size_t)n < len; i++)
    n += snprintf(out + n, len - (size_t)n, "%s%llu", i ? "," : "", (unsigned long long)d[i]);
  if (n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, ")");
}

/* Type float32, the model's shape and filters that decode here, or a failure naming what the file
 * has. */
static void check_dataset(reader_t *r, hid_t dset, const char *what, const state_tensor_t *t) {
  char why[256];
  hid_t type = H5Dget_type(dset), space = H5Dget_space(dset);
  hsize_t dims[H5S_MAX_RANK], want[SLAB_MAX_DIMS];
  int ndim = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  if (ndim > 0 && ndim <= H5S_MAX_RANK) H5Sget_simple_extent_dims(space, dims, NULL);
  int same = ndim == t->ndim;
  for (int i = 0; i < t->ndim; i++) {
    want[i] = (hsize_t)t->dims[i];
    same = same && ndim > 0 && dims[i] == want[i];
  }
  if (type < 0 || H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != sizeof(float) ||
      !h5util_number_type_ok(type))
    ckpt_fail(&r->st, "%s: %s: not float32 data (%s)", r->path, what, DAMAGED);
  else if (ndim < 0 || ndim > H5S_MAX_RANK)
    ckpt_fail(&r->st, "%s: %s: unreadable shape (%s)", r->path, what, DAMAGED);
  else if (!same) {
    char have[128], need[128];
    shape_text(have, sizeof have, ndim, dims);
    shape_text(need, sizeof need, t->ndim, want);
    const int compressor = strncmp(what, CHECKPOINT_RANK_STATE_GROUPS, strlen(CHECKPOINT_RANK_STATE_GROUPS)) == 0;
    ckpt_fail(&r->st, "%s: %s: shape %s in the checkpoint, %s in this %s: %s", r->path, what, have, need,
              compressor ? "run" : "model", compressor ? LAYOUT_REFUSED : REFUSED);
  } else if (ckpt_h5_missing_filter(dset, why, sizeof why))
    ckpt_fail(&r->st, "%s: %s: cannot be read: %s", r->path, what, why);
  else {
    const int sane = h5util_chunk_index_sane(dset, why, sizeof why);
    if (sane != 1)
      ckpt_fail(&r->st, "%s: %s: %s (%s)", r->path, what, sane < 0 ? "its chunk index cannot be read" : why,
                DAMAGED);
  }
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
}

/* The values of this rank's piece of t, read and matching their hash, when t says what they may be
 * (state.h): finite (a compressor's state; a run stops at a NaN before it writes a checkpoint), a
 * counter's a whole number in its range. A value outside was written so under a valid checksum by
 * something that was not a Surge run (a NaN count cast to long is undefined; a NaN error-feedback
 * buffer would end the run later with a misleading hint to lower lr). */
static void check_values(reader_t *r, const char *group, const state_tensor_t *t) {
  size_t n = t->finite ? state_tensor_floats(t) : 0;
  for (size_t i = 0; i < n; i++) {
    double v = t->data[i];
    if (isfinite(v) && (!t->counter || (v >= 0 && v <= t->counter_max && v == floor(v)))) continue;
    char x[EXACT_LEN], hi[EXACT_LEN], want[96] = "a finite number";
    if (t->counter) snprintf(want, sizeof want, "a whole number of steps in [0, %s]", exact_text(t->counter_max, hi));
    ckpt_fail(&r->st, "%s: %s/%s holds %s at element %zu, not %s: %s", r->path, group, t->name, exact_text(v, x),
              (t->ndim == 1 ? t->start[0] : 0) + i, want, FORGED);
    return;
  }
}

/* Rows of t a transfer reads: ckpt_call_chunks() of the dataset's chunks (a chunk of whole rows, as
 * Surge writes them), or every row where the dataset is not chunked so (check_dataset vets the
 * rest). At least 1. */
static size_t rows_per_call(hid_t dset, const state_tensor_t *t) {
  size_t rows = t->count[0] ? t->count[0] : 1, call = rows;
  hid_t dcpl = H5Dget_create_plist(dset);
  hsize_t chunk[SLAB_MAX_DIMS];
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, SLAB_MAX_DIMS, chunk) == t->ndim &&
      chunk[0] > 0 && chunk[0] <= rows / (size_t)ckpt_call_chunks())
    call = (size_t)chunk[0] * (size_t)ckpt_call_chunks();
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT);
  return call;
}

/* Collective: this rank's hyperslab of tensor t of the open group into t->data, checked; *hash gets
 * the stored hash and *mine the hash of the rows this rank answers for. */
static void read_tensor(reader_t *r, const char *group_name, const state_tensor_t *t, uint64_t *stored,
                        uint64_t *mine) {
  char what[256], why[512];
  snprintf(what, sizeof what, "%s/%s", group_name, t->name);
  int hard = h5util_hard_path(r->group, t->name);
  if (hard == H5UTIL_NOT_HARD)
    ckpt_fail(&r->st, "%s: %s is %s: %s", r->path, what, H5UTIL_NOT_HARD_TEXT, FORGED);
  else if (hard != 1)
    ckpt_fail(&r->st, "%s: %s: missing (the checkpoint is of another model): %s", r->path, what, REFUSED);
  else if ((r->dset = H5Dopen2(r->group, t->name, H5P_DEFAULT)) < 0) {
    h5util_error_text(why, sizeof why, CKPT_H5_NO_ERROR);
    ckpt_fail(&r->st, "%s: %s: cannot open (%s): %s", r->path, what, why, DAMAGED);
  } else
    check_dataset(r, r->dset, what, t);
  agree_or_refuse(r);

  const size_t floats = state_tensor_floats(t), rows = floats ? t->count[0] : 0;
  const size_t per_row = rows ? floats / rows : 0, call_rows = rows_per_call(r->dset, t);
  double calls = rows ? (double)((rows + call_rows - 1) / call_rows) : 1; /* the most any rank needs */
  comm_allreduce_max_double(r->world, &calls, 1, TRAFFIC_OTHER);
  int failed = 0; /* after a failure the rest of the transfers are still made, as every rank makes them */
  for (int k = 0; k < (int)calls; k++) {
    const size_t lo = (size_t)k * call_rows < rows ? (size_t)k * call_rows : rows;
    const size_t hi = lo + call_rows < rows ? lo + call_rows : rows;
    hid_t fspace, mspace;
    int bad = ckpt_h5_select_rows(r->dset, t, lo, hi, &fspace, &mspace) < 0;
    float *into = hi > lo ? t->data + lo * per_row : NULL;
    bad = bad || H5Dread(r->dset, H5T_NATIVE_FLOAT, mspace, fspace, r->dxpl, into) < 0;
    if (bad && !failed++) /* HDF5's reason, before the next call clears it */
      h5util_error_text(why, sizeof why, CKPT_H5_NO_ERROR);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
  }
  if (failed)
    ckpt_fail(&r->st, "%s: %s: cannot read (%s): %s", r->path, what, why, DAMAGED);
  else if (h5util_attr_read_u64(r->dset, "hash64", stored) != 0)
    ckpt_fail(&r->st, "%s: %s: attribute hash64 is missing (%s)", r->path, what, DAMAGED);
  agree_or_refuse(r);
  ckpt_chunking_t c = ckpt_chunking(t);
  *mine = state_hash_rows(t, c.lo, c.hi);
  H5Dclose(r->dset);
  r->dset = -1;
}

/* Collective: every tensor of a region, and nothing more in its group; then the hashes. */
static void read_region(reader_t *r, const state_region_t *reg) {
  H5G_info_t info;
  int hard = h5util_hard_path(r->file, reg->group); /* every group along it ("/optim", "/optim/m") */
  if (hard == H5UTIL_NOT_HARD)
    ckpt_fail(&r->st, "%s: %s (or a group above it) is %s: %s", r->path, reg->group, H5UTIL_NOT_HARD_TEXT, FORGED);
  else if (hard != 1)
    ckpt_fail(&r->st, "%s: %s: missing (the checkpoint holds no such state): %s", r->path, reg->group, REFUSED);
  else if ((r->group = H5Gopen2(r->file, reg->group, H5P_DEFAULT)) < 0 || H5Gget_info(r->group, &info) < 0)
    ckpt_fail(&r->st, "%s: %s: cannot open the group (%s)", r->path, reg->group, DAMAGED);
  int tensors = 0;
  for (int i = 0; i < reg->n; i = state_tensor_end(reg, i)) tensors++;
  if (!r->st.failed && info.nlinks != (hsize_t)tensors)
    ckpt_fail(&r->st, "%s: %s holds %llu tensors, this model %d: %s", r->path, reg->group,
              (unsigned long long)info.nlinks, tensors, REFUSED);
  agree_or_refuse(r);
  uint64_t *stored = xcalloc((size_t)reg->n + 1, sizeof *stored), *sum = xcalloc((size_t)reg->n + 1, sizeof *sum);
  for (int i = 0; i < reg->n; i++) read_tensor(r, reg->group, &reg->t[i], &stored[i], &sum[i]);
  comm_allreduce_sum_u64(r->world, sum, reg->n, TRAFFIC_OTHER);
  for (int i = 0; i < reg->n && !r->st.failed; i = state_tensor_end(reg, i)) {
    for (int j = i + 1; j < state_tensor_end(reg, i); j++) sum[i] += sum[j]; /* a tensor's boxes */
    if (sum[i] != stored[i])
      ckpt_fail(&r->st, "%s: %s/%s: checksum mismatch (%s)", r->path, reg->group, reg->t[i].name, DAMAGED);
  }
  for (int i = 0; i < reg->n && !r->st.failed; i++) check_values(r, reg->group, &reg->t[i]); /* after the hashes */
  free(stored);
  free(sum);
  agree_or_refuse(r);
  H5Gclose(r->group);
  r->group = -1;
}

/* The groups of the file that hold datasets, each one a region this run must expect: a state the
 * run does not have (optimizer moments of another optimizer, a compressor's state) is refused. */
typedef struct group_walk {
  reader_t *r;
  const ckpt_state_t *s;
} group_walk_t;

static herr_t check_group(hid_t obj, const char *name, const H5O_info_t *info, void *arg) {
  (void)obj;
  group_walk_t *w = arg;
  if (info->type != H5O_TYPE_DATASET || w->r->st.failed) return 0;
  char group[STATE_GROUP_MAX + 2] = "/";
  const char *slash = strrchr(name, '/');
  snprintf(group + 1, sizeof group - 1, "%.*s", slash ? (int)(slash - name) : 0, name);
  for (int i = 0; i < w->s->nregions; i++)
    if (strcmp(w->s->regions[i].group, group) == 0) return 0;
  ckpt_fail(&w->r->st, "%s: %s: state this run does not have (another optimizer or compression): %s", w->r->path,
            group, REFUSED);
  return 0;
}

static void check_no_other_state(reader_t *r, const ckpt_state_t *s) {
  group_walk_t w = {r, s};
  if (H5Ovisit(r->file, H5_INDEX_NAME, H5_ITER_NATIVE, check_group, &w) < 0 && !r->st.failed)
    ckpt_fail(&r->st, "%s: cannot list the groups (%s)", r->path, DAMAGED);
}

void checkpoint_read(const char *path, ckpt_state_t *s, const config_t *cfg, comm_t *world) {
  H5_SERIAL_COLLECTIVE(world); /* io/h5serial.h: one HDF5 call at a time in the process */
  h5util_quiet_t quiet = h5util_quiet_begin();
  reader_t r = {.path = path, .world = world, .file = -1, .dxpl = -1, .group = -1, .dset = -1};
  ckpt_status_init(&r.st, world);

  hid_t fapl = ckpt_h5_fapl(world);
  r.dxpl = ckpt_h5_dxpl_collective();
  r.file = fapl < 0 || r.dxpl < 0 ? -1 : H5Fopen(path, H5F_ACC_RDONLY, fapl);
  if (r.file < 0) fail_open(&r); // before any other call clears HDF5's error stack
  if (fapl >= 0) H5Pclose(fapl);
  agree_or_refuse(&r);

  long step = 0, opt_t = 0;
  char run_id[CHECKPOINT_RUN_ID_LEN] = "";
  check_root(&r, cfg, &step, &opt_t, run_id, s->vocab, s->rank_grid);
  if (!r.st.failed) check_no_other_state(&r, s);
  agree_or_refuse(&r);

  for (int i = 0; i < s->nregions; i++) read_region(&r, &s->regions[i]);

  if (H5Fclose(r.file) < 0) ckpt_fail(&r.st, "%s: cannot close (%s)", path, DAMAGED);
  r.file = -1;
  agree_or_refuse(&r);
  H5Pclose(r.dxpl);
  h5util_quiet_end(quiet);
  s->step = step;
  s->opt_t = opt_t;
  snprintf(s->run_id, sizeof s->run_id, "%s", run_id);
}
