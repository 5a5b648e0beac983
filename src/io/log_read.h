/* Reading a Surge metrics log into memory (layout: doc/formats.md; names: io/log_format.h),
 * checked on the way: what makes a file a Surge log, what a damaged one looks like, and bounds
 * checked before allocating. The writer is io/log.c; surge-report (src/report/) and a foreground's
 * [multiplex] baseline read logs with this.
 *
 * Logs of killed runs are normal input: their datasets may have unequal lengths (a kill during a
 * flush), /eval or /events may be empty or missing, and cells of ranks that did not run read NaN.
 * The reader keeps the rows every column of a group has and remembers how many it dropped. It takes
 * every numeric dataset of /metrics, /ranks/phase_* and /eval, so what newer logs add is read
 * without a change here; the groups of the log's parts (a burst plan, a pipeline, multiplexing)
 * are read by the parts' own readers, which register (io/log_part.h).
 *
 * Damage is never passed off as a good log (io/log_check.h): a column of the format that is a group,
 * strings, of another dimension, or holds a value out of its range, and steps that do not increase,
 * are input errors naming the dataset; a column the log lacks, or that is shorter than its step
 * scale by more than a flush, is kept with NaN for what it lacks and flagged (missing, short_by) so
 * that the report says so. Sizes are checked against what the file stores before allocating. Text
 * (event messages, node names, attributes) is read with control characters escaped
 * (io/printable.h), as it ends up on terminals. */
#ifndef SURGE_LOG_READ_H
#define SURGE_LOG_READ_H

#include <stddef.h>

/* Most values one dataset may hold (2 GiB of doubles): a bound checked before allocating, besides
 * the values the file really stores. */
#define LOG_READ_MAX_CELLS ((size_t)1 << 28)
/* Most ranks (columns of /ranks) a log may have. */
#define LOG_READ_MAX_RANKS (1 << 24)

/* One numeric dataset of a group, converted to double. */
typedef struct log_column {
  char name[64];  /* dataset name inside its group: "loss", "bytes_dp", "phase_wait" */
  char units[32]; /* its "units" attribute; "" when it has none */
  size_t cols;    /* 1 for a 1-D dataset; ranks for a /ranks dataset */
  double *v;      /* (rows, cols) row-major; NaN where the log holds no value */
  size_t stored_rows; /* rows the file holds (read) */
  int missing;    /* a column of the format that the log lacks: every value NaN */
  size_t short_by; /* rows it lacks behind its group's step scale (more than a flush's worth: damage),
                    * shown as NaN; 0 for a whole column */
  size_t short_cols; /* /ranks: ranks it lacks against /ranks/rank (damage), shown as NaN columns */
} log_column_t;

/* The datasets of one group, which share their rows. */
typedef struct log_table {
  int present;         /* the group exists in the file */
  int per_column;      /* its datasets are 2-D, (rows, cols): /ranks (a column a rank) and the parts' tables of
                        * columns; 0: one value a row (cols 1) */
  size_t rows;         /* rows every column has: the rows used */
  size_t rows_dropped; /* rows some columns had beyond `rows` (a killed writer's partial flush) */
  int ncol;
  log_column_t *col;   /* in the documented order (log_column_order), then the others by name */
} log_table_t;

/* One deck key with its resolved value as deck text ("train.lr", "0.05"). */
typedef struct log_setting {
  char *key, *value;
} log_setting_t;

/* Most parts a log may have (io/log_part.h). */
#define LOG_PARTS_MAX 16

/* A whole log. */
typedef struct log_data {
  char *path;
  /* /run attributes ("" or -1 when absent) */
  char program[32], version[32], start_time[40], layout[32], model[32], run_id[40];
  long long ranks, parameters, global_batch, flush_every;
  char *deck;             /* /run/deck: the resolved deck text */
  int nsettings;
  log_setting_t *setting; /* every deck key in schema order, parsed from deck (io/deck.h) */
  log_table_t metrics;    /* /metrics: "step" first, then loss, lr, ..., bytes_* */
  log_table_t phases;     /* /ranks/phase_* (rows, ranks); row i is /metrics/step[i] */
  size_t phase_ranks;     /* ranks (columns) every /ranks/phase_* dataset has */
  log_table_t eval;       /* /eval: step, loss, accuracy */
  size_t nevents;
  double *event_step;     /* (nevents) */
  char **event_text;      /* (nevents) */
  int nparts;             /* the parts the log has (a burst plan, a pipeline, multiplexing: io/log_part.h) */
  struct {
    const struct log_part *part;
    void *data;           /* what its reader read */
  } part[LOG_PARTS_MAX];
} log_data_t;

/* The run identity a log names (/run@run_id) into id: 1, or 0 (id "") when path is not a readable
 * Surge log or names none. Never exits; reads nothing else. */
int log_peek_run_id(const char *path, char *id, size_t n);

/* Read and check a log: a file that is not a Surge log, or that is damaged, is an input error
 * (exit 2) naming the path. */
log_data_t *log_read(const char *path);
void log_data_free(log_data_t *log);

/* The data of the log's part called name (its reader's), NULL when the log has none: the file has
 * no such group, or no part of that name is registered (io/log_part.h). */
const void *log_part_data(const log_data_t *log, const char *name);
/* A group's column by name; NULL when the group lacks it. */
const log_column_t *log_column(const log_table_t *t, const char *name);
/* A deck key's resolved value ("section.key"); NULL when the log's deck lacks it. */
const char *log_setting(const log_data_t *log, const char *key);
/* The run's name ([run] name), or the path when the deck lacks one. */
const char *log_run_name(const log_data_t *log);

#endif
