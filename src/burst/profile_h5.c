/* Profile files: HDF5 group /profile (layout in doc/burst.md). */
#include <hdf5.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "burst/profiler.h"
#include "core/error.h"
#include "core/infile.h"
#include "io/h5serial.h"
#include "io/h5util.h"
#include "io/printable.h"

#define PROFILE_FORMAT "surge-burst-profile"
#define PROFILE_VERSION 2 /* 2: the step costs (data, loss per sample; optimizer and metrics per step) */
#define PROFILE_MAX_BATCHES 1048576 /* per-rank batches a profile may list */

/* ---- writing: any failure is a runtime error naming the file ---- */

static void check_w(int ok, const char *path, const char *what) {
  if (!ok) {
    char msg[256];
    h5util_error_text(msg, sizeof msg, "unknown HDF5 error");
    surge_runtime_error("surge-profile: writing %s: %s: %s", path, what, msg);
  }
}

/* A dataset of `type` and rank 0 (scalar), 1 or 2 with its units attribute (NULL: none). */
static void write_dataset(const char *path, hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims,
                          const void *data, const char *units) {
  hid_t space = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
  hid_t ds = space >= 0 ? H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  check_w(ds >= 0 && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0, path, name);
  if (units) check_w(h5util_attr_write_string(ds, "units", units, H5T_CSET_ASCII) == 0, path, name);
  H5Dclose(ds);
  H5Sclose(space);
}

static void write_strings(const char *path, hid_t loc, const char *name, const graph_t *g, int kinds) {
  size_t len = LAYER_NAME_MAX;
  char *buf = xcalloc((size_t)g->n, len);
  for (int i = 0; i < g->n; i++)
    snprintf(buf + (size_t)i * len, len, "%s", kinds ? layer_kind_name(g->l[i].kind) : g->l[i].name);
  hid_t t = h5util_string_type(len, H5T_CSET_UTF8);
  hsize_t dims[1] = {(hsize_t)g->n};
  write_dataset(path, loc, name, t, 1, dims, buf, NULL);
  H5Tclose(t);
  free(buf);
}

static void write_samples(const char *path, hid_t net, const char *prefix, const burst_net_samples_t *s) {
  char name[64];
  hsize_t dims[1] = {(hsize_t)s->n};
  snprintf(name, sizeof name, "%s_bytes", prefix);
  write_dataset(path, net, name, H5T_NATIVE_DOUBLE, 1, dims, s->bytes, "bytes");
  snprintf(name, sizeof name, "%s_us", prefix);
  write_dataset(path, net, name, H5T_NATIVE_DOUBLE, 1, dims, s->us, "us");
}

static void write_network(const char *path, hid_t top, const burst_measured_t *ms) {
  hid_t net = H5Gcreate2(top, "network", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check_w(net >= 0, path, "/profile/network");
  check_w(h5util_attr_write_u32(net, "measured", (uint32_t)ms->net_measured) == 0 &&
              h5util_attr_write_string(net, "note",
                                       ms->net_measured
                                           ? "fitted by least squares: time = alpha + bytes / beta"
                                           : "NOT MEASURED: the profiling run had 1 rank; these are defaults",
                                       H5T_CSET_ASCII) == 0,
          path, "/profile/network attributes");
  write_dataset(path, net, "p2p_alpha", H5T_NATIVE_DOUBLE, 0, NULL, &ms->net.p2p_alpha_us, "us");
  write_dataset(path, net, "p2p_beta", H5T_NATIVE_DOUBLE, 0, NULL, &ms->net.p2p_bytes_per_us, "bytes/us");
  write_dataset(path, net, "allreduce_alpha", H5T_NATIVE_DOUBLE, 0, NULL, &ms->net.ar_alpha_us, "us");
  write_dataset(path, net, "allreduce_beta", H5T_NATIVE_DOUBLE, 0, NULL, &ms->net.ar_bytes_per_us, "bytes/us");
  if (ms->net_measured) {
    write_samples(path, net, "p2p", &ms->p2p);
    write_samples(path, net, "allreduce", &ms->ar);
  }
  H5Gclose(net);
}

void burst_profile_write(const char *path, const graph_t *g, const burst_measured_t *ms) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) {
    char msg[256];
    h5util_error_text(msg, sizeof msg, "cannot create the file");
    surge_input_error("surge-profile: cannot create %s: %s (hint: check the directory exists)", path, msg);
  }
  hid_t top = H5Gcreate2(f, "profile", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check_w(top >= 0, path, "/profile");
  check_w(h5util_attr_write_string(top, "format", PROFILE_FORMAT, H5T_CSET_ASCII) == 0 &&
              h5util_attr_write_u32(top, "version", PROFILE_VERSION) == 0 &&
              h5util_attr_write_string(top, "model", ms->model, H5T_CSET_ASCII) == 0 &&
              h5util_attr_write_string(top, "backend", ms->backend, H5T_CSET_ASCII) == 0 &&
              h5util_attr_write_string(top, "precision", ms->precision, H5T_CSET_ASCII) == 0 &&
              h5util_attr_write_string(top, "optimizer", ms->optimizer, H5T_CSET_ASCII) == 0 &&
              h5util_attr_write_u64(top, "fingerprint", ms->fingerprint) == 0 &&
              h5util_attr_write_i64(top, "global_batch", ms->global_batch) == 0 &&
              h5util_attr_write_i64(top, "ranks", ms->ranks) == 0 &&
              h5util_attr_write_i64(top, "profiled_ranks", ms->profiled_ranks) == 0 &&
              h5util_attr_write_i64(top, "warmup", ms->warmup) == 0 &&
              h5util_attr_write_i64(top, "repeats", ms->repeats) == 0 &&
              h5util_attr_write_f64(top, "data_us_per_sample", ms->step.data_us_per_sample) == 0 &&
              h5util_attr_write_f64(top, "loss_us_per_sample", ms->step.loss_us_per_sample) == 0 &&
              h5util_attr_write_f64(top, "step_us", ms->step.step_us) == 0,
          path, "/profile attributes");
  hsize_t nb[1] = {(hsize_t)ms->nbatch}, table[2] = {(hsize_t)g->n, (hsize_t)ms->nbatch};
  write_dataset(path, top, "batch", H5T_NATIVE_INT, 1, nb, ms->batch, "samples per rank");
  write_strings(path, top, "node_name", g, 0);
  write_strings(path, top, "node_kind", g, 1);
  write_dataset(path, top, "median_us", H5T_NATIVE_DOUBLE, 2, table, ms->median_us, "us");
  write_dataset(path, top, "spread_us", H5T_NATIVE_DOUBLE, 2, table, ms->spread_us, "us");
  write_network(path, top, ms);
  H5Gclose(top);
  check_w(H5Fclose(f) >= 0, path, "closing");
  h5util_quiet_end(q);
}

/* ---- reading: every problem is an input error naming the file and the dataset ---- */

static hid_t open_profile(const char *path, hid_t *top) {
  if (infile_check(path, 0, "surge-profile writes the profile file") != 0)
    surge_input_error("profile %s: cannot open: %s", path, strerror(errno));
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) surge_input_error("profile %s: cannot open it as an HDF5 file (hint: surge-profile writes one)", path);
  *top = H5Gopen2(f, "profile", H5P_DEFAULT);
  if (*top < 0) surge_input_error("profile %s: no group /profile (not a surge-profile file)", path);
  return f;
}

/* An integer attribute of /profile in [1, INT32_MAX]. */
static int read_count(const char *path, hid_t top, const char *name) {
  int64_t v;
  if (h5util_attr_read_i64(top, name, &v) != 0)
    surge_input_error("profile %s: /profile has no integer attribute '%s'", path, name);
  if (v < 1 || v > INT32_MAX)
    surge_input_error("profile %s: /profile attribute %s = %lld is not a count in [1, %d]", path, name, (long long)v,
                      INT32_MAX);
  return (int)v;
}

void burst_profile_read_meta(const char *path, burst_profile_meta_t *meta) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  memset(meta, 0, sizeof *meta);
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t top, f = open_profile(path, &top);
  char *format = NULL, *model = NULL;
  int64_t version = 0;
  if (h5util_attr_read_string(top, "format", &format) != 0 || strcmp(format, PROFILE_FORMAT) != 0)
    surge_input_error("profile %s: /profile attribute 'format' is not '%s'", path, PROFILE_FORMAT);
  if (h5util_attr_read_i64(top, "version", &version) != 0)
    surge_input_error("profile %s: /profile has no format version (attribute 'version')", path);
  if (version < 1 || version > PROFILE_VERSION)
    surge_input_error("profile %s: /profile format version %lld; this program reads version 1 to %d", path,
                      (long long)version, PROFILE_VERSION);
  if (h5util_attr_read_string(top, "model", &model) != 0)
    surge_input_error("profile %s: /profile has no attribute 'model'", path);
  printable(model, meta->model, sizeof meta->model); /* shown in messages: escaped */
  if (h5util_attr_read_u64(top, "fingerprint", &meta->fingerprint) != 0)
    surge_input_error("profile %s: /profile has no attribute 'fingerprint'", path);
  meta->version = (int)version;
  if (version >= 2) { /* the step costs; a version 1 profile has none (0: nodes only) */
    const char *names[3] = {"data_us_per_sample", "loss_us_per_sample", "step_us"};
    double *fields[3] = {&meta->step.data_us_per_sample, &meta->step.loss_us_per_sample, &meta->step.step_us};
    for (int i = 0; i < 3; i++)
      if (h5util_attr_read_f64(top, names[i], fields[i]) != 0)
        surge_input_error("profile %s: /profile has no number attribute '%s' (format version %lld has it)", path,
                          names[i], (long long)version);
    char what[300];
    snprintf(what, sizeof what, "profile %s", path);
    burst_step_costs_check(&meta->step, what);
  }
  /* optional: profiles before 2026-12-07 lack the precision and the optimizer */
  const char *setting[3] = {"backend", "precision", "optimizer"};
  char *dest[3] = {meta->backend, meta->precision, meta->optimizer};
  size_t dest_size[3] = {sizeof meta->backend, sizeof meta->precision, sizeof meta->optimizer};
  for (int i = 0; i < 3; i++) {
    char *v = NULL;
    if (h5util_attr_read_string(top, setting[i], &v) == 0) printable(v, dest[i], dest_size[i]);
    free(v);
  }
  meta->global_batch = read_count(path, top, "global_batch");
  meta->ranks = read_count(path, top, "ranks");
  meta->profiled_ranks = read_count(path, top, "profiled_ranks");
  hid_t net = H5Gopen2(top, "network", H5P_DEFAULT);
  uint32_t measured = 0;
  if (net < 0 || h5util_attr_read_u32(net, "measured", &measured) != 0)
    surge_input_error("profile %s: no /profile/network or its attribute 'measured'", path);
  meta->net_measured = (int)measured;
  H5Gclose(net);
  free(format);
  free(model);
  H5Gclose(top);
  H5Fclose(f);
  h5util_quiet_end(q);
}

/* Read dataset `name` of loc as doubles or ints (mem_type) into a malloc'd buffer; its extent must be
 * `rank`-dimensional with each dimension at most max[i] (checked before anything is allocated: a
 * small file may declare huge extents), the dims go to dims. */
static void *read_dataset(const char *path, hid_t loc, const char *name, hid_t mem_type, size_t elem, int rank,
                          const hsize_t *max, hsize_t *dims) {
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) surge_input_error("profile %s: dataset /profile/%s is missing", path, name);
  hid_t space = H5Dget_space(ds);
  hsize_t d[2] = {1, 1};
  if (space < 0 || H5Sget_simple_extent_ndims(space) != rank || H5Sget_simple_extent_dims(space, d, NULL) < 0)
    surge_input_error("profile %s: dataset /profile/%s is not %d-dimensional", path, name, rank);
  size_t count = 1;
  for (int i = 0; i < rank; i++) {
    if (d[i] > max[i])
      surge_input_error("profile %s: dataset /profile/%s has %llu entries along dimension %d, at most %llu make "
                        "sense for this model and job (a damaged or foreign file)",
                        path, name, (unsigned long long)d[i], i, (unsigned long long)max[i]);
    dims[i] = d[i];
    count *= (size_t)d[i]; /* at most the product of the bounds, all small */
  }
  hid_t type = H5Dget_type(ds);
  unsigned long long stored = 0, want = 0;
  int whole = type < 0 ? -1 : h5util_chunks_whole(ds, rank, dims, H5Tget_size(type), &stored, &want);
  int sane = type >= 0 && h5util_number_type_ok(type);
  if (type >= 0) H5Tclose(type);
  if (whole < 0) surge_input_error("profile %s: cannot read dataset /profile/%s", path, name);
  if (whole == 0) /* HDF5 would copy the missing bytes from beyond its buffer */
    surge_input_error("profile %s: dataset /profile/%s stores %llu bytes where its shape needs %llu (a damaged "
                      "file)", path, name, stored, want);
  if (!sane) /* HDF5 would convert from the layout it records, past its own locals */
    surge_input_error("profile %s: dataset /profile/%s holds values that are not numbers of a possible layout (a "
                      "damaged or foreign file)",
                      path, name);
  void *buf = xcalloc(count ? count : 1, elem);
  if (H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
    surge_input_error("profile %s: cannot read dataset /profile/%s", path, name);
  H5Sclose(space);
  H5Dclose(ds);
  return buf;
}

static double read_scalar(const char *path, hid_t net, const char *name) {
  hsize_t none[1], max[1] = {1};
  double *v = read_dataset(path, net, name, H5T_NATIVE_DOUBLE, sizeof(double), 0, max, none);
  double x = *v;
  free(v);
  return x;
}

void burst_profile_read(const char *path, const graph_t *g, const char *model, const burst_opts_t *o,
                        burst_profile_t *p) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  burst_profile_meta_t meta;
  burst_profile_read_meta(path, &meta);
  if (strcmp(meta.model, model) != 0)
    surge_input_error("profile %s: /profile attribute model = '%s' but the deck's model is '%s' (a profile of "
                      "another model: run surge-profile on this deck)",
                      path, meta.model, model);
  uint64_t fp = burst_graph_fingerprint(g);
  if (meta.fingerprint != fp)
    surge_input_error("profile %s: /profile attribute fingerprint %016llx is not this graph's %016llx (the "
                      "model's sizes changed: run surge-profile on this deck)",
                      path, (unsigned long long)meta.fingerprint, (unsigned long long)fp);
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t top, f = open_profile(path, &top);
  hsize_t bd[1], td[2];
  /* per-rank batches are distinct and at most the profiled global batch */
  hsize_t batches = (hsize_t)(meta.global_batch > 0 ? meta.global_batch : 1);
  if (batches > PROFILE_MAX_BATCHES) batches = PROFILE_MAX_BATCHES;
  hsize_t bmax[1] = {batches}, tmax[2] = {(hsize_t)g->n, batches};
  int *batch = read_dataset(path, top, "batch", H5T_NATIVE_INT, sizeof(int), 1, bmax, bd);
  double *med = read_dataset(path, top, "median_us", H5T_NATIVE_DOUBLE, sizeof(double), 2, tmax, td);
  if (td[0] != (hsize_t)g->n || td[1] != bd[0])
    surge_input_error("profile %s: dataset /profile/median_us is %llux%llu, expected %d nodes x %llu batches",
                      path, (unsigned long long)td[0], (unsigned long long)td[1], g->n,
                      (unsigned long long)bd[0]);
  int nb = (int)bd[0];
  const size_t most = (size_t)(o->ranks < o->batch ? o->ranks : o->batch) + 1;
  int *need = xcalloc(most, sizeof *need), *sets = xcalloc(most, sizeof *sets);
  int nneed = burst_profile_batches(o, need);
  burst_rank_counts(o, sets); /* sets[k] ranks take need[k] samples each */
  for (int k = 0; k < nneed; k++) {
    int found = 0;
    for (int j = 0; j < nb; j++) found |= batch[j] == need[k];
    if (!found) {
      char again[160]; /* what measures it: this rank count, policy and global batch */
      snprintf(again, sizeof again, "surge-profile --ranks %d%s%s on this deck%s", o->ranks,
               o->policy == BURST_RANKS_DIVISORS ? "" : " --policy ", o->policy == BURST_RANKS_DIVISORS ? "" :
               burst_policy_name(o->policy), o->batch == meta.global_batch ? "" : " with its global batch");
      const int set = sets[k];
      surge_input_error("profile %s: dataset /profile/batch has no per-rank batch %d (a set of %d rank%s, global batch "
                        "%d), which a plan for %d ranks with rank counts of policy %s needs (the profile was made for "
                        "%d ranks, global batch %d; hint: %s)", path, need[k], set, set == 1 ? "" : "s", o->batch,
                        o->ranks, burst_policy_name(o->policy), meta.ranks, meta.global_batch, again);
    }
  }
  burst_profile_init(p, g->n, path);
  p->fingerprint = meta.fingerprint;
  p->step = meta.step;
  snprintf(p->backend, sizeof p->backend, "%s", meta.backend);
  snprintf(p->precision, sizeof p->precision, "%s", meta.precision);
  snprintf(p->optimizer, sizeof p->optimizer, "%s", meta.optimizer);
  for (int i = 0; i < g->n; i++)
    for (int j = 0; j < nb; j++) burst_profile_set(p, i, batch[j], med[(size_t)i * (size_t)nb + (size_t)j]);
  hid_t net = H5Gopen2(top, "network", H5P_DEFAULT);
  if (net < 0) surge_input_error("profile %s: group /profile/network is missing", path);
  p->net.p2p_alpha_us = read_scalar(path, net, "p2p_alpha");
  p->net.p2p_bytes_per_us = read_scalar(path, net, "p2p_beta");
  p->net.ar_alpha_us = read_scalar(path, net, "allreduce_alpha");
  p->net.ar_bytes_per_us = read_scalar(path, net, "allreduce_beta");
  H5Gclose(net);
  burst_profile_check(p, g);
  free(need), free(sets);
  free(batch);
  free(med);
  H5Gclose(top);
  H5Fclose(f);
  h5util_quiet_end(q);
}
