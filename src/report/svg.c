/* The SVG writer: elements with presentation attributes (no style sheet), so converters such as
 * rsvg-convert and Inkscape render them the same way. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/outfile.h"
#include "report/svg.h"

/* Sans-serif fonts found on Linux, macOS and Windows, in that order. */
#define SVG_FONTS "DejaVu Sans, Helvetica, Arial, sans-serif"

void svg_escaped(svg_t *s, const char *text) {
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    switch (*p) {
    case '&': fputs("&amp;", s->f); break;
    case '<': fputs("&lt;", s->f); break;
    case '>': fputs("&gt;", s->f); break;
    case '"': fputs("&quot;", s->f); break;
    case '\'': fputs("&apos;", s->f); break;
    default:
      if (*p < 0x20 && *p != '\t' && *p != '\n') fputc('?', s->f); /* not allowed in XML 1.0 */
      else fputc(*p, s->f);
    }
  }
}

svg_t *svg_open(const char *path, double width, double height, const char *title) {
  svg_t *s = xcalloc(1, sizeof *s);
  s->path = xstrdup(path);
  s->tmp = outfile_temp(path);
  s->f = fopen(s->tmp, "w");
  if (!s->f) surge_runtime_error("%s: cannot write: %s (hint: is the directory writable?)", s->tmp, strerror(errno));
  fprintf(s->f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"" SVG_FONTS "\">\n<title>",
          width, height, width, height);
  svg_escaped(s, title);
  fprintf(s->f, "</title>\n<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#FFFFFF\"/>\n", width, height);
  return s;
}

/* The figure takes its name only when whole: a full disk leaves no figure cut short under it. */
void svg_close(svg_t *s) {
  fputs("</svg>\n", s->f);
  int failed = ferror(s->f);
  failed |= fclose(s->f) != 0;
  if (failed) {
    const int e = errno;
    unlink(s->tmp);
    errno = e;
  } else {
    failed = outfile_publish(s->tmp, s->path) != 0;
  }
  if (failed) surge_runtime_error("%s: cannot write: %s (hint: is the disk full?)", s->path, strerror(errno));
  free(s->tmp);
  free(s->path);
  free(s);
}

void svg_text(svg_t *s, double x, double y, double size, const char *anchor, double angle, const char *weight,
              const char *text) {
  fprintf(s->f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\"", x, y, size, anchor);
  if (strcmp(weight, "normal") != 0) fprintf(s->f, " font-weight=\"%s\"", weight);
  if (angle != 0) fprintf(s->f, " transform=\"rotate(%.0f %.1f %.1f)\"", angle, x, y);
  fputs(" fill=\"#000000\">", s->f);
  svg_escaped(s, text);
  fputs("</text>\n", s->f);
}

static void stroke_attrs(svg_t *s, const char *stroke, double width, const char *dash) {
  fprintf(s->f, " stroke=\"%s\" stroke-width=\"%.2g\"", stroke, width);
  if (dash && dash[0]) fprintf(s->f, " stroke-dasharray=\"%s\"", dash);
}

void svg_line(svg_t *s, double x1, double y1, double x2, double y2, const char *stroke, double width,
              const char *dash) {
  fprintf(s->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"", x1, y1, x2, y2);
  stroke_attrs(s, stroke, width, dash);
  fputs("/>\n", s->f);
}

void svg_rect(svg_t *s, double x, double y, double w, double h, const char *fill, const char *stroke,
              const char *title) {
  fprintf(s->f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"", x, y, w, h, fill);
  if (strcmp(stroke, "none") != 0) stroke_attrs(s, stroke, 1, "");
  if (!title) {
    fputs("/>\n", s->f);
    return;
  }
  fputs("><title>", s->f);
  svg_escaped(s, title);
  fputs("</title></rect>\n", s->f);
}

void svg_circle(svg_t *s, double x, double y, double r, const char *fill, const char *stroke) {
  fprintf(s->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"", x, y, r, fill);
  if (strcmp(stroke, "none") != 0) stroke_attrs(s, stroke, 1, "");
  fputs("/>\n", s->f);
}

void svg_group_begin(svg_t *s, const char *cls, const char *id, const char *title) {
  fprintf(s->f, "<g class=\"%s\"", cls);
  if (id) {
    fputs(" id=\"", s->f);
    svg_escaped(s, id);
    fputc('"', s->f);
  }
  fputs("><title>", s->f);
  svg_escaped(s, title);
  fputs("</title>\n", s->f);
}

void svg_group_end(svg_t *s) { fputs("</g>\n", s->f); }

void svg_path_begin(svg_t *s, const char *stroke, double width, const char *dash) {
  fputs("<path fill=\"none\" stroke-linejoin=\"round\" stroke-linecap=\"round\"", s->f);
  stroke_attrs(s, stroke, width, dash);
  fputs(" d=\"", s->f);
  s->pen_down = 0;
}

void svg_path_point(svg_t *s, double x, double y) {
  if (!isfinite(x) || !isfinite(y)) {
    s->pen_down = 0;
    return;
  }
  fprintf(s->f, "%s%.2f %.2f", s->pen_down ? " L" : " M", x, y); /* M starts a piece, L continues it */
  s->pen_down = 1;
}

void svg_path_end(svg_t *s) { fputs("\"/>\n", s->f); }
