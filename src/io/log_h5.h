/* HDF5 building blocks of the metrics log (io/log.h): growing datasets ("series", one row per
 * logged step or event) and attributes. Used by rank 0 alone. Every HDF5 call is checked by the
 * file's checker (io/h5util.h, whose policy must exit: not H5UTIL_RECORD), so a failure is one line
 * "FILE: cannot WHAT HDF5PATH (HDF5: innermost reason)", with HDF5 kept quiet by the caller
 * (h5util_quiet_begin). */
#ifndef SURGE_LOG_H5_H
#define SURGE_LOG_H5_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "io/h5util.h"

/* Attributes of obj (whose HDF5 path is obj_path, for messages); put replaces an existing one. */
void h5_attr_put_string(hid_t obj, const char *obj_path, const char *name, const char *value, h5util_check_t *chk);
void h5_attr_put_int64(hid_t obj, const char *obj_path, const char *name, int64_t value, h5util_check_t *chk);
void h5_attr_put_double(hid_t obj, const char *obj_path, const char *name, double value, h5util_check_t *chk);
/* A string attribute into buf (truncated to n-1 characters); 0 when obj has no such attribute. */
int h5_attr_get_string(hid_t obj, const char *obj_path, const char *name, char *buf, size_t n, h5util_check_t *chk);
/* Replace (or create) a scalar string dataset loc/name holding text. */
void h5_text_put(hid_t loc, const char *loc_path, const char *name, const char *text, h5util_check_t *chk);

/* An extendible, chunked dataset that grows by one row per append: 1-D (rows) or 2-D (rows, cols)
 * with both dimensions extendible. Appended rows wait in memory until h5_series_write_pending
 * stores them all with one extent change and one write. Values travel in memory as mem_type (not
 * owned); a string series (variable-length mem_type) copies the strings it is given. */
typedef struct h5_series {
  hid_t d;
  hid_t mem_type;
  size_t value_size;      /* bytes of one value in memory */
  size_t stored_size;     /* bytes of one value in the file's chunks (an int32 column read as int64: 4) */
  int is_string;          /* values are char *, owned while pending */
  int ndims;              /* 1 or 2 */
  hsize_t rows, cols;     /* extent in the file; cols is 1 for a 1-D series */
  hsize_t chunk_rows, chunk_cols; /* shape of one chunk (1 column for a 1-D series) */
  unsigned char *pending; /* (npending, cols) values not yet in the file */
  hsize_t npending, cap;  /* rows pending, rows the buffer holds */
  char path[128];         /* HDF5 path, for messages */
  h5util_check_t *chk;    /* the file's checker (not owned) */
} h5_series_t;

typedef struct h5_series_kind {
  hid_t file_type, mem_type; /* stored type, in-memory type */
  const void *fill;          /* fill value in mem_type (rows or columns never written), or NULL */
} h5_series_kind_t;

/* A fixed 1-D dataset loc/name of n values (a const char * each for a string kind), with `units`
 * and `description` attributes; it must not exist yet. */
void h5_array_put(hid_t loc, const char *loc_path, const char *name, h5_series_kind_t kind, size_t n,
                  const void *values, const char *units, const char *description, h5util_check_t *chk);

/* Create loc/name (loc's path is loc_path) with `units` and `description` attributes: 1-D when
 * cols == 0, otherwise 2-D (0, cols). */
void h5_series_create(h5_series_t *s, h5util_check_t *chk, hid_t loc, const char *loc_path, const char *name,
                      h5_series_kind_t kind, hsize_t cols, const char *units, const char *description);
/* Open an existing series; a missing or malformed dataset is an input error naming it. */
void h5_series_open(h5_series_t *s, h5util_check_t *chk, hid_t loc, const char *loc_path, const char *name,
                    hid_t mem_type);
/* Rows so far: in the file and pending. */
static inline hsize_t h5_series_length(const h5_series_t *s) { return s->rows + s->npending; }
/* Append one row of cols values (one value for a 1-D series; a const char * for a string series). */
void h5_series_append(h5_series_t *s, const void *row);
/* Store the pending rows in the file. */
void h5_series_write_pending(h5_series_t *s);
/* Bytes of file space h5_series_write_pending may take: the chunks the pending rows start, and the
 * strings of a string series; without HDF5's own metadata. */
double h5_series_pending_bytes(const h5_series_t *s);
/* Keep the first `rows` rows (rows <= the length; pending rows are stored first). */
void h5_series_truncate(h5_series_t *s, hsize_t rows);
/* Grow a 2-D series to `cols` columns (new cells hold the fill value; no rows may be pending). */
void h5_series_widen(h5_series_t *s, hsize_t cols);
/* All values of a 1-D int64 series (h5_series_length of them; free the result). */
int64_t *h5_series_read_int64(h5_series_t *s);
/* Make s a dimension scale called `name`, and attach it to dimension `dim` of t. */
void h5_series_make_scale(h5_series_t *s, const char *name);
void h5_series_attach_scale(h5_series_t *t, h5_series_t *scale, unsigned dim);
/* Store the pending rows and close. */
void h5_series_close(h5_series_t *s);

#endif
