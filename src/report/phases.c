/* What the report knows about the phases of a step and the columns of a log: their order, the
 * category each phase counts under, and its colour. A phase or column it does not know still
 * shows, after the known ones (a newer log's additions need no change here to be reported). */
#include <string.h>

#include "report/report.h"

/* Phases in the order they run within a step (io/log.h), with colours from the Okabe-Ito palette,
 * which people with colour-vision deficiencies tell apart. */
static const report_phase_kind_t known_phases[] = {
    {"data", "data", "#BBBBBB", 0},
    {"forward", "compute", "#0072B2", 1},
    {"backward", "compute", "#56B4E9", 2},
    {"wait", "waiting", "#E69F00", 3},
    {"comm", "communication", "#D55E00", 4},
    {"optimizer", "compute", "#009E73", 5},
};
enum { NKNOWN_PHASES = sizeof known_phases / sizeof known_phases[0] };

const char *const report_phase_categories[] = {"compute", "data", "communication", "waiting", "other", NULL};

report_phase_kind_t report_phase_kind(const char *name) {
  for (int i = 0; i < NKNOWN_PHASES; i++)
    if (strcmp(known_phases[i].name, name) == 0) return known_phases[i];
  return (report_phase_kind_t){name, "other", "#CC79A7", NKNOWN_PHASES};
}

/* Known columns of each group in the order of doc/formats.md. */
static const char *const metrics_order[] = {"step",     "loss",       "lr",
                                            "grad_norm", "step_time", "samples_per_sec",
                                            "bytes_dp", "bytes_activation", "bytes_activation_grad",
                                            "bytes_embedding", "bytes_other", NULL};
static const char *const eval_order[] = {"step", "loss", "accuracy", NULL};

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
  return index_in(metrics_order, name);
}
