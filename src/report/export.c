/* CSV and JSON export of one run (every logged step) or of the table of many runs. CSV follows
 * RFC 4180 (fields with commas, quotes or line breaks quoted; numbers with 15 significant digits;
 * no value is an empty field). JSON is built with cJSON (libcjson), which escapes strings and
 * prints NaN as null. */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"

/* ---- output files ---- */

static FILE *out_open(const char *path) {
  if (strcmp(path, "-") == 0) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) surge_runtime_error("%s: cannot write: %s (hint: does the directory exist?)", path, strerror(errno));
  return f;
}

static void out_close(FILE *f, const char *path) {
  int failed = ferror(f);
  if (f == stdout) failed |= fflush(f) != 0;
  else failed |= fclose(f) != 0;
  if (failed) surge_runtime_error("%s: cannot write: %s (hint: is the disk full?)", path, strerror(errno));
}

/* ---- CSV ---- */

static void csv_text(FILE *f, const char *s, int first) {
  if (!first) fputc(',', f);
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void csv_number(FILE *f, double x, int first) {
  if (!first) fputc(',', f);
  if (!isnan(x)) fprintf(f, "%.15g", x);
}

/* The CSV header of a group's columns: each (2-D: each of its first `cols` columns, "_rK", one rank's
 * included). */
static void csv_group_header(FILE *f, const log_table_t *g, const char *prefix, const char *skip, size_t cols) {
  for (int i = 0; i < g->ncol; i++) {
    const char *name = g->col[i].name;
    if (skip && strcmp(name, skip) == 0) continue;
    if (!g->per_column) {
      fprintf(f, ",%s%s", prefix, name);
      continue;
    }
    for (size_t r = 0; r < cols; r++) fprintf(f, ",%s%s_r%zu", prefix, name, r);
  }
}

/* Row `row` of a group's columns (row < 0: a row the group does not have, every field empty). */
static void csv_group_row(FILE *f, const log_table_t *g, long row, const char *skip, size_t cols) {
  for (int i = 0; i < g->ncol; i++) {
    const log_column_t *c = &g->col[i];
    if (skip && strcmp(c->name, skip) == 0) continue;
    size_t n = g->per_column ? cols : 1;
    for (size_t j = 0; j < n; j++) csv_number(f, row < 0 ? NAN : c->v[(size_t)row * c->cols + j], 0);
  }
}

/* The parts' series with a row per /metrics row (report_view_t.step_series), *n of them. */
static const log_table_t **step_series_of(const log_data_t *L, int *n) {
  int nviews;
  const report_view_t *const *view = report_views(&nviews);
  const log_table_t **t = xcalloc((size_t)nviews + 1, sizeof *t);
  *n = 0;
  for (int i = 0; i < nviews; i++) {
    const void *data = log_part_data(L, view[i]->part);
    if (data && view[i]->step_series) t[(*n)++] = view[i]->step_series(data);
  }
  return t;
}

void report_export_run_csv(const char *path, const log_data_t *L) {
  FILE *f = out_open(path);
  const log_column_t *mstep = log_column(&L->metrics, LOG_STEP), *estep = log_column(&L->eval, LOG_STEP);
  fputs("step", f);
  csv_group_header(f, &L->metrics, "", LOG_STEP, 1);
  csv_group_header(f, &L->eval, "eval_", LOG_STEP, 1);
  csv_group_header(f, &L->phases, "", NULL, L->phase_ranks);
  int nseries;
  const log_table_t **series = step_series_of(L, &nseries);
  for (int k = 0; k < nseries; k++) csv_group_header(f, series[k], "", LOG_STEP, 1);
  fputc('\n', f);
  /* the union of the /metrics and /eval steps, both ascending */
  size_t i = 0, j = 0, nm = L->metrics.rows, ne = estep ? L->eval.rows : 0;
  while (i < nm || j < ne) {
    double step = i < nm && (j >= ne || mstep->v[i] <= estep->v[j]) ? mstep->v[i] : estep->v[j];
    long mrow = i < nm && mstep->v[i] == step ? (long)i++ : -1;
    long erow = j < ne && estep->v[j] == step ? (long)j++ : -1;
    csv_number(f, step, 1);
    csv_group_row(f, &L->metrics, mrow, LOG_STEP, 1);
    csv_group_row(f, &L->eval, erow, LOG_STEP, 1);
    csv_group_row(f, &L->phases, mrow < (long)L->phases.rows ? mrow : -1, NULL, L->phase_ranks);
    for (int k = 0; k < nseries; k++) csv_group_row(f, series[k], mrow < (long)series[k]->rows ? mrow : -1, LOG_STEP, 1);
    fputc('\n', f);
  }
  free(series);
  out_close(f, path);
}

void report_export_table_csv(const char *path, const report_table_t *t) {
  FILE *f = out_open(path);
  for (int c = 0; c < t->ncol; c++) csv_text(f, t->col[c], c == 0);
  fputc('\n', f);
  for (int r = 0; r < t->nrow; r++) {
    for (int c = 0; c < t->ncol; c++) {
      const report_cell_t *x = &t->cell[r * t->ncol + c];
      if (x->is_num) csv_number(f, x->num, c == 0);
      else if (x->missing) csv_number(f, NAN, c == 0);
      else csv_text(f, x->text, c == 0);
    }
    fputc('\n', f);
  }
  out_close(f, path);
}

/* ---- JSON ---- */

static cJSON *made(cJSON *item) {
  if (!item) surge_runtime_error("out of memory building the JSON export");
  return item;
}

static void put(cJSON *obj, const char *name, cJSON *item) {
  if (!cJSON_AddItemToObject(obj, name, made(item))) surge_runtime_error("cannot build the JSON export");
}

static void append(cJSON *array, cJSON *item) {
  if (!cJSON_AddItemToArray(array, made(item))) surge_runtime_error("cannot build the JSON export");
}

static cJSON *json_number(double x) { return made(isnan(x) ? cJSON_CreateNull() : cJSON_CreateNumber(x)); }

static void json_write(const char *path, cJSON *root) {
  char *text = cJSON_Print(root);
  if (!text) surge_runtime_error("out of memory printing the JSON export");
  FILE *f = out_open(path);
  fputs(text, f);
  fputc('\n', f);
  out_close(f, path);
  cJSON_free(text);
  cJSON_Delete(root);
}

/* {"name": [values], ...} of a group's first `rows` rows: 1-D columns as arrays of numbers, 2-D
 * ones (one column included) as arrays of rows of `cols` numbers. Units go to units["GROUP/name"]. */
static cJSON *json_group(const log_table_t *g, const char *group, size_t cols, cJSON *units) {
  cJSON *obj = made(cJSON_CreateObject());
  for (int i = 0; i < g->ncol; i++) {
    const log_column_t *c = &g->col[i];
    cJSON *values;
    if (!g->per_column) {
      values = made(cJSON_CreateDoubleArray(c->v, (int)g->rows));
    } else {
      values = made(cJSON_CreateArray());
      for (size_t r = 0; r < g->rows; r++) append(values, cJSON_CreateDoubleArray(&c->v[r * c->cols], (int)cols));
    }
    put(obj, c->name, values);
    char where[160];
    snprintf(where, sizeof where, "%s/%s", group, c->name);
    if (c->units[0]) put(units, where, cJSON_CreateString(c->units));
  }
  return obj;
}

static void put_at(cJSON *obj, const char *name, report_at_t a) {
  char step_name[64];
  snprintf(step_name, sizeof step_name, "%s_step", name);
  put(obj, name, json_number(a.value));
  put(obj, step_name, json_number(a.step));
}

static cJSON *json_values(const log_data_t *L) {
  report_values_t v = report_values(L);
  cJSON *o = made(cJSON_CreateObject());
  put(o, "steps", json_number((double)v.steps));
  put(o, "first_step", json_number(v.first_step));
  put(o, "last_step", json_number(v.last_step));
  put_at(o, "final_loss", v.final_loss);
  put_at(o, "best_loss", v.best_loss);
  put_at(o, "final_eval_loss", v.final_eval_loss);
  put_at(o, "best_eval_loss", v.best_eval_loss);
  put_at(o, "final_accuracy", v.final_accuracy);
  put_at(o, "best_accuracy", v.best_accuracy);
  put(o, "samples_per_sec", json_number(v.samples_per_sec));
  put(o, "step_time_mean", json_number(v.step_mean));
  put(o, "step_time_median", json_number(v.step_median));
  put(o, "step_time_min", json_number(v.step_min));
  put(o, "step_time_max", json_number(v.step_max));
  return o;
}

static cJSON *json_run_attributes(const log_data_t *L) {
  cJSON *o = made(cJSON_CreateObject());
  const struct {
    const char *name, *value;
  } strings[] = {{"program", L->program}, {"version", L->version}, {"start_time", L->start_time},
                 {"layout", L->layout},   {"model", L->model},     {"run_id", L->run_id}};
  const struct {
    const char *name;
    long long value;
  } ints[] = {{"ranks", L->ranks},
              {"parameters", L->parameters},
              {"global_batch", L->global_batch},
              {"flush_every", L->flush_every}};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    put(o, strings[i].name, strings[i].value[0] ? cJSON_CreateString(strings[i].value) : cJSON_CreateNull());
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    put(o, ints[i].name, json_number(ints[i].value < 0 ? NAN : (double)ints[i].value));
  return o;
}

/* An object a view fills (report_json_t), and the units the export gathers. */
struct report_json {
  cJSON *o, *units;
};

void report_json_string(report_json_t *o, const char *name, const char *value) {
  put(o->o, name, value[0] ? cJSON_CreateString(value) : cJSON_CreateNull());
}

void report_json_number(report_json_t *o, const char *name, double value) { put(o->o, name, json_number(value)); }

void report_json_table(report_json_t *o, const char *name, const log_table_t *t, const char *group, size_t cols) {
  put(o->o, name, json_group(t, group, cols, o->units));
}

/* Each part's view's object (report_view_t.json) under its key. */
static void json_parts(cJSON *root, const log_data_t *L, cJSON *units) {
  int nviews;
  const report_view_t *const *view = report_views(&nviews);
  for (int i = 0; i < nviews; i++) {
    const void *data = log_part_data(L, view[i]->part);
    if (!data || !view[i]->json) continue;
    report_json_t o = {made(cJSON_CreateObject()), units};
    view[i]->json(&o, data);
    put(root, view[i]->json_key, o.o);
  }
}

void report_export_run_json(const char *path, const log_data_t *L) {
  cJSON *root = made(cJSON_CreateObject());
  cJSON *units = made(cJSON_CreateObject());
  put(root, "log", cJSON_CreateString(L->path));
  put(root, "run", json_run_attributes(L));
  cJSON *settings = made(cJSON_CreateObject());
  for (int i = 0; i < L->nsettings; i++) put(settings, L->setting[i].key, cJSON_CreateString(L->setting[i].value));
  put(root, "settings", settings);
  put(root, "summary", json_values(L));
  put(root, "metrics", json_group(&L->metrics, "/metrics", 1, units));
  put(root, "ranks", json_group(&L->phases, "/ranks", L->phase_ranks, units));
  put(root, "eval", json_group(&L->eval, "/eval", 1, units));
  json_parts(root, L, units);
  cJSON *events = made(cJSON_CreateArray());
  for (size_t i = 0; i < L->nevents; i++) {
    cJSON *e = made(cJSON_CreateObject());
    put(e, "step", json_number(L->event_step[i]));
    put(e, "text", cJSON_CreateString(L->event_text[i]));
    append(events, e);
  }
  put(root, "events", events);
  cJSON *damaged = made(cJSON_CreateArray());
  int ndamaged;
  char **lines = report_damage(L, &ndamaged);
  for (int i = 0; i < ndamaged; i++) append(damaged, cJSON_CreateString(lines[i]));
  report_damage_free(lines, ndamaged);
  put(root, "damaged", damaged);
  put(root, "units", units);
  json_write(path, root);
}

void report_export_table_json(const char *path, const report_table_t *t) {
  cJSON *root = made(cJSON_CreateArray());
  for (int r = 0; r < t->nrow; r++) {
    cJSON *row = made(cJSON_CreateObject());
    for (int c = 0; c < t->ncol; c++) {
      const report_cell_t *x = &t->cell[r * t->ncol + c];
      put(row, t->col[c],
          x->is_num ? cJSON_CreateNumber(x->num) : x->missing ? cJSON_CreateNull() : cJSON_CreateString(x->text));
    }
    append(root, row);
  }
  json_write(path, root);
}
