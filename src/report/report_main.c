/* The surge-report command line: read the logs, then print a summary (one log) or a table (several),
 * and export and plot as asked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "surge_build_config.h"
#include "core/cli.h"
#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"

static const char usage[] =
    "usage: surge-report [options] LOG.h5 [LOG.h5 ...]\n"
    "       surge-report [--plot DIR] SIM.h5      (a surge-sim file: summary and figures, doc/sim.md)\n"
    "  One log: a summary of the run (settings, final and best metrics, throughput, multiplexing,\n"
    "  time per phase and rank, bytes per traffic category, events). Several logs (a sweep): one\n"
    "  table, a row per run, with the settings that differ between the runs as columns.\n"
    "  --sort COLUMN   order the table by COLUMN, numerically when all its values are numbers\n"
    "  --desc          sort in descending order\n"
    "  --table         print (and export) the table even for one log\n"
    "  --csv FILE      export as CSV: one log, every step; several, the table ('-': standard output)\n"
    "  --json FILE     export as JSON: one log, all of it; several, the table ('-': standard output)\n"
    "  --plot DIR      write SVG figures into DIR: loss.svg, accuracy.svg, timeline.svg or\n"
    "                  timeline-K.svg (the run in row K of the table), and the figures of a\n"
    "                  log's parts, such as a Gantt chart of a step (doc/report.md)\n"
    "  --step N        the step the timelines show (default: each run's step of median step time)\n"
    "  --deck          print the resolved deck stored in the log (a deck that repeats the run;\n"
    "                  it names the run's own output paths)\n"
    "  --help, --version\n"
    "Exit status: 0; 2 for bad input (a file that is not a Surge log is named); 1 for other failures.\n"
    "Guide: doc/report.md; the log format: doc/formats.md.\n";

typedef struct options {
  const char *sort, *csv, *json, *plot;
  double step; /* -1: the median-time step */
  int desc, table, deck;
  int nlogs;
  const char **logs;
} options_t;

/* The value of option argv[*i] (given as "--opt VALUE" or "--opt=VALUE"), or NULL when argv[*i] is
 * not `name`. */
static const char *option_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n] != '\0') return NULL;
  if (*i + 1 >= argc) surge_input_error("%s needs a value (try --help)", name);
  return argv[++*i];
}

static double parse_step(const char *text) {
  char *end;
  double v = strtod(text, &end);
  if (!text[0] || *end || !isfinite(v) || v < 0 || v != floor(v))
    surge_input_error("--step %s: not a step number (hint: a whole number such as 100)", text);
  return v;
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.step = -1, .logs = xcalloc((size_t)argc, sizeof(char *))};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    cli_help_or_version(a, argv[0], usage);
    if (strcmp(a, "--desc") == 0) {
      o->desc = 1;
    } else if (strcmp(a, "--table") == 0) {
      o->table = 1;
    } else if (strcmp(a, "--deck") == 0) {
      o->deck = 1;
    } else if ((v = option_value(argc, argv, &i, "--sort"))) {
      o->sort = v;
    } else if ((v = option_value(argc, argv, &i, "--csv"))) {
      o->csv = v;
    } else if ((v = option_value(argc, argv, &i, "--json"))) {
      o->json = v;
    } else if ((v = option_value(argc, argv, &i, "--plot"))) {
      o->plot = v;
    } else if ((v = option_value(argc, argv, &i, "--step"))) {
      o->step = parse_step(v);
    } else if (a[0] == '-' && a[1]) {
      surge_input_error("unknown option '%s' (try --help)", a);
    } else {
      o->logs[o->nlogs++] = a;
    }
  }
  if (o->nlogs == 0) surge_input_error("no log given (usage: surge-report [options] LOG.h5 ...; try --help)");
  if (o->desc && !o->sort) surge_input_error("--desc needs --sort COLUMN (try --help)");
  if (o->step >= 0 && !o->plot) surge_input_error("--step chooses the step of the --plot timelines; give --plot DIR too");
  if (o->deck && o->nlogs != 1) surge_input_error("--deck prints the deck of one log; %d given", o->nlogs);
  if (o->csv && o->json && strcmp(o->csv, "-") == 0 && strcmp(o->json, "-") == 0)
    surge_input_error("--csv - and --json - both ask for standard output; send one of them to a file");
}

/* --step names a step every log holds (checked before anything is printed). */
static void check_step(log_data_t *const *logs, const options_t *o) {
  if (o->step < 0) return;
  for (int i = 0; i < o->nlogs; i++) {
    const log_data_t *L = logs[i];
    if (report_row_of_step(L, o->step) >= 0) continue;
    const log_column_t *s = log_column(&L->metrics, LOG_STEP);
    if (!L->metrics.rows) surge_input_error("%s: --step %.0f: the log holds no steps yet", L->path, o->step);
    surge_input_error("%s: --step %.0f: no such step in the log (hint: it holds steps %.0f to %.0f)", L->path,
                      o->step, s->v[0], s->v[L->metrics.rows - 1]);
  }
}

static void sort_table(report_table_t *t, const options_t *o) {
  if (!o->sort) return;
  int c = report_table_column(t, o->sort);
  if (c < 0) {
    char names[1024] = "";
    for (int j = 0; j < t->ncol && strlen(names) + strlen(t->col[j]) + 3 < sizeof names; j++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? ", " : "", t->col[j]);
    surge_input_error("--sort %s: no such column (hint: the columns are %s)", o->sort, names);
  }
  report_table_sort(t, c, o->desc);
}

int report_main(int argc, char **argv) {
  options_t o;
  parse_options(argc, argv, &o);
  report_outputs_check((const char *const *)o.logs, o.nlogs, o.csv, o.json, o.plot, o.nlogs); /* before any file is written */
  if (o.nlogs == 1 && report_sim_is(o.logs[0])) { /* a surge-sim file: its own summary and figures */
    const char *log_only = o.csv ? "--csv" : o.json ? "--json" : o.sort ? "--sort" : o.step >= 0 ? "--step"
                         : o.deck ? "--deck" : o.table ? "--table" : NULL;
    if (log_only)
      surge_input_error("%s: %s applies to training logs; a surge-sim file prints its summary, and --plot DIR "
                        "draws its figures", o.logs[0], log_only);
    report_sim(o.logs[0], o.plot, stdout);
    free(o.logs);
    return 0;
  }
  log_data_t **logs = xcalloc((size_t)o.nlogs, sizeof *logs);
  for (int i = 0; i < o.nlogs; i++) {
    logs[i] = log_read(o.logs[i]);
    report_damage_warn(logs[i]);
  }
  check_step(logs, &o);
  if (o.deck) {
    fputs(logs[0]->deck, stdout);
  } else {
    int as_table = o.nlogs > 1 || o.table;
    int stdout_taken = (o.csv && strcmp(o.csv, "-") == 0) || (o.json && strcmp(o.json, "-") == 0);
    report_table_t *t = report_table_build((const log_data_t *const *)logs, o.nlogs);
    sort_table(t, &o);
    if (!stdout_taken) {
      if (as_table) report_table_print(stdout, t);
      else report_summary_print(stdout, logs[0]);
    }
    if (o.csv) {
      if (as_table) report_export_table_csv(o.csv, t);
      else report_export_run_csv(o.csv, logs[0]);
    }
    if (o.json) {
      if (as_table) report_export_table_json(o.json, t);
      else report_export_run_json(o.json, logs[0]);
    }
    if (o.plot) {
      FILE *info = stdout_taken ? stderr : stdout;
      fprintf(info, "%sFigures\n", stdout_taken ? "" : "\n");
      report_figures_write(o.plot, t, o.step, info);
    }
    report_table_free(t);
  }
  for (int i = 0; i < o.nlogs; i++) log_data_free(logs[i]);
  free(logs);
  free(o.logs);
  return 0;
}
