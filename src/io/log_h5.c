#include "io/log_h5.h"

#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

enum {
  SERIES_CHUNK_CELLS = 512, /* values per chunk: 4 KiB of doubles */
  REASON_MAX = 256          /* characters of HDF5's reason kept for a message */
};

_Noreturn void h5_fail(const char *file, const char *what, const char *h5path) {
  char reason[REASON_MAX];
  h5util_error_text(reason, sizeof reason, "no detail");
  surge_runtime_error("%s: cannot %s%s%s (HDF5: %s)", file, what, h5path[0] ? " " : "", h5path, reason);
}

hid_t h5_check(hid_t result, const char *file, const char *what, const char *h5path) {
  if (result < 0) h5_fail(file, what, h5path);
  return result;
}

/* "obj_path@name" names an attribute in messages. */
static const char *attr_where(char *buf, size_t n, const char *obj_path, const char *name) {
  snprintf(buf, n, "%s@%s", obj_path, name);
  return buf;
}

static hid_t string_type(size_t len, const char *file, const char *where) {
  return h5_check(h5util_string_type(len, H5T_CSET_UTF8), file, "make a string type for", where);
}

/* The log rewrites attributes when it resumes: an existing one is deleted first. */
static void attr_clear(hid_t obj, const char *name, const char *where, const char *file) {
  if (h5_check(H5Aexists(obj, name), file, "look up", where) > 0)
    h5_check(H5Adelete(obj, name), file, "replace", where);
}

void h5_attr_put_string(hid_t obj, const char *obj_path, const char *name, const char *value, const char *file) {
  char where[256];
  attr_where(where, sizeof where, obj_path, name);
  attr_clear(obj, name, where, file);
  if (h5util_attr_write_string(obj, name, value, H5T_CSET_UTF8) < 0) h5_fail(file, "write", where);
}

void h5_attr_put_int64(hid_t obj, const char *obj_path, const char *name, int64_t value, const char *file) {
  char where[256];
  attr_where(where, sizeof where, obj_path, name);
  attr_clear(obj, name, where, file);
  if (h5util_attr_write_i64(obj, name, value) < 0) h5_fail(file, "write", where);
}

void h5_attr_put_double(hid_t obj, const char *obj_path, const char *name, double value, const char *file) {
  char where[256];
  attr_where(where, sizeof where, obj_path, name);
  attr_clear(obj, name, where, file);
  hid_t space = h5_check(H5Screate(H5S_SCALAR), file, "make a dataspace for", where);
  hid_t a = h5_check(H5Acreate2(obj, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT), file, "create", where);
  h5_check(H5Awrite(a, H5T_NATIVE_DOUBLE, &value), file, "write", where);
  h5_check(H5Aclose(a), file, "close", where);
  h5_check(H5Sclose(space), file, "close the dataspace of", where);
}

int h5_attr_get_string(hid_t obj, const char *obj_path, const char *name, char *buf, size_t n, const char *file) {
  char where[256], *value;
  attr_where(where, sizeof where, obj_path, name);
  if (h5_check(H5Aexists(obj, name), file, "look up", where) == 0) return 0;
  int rc = h5util_attr_read_string(obj, name, &value);
  if (rc == H5UTIL_ABSENT) surge_input_error("%s: %s is not a fixed-length string attribute", file, where);
  if (rc != 0) h5_fail(file, "read", where);
  snprintf(buf, n, "%s", value);
  free(value);
  return 1;
}

void h5_text_put(hid_t loc, const char *loc_path, const char *name, const char *text, const char *file) {
  char where[256];
  snprintf(where, sizeof where, "%s/%s", loc_path, name);
  if (h5_check(H5Lexists(loc, name, H5P_DEFAULT), file, "look up", where) > 0)
    h5_check(H5Ldelete(loc, name, H5P_DEFAULT), file, "replace", where);
  hid_t type = string_type(strlen(text) + 1, file, where);
  hid_t space = h5_check(H5Screate(H5S_SCALAR), file, "make a dataspace for", where);
  hid_t d = h5_check(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), file, "create",
                     where);
  h5_check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), file, "write", where);
  h5_check(H5Dclose(d), file, "close", where);
  h5_check(H5Sclose(space), file, "close the dataspace of", where);
  h5_check(H5Tclose(type), file, "close the string type of", where);
}

void h5_array_put(hid_t loc, const char *loc_path, const char *name, h5_series_kind_t kind, size_t n,
                  const void *values, const char *units, const char *description, const char *file) {
  char where[256];
  snprintf(where, sizeof where, "%s/%s", loc_path, name);
  hsize_t dims[1] = {n};
  hid_t space = h5_check(H5Screate_simple(1, dims, NULL), file, "make the dataspace of", where);
  hid_t d = h5_check(H5Dcreate2(loc, name, kind.file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), file,
                     "create", where);
  if (n) h5_check(H5Dwrite(d, kind.mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), file, "write", where);
  h5_attr_put_string(d, where, "units", units, file);
  h5_attr_put_string(d, where, "description", description, file);
  h5_check(H5Dclose(d), file, "close", where);
  h5_check(H5Sclose(space), file, "close the dataspace of", where);
}

static void series_init(h5_series_t *s, const char *file, const char *loc_path, const char *name, hid_t mem_type) {
  *s = (h5_series_t){.d = -1, .mem_type = mem_type, .file = file};
  snprintf(s->path, sizeof s->path, "%s/%s", loc_path, name);
  s->is_string = h5_check(H5Tis_variable_str(mem_type), file, "inspect the type of", s->path) > 0;
  s->value_size = H5Tget_size(mem_type);
  if (s->value_size == 0) h5_fail(file, "get the size of the type of", s->path);
}

void h5_series_create(h5_series_t *s, const char *file, hid_t loc, const char *loc_path, const char *name,
                      h5_series_kind_t kind, hsize_t cols, const char *units, const char *description) {
  series_init(s, file, loc_path, name, kind.mem_type);
  s->ndims = cols ? 2 : 1;
  s->cols = cols ? cols : 1;
  // extent (0) or (0, cols); chunks of about SERIES_CHUNK_CELLS values, whole rows
  hsize_t dims[2] = {0, cols}, maxdims[2] = {H5S_UNLIMITED, H5S_UNLIMITED};
  hsize_t chunk_rows = SERIES_CHUNK_CELLS / s->cols < 16 ? 16 : SERIES_CHUNK_CELLS / s->cols;
  hsize_t chunk[2] = {chunk_rows, s->cols};
  hid_t space = h5_check(H5Screate_simple(s->ndims, dims, maxdims), file, "make the dataspace of", s->path);
  hid_t dcpl = h5_check(H5Pcreate(H5P_DATASET_CREATE), file, "make the creation properties of", s->path);
  h5_check(H5Pset_chunk(dcpl, s->ndims, chunk), file, "set the chunks of", s->path);
  if (kind.fill) h5_check(H5Pset_fill_value(dcpl, kind.mem_type, kind.fill), file, "set the fill value of", s->path);
  s->d = h5_check(H5Dcreate2(loc, name, kind.file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), file, "create",
                  s->path);
  h5_check(H5Pclose(dcpl), file, "close the creation properties of", s->path);
  h5_check(H5Sclose(space), file, "close the dataspace of", s->path);
  h5_attr_put_string(s->d, s->path, "units", units, file);
  h5_attr_put_string(s->d, s->path, "description", description, file);
}

void h5_series_open(h5_series_t *s, const char *file, hid_t loc, const char *loc_path, const char *name,
                    hid_t mem_type) {
  series_init(s, file, loc_path, name, mem_type);
  if (h5_check(H5Lexists(loc, name, H5P_DEFAULT), file, "look up", s->path) == 0)
    surge_input_error("%s: %s is missing (hint: a log of another Surge version? move it away to start a new log)",
                      file, s->path);
  s->d = h5_check(H5Dopen2(loc, name, H5P_DEFAULT), file, "open", s->path);
  hid_t space = h5_check(H5Dget_space(s->d), file, "get the dataspace of", s->path);
  int nd = h5_check(H5Sget_simple_extent_ndims(space), file, "get the rank of", s->path);
  hsize_t dims[2] = {0, 1}, maxdims[2] = {0, 0};
  if (nd == 1 || nd == 2) h5_check(H5Sget_simple_extent_dims(space, dims, maxdims), file, "get the extent of", s->path);
  h5_check(H5Sclose(space), file, "close the dataspace of", s->path);
  if ((nd != 1 && nd != 2) || maxdims[0] != H5S_UNLIMITED || (nd == 2 && maxdims[1] != H5S_UNLIMITED))
    surge_input_error("%s: %s is not an extendible %s dataset of a Surge log", file, s->path, nd == 2 ? "2-D" : "1-D");
  s->ndims = nd;
  s->rows = dims[0];
  s->cols = nd == 2 ? dims[1] : 1;
}

static void series_set_extent(h5_series_t *s, hsize_t rows, hsize_t cols, const char *what) {
  hsize_t dims[2] = {rows, cols};
  h5_check(H5Dset_extent(s->d, dims), s->file, what, s->path);
  s->rows = rows;
  s->cols = cols;
}

void h5_series_append(h5_series_t *s, const void *row) {
  if (s->npending == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->pending = xrealloc(s->pending, surge_mul_size(surge_mul_size(s->cap, s->cols, s->path), s->value_size, s->path));
  }
  unsigned char *dst = s->pending + s->npending * s->cols * s->value_size;
  if (s->is_string) {
    char *copy = xstrdup(*(const char *const *)row);
    memcpy(dst, &copy, sizeof copy);
  } else {
    memcpy(dst, row, s->cols * s->value_size);
  }
  s->npending++;
}

static void free_pending_strings(h5_series_t *s) {
  for (hsize_t i = 0; s->is_string && i < s->npending; i++) {
    char *str;
    memcpy(&str, s->pending + i * s->value_size, sizeof str);
    free(str);
  }
}

void h5_series_write_pending(h5_series_t *s) {
  if (s->npending == 0) return;
  // the pending rows go to offset (rows, 0), count (npending, cols)
  hsize_t start[2] = {s->rows, 0}, count[2] = {s->npending, s->cols};
  series_set_extent(s, s->rows + s->npending, s->cols, "extend");
  hid_t file_space = h5_check(H5Dget_space(s->d), s->file, "get the dataspace of", s->path);
  h5_check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL), s->file, "select rows of",
           s->path);
  hid_t mem_space = h5_check(H5Screate_simple(s->ndims, count, NULL), s->file, "make a row dataspace for", s->path);
  h5_check(H5Dwrite(s->d, s->mem_type, mem_space, file_space, H5P_DEFAULT, s->pending), s->file, "append rows to",
           s->path);
  h5_check(H5Sclose(mem_space), s->file, "close a row dataspace of", s->path);
  h5_check(H5Sclose(file_space), s->file, "close the dataspace of", s->path);
  free_pending_strings(s);
  s->npending = 0;
}

void h5_series_truncate(h5_series_t *s, hsize_t rows) {
  h5_series_write_pending(s);
  if (rows < s->rows) series_set_extent(s, rows, s->cols, "truncate");
}

void h5_series_widen(h5_series_t *s, hsize_t cols) {
  if (s->npending) surge_runtime_error("%s: %s: widened with rows pending", s->file, s->path);
  if (s->ndims == 2 && cols > s->cols) series_set_extent(s, s->rows, cols, "widen");
}

int64_t *h5_series_read_int64(h5_series_t *s) {
  h5_series_write_pending(s);
  int64_t *v = xcalloc(s->rows ? s->rows : 1, sizeof *v);
  if (s->rows) h5_check(H5Dread(s->d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), s->file, "read", s->path);
  return v;
}

void h5_series_make_scale(h5_series_t *s, const char *name) {
  h5_check(H5DSset_scale(s->d, name), s->file, "make a dimension scale of", s->path);
}

void h5_series_attach_scale(h5_series_t *t, h5_series_t *scale, unsigned dim) {
  char what[192];
  snprintf(what, sizeof what, "attach dimension scale %s to", scale->path);
  h5_check(H5DSattach_scale(t->d, scale->d, dim), t->file, what, t->path);
}

void h5_series_close(h5_series_t *s) {
  h5_series_write_pending(s);
  h5_check(H5Dclose(s->d), s->file, "close", s->path);
  free(s->pending);
  s->pending = NULL;
  s->cap = 0;
  s->d = -1;
}
