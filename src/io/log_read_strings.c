/* Reading a Surge log's string datasets (io/log_read.h's log_reader_strings: /events/text, /plan/name),
 * their claimed lengths checked against the file before HDF5 allocates for them. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/log_read.h"
#include "io/log_read_impl.h"
#include "io/printable.h"

#define VLEN_MIN_BYTES 8.0 /* a variable-length string takes at least this much of its dataset's storage */

/* HDF5 allocates each variable-length string as long as the file says it is (a 4-byte length: up to
 * 4 GiB for one string of a damaged file) before it reads it: through this allocator, no string may
 * be longer than the file that holds it, and a longer one fails the read (the log is damaged). */
typedef struct vlen_limit {
  size_t most;
} vlen_limit_t;

static void *vlen_alloc(size_t size, void *info) {
  const vlen_limit_t *limit = info;
  return size > limit->most ? NULL : malloc(size ? size : 1);
}

static void vlen_free(void *p, void *info) {
  (void)info;
  free(p);
}

/* The length every element of a variable-length string dataset claims, read from its raw bytes
 * before HDF5 reads the strings: HDF5 1.10 allocates (and fills) a conversion buffer of the claimed
 * length first, so a 180 KB file claiming a 4 GiB string cost 4 GB of memory. On disk an element is
 * the length (4 bytes, little-endian) and a global heap ID (an address and a 4-byte index). A Surge
 * log writes such datasets chunked (/events/text) or contiguous (/plan/name), never filtered: any
 * other layout, and any length longer than the file, is damage. */
static void check_string_lengths(log_reader_t *r, hid_t f, hid_t d, hid_t space, const char *h5path, hsize_t count) {
  hid_t fcpl = log_reader_ok(r, H5Fget_create_plist(f), "get the creation properties of", "/");
  size_t sizeof_addr = 8, sizeof_size = 8;
  hsize_t userblock = 0, file_bytes = 0;
  log_reader_ok(r, H5Pget_sizes(fcpl, &sizeof_addr, &sizeof_size), "get the address size of", "/");
  log_reader_ok(r, H5Pget_userblock(fcpl, &userblock), "get the user block of", "/");
  log_reader_ok(r, H5Pclose(fcpl), "close the creation properties of", "/");
  log_reader_ok(r, H5Fget_filesize(f, &file_bytes), "get the size of", "/");
  const size_t elem = 4 + sizeof_addr + 4;
  hid_t dcpl = log_reader_ok(r, H5Dget_create_plist(d), "get the creation properties of", h5path);
  H5D_layout_t layout = H5Pget_layout(dcpl);
  int filters = log_reader_ok(r, H5Pget_nfilters(dcpl), "get the filters of", h5path);
  hsize_t chunk[1] = {0};
  if (layout == H5D_CHUNKED) log_reader_ok(r, H5Pget_chunk(dcpl, 1, chunk), "get the chunks of", h5path);
  log_reader_ok(r, H5Pclose(dcpl), "close the creation properties of", h5path);
  if ((layout != H5D_CHUNKED && layout != H5D_CONTIGUOUS) || filters != 0)
    log_reader_damaged(r, "is a string dataset of a layout a Surge log never writes (compact or filtered)", h5path);
  (void)space;
  size_t nbuf = 0;
  unsigned char *buf = NULL;
  hsize_t step = layout == H5D_CHUNKED ? chunk[0] : (count ? count : 1);
  for (hsize_t at = 0; at < count; at += step) { // each chunk the strings lie in, or the contiguous data
    hsize_t offset[1] = {at}, bytes = 0;
    if (layout == H5D_CHUNKED) {
      unsigned mask;
      haddr_t addr;
      log_reader_ok(r, H5Dget_chunk_info_by_coord(d, offset, &mask, &addr, &bytes), "look up a chunk of", h5path);
      if (addr == HADDR_UNDEF) continue; // never written: empty strings
      if (bytes != chunk[0] * elem) log_reader_damaged(r, "has a chunk of another size than its chunks", h5path);
    } else {
      bytes = count * elem;
      if (count && H5Dget_offset(d) == HADDR_UNDEF) log_reader_damaged(r, "has no stored strings", h5path);
    }
    if (bytes > file_bytes) log_reader_damaged(r, "claims more string references than the file holds", h5path);
    if (bytes > nbuf) buf = xrealloc(buf, nbuf = (size_t)bytes);
    uint32_t filter_mask = 0;
    if (layout == H5D_CHUNKED)
      log_reader_ok(r, H5Dread_chunk(d, H5P_DEFAULT, offset, &filter_mask, buf), "read a chunk of", h5path);
    else if (bytes) {
      int *fd = NULL;
      log_reader_ok(r, H5Fget_vfd_handle(f, H5P_DEFAULT, (void **)&fd), "get the file descriptor of", "/");
      if (!fd || pread(*fd, buf, (size_t)bytes, (off_t)(userblock + H5Dget_offset(d))) != (ssize_t)bytes)
        log_reader_damaged(r, "cannot be read as stored", h5path);
    }
    for (hsize_t j = 0; j < bytes / elem && offset[0] + j < count; j++) {
      const unsigned char *e = buf + j * elem;
      uint32_t len = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
      if (len > file_bytes)
        surge_input_error("%s: damaged Surge log: %s: string %llu claims %u bytes, more than the %llu-byte file "
                          "holds", r->path, h5path, (unsigned long long)(offset[0] + j), len,
                          (unsigned long long)file_bytes);
    }
  }
  free(buf);
}

/* A 1-D dataset of variable-length strings (h5path), malloc'd strings; *n receives their count. */
char **log_reader_strings(log_reader_t *r, const char *h5path, size_t *n) {
  hid_t f = r->file;
  hid_t d = log_reader_ok(r, H5Dopen2(f, h5path, H5P_DEFAULT), "open", h5path);
  hid_t t = log_reader_ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = log_reader_ok(r, H5Dget_space(d), "get the shape of", h5path);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0 || H5Sget_simple_extent_ndims(s) != 1)
    log_reader_damaged(r, "is not a 1-D dataset of variable-length strings", h5path);
  hsize_t len = 0;
  log_reader_ok(r, H5Sget_simple_extent_dims(s, &len, NULL), "get the shape of", h5path);
  if (len > LOG_READ_MAX_CELLS)
    surge_input_error("%s: %s holds %llu strings, more than the %zu a log may have", r->path, h5path,
                      (unsigned long long)len, LOG_READ_MAX_CELLS);
  if ((double)len * VLEN_MIN_BYTES > log_reader_stored_bound(r, d, h5path))
    surge_input_error("%s: damaged Surge log: %s claims %llu strings, but the file stores %llu bytes of them",
                      r->path, h5path, (unsigned long long)len, (unsigned long long)H5Dget_storage_size(d));
  check_string_lengths(r, f, d, s, h5path, len);
  hid_t mt = log_reader_ok(r, H5Tcopy(H5T_C_S1), "make a string type for", h5path);
  log_reader_ok(r, H5Tset_size(mt, H5T_VARIABLE), "make a string type for", h5path);
  log_reader_ok(r, H5Tset_cset(mt, H5Tget_cset(t)), "make a string type for", h5path); /* HDF5 converts no charsets */
  hsize_t file_bytes = 0;
  log_reader_ok(r, H5Fget_filesize(f, &file_bytes), "get the size of", "/");
  vlen_limit_t limit = {(size_t)file_bytes + 1};
  hid_t dxpl = log_reader_ok(r, H5Pcreate(H5P_DATASET_XFER), "make the transfer properties for", h5path);
  log_reader_ok(r, H5Pset_vlen_mem_manager(dxpl, vlen_alloc, &limit, vlen_free, NULL), "bound the strings of", h5path);
  char **raw = xcalloc((size_t)len + 1, sizeof(char *)), **text = xcalloc((size_t)len + 1, sizeof(char *));
  if (len) log_reader_ok(r, H5Dread(d, mt, H5S_ALL, H5S_ALL, dxpl, raw), "read", h5path);
  for (hsize_t i = 0; i < len; i++) text[i] = printable_dup(raw[i] ? raw[i] : ""); /* shown on terminals */
#if H5_VERSION_GE(1, 12, 0)
  if (len) log_reader_ok(r, H5Treclaim(mt, s, dxpl, raw), "free the strings of", h5path);
#else
  if (len) log_reader_ok(r, H5Dvlen_reclaim(mt, s, dxpl, raw), "free the strings of", h5path);
#endif
  free(raw);
  log_reader_ok(r, H5Pclose(dxpl), "close the transfer properties for", h5path);
  log_reader_ok(r, H5Tclose(mt), "close a string type of", h5path);
  log_reader_ok(r, H5Sclose(s), "close the dataspace of", h5path);
  log_reader_ok(r, H5Tclose(t), "close the type of", h5path);
  log_reader_ok(r, H5Dclose(d), "close", h5path);
  *n = (size_t)len;
  return text;
}

void log_strings_free(char **text, size_t n) {
  for (size_t i = 0; i < n; i++) free(text[i]);
  free(text);
}
