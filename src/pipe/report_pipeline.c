/* A 3d run's pipeline (/pipeline): the summary section (grid, stages, measured against theoretical
 * bubble) and the Gantt chart of one step (every rank's forward and backward passes and waits).
 *
 * The measured bubble of a step: with span the time from the first pass of any rank to the end of
 * the last, and busy_r the time rank r spent in forward and backward passes,
 *   bubble = 1 - sum_r busy_r / (ranks * span),
 * the share of the ranks' time in the pipeline that was idle; the theory for equal stages is
 * (PP - 1) / (M + PP - 1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pipe/pipe_log.h"
#include "report/report.h"
#include "report/svg.h"

/* Colours of the event kinds (Okabe-Ito, as the phases): passes in blues, waits in oranges. */
static const char *const kind_color[LOG_PIPE_KIND_COUNT] = {
    [LOG_PIPE_FORWARD] = "#0072B2",         [LOG_PIPE_BACKWARD] = "#56B4E9", [LOG_PIPE_RECV_ACTIVATION] = "#E69F00",
    [LOG_PIPE_RECV_GRADIENT] = "#D55E00",   [LOG_PIPE_SEND_WAIT] = "#BBBBBB", [LOG_PIPE_GRAD_SYNC] = "#009E73",
    [LOG_PIPE_EMBED_SYNC] = "#CC79A7"};

/* The events of one logged step, as columns. */
typedef struct step_events {
  size_t n;
  size_t *row; /* (n) rows of /pipeline/events */
  const double *rank, *stage, *mb, *kind, *start, *end;
} step_events_t;

static step_events_t events_of(const log_pipe_t *p, double step) {
  step_events_t e = {0};
  const log_table_t *t = &p->events;
  const log_column_t *s = log_column(t, LOG_STEP);
  e.row = xcalloc(t->rows + 1, sizeof *e.row);
  if (!s) return e;
  for (size_t i = 0; i < t->rows; i++)
    if (s->v[i] == step) e.row[e.n++] = i;
  e.rank = log_column(t, log_pipe_info[LOG_PIPE_RANK].name)->v;
  e.stage = log_column(t, log_pipe_info[LOG_PIPE_STAGE].name)->v;
  e.mb = log_column(t, log_pipe_info[LOG_PIPE_MICRO_BATCH].name)->v;
  e.kind = log_column(t, log_pipe_info[LOG_PIPE_KIND].name)->v;
  e.start = log_column(t, log_pipe_info[LOG_PIPE_START].name)->v;
  e.end = log_column(t, log_pipe_info[LOG_PIPE_END].name)->v;
  return e;
}

static int is_pass(double kind) { return kind == LOG_PIPE_FORWARD || kind == LOG_PIPE_BACKWARD; }

static const log_pipe_t *pipe_of(const log_data_t *L) { return log_part_data(L, PIPE_LOG_PART); }

/* The measured bubble of a logged step (1 - the ranks' time in passes over ranks times the span from
 * the first pass to the end of the last; NaN when the step has no events); *span_s gets the span
 * (may be NULL). */
static double pipe_bubble(const log_data_t *L, double step, double *span_s) {
  step_events_t e = events_of(pipe_of(L), step);
  double lo = INFINITY, hi = -INFINITY, busy = 0;
  size_t ranks = L->ranks > 0 ? (size_t)L->ranks : 1;
  for (size_t k = 0; k < e.n; k++) {
    size_t i = e.row[k];
    if (!is_pass(e.kind[i]) || !isfinite(e.start[i]) || !isfinite(e.end[i])) continue;
    lo = fmin(lo, e.start[i]);
    hi = fmax(hi, e.end[i]);
    busy += e.end[i] - e.start[i];
  }
  free(e.row);
  if (span_s) *span_s = hi > lo ? hi - lo : NAN;
  return hi > lo ? 1.0 - busy / ((double)ranks * (hi - lo)) : NAN;
}

/* The steps that have events, in log order (distinct values of /pipeline/events/step). */
static size_t logged_steps(const log_pipe_t *p, double **steps) {
  const log_column_t *s = log_column(&p->events, LOG_STEP);
  *steps = xcalloc(p->events.rows + 1, sizeof **steps);
  size_t n = 0;
  for (size_t i = 0; s && i < p->events.rows; i++)
    if (n == 0 || (*steps)[n - 1] != s->v[i]) (*steps)[n++] = s->v[i];
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of the bubble over the logged steps (the first left out when there are 3 or more), with
 * how many were used. */
static double pipe_bubble_median(const log_data_t *L, size_t *used) {
  double *steps;
  size_t n = logged_steps(pipe_of(L), &steps), first = n >= 3 ? 1 : 0, m = 0; /* the first step warms up */
  double *b = xcalloc(n + 1, sizeof *b);
  for (size_t i = first; i < n; i++) {
    double v = pipe_bubble(L, steps[i], NULL);
    if (isfinite(v)) b[m++] = v;
  }
  qsort(b, m, sizeof *b, cmp_double);
  double med = m == 0 ? NAN : m % 2 ? b[m / 2] : 0.5 * (b[m / 2 - 1] + b[m / 2]);
  if (used) *used = m;
  free(b);
  free(steps);
  return med;
}

static const log_column_t *stage_column(const log_pipe_t *p, log_pipe_stage_column_t c) {
  return log_column(&p->stages, log_pipe_stage_info[c].name);
}

static void print_pipe(FILE *f, const log_data_t *L, const void *data, const report_values_t *v) {
  (void)v;
  const log_pipe_t *p = data;
  fprintf(f, "  tp %lld x pp %lld x dp %lld = %lld ranks, %lld micro-batch%s per step, schedule %s\n", p->tp, p->pp,
          p->dp, p->tp * p->pp * p->dp, p->micro_batches, p->micro_batches == 1 ? "" : "es", p->schedule);
  const log_column_t *first = stage_column(p, LOG_PIPE_STAGE_FIRST_BLOCK), *blocks = stage_column(p, LOG_PIPE_STAGE_BLOCKS),
                     *mflop = stage_column(p, LOG_PIPE_STAGE_MFLOP), *held = stage_column(p, LOG_PIPE_STAGE_HELD),
                     *bytes = stage_column(p, LOG_PIPE_STAGE_ACT_BYTES);
  if (first && blocks && mflop && held && bytes) {
    report_grid_t g;
    report_grid_init(&g, 5, "rlrrr");
    report_grid_add(&g, "stage");
    report_grid_add(&g, "blocks");
    report_grid_add(&g, "MFLOP/sample");
    report_grid_add(&g, "micro-batches held");
    report_grid_add(&g, "activations/rank");
    for (size_t s = 0; s < p->stages.rows; s++) {
      char mem[32];
      report_format_bytes(bytes->v[s], mem, sizeof mem);
      report_grid_add(&g, "%zu", s);
      report_grid_add(&g, "%.0f..%.0f", first->v[s], first->v[s] + blocks->v[s] - 1);
      report_grid_add(&g, "%.1f", mflop->v[s]);
      report_grid_add(&g, "%.0f", held->v[s]);
      report_grid_add(&g, "%s", mem);
    }
    report_grid_print(f, &g, "  ");
    report_grid_free(&g);
  }
  size_t used = 0;
  double measured = pipe_bubble_median(L, &used);
  if (used)
    fprintf(f, "  bubble: measured %.3f (median of %zu logged step%s), theory (PP-1)/(M+PP-1) = %.3f\n", measured, used,
            used == 1 ? "" : "s", p->bubble_theory);
  else
    fprintf(f, "  bubble: theory (PP-1)/(M+PP-1) = %.3f (no timeline logged: [log] timeline_every = 0?)\n",
            p->bubble_theory);
}

/* ---- the Gantt chart */

enum { GANTT_LEFT = 84, GANTT_TOP = 44, GANTT_BOTTOM = 64, GANTT_GAP = 28, GANTT_WIDTH = 720, GANTT_ROW = 28 };

/* The step the chart shows: `step`, else the median-time step, else the last step with events. */
static double chart_step(const log_data_t *L, double step) {
  double *steps;
  size_t n = logged_steps(pipe_of(L), &steps);
  double want = step;
  if (want < 0) {
    long row = report_median_row(L);
    want = row >= 0 ? log_column(&L->metrics, LOG_STEP)->v[row] : -1;
  }
  double pick = n ? steps[n - 1] : -1;
  for (size_t i = 0; i < n; i++)
    if (steps[i] == want) pick = want;
  if (step >= 0 && pick != step) pick = -1;
  free(steps);
  return pick;
}

static void gantt_bars(plot_t *p, const step_events_t *e, double t0, size_t ranks) {
  for (int kind = 0; kind < LOG_PIPE_KIND_COUNT; kind++) {
    char id[48];
    snprintf(id, sizeof id, "event-%s", log_pipe_kind_name[kind]);
    svg_group_begin(p->svg, "event", id, log_pipe_kind_name[kind]);
    double band = p->height / (double)ranks, bar = fmin(0.7 * band, 22);
    for (size_t k = 0; k < e->n; k++) {
      size_t i = e->row[k];
      if ((int)e->kind[i] != kind || e->rank[i] < 0 || e->rank[i] >= (double)ranks) continue;
      double a = 1e3 * (e->start[i] - t0), b = 1e3 * (e->end[i] - t0);
      double top = plot_y(p, (double)ranks - e->rank[i] - 0.5) - bar / 2, x0 = plot_x(p, a), x1 = plot_x(p, b);
      char tip[160];
      if (e->mb[i] >= 0)
        snprintf(tip, sizeof tip, "rank %.0f (stage %.0f), %s of micro-batch %.0f: %.3f to %.3f ms", e->rank[i],
                 e->stage[i], log_pipe_kind_name[kind], e->mb[i], a, b);
      else
        snprintf(tip, sizeof tip, "rank %.0f (stage %.0f), %s: %.3f to %.3f ms", e->rank[i], e->stage[i],
                 log_pipe_kind_name[kind], a, b);
      double h = is_pass(kind) ? bar : 0.45 * bar; /* waits as thin bars under the passes' height */
      svg_rect(p->svg, x0, top + (bar - h) / 2, fmax(x1 - x0, 0.5), h, kind_color[kind], "none", tip);
      char label[16];
      snprintf(label, sizeof label, "%.0f", e->mb[i]);
      if (is_pass(kind) && x1 - x0 >= plot_text_width(label, PLOT_FONT_TICK - 2) + 4)
        svg_text(p->svg, 0.5 * (x0 + x1), top + bar / 2 + 4, PLOT_FONT_TICK - 2, "middle", 0, "normal", label);
    }
    svg_group_end(p->svg);
  }
}

/* The Gantt chart of a step (step < 0: the median-time step, or the last logged) as SVG at path:
 * a row per rank, its passes (numbered by micro-batch) and waits. The name written is printed to out. */
static void gantt_write(const char *path, const char *label, const log_data_t *L, const void *data, double step,
                        FILE *out) {
  (void)data;
  double shown = chart_step(L, step);
  if (shown < 0) {
    fprintf(out, "  (no %s: %s logged no pipeline timeline%s)\n", path, L->path, step < 0 ? "" : " at that step");
    return;
  }
  step_events_t e = events_of(pipe_of(L), shown);
  size_t ranks = L->ranks > 0 ? (size_t)L->ranks : 1;
  double t0 = INFINITY, t1 = -INFINITY;
  for (size_t k = 0; k < e.n; k++) {
    t0 = fmin(t0, e.start[e.row[k]]);
    t1 = fmax(t1, e.end[e.row[k]]);
  }
  char **cat = xcalloc(ranks, sizeof(char *));
  for (size_t r = 0; r < ranks; r++) {
    cat[r] = xmalloc(32);
    snprintf(cat[r], 32, "%zu", r);
  }
  plot_legend_entry_t legend[LOG_PIPE_KIND_COUNT];
  for (int k = 0; k < LOG_PIPE_KIND_COUNT; k++) legend[k] = (plot_legend_entry_t){log_pipe_kind_name[k], kind_color[k], "", 0, 1};
  double bubble = pipe_bubble(L, shown, NULL);
  char title[320];
  snprintf(title, sizeof title, "%s: pipeline of step %.0f (tp %lld, pp %lld, dp %lld, %lld micro-batches, %s); bubble %.3f, "
           "theory %.3f", label, shown, pipe_of(L)->tp, pipe_of(L)->pp, pipe_of(L)->dp, pipe_of(L)->micro_batches, pipe_of(L)->schedule,
           bubble, pipe_of(L)->bubble_theory);
  double height = fmin(fmax(150, GANTT_ROW * (double)ranks), 900);
  double width = fmax(GANTT_LEFT + GANTT_WIDTH + GANTT_GAP + plot_legend_width(legend, LOG_PIPE_KIND_COUNT) + 12,
                      GANTT_LEFT + 1.15 * plot_text_width(title, PLOT_FONT_TITLE) + 12);
  plot_t p = {svg_open(path, width, GANTT_TOP + fmax(height + GANTT_BOTTOM, plot_legend_height(LOG_PIPE_KIND_COUNT) + 12),
                       title),
              GANTT_LEFT, GANTT_TOP, GANTT_WIDTH, height, plot_axis(0, e.n ? 1e3 * (t1 - t0) : 1, 8),
              (plot_axis_t){0, (double)ranks, 1, 0}};
  plot_frame(&p, title, "Time within the step (ms; numbers: micro-batches; thin bars: waits)", "Rank",
             (const char *const *)cat, (int)ranks);
  gantt_bars(&p, &e, t0, ranks);
  plot_legend(&p, p.left + p.width + GANTT_GAP, p.top, legend, LOG_PIPE_KIND_COUNT);
  svg_close(p.svg);
  fprintf(out, "  %s: pipeline Gantt chart of step %.0f, %s (bubble %.3f measured, %.3f theory)\n", path, shown,
          label, bubble, pipe_of(L)->bubble_theory);
  for (size_t r = 0; r < ranks; r++) free(cat[r]);
  free(cat);
  free(e.row);
}

const report_view_t pipe_report_view = {
    .part = PIPE_LOG_PART, .title = "Pipeline (3D parallelism)", .early = 0, .print = print_pipe,
    .figure = "pipeline", .figure_write = gantt_write,
};
