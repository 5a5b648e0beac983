/* The log's names and their documented order (doc/formats.md). */
#include "io/log_format.h"

#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

const char *const log_group_path[LOG_GROUP_COUNT] = {"/metrics",   "/ranks",           "/eval",    "/events",
                                                     "/multiplex", "/pipeline/events", "/compress",
                                                     "/samples"};

#define STEP_DOC "steps completed after the logged step (1-based)"
const log_series_info_t log_scale_info[LOG_GROUP_COUNT] = {
    [LOG_METRICS] = {LOG_STEP, "steps", STEP_DOC},
    [LOG_RANKS] = {"rank", "1", "rank in the run's world communicator (column of every /ranks dataset)"},
    [LOG_EVAL] = {LOG_STEP, "steps", "steps completed when the evaluation ran"},
    [LOG_EVENTS] = {LOG_STEP, "steps", "steps completed when the event happened"},
    [LOG_MULTIPLEX] = {LOG_STEP, "steps", STEP_DOC},
    [LOG_PIPELINE] = {LOG_STEP, "steps", "steps completed after the step the event belongs to (1-based)"},
    [LOG_COMPRESS] = {LOG_STEP, "steps", STEP_DOC},
    [LOG_SAMPLES] = {LOG_STEP, "steps", "steps completed when the model generated the sample"},
};

const log_series_info_t log_compress_info[LOG_CMP_METRIC_COUNT] = {
    [LOG_CMP_ACT_GRAD_RAW] = {"activation_grad_raw_bytes", "bytes",
                              "the step's compressed pipeline gradients as exact messages, summed over ranks (sent: "
                              "bytes_activation_grad_compressed)"},
    [LOG_CMP_DP_RAW] = {"dp_raw_bytes", "bytes",
                        "the step's compressed data-parallel matrices as exact sums, summed over ranks (sent: "
                        "bytes_dp_compressed)"},
    [LOG_CMP_SECONDS] = {"compress_seconds", "s",
                         "the slowest rank's time in the compressors' arithmetic during the step"},
    [LOG_CMP_COS_MEAN] = {"lep_cos_mean", "1",
                          "mean over every boundary of cos(e, x - x'): a compressed send's residual e against its stage "
                          "input x minus the next one's, x' (NaN: none)"},
    [LOG_CMP_ERROR_NORM] = {"error_norm", "1",
                            "(steps, boundaries): ||E|| carried over boundary j (stage j+1 to j) after the step, over its "
                            "data-parallel replicas"},
    [LOG_CMP_COS] = {"lep_cos", "1",
                     "(steps, boundaries): the step's mean cos(e, x - x') over boundary j's consecutive compressed "
                     "sends (NaN: none)"},
};

const char *const log_pipe_kind_name[LOG_PIPE_KIND_COUNT] = {
    [LOG_PIPE_FORWARD] = "forward",
    [LOG_PIPE_BACKWARD] = "backward",
    [LOG_PIPE_RECV_ACTIVATION] = "recv_activation",
    [LOG_PIPE_RECV_GRADIENT] = "recv_gradient",
    [LOG_PIPE_SEND_WAIT] = "send_wait",
    [LOG_PIPE_GRAD_SYNC] = "grad_sync",
    [LOG_PIPE_EMBED_SYNC] = "embed_sync",
};

const log_series_info_t log_pipe_info[LOG_PIPE_COLUMN_COUNT] = {
    [LOG_PIPE_RANK] = {"rank", "1", "rank in the run's world communicator"},
    [LOG_PIPE_STAGE] = {"stage", "1", "pipeline stage of the rank"},
    [LOG_PIPE_MICRO_BATCH] = {"micro_batch", "1", "micro-batch of the step (0-based; -1 for the whole step)"},
    [LOG_PIPE_KIND] = {"kind", "1", "what happened: the index in /pipeline@event_kinds"},
    [LOG_PIPE_START] = {"start", "s", "when it began, seconds since the layout's start (common to all ranks)"},
    [LOG_PIPE_END] = {"end", "s", "when it ended, seconds since the layout's start"},
};

const log_series_info_t log_pipe_stage_info[LOG_PIPE_STAGE_COLUMN_COUNT] = {
    [LOG_PIPE_STAGE_INDEX] = {"stage", "1", "pipeline stage"},
    [LOG_PIPE_STAGE_FIRST_BLOCK] = {"first_block", "1", "the stage's first transformer block"},
    [LOG_PIPE_STAGE_BLOCKS] = {"blocks", "1", "transformer blocks of the stage"},
    [LOG_PIPE_STAGE_MFLOP] = {"train_mflop_per_sample", "MFLOP",
                              "training FLOPs per sample of the stage's layers (whole, before tensor parallelism)"},
    [LOG_PIPE_STAGE_HELD] = {"micro_batches_held", "1",
                             "most micro-batches whose activations a rank of the stage holds at once (measured)"},
    [LOG_PIPE_STAGE_ACT_BYTES] = {"activation_bytes", "bytes",
                                  "activation memory of a rank of the stage (activations, their gradients, layer "
                                  "state) for the micro-batches it holds"},
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
                       "or waiting on other ranks (a burst layer without them, a pipeline bubble, a receive); 0 "
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

const log_series_info_t log_sample_info[LOG_SAMPLE_COUNT] = {
    [LOG_SAMPLE_TEXT] = {"text", "text",
                         "the sample: [run] sample_tokens tokens after one start token, decoded (bytes, or the "
                         "tokenizer's text; ids in brackets without one), control characters and invalid UTF-8 "
                         "escaped"},
};

const log_series_info_t log_multiplex_info[LOG_MUX_METRIC_COUNT] = {
    [LOG_MUX_FG_SPS] = {"foreground_samples_per_sec", "samples/s",
                        "the foreground job's global batch over its slowest rank's step time"},
    [LOG_MUX_BG_SPS] = {"background_samples_per_sec", "samples/s",
                        "samples the background ranks finished per second during the foreground's step, summed"},
    [LOG_MUX_TOTAL_SPS] = {"total_samples_per_sec", "samples/s", "foreground plus background samples per second"},
    [LOG_MUX_ACTIVE] = {"background_ranks_active", "ranks",
                        "foreground ranks whose background partner's gate let a piece of work through in the step"},
};

const log_series_info_t log_plan_info[LOG_PLAN_COLUMN_COUNT] = {
    [LOG_PLAN_NODE] = {"node", "1", "index of the node in the model graph"},
    [LOG_PLAN_NAME] = {"name", "text", "name of the node"},
    [LOG_PLAN_KIND] = {"kind", "text", "layer kind of the node"},
    [LOG_PLAN_RANKS] = {"ranks", "ranks", "ranks the node runs on (n)"},
    [LOG_PLAN_FIRST_RANK] = {"first_rank", "1", "first rank of the node's contiguous range [first, first + n)"},
    [LOG_PLAN_PER_RANK_BATCH] = {"per_rank_batch", "samples",
                                 "samples of the busiest rank of the node: ceil(global batch / n)"},
    [LOG_PLAN_COMPUTE_US] = {"compute_us", "us", "predicted forward+backward time of the node on its busiest rank"},
    [LOG_PLAN_TRANSFER_IN_US] = {"transfer_in_us", "us",
                                 "predicted time of the re-shards into the node (activations and their gradients)"},
    [LOG_PLAN_SYNC_US] = {"sync_us", "us", "predicted time of the gradient allreduce over the node's ranks"},
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
  } else if (strcmp(group, log_group_path[LOG_SAMPLES]) == 0) {
    i = after_step(log_sample_info, LOG_SAMPLE_COUNT, name);
  } else if (strcmp(group, log_group_path[LOG_MULTIPLEX]) == 0) {
    i = after_step(log_multiplex_info, LOG_MUX_METRIC_COUNT, name);
  } else if (strcmp(group, LOG_PLAN) == 0) {
    i = index_of(log_plan_info, LOG_PLAN_COLUMN_COUNT, name);
  } else if (strcmp(group, log_group_path[LOG_PIPELINE]) == 0) {
    i = after_step(log_pipe_info, LOG_PIPE_COLUMN_COUNT, name);
  } else if (strcmp(group, log_group_path[LOG_COMPRESS]) == 0) {
    i = after_step(log_compress_info, LOG_CMP_METRIC_COUNT, name);
  } else if (strcmp(group, LOG_PIPE_STAGES) == 0) {
    i = index_of(log_pipe_stage_info, LOG_PIPE_STAGE_COLUMN_COUNT, name);
  }
  return i >= 0 ? i : UNKNOWN;
}
