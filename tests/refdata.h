/* Reader of the PyTorch reference vectors (float64 truth; the .h5 files in tests/data/reference,
 * layout in the README.md beside them): datasets by HDF5 path, scalars, the /config attributes, and
 * the names inside a group. Every failure stops the test with a message naming file and path. */
#ifndef SURGE_TESTS_REFDATA_H
#define SURGE_TESTS_REFDATA_H

#include <stddef.h>

#define REFDATA_MAX_DIMS 8

typedef struct refdata refdata_t;

/* Open an HDF5 file read-only. */
refdata_t *refdata_open(const char *path);
/* Open one of the shipped reference files by name ("mlp_tiny.h5") in
 * $SURGE_TOP_SRCDIR/tests/data/reference (./tests/data/reference when the variable is unset). */
refdata_t *refdata_open_reference(const char *name);
void refdata_close(refdata_t *f);
/* The path the file was opened with, for messages. */
const char *refdata_path(const refdata_t *f);

/* 1 if an object (group or dataset) exists at h5path, else 0. */
int refdata_exists(const refdata_t *f, const char *h5path);

/* Read a whole numeric dataset, converted to double: returns a malloc'd array of *n values (row
 * major) and its dims (dims[0..*ndim-1]; a scalar has ndim 0, n 1). n, dims, ndim may be NULL. */
double *refdata_read(const refdata_t *f, const char *h5path, size_t *n,
                     size_t dims[REFDATA_MAX_DIMS], int *ndim);
/* The same, converted to float. */
float *refdata_read_float(const refdata_t *f, const char *h5path, size_t *n,
                          size_t dims[REFDATA_MAX_DIMS], int *ndim);
/* A dataset holding exactly one number (e.g. /forward/loss). */
double refdata_scalar(const refdata_t *f, const char *h5path);

/* Attributes of /config: whether one exists, a numeric one (integer or float) as double, a string
 * one as a malloc'd C string. */
int refdata_config_has(const refdata_t *f, const char *name);
double refdata_config_number(const refdata_t *f, const char *name);
char *refdata_config_string(const refdata_t *f, const char *name);

/* Names of the datasets directly inside group (e.g. "/params"), in increasing name order, as a
 * malloc'd array of malloc'd strings; returns their count. Free with refdata_free_names. */
int refdata_list(const refdata_t *f, const char *group, char ***names);
void refdata_free_names(char **names, int count);

/* ||a - b|| / ||b|| over n values (||a|| when b is all zeros): the per-tensor relative error the
 * README's tolerances are stated in. */
double refdata_rel_error(const float *a, const double *b, size_t n);

#endif
