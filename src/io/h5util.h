/* Small HDF5 helpers shared by the metrics log (log.c, log_h5.c, log_read.c), the checkpoints
 * (checkpoint_*.c), the model file (model_file.c) and the profiles (burst/profile_h5.c): a scope
 * in which HDF5 prints nothing, the innermost message of HDF5's error stack, the one check of an
 * HDF5 call's result (h5util_check) and scalar attributes. The attribute helpers return a status
 * and never exit, so each caller keeps its own error policy; a failing helper leaves HDF5's error
 * stack as the failing call left it, for h5util_check or h5util_error_text. */
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

/* ---- checking HDF5 calls ----
 * Every HDF5 call's result goes through h5util_check with the checker of its file. A failure is
 * one line naming the file, what was being done, the HDF5 path, HDF5's reason and a hint:
 *   "FILE: [LEAD]cannot WHAT H5PATH (HDF5: reason)[ (hint: HINT)]"
 * and then the checker's policy decides: exit with an input error (2: the file is damaged or not
 * what it should be), exit with a runtime error (1: writing failed), or record the first failure
 * and carry on, for callers that must first agree with other ranks (MPI) or clean up. */
typedef enum h5util_policy {
  H5UTIL_INPUT_ERROR,   /* exit 2 */
  H5UTIL_RUNTIME_ERROR, /* exit 1 */
  H5UTIL_RUNTIME_ABANDON, /* exit 1 at once, HDF5 left as it is (surge_abandon): a file whose write
                           * failed cannot be closed safely */
  H5UTIL_RECORD,        /* keep the first message in msg, set failed, return */
} h5util_policy_t;

typedef struct h5util_check {
  const char *file;       /* the file's name, first in every message (not owned) */
  h5util_policy_t policy;
  const char *lead;       /* NULL, or words before "cannot", e.g. "damaged Surge log: " (not owned) */
  const char *hint;       /* NULL, or what to do about it (not owned) */
  int failed;             /* H5UTIL_RECORD: something failed; msg holds the first failure */
  char msg[1024];
} h5util_check_t;

/* A checker of file (lead and hint NULL). */
h5util_check_t h5util_checker(const char *file, h5util_policy_t policy);
/* A negative result (hid_t, herr_t, htri_t, int) of an HDF5 call that did `what` to h5path ("" for
 * the file itself) fails as the checker says; any other result is returned. */
hid_t h5util_check(h5util_check_t *c, hid_t result, const char *what, const char *h5path);
/* The failure h5util_check reports, for a failure seen another way (a helper's -1). Returns only
 * under H5UTIL_RECORD. */
void h5util_fail(h5util_check_t *c, const char *what, const char *h5path);

/* Whether loc/name exists and is an object of `type` (H5I_GROUP, H5I_DATASET): 1 or 0 (also for a
 * dangling link), H5UTIL_NOT_HARD when a component of name is a soft or external link (not
 * followed: h5util_hard_path), or -1 when an HDF5 call fails. */
int h5util_exists(hid_t loc, const char *name, H5I_type_t type);

/* Whether every component of name (relative to loc, or absolute) is a hard link, the only kind
 * Surge writes: 1; 0 when one is missing; H5UTIL_NOT_HARD when one is a soft or external link,
 * which is not followed (an external link may name another file, or a fifo that would block its
 * open); -1 on an HDF5 error. */
enum { H5UTIL_NOT_HARD = -2 };
int h5util_hard_path(hid_t loc, const char *name);
/* What a file with such a link is, for messages. */
#define H5UTIL_NOT_HARD_TEXT "a soft or external link, which Surge never writes (not followed)"

/* Whether every stored chunk that a read of the first dims (ndims 1 or 2, from 0) of dataset d
 * touches is as large as a chunk of type_bytes values (the file's type), and a contiguous or compact
 * dataset's storage, when it has any, as large as its whole extent: 1; 0 with the stored size in
 * *bytes and the size needed in *want; -1 when an HDF5 call fails. Filtered datasets answer 1
 * (filters check their own chunks). HDF5 1.10 trusts the sizes its metadata record and copies a
 * whole chunk, or the whole extent, out of a smaller buffer (a heap overflow): call it before
 * reading a file that is not trusted. */
int h5util_chunks_whole(hid_t d, int ndims, const hsize_t *dims, size_t type_bytes, unsigned long long *bytes,
                        unsigned long long *want);

/* Whether the chunk index of dataset d describes chunks its extent can have: at most one entry per
 * chunk of the extent, each at a chunk's corner inside it, with its stored bytes inside the file and
 * not empty (at least 4 under a Fletcher32 checksum, which HDF5 subtracts from a chunk's size before
 * it sums the rest): 1 (also for a dataset that is not chunked); 0 with what is wrong in why; -1 when
 * an HDF5 call fails. HDF5 1.10 reads a damaged index's entries as they are (a fuzzed checkpoint
 * listed 10 chunks for a dataset of one, at offsets outside it, and Fletcher32 then summed far past
 * its buffer): call it before reading a filtered dataset of a file that is not trusted. Unfiltered
 * datasets answer 1: HDF5 reads their chunks by coordinates, and h5util_chunks_whole checks those. */
int h5util_chunk_index_sane(hid_t d, char *why, size_t why_len);

/* Whether a file's datatype is a number HDF5 can convert without trusting its layout: an integer or
 * a floating-point type of 1 to 8 bytes, little- or big-endian, whose bits (offset + precision) lie
 * inside its size and, for a float, whose sign, exponent (at most 16 bits) and mantissa lie inside
 * those bits: 1, else 0. HDF5 1.10 converts from the layout a file's metadata records and copies
 * bits past its own fixed-size locals when it is crafted (a stack overflow in H5T__bit_get_d): call
 * it on the type of a dataset or attribute of a file that is not trusted before reading it. (HDF5
 * 1.10.8's own decoder already refuses a float's fields outside its bits, such an object does not
 * open; the float checks stay for other versions, and cost nothing.) */
int h5util_number_type_ok(hid_t type);

/* A fixed-length, NUL-terminated string type of len bytes (at least 1) in character set cset;
 * -1 on failure. Close with H5Tclose. */
hid_t h5util_string_type(size_t len, H5T_cset_t cset);

/* Create the scalar attribute `name` of obj (it must not exist yet): a fixed-length string in
 * character set cset, or a little-endian integer of the width named. 0, or -1 on failure. */
int h5util_attr_write_string(hid_t obj, const char *name, const char *value, H5T_cset_t cset);
int h5util_attr_write_i64(hid_t obj, const char *name, int64_t value);
int h5util_attr_write_u64(hid_t obj, const char *name, uint64_t value);
int h5util_attr_write_u32(hid_t obj, const char *name, uint32_t value);
int h5util_attr_write_f64(hid_t obj, const char *name, double value);

/* Read the scalar attribute `name` of obj: 0; H5UTIL_ABSENT when obj has no such attribute, or
 * one that is not a scalar of the kind asked for (strings: fixed-length, at most 16 MiB and at most
 * the file's size, checked before allocating; integers:
 * at most 8 bytes, converted by HDF5; f64: a floating-point or integer number, converted); -1 when
 * an HDF5 call fails. String readers: *out is NUL-terminated and malloc'd, NULL on failure. */
#define H5UTIL_ABSENT (-2)
int h5util_attr_read_string(hid_t obj, const char *name, char **out);
int h5util_attr_read_i64(hid_t obj, const char *name, int64_t *out);
int h5util_attr_read_u64(hid_t obj, const char *name, uint64_t *out);
int h5util_attr_read_u32(hid_t obj, const char *name, uint32_t *out);
int h5util_attr_read_f64(hid_t obj, const char *name, double *out);

#endif
