/* What the report knows about the phases of a step and the columns of a log: their order, the
 * category each phase counts under, and its colour. A phase or column it does not know still
 * shows, after the known ones (a newer log's additions need no change here to be reported). */
#include <math.h>
#include <string.h>

#include "report/report.h"

/* Phases in the order they run within a step (io/log.h), with colours from the Okabe-Ito palette,
 * which people with colour-vision deficiencies tell apart. The multiplexed runs' two phases
 * (io/log.h: PHASE_BACKGROUND, PHASE_PAUSED) overlap the others: a foreground's partner runs while
 * the foreground waits, and a background pauses at its gate inside its data, forward, backward or
 * optimizer phase. Their colours (Paul Tol's wine and olive) differ from the palette's. */
static const report_phase_kind_t known_phases[] = {
    {"data", "data", "#BBBBBB", 0, NULL},
    {"forward", "compute", "#0072B2", 1, NULL},
    {"backward", "compute", "#56B4E9", 2, NULL},
    {"wait", "waiting", "#E69F00", 3, NULL},
    {"comm", "communication", "#D55E00", 4, NULL},
    {"optimizer", "compute", "#009E73", 5, NULL},
    {"background", "background", "#882255", 6, "partner ran"},
    {"paused", "paused", "#999933", 7, "at the gate"},
};
enum { NKNOWN_PHASES = sizeof known_phases / sizeof known_phases[0] };

const char *const report_phase_categories[] = {"compute",    "data",  "communication", "waiting", "other",
                                               "background", "paused", NULL};

report_phase_kind_t report_phase_kind(const char *name) {
  for (int i = 0; i < NKNOWN_PHASES; i++)
    if (strcmp(known_phases[i].name, name) == 0) return known_phases[i];
  return (report_phase_kind_t){name, "other", "#CC79A7", NKNOWN_PHASES, NULL};
}

int report_phase_shown(const report_log_t *L, int p) {
  const report_column_t *c = &L->phases.col[p];
  if (!report_phase_kind(c->name + strlen("phase_")).overlap) return 1;
  for (size_t i = 0; i < L->phases.rows * c->cols; i++)
    if (isfinite(c->v[i]) && c->v[i] != 0) return 1;
  return 0;
}

/* Known columns of each group in the order of doc/formats.md. */
static const char *const metrics_order[] = {"step",     "loss",       "lr",
                                            "grad_norm", "step_time", "samples_per_sec",
                                            "bytes_dp", "bytes_activation", "bytes_activation_grad",
                                            "bytes_embedding", "bytes_other", NULL};
static const char *const eval_order[] = {"step", "loss", "accuracy", NULL};
static const char *const multiplex_order[] = {"step", "foreground_samples_per_sec", "background_samples_per_sec",
                                              "total_samples_per_sec", "background_ranks_active", NULL};

static int index_in(const char *const *names, const char *name) {
  int i = 0;
  for (; names[i]; i++)
    if (strcmp(names[i], name) == 0) return i;
  return i;
}

int report_column_rank(const char *group, const char *name) {
  if (strcmp(group, "/ranks") == 0)
    return strncmp(name, "phase_", 6) == 0 ? report_phase_kind(name + 6).order : NKNOWN_PHASES + 1;
  if (strcmp(group, "/eval") == 0) return index_in(eval_order, name);
  if (strcmp(group, "/multiplex") == 0) return index_in(multiplex_order, name);
  return index_in(metrics_order, name);
}
