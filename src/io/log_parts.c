/* The parts' own groups of the metrics log (io/log.h): step-indexed groups a part declares and
 * appends to by handle, fixed tables, attributes; and on resume, the parts' groups found in the
 * file, cut back to the resumed step, whether this run declares them again or not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/h5serial.h"
#include "io/log_impl.h"

enum { PART_GROUPS_MAX = 256, PART_COLUMNS_MAX = 256 }; /* in a resumed file: groups with a step scale,
                                                            * columns of one */

static log_rows_t *rows_find(run_log_t *L, const char *path) {
  for (log_rows_t *R = L->rows; R; R = R->next)
    if (strcmp(R->path, path) == 0) return R;
  return NULL;
}

static log_rows_t *rows_add(run_log_t *L, const char *path) {
  log_rows_t *R = xcalloc(1, sizeof *R);
  R->L = L;
  R->last_step = -1;
  snprintf(R->path, sizeof R->path, "%s", path);
  if (strlen(path) >= sizeof R->path) surge_runtime_error("log: group path %s longer than %zu", path, sizeof R->path - 1);
  log_rows_t **tail = &L->rows;
  while (*tail) tail = &(*tail)->next;
  *tail = R;
  return R;
}

static void close_columns(log_rows_t *R) {
  for (int c = 0; c < R->ncolumns; c++) h5_series_close(&R->series[c]);
  free(R->series);
  free(R->column);
  R->series = NULL;
  R->column = NULL;
  R->ncolumns = 0;
}

/* A NaN row and a row of zeros as wide as the widest column (what a step without a row reads: NaN,
 * or 0 in an integer column). */
static void make_pad(log_rows_t *R) {
  hsize_t widest = 1;
  for (int c = 0; c < R->ncolumns; c++)
    if (R->series[c].cols > widest) widest = R->series[c].cols;
  free(R->pad);
  free(R->zero);
  free(R->scratch);
  R->pad = xcalloc(widest, sizeof(double));
  R->scratch = xcalloc(widest, sizeof(double));
  R->zero = xcalloc(widest, sizeof(uint64_t));
  for (hsize_t j = 0; j < widest; j++) R->pad[j] = NAN;
}

/* Whether every group on the way to path, and path, exist. */
static int path_exists(run_log_t *L, const char *path) {
  char prefix[128];
  for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
    size_t n = p ? (size_t)(p - path) : strlen(path);
    if (n >= sizeof prefix) surge_runtime_error("log: group path %s too long", path);
    memcpy(prefix, path, n);
    prefix[n] = 0;
    if (h5util_check(&L->chk, H5Lexists(L->file, prefix, H5P_DEFAULT), "look up", prefix) <= 0) return 0;
    if (!p) return 1;
  }
}

/* ---- declared groups ---- */

static void create_rows(log_rows_t *R) {
  run_log_t *L = R->L;
  hid_t g = log_group_open(L, R->path, 1);
  h5_attr_put_string(g, R->path, LOG_ROWS_ATTR, R->each_step ? LOG_ROWS_EACH_STEP : LOG_ROWS_ANY, &L->chk);
  h5_attr_put_string(g, R->path, LOG_FEATURE_ATTR, R->feature, &L->chk);
  h5_series_create(&R->step, &L->chk, g, R->path, LOG_STEP, log_step_kind(), 0, "steps",
                   R->each_step ? "steps completed after the logged step (1-based)"
                                : "steps completed after the step the row belongs to (1-based)");
  h5_series_make_scale(&R->step, LOG_STEP);
  for (int c = 0; c < R->ncolumns; c++) {
    const log_column_decl_t *d = &R->column[c];
    h5_series_create(&R->series[c], &L->chk, g, R->path, d->info.name, log_kind_of(L, d->value), (hsize_t)d->cols,
                     d->info.units, d->info.description);
    h5_series_attach_scale(&R->series[c], &R->step, 0);
  }
  log_group_close(L, g, R->path);
}

/* A resumed file's group, declared again: its columns as the declaration says. */
static void reopen_rows(log_rows_t *R) {
  run_log_t *L = R->L;
  hid_t g = log_group_open(L, R->path, 0);
  for (int c = 0; c < R->ncolumns; c++) {
    const log_column_decl_t *d = &R->column[c];
    h5_series_t *s = &R->series[c];
    h5_series_open(s, &L->chk, g, R->path, d->info.name, log_kind_of(L, d->value).mem_type);
    if (s->ndims != (d->cols ? 2 : 1))
      surge_input_error("%s: %s is %d-D where a Surge log has a %d-D dataset", L->path, s->path, s->ndims,
                        d->cols ? 2 : 1);
    if (h5_series_length(s) != h5_series_length(&R->step))
      surge_input_error("%s: %s has %llu rows where %s/%s has %llu (hint: move the log away to start a new one)",
                        L->path, s->path, (unsigned long long)h5_series_length(s), R->path, LOG_STEP,
                        (unsigned long long)h5_series_length(&R->step));
    if (d->cols && s->cols < (hsize_t)d->cols) h5_series_widen(s, (hsize_t)d->cols);
  }
  log_group_close(L, g, R->path);
}

log_rows_t *run_log_rows(run_log_t *L, const log_group_decl_t *d) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  log_rows_t *R = rows_find(L, d->path);
  if (R && R->declared) surge_runtime_error("log: group %s declared twice", d->path);
  if (!R) R = rows_add(L, d->path);
  if (R->ncolumns) close_columns(R); /* a resumed file's: opened again as declared */
  R->declared = 1;
  R->each_step = d->each_step;
  snprintf(R->feature, sizeof R->feature, "%s", d->feature);
  R->ncolumns = d->ncolumns;
  R->column = xcalloc((size_t)d->ncolumns + 1, sizeof *R->column);
  memcpy(R->column, d->column, sizeof *R->column * (size_t)d->ncolumns);
  R->series = xcalloc((size_t)d->ncolumns + 1, sizeof *R->series);
  if (L->world->rank != 0) return R;
  h5util_quiet_t q = h5util_quiet_begin();
  if (!L->resumed) {
    create_rows(R);
    R->active = 1;
  } else if (R->active) {
    reopen_rows(R);
  } else {
    R->ncolumns = 0; /* a resumed log that began without it: it stays so */
  }
  if (R->active) make_pad(R);
  h5util_quiet_end(q);
  return R;
}

int run_log_rows_active(const log_rows_t *R) { return R && R->active; }

void run_log_append(log_rows_t *R, long step, const void *const *values) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (!R || !R->active) return;
  int64_t s = step;
  h5_series_append(&R->step, &s);
  for (int c = 0; c < R->ncolumns; c++) {
    const log_column_decl_t *d = &R->column[c];
    h5_series_t *sr = &R->series[c];
    if (d->cols == 0 || sr->cols == (hsize_t)d->cols) {
      h5_series_append(sr, values[c]);
      continue;
    }
    // a resumed log wider than this run's rows (more ranks or boundaries before): NaN beyond them
    if (d->value != LOG_VALUE_REAL) surge_runtime_error("log: %s is wider than its rows", sr->path);
    memcpy(R->scratch, R->pad, sizeof(double) * sr->cols);
    memcpy(R->scratch, values[c], sizeof(double) * (size_t)d->cols);
    h5_series_append(sr, R->scratch);
  }
  R->last_step = step;
}

void log_parts_pad(run_log_t *L, long step) {
  for (log_rows_t *R = L->rows; R; R = R->next) {
    if (!R->active || !R->each_step || R->last_step == step) continue;
    int64_t s = step;
    h5_series_append(&R->step, &s);
    static const char *const empty = "";
    for (int c = 0; c < R->ncolumns; c++) {
      log_value_t v = R->column[c].value;
      h5_series_append(&R->series[c], v == LOG_VALUE_REAL ? (const void *)R->pad : v == LOG_VALUE_TEXT ? (const void *)&empty
                                                                                                    : R->zero);
    }
    R->last_step = step;
  }
}

/* ---- a resumed file's groups ---- */

typedef struct found {
  char path[PART_GROUPS_MAX][96];
  int n;
  int over; /* a group past the limits: the file is not one this version resumes */
} found_t;

/* H5Lvisit: every group with a step scale (NAME/step) outside the core groups. */
static herr_t find_step(hid_t root, const char *name, const H5L_info_t *info, void *arg) {
  (void)root;
  (void)info;
  found_t *f = arg;
  size_t n = strlen(name), k = strlen(LOG_STEP);
  if (n <= k || strcmp(name + n - k, LOG_STEP) != 0 || name[n - k - 1] != '/') return 0;
  char group[96];
  if (n - k >= sizeof group || f->n == PART_GROUPS_MAX) {
    f->over = 1;
    return 0;
  }
  snprintf(group, sizeof group, "/%.*s", (int)(n - k - 1), name);
  for (int g = 0; g < LOG_CORE_GROUPS; g++)
    if (strcmp(group, log_group_path[g]) == 0) return 0;
  snprintf(f->path[f->n++], sizeof f->path[0], "%s", group);
  return 0;
}

typedef struct names {
  char name[PART_COLUMNS_MAX][64];
  int n;
  int over; /* a column past the limits */
} names_t;

static herr_t list_dataset(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
  (void)info;
  names_t *nm = arg;
  if (strcmp(name, LOG_STEP) == 0 || h5util_exists(g, name, H5I_DATASET) <= 0) return 0;
  if (nm->n == PART_COLUMNS_MAX || strlen(name) >= sizeof nm->name[0]) {
    nm->over = 1;
    return 0;
  }
  snprintf(nm->name[nm->n++], sizeof nm->name[0], "%s", name);
  return 0;
}

/* Open every column of a found group (its own types), keep its rows through resume_step. */
static void resume_group(run_log_t *L, log_rows_t *R, long resume_step) {
  hid_t g = log_group_open(L, R->path, 0);
  char rows[32] = "", feature[96] = "";
  h5_attr_get_string(g, R->path, LOG_ROWS_ATTR, rows, sizeof rows, &L->chk);
  h5_attr_get_string(g, R->path, LOG_FEATURE_ATTR, feature, sizeof feature, &L->chk);
  R->each_step = strcmp(rows, LOG_ROWS_EACH_STEP) == 0;
  snprintf(R->feature, sizeof R->feature, "%s", feature[0] ? feature : R->path);
  h5_series_open(&R->step, &L->chk, g, R->path, LOG_STEP, H5T_NATIVE_INT64);
  hsize_t keep = log_rows_through(&R->step, resume_step);
  h5_series_truncate(&R->step, keep);
  names_t *nm = xcalloc(1, sizeof *nm);
  h5util_check(&L->chk, H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, list_dataset, nm), "list", R->path);
  if (nm->over) /* a column left uncut would keep rows past the resume step */
    surge_input_error("%s: %s has more than %d datasets or a name of %zu bytes or more (hint: a log of another Surge "
                      "version? move it away to start a new log)", L->path, R->path, PART_COLUMNS_MAX,
                      sizeof nm->name[0]);
  R->series = xcalloc((size_t)nm->n + 1, sizeof *R->series);
  R->column = xcalloc((size_t)nm->n + 1, sizeof *R->column);
  for (int c = 0; c < nm->n; c++) {
    char where[192];
    snprintf(where, sizeof where, "%s/%s", R->path, nm->name[c]);
    hid_t d = h5util_check(&L->chk, H5Dopen2(g, nm->name[c], H5P_DEFAULT), "open", where);
    hid_t ft = h5util_check(&L->chk, H5Dget_type(d), "get the type of", where);
    H5T_class_t cls = H5Tget_class(ft);
    h5util_check(&L->chk, H5Tclose(ft), "close the type of", where);
    h5util_check(&L->chk, H5Dclose(d), "close", where);
    /* padded with NaN, zeros, or empty text */
    log_value_t v = cls == H5T_FLOAT ? LOG_VALUE_REAL : cls == H5T_STRING ? LOG_VALUE_TEXT : LOG_VALUE_COUNT;
    R->column[c].value = v;
    h5_series_open(&R->series[c], &L->chk, g, R->path, nm->name[c], log_kind_of(L, v).mem_type);
    h5_series_truncate(&R->series[c], keep);
    R->ncolumns = c + 1;
  }
  free(nm);
  log_group_close(L, g, R->path);
  R->active = 1;
  make_pad(R);
}

void log_parts_resume(run_log_t *L, long resume_step) {
  found_t *f = xcalloc(1, sizeof *f);
  h5util_check(&L->chk, H5Lvisit(L->file, H5_INDEX_NAME, H5_ITER_INC, find_step, f), "list the groups of", "/");
  if (f->over)
    surge_input_error("%s: more than %d groups with a step scale, or a path of %zu bytes or more (hint: a log of "
                      "another Surge version? move it away to start a new log)", L->path, PART_GROUPS_MAX,
                      sizeof f->path[0]);
  for (int i = 0; i < f->n; i++) resume_group(L, rows_add(L, f->path[i]), resume_step);
  free(f);
}

void log_parts_resume_note(const run_log_t *L, char *buf, size_t n) {
  buf[0] = 0;
  for (const log_rows_t *R = L->rows; R; R = R->next) {
    size_t used = strlen(buf);
    if (R->declared && !R->active)
      snprintf(buf + used, n - used, " with %s (this log began without %s: its rows are not kept)", R->feature,
               R->path);
    else if (!R->declared && R->each_step)
      snprintf(buf + used, n - used, " without %s (its %s rows read NaN from here)", R->feature, R->path);
  }
}

double log_parts_pending_bytes(const run_log_t *L) {
  double bytes = 0;
  for (const log_rows_t *R = L->rows; R; R = R->next) {
    if (!R->active) continue;
    bytes += h5_series_pending_bytes(&R->step);
    for (int c = 0; c < R->ncolumns; c++) bytes += h5_series_pending_bytes(&R->series[c]) + LOG_RESERVE_SERIES_BYTES;
  }
  return bytes;
}

void log_parts_write_pending(run_log_t *L) {
  for (log_rows_t *R = L->rows; R; R = R->next) {
    if (!R->active) continue;
    h5_series_write_pending(&R->step);
    for (int c = 0; c < R->ncolumns; c++) h5_series_write_pending(&R->series[c]);
  }
}

void log_parts_close(run_log_t *L) {
  for (log_rows_t *R = L->rows; R; R = R->next) {
    if (!R->active) continue;
    h5_series_close(&R->step);
    for (int c = 0; c < R->ncolumns; c++) h5_series_close(&R->series[c]);
    R->active = 0;
    R->ncolumns = 0;
  }
}

void log_parts_free(run_log_t *L) {
  for (log_rows_t *R = L->rows, *next; R; R = next) {
    next = R->next;
    free(R->series);
    free(R->column);
    free(R->pad);
    free(R->zero);
    free(R->scratch);
    free(R);
  }
  L->rows = NULL;
}

/* ---- fixed records ---- */

/* The group a rows handle of this run does not keep takes nothing. */
static int takes_nothing(run_log_t *L, const char *path) {
  const log_rows_t *R = rows_find(L, path);
  return R && R->declared && !R->active;
}

void run_log_attrs(run_log_t *L, const char *path, const log_attr_t *attr, int nattr) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (L->world->rank != 0 || takes_nothing(L, path)) return;
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t g = log_group_open(L, path, !path_exists(L, path));
  for (int i = 0; i < nattr; i++) {
    const log_attr_t *a = &attr[i];
    switch (a->value) {
    case LOG_VALUE_REAL: h5_attr_put_double(g, path, a->name, a->real, &L->chk); break;
    case LOG_VALUE_INT:
    case LOG_VALUE_COUNT: h5_attr_put_int64(g, path, a->name, a->integer, &L->chk); break;
    case LOG_VALUE_TEXT: h5_attr_put_string(g, path, a->name, a->text ? a->text : "", &L->chk); break;
    }
  }
  log_group_close(L, g, path);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_table(run_log_t *L, const char *path, const log_column_decl_t *column, const void *const *values,
                   int ncolumns, size_t n, const char *text_name, const char *text) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  if (path_exists(L, path)) h5util_check(&L->chk, H5Ldelete(L->file, path, H5P_DEFAULT), "replace", path);
  hid_t g = log_group_open(L, path, 1);
  for (int c = 0; c < ncolumns; c++) {
    const log_series_info_t *info = &column[c].info;
    if (values[c])
      h5_array_put(g, path, info->name, log_kind_of(L, column[c].value), n, values[c], info->units, info->description,
                   &L->chk);
  }
  if (text) h5_text_put(g, path, text_name, text, &L->chk);
  log_group_close(L, g, path);
  log_flush(L);
  h5util_quiet_end(q);
}
