/* The multiplexing section of the one-run summary (logs with /multiplex, doc/formats.md): the run's
 * role and setting, foreground / background / total samples/s as the run totalled them and as the
 * medians of its per-step series, and then for a foreground its slowdown and how often its
 * background partner ran, for a background how much of its time it spent paused at the gate. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mux/mux_log.h"
#include "report/report.h"

/* "6622.5", or "-" for a value the log does not hold (a run killed before it totalled). */
static const char *rate(double x, char *buf, size_t n) {
  if (isfinite(x)) snprintf(buf, n, "%.1f", x);
  else snprintf(buf, n, "-");
  return buf;
}

static void print_rates(FILE *f, const char *head, double fg, double bg, double total, const char *how) {
  char a[32], b[32], c[32];
  fprintf(f, "  %-10s  foreground %s, background %s, total %s (%s)\n", head, rate(fg, a, sizeof a),
          rate(bg, b, sizeof b), rate(total, c, sizeof c), how);
}

static double series_median(const log_mux_t *m, const char *name) {
  const log_column_t *c = log_column(&m->series, name);
  return c ? report_column_median(c, m->series.rows) : NAN;
}

/* The foreground-only log a foreground's slowdown was measured against ([multiplex] baseline, in
 * decks that have the key); NULL when there is none. */
static const char *baseline(const log_data_t *L) {
  const char *b = log_setting(L, "multiplex.baseline");
  return b && b[0] && strcmp(b, "\"\"") != 0 ? b : NULL;
}

/* Foreground: the slowdown the run measured, and the steps in which a partner ran. */
static void print_foreground(FILE *f, const log_data_t *L, const log_mux_t *m) {
  if (isfinite(m->fg_slowdown) && baseline(L))
    fprintf(f, "  slowdown    %.3f (samples/s of the foreground-only run %s over this run's)\n", m->fg_slowdown,
            baseline(L));
  else if (isfinite(m->fg_slowdown))
    fprintf(f, "  slowdown    %.3f (mean foreground step with a background partner / without)\n", m->fg_slowdown);
  else
    fprintf(f, "  slowdown    not measured in this run: compare samples/s with a foreground-only log "
               "(surge-report FG.h5 SOLO.h5), or rerun with [multiplex] baseline = SOLO.h5\n");
  const log_column_t *active = log_column(&m->series, log_multiplex_info[LOG_MUX_ACTIVE].name);
  size_t steps = 0, ran = 0;
  double ranks = 0;
  for (size_t i = 0; active && i < m->series.rows; i++)
    if (isfinite(active->v[i])) {
      steps++;
      ran += active->v[i] > 0;
      ranks += active->v[i];
    }
  if (steps)
    fprintf(f, "  partner     ran in %zu of %zu steps (%.1f%%), on %.2f foreground ranks per step on average\n", ran,
            steps, 100.0 * (double)ran / (double)steps, ranks / (double)steps);
}

/* Background: per rank, its time paused at the gate over the summed step time. */
static void print_background(FILE *f, const log_data_t *L) {
  char paused_name[64];
  snprintf(paused_name, sizeof paused_name, LOG_PHASE_PREFIX "%s", log_phase_info[PHASE_PAUSED].name);
  const log_column_t *paused = log_column(&L->phases, paused_name),
                     *step = log_column(&L->metrics, log_metric_info[LOG_STEP_TIME].name);
  if (!paused || !step || !L->phases.rows) return;
  double seconds = report_column_sum(step, L->phases.rows, 0);
  report_grid_t g;
  report_grid_init(&g, 4, "r");
  report_grid_add(&g, "rank");
  report_grid_add(&g, "paused s");
  report_grid_add(&g, "step time s");
  report_grid_add(&g, "paused");
  for (size_t r = 0; r < L->phase_ranks; r++) {
    double p = report_column_sum(paused, L->phases.rows, r);
    report_grid_add(&g, "%zu", r);
    report_grid_add(&g, "%.4f", p);
    report_grid_add(&g, "%.4f", seconds);
    if (seconds > 0) report_grid_add(&g, "%.1f%%", 100 * p / seconds);
    else report_grid_add(&g, "-");
  }
  fprintf(f, "  paused      at the gate until the foreground was idle, over %zu steps: sum of /ranks/phase_paused / "
             "sum of /metrics/step_time\n",
          L->phases.rows);
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
}

static void print_mux(FILE *f, const log_data_t *L, const void *data, const report_values_t *v) {
  (void)v;
  const log_mux_t *m = data;
  fprintf(f, "  role        %s on channel %s, CPU priority %s, on_foreground_end %s\n", m->role[0] ? m->role : "-",
          m->channel[0] ? m->channel : "-", m->priority[0] ? m->priority : "-",
          m->on_foreground_end[0] ? m->on_foreground_end : "-");
  int totalled = isfinite(m->fg_samples_per_sec) || isfinite(m->bg_samples_per_sec);
  print_rates(f, "samples/s", m->fg_samples_per_sec, m->bg_samples_per_sec, m->total_samples_per_sec,
              totalled ? "the run's totals" : "the run's totals: written when it ends");
  if (m->series.rows) {
    char how[96];
    const log_column_t *total = log_column(&m->series, log_multiplex_info[LOG_MUX_TOTAL_SPS].name);
    size_t valued = 0; /* rows a resumed run without multiplexing padded hold no value */
    for (size_t r = 0; total && r < m->series.rows; r++) valued += isfinite(total->v[r]) != 0;
    if (!total || valued == m->series.rows) snprintf(how, sizeof how, "medians over %zu steps", m->series.rows);
    else snprintf(how, sizeof how, "medians over the %zu of %zu steps with values", valued, m->series.rows);
    print_rates(f, "per step", series_median(m, log_multiplex_info[LOG_MUX_FG_SPS].name),
                series_median(m, log_multiplex_info[LOG_MUX_BG_SPS].name), series_median(m, log_multiplex_info[LOG_MUX_TOTAL_SPS].name), how);
  }
  if (strcmp(m->role, "foreground") == 0) {
    print_foreground(f, L, m);
  } else if (strcmp(m->role, "background") == 0) {
    if (isfinite(m->fg_slowdown))
      fprintf(f, "  slowdown    %.3f (its foreground's, as the foreground measured it)\n", m->fg_slowdown);
    print_background(f, L);
  }
}

static const log_table_t *mux_series(const void *data) { return &((const log_mux_t *)data)->series; }

/* The JSON export's "multiplex": the attributes (NaN as null) and, under "series", the datasets. */
static void mux_json(report_json_t *o, const void *data) {
  const log_mux_t *m = data;
  report_json_string(o, "role", m->role);
  report_json_string(o, "channel", m->channel);
  report_json_string(o, "priority", m->priority);
  report_json_string(o, "on_foreground_end", m->on_foreground_end);
  report_json_number(o, "foreground_samples_per_sec", m->fg_samples_per_sec);
  report_json_number(o, "background_samples_per_sec", m->bg_samples_per_sec);
  report_json_number(o, "total_samples_per_sec", m->total_samples_per_sec);
  report_json_number(o, "foreground_slowdown", m->fg_slowdown);
  report_json_table(o, "series", &m->series, LOG_MUX_GROUP, 1);
}

/* Columns of the table of many runs when some run is multiplexed: its role ("none" for a run that is
 * not) and the /multiplex totals. A foreground's row beside a foreground-only run of the same deck
 * shows the slowdown as their samples_per_sec. */
static const char *const mux_columns[] = {"role", "foreground_samples_per_sec", "background_samples_per_sec",
                                          "total_samples_per_sec", NULL};

static void mux_cells(const void *data, report_cell_t *c) {
  const log_mux_t *m = data;
  c[0] = report_text_cell(m ? m->role : "none");
  c[1] = report_number_cell(m ? m->fg_samples_per_sec : NAN, "%.1f");
  c[2] = report_number_cell(m ? m->bg_samples_per_sec : NAN, "%.1f");
  c[3] = report_number_cell(m ? m->total_samples_per_sec : NAN, "%.1f");
}

const report_view_t mux_report_view = {
    .part = MUX_LOG_PART, .title = "Multiplexing (foreground/background)", .early = 1, .print = print_mux,
    .step_series = mux_series, .series_group = LOG_MUX_GROUP, .json_key = "multiplex", .json = mux_json,
    .table_columns = mux_columns, .table_cells = mux_cells,
};
