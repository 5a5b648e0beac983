#include "io/h5util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_ATTR_STRING (16u << 20)

h5util_quiet_t h5util_quiet_begin(void) {
  h5util_quiet_t q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return q;
}

void h5util_quiet_end(h5util_quiet_t q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

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

/* HDF5's system-call failures read "file write failed: time = Mon ...\n, filename = '...', ...,
 * error message = 'No space left on device', buf = ...": keep "file write failed: No space left on
 * device". Any other text keeps its words, with line breaks and other controls as blanks: a message
 * is one line. */
static void one_line(char *text, size_t n) {
  const char *key = "error message = '", *colon = strchr(text, ':'), *msg = strstr(text, key);
  if (colon && msg && msg > colon) {
    char reason[256];
    msg += strlen(key);
    const char *end = strchr(msg, '\'');
    snprintf(reason, sizeof reason, "%.*s", end ? (int)(end - msg) : (int)strlen(msg), msg);
    snprintf(text + (colon - text), n - (size_t)(colon - text), ": %s", reason);
  }
  for (char *p = text; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
}

void h5util_error_text(char *out, size_t out_len, const char *none) {
  error_walk_t w = {{0}, {0}};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_error, &w);
  H5Eclear2(H5E_DEFAULT);
  one_line(w.inner, sizeof w.inner);
  one_line(w.mpi, sizeof w.mpi);
  if (!w.inner[0])
    snprintf(out, out_len, "%s", none);
  else if (w.mpi[0] && strcmp(w.mpi, w.inner) != 0)
    snprintf(out, out_len, "%s: %s", w.inner, w.mpi);
  else
    snprintf(out, out_len, "%s", w.inner);
}

h5util_check_t h5util_checker(const char *file, h5util_policy_t policy) {
  return (h5util_check_t){.file = file, .policy = policy};
}

void h5util_fail(h5util_check_t *c, const char *what, const char *h5path) {
  char reason[512], msg[sizeof c->msg];
  h5util_error_text(reason, sizeof reason, "no detail");
  snprintf(msg, sizeof msg, "%s: %scannot %s%s%s (HDF5: %s)%s%s%s", c->file, c->lead ? c->lead : "", what,
           h5path[0] ? " " : "", h5path, reason, c->hint ? " (hint: " : "", c->hint ? c->hint : "",
           c->hint ? ")" : "");
  switch (c->policy) {
  case H5UTIL_INPUT_ERROR: surge_input_error("%s", msg);
  case H5UTIL_RUNTIME_ERROR: surge_runtime_error("%s", msg);
  case H5UTIL_RUNTIME_ABANDON: surge_abandon(SURGE_EXIT_RUNTIME, "%s", msg);
  case H5UTIL_RECORD:
    if (!c->failed) snprintf(c->msg, sizeof c->msg, "%s", msg);
    c->failed = 1;
    return;
  }
}

hid_t h5util_check(h5util_check_t *c, hid_t result, const char *what, const char *h5path) {
  if (result < 0) h5util_fail(c, what, h5path);
  return result;
}

/* Every HDF5 API call clears the error stack first: a failing helper takes the stack aside
 * before it closes what it opened, and puts it back after. */
static hid_t keep_errors(void) { return H5Eget_current_stack(); }

static void restore_errors(hid_t kept) {
  if (kept >= 0) H5Eset_current_stack(kept);
}

int h5util_hard_path(hid_t loc, const char *name) {
  char prefix[1024];
  if (strlen(name) >= sizeof prefix) return 0;
  for (const char *p = name + (name[0] == '/');; p++)
    if (*p == '/' || *p == '\0') {
      snprintf(prefix, sizeof prefix, "%.*s", (int)(p - name), name);
      htri_t link = H5Lexists(loc, prefix, H5P_DEFAULT); /* (the components before it are hard) */
      if (link <= 0) return link < 0 ? -1 : 0;
      H5L_info_t info;
      if (H5Lget_info(loc, prefix, &info, H5P_DEFAULT) < 0) return -1;
      if (info.type != H5L_TYPE_HARD) return H5UTIL_NOT_HARD;
      if (*p == '\0') return 1;
    }
}

int h5util_exists(hid_t loc, const char *name, H5I_type_t type) {
  int hard = h5util_hard_path(loc, name);
  if (hard != 1) return hard;
  hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
  if (o < 0) { /* a dangling link */
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  int is = H5Iget_type(o) == type;
  return H5Oclose(o) < 0 ? -1 : is;
}

int h5util_chunks_whole(hid_t d, int ndims, const hsize_t *dims, size_t type_bytes, unsigned long long *bytes,
                        unsigned long long *want) {
  hid_t dcpl = H5Dget_create_plist(d);
  if (dcpl < 0) return -1;
  hsize_t chunk[2] = {1, 1};
  int chunked = H5Pget_layout(dcpl) == H5D_CHUNKED, filters = H5Pget_nfilters(dcpl);
  int rc = filters < 0 || (chunked && H5Pget_chunk(dcpl, ndims, chunk) < 0) ? -1 : 1;
  H5Pclose(dcpl);
  if (rc < 0 || filters > 0) return rc;
  if (!chunked) { /* contiguous or compact: its storage, when it has any, holds the whole extent */
    hid_t space = H5Dget_space(d);
    hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    if (space >= 0) H5Sclose(space);
    if (n < 0) return -1;
    unsigned long long stored = (unsigned long long)H5Dget_storage_size(d);
    *want = (unsigned long long)n * type_bytes;
    *bytes = stored;
    return stored == 0 || stored >= *want;
  }
  *want = (unsigned long long)(chunk[0] * (ndims == 2 ? chunk[1] : 1) * type_bytes);
  hsize_t at[2] = {0, 0};
  for (at[0] = 0; at[0] < dims[0]; at[0] += chunk[0])
    for (at[1] = 0; at[1] < (ndims == 2 ? dims[1] : 1); at[1] += chunk[ndims == 2 ? 1 : 0]) {
      unsigned mask;
      haddr_t addr;
      hsize_t size = 0;
      if (H5Dget_chunk_info_by_coord(d, at, &mask, &addr, &size) < 0) return -1;
      if (addr != HADDR_UNDEF && size != *want) {
        *bytes = (unsigned long long)size;
        return 0;
      }
    }
  return 1;
}

int h5util_chunk_index_sane(hid_t d, char *why, size_t why_len) {
  hid_t dcpl = H5Dget_create_plist(d), space = H5Dget_space(d), file = H5Iget_file_id(d);
  hsize_t dims[H5S_MAX_RANK], chunk[H5S_MAX_RANK], file_bytes = 0, entries = 0;
  int ndims = space < 0 ? -1 : H5Sget_simple_extent_ndims(space), rc = 1;
  if (dcpl < 0 || ndims < 0 || ndims > H5S_MAX_RANK || file < 0 || H5Fget_filesize(file, &file_bytes) < 0)
    rc = -1;
  else if (H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_nfilters(dcpl) != 0) {
    /* (HDF5 1.10 finds an entry by walking the index: n entries cost n^2 steps, 2.4 ms at 600) */
    unsigned long long min_bytes = 1; /* a Fletcher32 checksum's 4 where it is among the filters */
    for (int i = 0, n = H5Pget_nfilters(dcpl); i < n; i++) {
      unsigned flags = 0, config = 0;
      size_t nvalues = 0;
      if (H5Pget_filter2(dcpl, (unsigned)i, &flags, &nvalues, NULL, 0, NULL, &config) == H5Z_FILTER_FLETCHER32)
        min_bytes = 4;
    }
    if (H5Sget_simple_extent_dims(space, dims, NULL) < 0 || H5Pget_chunk(dcpl, ndims, chunk) < 0 ||
        H5Dget_num_chunks(d, space, &entries) < 0)
      rc = -1;
    double most = 1.0; /* chunks the extent holds */
    for (int k = 0; rc > 0 && k < ndims; k++) {
      if (chunk[k] == 0) rc = -1;
      else most *= (double)((dims[k] + chunk[k] - 1) / chunk[k]);
    }
    if (rc > 0 && (double)entries > most) {
      snprintf(why, why_len, "its chunk index lists %llu chunks, more than the %.0f its extent holds",
               (unsigned long long)entries, most);
      rc = 0;
    }
    for (hsize_t i = 0; rc > 0 && i < entries; i++) {
      hsize_t at[H5S_MAX_RANK], size = 0;
      unsigned mask;
      haddr_t addr;
      if (H5Dget_chunk_info(d, space, i, at, &mask, &addr, &size) < 0) {
        rc = -1;
        break;
      }
      for (int k = 0; rc > 0 && k < ndims; k++)
        if (at[k] >= dims[k] || at[k] % chunk[k] != 0) {
          snprintf(why, why_len, "chunk %llu of its index lies at %llu in dimension %d, not at a chunk's corner "
                   "inside its extent %llu", (unsigned long long)i, (unsigned long long)at[k], k,
                   (unsigned long long)dims[k]);
          rc = 0;
        }
      if (rc > 0 && addr != HADDR_UNDEF && (size < min_bytes || size > file_bytes || addr > file_bytes - size)) {
        snprintf(why, why_len, "chunk %llu of its index claims %llu bytes at byte %llu of a %llu-byte file (at "
                 "least %llu, inside the file)", (unsigned long long)i, (unsigned long long)size,
                 (unsigned long long)addr, (unsigned long long)file_bytes, min_bytes);
        rc = 0;
      }
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  if (file >= 0) H5Fclose(file);
  return rc;
}

hid_t h5util_string_type(size_t len, H5T_cset_t cset) {
  hid_t type = H5Tcopy(H5T_C_S1);
  if (type < 0) return -1;
  if (H5Tset_size(type, len ? len : 1) < 0 || H5Tset_strpad(type, H5T_STR_NULLTERM) < 0 ||
      H5Tset_cset(type, cset) < 0) {
    hid_t kept = keep_errors();
    H5Tclose(type);
    restore_errors(kept);
    return -1;
  }
  return type;
}

static int attr_write(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = space < 0 ? -1 : H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  int rc = a >= 0 && H5Awrite(a, mem_type, value) >= 0 ? 0 : -1;
  hid_t kept = rc < 0 ? keep_errors() : -1;
  if (a >= 0 && H5Aclose(a) < 0 && rc == 0) {
    rc = -1;
    kept = keep_errors();
  }
  if (space >= 0) H5Sclose(space);
  restore_errors(kept);
  return rc;
}

int h5util_attr_write_string(hid_t obj, const char *name, const char *value, H5T_cset_t cset) {
  hid_t type = h5util_string_type(strlen(value) + 1, cset);
  if (type < 0) return -1;
  int rc = attr_write(obj, name, type, type, value);
  hid_t kept = rc < 0 ? keep_errors() : -1;
  H5Tclose(type);
  restore_errors(kept);
  return rc;
}

int h5util_attr_write_i64(hid_t obj, const char *name, int64_t value) {
  return attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

int h5util_attr_write_u64(hid_t obj, const char *name, uint64_t value) {
  return attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

int h5util_attr_write_u32(hid_t obj, const char *name, uint32_t value) {
  return attr_write(obj, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value);
}

int h5util_attr_write_f64(hid_t obj, const char *name, double value) {
  return attr_write(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

int h5util_number_type_ok(hid_t type) {
  if (type < 0) return 0;
  H5T_class_t k = H5Tget_class(type);
  H5T_order_t order = H5Tget_order(type);
  size_t size = H5Tget_size(type), precision = H5Tget_precision(type);
  int offset = H5Tget_offset(type);
  if ((k != H5T_INTEGER && k != H5T_FLOAT) || (order != H5T_ORDER_LE && order != H5T_ORDER_BE) || size < 1 ||
      size > 8 || precision < 1 || offset < 0 || (size_t)offset + precision > 8 * size)
    return 0;
  if (k == H5T_INTEGER) return 1;
  size_t spos, epos, esize, mpos, msize;
  if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return 0;
  return spos < precision && esize >= 1 && esize <= 16 && epos + esize <= precision && msize >= 1 &&
         mpos + msize <= precision;
}

/* Open a scalar attribute of the type class `want` or `also` (its type in *type): the attribute,
 * or -1 when an HDF5 call fails, or H5UTIL_ABSENT when it is missing or of another kind. */
static hid_t attr_open(hid_t obj, const char *name, H5T_class_t want, H5T_class_t also, hid_t *type) {
  *type = -1;
  htri_t exists = H5Aexists(obj, name);
  if (exists <= 0) return exists < 0 ? -1 : H5UTIL_ABSENT;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return -1;
  hid_t space = H5Aget_space(a);
  *type = H5Aget_type(a);
  int failed = space < 0 || *type < 0;
  H5T_class_t k = failed ? H5T_NO_CLASS : H5Tget_class(*type);
  int ok = !failed && H5Sget_simple_extent_type(space) == H5S_SCALAR && (k == want || k == also) &&
           (k == H5T_STRING || h5util_number_type_ok(*type));
  if (ok) {
    H5Sclose(space);
    return a;
  }
  hid_t kept = failed ? keep_errors() : -1;
  if (space >= 0) H5Sclose(space);
  if (*type >= 0) H5Tclose(*type);
  *type = -1;
  H5Aclose(a);
  restore_errors(kept);
  return failed ? -1 : H5UTIL_ABSENT;
}

/* Close what a reader opened; the reader's status rc stays, with its error stack. */
static int attr_read_done(hid_t a, hid_t type, int rc) {
  hid_t kept = rc == -1 ? keep_errors() : -1;
  H5Tclose(type);
  H5Aclose(a);
  restore_errors(kept);
  return rc;
}

/* Bytes of the file holding obj (0 when unknown): no attribute's value is larger. */
static size_t file_bytes(hid_t obj) {
  hid_t f = H5Iget_file_id(obj);
  hsize_t size = 0;
  if (f < 0 || H5Fget_filesize(f, &size) < 0) size = 0;
  if (f >= 0) H5Fclose(f);
  H5Eclear2(H5E_DEFAULT);
  return (size_t)size;
}

int h5util_attr_read_string(hid_t obj, const char *name, char **out) {
  *out = NULL;
  hid_t type;
  hid_t a = attr_open(obj, name, H5T_STRING, H5T_NO_CLASS, &type);
  if (a < 0) return (int)a;
  size_t size = H5Tget_size(type), most = file_bytes(obj);
  if (H5Tis_variable_str(type) != 0 || size == 0 || size > MAX_ATTR_STRING || (most && size > most))
    return attr_read_done(a, type, H5UTIL_ABSENT);
  char *buf = xcalloc(size + 1, 1);
  if (H5Aread(a, type, buf) < 0) {
    free(buf);
    return attr_read_done(a, type, -1);
  }
  *out = buf;
  return attr_read_done(a, type, 0);
}

static int attr_read_integer(hid_t obj, const char *name, hid_t mem_type, void *out) {
  hid_t type;
  hid_t a = attr_open(obj, name, H5T_INTEGER, H5T_NO_CLASS, &type);
  if (a < 0) return (int)a;
  if (H5Tget_size(type) > 8) return attr_read_done(a, type, H5UTIL_ABSENT);
  return attr_read_done(a, type, H5Aread(a, mem_type, out) < 0 ? -1 : 0);
}

int h5util_attr_read_i64(hid_t obj, const char *name, int64_t *out) {
  return attr_read_integer(obj, name, H5T_NATIVE_INT64, out);
}

int h5util_attr_read_u64(hid_t obj, const char *name, uint64_t *out) {
  return attr_read_integer(obj, name, H5T_NATIVE_UINT64, out);
}

int h5util_attr_read_u32(hid_t obj, const char *name, uint32_t *out) {
  return attr_read_integer(obj, name, H5T_NATIVE_UINT32, out);
}

int h5util_attr_read_f64(hid_t obj, const char *name, double *out) {
  hid_t type;
  hid_t a = attr_open(obj, name, H5T_FLOAT, H5T_INTEGER, &type);
  if (a < 0) return (int)a;
  return attr_read_done(a, type, H5Aread(a, H5T_NATIVE_DOUBLE, out) < 0 ? -1 : 0);
}
