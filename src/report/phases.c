/* What the report knows about the phases of a step: the category each phase counts under, and its
 * colour. A phase it does not know still shows, after the known ones (a newer log's additions need
 * no change here to be reported). */
#include <math.h>
#include <string.h>

#include "io/log_format.h"
#include "report/report.h"

/* Each phase of the log (io/log_format.h) with its category and colour, from the Okabe-Ito palette,
 * which people with colour-vision deficiencies tell apart. The multiplexed runs' three phases
 * (PHASE_BACKGROUND, PHASE_PAUSED, PHASE_OFFERED) overlap the others: a foreground's partner runs
 * while the foreground waits, a background pauses at its gate inside its data, forward, backward or
 * optimizer phase, and a foreground offers its idle and waiting time inside its phases. Their
 * colours (Paul Tol's wine, olive and teal) differ from the palette's. */
static const struct {
  const char *category, *color, *overlap;
} phase_look[PHASE_COUNT] = {
    [PHASE_DATA] = {"data", "#BBBBBB", NULL},
    [PHASE_FORWARD] = {"compute", "#0072B2", NULL},
    [PHASE_BACKWARD] = {"compute", "#56B4E9", NULL},
    [PHASE_WAIT] = {"waiting", "#E69F00", NULL},
    [PHASE_COMM] = {"communication", "#D55E00", NULL},
    [PHASE_OPTIMIZER] = {"compute", "#009E73", NULL},
    [PHASE_BACKGROUND] = {"background", "#882255", "partner ran"},
    [PHASE_PAUSED] = {"paused", "#999933", "at the gate"},
    [PHASE_OFFERED] = {"offered", "#44AA99", "offered to the partner"},
};

const char *const report_phase_categories[] = {"compute",    "data",  "communication", "waiting", "other",
                                               "background", "paused", "offered", NULL};

report_phase_kind_t report_phase_kind(const char *name) {
  for (int p = 0; p < PHASE_COUNT; p++)
    if (strcmp(log_phase_info[p].name, name) == 0)
      return (report_phase_kind_t){name, phase_look[p].category, phase_look[p].color, phase_look[p].overlap};
  return (report_phase_kind_t){name, "other", "#CC79A7", NULL};
}

int report_phase_shown(const log_data_t *L, int p) {
  const log_column_t *c = &L->phases.col[p];
  if (!report_phase_kind(c->name + strlen(LOG_PHASE_PREFIX)).overlap) return 1;
  for (size_t i = 0; i < L->phases.rows * c->cols; i++)
    if (isfinite(c->v[i]) && c->v[i] != 0) return 1;
  return 0;
}
