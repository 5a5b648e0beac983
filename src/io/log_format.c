/* The log's names and their documented order (doc/formats.md). */
#include "io/log_format.h"

#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "io/log_part.h"

const char *const log_group_path[LOG_GROUP_COUNT] = {"/metrics", "/ranks", "/eval", "/events"};

#define STEP_DOC "steps completed after the logged step (1-based)"
const log_series_info_t log_scale_info[LOG_GROUP_COUNT] = {
    [LOG_METRICS] = {LOG_STEP, "steps", STEP_DOC},
    [LOG_RANKS] = {"rank", "1", "rank in the run's world communicator (column of every /ranks dataset)"},
    [LOG_EVAL] = {LOG_STEP, "steps", "steps completed when the evaluation ran"},
    [LOG_EVENTS] = {LOG_STEP, "steps", "steps completed when the event happened"},
};





const log_series_info_t log_metric_info[LOG_METRIC_COUNT] = {
    [LOG_LOSS] = {"loss", "nats", "training loss of the step: mean cross-entropy over the global batch"},
    [LOG_LR] = {"lr", "1", "learning rate the step used"},
    [LOG_GRAD_NORM] = {"grad_norm", "1", "global L2 norm of the gradient before clipping"},
    [LOG_STEP_TIME] = {"step_time", "s", "wall time of the step on the slowest rank"},
    [LOG_SAMPLES_PER_SEC] = {"samples_per_sec", "samples/s", "global batch divided by step_time"},
};

const log_series_info_t log_phase_info[PHASE_COUNT] = {
    [PHASE_DATA] = {"data", "s", "seconds each rank spent fetching its part of the batch"},
    [PHASE_FORWARD] = {"forward", "s", "seconds each rank spent in the forward pass and the loss"},
    [PHASE_BACKWARD] = {"backward", "s", "seconds each rank spent in the backward pass"},
    [PHASE_WAIT] = {"wait", "s", "seconds each rank waited for the slowest rank before the gradient allreduce"},
    [PHASE_COMM] = {"comm", "s", "seconds each rank spent inside collectives"},
    [PHASE_OPTIMIZER] = {"optimizer", "s", "seconds each rank spent clipping and updating parameters"},
    [PHASE_BACKGROUND] = {"background", "s",
                          "foreground ranks: CPU seconds their background partner's process used during the step "
                          "(0 without multiplexing)"},
    [PHASE_PAUSED] = {"paused", "s",
                      "background ranks: seconds of the step paused until their foreground partner was idle (0 "
                      "without multiplexing)"},
    [PHASE_OFFERED] = {"offered", "s",
                       "foreground ranks: seconds of the step they published to their background partner as idle "
                       "or waiting on other ranks (a layer or stage with no work for them, a receive); 0 "
                       "without multiplexing"},
};

int log_phase_multiplexed(log_phase_t p) { return p == PHASE_BACKGROUND || p == PHASE_PAUSED || p == PHASE_OFFERED; }

const log_series_info_t log_eval_info[LOG_EVAL_COUNT] = {
    [LOG_EVAL_LOSS] = {"loss", "nats", "mean cross-entropy over the evaluation set"},
    [LOG_EVAL_ACCURACY] = {"accuracy", "1", "fraction of evaluation targets predicted correctly"},
};

const log_series_info_t log_event_info[LOG_EVENT_COUNT] = {
    [LOG_EVENT_TIME] = {"time", "s", "wall-clock time of the event, seconds since 1970-01-01T00:00:00Z"},
    [LOG_EVENT_TEXT] = {"text", "text", "what happened, one line of text"},
};



const char *log_not_surge(hid_t file, h5util_check_t *chk) {
  if (h5util_check(chk, H5Lexists(file, LOG_RUN, H5P_DEFAULT), "look up", LOG_RUN) == 0) return "no /run group";
  hid_t run = H5Oopen(file, LOG_RUN, H5P_DEFAULT); /* fails for a dangling link */
  if (run < 0 || H5Iget_type(run) != H5I_GROUP) {
    if (run >= 0) h5util_check(chk, H5Oclose(run), "close", LOG_RUN);
    H5Eclear2(H5E_DEFAULT);
    return "no /run group";
  }
  char *program = NULL;
  int rc = h5util_attr_read_string(run, LOG_RUN_PROGRAM, &program);
  if (rc == -1) h5util_fail(chk, "read", LOG_RUN "@" LOG_RUN_PROGRAM);
  int surge = rc == 0 && strcmp(program, LOG_PROGRAM) == 0;
  free(program);
  h5util_check(chk, H5Oclose(run), "close", LOG_RUN);
  return surge ? NULL : LOG_RUN "@" LOG_RUN_PROGRAM " is not \"" LOG_PROGRAM "\"";
}

/* Index of name among the n names of table, or -1. */
static int index_of(const log_series_info_t *table, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(table[i].name, name) == 0) return i;
  return -1;
}

/* Rank of a column in a group whose step scale comes first, then the table's columns. */
static int after_step(const log_series_info_t *table, int n, const char *name) {
  if (strcmp(name, LOG_STEP) == 0) return 0;
  int i = index_of(table, n, name);
  return i >= 0 ? 1 + i : -1;
}

int log_column_order(const char *group, const char *name) {
  enum { UNKNOWN = 1 << 20 };
  int i = -1;
  if (strcmp(group, log_group_path[LOG_METRICS]) == 0) {
    i = after_step(log_metric_info, LOG_METRIC_COUNT, name);
    size_t np = strlen(LOG_BYTES_PREFIX);
    for (int t = 0; i < 0 && t < TRAFFIC_COUNT; t++)
      if (strncmp(name, LOG_BYTES_PREFIX, np) == 0 && strcmp(name + np, traffic_name((traffic_t)t)) == 0)
        i = 1 + LOG_METRIC_COUNT + t;
  } else if (strcmp(group, log_group_path[LOG_RANKS]) == 0) {
    size_t np = strlen(LOG_PHASE_PREFIX);
    if (strncmp(name, LOG_PHASE_PREFIX, np) == 0) i = index_of(log_phase_info, PHASE_COUNT, name + np);
  } else if (strcmp(group, log_group_path[LOG_EVAL]) == 0) {
    i = after_step(log_eval_info, LOG_EVAL_COUNT, name);
  } else if (strcmp(group, log_group_path[LOG_EVENTS]) == 0) {
    i = after_step(log_event_info, LOG_EVENT_COUNT, name);
  } else {
    const log_group_format_t *f = log_group_format(group);
    if (f) i = f->stepped ? after_step(f->column, f->ncolumns, name) : index_of(f->column, f->ncolumns, name);
  }
  return i >= 0 ? i : UNKNOWN;
}
