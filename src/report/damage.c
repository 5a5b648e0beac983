/* What a damaged log lacks (report.h): the columns io/log_read.c kept without their values. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"

/* One line per damaged column of group t into lines (grown), e.g. "/metrics/lr: missing from the log". */
static void table_damage(const log_table_t *t, const char *group, char ***lines, int *n) {
  for (int i = 0; i < t->ncol; i++) {
    const log_column_t *c = &t->col[i];
    if (!c->missing && !c->short_by) continue;
    char line[256];
    if (c->missing)
      snprintf(line, sizeof line, "%s/%s: missing from the log", group, c->name);
    else
      snprintf(line, sizeof line, "%s/%s: %zu of its rows missing from the log (a damaged file, not a kill during a "
                                  "flush: that loses at most one flush)", group, c->name, c->short_by);
    *lines = xrealloc(*lines, (size_t)(*n + 1) * sizeof **lines);
    (*lines)[(*n)++] = xstrdup(line);
  }
}

char **report_damage(const log_data_t *L, int *n) {
  char **lines = NULL;
  *n = 0;
  table_damage(&L->metrics, log_group_path[LOG_METRICS], &lines, n);
  table_damage(&L->phases, log_group_path[LOG_RANKS], &lines, n);
  table_damage(&L->eval, log_group_path[LOG_EVAL], &lines, n);
  table_damage(&L->mux.series, log_group_path[LOG_MULTIPLEX], &lines, n);
  return lines;
}

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
  char line[256];
  for (int g = 0; g < LOG_GROUP_COUNT; g++)
    if (report_dropped(L, g, line, sizeof line)) fprintf(stderr, "surge-report: warning: %s: %s\n", L->path, line);
}

int report_dropped(const log_data_t *L, int group, char *buf, size_t n) {
  const log_table_t *t = group == LOG_METRICS ? &L->metrics : group == LOG_RANKS ? &L->phases
                         : group == LOG_EVAL  ? &L->eval    : group == LOG_MULTIPLEX ? &L->mux.series : NULL;
  if (!t || !t->rows_dropped) return 0;
  snprintf(buf, n, "%s: %zu incomplete row%s left out (a kill during a flush leaves datasets of unequal length)",
           log_group_path[group], t->rows_dropped, t->rows_dropped == 1 ? "" : "s");
  return 1;
}
