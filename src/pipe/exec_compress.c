/* The 3d executor's compression in words and in numbers: the summary printed at start and stored in
 * the log (/compress@summary), and each step's row of /compress gathered from every rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/powersgd.h"
#include "core/error.h"
#include "pipe/exec.h"
#include "pipe/p2p_cb.h"

void pipe_compress_summary(const pipe_exec_t *ex, char *buf, size_t n) {
  const compress_opts_t *c = &ex->co;
  const pipe_grid_t *G = &ex->grid;
  int len = snprintf(buf, n, "compression:");
  if (c->cb) {
    int sent = 0, all = (G->pp - 1) * ex->M;
    for (int s = 1; s < G->pp; s++)
      for (int k = 0; k < ex->M; k++) sent += pipe_cb_compressed(&ex->p2p, s, k);
    const int parts = pipe_cb_parts_of(&ex->p2p); /* scatter-gather's */
    int rows = ex->mb_rows[0] / parts, C = ex->dims.width;
    len += snprintf(buf + len, n - (size_t)len,
                    " cb rank %d (lep %s, %s): %d of %d activation-gradient sends per pipeline and step compressed, "
                    "%s (%d x %d) %s sent as %zu floats (compression ratio %.1f);",
                    c->cb_rank, c->lep ? "on" : "off", c->epilogue_only ? "epilogue only" : "every backward", sent,
                    all, parts > 1 ? "each tensor-parallel rank's" : "a", rows, C,
                    parts > 1 ? "part of a gradient" : "gradient",
                    psgd_payload(rows, C, c->cb_rank),
                    (double)rows * C / (double)psgd_payload(rows, C, c->cb_rank));
  }
  if (c->fe)
    len += snprintf(buf + len, n - (size_t)len,
                    " fe: the word embedding's gradient summed once over the %d first- and last-stage ranks of each "
                    "tensor-parallel index;", 2 * G->dp);
  if (c->sc_stages > 0)
    len += snprintf(buf + len, n - (size_t)len,
                    " sc: stages 0..%d of %d sum their data-parallel gradients as PowerSGD factors of rank %d "
                    "(the first %ld of %ld steps exact), the other stages exact;",
                    c->sc_stages - 1, G->pp, c->dp_rank, (long)(c->warmup_fraction * (double)c->steps), c->steps);
  if (c->min_rate > 0)
    snprintf(buf + len, n - (size_t)len, " a matrix goes exact unless its factors are %g times smaller", c->min_rate);
  else
    snprintf(buf + len, n - (size_t)len, " no minimum compression rate");
}

void pipe_compress_row(pipe_exec_t *ex, log_compress_row_t *row, double *per_boundary) {
  const pipe_grid_t *G = &ex->grid;
  int B = G->pp > 1 ? G->pp - 1 : 1;
  /* sums: raw bytes (2), then per boundary: cos sum, cos count, ||E||^2 */
  double *v = xcalloc(2 + 3 * (size_t)B, sizeof *v), slowest = ex->sync.reducer->seconds;
  v[1] = ex->sync.reducer->raw_bytes;
  if (ex->co.cb) {
    pipe_cb_stats_t st;
    pipe_cb_take_stats(&ex->p2p, &st);
    v[0] = st.raw_bytes;
    slowest += st.seconds;
    /* the tensor-parallel ranks of a stage send the same whole gradient (count one), or each its own
     * part with scatter-gather (count all: the parts' squared errors add up to the whole's) */
    const int parts = pipe_cb_parts_of(&ex->p2p);
    if (G->p > 0 && (G->t == 0 || parts > 1)) {
      double *b = v + 2 + 3 * (G->p - 1);
      b[0] = st.cos_sum, b[1] = (double)st.cos_n, b[2] = st.error_sumsq;
    }
  }
  comm_allreduce_sum_double(ex->world, v, 2 + 3 * B, TRAFFIC_OTHER);
  comm_allreduce_max_double(ex->world, &slowest, 1, TRAFFIC_OTHER);
  double cos_sum = 0, cos_n = 0;
  for (int j = 0; j < B; j++) {
    const double *b = v + 2 + 3 * j;
    per_boundary[j] = ex->co.cb ? sqrt(b[2]) : NAN;
    per_boundary[B + j] = b[1] > 0 ? b[0] / b[1] : NAN;
    cos_sum += b[0], cos_n += b[1];
  }
  *row = (log_compress_row_t){.act_grad_raw_bytes = v[0], .dp_raw_bytes = v[1], .seconds = slowest,
                              .lep_cos_mean = cos_n > 0 ? cos_sum / cos_n : NAN, .boundaries = B,
                              .error_norm = per_boundary, .lep_cos = per_boundary + B};
  free(v);
}
