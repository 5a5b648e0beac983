/* Charts on the SVG writer: nice axis ranges, a frame with grid, ticks and labels, line series
 * with optional markers, and legends. */
#include <math.h>
#include <string.h>

#include "report/svg.h"

#define AXIS_COLOR "#000000"
#define GRID_COLOR "#E3E3E3"
enum { TICK_LEN = 5, LEGEND_ROW = 20, LEGEND_SAMPLE = 26 };

plot_axis_t plot_axis(double lo, double hi, int ticks) {
  if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
  if (hi < lo) {
    double t = lo;
    lo = hi;
    hi = t;
  }
  if (hi == lo) {
    double pad = lo != 0 ? 0.1 * fabs(lo) : 1;
    lo -= pad;
    hi += pad;
  }
  double raw = (hi - lo) / (ticks > 0 ? ticks : 1);
  double mag = pow(10, floor(log10(raw)));
  double r = raw / mag, nice = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
  plot_axis_t a;
  a.step = nice * mag;
  a.lo = floor(lo / a.step + 1e-9) * a.step;
  a.hi = ceil(hi / a.step - 1e-9) * a.step;
  double d = -floor(log10(a.step) + 1e-9);
  a.decimals = d > 0 ? (int)d : 0;
  return a;
}

double plot_x(const plot_t *p, double x) { return p->left + (x - p->x.lo) / (p->x.hi - p->x.lo) * p->width; }

double plot_y(const plot_t *p, double y) { return p->top + p->height - (y - p->y.lo) / (p->y.hi - p->y.lo) * p->height; }

double plot_text_width(const char *text, double size) { return 0.6 * size * (double)strlen(text); }

/* Tick i of an axis, as a number and as its label. */
static double tick_value(const plot_axis_t *a, int i, char *label, size_t n) {
  double v = a->lo + i * a->step;
  if (fabs(v) < 1e-9 * a->step) v = 0; /* no "-0.0" */
  snprintf(label, n, "%.*f", a->decimals, v);
  return v;
}

static int tick_count(const plot_axis_t *a) { return (int)lround((a->hi - a->lo) / a->step); }

static void x_ticks(plot_t *p) {
  double bottom = p->top + p->height;
  for (int i = 0; i <= tick_count(&p->x); i++) {
    char label[32];
    double px = plot_x(p, tick_value(&p->x, i, label, sizeof label));
    svg_line(p->svg, px, p->top, px, bottom, GRID_COLOR, 1, "");
    svg_line(p->svg, px, bottom, px, bottom + TICK_LEN, AXIS_COLOR, 1, "");
    svg_text(p->svg, px, bottom + TICK_LEN + PLOT_FONT_TICK + 2, PLOT_FONT_TICK, "middle", 0, "normal", label);
  }
}

static void y_ticks(plot_t *p) {
  for (int i = 0; i <= tick_count(&p->y); i++) {
    char label[32];
    double py = plot_y(p, tick_value(&p->y, i, label, sizeof label));
    svg_line(p->svg, p->left, py, p->left + p->width, py, GRID_COLOR, 1, "");
    svg_line(p->svg, p->left - TICK_LEN, py, p->left, py, AXIS_COLOR, 1, "");
    svg_text(p->svg, p->left - TICK_LEN - 3, py + 0.35 * PLOT_FONT_TICK, PLOT_FONT_TICK, "end", 0, "normal", label);
  }
}

/* Category labels, thinned so that neighbours keep a line of text between them. */
static void y_categories(plot_t *p, const char *const *ycat, int ncat) {
  double band = p->height / ncat;
  int every = (int)ceil(1.2 * PLOT_FONT_TICK / band);
  for (int i = 0; i < ncat; i += every) {
    double py = plot_y(p, ncat - i - 0.5);
    svg_line(p->svg, p->left - TICK_LEN, py, p->left, py, AXIS_COLOR, 1, "");
    svg_text(p->svg, p->left - TICK_LEN - 3, py + 0.35 * PLOT_FONT_TICK, PLOT_FONT_TICK, "end", 0, "normal",
             ycat[i]);
  }
}

void plot_frame(plot_t *p, const char *title, const char *xlabel, const char *ylabel, const char *const *ycat,
                int ncat) {
  double bottom = p->top + p->height;
  svg_group_begin(p->svg, "axes", NULL, "axes");
  x_ticks(p);
  if (ycat) y_categories(p, ycat, ncat);
  else y_ticks(p);
  svg_line(p->svg, p->left, bottom, p->left + p->width, bottom, AXIS_COLOR, 1.2, "");
  svg_line(p->svg, p->left, p->top, p->left, bottom, AXIS_COLOR, 1.2, "");
  svg_text(p->svg, p->left + p->width / 2, bottom + TICK_LEN + PLOT_FONT_TICK + PLOT_FONT_LABEL + 12, PLOT_FONT_LABEL,
           "middle", 0, "normal", xlabel);
  svg_text(p->svg, PLOT_FONT_LABEL + 6, p->top + p->height / 2, PLOT_FONT_LABEL, "middle", -90, "normal", ylabel);
  svg_text(p->svg, p->left, p->top - 14, PLOT_FONT_TITLE, "start", 0, "bold", title);
  svg_group_end(p->svg);
}

double plot_legend_width(const plot_legend_entry_t *e, int n) {
  double w = 0;
  for (int i = 0; i < n; i++) {
    double t = plot_text_width(e[i].label, PLOT_FONT_LEGEND);
    if (t > w) w = t;
  }
  return LEGEND_SAMPLE + 8 + w;
}

double plot_legend_height(int n) { return (double)n * LEGEND_ROW; }

void plot_legend(plot_t *p, double x, double y, const plot_legend_entry_t *e, int n) {
  svg_group_begin(p->svg, "legend", NULL, "legend");
  for (int i = 0; i < n; i++) {
    double cy = y + i * LEGEND_ROW + LEGEND_ROW / 2.0;
    if (e[i].box) {
      svg_rect(p->svg, x + 4, cy - 6, LEGEND_SAMPLE - 8, 12, e[i].color, "#555555", NULL);
    } else {
      svg_line(p->svg, x, cy, x + LEGEND_SAMPLE, cy, e[i].color, 2.2, e[i].dash);
      if (e[i].marker) svg_circle(p->svg, x + LEGEND_SAMPLE / 2.0, cy, 3.2, e[i].color, "#FFFFFF");
    }
    svg_text(p->svg, x + LEGEND_SAMPLE + 8, cy + 0.35 * PLOT_FONT_LEGEND, PLOT_FONT_LEGEND, "start", 0, "normal",
             e[i].label);
  }
  svg_group_end(p->svg);
}

void plot_series(plot_t *p, const char *cls, const char *id, const char *label, const double *x, const double *y,
                 size_t n, const char *color, const char *dash, int marker) {
  svg_group_begin(p->svg, cls, id, label);
  svg_path_begin(p->svg, color, 1.8, dash);
  for (size_t i = 0; i < n; i++) svg_path_point(p->svg, plot_x(p, x[i]), plot_y(p, y[i]));
  svg_path_end(p->svg);
  if (marker)
    for (size_t i = 0; i < n; i++)
      if (isfinite(x[i]) && isfinite(y[i])) svg_circle(p->svg, plot_x(p, x[i]), plot_y(p, y[i]), 3.2, color, "#FFFFFF");
  svg_group_end(p->svg);
}
