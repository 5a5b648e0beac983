/* ckpt_file_write: every rank writes its pieces of every tensor into a hidden temporary file with
 * collective parallel HDF5 transfers; the file is synced and closed, and only when every rank
 * succeeded does rank 0 rename it to its final name. Any failure removes the temporary file, so the
 * newest complete file is always a good one. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/error.h"
#include "io/checkpoint_impl.h"
#include "io/run_dir.h"

/* Free space below which a failed write is blamed on a full file system. */
#define CKPT_LOW_SPACE_BYTES (4.0 * 1024 * 1024)

typedef struct writer {
  const ckpt_file_t *f;
  comm_t *world;
  ckpt_status_t st;
  hid_t file, dxpl, group; /* what is open (-1: nothing) */
  int temp_left_said;       /* the error says the temporary file could not be removed */
} writer_t;

/* Record this rank's failure of `what`, with HDF5's reason and the system's: errno (cleared by the
 * callers before the HDF5 calls that write) or, when that is lost, a file system with (almost) no
 * space left. Call it right after the failing call: the next HDF5 call clears the error stack.
 * When the file could not be created, the directory's own refusal (a file system mounted read-only,
 * an immutable directory) is the cause: MPI-IO's open leaves an errno of its own (EBADF). */
static void fail_h5(writer_t *w, const char *what) {
  int err = errno, created = w->file >= 0;
  char why[512], sys[192] = "", left[PATH_MAX + 64];
  h5util_error_text(why, sizeof why, CKPT_H5_NO_ERROR);
  struct statvfs fs;
  double free_bytes = statvfs(w->f->dir, &fs) == 0 ? (double)fs.f_bavail * (double)fs.f_frsize : -1;
  if (!created && access(w->f->dir, W_OK | X_OK) != 0)
    snprintf(sys, sizeof sys, " (%s: %s)", w->f->dir, strerror(errno));
  else if (free_bytes >= 0 && (err == ENOSPC || (!err && free_bytes < CKPT_LOW_SPACE_BYTES)))
    snprintf(sys, sizeof sys, " (no space left on device: %.0f KiB free in %s)", free_bytes / 1024.0, w->f->dir);
  else if (err)
    snprintf(sys, sizeof sys, " (%s)", strerror(err));
  if (created)
    snprintf(left, sizeof left, "the partial file %s is removed", w->f->temp);
  else
    snprintf(left, sizeof left, "no file was written");
  ckpt_fail(&w->st, "cannot write %s %s: %s: %s%s (%s; earlier %ss are intact)", w->f->kind, w->f->final, what, why,
            sys, left, w->f->kind);
}

/* Remove a failed write's temporary file; a directory that refuses (made read-only or immutable
 * during the run) leaves it, which the error's "is removed" would not say. */
static void remove_partial(const writer_t *w) {
  if (unlink(w->f->temp) != 0 && errno != ENOENT && !w->temp_left_said)
    surge_warning("the partial file %s was not removed: %s (remove it by hand)", w->f->temp, strerror(errno));
}

/* Rank 0: whatever a killed writer (or anyone) left at the temporary name goes before the file is
 * created: HDF5 would write through a symbolic link to its target, and a fifo there blocks the
 * collective create. A directory stays, and the create fails naming it. */
static void clear_temp(writer_t *w) {
  struct stat st;
  if (lstat(w->f->temp, &st) != 0 || S_ISDIR(st.st_mode)) return;
  if (unlink(w->f->temp) != 0) {
    ckpt_fail(&w->st, "cannot write %s %s: cannot remove %s, left at its temporary name: %s", w->f->kind, w->f->final,
              w->f->temp, strerror(errno));
    w->temp_left_said = 1; /* (not this write's partial file: no warning of it after the error) */
  }
}

/* Collective: when any rank failed, remove the temporary file and report. A process that ends leaves
 * the file open and ends at once (ckpt_abandon: no exit handler): HDF5's close of a file whose write
 * failed extends it to its allocated size, which fails again past a file-size limit or quota, and
 * then runs other collective calls on the rank it failed on than on the others (a job whose one
 * rank hit the limit waited in H5Fclose for ever), or, on one rank, leaves the file to HDF5's exit,
 * which crashed (exit 139). An in-process background's thread (an escape: its process goes on)
 * closes the file, emptied first, so that closing it cannot fail for want of the space its own data
 * took on a full disk; past a file-size limit it still can (the extension fails again), and HDF5
 * may then crash at the process's exit (not mended: an open file left to the foreground's exit would
 * do the same). A rank left alone (the others stuck in HDF5) removes the file without any collective call. */
static void agree_or_abandon(writer_t *w) {
  if (!ckpt_any_failed(&w->st)) return;
  if (w->st.alone) {
    remove_partial(w);
    ckpt_report(&w->st, SURGE_EXIT_RUNTIME);
  }
  if (w->group >= 0) H5Gclose(w->group);
  if (w->file >= 0 && !surge_escaping()) {
    comm_barrier(w->world);
    if (w->world->rank == 0) remove_partial(w);
    ckpt_abandon(&w->st, SURGE_EXIT_RUNTIME);
  }
  if (w->file >= 0) {
    if (w->world->rank == 0) truncate(w->f->temp, 0);
    comm_barrier(w->world);
    H5Fclose(w->file);
  }
  if (w->dxpl >= 0) H5Pclose(w->dxpl);
  H5Eclear2(H5E_DEFAULT);
  if (w->world->rank == 0) remove_partial(w);
  ckpt_report(&w->st, SURGE_EXIT_RUNTIME);
}

/* The collective calls this rank needs for its rows of a piece chunked as c: at least 1 (with nothing
 * selected, a rank without rows still takes part in the transfer). */
static int calls_for(const ckpt_chunking_t *c) {
  if (c->hi <= c->lo) return 1;
  size_t chunks = (c->hi - c->lo + c->chunk_rows - 1) / c->chunk_rows;
  const size_t per_call = (size_t)ckpt_call_chunks();
  return (int)((chunks + per_call - 1) / per_call);
}

/* What the ranks learn together about the tensors of a region before writing them. */
enum { SUM_WRITTEN, SUM_HASH, SUM_PIECES, SUM_REPLICAS, NSUMS };

/* Collective: every tensor's chunk shape (the largest any rank asks for), the calls each entry's
 * write takes (the most any rank needs: chunk[r->n * SLAB_MAX_DIMS + i]) and sums over the ranks:
 * floats written (must be the tensor's), the file's hash, and two sums that agree only when every
 * replica of a piece holds the same values. Fails (on every rank alike) on a bad description. */
static void agree_on_tensors(writer_t *w, const state_region_t *r, double *chunk, uint64_t *sums) {
  for (int i = 0; i < r->n; i++) {
    const state_tensor_t *t = &r->t[i];
    ckpt_chunking_t c = ckpt_chunking(t);
    size_t floats = state_tensor_floats(t), per_row = t->count[0] ? floats / t->count[0] : 0;
    for (int d = 0; d < t->ndim; d++) {
      chunk[i * SLAB_MAX_DIMS + d] = d == 0 ? (double)c.chunk_rows : floats ? (double)t->count[d] : 0;
      if (floats && t->start[d] + t->count[d] > t->dims[d])
        ckpt_fail(&w->st, "cannot write %s %s: %s/%s: this rank's piece lies outside the tensor (a layout bug)",
                  w->f->kind, w->f->final, r->group, t->name);
    }
    chunk[r->n * SLAB_MAX_DIMS + i] = calls_for(&c);
    uint64_t h = state_hash_rows(t, c.lo, c.hi);
    sums[i * NSUMS + SUM_WRITTEN] = (uint64_t)((c.hi - c.lo) * per_row);
    sums[i * NSUMS + SUM_HASH] = h;
    sums[i * NSUMS + SUM_PIECES] = state_hash_rows(t, 0, t->count[0]);
    sums[i * NSUMS + SUM_REPLICAS] = (uint64_t)t->replicas * h;
  }
  comm_allreduce_max_double(w->world, chunk, r->n * (SLAB_MAX_DIMS + 1), TRAFFIC_OTHER);
  comm_allreduce_sum_u64(w->world, sums, r->n * NSUMS, TRAFFIC_OTHER);
  for (int i = 0; i < r->n && !w->st.failed; i = state_tensor_end(r, i)) {
    const state_tensor_t *t = &r->t[i];
    uint64_t want = 1, written = 0;
    for (int d = 0; d < t->ndim; d++) want *= (uint64_t)t->dims[d];
    for (int j = i; j < state_tensor_end(r, i); j++) { /* the tensor's boxes: one chunk shape, one hash */
      written += sums[j * NSUMS + SUM_WRITTEN];
      if (j > i) sums[i * NSUMS + SUM_HASH] += sums[j * NSUMS + SUM_HASH];
      for (int d = 0; d < t->ndim; d++)
        if (chunk[j * SLAB_MAX_DIMS + d] > chunk[i * SLAB_MAX_DIMS + d])
          chunk[i * SLAB_MAX_DIMS + d] = chunk[j * SLAB_MAX_DIMS + d];
      if (sums[j * NSUMS + SUM_PIECES] != sums[j * NSUMS + SUM_REPLICAS])
        ckpt_fail(&w->st, "cannot write %s %s: %s/%s differs between ranks that should hold the same values (the "
                          "replicas diverged)", w->f->kind, w->f->final, r->group, t->name);
    }
    if (written != want && !w->st.failed)
      ckpt_fail(&w->st, "cannot write %s %s: %s/%s: the ranks' pieces cover %llu of its %llu values (a layout bug)",
                w->f->kind, w->f->final, r->group, t->name, (unsigned long long)written, (unsigned long long)want);
  }
}

/* Collective: create the dataset of tensor t in the open group, chunked as chunk_dims. */
static hid_t create_tensor(writer_t *w, const char *what, const state_tensor_t *t, const double *chunk_dims) {
  errno = 0;
  hsize_t dims[SLAB_MAX_DIMS], chunk[SLAB_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) {
    dims[i] = (hsize_t)t->dims[i];
    chunk[i] = (hsize_t)chunk_dims[i] > 0 ? (hsize_t)chunk_dims[i] : 1;
  }
  hid_t fspace = H5Screate_simple(t->ndim, dims, NULL);
  hid_t dcpl = ckpt_h5_dcpl(t->ndim, chunk, w->f->compression);
  hid_t dset = fspace < 0 || dcpl < 0 ? -1
                                      : H5Dcreate2(w->group, t->name, H5T_IEEE_F32LE, fspace, H5P_DEFAULT, dcpl,
                                                   H5P_DEFAULT);
  if (dset < 0) fail_h5(w, what);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (fspace >= 0) H5Sclose(fspace);
  return dset;
}

/* Collective: this rank writes its rows of one box t of dataset dset in `calls` transfers of at most
 * ckpt_call_chunks() chunks (an empty selection where it has no more: filtered datasets need every rank
 * in each transfer). After a failure it still makes the rest, as every other rank does, and the
 * first failure is recorded. */
static void write_box(writer_t *w, const char *what, hid_t dset, const state_tensor_t *t, int calls) {
  const ckpt_chunking_t c = ckpt_chunking(t);
  const size_t per_row = t->count[0] ? state_tensor_floats(t) / t->count[0] : 0;
  const size_t call_rows = c.chunk_rows * (size_t)ckpt_call_chunks();
  int failed = 0;
  for (int k = 0; k < calls; k++) {
    errno = 0;
    const size_t lo = c.lo + (size_t)k * call_rows < c.hi ? c.lo + (size_t)k * call_rows : c.hi;
    const size_t hi = lo + call_rows < c.hi ? lo + call_rows : c.hi;
    hid_t fspace, mspace;
    int bad = ckpt_h5_select_rows(dset, t, lo, hi, &fspace, &mspace) < 0;
    const float *rows = hi > lo ? t->data + lo * per_row : NULL;
    bad = bad || H5Dwrite(dset, H5T_NATIVE_FLOAT, mspace, fspace, w->dxpl, rows) < 0;
    if (bad && !failed++) fail_h5(w, what);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
  }
}

/* Collective: the dataset of the tensor whose boxes are entries [i, end) of r, and its hash. */
static void write_tensor(writer_t *w, const state_region_t *r, int i, int end, const double *chunk_dims,
                         const double *calls, uint64_t hash) {
  char what[256];
  snprintf(what, sizeof what, "%s/%s", r->group, r->t[i].name);
  hid_t dset = create_tensor(w, what, &r->t[i], chunk_dims);
  for (int j = i; j < end; j++) write_box(w, what, dset, &r->t[j], (int)calls[j]);
  errno = 0;
  if (dset >= 0 && h5util_attr_write_u64(dset, "hash64", hash) < 0) fail_h5(w, what);
  if (dset >= 0) H5Dclose(dset);
}

static void write_region(writer_t *w, const state_region_t *r) {
  double *chunk = xcalloc((size_t)r->n * (SLAB_MAX_DIMS + 1) + 1, sizeof *chunk); /* then the calls */
  uint64_t *sums = xcalloc((size_t)r->n * NSUMS + 1, sizeof *sums);
  agree_on_tensors(w, r, chunk, sums);
  agree_or_abandon(w);
  errno = 0;
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  if (lcpl >= 0) H5Pset_create_intermediate_group(lcpl, 1);
  w->group = lcpl < 0 ? -1 : H5Gcreate2(w->file, r->group, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  if (w->group < 0) fail_h5(w, r->group);
  if (lcpl >= 0) H5Pclose(lcpl);
  agree_or_abandon(w);
  for (int i = 0; i < r->n; i = state_tensor_end(r, i)) {
    write_tensor(w, r, i, state_tensor_end(r, i), chunk + i * SLAB_MAX_DIMS, chunk + (size_t)r->n * SLAB_MAX_DIMS,
                 sums[i * NSUMS + SUM_HASH]);
    agree_or_abandon(w); // a rank that failed must not leave the others in a collective call
  }
  free(chunk);
  free(sums);
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

void ckpt_file_write(const ckpt_file_t *f, comm_t *world) {
  char why[CKPT_MSG];
  writer_t w = {.f = f, .world = world, .file = -1, .dxpl = -1, .group = -1};
  ckpt_status_init(&w.st, world);
  if (ckpt_h5_compression_check(f->compression, why, sizeof why) != 0)
    ckpt_fail(&w.st, "cannot write %s %s: [checkpoint] compression: %s", f->kind, f->final, why);
  if (ckpt_any_failed(&w.st)) ckpt_report(&w.st, SURGE_EXIT_INPUT);
  if (world->rank == 0 && run_dir_make(f->dir, why, sizeof why) != 0)
    ckpt_fail(&w.st, "cannot write %s %s: cannot create directory %s: %s", f->kind, f->final, why, strerror(errno));
  else if (world->rank == 0)
    clear_temp(&w);
  agree_or_abandon(&w);
  /* every rank opens the file: one that cannot (its node mounts the directory read-only) would leave
   * the others in the collective create, which Open MPI's file layer never returns from */
  if (access(f->dir, W_OK | X_OK) != 0) {
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    ckpt_fail(&w.st, "cannot write %s %s: this rank's node %s cannot write in %s: %s (no file was written; earlier "
              "%ss are intact; hint: the directory must be writable from every node)", f->kind, f->final, host,
              f->dir, strerror(errno), f->kind);
  }
  agree_or_abandon(&w);

  hid_t fapl = ckpt_h5_fapl(world);
  w.dxpl = ckpt_h5_dxpl_collective();
  errno = 0;
  w.file = fapl < 0 || w.dxpl < 0 ? -1 : H5Fcreate(f->temp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (w.file < 0) fail_h5(&w, "creating the file"); // before any other call clears HDF5's error stack
  if (fapl >= 0) H5Pclose(fapl);
  agree_or_abandon(&w);

  const char *attr = "/";
  errno = 0;
  if (f->put_root(w.file, f->root_arg, &attr) != 0) fail_h5(&w, attr);
  agree_or_abandon(&w);
  for (int r = 0; r < f->nregions; r++) write_region(&w, &f->regions[r]);

  // to the disk before the rename makes it the newest file (MPI_File_sync on every rank)
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
    if (rename(f->temp, f->final) != 0) {
      char left[PATH_MAX + 256];
      int err = errno;
      if (unlink(f->temp) == 0) {
        snprintf(left, sizeof left, "the partial file was removed");
      } else {
        snprintf(left, sizeof left, "the partial file stays: %s; remove it by hand", strerror(errno));
        w.temp_left_said = 1;
      }
      ckpt_fail(&w.st, "cannot write %s %s: renaming %s: %s (%s; earlier %ss are intact)", f->kind, f->final,
                f->temp, strerror(err), left, f->kind);
    } else {
      sync_dir(f->dir);
    }
  }
  agree_or_abandon(&w);
}
