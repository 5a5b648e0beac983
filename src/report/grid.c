/* Aligned text grids for the report's tables, and byte counts in binary units. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "report/report.h"

void report_grid_init(report_grid_t *g, int ncol, const char *align) {
  *g = (report_grid_t){.ncol = ncol, .align = align};
}

void report_grid_add(report_grid_t *g, const char *fmt, ...) {
  if (g->ncell == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->cell = xrealloc(g->cell, surge_mul_size((size_t)g->cap, sizeof(char *), "grid cells"));
  }
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *text = xmalloc((size_t)(n > 0 ? n : 0) + 1);
  vsnprintf(text, (size_t)(n > 0 ? n : 0) + 1, fmt, again);
  va_end(again);
  g->cell[g->ncell++] = text;
}

void report_grid_print(FILE *f, const report_grid_t *g, const char *indent) {
  size_t *width = xcalloc((size_t)g->ncol, sizeof(size_t));
  for (int i = 0; i < g->ncell; i++) {
    size_t w = strlen(g->cell[i]);
    if (w > width[i % g->ncol]) width[i % g->ncol] = w;
  }
  size_t nalign = strlen(g->align);
  for (int i = 0; i < g->ncell; i++) {
    int j = i % g->ncol;
    if (j == 0) fputs(indent, f);
    int w = (int)width[j], last = j == g->ncol - 1 || i == g->ncell - 1;
    if (g->align[(size_t)j < nalign ? (size_t)j : nalign - 1] == 'r') fprintf(f, "%*s", w, g->cell[i]);
    else fprintf(f, "%-*s", last ? 0 : w, g->cell[i]);
    fputs(last ? "\n" : "  ", f);
  }
  free(width);
}

void report_grid_free(report_grid_t *g) {
  for (int i = 0; i < g->ncell; i++) free(g->cell[i]);
  free(g->cell);
  *g = (report_grid_t){0};
}

void report_format_bytes(double bytes, char *buf, size_t n) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (fabs(bytes) >= 1024 && u < 5) {
    bytes /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, n, "%.0f B", bytes);
  else snprintf(buf, n, "%.*f %s", fabs(bytes) < 10 ? 2 : fabs(bytes) < 100 ? 1 : 0, bytes, unit[u]);
}
