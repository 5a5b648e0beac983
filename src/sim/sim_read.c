#include "sim/sim_read.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/exact.h"
#include "io/h5util.h"
#include "io/log_read.h"

/* name: a dataset of g ("/sim/burst/ranks"), or with is_attr an attribute ("/sim/pipeline@pp") */
static _Noreturn void refuse_at(const sim_group_t *g, const char *name, int is_attr, const char *what) {
  surge_input_error("%s: %s%s%s %s (a damaged or foreign surge-sim file)", g->path, g->name, is_attr ? "@" : "/", name,
                    what);
}

static _Noreturn void refuse(const sim_group_t *g, const char *name, const char *what) { refuse_at(g, name, 0, what); }

static int in_range(double v, sim_range_t r) { return v >= r.lo && v <= r.hi && (!r.whole || v == floor(v)); }

static void out_of_range(const sim_group_t *g, const char *name, double v, size_t row, int is_attr, sim_range_t r) {
  char what[256], at[64] = "", x[EXACT_LEN], lo[EXACT_LEN], hi[EXACT_LEN];
  if (!is_attr) snprintf(at, sizeof at, " at row %zu", row);
  snprintf(what, sizeof what, "%s %s%s, not %s in [%s, %s]", is_attr ? "is" : "holds", exact_text(v, x), at,
           r.whole ? "a whole number" : "a number", exact_text(r.lo, lo), exact_text(r.hi, hi));
  refuse_at(g, name, is_attr, what);
}

/* The dataset's row count: 1-D, numeric of a possible layout (h5util_number_type_ok), stored whole
 * (HDF5 would copy a short storage's missing bytes from beyond its buffer). */
static size_t rows_of(const sim_group_t *g, hid_t d, const char *name) {
  hid_t space = H5Dget_space(d), type = H5Dget_type(d);
  hsize_t n = 0;
  H5T_class_t cls = type < 0 ? H5T_NO_CLASS : H5Tget_class(type);
  int ok = space >= 0 && H5Sget_simple_extent_ndims(space) == 1 && H5Sget_simple_extent_dims(space, &n, NULL) == 1;
  if (!ok || (cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Tget_size(type) > 8)
    refuse(g, name, "is not a 1-D dataset of numbers");
  if (!h5util_number_type_ok(type)) refuse(g, name, "holds numbers of a type whose recorded layout is impossible");
  if (n > LOG_READ_MAX_CELLS) {
    char what[128];
    snprintf(what, sizeof what, "claims %llu rows, more than the %zu a report reads", (unsigned long long)n,
             LOG_READ_MAX_CELLS);
    refuse(g, name, what);
  }
  unsigned long long stored = 0, want = 0;
  int whole = h5util_chunks_whole(d, 1, &n, H5Tget_size(type), &stored, &want);
  if (whole <= 0) {
    char what[128];
    snprintf(what, sizeof what, "stores %llu bytes where its %llu rows need %llu", stored, (unsigned long long)n, want);
    refuse(g, name, whole < 0 ? "cannot be read" : what);
  }
  H5Tclose(type);
  H5Sclose(space);
  return (size_t)n;
}

sim_vec_t sim_read_vec(const sim_group_t *g, const char *name, size_t rows, sim_range_t r) {
  if (h5util_exists(g->id, name, H5I_DATASET) != 1) refuse(g, name, "is missing or not a dataset");
  hid_t d = H5Dopen2(g->id, name, H5P_DEFAULT);
  if (d < 0) refuse(g, name, "cannot be opened");
  size_t n = rows_of(g, d, name);
  if (rows != SIM_READ_ANY_ROWS && n != rows) {
    char what[128];
    snprintf(what, sizeof what, "has %zu rows where its table has %zu", n, rows);
    refuse(g, name, what);
  }
  sim_vec_t v = {n, xcalloc(n + 1, sizeof(double))};
  if (n && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.v) < 0) refuse(g, name, "cannot be read");
  H5Dclose(d);
  for (size_t k = 0; k < n; k++)
    if (!in_range(v.v[k], r)) out_of_range(g, name, v.v[k], k, 0, r);
  return v;
}

double sim_read_attr(const sim_group_t *g, const char *name, sim_range_t r) {
  double v = NAN;
  int rc = h5util_attr_read_f64(g->id, name, &v);
  if (rc == H5UTIL_ABSENT) refuse_at(g, name, 1, "is missing or not a number");
  if (rc != 0) refuse_at(g, name, 1, "cannot be read");
  if (!in_range(v, r)) out_of_range(g, name, v, 0, 1, r);
  return v;
}
