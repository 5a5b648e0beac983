/* The HDF5 pieces of checkpoints: parallel file access, dataset creation with chunking and
 * filters, CRC32 of text (the quiet scope, error text and attributes: io/h5util.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "io/checkpoint_impl.h"

/* Deflate level of "shuffle-deflate" (chosen with bench/bench_checkpoint: doc/checkpoints.md). */
#ifndef CKPT_DEFLATE_LEVEL
#define CKPT_DEFLATE_LEVEL 1
#endif
#define H5Z_FILTER_BITSHUFFLE 32008
#define BSHUF_H5_COMPRESS_LZ4 2

hid_t ckpt_h5_fapl(const comm_t *world) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return -1;
  // 1.8 object headers: attributes of any size (dense storage); readable by HDF5 1.8 and later
  if (H5Pset_fapl_mpio(fapl, world->mpi, MPI_INFO_NULL) < 0 ||
      H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 || H5Pset_all_coll_metadata_ops(fapl, 1) < 0 ||
      H5Pset_coll_metadata_write(fapl, 1) < 0) {
    H5Pclose(fapl);
    return -1;
  }
  return fapl;
}

hid_t ckpt_h5_dxpl_collective(void) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (dxpl >= 0 && H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0) {
    H5Pclose(dxpl);
    return -1;
  }
  return dxpl;
}

static int filter_can_encode(H5Z_filter_t id) {
  unsigned info = 0;
  return H5Zfilter_avail(id) > 0 && H5Zget_filter_info(id, &info) >= 0 && (info & H5Z_FILTER_CONFIG_ENCODE_ENABLED);
}

/* Why a filter is missing: `missing`, unless this process has few file descriptors left (fewer than
 * 8 under its ulimit -n), where HDF5 may have failed to open the plugin that is there. */
static void filter_missing(char *why, size_t why_len, const char *missing) {
  struct rlimit lim;
  long open_now = 0;
  DIR *d = opendir("/proc/self/fd");
  const int none_left = !d && errno == EMFILE, listed = d != NULL;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) open_now += e->d_name[0] != '.';
  if (d) closedir(d), open_now--; /* (the directory's own) */
  const int limited = (listed || none_left) && getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY;
  if (limited && none_left) open_now = (long)lim.rlim_cur;
  if (limited && (rlim_t)open_now + 8 > lim.rlim_cur)
    snprintf(why, why_len, "%s; or HDF5 could not open it: this process has %ld of the %llu files open it may "
             "(hint: raise ulimit -n)", missing, open_now, (unsigned long long)lim.rlim_cur);
  else
    snprintf(why, why_len, "%s", missing);
}

int ckpt_h5_compression_check(const char *compression, char *why, size_t why_len) {
  if (strcmp(compression, "none") == 0) return 0;
  if (strcmp(compression, "shuffle-deflate") == 0) {
    if (filter_can_encode(H5Z_FILTER_SHUFFLE) && filter_can_encode(H5Z_FILTER_DEFLATE)) return 0;
    H5Eclear2(H5E_DEFAULT);
    snprintf(why, why_len, "shuffle-deflate needs an HDF5 library built with zlib (deflate)");
    return -1;
  }
  if (strcmp(compression, "bitshuffle-lz4") == 0) {
    if (filter_can_encode(H5Z_FILTER_BITSHUFFLE)) return 0;
    H5Eclear2(H5E_DEFAULT);
    filter_missing(why, why_len,
                   "bitshuffle-lz4 needs the HDF5 bitshuffle filter plugin (Debian: apt-get install bitshuffle; "
                   "HDF5 looks for plugins in HDF5_PLUGIN_PATH, else its default plugin directory)");
    return -1;
  }
  snprintf(why, why_len, "unknown checkpoint compression \"%s\" (shuffle-deflate, bitshuffle-lz4 or none)",
           compression);
  return -1;
}

int ckpt_h5_missing_filter(hid_t dset, char *why, size_t why_len) {
  hid_t dcpl = H5Dget_create_plist(dset);
  int n = dcpl < 0 ? 0 : H5Pget_nfilters(dcpl), missing = 0;
  for (int i = 0; i < n && !missing; i++) {
    unsigned flags, cd[16], info = 0;
    size_t ncd = 16;
    char name[128] = "";
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name, NULL);
    if (id < 0 || (H5Zfilter_avail(id) > 0 && H5Zget_filter_info(id, &info) >= 0 &&
                   (info & H5Z_FILTER_CONFIG_DECODE_ENABLED)))
      continue;
    missing = 1;
    snprintf(why, why_len, "HDF5 filter %d (%.60s) is not available here%s", (int)id, name,
             id == H5Z_FILTER_BITSHUFFLE ? " (Debian: apt-get install bitshuffle)" : "");
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT);
  return missing;
}

hid_t ckpt_h5_dcpl(int ndim, const hsize_t *chunk, const char *compression) {
  double chunk_bytes = sizeof(float);
  for (int i = 0; i < ndim; i++) chunk_bytes *= (double)chunk[i];
  if (chunk_bytes > 4294967295.0 || chunk_bytes <= 0) return -1; // HDF5 chunks stay under 4 GiB

  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) return -1;
  // every element is written, so no fill values first (parallel HDF5 allocates chunks at creation)
  int bad = H5Pset_chunk(dcpl, ndim, chunk) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0;
  if (strcmp(compression, "shuffle-deflate") == 0)
    bad = bad || H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, CKPT_DEFLATE_LEVEL) < 0;
  else if (strcmp(compression, "bitshuffle-lz4") == 0) {
    // cd_values as users pass them: block size (0: automatic), compressor; the filter's set_local
    // moves them behind 3 slots it fills itself (version, element size), as h5dump then shows
    const unsigned cd[2] = {0, BSHUF_H5_COMPRESS_LZ4};
    bad = bad || H5Pset_filter(dcpl, H5Z_FILTER_BITSHUFFLE, H5Z_FLAG_MANDATORY, 2, cd) < 0;
  } else if (strcmp(compression, "none") != 0)
    bad = 1;
  // last, so the checksum covers the bytes as stored
  bad = bad || H5Pset_fletcher32(dcpl) < 0;
  if (bad) {
    H5Pclose(dcpl);
    return -1;
  }
  return dcpl;
}

/* ---- checksums */

uint32_t ckpt_crc32_text(const char *s) {
  return (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), (const Bytef *)s, strlen(s));
}

int ckpt_h5_select_rows(hid_t dset, const state_tensor_t *t, size_t lo, size_t hi, hid_t *fspace, hid_t *mspace) {
  hsize_t start[SLAB_MAX_DIMS], count[SLAB_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) {
    start[i] = (hsize_t)t->start[i];
    count[i] = hi > lo ? (hsize_t)t->count[i] : 1; // (1, ...) with nothing selected when no rows
  }
  start[0] += lo;
  if (hi > lo) count[0] = hi - lo;
  *fspace = dset < 0 ? -1 : H5Dget_space(dset);
  *mspace = H5Screate_simple(t->ndim, count, NULL);
  if (*fspace < 0 || *mspace < 0) return -1;
  if (hi > lo) return H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ? -1 : 0;
  return H5Sselect_none(*fspace) < 0 || H5Sselect_none(*mspace) < 0 ? -1 : 0;
}
