/* The table of many runs (a sweep): one row per log; as columns the log, its steps, the settings
 * that differ between the runs, and the final and best metrics and the throughput; when some log has
 * a part whose view brings columns (report_view_t.table_columns), those too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "report/report.h"

/* Keys that say where a run writes its files: they differ between any two runs of a sweep and the
 * `log` column already names each run, so they are not swept columns. */
static const char *const output_keys[] = {"run.out_dir", "log.file", "checkpoint.dir", NULL};

/* Columns after the swept ones, from report_values(). */
static const char *const value_columns[] = {"final_loss", "best_eval_loss", "best_accuracy", "samples_per_sec", NULL};

static int is_output_key(const char *key) {
  for (int i = 0; output_keys[i]; i++)
    if (strcmp(output_keys[i], key) == 0) return 1;
  return 0;
}

report_cell_t report_text_cell(const char *text) {
  report_cell_t c = {xstrdup(text && text[0] ? text : "-"), NAN, 0, !text || !text[0]};
  if (text && text[0]) {
    char *end;
    double x = strtod(text, &end);
    if (*end == '\0' && isfinite(x)) {
      c.num = x;
      c.is_num = 1;
    }
  }
  return c;
}

/* A number shown with printf format fmt; "-" for NaN. */
report_cell_t report_number_cell(double x, const char *fmt) {
  if (isnan(x)) return (report_cell_t){xstrdup("-"), NAN, 0, 1};
  char buf[64];
  snprintf(buf, sizeof buf, fmt, x);
  return (report_cell_t){xstrdup(buf), x, 1, 0};
}

static int values_differ(const char *a, const char *b) {
  if (!a || !b) return a != b;
  return strcmp(a, b) != 0;
}

/* Every deck key (in the order the logs list them) whose value is not the same in all logs. */
static int swept_keys(const log_data_t *const *logs, int n, const char **key) {
  int nkeys = 0;
  for (int l = 0; l < n; l++)
    for (int i = 0; i < logs[l]->nsettings; i++) {
      const char *k = logs[l]->setting[i].key;
      int seen = 0;
      for (int j = 0; j < nkeys && !seen; j++) seen = strcmp(key[j], k) == 0;
      for (int j = 0; j < l && !seen; j++) seen = log_setting(logs[j], k) != NULL;
      if (seen || is_output_key(k)) continue;
      const char *first = log_setting(logs[0], k);
      int differs = 0;
      for (int m = 1; m < n && !differs; m++) differs = values_differ(first, log_setting(logs[m], k));
      if (differs) key[nkeys++] = k;
    }
  return nkeys;
}

/* The views whose columns the table has: those of a part some log has. */
static int views_shown(const log_data_t *const *logs, int n, const report_view_t **shown) {
  int nviews, k = 0;
  const report_view_t *const *view = report_views(&nviews);
  for (int i = 0; i < nviews; i++) {
    int any = 0;
    for (int l = 0; l < n && !any && view[i]->table_columns; l++) any = log_part_data(logs[l], view[i]->part) != NULL;
    if (any) shown[k++] = view[i];
  }
  return k;
}

static int count_of(const char *const *names) {
  int k = 0;
  while (names[k]) k++;
  return k;
}

static int ranks_differ(const log_data_t *const *logs, int n) {
  for (int l = 1; l < n; l++)
    if (logs[l]->ranks != logs[0]->ranks) return 1;
  return 0;
}

/* A short name of column c for legends: the part after the section, unless another swept column
 * has the same part. */
static const char *short_name(const report_table_t *t, int c) {
  const char *dot = strchr(t->col[c], '.');
  if (!dot) return t->col[c];
  for (int j = 2; j < 2 + t->nswept; j++) {
    const char *other = strchr(t->col[j], '.');
    if (j != c && other && strcmp(other, dot) == 0) return t->col[c];
  }
  return dot + 1;
}

/* Whether swept column c goes into the legend labels: run.name only when nothing else differs (a
 * sweep names each variant after its index; the swept values say more). */
static int in_label(const report_table_t *t, int c) {
  return strcmp(t->col[c], "run.name") != 0 || t->nswept == 1;
}

static void make_labels(report_table_t *t) {
  t->label = xcalloc((size_t)t->nrow, sizeof(char *));
  for (int r = 0; r < t->nrow; r++) {
    if (t->nswept == 0) {
      t->label[r] = xstrdup(t->nrow == 1 ? log_run_name(t->log[r]) : t->log[r]->path);
      continue;
    }
    size_t len = 1;
    for (int c = 2; c < 2 + t->nswept; c++)
      len += strlen(short_name(t, c)) + strlen(t->cell[r * t->ncol + c].text) + 3;
    char *s = xmalloc(len), *p = s;
    for (int c = 2; c < 2 + t->nswept; c++)
      if (in_label(t, c))
        p += sprintf(p, "%s%s=%s", p > s ? ", " : "", short_name(t, c), t->cell[r * t->ncol + c].text);
    t->label[r] = s;
  }
}

report_table_t *report_table_build(const log_data_t *const *logs, int n) {
  report_table_t *t = xcalloc(1, sizeof *t);
  int nkeys_max = 1;
  for (int l = 0; l < n; l++) nkeys_max += logs[l]->nsettings;
  const char **key = xcalloc((size_t)nkeys_max, sizeof(char *));
  int by_ranks = ranks_differ(logs, n);
  int nkeys = swept_keys(logs, n, key);
  int nvalues = count_of(value_columns), nviews_all, nparts = 0;
  report_views(&nviews_all);
  const report_view_t **shown = xcalloc((size_t)nviews_all + 1, sizeof *shown);
  int nshown = views_shown(logs, n, shown);
  for (int i = 0; i < nshown; i++) nparts += count_of(shown[i]->table_columns);
  t->nswept = by_ranks + nkeys;
  t->ncol = 2 + t->nswept + nvalues + nparts;
  t->nrow = n;
  t->col = xcalloc((size_t)t->ncol, sizeof(char *));
  int c = 0;
  t->col[c++] = xstrdup("log");
  t->col[c++] = xstrdup("steps");
  if (by_ranks) t->col[c++] = xstrdup("ranks");
  for (int k = 0; k < nkeys; k++) t->col[c++] = xstrdup(key[k]);
  for (int k = 0; k < nvalues; k++) t->col[c++] = xstrdup(value_columns[k]);
  for (int i = 0; i < nshown; i++)
    for (int k = 0; shown[i]->table_columns[k]; k++) t->col[c++] = xstrdup(shown[i]->table_columns[k]);
  t->cell = xcalloc(surge_mul_size((size_t)n, (size_t)t->ncol, "table cells"), sizeof *t->cell);
  t->log = xcalloc((size_t)n, sizeof *t->log);
  for (int r = 0; r < n; r++) {
    const log_data_t *L = logs[r];
    report_values_t v = report_values(L);
    report_cell_t *row = &t->cell[r * t->ncol];
    t->log[r] = L;
    c = 0;
    row[c++] = report_text_cell(L->path);
    row[c++] = report_number_cell((double)v.steps, "%.0f");
    if (by_ranks) row[c++] = report_number_cell((double)L->ranks, "%.0f");
    for (int k = 0; k < nkeys; k++) row[c++] = report_text_cell(log_setting(L, key[k]));
    row[c++] = report_number_cell(v.final_loss.value, "%.5g");
    row[c++] = report_number_cell(v.best_eval_loss.value, "%.5g");
    row[c++] = report_number_cell(v.best_accuracy.value, "%.4f");
    row[c++] = report_number_cell(v.samples_per_sec, "%.1f");
    for (int i = 0; i < nshown; i++) {
      shown[i]->table_cells(log_part_data(L, shown[i]->part), &row[c]);
      c += count_of(shown[i]->table_columns);
    }
  }
  free(shown);
  free(key);
  make_labels(t);
  return t;
}

int report_table_column(const report_table_t *t, const char *name) {
  for (int c = 0; c < t->ncol; c++)
    if (strcmp(t->col[c], name) == 0) return c;
  return -1;
}

/* Whether every value of column c is a number (runs without a value do not count). */
static int column_is_numeric(const report_table_t *t, int c) {
  for (int r = 0; r < t->nrow; r++) {
    const report_cell_t *x = &t->cell[r * t->ncol + c];
    if (!x->is_num && !x->missing) return 0;
  }
  return 1;
}

typedef struct sort_key {
  int row;
  const report_cell_t *cell;
  int missing, numeric, descending;
} sort_key_t;

static int compare_rows(const void *pa, const void *pb) {
  const sort_key_t *a = pa, *b = pb;
  if (a->missing != b->missing) return a->missing - b->missing;
  int order = 0;
  if (!a->missing) {
    if (a->numeric) order = (a->cell->num > b->cell->num) - (a->cell->num < b->cell->num);
    else order = strcmp(a->cell->text, b->cell->text);
    if (a->descending) order = -order;
  }
  return order ? order : a->row - b->row; /* equal keys keep their order */
}

void report_table_sort(report_table_t *t, int c, int descending) {
  int numeric = column_is_numeric(t, c);
  sort_key_t *k = xcalloc((size_t)t->nrow, sizeof *k);
  for (int r = 0; r < t->nrow; r++) {
    const report_cell_t *x = &t->cell[r * t->ncol + c];
    k[r] = (sort_key_t){r, x, x->missing, numeric, descending};
  }
  qsort(k, (size_t)t->nrow, sizeof *k, compare_rows);
  report_cell_t *cell = xcalloc(surge_mul_size((size_t)t->nrow, (size_t)t->ncol, "table cells"), sizeof *cell);
  const log_data_t **log = xcalloc((size_t)t->nrow, sizeof *log);
  char **label = xcalloc((size_t)t->nrow, sizeof *label);
  for (int r = 0; r < t->nrow; r++) {
    memcpy(&cell[r * t->ncol], &t->cell[k[r].row * t->ncol], (size_t)t->ncol * sizeof *cell);
    log[r] = t->log[k[r].row];
    label[r] = t->label[k[r].row];
  }
  free(t->cell);
  free(t->log);
  free(t->label);
  t->cell = cell;
  t->log = log;
  t->label = label;
  free(k);
}

void report_table_print(FILE *f, const report_table_t *t) {
  char *align = xcalloc((size_t)t->ncol + 1, 1);
  for (int c = 0; c < t->ncol; c++) align[c] = column_is_numeric(t, c) ? 'r' : 'l';
  report_grid_t g;
  report_grid_init(&g, t->ncol, align);
  for (int c = 0; c < t->ncol; c++) report_grid_add(&g, "%s", t->col[c]);
  for (int i = 0; i < t->nrow * t->ncol; i++) report_grid_add(&g, "%s", t->cell[i].text);
  report_grid_print(f, &g, "");
  report_grid_free(&g);
  free(align);
}

void report_table_free(report_table_t *t) {
  if (!t) return;
  for (int i = 0; i < t->nrow * t->ncol; i++) free(t->cell[i].text);
  for (int c = 0; c < t->ncol; c++) free(t->col[c]);
  for (int r = 0; r < t->nrow; r++) free(t->label[r]);
  free(t->cell);
  free(t->col);
  free(t->log);
  free(t->label);
  free(t);
}
