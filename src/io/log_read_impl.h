/* The log reader's insides, shared by its files: log_read.c (the whole log, /run, the parts),
 * log_read_table.c (the numeric groups) and log_read_strings.c (/events and /plan's strings). */
#ifndef SURGE_IO_LOG_READ_IMPL_H
#define SURGE_IO_LOG_READ_IMPL_H

#include <hdf5.h>
#include <stddef.h>

#include "io/h5util.h"
#include "io/log_part.h"

/* The file being read and its checker. */
struct log_reader {
  const char *path;
  hid_t file;
  h5util_check_t chk;
  size_t tolerance; /* rows a column may lack behind its step scale: one flush's worth */
};

/* An HDF5 call's result through the reader's checker (a failure: the log is damaged). */
hid_t log_reader_ok(log_reader_t *r, hid_t result, const char *what, const char *h5path);
/* Whether loc holds a hard link `name` to an object of `type` (a soft or external one: damaged). */
int log_reader_has_object(log_reader_t *r, hid_t loc, const char *name, H5I_type_t type, const char *h5path);
/* Bytes of the dataset's values in the file, times the most its filters may expand them: no more
 * values than this are read (a damaged extent with no stored data behind it is refused unread). */
double log_reader_stored_bound(log_reader_t *r, hid_t d, const char *h5path);
/* The chunks a read of dims touches are whole and the chunk index sound, or the log is damaged. */
void log_reader_check_chunks(log_reader_t *r, hid_t d, const char *h5path, int ndims, const hsize_t *dims,
                             size_t type_bytes);
/* What dataset g/name is, for a message when it is not what the format says: NULL when it is a
 * numeric dataset of `ndims` dimensions. */
const char *log_reader_column_kind(log_reader_t *r, hid_t g, const char *group, const char *name, int ndims);
/* An input error: the file is not a Surge log (why). */
_Noreturn void log_reader_not_surge(const log_reader_t *r, const char *why);

#endif
