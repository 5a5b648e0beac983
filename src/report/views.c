/* The views of a log's parts, as their owners register them (report/report.h). */
#include <stddef.h>

#include "core/error.h"
#include "report/report.h"

enum { VIEWS_MAX = 16 };
static const report_view_t *views[VIEWS_MAX];
static int nviews;

void report_view_register(const report_view_t *view) {
  for (int i = 0; i < nviews; i++)
    if (views[i] == view) return;
  if (nviews == VIEWS_MAX) surge_runtime_error("surge-report: more than %d views registered", VIEWS_MAX);
  views[nviews++] = view;
}

const report_view_t *const *report_views(int *n) {
  *n = nviews;
  return views;
}
