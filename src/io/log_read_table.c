/* Reading a Surge log's numeric groups (io/log_read.h's log_reader_table): every dataset of a group,
 * checked against its documented kind and step scale, widened and padded to one table of rows. */
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/log_check.h"
#include "io/log_format.h"
#include "io/log_read.h"
#include "io/log_read_impl.h"
#include "io/printable.h"

enum { MAX_DATASETS = 1024 }; /* datasets read from one group */

typedef struct name_list {
  char **name;
  int n;
  const log_reader_t *r;
  const char *group;
} name_list_t;

static herr_t collect_name(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  (void)g;
  (void)info;
  name_list_t *l = data;
  if (l->n == MAX_DATASETS) {
    char why[128];
    snprintf(why, sizeof why, "%s has more than %d entries", l->group, MAX_DATASETS);
    log_reader_not_surge(l->r, why);
  }
  l->name[l->n++] = xstrdup(name);
  return 0;
}


/* Whether column name of the group is one the format documents as numeric. */
static int documented(const log_table_spec_t *g, const char *name) {
  char want[64];
  if (g->extra) return 0;
  for (int i = 0; log_expected_column(g->group, i, 1, want, sizeof want); i++)
    if (strcmp(want, name) == 0) return 1;
  log_range_t range = log_column_range(g->group, name);
  return !(range.lo == -INFINITY && range.hi == INFINITY);
}

/* A /ranks column narrower than /ranks/rank (the writer widens them all at once: damage) given the
 * ranks it lacks as NaN columns, so the other columns keep every rank. */
static void widen(log_column_t *c, size_t cols, const char *h5path) {
  size_t rows = c->stored_rows;
  double *v = xmalloc(surge_mul_size(surge_mul_size(rows ? rows : 1, cols, h5path), sizeof(double), h5path));
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) v[i * cols + j] = j < c->cols ? c->v[i * c->cols + j] : NAN;
  free(c->v);
  c->v = v;
  c->short_cols = cols - c->cols;
  c->cols = cols;
}

/* Read one numeric dataset of 1 or 2 dimensions into c: at most its stored values (1-D), at most
 * g->scale rows and g->max_cols columns (2-D, whose unwritten cells read as NaN). */
static void read_column(log_reader_t *r, hid_t gid, const log_table_spec_t *g, const char *name, log_column_t *c) {
  char h5path[160];
  snprintf(h5path, sizeof h5path, "%s/%s", g->group, name);
  hid_t d = log_reader_ok(r, H5Dopen2(gid, name, H5P_DEFAULT), "open", h5path);
  hid_t s = log_reader_ok(r, H5Dget_space(d), "get the shape of", h5path);
  hid_t type = log_reader_ok(r, H5Dget_type(d), "get the type of", h5path);
  size_t type_bytes = H5Tget_size(type); /* (its layout checked by column_kind) */
  log_reader_ok(r, H5Tclose(type), "close the type of", h5path);
  hsize_t dims[2] = {0, 1}, count[2], start[2] = {0, 0};
  log_reader_ok(r, H5Sget_simple_extent_dims(s, dims, NULL), "get the shape of", h5path);
  if (g->ndims == 2) { /* rows beyond the scale and columns beyond the ranks are not read */
    dims[0] = dims[0] < g->scale ? dims[0] : g->scale;
    if (g->max_cols && dims[1] > g->max_cols) dims[1] = g->max_cols;
  } else if ((double)dims[0] * (double)type_bytes > log_reader_stored_bound(r, d, h5path)) {
    surge_input_error("%s: damaged Surge log: %s claims %llu values, but the file stores %llu bytes of them (hint: "
                      "was the file cut short or changed by another program?)",
                      r->path, h5path, (unsigned long long)dims[0], (unsigned long long)H5Dget_storage_size(d));
  }
  if (dims[1] > LOG_READ_MAX_RANKS)
    surge_input_error("%s: damaged Surge log: %s has %llu columns, more than the %d ranks a log may have", r->path,
                      h5path, (unsigned long long)dims[1], LOG_READ_MAX_RANKS);
  size_t cells = surge_mul_size((size_t)dims[0], (size_t)dims[1], h5path);
  if (cells > LOG_READ_MAX_CELLS)
    surge_input_error("%s: %s holds %zu values, more than the %zu a log may have", r->path, h5path, cells,
                      LOG_READ_MAX_CELLS);
  log_reader_attr_string(r, d, h5path, LOG_UNITS, c->units, sizeof c->units);
  printable(name, c->name, sizeof c->name);
  c->cols = (size_t)dims[1];
  c->stored_rows = (size_t)dims[0];
  c->v = xmalloc(surge_mul_size(cells ? cells : 1, sizeof(double), h5path));
  if (cells) {
    count[0] = dims[0];
    count[1] = dims[1];
    hid_t mem = log_reader_ok(r, H5Screate_simple(g->ndims, count, NULL), "make a dataspace for", h5path);
    log_reader_ok(r, H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL), "select the values of", h5path);
    log_reader_check_chunks(r, d, h5path, g->ndims, count, type_bytes);
    log_reader_ok(r, H5Dread(d, H5T_NATIVE_DOUBLE, mem, s, H5P_DEFAULT, c->v), "read", h5path);
    log_reader_ok(r, H5Sclose(mem), "close a dataspace of", h5path);
  }
  log_reader_ok(r, H5Sclose(s), "close the dataspace of", h5path);
  log_reader_ok(r, H5Dclose(d), "close", h5path);
  if (g->ndims == 2 && g->exact_cols && g->max_cols > c->cols) {
    if ((double)c->stored_rows * (double)g->max_cols > (double)LOG_READ_MAX_CELLS) /* (before any allocation) */
      surge_input_error("%s: damaged Surge log: %s has %llu columns where /ranks/rank names %zu ranks, and %zu rows of "
                        "them would be %.0f values, more than the %zu a log may have", r->path, h5path,
                        (unsigned long long)c->cols, g->max_cols, c->stored_rows,
                        (double)c->stored_rows * (double)g->max_cols, LOG_READ_MAX_CELLS);
    widen(c, g->max_cols, h5path);
  }
}

const char *log_reader_column_kind(log_reader_t *r, hid_t g, const char *group, const char *name, int ndims) {
  char h5path[160];
  snprintf(h5path, sizeof h5path, "%s/%s", group, name);
  if (!log_reader_has_object(r, g, name, H5I_DATASET, h5path))
    return log_reader_has_object(r, g, name, H5I_GROUP, h5path) ? "is a group" : "is not a dataset";
  hid_t d = log_reader_ok(r, H5Dopen2(g, name, H5P_DEFAULT), "open", h5path);
  hid_t t = log_reader_ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = log_reader_ok(r, H5Dget_space(d), "get the shape of", h5path);
  H5T_class_t k = H5Tget_class(t);
  int sane = h5util_number_type_ok(t); /* HDF5 would convert from the layout it records */
  int nd = H5Sget_simple_extent_ndims(s);
  log_reader_ok(r, H5Sclose(s), "close the dataspace of", h5path);
  log_reader_ok(r, H5Tclose(t), "close the type of", h5path);
  log_reader_ok(r, H5Dclose(d), "close", h5path);
  if (k == H5T_STRING) return "holds strings";
  if (k != H5T_INTEGER && k != H5T_FLOAT) return "holds values that are not numbers";
  if (!sane) return "holds numbers of a type whose recorded layout is impossible";
  if (nd != ndims) return nd == 2 ? "is 2-D" : nd == 1 ? "is 1-D" : nd == 0 ? "is a scalar" : "has another shape";
  return NULL;
}

/* Every value of a documented column in its range, or the log is damaged. */
static void check_values(log_reader_t *r, const log_table_spec_t *g, const char *name, const log_column_t *c) {
  log_range_t range = log_column_range(g->group, name);
  size_t cells = c->stored_rows * c->cols;
  for (size_t i = 0; i < cells; i++)
    if (!log_in_range(&range, c->v[i])) {
      char where[192];
      snprintf(where, sizeof where, "%s/%s", g->group, c->name);
      surge_input_error("%s: damaged Surge log: %s holds %.17g at row %zu, outside what a Surge log holds there (hint: "
                        "was the file changed by another program?)", r->path, where, c->v[i], i / c->cols);
    }
}

/* A step column: strictly increasing (non-decreasing where several rows can share a step). */
static void check_steps(log_reader_t *r, const log_table_spec_t *g, const log_column_t *c, int strictly) {
  for (size_t i = 1; i < c->stored_rows; i++)
    if (c->v[i] < c->v[i - 1] || (strictly && c->v[i] == c->v[i - 1]))
      surge_input_error("%s: damaged Surge log: %s/%s goes from %.17g to %.17g at row %zu (steps increase row by "
                        "row)", r->path, g->group, LOG_STEP, c->v[i - 1], c->v[i], i);
}

static int column_before(const char *group, const log_column_t *a, const log_column_t *b) {
  int ra = log_column_order(group, a->name), rb = log_column_order(group, b->name);
  return ra != rb ? ra < rb : strcmp(a->name, b->name) < 0;
}

static void add_column(log_table_t *t, const char *group, log_column_t *c) {
  int j = t->ncol++;
  while (j > 0 && column_before(group, c, &t->col[j - 1])) {
    t->col[j] = t->col[j - 1];
    j--;
  }
  t->col[j] = *c;
}

/* Grow column c to `rows` rows of NaN beyond what it holds. */
static void pad_rows(log_column_t *c, size_t rows, const char *h5path) {
  size_t have = c->stored_rows * c->cols, want = surge_mul_size(rows, c->cols, h5path);
  c->v = xrealloc(c->v, surge_mul_size(want ? want : 1, sizeof(double), h5path));
  for (size_t i = have; i < want; i++) c->v[i] = NAN;
}

/* The expected columns the group lacks, as columns of no values (missing set). */
static void add_missing(log_reader_t *r, log_table_t *t, const log_table_spec_t *g, size_t cols) {
  char name[64];
  for (int i = 0; log_expected_column(g->group, i, g->multiplexed, name, sizeof name); i++) {
    if (log_column(t, name) || strcmp(name, LOG_STEP) == 0) continue; /* no step: the callers' errors */
    if (g->strict) {
      char h5path[160];
      snprintf(h5path, sizeof h5path, "%s/%s", g->group, name);
      log_reader_damaged(r, "is missing", h5path);
    }
    log_column_t c = {.cols = g->ndims == 2 ? cols : 1, .missing = 1};
    snprintf(c.name, sizeof c.name, "%s", name);
    c.v = xmalloc(sizeof(double));
    add_column(t, g->group, &c);
  }
}

/* Match up the rows: the scale's rows (its step column, else g->scale, else the longest column);
 * a column short of it by more than a flush is shown padded with no values (short_by), one short by
 * less (a killed writer's last flush) shortens the table; rows past the shortest are dropped (and
 * counted, to be said); a column longer than the scale by more than a flush is damage. */
static void match_rows(log_reader_t *r, log_table_t *t, const log_table_spec_t *g) {
  const log_column_t *step = log_column(t, LOG_STEP);
  size_t scale = step ? step->stored_rows : g->scale, longest = 0;
  for (int i = 0; i < t->ncol; i++)
    if (!t->col[i].missing && t->col[i].stored_rows > longest) longest = t->col[i].stored_rows;
  if (!step && !g->scale) scale = longest;
  size_t rows = scale;
  for (int i = 0; i < t->ncol; i++) {
    log_column_t *c = &t->col[i];
    char h5path[160];
    snprintf(h5path, sizeof h5path, "%s/%s", g->group, c->name);
    if (g->strict && !c->missing && documented(g, c->name) && c->stored_rows != scale)
      surge_input_error("%s: damaged Surge log: %s has %zu rows, the other columns %zu", r->path, h5path,
                        c->stored_rows, scale);
    if (!c->missing && c->stored_rows > scale + g->tolerance)
      surge_input_error("%s: damaged Surge log: %s has %zu rows, %zu more than its step scale's %zu (a writer killed "
                        "during a flush leaves at most one flush, %zu rows, beyond it; hint: was the file changed by "
                        "another program?)", r->path, h5path, c->stored_rows, c->stored_rows - scale, scale,
                        g->tolerance);
    if (c->missing || c->stored_rows + g->tolerance < scale) {
      c->short_by = scale - c->stored_rows;
      pad_rows(c, scale, h5path);
    } else if (c->stored_rows < rows) {
      rows = c->stored_rows;
    }
  }
  t->rows = rows;
  t->rows_dropped = (longest > scale ? longest : scale) - rows;
}

/* Every numeric column of g->group whose name starts with g->prefix, in log_column_order, checked:
 * a documented column that is not a numeric dataset of the right shape, or holds a value out of
 * range, is damage (exit 2); one that is missing or far too short is kept as a column without those
 * values (missing, short_by), for the output to say so. A missing group leaves t->present 0. */
void log_reader_table(log_reader_t *r, const log_table_spec_t *g, log_table_t *t) {
  hid_t f = r->file;
  memset(t, 0, sizeof *t);
  t->per_column = g->ndims == 2;
  if (!log_reader_has_object(r, f, g->group, H5I_GROUP, g->group)) return;
  t->present = 1;
  hid_t gid = log_reader_ok(r, H5Gopen2(f, g->group, H5P_DEFAULT), "open", g->group);
  name_list_t names = {xcalloc(MAX_DATASETS, sizeof(char *)), 0, r, g->group};
  log_reader_ok(r, H5Literate(gid, H5_INDEX_NAME, H5_ITER_INC, NULL, collect_name, &names), "list", g->group);
  char want[64];
  int nexpected = 0;
  while (log_expected_column(g->group, nexpected, g->multiplexed, want, sizeof want)) nexpected++;
  t->col = xcalloc((size_t)names.n + (size_t)nexpected + 1, sizeof *t->col);
  size_t cols = 0;
  for (int i = 0; i < names.n; i++) {
    const char *name = names.name[i];
    if (strncmp(name, g->prefix, strlen(g->prefix)) != 0) continue;
    const char *wrong = log_reader_column_kind(r, gid, g->group, name, g->ndims);
    if (wrong && documented(g, name)) {
      char h5path[160], shown[96];
      snprintf(h5path, sizeof h5path, "%s/%s", g->group, printable(name, shown, sizeof shown));
      surge_input_error("%s: damaged Surge log: %s %s, where a Surge log has a %d-D numeric dataset (hint: was the "
                        "file changed by another program?)", r->path, h5path, wrong, g->ndims);
    }
    if (wrong) continue; /* a newer log's dataset of another kind */
    log_column_t c = {0};
    read_column(r, gid, g, name, &c);
    if (documented(g, name)) check_values(r, g, name, &c);
    if (!cols || c.cols < cols) cols = c.cols;
    add_column(t, g->group, &c);
  }
  for (int i = 0; i < names.n; i++) free(names.name[i]);
  free(names.name);
  log_reader_ok(r, H5Gclose(gid), "close", g->group);
  add_missing(r, t, g, cols ? cols : 1);
  const log_column_t *step = log_column(t, LOG_STEP);
  if (step && !step->missing) check_steps(r, g, step, !g->rows_share_step);
  match_rows(r, t, g);
}

/* Keep at most `rows` rows of t (the other rows do not belong to a row of its step scale). */
void log_table_limit_rows(log_table_t *t, size_t rows) {
  if (t->rows <= rows) return;
  t->rows_dropped += t->rows - rows;
  t->rows = rows;
}

void log_table_free(log_table_t *t) {
  for (int i = 0; i < t->ncol; i++) free(t->col[i].v);
  free(t->col);
}
