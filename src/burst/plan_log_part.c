/* /plan read back (burst/plan_log.h): the documented columns, their ranges, and the log part that
 * reads them. Apart from the writer (plan_log.c), so that programs which only read logs
 * (surge-report) link no model code. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "burst/plan_log.h"
#include "core/error.h"

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
    [LOG_PLAN_SYNC_US] = {"sync_us", "us", "predicted time of the gradient allreduce over the node's ranks and of batch norm's sums not hidden"},
};

static const log_range_t plan_range[LOG_PLAN_COLUMN_COUNT] = {
    [LOG_PLAN_NODE] = LOG_RANGE_INDEX(LOG_MAX_RANKS),
    [LOG_PLAN_NAME] = LOG_RANGE_ANY,
    [LOG_PLAN_KIND] = LOG_RANGE_ANY,
    [LOG_PLAN_RANKS] = {1, LOG_MAX_RANKS, 0, 0, 1},
    [LOG_PLAN_FIRST_RANK] = LOG_RANGE_INDEX(LOG_MAX_RANKS),
    [LOG_PLAN_PER_RANK_BATCH] = LOG_RANGE_INDEX(2147483647.0),
    [LOG_PLAN_COMPUTE_US] = {0, 1e6 * LOG_MAX_SECONDS, 1, 0, 0},
    [LOG_PLAN_TRANSFER_IN_US] = {0, 1e6 * LOG_MAX_SECONDS, 1, 0, 0},
    [LOG_PLAN_SYNC_US] = {0, 1e6 * LOG_MAX_SECONDS, 1, 0, 0},
};
static const int plan_expected[] = {LOG_PLAN_NODE, LOG_PLAN_RANKS, LOG_PLAN_FIRST_RANK, LOG_PLAN_PER_RANK_BATCH};
static const log_group_format_t plan_format = {
    .group = LOG_PLAN, .stepped = 0, .ncolumns = LOG_PLAN_COLUMN_COUNT, .column = log_plan_info,
    .range = plan_range, .nexpected = (int)(sizeof plan_expected / sizeof plan_expected[0]),
    .expected = plan_expected,
};

static void *read_plan(log_reader_t *r, const log_data_t *L) {
  (void)L;
  log_plan_t *p = xcalloc(1, sizeof *p);
  log_table_spec_t g = {.group = LOG_PLAN, .prefix = "", .ndims = 1, .strict = 1};
  log_reader_table(r, &g, &p->nodes);
  if (!log_column(&p->nodes, log_plan_info[LOG_PLAN_RANKS].name) ||
      !log_column(&p->nodes, log_plan_info[LOG_PLAN_FIRST_RANK].name))
    log_reader_damaged(r, "has no ranks or first_rank dataset", LOG_PLAN);
  p->name = xcalloc(p->nodes.rows + 1, sizeof(char *));
  size_t n = 0;
  char name_path[64];
  snprintf(name_path, sizeof name_path, LOG_PLAN "/%s", log_plan_info[LOG_PLAN_NAME].name);
  char **names = log_reader_has(r, name_path, H5I_DATASET) ? log_reader_strings(r, name_path, &n) : NULL;
  for (size_t i = 0; i < p->nodes.rows; i++) p->name[i] = xstrdup(i < n ? names[i] : "");
  log_strings_free(names, n);
  hid_t gid = log_reader_group(r, LOG_PLAN);
  p->iteration_us = log_reader_attr_real(r, gid, LOG_PLAN, LOG_PLAN_ITERATION_US, 0, 1e15);
  p->rank_us = log_reader_attr_real(r, gid, LOG_PLAN, LOG_PLAN_RANK_US, 0, 1e15);
  p->one_rank_us = log_reader_attr_real(r, gid, LOG_PLAN, LOG_PLAN_ONE_RANK_US, 0, 1e15);
  p->amplification_limit = log_reader_attr_real(r, gid, LOG_PLAN, LOG_PLAN_AMPLIFICATION_LIMIT, 0, INFINITY);
  p->job_ranks = log_reader_attr_int(r, gid, LOG_PLAN, LOG_PLAN_JOB_RANKS, 1, LOG_READ_MAX_RANKS);
  p->global_batch = log_reader_attr_int(r, gid, LOG_PLAN, LOG_PLAN_GLOBAL_BATCH, 1, 2147483647LL);
  p->text = log_reader_text(r, gid, LOG_PLAN_TEXT, LOG_PLAN "/" LOG_PLAN_TEXT, LOG_READ_MAX_CELLS);
  log_reader_group_close(r, gid, LOG_PLAN);
  return p;
}

static void free_plan(void *data) {
  log_plan_t *p = data;
  log_table_free(&p->nodes);
  for (size_t i = 0; p->name && i < p->nodes.rows; i++) free(p->name[i]);
  free(p->name);
  free(p->text);
  free(p);
}

static const log_group_format_t *const plan_formats[] = {&plan_format};
const log_part_t burst_plan_log_part = {.name = BURST_PLAN_PART, .group = LOG_PLAN, .nformats = 1,
                                        .formats = plan_formats, .read = read_plan, .free = free_plan};
