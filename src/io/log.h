/* The HDF5 metrics log of a run (layout in doc/formats.md). Rank 0 writes the file; the per-step
 * call is collective because it gathers every rank's phase times. The file is readable while the
 * run goes (flushed every flush_every steps) and after a kill (up to the last flush).
 *
 * The log itself holds what every run has: /run, /metrics, /ranks (per-rank phases), /eval and
 * /events. Everything else is a part's own (a layout's plan or pipeline, a compressor, multiplexing):
 * the part describes its groups here, a table of series (group, name, units, per row one value or a
 * row of columns) and appends rows through the handle it gets back, or writes fixed tables and
 * attributes. The log names no layout and no feature. */
#ifndef SURGE_LOG_H
#define SURGE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "core/slab.h"
#include "io/log_format.h"

/* The per-rank phases of a step (log_phase_t, io/log_format.h) by name: "data", "forward",
 * "backward", "wait", "comm", "optimizer", "background", "paused"; "unknown" for another value. */
const char *log_phase_name(log_phase_t p);

/* What /run says about the run. */
typedef struct log_run_info {
  const char *layout, *model; /* /run@layout (the [parallel] mode), /run@model */
  long global_batch;
  long flush_every;           /* rows are flushed to the file every this many steps (<= 0: 1) */
  unsigned phases;            /* the phases (bit p: log_phase_t p) a new log has as /ranks series; a
                               * resumed log keeps those it has */
} log_run_info_t;
/* The phases every run records (not the multiplexed ones). */
unsigned log_phases_plain(void);

typedef struct log_row {
  long step;              /* steps completed after this one (1-based) */
  double loss;            /* mean over the global batch */
  double lr;
  double grad_norm;       /* before clipping */
  double step_sec;        /* wall time of the step (slowest rank) */
  double samples_per_sec; /* global batch / step_sec */
  uint64_t bytes[TRAFFIC_COUNT]; /* bytes moved in this step, summed over ranks */
  uint64_t internode_bytes[TRAFFIC_COUNT]; /* of those, bytes that crossed nodes (comm/comm.h) */
  double phase[PHASE_COUNT];     /* THIS rank's phase times (the log gathers them) */
  const double *rank_phase;      /* NULL, or (ranks, PHASE_COUNT) every rank's phase times, already
                                  * reduced by the caller (then run_log_step gathers nothing) */
} log_row_t;

typedef struct run_log run_log_t;

/* Collective over world. Create the log (or, when resume_step >= 0, reopen it and drop rows after
 * resume_step, in every group that has a step scale, so a resumed run continues the series). Stores
 * the /run attributes (program, version, ranks, info, start time, parameter count of the params
 * layout) and the resolved deck text. Errors (unwritable path, an existing file that is not a Surge
 * log) name the path. */
run_log_t *run_log_open(const char *path, const log_run_info_t *info, const char *deck_text,
                        const slab_layout_t *params, comm_t *world, long resume_step);
/* Collective: append one step. Groups with rows each step (log_group_decl_t.each_step) that got no
 * row for this step get one of NaN. */
void run_log_step(run_log_t *log, const log_row_t *row);
/* Collective (rank 0 writes): an evaluation result. accuracy is a fraction. A step the log's
 * evaluations already reach (a run resumed at its end evaluates it again) is not written twice. */
void run_log_eval(run_log_t *log, long step, double loss, double accuracy);
/* Collective: a free-form event ("checkpoint written", "stopped by SIGTERM") at a step. */
void run_log_event(run_log_t *log, long step, const char *text);
/* Collective (rank 0 writes): /run@run_id, the run's identity, unless the log has one already (a
 * resumed run keeps it). */
void run_log_identify(run_log_t *log, const char *run_id);
/* Collective: flush and close. */
void run_log_close(run_log_t *log);

/* ---- a part's own records ---- */

/* What a value of a column is in memory: double, int32_t, uint64_t, or const char *. */
typedef enum log_value { LOG_VALUE_REAL = 0, LOG_VALUE_INT, LOG_VALUE_COUNT, LOG_VALUE_TEXT } log_value_t;

/* A column of a part's group: name, units and description (log_series_info_t), what its values
 * are, and cols: 0 for one value a row, > 0 for a row of cols values (a 2-D dataset; a resumed run
 * with more widens it, cells never written read NaN). */
typedef struct log_column_decl {
  log_series_info_t info;
  log_value_t value;
  int cols;
} log_column_decl_t;

/* A group of series that share their rows, after a step scale that the log adds. */
typedef struct log_group_decl {
  const char *path;      /* "/pipeline/events": made with the groups above it */
  const char *feature;   /* the part in words, for the events a resumed log records ("multiplexing") */
  int each_step;         /* 1: one row per logged step, appended before run_log_step (rows follow
                          * /metrics/step; a step without one, also in a later run that does not
                          * declare the group, reads NaN); 0: any number of rows a step */
  int ncolumns;
  const log_column_decl_t *column;
} log_group_decl_t;

typedef struct log_rows log_rows_t;

/* Collective: the group decl describes (copied), created in a new log. A resumed log that has it
 * continues it; one that began without it stays without (an event says so) and the handle takes no
 * rows. The log owns the handle. */
log_rows_t *run_log_rows(run_log_t *log, const log_group_decl_t *decl);
/* Whether the group's rows go to the file (rank 0 of a log that has the group). */
int run_log_rows_active(const log_rows_t *rows);
/* Rank 0 (others: nothing): one row at step; values[c] points at column c's value, or its cols
 * values (const char * values for text). */
void run_log_append(log_rows_t *rows, long step, const void *const *values);

/* An attribute: name, kind, and the value of that kind. */
typedef struct log_attr {
  const char *name;
  log_value_t value;     /* REAL: real, INT or COUNT: integer, TEXT: text */
  double real;
  int64_t integer;
  const char *text;
} log_attr_t;
#define LOG_ATTR_REAL(n, v) ((log_attr_t){.name = (n), .value = LOG_VALUE_REAL, .real = (v)})
#define LOG_ATTR_INT(n, v) ((log_attr_t){.name = (n), .value = LOG_VALUE_INT, .integer = (v)})
#define LOG_ATTR_TEXT(n, v) ((log_attr_t){.name = (n), .value = LOG_VALUE_TEXT, .text = (v)})

/* Collective (rank 0 writes): attributes of group path, made when missing; replaced when there.
 * Nothing is written into a group whose rows are not kept (run_log_rows_active is 0). */
void run_log_attrs(run_log_t *log, const char *path, const log_attr_t *attr, int nattr);
/* Collective (rank 0 writes): group path as a fixed table, replacing the group if it is there:
 * column c holds n values (values[c]; 1-D datasets); a column with a NULL values pointer is left
 * out. text (NULL: none) goes in a scalar string dataset text_name beside them. */
void run_log_table(run_log_t *log, const char *path, const log_column_decl_t *column, const void *const *values,
                   int ncolumns, size_t n, const char *text_name, const char *text);

#endif
