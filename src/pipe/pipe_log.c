/* A 3d run's records in the metrics log (pipe/pipe_log.h). */
#include "pipe/pipe_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

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
                              "training FLOPs per sample of the stage's layers (whole, before tensor parallelism), with [train] "
                              "recompute the re-run forwards' too"},
    [LOG_PIPE_STAGE_HELD] = {"micro_batches_held", "1",
                             "most micro-batches whose activations a rank of the stage holds at once (measured)"},
    [LOG_PIPE_STAGE_ACT_BYTES] = {"activation_bytes", "bytes",
                                  "activation memory of a rank of the stage (activations, their gradients, layer "
                                  "state) for the micro-batches it holds"},
};


static void put_pipeline(run_log_t *log, const log_pipe_info_t *info) {
  char kinds[256] = "";
  for (int k = 0; k < LOG_PIPE_KIND_COUNT; k++)
    snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", k ? "," : "", log_pipe_kind_name[k]);
  const log_attr_t attr[] = {
      LOG_ATTR_INT(LOG_PIPE_TP, info->tp),
      LOG_ATTR_INT(LOG_PIPE_PP, info->pp),
      LOG_ATTR_INT(LOG_PIPE_DP, info->dp),
      LOG_ATTR_INT(LOG_PIPE_MICRO_BATCHES, info->micro_batches),
      LOG_ATTR_TEXT(LOG_PIPE_SCHEDULE, info->schedule),
      LOG_ATTR_TEXT(LOG_PIPE_EVENT_KINDS, kinds),
      LOG_ATTR_REAL(LOG_PIPE_BUBBLE_THEORY, info->bubble_theory),
  };
  run_log_attrs(log, LOG_PIPE, attr, (int)(sizeof attr / sizeof attr[0]));
  size_t n = (size_t)info->pp;
  int *index = xcalloc(n + 1, sizeof *index);
  for (size_t i = 0; i < n; i++) index[i] = (int)i;
  const void *values[LOG_PIPE_STAGE_COLUMN_COUNT] = {index, info->first_block, info->blocks, info->mflop, info->held,
                                                      info->act_bytes};
  log_column_decl_t col[LOG_PIPE_STAGE_COLUMN_COUNT];
  for (int j = 0; j < LOG_PIPE_STAGE_COLUMN_COUNT; j++)
    col[j] = (log_column_decl_t){log_pipe_stage_info[j], j < LOG_PIPE_STAGE_MFLOP ? LOG_VALUE_INT : LOG_VALUE_REAL, 0};
  run_log_table(log, LOG_PIPE_STAGES, col, values, LOG_PIPE_STAGE_COLUMN_COUNT, n, NULL, NULL);
  free(index);
}

static log_rows_t *declare_events(run_log_t *log) {
  log_column_decl_t col[LOG_PIPE_COLUMN_COUNT];
  for (int c = 0; c < LOG_PIPE_COLUMN_COUNT; c++)
    col[c] = (log_column_decl_t){log_pipe_info[c], c >= LOG_PIPE_START ? LOG_VALUE_REAL : LOG_VALUE_INT, 0};
  log_group_decl_t d = {.path = LOG_PIPE_EVENTS, .feature = "the pipeline timeline", .each_step = 0,
                        .ncolumns = LOG_PIPE_COLUMN_COUNT, .column = col};
  return run_log_rows(log, &d);
}

static log_rows_t *declare_compress(run_log_t *log, int boundaries) {
  log_column_decl_t col[LOG_CMP_METRIC_COUNT];
  for (int c = 0; c < LOG_CMP_METRIC_COUNT; c++)
    col[c] = (log_column_decl_t){log_compress_info[c], LOG_VALUE_REAL, c >= LOG_CMP_PER_BOUNDARY ? boundaries : 0};
  log_group_decl_t d = {.path = LOG_CMP_GROUP, .feature = "compression", .each_step = 0,
                        .ncolumns = LOG_CMP_METRIC_COUNT, .column = col};
  return run_log_rows(log, &d);
}

void pipe_log_open(pipe_log_t *pl, run_log_t *log, const log_pipe_info_t *info, const char *compress_summary) {
  memset(pl, 0, sizeof *pl);
  put_pipeline(log, info);
  pl->events = declare_events(log);
  if (!compress_summary) return;
  pl->boundaries = info->pp > 1 ? info->pp - 1 : 1;
  pl->compress = declare_compress(log, pl->boundaries);
  const log_attr_t summary = LOG_ATTR_TEXT(LOG_CMP_SUMMARY, compress_summary);
  run_log_attrs(log, LOG_CMP_GROUP, &summary, 1);
}

void pipe_log_events(pipe_log_t *pl, long step, const log_pipe_event_t *ev, size_t n) {
  if (!run_log_rows_active(pl->events)) return;
  for (size_t i = 0; i < n; i++) {
    const log_pipe_event_t *e = &ev[i];
    const void *values[LOG_PIPE_COLUMN_COUNT] = {
        [LOG_PIPE_RANK] = &e->rank, [LOG_PIPE_STAGE] = &e->stage, [LOG_PIPE_MICRO_BATCH] = &e->mb,
        [LOG_PIPE_KIND] = &e->kind, [LOG_PIPE_START] = &e->start, [LOG_PIPE_END] = &e->end,
    };
    run_log_append(pl->events, step, values);
  }
}

void pipe_log_compress(pipe_log_t *pl, long step, const log_compress_row_t *row) {
  if (!run_log_rows_active(pl->compress)) return;
  if (row->boundaries != pl->boundaries)
    surge_runtime_error("log: a /compress row of %d boundaries where the run has %d", row->boundaries, pl->boundaries);
  const void *values[LOG_CMP_METRIC_COUNT] = {
      [LOG_CMP_ACT_GRAD_RAW] = &row->act_grad_raw_bytes, [LOG_CMP_DP_RAW] = &row->dp_raw_bytes,
      [LOG_CMP_SECONDS] = &row->seconds, [LOG_CMP_COS_MEAN] = &row->lep_cos_mean,
      [LOG_CMP_ERROR_NORM] = row->error_norm, [LOG_CMP_COS] = row->lep_cos,
  };
  run_log_append(pl->compress, step, values);
}

/* ---- reading it back ---- */

static const log_range_t stage_range[LOG_PIPE_STAGE_COLUMN_COUNT] = {
    [LOG_PIPE_STAGE_INDEX] = LOG_RANGE_INDEX(2147483647.0),
    [LOG_PIPE_STAGE_FIRST_BLOCK] = LOG_RANGE_INDEX(2147483647.0),
    [LOG_PIPE_STAGE_BLOCKS] = LOG_RANGE_INDEX(2147483647.0),
    [LOG_PIPE_STAGE_MFLOP] = {0, INFINITY, 1, 0, 0},
    [LOG_PIPE_STAGE_HELD] = LOG_RANGE_INDEX(2147483647.0),
    [LOG_PIPE_STAGE_ACT_BYTES] = {0, INFINITY, 1, 0, 0},
};
static const log_group_format_t stages_format = {
    .group = LOG_PIPE_STAGES, .stepped = 0, .ncolumns = LOG_PIPE_STAGE_COLUMN_COUNT, .column = log_pipe_stage_info,
    .range = stage_range, .nexpected = LOG_PIPE_STAGE_COLUMN_COUNT,
};
static const log_range_t event_range[LOG_PIPE_COLUMN_COUNT] = {
    [LOG_PIPE_RANK] = LOG_RANGE_INDEX(LOG_MAX_RANKS),
    [LOG_PIPE_STAGE] = LOG_RANGE_INDEX(LOG_MAX_RANKS),
    [LOG_PIPE_MICRO_BATCH] = {-1, 2147483647.0, 0, 0, 1},
    [LOG_PIPE_KIND] = LOG_RANGE_INDEX(LOG_PIPE_KIND_COUNT - 1),
    [LOG_PIPE_START] = LOG_RANGE_SECONDS,
    [LOG_PIPE_END] = LOG_RANGE_SECONDS,
};
static const log_group_format_t events_format = {
    .group = LOG_PIPE_EVENTS, .stepped = 1, .ncolumns = LOG_PIPE_COLUMN_COUNT, .column = log_pipe_info,
    .range = event_range, .nexpected = LOG_PIPE_COLUMN_COUNT,
};
static const log_range_t compress_range[LOG_CMP_METRIC_COUNT] = {
    [LOG_CMP_ACT_GRAD_RAW] = LOG_RANGE_COUNT, [LOG_CMP_DP_RAW] = LOG_RANGE_COUNT,
    [LOG_CMP_SECONDS] = LOG_RANGE_SECONDS,    [LOG_CMP_COS_MEAN] = LOG_RANGE_ANY,
    [LOG_CMP_ERROR_NORM] = LOG_RANGE_ANY,     [LOG_CMP_COS] = LOG_RANGE_ANY,
};
static const log_group_format_t compress_format = { /* the 1-D columns expected; the 2-D ones are read apart */
    .group = LOG_CMP_GROUP, .stepped = 1, .ncolumns = LOG_CMP_METRIC_COUNT, .column = log_compress_info,
    .range = compress_range, .nexpected = LOG_CMP_PER_BOUNDARY,
};

static void *read_pipe(log_reader_t *r, const log_data_t *L) {
  (void)L;
  log_pipe_t *p = xcalloc(1, sizeof *p);
  hid_t g = log_reader_group(r, LOG_PIPE);
  p->tp = log_reader_attr_int(r, g, LOG_PIPE, LOG_PIPE_TP, 1, LOG_READ_MAX_RANKS);
  p->pp = log_reader_attr_int(r, g, LOG_PIPE, LOG_PIPE_PP, 1, LOG_READ_MAX_RANKS);
  p->dp = log_reader_attr_int(r, g, LOG_PIPE, LOG_PIPE_DP, 1, LOG_READ_MAX_RANKS);
  p->micro_batches = log_reader_attr_int(r, g, LOG_PIPE, LOG_PIPE_MICRO_BATCHES, 1, 2147483647LL);
  log_reader_attr_string(r, g, LOG_PIPE, LOG_PIPE_SCHEDULE, p->schedule, sizeof p->schedule);
  p->bubble_theory = log_reader_attr_real(r, g, LOG_PIPE, LOG_PIPE_BUBBLE_THEORY, 0, 1);
  log_reader_group_close(r, g, LOG_PIPE);
  log_table_spec_t stages = {.group = LOG_PIPE_STAGES, .prefix = "", .ndims = 1, .strict = 1}; /* written at once */
  log_reader_table(r, &stages, &p->stages);
  log_table_spec_t ev = {.group = LOG_PIPE_EVENTS, .prefix = "", .ndims = 1, .tolerance = log_reader_tolerance(r),
                         .rows_share_step = 1};
  log_reader_table(r, &ev, &p->events);
  for (int c = 0; c < LOG_PIPE_COLUMN_COUNT && p->events.present; c++) {
    const log_column_t *col = log_column(&p->events, log_pipe_info[c].name);
    if (!col || col->missing) log_reader_damaged(r, "lacks a column of the pipeline events", LOG_PIPE_EVENTS);
  }
  const log_column_t *step = log_column(&p->events, LOG_STEP);
  if (p->events.present && (!step || step->missing)) log_reader_damaged(r, "has no step dataset", LOG_PIPE_EVENTS);
  return p;
}

static void free_pipe(void *data) {
  log_pipe_t *p = data;
  log_table_free(&p->stages);
  log_table_free(&p->events);
  free(p);
}

static void *read_compress(log_reader_t *r, const log_data_t *L) {
  (void)L;
  log_compress_t *c = xcalloc(1, sizeof *c);
  const char *group = LOG_CMP_GROUP;
  log_table_spec_t series = {.group = group, .prefix = "", .ndims = 1, .tolerance = log_reader_tolerance(r)};
  log_reader_table(r, &series, &c->series);
  const log_column_t *step = log_column(&c->series, LOG_STEP);
  if (!step || step->missing) log_reader_damaged(r, "has no step dataset", group);
  /* the per-boundary columns, (steps, boundaries), on the same step scale */
  log_table_spec_t boundary = {.group = group, .prefix = "", .ndims = 2, .scale = step->stored_rows,
                               .tolerance = log_reader_tolerance(r), .max_cols = LOG_READ_MAX_RANKS, .extra = 1};
  log_reader_table(r, &boundary, &c->boundary);
  log_table_limit_rows(&c->boundary, c->series.rows);
  log_table_limit_rows(&c->series, c->boundary.ncol ? c->boundary.rows : c->series.rows);
  hid_t g = log_reader_group(r, group);
  log_reader_attr_string(r, g, group, LOG_CMP_SUMMARY, c->summary, sizeof c->summary);
  log_reader_group_close(r, g, group);
  return c;
}

static void free_compress(void *data) {
  log_compress_t *c = data;
  log_table_free(&c->series);
  log_table_free(&c->boundary);
  free(c);
}

static const log_group_format_t *const pipe_formats[] = {&stages_format, &events_format};
const log_part_t pipe_log_part = {.name = PIPE_LOG_PART, .group = LOG_PIPE, .nformats = 2, .formats = pipe_formats,
                                  .read = read_pipe, .free = free_pipe};
static const log_group_format_t *const compress_formats[] = {&compress_format};
const log_part_t pipe_compress_log_part = {.name = PIPE_COMPRESS_PART, .group = LOG_CMP_GROUP, .nformats = 1,
                                           .formats = compress_formats, .read = read_compress,
                                           .free = free_compress};
