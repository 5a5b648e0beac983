/* Small HDF5 helpers shared by the metrics log (log_h5.c), the checkpoints (checkpoint_*.c) and
 * the model file (model_file.c): a scope in which HDF5 prints nothing, the innermost message of
 * HDF5's error stack, and scalar attributes. The helpers return a status and never exit, so each
 * caller keeps its own error policy (fail fast, or record the failure for all ranks to agree on).
 * A failing helper leaves HDF5's error stack as the failing call left it, for h5util_error_text. */
#ifndef SURGE_H5UTIL_H
#define SURGE_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

/* HDF5 prints its whole error stack on every failed call unless told not to: between begin and
 * end it stays quiet (the previous handler is restored by end). */
typedef struct h5util_quiet {
  H5E_auto2_t func;
  void *data;
} h5util_quiet_t;
h5util_quiet_t h5util_quiet_begin(void);
void h5util_quiet_end(h5util_quiet_t q);

/* The most specific message on HDF5's error stack (the innermost one, plus an MPI or system error
 * text when one was recorded above it), e.g. "data error detected by Fletcher32 checksum", or
 * `none` when the stack is empty. The stack is cleared. */
void h5util_error_text(char *out, size_t out_len, const char *none);

/* A fixed-length, NUL-terminated string type of len bytes (at least 1) in character set cset;
 * -1 on failure. Close with H5Tclose. */
hid_t h5util_string_type(size_t len, H5T_cset_t cset);

/* Create the scalar attribute `name` of obj (it must not exist yet): a fixed-length string in
 * character set cset, or a little-endian integer of the width named. 0, or -1 on failure. */
int h5util_attr_write_string(hid_t obj, const char *name, const char *value, H5T_cset_t cset);
int h5util_attr_write_i64(hid_t obj, const char *name, int64_t value);
int h5util_attr_write_u64(hid_t obj, const char *name, uint64_t value);
int h5util_attr_write_u32(hid_t obj, const char *name, uint32_t value);

/* Read the scalar attribute `name` of obj: 0; H5UTIL_ABSENT when obj has no such attribute, or
 * one that is not a scalar of the kind asked for (strings: fixed-length, at most 16 MiB; integers:
 * at most 8 bytes, converted by HDF5); -1 when an HDF5 call fails. String readers: *out is
 * NUL-terminated and malloc'd, NULL on failure. */
#define H5UTIL_ABSENT (-2)
int h5util_attr_read_string(hid_t obj, const char *name, char **out);
int h5util_attr_read_i64(hid_t obj, const char *name, int64_t *out);
int h5util_attr_read_u64(hid_t obj, const char *name, uint64_t *out);
int h5util_attr_read_u32(hid_t obj, const char *name, uint32_t *out);

#endif
