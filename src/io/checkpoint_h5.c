/* The HDF5 pieces of checkpoints: error text, parallel file access, dataset creation with
 * chunking and filters, typed attributes, CRC32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "io/checkpoint_impl.h"

/* Deflate level of "shuffle-deflate" (chosen with bench/bench_checkpoint: doc/checkpoints.md). */
#ifndef CKPT_DEFLATE_LEVEL
#define CKPT_DEFLATE_LEVEL 1
#endif
#define CKPT_MAX_ATTR_STRING (16u << 20)
#define H5Z_FILTER_BITSHUFFLE 32008
#define BSHUF_H5_COMPRESS_LZ4 2

void ckpt_h5_quiet_begin(ckpt_h5_quiet_t *q) {
  H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void ckpt_h5_quiet_end(const ckpt_h5_quiet_t *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

typedef struct error_walk {
  char inner[512]; /* the innermost description */
  char mpi[256];   /* an MPI error string, when one was recorded */
} error_walk_t;

static herr_t walk_error(unsigned n, const H5E_error2_t *e, void *data) {
  error_walk_t *w = data;
  if (n == 0 && e->desc) snprintf(w->inner, sizeof w->inner, "%s", e->desc);
  if (!w->mpi[0] && e->min_num == H5E_MPIERRSTR && e->desc) snprintf(w->mpi, sizeof w->mpi, "%s", e->desc);
  return 0;
}

void ckpt_h5_error_text(char *out, size_t out_len) {
  error_walk_t w = {{0}, {0}};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_error, &w);
  H5Eclear2(H5E_DEFAULT);
  if (!w.inner[0])
    snprintf(out, out_len, "unknown HDF5 error");
  else if (w.mpi[0] && strcmp(w.mpi, w.inner) != 0)
    snprintf(out, out_len, "%s: %s", w.inner, w.mpi);
  else
    snprintf(out, out_len, "%s", w.inner);
}

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
    snprintf(why, why_len,
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

hid_t ckpt_h5_dcpl(const slab_tensor_t *t, size_t chunk_rows, const char *compression) {
  hsize_t chunk[SLAB_MAX_DIMS];
  size_t chunk_bytes = sizeof(float) * chunk_rows;
  chunk[0] = chunk_rows;
  for (int i = 1; i < t->ndim; i++) chunk_bytes *= (size_t)(chunk[i] = (hsize_t)t->d[i]);
  if (chunk_bytes > 0xffffffffu) return -1; // HDF5 chunks stay under 4 GiB

  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0) return -1;
  // every element is written, so no fill values first (parallel HDF5 allocates chunks at creation)
  int bad = H5Pset_chunk(dcpl, t->ndim, chunk) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0;
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

/* ---- attributes */

static int attr_write(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = space < 0 ? -1 : H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  int rc = a >= 0 && H5Awrite(a, mem_type, value) >= 0 ? 0 : -1;
  if (a >= 0) H5Aclose(a);
  if (space >= 0) H5Sclose(space);
  return rc;
}

int ckpt_attr_write_string(hid_t obj, const char *name, const char *value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  if (type < 0) return -1;
  int rc = H5Tset_size(type, strlen(value) + 1) < 0 || H5Tset_strpad(type, H5T_STR_NULLTERM) < 0
               ? -1
               : attr_write(obj, name, type, type, value);
  H5Tclose(type);
  return rc;
}

int ckpt_attr_write_i64(hid_t obj, const char *name, int64_t value) {
  return attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

int ckpt_attr_write_u64(hid_t obj, const char *name, uint64_t value) {
  return attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

int ckpt_attr_write_u32(hid_t obj, const char *name, uint32_t value) {
  return attr_write(obj, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value);
}

/* Open a scalar attribute of the given type class; -1 when missing or of another kind. */
static hid_t attr_open(hid_t obj, const char *name, H5T_class_t want, hid_t *type) {
  *type = -1;
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return -1;
  hid_t space = H5Aget_space(a);
  *type = H5Aget_type(a);
  int ok = space >= 0 && *type >= 0 && H5Sget_simple_extent_type(space) == H5S_SCALAR &&
           H5Tget_class(*type) == want;
  if (space >= 0) H5Sclose(space);
  if (ok) return a;
  if (*type >= 0) H5Tclose(*type);
  *type = -1;
  H5Aclose(a);
  return -1;
}

int ckpt_attr_read_string(hid_t obj, const char *name, char **out) {
  *out = NULL;
  hid_t type;
  hid_t a = attr_open(obj, name, H5T_STRING, &type);
  if (a < 0) return -1;
  size_t size = H5Tget_size(type);
  int rc = -1;
  if (H5Tis_variable_str(type) <= 0 && size > 0 && size <= CKPT_MAX_ATTR_STRING) {
    char *buf = xcalloc(size + 1, 1);
    hid_t mem = H5Tcopy(type);
    if (mem >= 0 && H5Aread(a, mem, buf) >= 0) {
      *out = buf;
      rc = 0;
    } else
      free(buf);
    if (mem >= 0) H5Tclose(mem);
  }
  H5Tclose(type);
  H5Aclose(a);
  return rc;
}

static int attr_read_integer(hid_t obj, const char *name, hid_t mem_type, void *out) {
  hid_t type;
  hid_t a = attr_open(obj, name, H5T_INTEGER, &type);
  if (a < 0) return -1;
  int rc = H5Tget_size(type) <= 8 && H5Aread(a, mem_type, out) >= 0 ? 0 : -1;
  H5Tclose(type);
  H5Aclose(a);
  return rc;
}

int ckpt_attr_read_i64(hid_t obj, const char *name, int64_t *out) {
  return attr_read_integer(obj, name, H5T_NATIVE_INT64, out);
}

int ckpt_attr_read_u64(hid_t obj, const char *name, uint64_t *out) {
  return attr_read_integer(obj, name, H5T_NATIVE_UINT64, out);
}

int ckpt_attr_read_u32(hid_t obj, const char *name, uint32_t *out) {
  return attr_read_integer(obj, name, H5T_NATIVE_UINT32, out);
}

/* ---- checksums */

uint32_t ckpt_crc32_floats(const float *x, size_t n) {
  return (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), (const Bytef *)x, n * sizeof *x);
}

uint32_t ckpt_crc32_text(const char *s) {
  return (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), (const Bytef *)s, strlen(s));
}
