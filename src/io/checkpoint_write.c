/* checkpoint_write: every rank writes its share of every tensor into a hidden temporary file with
 * collective parallel HDF5 transfers; the file is synced and closed, and only when every rank
 * succeeded does rank 0 rename it to its final name and prune old checkpoints. Any failure removes
 * the temporary file, so the newest complete checkpoint is always a good one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"

/* Free space below which a failed write is blamed on a full file system. */
#define CKPT_LOW_SPACE_BYTES (4.0 * 1024 * 1024)

int checkpoint_compression_available(const char *compression, char *why, size_t why_len) {
  h5util_quiet_t quiet = h5util_quiet_begin();
  int rc = ckpt_h5_compression_check(compression, why, why_len);
  h5util_quiet_end(quiet);
  return rc == 0;
}

typedef struct writer {
  const char *dir;
  const char *final; /* dir/ckpt-<step>.h5 */
  const char *temp;  /* dir/.ckpt-<step>.h5.tmp */
  const config_t *cfg;
  comm_t *world;
  ckpt_status_t st;
  hid_t file, dxpl, group; /* what is open (-1: nothing) */
} writer_t;

/* Record this rank's failure of `what`, with HDF5's reason and the system's: errno (cleared by the
 * callers before the HDF5 calls that write) or, when that is lost, a file system with (almost) no
 * space left. Call it right after the failing call: the next HDF5 call clears the error stack. */
static void fail_h5(writer_t *w, const char *what) {
  int err = errno;
  char why[512], sys[192] = "";
  h5util_error_text(why, sizeof why, CKPT_H5_NO_ERROR);
  struct statvfs fs;
  if (err)
    snprintf(sys, sizeof sys, " (%s)", strerror(err));
  else if (statvfs(w->dir, &fs) == 0 && (double)fs.f_bavail * (double)fs.f_frsize < CKPT_LOW_SPACE_BYTES)
    snprintf(sys, sizeof sys, " (no space left on device: %.0f KiB free in %s)",
             (double)fs.f_bavail * (double)fs.f_frsize / 1024.0, w->dir);
  ckpt_fail(&w->st, "cannot write checkpoint %s: %s: %s%s (the partial file %s was removed; earlier "
                    "checkpoints are intact)",
            w->final, what, why, sys, w->temp);
}

/* Collective: when any rank failed, close what is open, remove the temporary file and report.
 * The file is emptied first: closing it writes HDF5's metadata, which must not fail for want of
 * the space its own data took (HDF5 1.10 crashes at exit after a failed H5Fclose). A rank left
 * alone (the others stuck in HDF5) removes the file without any collective call. */
static void agree_or_abandon(writer_t *w) {
  if (!ckpt_any_failed(&w->st)) return;
  if (w->st.alone) {
    unlink(w->temp);
    ckpt_report(&w->st, SURGE_EXIT_RUNTIME);
  }
  if (w->group >= 0) H5Gclose(w->group);
  if (w->file >= 0) {
    if (w->world->rank == 0) truncate(w->temp, 0);
    comm_barrier(w->world);
    H5Fclose(w->file);
  }
  if (w->dxpl >= 0) H5Pclose(w->dxpl);
  H5Eclear2(H5E_DEFAULT);
  if (w->world->rank == 0) unlink(w->temp);
  ckpt_report(&w->st, SURGE_EXIT_RUNTIME);
}

/* Collective: the same UTC time on every rank, ISO 8601. */
static void created_now(comm_t *world, char out[32]) {
  memset(out, 0, 32);
  if (world->rank == 0) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  comm_bcast(world, out, 32, 0, TRAFFIC_OTHER);
}

/* Collective: the CRC32 of a tensor, the same on every rank. Data parallelism keeps the replicas
 * identical; a file mixing different ones would be no one's state, so a difference is an error. */
static int replicated_crc(writer_t *w, const char *what, const slab_tensor_t *t, const float *slab, uint32_t *crc) {
  *crc = ckpt_crc32_floats(slab + t->off, t->n);
  double range[2] = {(double)*crc, -(double)*crc}; // max and -min over the ranks
  comm_allreduce_max_double(w->world, range, 2, TRAFFIC_OTHER);
  if (range[0] == -range[1]) return 0;
  ckpt_fail(&w->st, "cannot write checkpoint %s: %s differs between ranks (the replicas diverged)", w->final, what);
  return -1;
}

/* Collective: dataset `t->name` of group from the slab, this rank writing its share of rows (an
 * empty selection when it has none: filtered datasets need every rank in the transfer). */
static void write_tensor(writer_t *w, const char *group_name, const slab_tensor_t *t, const float *slab) {
  char what[256];
  snprintf(what, sizeof what, "%s/%s", group_name, t->name);
  uint32_t crc;
  if (replicated_crc(w, what, t, slab, &crc) != 0) return; // the same decision on every rank
  errno = 0;
  hsize_t dims[SLAB_MAX_DIMS], start[SLAB_MAX_DIMS] = {0}, count[SLAB_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) dims[i] = count[i] = (hsize_t)t->d[i];
  ckpt_chunking_t c = ckpt_chunking(t, w->world->rank, w->world->size);
  size_t lo = c.lo, hi = c.hi, row = t->n / (size_t)t->d[0];
  start[0] = lo;
  count[0] = hi > lo ? hi - lo : 1; // (1, ...) with nothing selected when this rank has no rows

  // the memory space has the selection's shape: HDF5 then maps it to chunks block by block
  hid_t fspace = H5Screate_simple(t->ndim, dims, NULL);
  hid_t mspace = H5Screate_simple(t->ndim, count, NULL);
  hid_t dcpl = ckpt_h5_dcpl(t, c.chunk_rows, w->cfg->ckpt_compression);
  hid_t dset = fspace < 0 || dcpl < 0 ? -1
                                      : H5Dcreate2(w->group, t->name, H5T_IEEE_F32LE, fspace, H5P_DEFAULT, dcpl,
                                                   H5P_DEFAULT);
  int bad = dset < 0 || mspace < 0;
  if (!bad) {
    if (hi > lo)
      bad = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0;
    else
      bad = H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0;
  }
  bad = bad || H5Dwrite(dset, H5T_NATIVE_FLOAT, mspace, fspace, w->dxpl, slab + t->off + lo * row) < 0;
  bad = bad || h5util_attr_write_u32(dset, "crc32", crc) < 0;
  if (bad) fail_h5(w, what);
  if (dset >= 0) H5Dclose(dset);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
}

static void write_region(writer_t *w, const graph_t *g, const ckpt_region_t *r) {
  errno = 0;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  if (lcpl >= 0) H5Pset_create_intermediate_group(lcpl, 1);
  w->group = lcpl < 0 ? -1 : H5Gcreate2(w->file, r->group, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  if (w->group < 0) fail_h5(w, r->group);
  if (lcpl >= 0) H5Pclose(lcpl);
  agree_or_abandon(w);
  for (int i = 0; i < g->params.n; i++) {
    write_tensor(w, r->group, &g->params.t[i], r->slab);
    agree_or_abandon(w); // a rank that failed must not leave the others in a collective call
  }
  errno = 0;
  herr_t closed = H5Gclose(w->group);
  w->group = -1;
  if (closed < 0) fail_h5(w, r->group);
  agree_or_abandon(w);
}

/* Rank 0: fsync a directory so a rename in it is durable. */
static void sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

void checkpoint_write(const char *dir, const ckpt_state_t *s, const config_t *cfg, const char *deck_text,
                      comm_t *world, char *written, size_t written_len) {
  char final[CKPT_PATH], temp[CKPT_PATH], why[CKPT_MSG];
  ckpt_path(final, sizeof final, dir, s->step, 0);
  ckpt_path(temp, sizeof temp, dir, s->step, 1);
  h5util_quiet_t quiet = h5util_quiet_begin();
  writer_t w = {.dir = dir, .final = final, .temp = temp, .cfg = cfg, .world = world};
  w.file = w.dxpl = w.group = -1;
  ckpt_status_init(&w.st, world);

  if (ckpt_h5_compression_check(cfg->ckpt_compression, why, sizeof why) != 0)
    ckpt_fail(&w.st, "cannot write checkpoint %s: [checkpoint] compression: %s", final, why);
  if (ckpt_any_failed(&w.st)) ckpt_report(&w.st, SURGE_EXIT_INPUT);
  if (world->rank == 0 && ckpt_mkdirs(dir, why, sizeof why) != 0)
    ckpt_fail(&w.st, "cannot write checkpoint %s: cannot create directory %s: %s", final, why, strerror(errno));
  agree_or_abandon(&w);

  char created[32], *config = ckpt_config_text(cfg);
  created_now(world, created);
  ckpt_root_t root = {
      .format = CKPT_FORMAT_NAME, .format_version = CHECKPOINT_FORMAT_VERSION, .model = (char *)cfg->zoo,
      .fingerprint = ckpt_fnv1a64(config), .config = config, .step = s->step, .opt_t = s->opt_t,
      .seed = cfg->seed, .global_batch = cfg->global_batch, .samples_seen = (int64_t)s->step * cfg->global_batch,
      .ranks = world->size, .created = created, .compression = (char *)cfg->ckpt_compression,
      .deck = (char *)(deck_text ? deck_text : ""),
  };

  hid_t fapl = ckpt_h5_fapl(world);
  w.dxpl = ckpt_h5_dxpl_collective();
  errno = 0;
  w.file = fapl < 0 || w.dxpl < 0 ? -1 : H5Fcreate(temp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (w.file < 0) fail_h5(&w, "creating the file"); // before any other call clears HDF5's error stack
  if (fapl >= 0) H5Pclose(fapl);
  agree_or_abandon(&w);

  const char *attr;
  errno = 0;
  if (ckpt_root_write(w.file, &root, &attr) != 0) fail_h5(&w, attr);
  free(config);
  agree_or_abandon(&w);

  ckpt_region_t regions[3];
  int nregions = ckpt_regions(s, regions);
  for (int r = 0; r < nregions; r++) write_region(&w, s->g, &regions[r]);

  // to the disk before the rename makes it the newest checkpoint (MPI_File_sync on every rank)
  errno = 0;
  if (H5Fflush(w.file, H5F_SCOPE_GLOBAL) < 0) fail_h5(&w, "flushing the file");
  agree_or_abandon(&w);
  errno = 0;
  herr_t closed = H5Fclose(w.file);
  w.file = -1;
  if (closed < 0) fail_h5(&w, "closing the file");
  H5Pclose(w.dxpl);
  w.dxpl = -1;
  agree_or_abandon(&w);

  if (world->rank == 0) {
    if (rename(temp, final) != 0)
      ckpt_fail(&w.st, "cannot write checkpoint %s: renaming %s: %s (the partial file was removed; earlier "
                       "checkpoints are intact)",
                final, temp, strerror(errno));
    else {
      sync_dir(dir);
      ckpt_prune(dir, s->step, cfg->ckpt_keep);
    }
  }
  agree_or_abandon(&w);
  h5util_quiet_end(quiet);
  if (written) snprintf(written, written_len, "%s", final);
}
