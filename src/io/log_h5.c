#include "io/log_h5.h"

#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/log_format.h"

enum { SERIES_CHUNK_CELLS = 512 }; /* values per chunk: 4 KiB of doubles */

/* "obj_path@name" names an attribute in messages. */
static const char *attr_where(char *buf, size_t n, const char *obj_path, const char *name) {
  snprintf(buf, n, "%s@%s", obj_path, name);
  return buf;
}

static hid_t string_type(size_t len, h5util_check_t *chk, const char *where) {
  return h5util_check(chk, h5util_string_type(len, H5T_CSET_UTF8), "make a string type for", where);
}

/* The log rewrites attributes when it resumes: an existing one is deleted first. */
static void attr_clear(hid_t obj, const char *name, const char *where, h5util_check_t *chk) {
  if (h5util_check(chk, H5Aexists(obj, name), "look up", where) > 0)
    h5util_check(chk, H5Adelete(obj, name), "replace", where);
}

void h5_attr_put_string(hid_t obj, const char *obj_path, const char *name, const char *value, h5util_check_t *chk) {
  char where[256];
  attr_where(where, sizeof where, obj_path, name);
  attr_clear(obj, name, where, chk);
  if (h5util_attr_write_string(obj, name, value, H5T_CSET_UTF8) < 0) h5util_fail(chk, "write", where);
}

void h5_attr_put_int64(hid_t obj, const char *obj_path, const char *name, int64_t value, h5util_check_t *chk) {
  char where[256];
  attr_where(where, sizeof where, obj_path, name);
  attr_clear(obj, name, where, chk);
  if (h5util_attr_write_i64(obj, name, value) < 0) h5util_fail(chk, "write", where);
}

void h5_attr_put_double(hid_t obj, const char *obj_path, const char *name, double value, h5util_check_t *chk) {
  char where[256];
  attr_where(where, sizeof where, obj_path, name);
  attr_clear(obj, name, where, chk);
  if (h5util_attr_write_f64(obj, name, value) < 0) h5util_fail(chk, "write", where);
}

int h5_attr_get_string(hid_t obj, const char *obj_path, const char *name, char *buf, size_t n, h5util_check_t *chk) {
  char where[256], *value;
  attr_where(where, sizeof where, obj_path, name);
  if (h5util_check(chk, H5Aexists(obj, name), "look up", where) == 0) return 0;
  int rc = h5util_attr_read_string(obj, name, &value);
  if (rc == H5UTIL_ABSENT) surge_input_error("%s: %s is not a fixed-length string attribute", chk->file, where);
  if (rc != 0) h5util_fail(chk, "read", where);
  snprintf(buf, n, "%s", value);
  free(value);
  return 1;
}

void h5_text_put(hid_t loc, const char *loc_path, const char *name, const char *text, h5util_check_t *chk) {
  char where[256];
  snprintf(where, sizeof where, "%s/%s", loc_path, name);
  if (h5util_check(chk, H5Lexists(loc, name, H5P_DEFAULT), "look up", where) > 0)
    h5util_check(chk, H5Ldelete(loc, name, H5P_DEFAULT), "replace", where);
  hid_t type = string_type(strlen(text) + 1, chk, where);
  hid_t space = h5util_check(chk, H5Screate(H5S_SCALAR), "make a dataspace for", where);
  hid_t d = h5util_check(chk, H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create", where);
  h5util_check(chk, H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), "write", where);
  h5util_check(chk, H5Dclose(d), "close", where);
  h5util_check(chk, H5Sclose(space), "close the dataspace of", where);
  h5util_check(chk, H5Tclose(type), "close the string type of", where);
}

void h5_array_put(hid_t loc, const char *loc_path, const char *name, h5_series_kind_t kind, size_t n,
                  const void *values, const char *units, const char *description, h5util_check_t *chk) {
  char where[256];
  snprintf(where, sizeof where, "%s/%s", loc_path, name);
  hsize_t dims[1] = {n};
  hid_t space = h5util_check(chk, H5Screate_simple(1, dims, NULL), "make the dataspace of", where);
  hid_t d = h5util_check(chk, H5Dcreate2(loc, name, kind.file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create", where);
  if (n) h5util_check(chk, H5Dwrite(d, kind.mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), "write", where);
  h5_attr_put_string(d, where, LOG_UNITS, units, chk);
  h5_attr_put_string(d, where, LOG_DESCRIPTION, description, chk);
  h5util_check(chk, H5Dclose(d), "close", where);
  h5util_check(chk, H5Sclose(space), "close the dataspace of", where);
}

static void series_init(h5_series_t *s, h5util_check_t *chk, const char *loc_path, const char *name, hid_t mem_type) {
  *s = (h5_series_t){.d = -1, .mem_type = mem_type, .chk = chk};
  snprintf(s->path, sizeof s->path, "%s/%s", loc_path, name);
  s->is_string = h5util_check(chk, H5Tis_variable_str(mem_type), "inspect the type of", s->path) > 0;
  s->value_size = H5Tget_size(mem_type);
  if (s->value_size == 0) h5util_fail(chk, "get the size of the type of", s->path);
  s->stored_size = s->is_string ? 16 : s->value_size; /* (a string: its global heap reference) */
}

void h5_series_create(h5_series_t *s, h5util_check_t *chk, hid_t loc, const char *loc_path, const char *name,
                      h5_series_kind_t kind, hsize_t cols, const char *units, const char *description) {
  series_init(s, chk, loc_path, name, kind.mem_type);
  if (!s->is_string) s->stored_size = H5Tget_size(kind.file_type);
  s->ndims = cols ? 2 : 1;
  s->cols = cols ? cols : 1;
  // extent (0) or (0, cols); chunks of about SERIES_CHUNK_CELLS values, whole rows
  hsize_t dims[2] = {0, cols}, maxdims[2] = {H5S_UNLIMITED, H5S_UNLIMITED};
  hsize_t chunk_rows = SERIES_CHUNK_CELLS / s->cols < 16 ? 16 : SERIES_CHUNK_CELLS / s->cols;
  hsize_t chunk[2] = {chunk_rows, s->cols};
  s->chunk_rows = chunk_rows;
  s->chunk_cols = s->cols;
  hid_t space = h5util_check(chk, H5Screate_simple(s->ndims, dims, maxdims), "make the dataspace of", s->path);
  hid_t dcpl = h5util_check(chk, H5Pcreate(H5P_DATASET_CREATE), "make the creation properties of", s->path);
  h5util_check(chk, H5Pset_chunk(dcpl, s->ndims, chunk), "set the chunks of", s->path);
  if (kind.fill) h5util_check(chk, H5Pset_fill_value(dcpl, kind.mem_type, kind.fill), "set the fill value of", s->path);
  s->d = h5util_check(chk, H5Dcreate2(loc, name, kind.file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), "create", s->path);
  h5util_check(chk, H5Pclose(dcpl), "close the creation properties of", s->path);
  h5util_check(chk, H5Sclose(space), "close the dataspace of", s->path);
  h5_attr_put_string(s->d, s->path, LOG_UNITS, units, chk);
  h5_attr_put_string(s->d, s->path, LOG_DESCRIPTION, description, chk);
}

void h5_series_open(h5_series_t *s, h5util_check_t *chk, hid_t loc, const char *loc_path, const char *name,
                    hid_t mem_type) {
  series_init(s, chk, loc_path, name, mem_type);
  if (h5util_check(chk, H5Lexists(loc, name, H5P_DEFAULT), "look up", s->path) == 0)
    surge_input_error("%s: %s is missing (hint: a log of another Surge version? move it away to start a new log)",
                      chk->file, s->path);
  s->d = h5util_check(chk, H5Dopen2(loc, name, H5P_DEFAULT), "open", s->path);
  hid_t space = h5util_check(chk, H5Dget_space(s->d), "get the dataspace of", s->path);
  int nd = h5util_check(chk, H5Sget_simple_extent_ndims(space), "get the rank of", s->path);
  hsize_t dims[2] = {0, 1}, maxdims[2] = {0, 0};
  if (nd == 1 || nd == 2) h5util_check(chk, H5Sget_simple_extent_dims(space, dims, maxdims), "get the extent of", s->path);
  h5util_check(chk, H5Sclose(space), "close the dataspace of", s->path);
  if ((nd != 1 && nd != 2) || maxdims[0] != H5S_UNLIMITED || (nd == 2 && maxdims[1] != H5S_UNLIMITED))
    surge_input_error("%s: %s is not an extendible %s dataset of a Surge log", chk->file, s->path, nd == 2 ? "2-D" : "1-D");
  hid_t ft = h5util_check(chk, H5Dget_type(s->d), "get the type of", s->path);
  int sane = H5Tget_class(mem_type) == H5T_STRING || h5util_number_type_ok(ft);
  if (sane && !s->is_string) s->stored_size = H5Tget_size(ft);
  h5util_check(chk, H5Tclose(ft), "close the type of", s->path);
  if (!sane) /* HDF5 would convert from the layout it records, past its own locals */
    surge_input_error("%s: damaged Surge log: %s holds numbers of a type whose recorded layout is impossible (hint: "
                      "move it away to start a new log)", chk->file, s->path);
  s->ndims = nd;
  s->rows = dims[0];
  s->cols = nd == 2 ? dims[1] : 1;
  hid_t dcpl = h5util_check(chk, H5Dget_create_plist(s->d), "get the creation properties of", s->path);
  hsize_t chunk[2] = {0, 0};
  if (H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_chunk(dcpl, 2, chunk) != nd || chunk[0] == 0)
    surge_input_error("%s: %s is not a chunked dataset of a Surge log", chk->file, s->path);
  h5util_check(chk, H5Pclose(dcpl), "close the creation properties of", s->path);
  s->chunk_rows = chunk[0];
  s->chunk_cols = nd == 2 && chunk[1] ? chunk[1] : 1;
  // a 1-D series holds every row it claims (the writer allocates chunks as rows come): a resumed run
  // reads the step scale, so an extent with nothing stored behind it is refused before allocating
  double claimed = (double)s->rows * (double)s->stored_size, slack = (double)s->chunk_rows * (double)s->stored_size;
  if (nd == 1 && claimed > (double)H5Dget_storage_size(s->d) + slack)
    surge_input_error("%s: damaged Surge log: %s claims %llu rows, but the file stores %llu bytes of them (hint: move "
                      "it away to start a new log)", chk->file, s->path, (unsigned long long)s->rows,
                      (unsigned long long)H5Dget_storage_size(s->d));
}

static void series_set_extent(h5_series_t *s, hsize_t rows, hsize_t cols, const char *what) {
  hsize_t dims[2] = {rows, cols};
  h5util_check(s->chk, H5Dset_extent(s->d, dims), what, s->path);
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
  hid_t file_space = h5util_check(s->chk, H5Dget_space(s->d), "get the dataspace of", s->path);
  h5util_check(s->chk, H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL), "select rows of", s->path);
  hid_t mem_space = h5util_check(s->chk, H5Screate_simple(s->ndims, count, NULL), "make a row dataspace for", s->path);
  h5util_check(s->chk, H5Dwrite(s->d, s->mem_type, mem_space, file_space, H5P_DEFAULT, s->pending), "append rows to", s->path);
  h5util_check(s->chk, H5Sclose(mem_space), "close a row dataspace of", s->path);
  h5util_check(s->chk, H5Sclose(file_space), "close the dataspace of", s->path);
  free_pending_strings(s);
  s->npending = 0;
}

double h5_series_pending_bytes(const h5_series_t *s) {
  if (!s->npending) return 0;
  double chunks = (double)((s->rows + s->npending + s->chunk_rows - 1) / s->chunk_rows) -
                  (double)(s->rows / s->chunk_rows); // a partial last chunk may not be allocated yet
  double across = (double)((s->cols + s->chunk_cols - 1) / s->chunk_cols); // chunks side by side in a row
  double bytes = chunks * across * (double)(s->chunk_rows * s->chunk_cols) * (double)s->stored_size;
  for (hsize_t i = 0; s->is_string && i < s->npending; i++) {
    char *str;
    memcpy(&str, s->pending + i * s->value_size, sizeof str);
    bytes += (double)strlen(str) + 32; // a global heap object and its header
  }
  return bytes;
}

void h5_series_truncate(h5_series_t *s, hsize_t rows) {
  h5_series_write_pending(s);
  if (rows < s->rows) series_set_extent(s, rows, s->cols, "truncate");
}

void h5_series_widen(h5_series_t *s, hsize_t cols) {
  if (s->npending) surge_runtime_error("%s: %s: widened with rows pending", s->chk->file, s->path);
  if (s->ndims == 2 && cols > s->cols) series_set_extent(s, s->rows, cols, "widen");
}

int64_t *h5_series_read_int64(h5_series_t *s) {
  h5_series_write_pending(s);
  unsigned long long bytes, want;
  int whole = h5util_chunks_whole(s->d, 1, &s->rows, s->stored_size, &bytes, &want);
  if (whole < 0) h5util_fail(s->chk, "look up the chunks of", s->path);
  if (whole == 0)
    surge_input_error("%s: damaged Surge log: %s has a chunk of %llu bytes where its chunks hold %llu (hint: move it "
                      "away to start a new log)", s->chk->file, s->path, bytes, want);
  char why[256];
  const int sane = h5util_chunk_index_sane(s->d, why, sizeof why); /* filtered chunks, which a crafted log may carry */
  if (sane < 0) h5util_fail(s->chk, "look up the chunk index of", s->path);
  if (sane == 0)
    surge_input_error("%s: damaged Surge log: %s: %s (hint: move it away to start a new log)", s->chk->file, s->path,
                      why);
  int64_t *v = xcalloc(s->rows ? s->rows : 1, sizeof *v);
  if (s->rows) h5util_check(s->chk, H5Dread(s->d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), "read", s->path);
  return v;
}

void h5_series_make_scale(h5_series_t *s, const char *name) {
  h5util_check(s->chk, H5DSset_scale(s->d, name), "make a dimension scale of", s->path);
}

void h5_series_attach_scale(h5_series_t *t, h5_series_t *scale, unsigned dim) {
  char what[192];
  snprintf(what, sizeof what, "attach dimension scale %s to", scale->path);
  h5util_check(t->chk, H5DSattach_scale(t->d, scale->d, dim), what, t->path);
}

void h5_series_close(h5_series_t *s) {
  h5_series_write_pending(s);
  h5util_check(s->chk, H5Dclose(s->d), "close", s->path);
  free(s->pending);
  s->pending = NULL;
  s->cap = 0;
  s->d = -1;
}
