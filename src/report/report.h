/* surge-report: post-run analysis of Surge HDF5 metrics logs (user guide doc/report.md, log layout
 * doc/formats.md). A log is read whole into memory and checked by io/log_read.h (log_read);
 * everything here works on that picture: the text summary of one run, the table of many runs (a
 * sweep), CSV and JSON export, and SVG figures.
 *
 * What newer logs add slots in without touching the reader, which takes every numeric dataset of
 * /metrics, /ranks/phase_* and /eval: a new phase gets its category and colour in phases.c (until
 * then it shows as "other"), a new group (/plan, /multiplex) a section in summary.c's table that
 * prints only when the log has it, a new derived value a column in table.c. */
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

/* One line per column the log lacks in whole or in part (log_column_t's missing and short_by), e.g.
 * "/metrics/lr: missing from the log"; malloc'd, *n of them. The summary prints them as notes, the
 * JSON export lists them under "damaged", and surge-report warns of them on standard error. */
char **report_damage(const log_data_t *log, int *n);
void report_damage_free(char **lines, int n);
/* The lines above on standard error, "surge-report: warning: LOG: ... (shown without values)". */
void report_damage_warn(const log_data_t *log);
/* The rows of a group (LOG_METRICS, LOG_RANKS, LOG_EVAL, LOG_MULTIPLEX; io/log_format.h) left out
 * because some of its columns had them and others not, said in buf: 1, or 0 when none were. */
int report_dropped(const log_data_t *log, int group, char *buf, size_t n);

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
/* The burst plan section (plan.c): the logged plan's table and predicted vs measured iteration time. */
void report_plan_print(FILE *f, const log_data_t *log, const report_values_t *v);
/* The multiplexing section (multiplex.c): role, channel, foreground / background / total samples/s,
 * the foreground's slowdown and partner's share of steps, or the background's paused time. */
void report_mux_print(FILE *f, const log_data_t *log, const report_values_t *v);

/* The compression section (compress.c): the choices, bytes per category against the uncompressed
 * messages (ratios), the compressor's time, the error per boundary and the LEP diagnostic. */
void report_compress_print(FILE *f, const log_data_t *log, const report_values_t *v);
/* The 3d pipeline section (pipeline.c): grid, stages, measured against theoretical bubble. */
void report_pipe_print(FILE *f, const log_data_t *log, const report_values_t *v);
/* The measured bubble of a logged step (1 - the ranks' time in passes over ranks times the span from
 * the first pass to the end of the last; NaN when the step has no events); *span_s gets the span
 * (may be NULL). The median over the logged steps (the first left out when there are 3 or more),
 * with how many were used. */
double report_pipe_bubble(const log_data_t *log, double step, double *span_s);
double report_pipe_bubble_median(const log_data_t *log, size_t *used);
/* The Gantt chart of a step (step < 0: the median-time step, or the last logged) as SVG at path:
 * a row per rank, its passes (numbered by micro-batch) and waits. The name written is printed to f. */
void report_pipe_gantt_write(const char *path, const char *label, const log_data_t *log, double step, FILE *f);

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

/* ---- surge-sim files (sim.c, doc/sim.md) ---- */

/* Whether path is an HDF5 file with surge-sim's /sim group. */
int report_sim_is(const char *path);
/* Its summary to f and, with plot_dir, its figures (frontier.svg, throughput.svg, pipeline.svg,
 * pipeline-compressed.svg) in plot_dir. */
void report_sim(const char *path, const char *plot_dir, FILE *f);

/* ---- the program (report_main.c) ---- */

int report_main(int argc, char **argv);

#endif
