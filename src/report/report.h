/* surge-report: post-run analysis of Surge HDF5 metrics logs (user guide doc/report.md, log layout
 * doc/formats.md). A log is read whole into memory and checked by io/log_read.h (log_read);
 * everything here works on that picture: the text summary of one run, the table of many runs (a
 * sweep), CSV and JSON export, and SVG figures.
 *
 * What newer logs add slots in without touching the reader, which takes every numeric dataset of
 * /metrics, /ranks/phase_* and /eval: a new phase gets its category and colour in phases.c (until
 * then it shows as "other"), a new derived value a column in table.c. The parts of a log (a burst
 * plan, a pipeline, multiplexing: io/log_part.h) bring their own views (report_view_t below), shown
 * when the log has the part: nothing here names them. */
#ifndef SURGE_REPORT_H
#define SURGE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "io/log_read.h"

/* ---- phases of a step (phases.c) ---- */

/* What the summary and the timeline know about a phase (/ranks/phase_<name>; the reader orders the
 * phases as they run, io/log_format.h). A phase the log format does not know is shown after the
 * known ones, in category "other". */
typedef struct report_phase_kind {
  const char *name;     /* "forward" */
  const char *category; /* "compute", "data", "communication", "waiting", "other", "background", "paused" */
  const char *color;    /* fill colour of the timeline, "#rrggbb" */
  const char *overlap;  /* NULL for a part of the step (phases add up to it); else the phase's time lies
                         * within the others' (multiplexing: "partner ran") and is not added */
} report_phase_kind_t;

/* The kind of phase `name` (without the "phase_" prefix). */
report_phase_kind_t report_phase_kind(const char *name);
/* Whether column p of /ranks is shown: every phase, but an overlapping one only when some rank has
 * a nonzero time in it (a multiplexed log holds both overlapping phases; the other role's are 0). */
int report_phase_shown(const log_data_t *log, int p);
/* Categories in the order the summary prints them; NULL-terminated. */
extern const char *const report_phase_categories[];

/* ---- values derived from one run (metrics.c) ---- */

/* A value and the step it was reached at; NaN for both when there is none. */
typedef struct report_at {
  double value, step;
} report_at_t;

typedef struct report_values {
  size_t steps;             /* rows of /metrics */
  double first_step, last_step;
  report_at_t final_loss, best_loss;         /* training loss: last finite, lowest */
  report_at_t final_eval_loss, best_eval_loss;
  report_at_t final_accuracy, best_accuracy; /* /eval/accuracy: last, highest */
  double samples_per_sec;   /* samples of all steps / their summed step time */
  double step_mean, step_median, step_min, step_max; /* /metrics/step_time, s */
} report_values_t;

report_values_t report_values(const log_data_t *log);
/* Samples over seconds of the steps from row first_row on (all rows when there are no more):
 * sum(samples_per_sec * step_time) / sum(step_time); NaN without a timed step. surge-train reads a
 * foreground-only run's speed with it ([multiplex] baseline). */
double report_throughput(const log_data_t *log, size_t first_row);
/* Row of /metrics whose step has the median step time (a typical step); -1 without rows. */
long report_median_row(const log_data_t *log);
/* Row of /metrics holding `step`; -1 when the log has no such row. */
long report_row_of_step(const log_data_t *log, double step);
/* Mean of the finite values of column c over its rows, at column j; NaN when there is none. */
double report_column_mean(const log_column_t *c, size_t rows, size_t j);
/* Sum of the finite values of column c over its rows, at column j; 0 when there is none. */
double report_column_sum(const log_column_t *c, size_t rows, size_t j);
/* Median of the finite values of column c (1-D) over rows; NaN when there is none. */
double report_column_median(const log_column_t *c, size_t rows);

/* ---- damage (damage.c) ---- */

/* One line per column the log lacks in whole or in part (log_column_t's missing, short_by, short_cols), e.g.
 * "/metrics/lr: missing from the log"; malloc'd, *n of them. The summary prints them as notes, the
 * JSON export lists them under "damaged", and surge-report warns of them on standard error. */
char **report_damage(const log_data_t *log, int *n);
void report_damage_free(char **lines, int n);
/* The lines above on standard error, "surge-report: warning: LOG: ... (shown without values)". */
void report_damage_warn(const log_data_t *log);
/* The rows of a group (table t at group path) left out because some of its columns had them and
 * others not, said in buf: 1, or 0 when none were. */
int report_dropped(const log_table_t *t, const char *group, char *buf, size_t n);
/* Those lines for every group of the log (free with report_damage_free), *n of them. */
char **report_dropped_lines(const log_data_t *log, int *n);

/* ---- text grids (grid.c) ---- */

/* Cells added row by row (ncol per row; row 0 is the header), printed with every column padded to
 * its widest cell: align[j] 'l' or 'r' (columns past the end of align take its last letter). */
typedef struct report_grid {
  int ncol, ncell, cap;
  char **cell;
  const char *align;
} report_grid_t;

void report_grid_init(report_grid_t *g, int ncol, const char *align);
void report_grid_add(report_grid_t *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_grid_print(FILE *f, const report_grid_t *g, const char *indent);
void report_grid_free(report_grid_t *g);
/* "1.50 MiB", "812 B": bytes in binary units, 3 significant digits. */
void report_format_bytes(double bytes, char *buf, size_t n);

/* ---- one run as text (summary.c) ---- */

void report_summary_print(FILE *f, const log_data_t *log);
/* ---- many runs as a table (table.c) ---- */

/* A cell: its text, and its number when it is one (sorting and export use the number). */
typedef struct report_cell {
  char *text;  /* "-" when the run has no value */
  double num;
  int is_num;  /* num holds the value */
  int missing; /* the run has no value */
} report_cell_t;

typedef struct report_table {
  int ncol, nrow;
  char **col;                /* column names: log, steps, ranks?, swept keys, final_loss, ... */
  int nswept;                /* columns 2 .. 2+nswept-1 are the settings that differ */
  report_cell_t *cell;       /* (nrow, ncol) */
  const log_data_t **log;  /* (nrow) the run of each row */
  char **label;              /* (nrow) a short name of each run for legends: its swept values */
} report_table_t;

/* One row per log, in the given order. Swept columns: the deck keys whose values differ between
 * the logs (output locations excluded) and `ranks` when that differs. */
report_table_t *report_table_build(const log_data_t *const *logs, int n);
/* Column index of `name`; -1 when the table has none. */
int report_table_column(const report_table_t *t, const char *name);
/* Stable sort by column c: numerically when every value of it is a number, else as text; runs
 * without a value go last either way. */
void report_table_sort(report_table_t *t, int c, int descending);
void report_table_print(FILE *f, const report_table_t *t);
void report_table_free(report_table_t *t);

/* ---- export (export.c); path "-" is standard output ---- */

/* One row per logged step: /metrics, /eval at its step, every rank's phase times. */
void report_export_run_csv(const char *path, const log_data_t *log);
/* The whole log: /run, the settings, the derived values, /metrics, /ranks, /eval, /events. */
void report_export_run_json(const char *path, const log_data_t *log);
/* The table, one row (object) per run, in the printed order. */
void report_export_table_csv(const char *path, const report_table_t *t);
void report_export_table_json(const char *path, const report_table_t *t);

/* ---- figures (figures.c) ---- */

/* Write DIR/loss.svg, DIR/accuracy.svg (when a run evaluated) and a phase timeline of one step per
 * run (DIR/timeline.svg for one run, DIR/timeline-K.svg for row K of the table). step < 0: each
 * run's median-time step; a run without that step gets no timeline. The names written are printed
 * to f. */
void report_figures_write(const char *dir, const report_table_t *t, double step, FILE *f);
/* Every file report_figures_write (or report_sim) may write for a table of nrow runs (malloc'd, *n of them). */
char **report_figure_paths(const char *dir, int nrow, int *n);

/* ---- outputs (outputs.c) ---- */

/* Before anything is written: no output file (--csv, --json, the figures of --plot DIR for nrow
 * runs; NULL or "-" for none) may be an input log of the command line, an existing HDF5 file, or
 * another output. Refusals are input errors naming the option and the file, with a hint. */
void report_outputs_check(const char *const *logs, int nlogs, const char *csv, const char *json, const char *plot,
                          int nrow);

/* ---- surge-sim files (src/sim/sim_report.c, doc/sim.md) ---- */

/* The figures report_sim may write in its plot directory (NULL-terminated). */
extern const char *const report_sim_figures[];

/* Whether path is an HDF5 file with surge-sim's /sim group. */
int report_sim_is(const char *path);
/* Its summary to f and, with plot_dir, its figures (frontier.svg, throughput.svg, pipeline.svg,
 * pipeline-compressed.svg) in plot_dir. */
void report_sim(const char *path, const char *plot_dir, FILE *f);

/* ---- the views of a log's parts (views.c) ---- */

/* An object of the JSON export that a view fills (export.c). */
typedef struct report_json report_json_t;
void report_json_string(report_json_t *o, const char *name, const char *value); /* "" is null */
void report_json_number(report_json_t *o, const char *name, double value);      /* NaN is null */
/* A table's columns under name, each an array of its rows (cols values a row), units recorded. */
void report_json_table(report_json_t *o, const char *name, const log_table_t *t, const char *group, size_t cols);

/* What surge-report shows of a log part (io/log_part.h), registered by the part's owner. Every hook
 * but print may be NULL; each is called only for a log that has the part (log_part_data not NULL),
 * except table_cells, which gets NULL data for a run without the part. */
typedef struct report_view {
  const char *part;   /* the part's name (log_part_t.name) */
  const char *title;  /* its section of the summary */
  int early;          /* 1: the section follows Throughput; 0: it follows Traffic */
  void (*print)(FILE *f, const log_data_t *log, const void *data, const report_values_t *v);
  /* A series with a row per /metrics row (CSV columns, damage notes), and its group's path. */
  const log_table_t *(*step_series)(const void *data);
  const char *series_group;
  /* The JSON export: an object under json_key. */
  const char *json_key;
  void (*json)(report_json_t *o, const void *data);
  /* Columns of the table of many runs, shown when some run has the part. */
  const char *const *table_columns; /* NULL-terminated */
  void (*table_cells)(const void *data, report_cell_t *cells);
  /* A figure per run: DIR/<figure>.svg, or DIR/<figure>-K.svg for row K. */
  const char *figure;
  void (*figure_write)(const char *path, const char *label, const log_data_t *log, const void *data, double step,
                       FILE *f);
} report_view_t;

void report_view_register(const report_view_t *view);
/* The registered views, *n of them. */
const report_view_t *const *report_views(int *n);
/* A text and a number cell of the table (table.c). */
report_cell_t report_text_cell(const char *text);
report_cell_t report_number_cell(double x, const char *fmt);

/* ---- the program (report_main.c) ---- */

int report_main(int argc, char **argv);

#endif
