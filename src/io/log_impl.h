/* Inside the metrics log (io/log.h): the state rank 0 keeps, shared by the log's core (log.c) and
 * the parts' groups (log_parts.c). */
#ifndef SURGE_LOG_IMPL_H
#define SURGE_LOG_IMPL_H

#include "io/log.h"
#include "io/log_h5.h"

/* A core series of the log: its dataset, and how it is made. */
typedef struct series_spec {
  h5_series_t *s;
  log_group_t group;
  char name[48];
  h5_series_kind_t kind;
  int per_rank;         /* 2-D (steps, ranks) */
  char units[16];
  char description[160];
} series_spec_t;

/* Space reserved before each flush for each series beyond its pending rows (log.c's reserve_space). */
#define LOG_RESERVE_SERIES_BYTES (2.0 * 1024)

/* The groups of log_group_t that every log has; the others are parts' groups (log_parts.c). */
#define LOG_CORE_GROUPS (LOG_EVENTS + 1)

enum { SPEC_MAX = LOG_GROUP_COUNT + LOG_METRIC_COUNT + 2 * TRAFFIC_COUNT + PHASE_COUNT + LOG_EVAL_COUNT +
                  LOG_EVENT_COUNT };

/* A part's group (log_parts.c): its step scale and columns. */
struct log_rows {
  run_log_t *L;
  char path[96], feature[96];
  int each_step;
  int active;           /* rank 0, and the file has the group */
  int declared;         /* declared by this run (0: found in a resumed file, padded each step) */
  long last_step;       /* the step of the last row appended */
  h5_series_t step;
  int ncolumns;
  h5_series_t *series;  /* (ncolumns) */
  log_column_decl_t *column;
  double *pad;          /* NaN row of the widest column */
  uint64_t *zero;       /* a row of zeros as wide */
  double *scratch;      /* a row as wide, for rows narrower than their dataset */
  log_rows_t *next;
};

struct run_log {
  comm_t *world;
  char *path;
  char *creating;     /* a new log's temporary name until its first flush is renamed to path, else NULL */
  h5util_check_t chk; /* rank 0: every HDF5 call's failure is a runtime error naming path */
  long flush_every;
  hid_t file, text_type;
  h5_series_t step[LOG_GROUP_COUNT]; /* each group's step scale (/ranks rows follow /metrics/step) */
  h5_series_t rank_scale;            /* /ranks/rank: the columns of /ranks */
  h5_series_t metric[LOG_METRIC_COUNT], bytes[TRAFFIC_COUNT], internode[TRAFFIC_COUNT], phase[PHASE_COUNT];
  h5_series_t eval[LOG_EVAL_COUNT], event[LOG_EVENT_COUNT];
  unsigned phases;   /* the /ranks phases the log has (bit p) */
  int resumed;       /* the file was reopened */
  long eval_last;    /* the last step /eval holds (-1: none), kept on resume: a run resumed at its end
                      * (--resume of a finished run) evaluates that step again, not logged twice */
  long resume_step;
  series_spec_t spec[SPEC_MAX];
  int nspec;
  log_rows_t *rows;  /* the parts' groups */
  int fd;            /* the file's descriptor (space is reserved through it before a flush), -1: none */
  int reserve;       /* the file system can reserve space (fallocate) */
  long flushed_step; /* the last step the file on disk holds */
  int flushed;       /* the file on disk is a whole log (a reopened one, or flushed once) */
  long pending_step; /* the last step appended */
  double *gathered;  /* (ranks, PHASE_COUNT) from comm_gather_double, rank 0 */
  double *phase_row; /* (columns of /ranks) one phase's row, NaN beyond the ranks of this run */
};

/* log.c */
hsize_t log_rows_through(h5_series_t *steps, long resume_step);
hid_t log_group_open(run_log_t *L, const char *gpath, int create);
void log_group_close(run_log_t *L, hid_t g, const char *gpath);
void log_flush(run_log_t *L);
void log_append_event(run_log_t *L, long step, const char *text);
h5_series_kind_t log_kind_of(const run_log_t *L, log_value_t v);
h5_series_kind_t log_step_kind(void);

/* log_parts.c. A part's group in the file: its attributes LOG_ROWS_ATTR (LOG_ROWS_EACH_STEP or
 * LOG_ROWS_ANY) and LOG_FEATURE_ATTR (the part in words). */
#define LOG_ROWS_ATTR "rows"
#define LOG_ROWS_EACH_STEP "each step"
#define LOG_ROWS_ANY "any"
#define LOG_FEATURE_ATTR "feature"
/* A resumed file: drop the rows after resume_step in every part's group (found in the file), and
 * keep the groups with a row each step so that run_log_step pads them. */
void log_parts_resume(run_log_t *L, long resume_step);
/* Rank 0, in run_log_step: NaN rows for each-step groups that got none at step. */
void log_parts_pad(run_log_t *L, long step);
/* The parts' pending bytes (reserve_space), their pending rows stored, their series closed. */
double log_parts_pending_bytes(const run_log_t *L);
void log_parts_write_pending(run_log_t *L);
void log_parts_close(run_log_t *L);
/* Every rank: free the handles. */
void log_parts_free(run_log_t *L);
/* The words of the resume event for the each-step groups that this run has not declared: " without
 * multiplexing (its /multiplex rows read NaN from here)", or "". */
void log_parts_resume_note(const run_log_t *L, char *buf, size_t n);

#endif
