/* Reading a Surge metrics log into memory (layout: doc/formats.md; names: io/log_format.h),
 * checked on the way: what makes a file a Surge log, what a damaged one looks like, and bounds
 * checked before allocating. The writer is io/log.c; surge-report (src/report/) and a foreground's
 * [multiplex] baseline read logs with this.
 *
 * Logs of killed runs are normal input: their datasets may have unequal lengths (a kill during a
 * flush), /eval or /events may be empty or missing, and cells of ranks that did not run read NaN.
 * The reader keeps the rows every column of a group has and remembers how many it dropped. It takes
 * every numeric dataset of /metrics, /ranks/phase_*, /eval, /plan, /multiplex, /pipeline and
 * /compress, so what newer logs add is read without a change here.
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
} log_column_t;

/* The datasets of one group, which share their rows. */
typedef struct log_table {
  int present;         /* the group exists in the file */
  size_t rows;         /* rows every column has: the rows used */
  size_t rows_dropped; /* rows some columns had beyond `rows` (a killed writer's partial flush) */
  int ncol;
  log_column_t *col;   /* in the documented order (log_column_order), then the others by name */
} log_table_t;

/* One deck key with its resolved value as deck text ("train.lr", "0.05"). */
typedef struct log_setting {
  char *key, *value;
} log_setting_t;

/* The burst plan a burst run executed (/plan); present 0 for other runs. */
typedef struct log_plan {
  int present;
  log_table_t nodes; /* numeric per-node datasets: node, ranks, first_rank, per_rank_batch, and
                      * compute_us, transfer_in_us, sync_us when the plan had predictions */
  char **name;       /* (nodes.rows) node names; "" where the log has none */
  double iteration_us, rank_us, one_rank_us, amplification_limit; /* NaN when absent */
  long long job_ranks, global_batch;                              /* -1 when absent */
  char *text;        /* the plan file; "" when absent */
} log_plan_t;

/* A multiplexed run's /multiplex; present 0 for other runs. */
typedef struct log_mux {
  int present;
  char role[16];                /* "foreground" or "background" */
  char channel[72], priority[32], on_foreground_end[16];
  double fg_samples_per_sec, bg_samples_per_sec, total_samples_per_sec; /* the run's totals; NaN when absent */
  double fg_slowdown;           /* foreground step time with / without a partner; NaN: not measured */
  log_table_t series;           /* per step: step, foreground_samples_per_sec, background_samples_per_sec,
                                 * total_samples_per_sec, background_ranks_active; row i is /metrics/step[i] */
} log_mux_t;

/* A 3d run's /pipeline; present 0 for other runs. */
typedef struct log_pipe {
  int present;
  long long tp, pp, dp, micro_batches; /* -1 when absent */
  char schedule[16];
  double bubble_theory;                /* NaN when absent */
  log_table_t stages;                  /* /pipeline/stages: stage, first_block, blocks, ... */
  log_table_t events;                  /* /pipeline/events: step, rank, stage, micro_batch, kind, start, end */
} log_pipe_t;

/* A 3d run's /compress; present 0 for runs without compression. */
typedef struct log_compress {
  int present;
  char summary[512];    /* /compress@summary: the choices in words; "" when absent */
  log_table_t series;   /* step, activation_grad_raw_bytes, dp_raw_bytes, compress_seconds, lep_cos_mean */
  log_table_t boundary; /* (rows, boundaries): error_norm, lep_cos; row i is series row i */
} log_compress_t;

/* A whole log. */
typedef struct log_data {
  char *path;
  /* /run attributes ("" or -1 when absent) */
  char program[32], version[32], start_time[40], layout[32], model[32];
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
  log_plan_t plan;        /* /plan of a burst run */
  log_mux_t mux;          /* /multiplex of a foreground or background run */
  log_pipe_t pipe;        /* /pipeline of a 3d run */
  log_compress_t compress; /* /compress of a 3d run with compression */
} log_data_t;

/* The run identity a log names (/run@run_id) into id: 1, or 0 (id "") when path is not a readable
 * Surge log or names none. Never exits; reads nothing else. */
int log_peek_run_id(const char *path, char *id, size_t n);

/* Read and check a log: a file that is not a Surge log, or that is damaged, is an input error
 * (exit 2) naming the path. */
log_data_t *log_read(const char *path);
void log_data_free(log_data_t *log);

/* A group's column by name; NULL when the group lacks it. */
const log_column_t *log_column(const log_table_t *t, const char *name);
/* A deck key's resolved value ("section.key"); NULL when the log's deck lacks it. */
const char *log_setting(const log_data_t *log, const char *key);
/* The run's name ([run] name), or the path when the deck lacks one. */
const char *log_run_name(const log_data_t *log);

#endif
