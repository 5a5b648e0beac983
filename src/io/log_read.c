/* Reading a Surge log into memory (io/log_read.h). Every HDF5 call goes through the reader's
 * checker: once the file is recognised as a Surge log, a failing call means it is damaged. */
#include "io/log_read.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/infile.h"
#include "io/config.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "io/deck_value.h"
#include "io/h5serial.h"
#include "io/h5util.h"
#include "io/log_check.h"
#include "io/log_format.h"
#include "io/log_part.h"
#include "io/printable.h"
#include "io/strbuf.h"

enum { MAX_DATASETS = 1024 }; /* datasets read from one group */
#define LOG_READ_CHUNK_SLACK (1024.0 * 1024) /* bytes of values a dataset may claim beyond its storage */
#define VLEN_MIN_BYTES 8.0    /* a variable-length string takes at least this much of its dataset's storage */

/* The file being read and its checker. */
struct log_reader {
  const char *path;
  hid_t file;
  h5util_check_t chk;
  size_t tolerance; /* rows a column may lack behind its step scale: one flush's worth */
};

static _Noreturn void not_surge(const log_reader_t *r, const char *why) {
  surge_input_error("%s: not a Surge log (%s) (hint: a metrics log is the log.h5 file surge-train writes)", r->path,
                    why);
}

_Noreturn void log_reader_damaged(const log_reader_t *r, const char *what, const char *h5path) {
  surge_input_error("%s: damaged Surge log: %s %s", r->path, h5path, what);
}

static hid_t ok(log_reader_t *r, hid_t result, const char *what, const char *h5path) {
  return h5util_check(&r->chk, result, what, h5path);
}

static int has_object(log_reader_t *r, hid_t loc, const char *name, H5I_type_t type, const char *h5path) {
  int has = h5util_exists(loc, name, type);
  if (has == H5UTIL_NOT_HARD) log_reader_damaged(r, "is " H5UTIL_NOT_HARD_TEXT, h5path);
  return ok(r, has, "look up", h5path) > 0;
}

/* Bytes of the dataset's values in the file, times the most its filters may expand them: no more
 * values than this are read (a damaged extent with no stored data behind it is refused unread). */
static double stored_bound(log_reader_t *r, hid_t d, const char *h5path) {
  hid_t dcpl = ok(r, H5Dget_create_plist(d), "get the creation properties of", h5path);
  int filters = ok(r, H5Pget_nfilters(dcpl), "get the filters of", h5path);
  hsize_t chunk[H5S_MAX_RANK];
  double slack = 0; /* one chunk: a writer stopped by a full disk may leave its last one unallocated */
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    int nd = ok(r, H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk), "get the chunks of", h5path);
    slack = sizeof(double);
    for (int i = 0; i < nd; i++) slack *= (double)chunk[i];
    if (slack > LOG_READ_CHUNK_SLACK) slack = LOG_READ_CHUNK_SLACK;
  }
  ok(r, H5Pclose(dcpl), "close the creation properties of", h5path);
  return (double)H5Dget_storage_size(d) * (filters > 0 ? 1032.0 : 1.0) + slack;
}

/* The chunks a read of dims touches must be whole (h5util_chunks_whole), and the chunk index sound
 * (h5util_chunk_index_sane: a Surge log writes no filters, a crafted one may), or the log is damaged. */
static void check_chunks(log_reader_t *r, hid_t d, const char *h5path, int ndims, const hsize_t *dims, size_t type_bytes) {
  unsigned long long bytes, want;
  int rc = h5util_chunks_whole(d, ndims, dims, type_bytes, &bytes, &want);
  if (rc < 0) h5util_fail(&r->chk, "look up the chunks of", h5path);
  if (rc == 0)
    surge_input_error("%s: damaged Surge log: %s has a chunk of %llu bytes where its chunks hold %llu", r->path,
                      h5path, bytes, want);
  char why[256];
  rc = h5util_chunk_index_sane(d, why, sizeof why);
  if (rc < 0) h5util_fail(&r->chk, "look up the chunk index of", h5path);
  if (rc == 0) surge_input_error("%s: damaged Surge log: %s: %s", r->path, h5path, why);
}

/* ---- attributes: absent, or of another kind, reads as "", -1 or NaN ---- */

/* A string attribute with control characters and the like escaped (io/printable.h): it is shown. */
void log_reader_attr_string(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, char *buf, size_t n) {
  char *value = NULL, where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  int rc = h5util_attr_read_string(obj, name, &value);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  printable(rc == 0 ? value : "", buf, n);
  free(value);
}

/* Whether the integer attribute is there (its value in *v); a failing read is damage. */
static int attr_int(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, long long *v) {
  char where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  int64_t x = 0;
  int rc = h5util_attr_read_i64(obj, name, &x);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  *v = (long long)x;
  return rc == 0;
}

static _Noreturn void out_of_range(const log_reader_t *r, const char *obj_path, const char *name, double v, double lo,
                                    double hi) {
  surge_input_error("%s: damaged Surge log: %s@%s is %.17g, outside %.17g to %.17g (hint: was the file changed by "
                    "another program?)", r->path, obj_path, name, v, lo, hi);
}

/* An integer attribute in [lo, hi] (lo >= 0); -1 when absent (a -1 in the file is out of range). */
long long log_reader_attr_int(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, long long lo,
                                 long long hi) {
  long long v;
  if (!attr_int(r, obj, obj_path, name, &v)) return -1;
  if (v < lo || v > hi) out_of_range(r, obj_path, name, (double)v, (double)lo, (double)hi);
  return v;
}

static double attr_double(log_reader_t *r, hid_t obj, const char *obj_path, const char *name);

/* A number attribute in [lo, hi] (infinite hi: +infinity allowed); NaN when absent or NaN. */
double log_reader_attr_real(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, double lo, double hi) {
  double v = attr_double(r, obj, obj_path, name);
  if (!isnan(v) && !(v >= lo && v <= hi)) out_of_range(r, obj_path, name, v, lo, hi);
  return v;
}

static double attr_double(log_reader_t *r, hid_t obj, const char *obj_path, const char *name) {
  char where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  double v = NAN;
  int rc = h5util_attr_read_f64(obj, name, &v);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  return rc == 0 ? v : NAN;
}

/* ---- /run ---- */

/* A scalar fixed-length string dataset loc/name (h5path in messages) of at most max bytes; "" when
 * there is none. */
char *log_reader_text(log_reader_t *r, hid_t loc, const char *name, const char *h5path, size_t max) {
  if (!has_object(r, loc, name, H5I_DATASET, h5path)) return xstrdup("");
  hid_t d = ok(r, H5Dopen2(loc, name, H5P_DEFAULT), "open", h5path);
  hid_t t = ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  size_t len = H5Tget_size(t);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 || H5Sget_simple_extent_npoints(s) != 1)
    log_reader_damaged(r, "is not one fixed-length string", h5path);
  if (len == 0 || len > max)
    surge_input_error("%s: damaged Surge log: %s holds %zu bytes, more than the %zu allowed", r->path, h5path, len,
                      max);
  if ((double)len > stored_bound(r, d, h5path))
    surge_input_error("%s: damaged Surge log: %s claims %zu bytes, but the file stores %llu of them", r->path,
                      h5path, len, (unsigned long long)H5Dget_storage_size(d));
  char *text = xmalloc(len + 1);
  ok(r, H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), "read", h5path);
  text[len] = '\0';
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Tclose(t), "close the type of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
  return text;
}

/* Every deck key with its resolved value, through the deck parser: a deck this version cannot
 * read is an error naming "PATH:/run/deck:LINE". */
static void parse_settings(log_data_t *L) {
  if (!L->deck[0]) return;
  char where[4200];
  snprintf(where, sizeof where, "%s:" LOG_RUN "/" LOG_RUN_DECK, L->path);
  config_t *cfg = xmalloc(sizeof *cfg);
  deck_parse(L->deck, where, 0, NULL, cfg, NULL);
  L->setting = xcalloc((size_t)cfg_nkeys, sizeof *L->setting);
  strbuf_t b = STRBUF_INIT;
  for (int i = 0; i < cfg_nkeys; i++) {
    sb_clear(&b);
    sb_printf(&b, "%s.%s", cfg_keys[i].section, cfg_keys[i].key);
    L->setting[i].key = xstrdup(sb_str(&b));
    sb_clear(&b);
    cfg_value_format(&cfg_keys[i], cfg, &b);
    L->setting[i].value = xstrdup(sb_str(&b));
  }
  L->nsettings = cfg_nkeys;
  sb_free(&b);
  free(cfg);
}

static void read_run(log_reader_t *r, log_data_t *L, hid_t f) {
  const char *why = log_not_surge(f, &r->chk);
  if (why) not_surge(r, why);
  hid_t run = ok(r, H5Gopen2(f, LOG_RUN, H5P_DEFAULT), "open", LOG_RUN);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_PROGRAM, L->program, sizeof L->program);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_VERSION, L->version, sizeof L->version);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_START_TIME, L->start_time, sizeof L->start_time);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_ID, L->run_id, sizeof L->run_id);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_LAYOUT, L->layout, sizeof L->layout);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_MODEL, L->model, sizeof L->model);
  L->ranks = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_RANKS, 1, LOG_READ_MAX_RANKS);
  L->parameters = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_PARAMETERS, 0, (long long)1 << 50);
  L->global_batch = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_GLOBAL_BATCH, 1, 2147483647LL);
  L->flush_every = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_FLUSH_EVERY, 1, 1000000000LL);
  L->deck = log_reader_text(r, run, LOG_RUN_DECK, LOG_RUN "/" LOG_RUN_DECK, DECK_MAX_BYTES);
  ok(r, H5Gclose(run), "close", LOG_RUN);
  parse_settings(L);
}

/* ---- numeric groups ---- */

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
    not_surge(l->r, why);
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
  hid_t d = ok(r, H5Dopen2(gid, name, H5P_DEFAULT), "open", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  hid_t type = ok(r, H5Dget_type(d), "get the type of", h5path);
  size_t type_bytes = H5Tget_size(type); /* (its layout checked by column_kind) */
  ok(r, H5Tclose(type), "close the type of", h5path);
  hsize_t dims[2] = {0, 1}, count[2], start[2] = {0, 0};
  ok(r, H5Sget_simple_extent_dims(s, dims, NULL), "get the shape of", h5path);
  if (g->ndims == 2) { /* rows beyond the scale and columns beyond the ranks are not read */
    dims[0] = dims[0] < g->scale ? dims[0] : g->scale;
    if (g->max_cols && dims[1] > g->max_cols) dims[1] = g->max_cols;
  } else if ((double)dims[0] * (double)type_bytes > stored_bound(r, d, h5path)) {
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
    hid_t mem = ok(r, H5Screate_simple(g->ndims, count, NULL), "make a dataspace for", h5path);
    ok(r, H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL), "select the values of", h5path);
    check_chunks(r, d, h5path, g->ndims, count, type_bytes);
    ok(r, H5Dread(d, H5T_NATIVE_DOUBLE, mem, s, H5P_DEFAULT, c->v), "read", h5path);
    ok(r, H5Sclose(mem), "close a dataspace of", h5path);
  }
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
  if (g->ndims == 2 && g->exact_cols && g->max_cols > c->cols) {
    if ((double)c->stored_rows * (double)g->max_cols > (double)LOG_READ_MAX_CELLS) /* (before any allocation) */
      surge_input_error("%s: damaged Surge log: %s has %llu columns where /ranks/rank names %zu ranks, and %zu rows of "
                        "them would be %.0f values, more than the %zu a log may have", r->path, h5path,
                        (unsigned long long)c->cols, g->max_cols, c->stored_rows,
                        (double)c->stored_rows * (double)g->max_cols, LOG_READ_MAX_CELLS);
    widen(c, g->max_cols, h5path);
  }
}

/* What dataset g/name is, for a message when it is not what the format says: NULL when it is a
 * numeric dataset of `ndims` dimensions. */
static const char *column_kind(log_reader_t *r, hid_t g, const char *group, const char *name, int ndims) {
  char h5path[160];
  snprintf(h5path, sizeof h5path, "%s/%s", group, name);
  if (!has_object(r, g, name, H5I_DATASET, h5path))
    return has_object(r, g, name, H5I_GROUP, h5path) ? "is a group" : "is not a dataset";
  hid_t d = ok(r, H5Dopen2(g, name, H5P_DEFAULT), "open", h5path);
  hid_t t = ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  H5T_class_t k = H5Tget_class(t);
  int sane = h5util_number_type_ok(t); /* HDF5 would convert from the layout it records */
  int nd = H5Sget_simple_extent_ndims(s);
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Tclose(t), "close the type of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
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
  if (!has_object(r, f, g->group, H5I_GROUP, g->group)) return;
  t->present = 1;
  hid_t gid = ok(r, H5Gopen2(f, g->group, H5P_DEFAULT), "open", g->group);
  name_list_t names = {xcalloc(MAX_DATASETS, sizeof(char *)), 0, r, g->group};
  ok(r, H5Literate(gid, H5_INDEX_NAME, H5_ITER_INC, NULL, collect_name, &names), "list", g->group);
  char want[64];
  int nexpected = 0;
  while (log_expected_column(g->group, nexpected, g->multiplexed, want, sizeof want)) nexpected++;
  t->col = xcalloc((size_t)names.n + (size_t)nexpected + 1, sizeof *t->col);
  size_t cols = 0;
  for (int i = 0; i < names.n; i++) {
    const char *name = names.name[i];
    if (strncmp(name, g->prefix, strlen(g->prefix)) != 0) continue;
    const char *wrong = column_kind(r, gid, g->group, name, g->ndims);
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
  ok(r, H5Gclose(gid), "close", g->group);
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

/* ---- /events and /plan ---- */

/* HDF5 allocates each variable-length string as long as the file says it is (a 4-byte length: up to
 * 4 GiB for one string of a damaged file) before it reads it: through this allocator, no string may
 * be longer than the file that holds it, and a longer one fails the read (the log is damaged). */
typedef struct vlen_limit {
  size_t most;
} vlen_limit_t;

static void *vlen_alloc(size_t size, void *info) {
  const vlen_limit_t *limit = info;
  return size > limit->most ? NULL : malloc(size ? size : 1);
}

static void vlen_free(void *p, void *info) {
  (void)info;
  free(p);
}

/* The length every element of a variable-length string dataset claims, read from its raw bytes
 * before HDF5 reads the strings: HDF5 1.10 allocates (and fills) a conversion buffer of the claimed
 * length first, so a 180 KB file claiming a 4 GiB string cost 4 GB of memory. On disk an element is
 * the length (4 bytes, little-endian) and a global heap ID (an address and a 4-byte index). A Surge
 * log writes such datasets chunked (/events/text) or contiguous (/plan/name), never filtered: any
 * other layout, and any length longer than the file, is damage. */
static void check_string_lengths(log_reader_t *r, hid_t f, hid_t d, hid_t space, const char *h5path, hsize_t count) {
  hid_t fcpl = ok(r, H5Fget_create_plist(f), "get the creation properties of", "/");
  size_t sizeof_addr = 8, sizeof_size = 8;
  hsize_t userblock = 0, file_bytes = 0;
  ok(r, H5Pget_sizes(fcpl, &sizeof_addr, &sizeof_size), "get the address size of", "/");
  ok(r, H5Pget_userblock(fcpl, &userblock), "get the user block of", "/");
  ok(r, H5Pclose(fcpl), "close the creation properties of", "/");
  ok(r, H5Fget_filesize(f, &file_bytes), "get the size of", "/");
  const size_t elem = 4 + sizeof_addr + 4;
  hid_t dcpl = ok(r, H5Dget_create_plist(d), "get the creation properties of", h5path);
  H5D_layout_t layout = H5Pget_layout(dcpl);
  int filters = ok(r, H5Pget_nfilters(dcpl), "get the filters of", h5path);
  hsize_t chunk[1] = {0};
  if (layout == H5D_CHUNKED) ok(r, H5Pget_chunk(dcpl, 1, chunk), "get the chunks of", h5path);
  ok(r, H5Pclose(dcpl), "close the creation properties of", h5path);
  if ((layout != H5D_CHUNKED && layout != H5D_CONTIGUOUS) || filters != 0)
    log_reader_damaged(r, "is a string dataset of a layout a Surge log never writes (compact or filtered)", h5path);
  (void)space;
  size_t nbuf = 0;
  unsigned char *buf = NULL;
  hsize_t step = layout == H5D_CHUNKED ? chunk[0] : (count ? count : 1);
  for (hsize_t at = 0; at < count; at += step) { // each chunk the strings lie in, or the contiguous data
    hsize_t offset[1] = {at}, bytes = 0;
    if (layout == H5D_CHUNKED) {
      unsigned mask;
      haddr_t addr;
      ok(r, H5Dget_chunk_info_by_coord(d, offset, &mask, &addr, &bytes), "look up a chunk of", h5path);
      if (addr == HADDR_UNDEF) continue; // never written: empty strings
      if (bytes != chunk[0] * elem) log_reader_damaged(r, "has a chunk of another size than its chunks", h5path);
    } else {
      bytes = count * elem;
      if (count && H5Dget_offset(d) == HADDR_UNDEF) log_reader_damaged(r, "has no stored strings", h5path);
    }
    if (bytes > file_bytes) log_reader_damaged(r, "claims more string references than the file holds", h5path);
    if (bytes > nbuf) buf = xrealloc(buf, nbuf = (size_t)bytes);
    uint32_t filter_mask = 0;
    if (layout == H5D_CHUNKED)
      ok(r, H5Dread_chunk(d, H5P_DEFAULT, offset, &filter_mask, buf), "read a chunk of", h5path);
    else if (bytes) {
      int *fd = NULL;
      ok(r, H5Fget_vfd_handle(f, H5P_DEFAULT, (void **)&fd), "get the file descriptor of", "/");
      if (!fd || pread(*fd, buf, (size_t)bytes, (off_t)(userblock + H5Dget_offset(d))) != (ssize_t)bytes)
        log_reader_damaged(r, "cannot be read as stored", h5path);
    }
    for (hsize_t j = 0; j < bytes / elem && offset[0] + j < count; j++) {
      const unsigned char *e = buf + j * elem;
      uint32_t len = (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
      if (len > file_bytes)
        surge_input_error("%s: damaged Surge log: %s: string %llu claims %u bytes, more than the %llu-byte file "
                          "holds", r->path, h5path, (unsigned long long)(offset[0] + j), len,
                          (unsigned long long)file_bytes);
    }
  }
  free(buf);
}

/* A 1-D dataset of variable-length strings (h5path), malloc'd strings; *n receives their count. */
char **log_reader_strings(log_reader_t *r, const char *h5path, size_t *n) {
  hid_t f = r->file;
  hid_t d = ok(r, H5Dopen2(f, h5path, H5P_DEFAULT), "open", h5path);
  hid_t t = ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0 || H5Sget_simple_extent_ndims(s) != 1)
    log_reader_damaged(r, "is not a 1-D dataset of variable-length strings", h5path);
  hsize_t len = 0;
  ok(r, H5Sget_simple_extent_dims(s, &len, NULL), "get the shape of", h5path);
  if (len > LOG_READ_MAX_CELLS)
    surge_input_error("%s: %s holds %llu strings, more than the %zu a log may have", r->path, h5path,
                      (unsigned long long)len, LOG_READ_MAX_CELLS);
  if ((double)len * VLEN_MIN_BYTES > stored_bound(r, d, h5path))
    surge_input_error("%s: damaged Surge log: %s claims %llu strings, but the file stores %llu bytes of them",
                      r->path, h5path, (unsigned long long)len, (unsigned long long)H5Dget_storage_size(d));
  check_string_lengths(r, f, d, s, h5path, len);
  hid_t mt = ok(r, H5Tcopy(H5T_C_S1), "make a string type for", h5path);
  ok(r, H5Tset_size(mt, H5T_VARIABLE), "make a string type for", h5path);
  ok(r, H5Tset_cset(mt, H5Tget_cset(t)), "make a string type for", h5path); /* HDF5 converts no charsets */
  hsize_t file_bytes = 0;
  ok(r, H5Fget_filesize(f, &file_bytes), "get the size of", "/");
  vlen_limit_t limit = {(size_t)file_bytes + 1};
  hid_t dxpl = ok(r, H5Pcreate(H5P_DATASET_XFER), "make the transfer properties for", h5path);
  ok(r, H5Pset_vlen_mem_manager(dxpl, vlen_alloc, &limit, vlen_free, NULL), "bound the strings of", h5path);
  char **raw = xcalloc((size_t)len + 1, sizeof(char *)), **text = xcalloc((size_t)len + 1, sizeof(char *));
  if (len) ok(r, H5Dread(d, mt, H5S_ALL, H5S_ALL, dxpl, raw), "read", h5path);
  for (hsize_t i = 0; i < len; i++) text[i] = printable_dup(raw[i] ? raw[i] : ""); /* shown on terminals */
#if H5_VERSION_GE(1, 12, 0)
  if (len) ok(r, H5Treclaim(mt, s, dxpl, raw), "free the strings of", h5path);
#else
  if (len) ok(r, H5Dvlen_reclaim(mt, s, dxpl, raw), "free the strings of", h5path);
#endif
  free(raw);
  ok(r, H5Pclose(dxpl), "close the transfer properties for", h5path);
  ok(r, H5Tclose(mt), "close a string type of", h5path);
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Tclose(t), "close the type of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
  *n = (size_t)len;
  return text;
}

void log_strings_free(char **text, size_t n) {
  for (size_t i = 0; i < n; i++) free(text[i]);
  free(text);
}

void log_table_free(log_table_t *t) {
  for (int i = 0; i < t->ncol; i++) free(t->col[i].v);
  free(t->col);
}

static void read_events(log_reader_t *r, log_data_t *L, hid_t f) {
  const char *group = log_group_path[LOG_EVENTS];
  char text_path[64];
  snprintf(text_path, sizeof text_path, "%s/%s", group, log_event_info[LOG_EVENT_TEXT].name);
  log_table_t steps;
  log_table_spec_t g = {.group = group, .prefix = "", .ndims = 1, .tolerance = r->tolerance, .rows_share_step = 1};
  log_reader_table(r, &g, &steps);
  const log_column_t *step = log_column(&steps, LOG_STEP);
  if (steps.present && step && has_object(r, f, text_path, H5I_DATASET, text_path)) {
    size_t n;
    char **text = log_reader_strings(r, text_path, &n);
    L->nevents = steps.rows < n ? steps.rows : n;
    L->event_step = xcalloc(L->nevents + 1, sizeof(double));
    L->event_text = xcalloc(L->nevents + 1, sizeof(char *));
    for (size_t i = 0; i < L->nevents; i++) {
      L->event_step[i] = step->v[i];
      L->event_text[i] = text[i];
      text[i] = NULL;
    }
    log_strings_free(text, n);
  }
  log_table_free(&steps);
}

/* ---- the whole log ---- */

/* Columns of /ranks: the length of its rank scale /ranks/rank (1-D, bounded by what is stored), 0
 * without /ranks. */
static size_t rank_columns(log_reader_t *r, hid_t f) {
  const char *group = log_group_path[LOG_RANKS];
  if (!has_object(r, f, group, H5I_GROUP, group)) return 0;
  char path[64];
  snprintf(path, sizeof path, "%s/%s", group, log_scale_info[LOG_RANKS].name);
  if (column_kind(r, f, "", path + 1, 1)) log_reader_damaged(r, "is missing or not a 1-D numeric dataset", path);
  hid_t d = ok(r, H5Dopen2(f, path, H5P_DEFAULT), "open", path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", path);
  hsize_t n = 0;
  ok(r, H5Sget_simple_extent_dims(s, &n, NULL), "get the shape of", path);
  if ((double)n * sizeof(int32_t) > stored_bound(r, d, path) || n > LOG_READ_MAX_RANKS)
    surge_input_error("%s: damaged Surge log: %s claims %llu ranks, but the file stores %llu bytes of them", r->path,
                      path, (unsigned long long)n, (unsigned long long)H5Dget_storage_size(d));
  ok(r, H5Sclose(s), "close the dataspace of", path);
  ok(r, H5Dclose(d), "close", path);
  return (size_t)n;
}

static hid_t open_log(log_reader_t *r) {
  if (infile_check(r->path, 0, NULL) != 0)
    surge_input_error("%s: cannot open: %s (hint: check the path)", r->path, strerror(errno));
  if (H5Fis_hdf5(r->path) <= 0) not_surge(r, "not an HDF5 file");
  /* no locks: the writer takes none either, and a log may sit on a file system without them */
  hid_t fapl = ok(r, H5Pcreate(H5P_FILE_ACCESS), "make the access properties for", "/");
  ok(r, H5Pset_file_locking(fapl, 0, 1), "turn off file locking for", "/");
  hid_t f = ok(r, H5Fopen(r->path, H5F_ACC_RDONLY, fapl), "open the HDF5 file at", "/");
  ok(r, H5Pclose(fapl), "close the access properties for", "/");
  return f;
}

int log_peek_run_id(const char *path, char *id, size_t n) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (n) id[0] = '\0';
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f = -1, run = -1;
  if (fapl >= 0 && H5Pset_file_locking(fapl, 0, 1) >= 0 && H5Fis_hdf5(path) > 0)
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  char *value = NULL;
  if (f >= 0 && h5util_exists(f, LOG_RUN, H5I_GROUP) > 0) run = H5Gopen2(f, LOG_RUN, H5P_DEFAULT);
  if (run >= 0 && h5util_attr_read_string(run, LOG_RUN_ID, &value) == 0 && n) snprintf(id, n, "%s", value);
  free(value);
  if (run >= 0) H5Gclose(run);
  if (f >= 0) H5Fclose(f);
  if (fapl >= 0) H5Pclose(fapl);
  H5Eclear2(H5E_DEFAULT);
  h5util_quiet_end(q);
  return n && id[0];
}

/* ---- the parts (io/log_part.h) ---- */

static const log_part_t *log_parts[LOG_PARTS_MAX]; /* a log holds at most every registered part */
static int log_parts_n;

void log_part_register(const log_part_t *part) {
  for (int i = 0; i < log_parts_n; i++)
    if (log_parts[i] == part) return;
  if (log_parts_n == LOG_PARTS_MAX)
    surge_runtime_error("log: more than %d parts registered", log_parts_n);
  log_parts[log_parts_n++] = part;
}

const log_group_format_t *log_group_format(const char *group) {
  for (int i = 0; i < log_parts_n; i++)
    for (int k = 0; k < log_parts[i]->nformats; k++)
      if (strcmp(log_parts[i]->formats[k]->group, group) == 0) return log_parts[i]->formats[k];
  return NULL;
}

/* The parts the file has, read by their own readers. */
static void read_parts(log_reader_t *r, log_data_t *L) {
  for (int i = 0; i < log_parts_n; i++) {
    const log_part_t *p = log_parts[i];
    if (!has_object(r, r->file, p->group, H5I_GROUP, p->group)) continue;
    L->part[L->nparts].part = p;
    L->part[L->nparts].data = p->read(r, L);
    L->nparts++;
  }
}

/* Whether the log has any of the multiplexed phases (then it is expected to have them all). */
static int multiplexed_phases(log_reader_t *r, hid_t f) {
  for (int p = 0; p < PHASE_COUNT; p++) {
    char path[96];
    snprintf(path, sizeof path, "%s/%s%s", log_group_path[LOG_RANKS], LOG_PHASE_PREFIX, log_phase_info[p].name);
    if (log_phase_multiplexed((log_phase_t)p) && has_object(r, f, path, H5I_DATASET, path)) return 1;
  }
  return 0;
}

log_data_t *log_read(const char *path) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  log_data_t *L = xcalloc(1, sizeof *L);
  L->path = xstrdup(path);
  log_reader_t r = {.path = L->path, .chk = h5util_checker(L->path, H5UTIL_INPUT_ERROR)};
  r.chk.lead = "damaged Surge log: ";
  r.chk.hint = "was the file cut short or changed by another program?";
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t f = r.file = open_log(&r);
  read_run(&r, L, f);
  r.tolerance = L->flush_every > 0 ? (size_t)L->flush_every : 1;
  int multiplexed = multiplexed_phases(&r, f);
  log_table_spec_t metrics = {.group = log_group_path[LOG_METRICS], .prefix = "", .ndims = 1, .tolerance = r.tolerance};
  log_reader_table(&r, &metrics, &L->metrics);
  const log_column_t *step = log_column(&L->metrics, LOG_STEP);
  if (!step) not_surge(&r, "no /metrics/step");
  /* /ranks: (rows of /metrics/step, ranks of /ranks/rank) at most, both bounded by what is stored */
  log_table_spec_t ranks = {.group = log_group_path[LOG_RANKS], .prefix = LOG_PHASE_PREFIX, .ndims = 2,
                            .multiplexed = multiplexed, .scale = step->stored_rows, .tolerance = r.tolerance,
                            .max_cols = rank_columns(&r, f), .exact_cols = 1};
  log_reader_table(&r, &ranks, &L->phases);
  log_table_limit_rows(&L->phases, L->metrics.rows);
  L->phase_ranks = L->phases.ncol ? L->phases.col[0].cols : 0;
  for (int i = 0; i < L->phases.ncol; i++)
    if (L->phases.col[i].cols < L->phase_ranks) L->phase_ranks = L->phases.col[i].cols;
  log_table_spec_t eval = {.group = log_group_path[LOG_EVAL], .prefix = "", .ndims = 1, .tolerance = r.tolerance};
  log_reader_table(&r, &eval, &L->eval);
  if (L->eval.present && !log_column(&L->eval, LOG_STEP)) log_reader_damaged(&r, "has no step dataset", "/eval");
  read_events(&r, L, f);
  read_parts(&r, L);
  ok(&r, H5Fclose(f), "close", "/");
  h5util_quiet_end(q);
  return L;
}

void log_data_free(log_data_t *L) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (!L) return;
  for (int i = 0; i < L->nsettings; i++) {
    free(L->setting[i].key);
    free(L->setting[i].value);
  }
  free(L->setting);
  log_table_free(&L->metrics);
  log_table_free(&L->phases);
  log_table_free(&L->eval);
  for (size_t i = 0; i < L->nevents; i++) free(L->event_text[i]);
  free(L->event_text);
  free(L->event_step);
  for (int i = 0; i < L->nparts; i++) L->part[i].part->free(L->part[i].data);
  free(L->deck);
  free(L->path);
  free(L);
}

const void *log_part_data(const log_data_t *L, const char *name) {
  for (int i = 0; i < L->nparts; i++)
    if (strcmp(L->part[i].part->name, name) == 0) return L->part[i].data;
  return NULL;
}

/* ---- the parts' access to the reader ---- */

size_t log_reader_tolerance(const log_reader_t *r) { return r->tolerance; }

int log_reader_has(log_reader_t *r, const char *path, H5I_type_t type) {
  return has_object(r, r->file, path, type, path);
}

hid_t log_reader_group(log_reader_t *r, const char *path) {
  return ok(r, H5Gopen2(r->file, path, H5P_DEFAULT), "open", path);
}

void log_reader_group_close(log_reader_t *r, hid_t g, const char *path) { ok(r, H5Gclose(g), "close", path); }

const log_column_t *log_column(const log_table_t *t, const char *name) {
  for (int i = 0; i < t->ncol; i++)
    if (strcmp(t->col[i].name, name) == 0) return &t->col[i];
  return NULL;
}

const char *log_setting(const log_data_t *L, const char *key) {
  for (int i = 0; i < L->nsettings; i++)
    if (strcmp(L->setting[i].key, key) == 0) return L->setting[i].value;
  return NULL;
}

const char *log_run_name(const log_data_t *L) {
  const char *name = log_setting(L, "run.name");
  return name && name[0] ? name : L->path;
}
