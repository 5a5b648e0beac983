/* surge-report on a surge-sim file (/sim, doc/sim.md): a summary, and with --plot DIR the figures
 *   frontier.svg     every rank count's frontier, iteration time and rank-time relative to data
 *                    parallelism's (which sits at 1, 1), the fastest and the best plan marked
 *   throughput.svg   cluster throughput over data parallelism alone against the rank count: the
 *                    fastest plan, the best plan with a background, the best plan's foreground alone
 *   pipeline.svg, pipeline-compressed.svg   a 3D run's 1F1B timeline, one row per stage */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/infile.h"
#include "io/h5util.h"
#include "io/printable.h"
#include "report/report.h"
#include "sim/sim_read.h"
#include "report/svg.h"

/* what surge-sim writes (src/apps/surge_sim.c, src/sim/sim_h5.c) */
#define RANKS ((sim_range_t){1, 1 << 24, 1})
#define BATCH ((sim_range_t){1, INT32_MAX, 1})
#define STAGES ((sim_range_t){1, 1 << 20, 1})
#define FLAG ((sim_range_t){0, 1, 1})
#define FRACTION ((sim_range_t){0, 1, 0})

const char *const report_sim_figures[] = {"frontier.svg", "throughput.svg", "pipeline.svg", "pipeline-compressed.svg",
                                          NULL};

int report_sim_is(const char *path) {
  if (infile_check(path, 0, NULL) != 0) return 0; /* missing: log_read says so */
  h5util_quiet_t q = h5util_quiet_begin();
  int yes = 0;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) {
    hid_t g = H5Lexists(f, "sim", H5P_DEFAULT) > 0 ? H5Gopen2(f, "sim", H5P_DEFAULT) : -1;
    char *format = NULL;
    yes = g >= 0 && h5util_attr_read_string(g, "format", &format) == 0 && strcmp(format, "surge-sim") == 0;
    free(format);
    if (g >= 0) H5Gclose(g);
    H5Fclose(f);
  }
  h5util_quiet_end(q);
  return yes;
}

/* ---- burst ---- */

enum { FIG_W = 480, FIG_H = 300 };

static void plot_frontiers(const char *dir, const sim_group_t *burst, const sim_vec_t *ranks, FILE *out) {
  int n = (int)ranks->n;
  plot_legend_entry_t *legend = xcalloc((size_t)n + 2, sizeof *legend);
  char (*labels)[32] = xcalloc((size_t)n, sizeof *labels);
  double xhi = 1.2, yhi = 1.2;
  sim_vec_t *fi = xcalloc((size_t)n, sizeof *fi), *fr = xcalloc((size_t)n, sizeof *fr);
  sim_vec_t dpi = sim_read_vec(burst, "dp_iter_us", ranks->n, SIM_DIVISOR);
  sim_vec_t dpr = sim_read_vec(burst, "dp_rank_us", ranks->n, SIM_DIVISOR);
  sim_vec_t batch = sim_read_vec(burst, "global_batch", ranks->n, BATCH);
  for (int x = 0; x < n; x++) {
    /* the rank count's group: G<ranks>, or G<ranks>_B<batch> when an earlier row had those ranks */
    char name[64], where[96];
    int again = 0;
    for (int y = 0; y < x; y++) again |= ranks->v[y] == ranks->v[x];
    if (again)
      snprintf(name, sizeof name, "G%.0f_B%.0f", ranks->v[x], batch.v[x]);
    else
      snprintf(name, sizeof name, "G%.0f", ranks->v[x]);
    if (h5util_exists(burst->id, name, H5I_GROUP) != 1)
      surge_input_error("%s: no group /sim/burst/%s (a damaged or foreign surge-sim file)", burst->path, name);
    snprintf(where, sizeof where, "/sim/burst/%s", name);
    sim_group_t gg = {burst->path, H5Gopen2(burst->id, name, H5P_DEFAULT), where};
    fi[x] = sim_read_vec(&gg, "frontier_iter_us", SIM_READ_ANY_ROWS, SIM_NUMBER);
    fr[x] = sim_read_vec(&gg, "frontier_rank_us", fi[x].n, SIM_NUMBER);
    H5Gclose(gg.id);
    for (size_t k = 0; k < fi[x].n; k++) {
      fi[x].v[k] /= dpi.v[x];
      fr[x].v[k] /= dpr.v[x];
      if (fi[x].v[k] < 6 && fi[x].v[k] > xhi) xhi = fi[x].v[k];
      if (fr[x].v[k] > yhi) yhi = fr[x].v[k];
    }
    snprintf(labels[x], sizeof labels[x], again ? "G = %.0f, B = %.0f" : "G = %.0f", ranks->v[x], batch.v[x]);
    legend[x] = (plot_legend_entry_t){labels[x], report_run_color(x), report_run_dash(x), 0, 0};
  }
  legend[n] = (plot_legend_entry_t){"data parallel", "#000000", "", 1, 0};
  char *file = report_file_in(dir, "frontier.svg");
  plot_t p = report_figure_open(file, "Pareto frontiers, relative to data parallelism", plot_axis(0, xhi, 6),
                                plot_axis(0, yhi, 6), FIG_H, legend, n + 1);
  plot_frame(&p, "Pareto frontiers, relative to data parallelism", "iteration time / data parallel's",
             "rank-time / data parallel's", NULL, 0);
  for (int x = 0; x < n; x++) {
    /* clip the far left of very lean plans (one rank) to the axis */
    for (size_t k = 0; k < fi[x].n; k++)
      if (fi[x].v[k] > xhi) fi[x].v[k] = NAN;
    plot_series(&p, "series frontier", labels[x], labels[x], fi[x].v, fr[x].v, fi[x].n, report_run_color(x),
                report_run_dash(x), 0);
  }
  svg_circle(p.svg, plot_x(&p, 1), plot_y(&p, 1), 5, "#000000", "none");
  report_figure_close(&p, legend, n + 1);
  fprintf(out, "  %s\n", file);
  free(file);
  for (int x = 0; x < n; x++) free(fi[x].v), free(fr[x].v);
  free(fi);
  free(fr);
  free(dpi.v);
  free(dpr.v);
  free(batch.v);
  free(labels);
  free(legend);
}

static void plot_throughput(const char *dir, const sim_group_t *burst, const sim_vec_t *ranks, FILE *out) {
  sim_vec_t v[3];
  v[0] = sim_read_vec(burst, "fastest_over_dp", ranks->n, SIM_NUMBER);
  v[1] = sim_read_vec(burst, "best_over_dp", ranks->n, SIM_NUMBER);
  sim_vec_t bfg = sim_read_vec(burst, "best_fg_samples_per_s", ranks->n, SIM_NUMBER);
  sim_vec_t dps = sim_read_vec(burst, "dp_total_samples_per_s", ranks->n, SIM_DIVISOR);
  v[2] = (sim_vec_t){bfg.n, xcalloc(bfg.n + 1, sizeof(double))};
  for (size_t k = 0; k < bfg.n; k++) v[2].v[k] = bfg.v[k] / dps.v[k];
  double *lx = xcalloc(ranks->n + 1, sizeof(double)), hi = 1;
  for (size_t k = 0; k < ranks->n; k++) lx[k] = log2(ranks->v[k]);
  for (int s = 0; s < 3; s++)
    for (size_t k = 0; k < v[s].n; k++)
      if (v[s].v[k] > hi) hi = v[s].v[k];
  plot_legend_entry_t legend[3] = {{"fastest plan + background", report_run_color(0), "", 1, 0},
                                   {"best plan + background", report_run_color(1), "", 1, 0},
                                   {"best plan's foreground alone", report_run_color(2), "5,4", 1, 0}};
  char *file = report_file_in(dir, "throughput.svg");
  plot_t p = report_figure_open(file, "Cluster throughput over data parallelism alone",
                                plot_axis(lx[0] - 0.5, lx[ranks->n - 1] + 0.5, 6), plot_axis(0, hi * 1.1, 6), FIG_H,
                                legend, 3);
  plot_frame(&p, "Cluster throughput over data parallelism alone", "log2 ranks", "samples/s over data parallel's",
             NULL, 0);
  svg_line(p.svg, p.left, plot_y(&p, 1), p.left + p.width, plot_y(&p, 1), "#888888", 1, "3,3");
  for (int s = 0; s < 3; s++)
    plot_series(&p, "series throughput", legend[s].label, legend[s].label, lx, v[s].v, v[s].n, legend[s].color,
                legend[s].dash, 1);
  report_figure_close(&p, legend, 3);
  fprintf(out, "  %s\n", file);
  free(file);
  for (int s = 0; s < 3; s++) free(v[s].v);
  free(bfg.v);
  free(dps.v);
  free(lx);
}

static void burst_summary(FILE *f, const sim_group_t *burst, const sim_vec_t *ranks) {
  size_t n = ranks->n;
  sim_vec_t B = sim_read_vec(burst, "global_batch", n, BATCH);
  sim_vec_t fast = sim_read_vec(burst, "fastest_over_dp", n, SIM_NUMBER);
  sim_vec_t best = sim_read_vec(burst, "best_over_dp", n, SIM_NUMBER);
  sim_vec_t dpt = sim_read_vec(burst, "dp_iter_us", n, SIM_DIVISOR);
  sim_vec_t ft = sim_read_vec(burst, "fastest_iter_us", n, SIM_NUMBER);
  sim_vec_t bi = sim_read_vec(burst, "best_idle_rank_us", n, SIM_NUMBER);
  sim_vec_t bt = sim_read_vec(burst, "best_iter_us", n, SIM_DIVISOR);
  fprintf(f, "Burst plans with a background against data parallelism alone\n");
  fprintf(f, "  %7s %7s %12s %12s %11s %11s %10s\n", "ranks", "batch", "dp_iter_us", "fast_iter_us", "fast+bg/dp", "best+bg/dp",
          "best_idle");
  for (size_t k = 0; k < n; k++)
    fprintf(f, "  %7.0f %7.0f %12.1f %12.1f %10.3fx %10.3fx %9.1f%%\n", ranks->v[k], B.v[k], dpt.v[k], ft.v[k], fast.v[k],
            best.v[k], 100 * bi.v[k] / (bt.v[k] * ranks->v[k]));
  free(B.v), free(fast.v), free(best.v), free(dpt.v), free(ft.v), free(bi.v), free(bt.v);
}

/* ---- 3D ---- */

/* The grid a timeline must fit: pp stages, micro_batches per stage, 2 operations of each. */
typedef struct grid {
  double pp, micro_batches;
  size_t ops;
} grid_t;

static grid_t read_grid(const sim_group_t *pipe) {
  grid_t g = {sim_read_attr(pipe, "pp", STAGES), sim_read_attr(pipe, "micro_batches", BATCH), 0};
  g.ops = (size_t)g.pp * 2 * (size_t)g.micro_batches; /* at most 2^20 x 2 x 2^31 */
  return g;
}

/* /sim/pipeline/<prefix>op_<what>, one row per operation of the grid */
static sim_vec_t read_op(const sim_group_t *pipe, const grid_t *g, const char *prefix, const char *what,
                         sim_range_t r) {
  char name[64];
  snprintf(name, sizeof name, "%sop_%s", prefix, what);
  return sim_read_vec(pipe, name, g->ops, r);
}

static void plot_pipeline(const char *dir, const sim_group_t *pipe, const char *prefix, const char *fname, FILE *out) {
  grid_t g = read_grid(pipe);
  sim_vec_t stage = read_op(pipe, &g, prefix, "stage", (sim_range_t){0, g.pp - 1, 1});
  sim_vec_t kind = read_op(pipe, &g, prefix, "kind", FLAG);
  sim_vec_t mb = read_op(pipe, &g, prefix, "micro_batch", (sim_range_t){0, g.micro_batches - 1, 1});
  sim_vec_t st = read_op(pipe, &g, prefix, "start_us", SIM_NUMBER);
  sim_vec_t en = read_op(pipe, &g, prefix, "end_us", SIM_NUMBER);
  sim_vec_t se = read_op(pipe, &g, prefix, "send_end_us", SIM_NUMBER);
  sim_vec_t cp = read_op(pipe, &g, prefix, "compressed", FLAG);
  char name[64];
  snprintf(name, sizeof name, "%siter_us", prefix);
  double iter = sim_read_attr(pipe, name, SIM_DIVISOR);
  int ns = (int)g.pp;
  char **cat = xcalloc((size_t)ns + 1, sizeof *cat);
  for (int s = 0; s < ns; s++) {
    cat[s] = xmalloc(24);
    snprintf(cat[s], 24, "stage %d", s);
  }
  plot_legend_entry_t legend[4] = {{"forward", "#0072B2", "", 0, 1},
                                   {"backward", "#D55E00", "", 0, 1},
                                   {"transfer", "#999999", "", 0, 1},
                                   {"compressed transfer", "#009E73", "", 0, 1}};
  char title[128];
  snprintf(title, sizeof title, "1F1B %s compression: %.1f ms", strcmp(prefix, "plain_") ? "with" : "without", iter / 1000);
  char *file = report_file_in(dir, fname);
  plot_t p = report_figure_open(file, title, plot_axis(0, iter / 1000, 6), (plot_axis_t){0, (double)ns, 1, 0},
                                ns * 34.0, legend, 4);
  plot_frame(&p, title, "time (ms)", "", (const char *const *)cat, ns);
  for (size_t k = 0; k < stage.n; k++) {
    double y0 = plot_y(&p, ns - stage.v[k] - 0.15), y1 = plot_y(&p, ns - stage.v[k] - 0.85);
    double x0 = plot_x(&p, st.v[k] / 1000), x1 = plot_x(&p, en.v[k] / 1000), x2 = plot_x(&p, se.v[k] / 1000);
    char tip[64];
    snprintf(tip, sizeof tip, "%s micro-batch %.0f", kind.v[k] ? "backward" : "forward", mb.v[k]);
    svg_rect(p.svg, x0, y1, fmax(x1 - x0, 0.5), y0 - y1, kind.v[k] ? "#D55E00" : "#0072B2", "none", tip);
    if (x2 > x1) svg_rect(p.svg, x1, y1 + (y0 - y1) / 3, x2 - x1, (y0 - y1) / 3, cp.v[k] ? "#009E73" : "#999999", "none", NULL);
  }
  report_figure_close(&p, legend, 4);
  fprintf(out, "  %s\n", file);
  free(file);
  for (int s = 0; s < ns; s++) free(cat[s]);
  free(cat);
  free(stage.v), free(kind.v), free(mb.v), free(st.v), free(en.v), free(se.v), free(cp.v);
}

static void pipeline_summary(FILE *f, const sim_group_t *pipe) {
  double plain = sim_read_attr(pipe, "plain_iter_us", SIM_DIVISOR);
  double comp = sim_read_attr(pipe, "compressed_iter_us", SIM_DIVISOR);
  double pb = sim_read_attr(pipe, "plain_bubble", FRACTION), cb = sim_read_attr(pipe, "compressed_bubble", FRACTION);
  fprintf(f, "3D iteration: %.1f us without compression, %.1f us with (%.3fx); bubble %.1f%% / %.1f%%\n", plain, comp,
          plain / comp, 100 * pb, 100 * cb);
}

/* Group `name` of top, or id -1 when the file has none. */
static sim_group_t open_group(const char *path, hid_t top, const char *name, const char *where) {
  int has = h5util_exists(top, name, H5I_GROUP);
  if (has < 0) surge_input_error("%s: %s cannot be read (a damaged surge-sim file)", path, where);
  return (sim_group_t){path, has ? H5Gopen2(top, name, H5P_DEFAULT) : -1, where};
}

void report_sim(const char *path, const char *plot_dir, FILE *f) {
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t top = file >= 0 ? H5Gopen2(file, "sim", H5P_DEFAULT) : -1;
  if (top < 0) surge_input_error("%s: no /sim group (not a surge-sim file)", path);
  char *model = NULL;
  h5util_attr_read_string(top, "model", &model);
  char *shown = printable_dup(model ? model : "?");
  fprintf(f, "surge-sim results %s (model %s)\n", path, shown);
  free(shown);
  free(model);
  sim_group_t burst = open_group(path, top, "burst", "/sim/burst");
  sim_group_t pipe = open_group(path, top, "pipeline", "/sim/pipeline");
  sim_vec_t ranks = {0, NULL};
  if (burst.id >= 0) {
    ranks = sim_read_vec(&burst, "ranks", SIM_READ_ANY_ROWS, RANKS);
    burst_summary(f, &burst, &ranks);
  }
  if (pipe.id >= 0) pipeline_summary(f, &pipe);
  if (plot_dir) {
    report_make_dir(plot_dir);
    fprintf(f, "\nFigures\n");
    if (burst.id >= 0 && ranks.n) {
      plot_frontiers(plot_dir, &burst, &ranks, f);
      plot_throughput(plot_dir, &burst, &ranks, f);
    }
    if (pipe.id >= 0) {
      plot_pipeline(plot_dir, &pipe, "plain_", "pipeline.svg", f);
      plot_pipeline(plot_dir, &pipe, "compressed_", "pipeline-compressed.svg", f);
    }
  }
  free(ranks.v);
  if (burst.id >= 0) H5Gclose(burst.id);
  if (pipe.id >= 0) H5Gclose(pipe.id);
  H5Gclose(top);
  H5Fclose(file);
  h5util_quiet_end(q);
}
