/* The figures of --plot DIR: loss and accuracy curves (one series per run) and a timeline of one
 * step per run (which phase each rank is in, stacked from the phase times in /ranks; a multiplexed
 * run's background or paused time as a thin bar under its rank's). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"
#include "report/svg.h"

enum {
  FIG_LEFT = 84,     /* room for the y label and tick labels */
  FIG_TOP = 44,      /* room for the title */
  FIG_BOTTOM = 64,   /* room for the x tick labels and label */
  FIG_GAP = 28,      /* between the plot and the legend */
  PLOT_WIDTH = 480,
  PLOT_HEIGHT = 300,
  MAX_POINTS = 1500, /* longer series are averaged over buckets of steps */
  RANK_ROW = 30      /* px per rank in a timeline */
};

/* Colours of runs (Okabe-Ito, without the yellow that vanishes on white); after them the dash
 * patterns repeat the colours. */
static const char *const run_colors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
static const char *const run_dashes[] = {"", "9,3,2,3", "2,3"};
enum { NCOLORS = sizeof run_colors / sizeof run_colors[0], NDASHES = sizeof run_dashes / sizeof run_dashes[0] };
#define EVAL_DASH "5,4"

const char *report_run_color(int r) { return run_colors[r % NCOLORS]; }
const char *report_run_dash(int r) { return run_dashes[(r / NCOLORS) % NDASHES]; }

/* ---- files ---- */

/* mkdir -p */
void report_make_dir(const char *dir) {
  char *p = xstrdup(dir);
  for (char *s = p + 1;; s++) {
    char c = *s;
    if (c != '/' && c != '\0') continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      surge_runtime_error("%s: cannot create the directory: %s", p, strerror(errno));
    *s = c;
    if (!c) break;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) surge_runtime_error("%s: not a directory", dir);
  free(p);
}

char *report_file_in(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *path = xmalloc(n);
  snprintf(path, n, "%s/%s", dir, name);
  return path;
}

/* ---- series ---- */

/* A run's series for a figure: x and scale*y, at most MAX_POINTS points (a longer series is averaged
 * over buckets of `bucket` rows; non-finite values are skipped, an empty bucket breaks the line). */
typedef struct curve {
  double *x, *y;
  size_t n, bucket;
} curve_t;

static curve_t curve_of(const log_table_t *g, const char *name, double scale) {
  curve_t c = {0};
  const log_column_t *xs = log_column(g, LOG_STEP), *ys = log_column(g, name);
  size_t rows = xs && ys ? g->rows : 0;
  c.bucket = rows > MAX_POINTS ? (rows + MAX_POINTS - 1) / MAX_POINTS : 1;
  c.x = xcalloc(rows / c.bucket + 1, sizeof(double));
  c.y = xcalloc(rows / c.bucket + 1, sizeof(double));
  for (size_t i = 0; i < rows; i += c.bucket) {
    double sx = 0, sy = 0;
    size_t k = 0;
    for (size_t j = i; j < i + c.bucket && j < rows; j++)
      if (isfinite(xs->v[j]) && isfinite(ys->v[j])) {
        sx += xs->v[j];
        sy += scale * ys->v[j];
        k++;
      }
    c.x[c.n] = k ? sx / (double)k : NAN;
    c.y[c.n++] = k ? sy / (double)k : NAN;
  }
  return c;
}

static void curve_free(curve_t *c) {
  free(c->x);
  free(c->y);
}

/* Extend [lo, hi] by the finite values of v. */
static void extend(double *lo, double *hi, const double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) {
      if (v[i] < *lo) *lo = v[i];
      if (v[i] > *hi) *hi = v[i];
    }
}

/* ---- figure layout ---- */

/* Open a figure with a plot area of plot_height px and room on the right for the legend. */
plot_t report_figure_open(const char *path, const char *title, plot_axis_t x, plot_axis_t y, double plot_height,
                          const plot_legend_entry_t *legend, int nlegend) {
  double width = fmax(FIG_LEFT + PLOT_WIDTH + FIG_GAP + plot_legend_width(legend, nlegend) + 12,
                      FIG_LEFT + 1.15 * plot_text_width(title, PLOT_FONT_TITLE) + 12); /* bold is wider */
  double height = FIG_TOP + fmax(plot_height + FIG_BOTTOM, plot_legend_height(nlegend) + 12);
  plot_t p = {svg_open(path, width, height, title), FIG_LEFT, FIG_TOP, PLOT_WIDTH, plot_height, x, y};
  return p;
}

void report_figure_close(plot_t *p, const plot_legend_entry_t *legend, int nlegend) {
  plot_legend(p, p->left + p->width + FIG_GAP, p->top, legend, nlegend);
  svg_close(p->svg);
}

/* ---- loss and accuracy ---- */

typedef struct curves {
  curve_t *train, *eval; /* (runs) */
  int any_eval;
  size_t bucket; /* largest averaging bucket of the training curves */
  double xlo, xhi, ylo, yhi;
} curves_t;

static curves_t curves_of(const report_table_t *t, const char *train, const char *eval, double scale) {
  curves_t c = {xcalloc((size_t)t->nrow, sizeof(curve_t)), xcalloc((size_t)t->nrow, sizeof(curve_t)), 0, 1, 0,
                -INFINITY, INFINITY, -INFINITY};
  for (int r = 0; r < t->nrow; r++) {
    if (train) c.train[r] = curve_of(&t->log[r]->metrics, train, scale);
    c.eval[r] = curve_of(&t->log[r]->eval, eval, scale);
    c.any_eval |= c.eval[r].n > 0;
    if (c.train[r].bucket > c.bucket) c.bucket = c.train[r].bucket;
    extend(&c.xlo, &c.xhi, c.train[r].x, c.train[r].n);
    extend(&c.xlo, &c.xhi, c.eval[r].x, c.eval[r].n);
    extend(&c.ylo, &c.yhi, c.train[r].y, c.train[r].n);
    extend(&c.ylo, &c.yhi, c.eval[r].y, c.eval[r].n);
  }
  if (c.xlo > c.xhi) c.xlo = 0, c.xhi = 1;
  if (c.ylo > c.yhi) c.ylo = 0, c.yhi = 1;
  return c;
}

static void curves_free(curves_t *c, int n) {
  for (int r = 0; r < n; r++) {
    curve_free(&c->train[r]);
    curve_free(&c->eval[r]);
  }
  free(c->train);
  free(c->eval);
}

/* Legend: one entry per run, then (with two kinds of curve) what solid and dashed mean. */
static int run_legend(const report_table_t *t, plot_legend_entry_t *e, int with_kinds, int marker) {
  int n = 0;
  for (int r = 0; r < t->nrow; r++) e[n++] = (plot_legend_entry_t){t->label[r], report_run_color(r), report_run_dash(r), marker, 0};
  if (with_kinds) {
    e[n++] = (plot_legend_entry_t){"training", "#555555", "", 0, 0};
    e[n++] = (plot_legend_entry_t){"evaluation", "#555555", EVAL_DASH, 1, 0};
  }
  return n;
}

static void write_loss(const char *dir, const report_table_t *t, FILE *out) {
  curves_t c = curves_of(t, log_metric_info[LOG_LOSS].name, log_eval_info[LOG_EVAL_LOSS].name, 1);
  plot_legend_entry_t *legend = xcalloc((size_t)t->nrow + 2, sizeof *legend);
  int nlegend = run_legend(t, legend, c.any_eval, 0);
  char title[160];
  snprintf(title, sizeof title, "%s loss%s", c.any_eval ? "Training and evaluation" : "Training",
           c.bucket > 1 ? " (training: mean of every " : "");
  if (c.bucket > 1) snprintf(title + strlen(title), sizeof title - strlen(title), "%zu steps)", c.bucket);
  char *path = report_file_in(dir, "loss.svg");
  plot_t p = report_figure_open(path, title, plot_axis(0, c.xhi, 6), plot_axis(c.ylo, c.yhi, 6), PLOT_HEIGHT, legend, nlegend);
  plot_frame(&p, title, "Step", "Loss (nats)", NULL, 0);
  for (int r = 0; r < t->nrow; r++) {
    char id[32];
    snprintf(id, sizeof id, "train-%d", r + 1);
    plot_series(&p, "series train", id, t->label[r], c.train[r].x, c.train[r].y, c.train[r].n, report_run_color(r),
                report_run_dash(r), 0);
    if (!c.eval[r].n) continue;
    snprintf(id, sizeof id, "eval-%d", r + 1);
    plot_series(&p, "series eval", id, t->label[r], c.eval[r].x, c.eval[r].y, c.eval[r].n, report_run_color(r), EVAL_DASH,
                1);
  }
  report_figure_close(&p, legend, nlegend);
  fprintf(out, "  %s: training%s loss of %d run%s\n", path, c.any_eval ? " and evaluation" : "", t->nrow,
          t->nrow == 1 ? "" : "s");
  free(path);
  free(legend);
  curves_free(&c, t->nrow);
}

static void write_accuracy(const char *dir, const report_table_t *t, FILE *out) {
  curves_t c = curves_of(t, NULL, log_eval_info[LOG_EVAL_ACCURACY].name, 100);
  if (!c.any_eval) {
    fprintf(out, "  (no accuracy figure: no run logged an evaluation)\n");
    curves_free(&c, t->nrow);
    return;
  }
  plot_legend_entry_t *legend = xcalloc((size_t)t->nrow, sizeof *legend);
  int nlegend = run_legend(t, legend, 0, 1);
  plot_axis_t y = plot_axis(c.ylo, c.yhi, 6);
  if (y.lo < 0) y.lo = 0;
  if (y.hi > 100) y.hi = 100;
  char *path = report_file_in(dir, "accuracy.svg");
  const char *title = "Evaluation accuracy";
  plot_t p = report_figure_open(path, title, plot_axis(0, c.xhi, 6), y, PLOT_HEIGHT, legend, nlegend);
  plot_frame(&p, title, "Step", "Accuracy (%)", NULL, 0);
  for (int r = 0; r < t->nrow; r++) {
    char id[32];
    snprintf(id, sizeof id, "accuracy-%d", r + 1);
    plot_series(&p, "series accuracy", id, t->label[r], c.eval[r].x, c.eval[r].y, c.eval[r].n, report_run_color(r),
                report_run_dash(r), 1);
  }
  report_figure_close(&p, legend, nlegend);
  fprintf(out, "  %s: evaluation accuracy of %d run%s\n", path, t->nrow, t->nrow == 1 ? "" : "s");
  free(path);
  free(legend);
  curves_free(&c, t->nrow);
}

/* ---- the timeline of one step ---- */

/* The row of L the timeline shows: `step`, or the median-time step when step < 0; -1 for none. */
static long timeline_row(const log_data_t *L, double step) {
  return step < 0 ? report_median_row(L) : report_row_of_step(L, step);
}

/* Whether column i of /ranks is drawn as a thin bar under its rank's stacked bar (an overlapping
 * phase of a multiplexed run: how long, not when). */
static int in_lane(const log_data_t *L, int i) {
  return report_phase_kind(L->phases.col[i].name + strlen(LOG_PHASE_PREFIX)).overlap != NULL;
}

static int any_lane(const log_data_t *L) {
  for (int i = 0; i < L->phases.ncol; i++)
    if (in_lane(L, i) && report_phase_shown(L, i)) return 1;
  return 0;
}

/* The ranks' bars: phases stacked in execution order, one <g class="phase"> per phase; overlapping
 * phases (multiplexing) as thin bars from 0 under them, one <g class="phase overlap"> each. */
static void timeline_bars(plot_t *p, const log_data_t *L, long row) {
  const log_table_t *P = &L->phases;
  size_t ranks = L->phase_ranks;
  double *start = xcalloc(ranks, sizeof(double)); /* (ranks) ms where the next phase begins */
  double band = p->height / (double)ranks, bar = fmin(0.62 * band, 26);
  int lanes = any_lane(L);
  double stacked = lanes ? 0.65 * bar : bar, lane = 0.3 * bar; /* heights; a gap of 0.05 bar between */
  for (int i = 0; i < P->ncol; i++) {
    if (!report_phase_shown(L, i)) continue;
    const char *phase = P->col[i].name + strlen(LOG_PHASE_PREFIX);
    report_phase_kind_t kind = report_phase_kind(phase);
    char id[80];
    snprintf(id, sizeof id, "phase-%s", phase);
    svg_group_begin(p->svg, kind.overlap ? "phase overlap" : "phase", id, phase);
    for (size_t r = 0; r < ranks; r++) {
      double ms = 1e3 * P->col[i].v[(size_t)row * P->col[i].cols + r];
      if (!isfinite(ms) || ms <= 0) continue;
      char tip[160];
      double top = plot_y(p, (double)(ranks - r) - 0.5) - bar / 2;
      if (kind.overlap) {
        snprintf(tip, sizeof tip, "rank %zu, %s: %.3f ms (%s during the step)", r, phase, ms, kind.overlap);
        svg_rect(p->svg, plot_x(p, 0), top + bar - lane, plot_x(p, ms) - plot_x(p, 0), lane, kind.color, "none", tip);
        continue;
      }
      snprintf(tip, sizeof tip, "rank %zu, %s: %.3f ms", r, phase, ms);
      double x0 = plot_x(p, start[r]), x1 = plot_x(p, start[r] + ms);
      svg_rect(p->svg, x0, top, x1 - x0, stacked, kind.color, "none", tip);
      start[r] += ms;
    }
    svg_group_end(p->svg);
  }
  free(start);
}

/* A figure of row r of a table of nrow runs: STEM.svg for one run, STEM-K.svg for row K. */
static void row_figure_name(const char *stem, int nrow, int r, char *name, size_t n) {
  if (nrow == 1) snprintf(name, n, "%s.svg", stem);
  else snprintf(name, n, "%s-%d.svg", stem, r + 1);
}

static void timeline_name(int nrow, int r, char *name, size_t n) { row_figure_name("timeline", nrow, r, name, n); }

/* Append dir/name to paths unless it is there already (a surge-sim figure may share a view's name). */
static void add_path(char **paths, int *k, const char *dir, const char *name) {
  char *p = report_file_in(dir, name);
  for (int i = 0; i < *k; i++)
    if (strcmp(paths[i], p) == 0) {
      free(p);
      return;
    }
  paths[(*k)++] = p;
}

char **report_figure_paths(const char *dir, int nrow, int *n) {
  static const char *const whole[] = {"loss.svg", "accuracy.svg"};
  enum { NWHOLE = sizeof whole / sizeof whole[0] };
  int nviews, nsim = 0;
  const report_view_t *const *view = report_views(&nviews);
  while (report_sim_figures[nsim]) nsim++;
  char **paths = xcalloc((size_t)(1 + nviews) * (size_t)nrow + NWHOLE + (size_t)nsim, sizeof *paths), name[48];
  int k = 0;
  for (int i = 0; i < NWHOLE; i++) add_path(paths, &k, dir, whole[i]);
  for (int i = 0; i < nsim; i++) add_path(paths, &k, dir, report_sim_figures[i]);
  for (int r = 0; r < nrow; r++) {
    timeline_name(nrow, r, name, sizeof name);
    add_path(paths, &k, dir, name);
    for (int i = 0; i < nviews; i++) {
      if (!view[i]->figure) continue;
      row_figure_name(view[i]->figure, nrow, r, name, sizeof name);
      add_path(paths, &k, dir, name);
    }
  }
  *n = k;
  return paths;
}

static void write_timeline(const char *dir, const report_table_t *t, int r, double step, FILE *out) {
  const log_data_t *L = t->log[r];
  char name[48];
  timeline_name(t->nrow, r, name, sizeof name);
  long row = timeline_row(L, step);
  if (row < 0 || row >= (long)L->phases.rows || L->phase_ranks == 0 || L->phases.ncol == 0) {
    fprintf(out, "  (no %s: %s logged no phase times%s)\n", name, L->path, step < 0 ? "" : " at that step");
    return;
  }
  const log_table_t *P = &L->phases;
  size_t ranks = L->phase_ranks;
  double shown = log_column(&L->metrics, LOG_STEP)->v[row];
  const log_column_t *st = log_column(&L->metrics, log_metric_info[LOG_STEP_TIME].name);
  double step_ms = st ? 1e3 * st->v[row] : NAN, xhi = isfinite(step_ms) ? step_ms : 0;
  char **cat = xcalloc(ranks, sizeof(char *));
  for (size_t k = 0; k < ranks; k++) {
    double total = 0;
    for (int i = 0; i < P->ncol; i++) {
      double ms = 1e3 * P->col[i].v[(size_t)row * P->col[i].cols + k];
      if (!isfinite(ms)) continue;
      if (in_lane(L, i)) xhi = fmax(xhi, ms);
      else total += ms;
    }
    if (total > xhi) xhi = total;
    cat[k] = xmalloc(32);
    snprintf(cat[k], 32, "%zu", k);
  }
  plot_legend_entry_t *legend = xcalloc((size_t)P->ncol + 1, sizeof *legend);
  char **labels = xcalloc((size_t)P->ncol + 1, sizeof(char *));
  int nlegend = 0;
  for (int i = 0; i < P->ncol; i++) {
    if (!report_phase_shown(L, i)) continue;
    report_phase_kind_t kind = report_phase_kind(P->col[i].name + strlen(LOG_PHASE_PREFIX));
    size_t n = strlen(kind.name) + (kind.overlap ? strlen(kind.overlap) + 4 : 0) + 1;
    labels[nlegend] = xmalloc(n);
    if (kind.overlap) snprintf(labels[nlegend], n, "%s (%s)", kind.name, kind.overlap);
    else snprintf(labels[nlegend], n, "%s", kind.name);
    legend[nlegend] = (plot_legend_entry_t){labels[nlegend], kind.color, "", 0, 1};
    nlegend++;
  }
  if (isfinite(step_ms)) legend[nlegend++] = (plot_legend_entry_t){"step time", "#000000", "4,3", 0, 0};
  char title[256], xlabel[128];
  snprintf(title, sizeof title, "%s: phases of step %.0f per rank", t->label[r], shown);
  snprintf(xlabel, sizeof xlabel, "Time within the step (ms; phases stacked in execution order%s)",
           any_lane(L) ? "; thin bars: how long" : "");
  double height = fmin(fmax(150, RANK_ROW * (double)ranks), 720);
  char *path = report_file_in(dir, name);
  plot_t p = report_figure_open(path, title, plot_axis(0, xhi, 6), (plot_axis_t){0, (double)ranks, 1, 0}, height, legend,
                         nlegend);
  plot_frame(&p, title, xlabel, "Rank", (const char *const *)cat, (int)ranks);
  timeline_bars(&p, L, row);
  if (isfinite(step_ms)) {
    svg_group_begin(p.svg, "step-time", "step-time", "wall time of the step on the slowest rank");
    svg_line(p.svg, plot_x(&p, step_ms), p.top, plot_x(&p, step_ms), p.top + p.height, "#000000", 1.5, "4,3");
    svg_group_end(p.svg);
  }
  report_figure_close(&p, legend, nlegend);
  fprintf(out, "  %s: phases of step %.0f per rank, %s\n", path, shown, t->label[r]);
  free(path);
  for (int i = 0; i < P->ncol; i++) free(labels[i]);
  free(labels);
  free(legend);
  for (size_t k = 0; k < ranks; k++) free(cat[k]);
  free(cat);
}

/* The figures of the parts' views for row r: DIR/<figure>.svg, or DIR/<figure>-K.svg for row K. */
static void write_views(const char *dir, const report_table_t *t, int r, double step, FILE *out) {
  int nviews;
  const report_view_t *const *view = report_views(&nviews);
  for (int i = 0; i < nviews; i++) {
    const void *data = log_part_data(t->log[r], view[i]->part);
    if (!data || !view[i]->figure_write) continue;
    char name[48];
    row_figure_name(view[i]->figure, t->nrow, r, name, sizeof name);
    char *path = report_file_in(dir, name);
    view[i]->figure_write(path, t->label[r], t->log[r], data, step, out);
    free(path);
  }
}

void report_figures_write(const char *dir, const report_table_t *t, double step, FILE *out) {
  report_make_dir(dir);
  write_loss(dir, t, out);
  write_accuracy(dir, t, out);
  for (int r = 0; r < t->nrow; r++) write_timeline(dir, t, r, step, out);
  for (int r = 0; r < t->nrow; r++) write_views(dir, t, r, step, out);
}
