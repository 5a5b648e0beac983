/* surge-sim result files (/sim, doc/sim.md) read for surge-report through one checked reader: every
 * dataset must be 1-D and numeric, as long as the table it belongs to, stored whole, and every value
 * (and attribute) within what surge-sim writes there, before the report indexes, divides or
 * allocates by any of them. Anything else is an input error naming the file and the HDF5 path. */
#ifndef SURGE_SIM_SIM_READ_H
#define SURGE_SIM_SIM_READ_H

#include <hdf5.h>
#include <stddef.h>

/* Values accepted: [lo, hi], and whole numbers only when whole. */
typedef struct sim_range {
  double lo, hi;
  int whole;
} sim_range_t;

#define SIM_READ_MAX 1e18             /* us, rank-us, samples/s, ratios: far beyond any real run */
#define SIM_READ_ANY_ROWS ((size_t)-1) /* a table's first column: its length sets the others' */
/* times, throughputs and ratios; the same but never 0 (the report divides by them) */
#define SIM_NUMBER ((sim_range_t){0, SIM_READ_MAX, 0})
#define SIM_DIVISOR ((sim_range_t){1e-9, SIM_READ_MAX, 0})

typedef struct sim_vec {
  size_t n;
  double *v; /* n values (malloc'd, one more allocated) */
} sim_vec_t;

/* The group of the file where a vector or attribute lives, for messages ("/sim/burst"). */
typedef struct sim_group {
  const char *path; /* the file */
  hid_t id;
  const char *name;
} sim_group_t;

/* Dataset `name` of g: rows values (any number, at most the log reader's bound, for
 * SIM_READ_ANY_ROWS), each in r. */
sim_vec_t sim_read_vec(const sim_group_t *g, const char *name, size_t rows, sim_range_t r);
/* Numeric attribute `name` of g, in r. */
double sim_read_attr(const sim_group_t *g, const char *name, sim_range_t r);

#endif
