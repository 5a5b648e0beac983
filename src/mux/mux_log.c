/* Multiplexing's /multiplex in the metrics log: its documented series and the part that reads it
 * (mux/mux_log.h). */
#include "mux/mux_log.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"

const log_series_info_t log_multiplex_info[LOG_MUX_METRIC_COUNT] = {
    [LOG_MUX_FG_SPS] = {"foreground_samples_per_sec", "samples/s",
                        "the foreground job's global batch over its slowest rank's step time"},
    [LOG_MUX_BG_SPS] = {"background_samples_per_sec", "samples/s",
                        "samples the background ranks finished per second during the foreground's step, summed"},
    [LOG_MUX_TOTAL_SPS] = {"total_samples_per_sec", "samples/s", "foreground plus background samples per second"},
    [LOG_MUX_ACTIVE] = {"background_ranks_active", "ranks",
                        "foreground ranks whose background partner's gate let a piece of work through in the step"},
};


static const log_range_t mux_range[LOG_MUX_METRIC_COUNT] = {
    [LOG_MUX_FG_SPS] = LOG_RANGE_RATE,
    [LOG_MUX_BG_SPS] = LOG_RANGE_RATE,
    [LOG_MUX_TOTAL_SPS] = LOG_RANGE_RATE,
    [LOG_MUX_ACTIVE] = {0, LOG_MAX_RANKS, 1, 0, 0},
};
static const log_group_format_t mux_format = {
    .group = LOG_MUX_GROUP, .stepped = 1, .ncolumns = LOG_MUX_METRIC_COUNT, .column = log_multiplex_info,
    .range = mux_range, .nexpected = LOG_MUX_METRIC_COUNT,
};

static void *read_mux(log_reader_t *r, const log_data_t *L) {
  log_mux_t *m = xcalloc(1, sizeof *m);
  const char *group = LOG_MUX_GROUP;
  log_table_spec_t g = {.group = group, .prefix = "", .ndims = 1, .tolerance = log_reader_tolerance(r)};
  log_reader_table(r, &g, &m->series);
  log_table_limit_rows(&m->series, L->metrics.rows);
  hid_t gid = log_reader_group(r, group);
  log_reader_attr_string(r, gid, group, LOG_MUX_ROLE, m->role, sizeof m->role);
  log_reader_attr_string(r, gid, group, LOG_MUX_CHANNEL, m->channel, sizeof m->channel);
  log_reader_attr_string(r, gid, group, LOG_MUX_PRIORITY, m->priority, sizeof m->priority);
  log_reader_attr_string(r, gid, group, LOG_MUX_ON_FOREGROUND_END, m->on_foreground_end, sizeof m->on_foreground_end);
  m->fg_samples_per_sec = log_reader_attr_real(r, gid, group, log_multiplex_info[LOG_MUX_FG_SPS].name, 0, INFINITY);
  m->bg_samples_per_sec = log_reader_attr_real(r, gid, group, log_multiplex_info[LOG_MUX_BG_SPS].name, 0, INFINITY);
  m->total_samples_per_sec =
      log_reader_attr_real(r, gid, group, log_multiplex_info[LOG_MUX_TOTAL_SPS].name, 0, INFINITY);
  m->fg_slowdown = log_reader_attr_real(r, gid, group, LOG_MUX_FOREGROUND_SLOWDOWN, 0, INFINITY);
  log_reader_group_close(r, gid, group);
  return m;
}

static void free_mux(void *data) {
  log_mux_t *m = data;
  log_table_free(&m->series);
  free(m);
}

static const log_group_format_t *const mux_formats[] = {&mux_format};
const log_part_t mux_log_part = {.name = MUX_LOG_PART, .group = LOG_MUX_GROUP, .nformats = 1, .formats = mux_formats,
                                 .read = read_mux, .free = free_mux};
