/* What a damaged log lacks (report.h): the columns io/log_read.c kept without their values. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"

/* One line per damaged column of group t into lines (grown), e.g. "/metrics/lr: missing from the log". */
static void push_line(const char *line, char ***lines, int *n) {
  *lines = xrealloc(*lines, (size_t)(*n + 1) * sizeof **lines);
  (*lines)[(*n)++] = xstrdup(line);
}

static void table_damage(const log_table_t *t, const char *group, char ***lines, int *n) {
  for (int i = 0; i < t->ncol; i++) {
    const log_column_t *c = &t->col[i];
    char line[256];
    if (c->missing) {
      snprintf(line, sizeof line, "%s/%s: missing from the log", group, c->name);
      push_line(line, lines, n);
    }
    if (c->short_by) {
      snprintf(line, sizeof line, "%s/%s: %zu of its rows missing from the log (a damaged file, not a kill during a "
                                  "flush: that loses at most one flush)", group, c->name, c->short_by);
      push_line(line, lines, n);
    }
    if (c->short_cols) {
      snprintf(line, sizeof line, "%s/%s: the columns of its last %zu of %zu ranks missing from the log (/ranks/rank "
               "names them all)", group, c->name, c->short_cols, c->cols);
      push_line(line, lines, n);
    }
  }
}

/* Lines about each group's table: the core groups, then the parts' per-step series. */
typedef void (*table_lines_fn)(const log_table_t *t, const char *group, char ***lines, int *n);

static char **lines_of_tables(const log_data_t *L, table_lines_fn fn, int *n) {
  char **lines = NULL;
  *n = 0;
  fn(&L->metrics, log_group_path[LOG_METRICS], &lines, n);
  fn(&L->phases, log_group_path[LOG_RANKS], &lines, n);
  fn(&L->eval, log_group_path[LOG_EVAL], &lines, n);
  int nviews;
  const report_view_t *const *view = report_views(&nviews);
  for (int i = 0; i < nviews; i++) {
    const void *data = log_part_data(L, view[i]->part);
    if (data && view[i]->step_series) fn(view[i]->step_series(data), view[i]->series_group, &lines, n);
  }
  return lines;
}

char **report_damage(const log_data_t *L, int *n) { return lines_of_tables(L, table_damage, n); }

void report_damage_free(char **lines, int n) {
  for (int i = 0; i < n; i++) free(lines[i]);
  free(lines);
}

void report_damage_warn(const log_data_t *L) {
  int n;
  char **lines = report_damage(L, &n);
  for (int i = 0; i < n; i++)
    fprintf(stderr, "surge-report: warning: %s: %s (shown without values)\n", L->path, lines[i]);
  report_damage_free(lines, n);
  lines = report_dropped_lines(L, &n);
  for (int i = 0; i < n; i++) fprintf(stderr, "surge-report: warning: %s: %s\n", L->path, lines[i]);
  report_damage_free(lines, n);
}

/* The line of one group's dropped rows, appended to lines. */
static void add_dropped(const log_table_t *t, const char *group, char ***lines, int *n) {
  char line[256];
  if (!report_dropped(t, group, line, sizeof line)) return;
  push_line(line, lines, n);
}

char **report_dropped_lines(const log_data_t *L, int *n) { return lines_of_tables(L, add_dropped, n); }

int report_dropped(const log_table_t *t, const char *group, char *buf, size_t n) {
  if (!t || !t->rows_dropped) return 0;
  snprintf(buf, n, "%s: %zu incomplete row%s left out (a kill during a flush leaves datasets of unequal length)",
           group, t->rows_dropped, t->rows_dropped == 1 ? "" : "s");
  return 1;
}
