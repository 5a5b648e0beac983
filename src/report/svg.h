/* A small SVG writer for the report's figures (svg.c) and the charts built on it (plot.c): axes
 * with ticks and labels, line series, legends and bars. Coordinates are pixels of the figure,
 * y down; plot_x/plot_y map data values into the plot area. */
#ifndef SURGE_REPORT_SVG_H
#define SURGE_REPORT_SVG_H

#include <stddef.h>
#include <stdio.h>

/* ---- the writer (svg.c) ---- */

typedef struct svg {
  FILE *f;
  char *path, *tmp; /* the figure is written as tmp (path + ".tmp") and renamed to path when closed */
  int pen_down; /* inside a path: the last point drawn continues the line */
} svg_t;

/* Start the document at path + ".tmp" (core/outfile.h) with its header: a white background, a title
 * and a font family that every SVG viewer and LaTeX converter has. Errors name the file (exit 1). */
svg_t *svg_open(const char *path, double width, double height, const char *title);
/* Close the document and give it its name (replacing a file there); a write error names the path
 * (exit 1), the temporary file removed. */
void svg_close(svg_t *s);

/* Text at (x, y): size in px, anchor "start"/"middle"/"end", rotated by angle degrees about (x, y),
 * weight "normal"/"bold". The text is escaped. */
void svg_text(svg_t *s, double x, double y, double size, const char *anchor, double angle, const char *weight,
              const char *text);
/* A line; dash is a stroke-dasharray ("" for solid). */
void svg_line(svg_t *s, double x1, double y1, double x2, double y2, const char *stroke, double width,
              const char *dash);
/* A rectangle; stroke "none" for none; title (escaped, may be NULL) becomes its tooltip. */
void svg_rect(svg_t *s, double x, double y, double w, double h, const char *fill, const char *stroke,
              const char *title);
void svg_circle(svg_t *s, double x, double y, double r, const char *fill, const char *stroke);

/* <g class="cls" id="id"> with a <title> (escaped) naming what it holds; id may be NULL. */
void svg_group_begin(svg_t *s, const char *cls, const char *id, const char *title);
void svg_group_end(svg_t *s);

/* A polyline as <path>: points are joined; a non-finite y starts a new piece. */
void svg_path_begin(svg_t *s, const char *stroke, double width, const char *dash);
void svg_path_point(svg_t *s, double x, double y);
void svg_path_end(svg_t *s);

/* Characters of `text` escaped for XML text and attribute values. */
void svg_escaped(svg_t *s, const char *text);

/* ---- charts (plot.c) ---- */

/* A data range rounded out to "nice" ticks (1, 2 or 5 times a power of ten). */
typedef struct plot_axis {
  double lo, hi, step;
  int decimals; /* of the tick labels */
} plot_axis_t;

/* Nice axis covering [lo, hi] with about `ticks` intervals; an empty range is widened. */
plot_axis_t plot_axis(double lo, double hi, int ticks);

typedef struct plot {
  svg_t *svg;
  double left, top, width, height; /* the plot area, px */
  plot_axis_t x, y;
} plot_t;

/* Font sizes (px) of the figures: readable at a column width in a paper. */
enum { PLOT_FONT_TICK = 13, PLOT_FONT_LABEL = 15, PLOT_FONT_TITLE = 16, PLOT_FONT_LEGEND = 13 };

double plot_x(const plot_t *p, double x);
double plot_y(const plot_t *p, double y);

/* Grid lines, the frame, x ticks with labels, the axis labels and the title. y ticks are numeric
 * unless ycat is given: then category ycat[i] is drawn at y = ncat - i - 0.5 (the first on top). */
void plot_frame(plot_t *p, const char *title, const char *xlabel, const char *ylabel, const char *const *ycat,
                int ncat);

/* One entry of a legend: a line sample (dash, marker) or a filled box. */
typedef struct plot_legend_entry {
  const char *label, *color, *dash;
  int marker, box;
} plot_legend_entry_t;

/* Width and height (px) a legend of these entries takes. */
double plot_legend_width(const plot_legend_entry_t *e, int n);
double plot_legend_height(int n);
/* The legend with its top-left corner at (x, y). */
void plot_legend(plot_t *p, double x, double y, const plot_legend_entry_t *e, int n);

/* A data series inside <g class="cls" id="id"><title>label</title>...: a line through the finite
 * points (x[i], y[i]) and, with marker, a dot on each. */
void plot_series(plot_t *p, const char *cls, const char *id, const char *label, const double *x, const double *y,
                 size_t n, const char *color, const char *dash, int marker);

/* An estimate of the width (px) of text at a font size. */
double plot_text_width(const char *text, double size);

/* ---- figure files (figures.c), shared by the report's figures ---- */

/* mkdir -p dir (a runtime error naming it when that fails); dir/name, malloc'd. */
void report_make_dir(const char *dir);
char *report_file_in(const char *dir, const char *name);
/* A figure of the report's size with a plot area of plot_height px and room on the right for the
 * legend; closing it draws the legend. */
plot_t report_figure_open(const char *path, const char *title, plot_axis_t x, plot_axis_t y, double plot_height,
                          const plot_legend_entry_t *legend, int nlegend);
void report_figure_close(plot_t *p, const plot_legend_entry_t *legend, int nlegend);
/* The colour and dash pattern of series r. */
const char *report_run_color(int r);
const char *report_run_dash(int r);

#endif
