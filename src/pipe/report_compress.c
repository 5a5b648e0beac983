/* A 3d run's compression (/compress, doc/compression.md): what it chose, the bytes of each
 * compressed category against what the uncompressed messages would have been (the compression
 * ratio), the compressor's time, the error carried over each pipeline boundary and the LEP
 * diagnostic. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipe/pipe_log.h"
#include "report/report.h"

/* Sum of /metrics/<name> over the rows (0 when the log lacks it). */
static double metric_sum(const log_data_t *L, const char *name) {
  const log_column_t *c = log_column(&L->metrics, name);
  return c ? report_column_sum(c, L->metrics.rows, 0) : 0;
}

static double compress_sum(const log_compress_t *cp, log_compress_metric_t m) {
  const log_column_t *c = log_column(&cp->series, log_compress_info[m].name);
  return c ? report_column_sum(c, cp->series.rows, 0) : 0;
}

/* One category's row: exact bytes, compressed bytes, what those compressed would have been. */
static void category_row(report_grid_t *g, const char *name, double exact, double sent, double raw) {
  char e[32], s[32], r[32], u[32];
  report_format_bytes(exact, e, sizeof e);
  report_format_bytes(sent, s, sizeof s);
  report_format_bytes(raw, r, sizeof r);
  report_format_bytes(exact + raw, u, sizeof u);
  report_grid_add(g, "%s", name);
  report_grid_add(g, "%s", e);
  report_grid_add(g, "%s", s);
  report_grid_add(g, "%s", r);
  if (sent > 0) report_grid_add(g, "%.1fx", raw / sent);
  else report_grid_add(g, "-");
  report_grid_add(g, "%s", u);
  if (exact + sent > 0) report_grid_add(g, "%.2fx", (exact + raw) / (exact + sent));
  else report_grid_add(g, "-");
}

/* Per boundary: the last finite value and the mean of a (rows, boundaries) column. */
static void print_boundaries(FILE *f, const log_compress_t *cp, log_compress_metric_t m, const char *what) {
  const log_column_t *c = log_column(&cp->boundary, log_compress_info[m].name);
  size_t rows = cp->boundary.rows;
  if (!c || rows == 0) return;
  fprintf(f, "  %s per boundary (stage j+1 to j):", what);
  for (size_t j = 0; j < c->cols; j++) {
    double last = NAN;
    for (size_t i = rows; i-- > 0 && isnan(last);)
      if (isfinite(c->v[i * c->cols + j])) last = c->v[i * c->cols + j];
    fprintf(f, "  %zu: last %.3g, mean %.3g", j, last, report_column_mean(c, rows, j));
  }
  fprintf(f, "\n");
}

static void print_compress(FILE *f, const log_data_t *L, const void *data, const report_values_t *v) {
  (void)v;
  const log_compress_t *c = data;
  if (c->summary[0]) fprintf(f, "  %s\n", c->summary);
  report_grid_t g;
  report_grid_init(&g, 7, "lrrrrrr");
  const char *head[] = {"category", "exact", "compressed", "as exact", "ratio", "uncompressed run", "saving"};
  for (int i = 0; i < 7; i++) report_grid_add(&g, "%s", head[i]);
  category_row(&g, "pipeline gradients", metric_sum(L, LOG_BYTES_PREFIX "activation_grad"),
               metric_sum(L, LOG_BYTES_PREFIX "activation_grad_compressed"), compress_sum(c, LOG_CMP_ACT_GRAD_RAW));
  category_row(&g, "data-parallel", metric_sum(L, LOG_BYTES_PREFIX "dp"),
               metric_sum(L, LOG_BYTES_PREFIX "dp_compressed"), compress_sum(c, LOG_CMP_DP_RAW));
  category_row(&g, "embedding", metric_sum(L, LOG_BYTES_PREFIX "embedding"), 0, 0);
  fprintf(f, "  bytes over %zu steps, summed over ranks (\"as exact\": the compressed messages uncompressed)\n",
          c->series.rows);
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
  const log_column_t *s = log_column(&c->series, log_compress_info[LOG_CMP_SECONDS].name);
  if (s) fprintf(f, "  compressor time: median %.3f ms per step (the slowest rank)\n",
                 1e3 * report_column_median(s, c->series.rows));
  print_boundaries(f, c, LOG_CMP_ERROR_NORM, "error ||E||");
  print_boundaries(f, c, LOG_CMP_COS, "LEP cos(e, x - x')");
  const log_column_t *m = log_column(&c->series, log_compress_info[LOG_CMP_COS_MEAN].name);
  if (m) fprintf(f, "  LEP cos(e, x - x') over every boundary: mean %.3g over the steps\n",
                 report_column_mean(m, c->series.rows, 0));
}

const report_view_t pipe_compress_report_view = {
    .part = PIPE_COMPRESS_PART, .title = "Compression (Optimus-CC)", .early = 0, .print = print_compress,
};
