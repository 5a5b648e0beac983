#include "pipe/tp.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/events.h"
#include "nn/logit_mask.h"

void tp_allreduce(comm_t *tp, float *x, size_t n) {
  if (tp->size < 2 || n == 0) return;
  ev_raise(EV_COLLECTIVE, EV_TP_SUM, 0);
  comm_allreduce_sum(tp, x, n, TRAFFIC_TP);
  ev_raise(EV_WORK, EV_TP_SUM, 0);
}

void tp_xent_init(tp_xent_t *x, const backend_t *be, comm_t *tp, int V, int lo, int valid, int max_rows) {
  *x = (tp_xent_t){.be = be, .tp = tp, .V = V, .lo = lo, .cap = max_rows};
  x->mask = logit_mask_new(be, V, lo, valid);
  x->mx = be->alloc((size_t)max_rows);
  x->stats = be->alloc(2 * (size_t)max_rows);
  x->first = be->alloc((size_t)max_rows);
  x->host = xcalloc(4 * (size_t)max_rows, sizeof(float));
}

void tp_xent_free(tp_xent_t *x) {
  x->be->free(x->mx);
  x->be->free(x->stats);
  x->be->free(x->first);
  if (x->mask) x->be->free(x->mask);
  free(x->host);
}

/* The padding masked, then the row maxima over the whole vocabulary into x->mx. */
static void global_max(tp_xent_t *x, int rows, float *logits) {
  if (rows > x->cap) surge_runtime_error("tp_xent: %d rows exceed the %d it was made for", rows, x->cap);
  logit_mask_apply(x->be, x->mask, rows, x->V, logits);
  x->be->row_max(rows, x->V, logits, x->mx);
  if (x->tp->size > 1) comm_allreduce_max(x->tp, x->mx, (size_t)rows, TRAFFIC_TP);
}

double tp_xent_loss(tp_xent_t *x, int rows, float *logits, const float *targets, float grad_scale,
                    float *dlogits) {
  const backend_t *be = x->be;
  global_max(x, rows, logits);
  float *sumexp = x->stats, *tgt = x->stats + rows;
  be->xent_shard_stats(rows, x->V, x->lo, logits, targets, x->mx, sumexp, tgt);
  if (x->tp->size > 1) comm_allreduce_sum(x->tp, x->stats, 2 * (size_t)rows, TRAFFIC_TP);
  // loss per row: log sum_v exp(l_v) - l_target = mx + log(sumexp) - tgt
  float *h = x->host;
  be->download(h, x->mx, (size_t)rows);
  be->download(h + rows, x->stats, 2 * (size_t)rows);
  double loss = 0;
  for (int r = 0; r < rows; r++) loss += (double)h[r] + log((double)h[rows + r]) - (double)h[2 * rows + r];
  if (grad_scale != 0.0f && dlogits)
    be->xent_shard_bwd(rows, x->V, x->lo, logits, targets, x->mx, sumexp, grad_scale, dlogits);
  return loss;
}

long tp_xent_correct(tp_xent_t *x, int rows, float *logits, const float *targets) {
  const backend_t *be = x->be;
  global_max(x, rows, logits);
  be->row_first_index(rows, x->V, x->lo, logits, x->mx, x->first);
  if (x->tp->size > 1) comm_allreduce_min(x->tp, x->first, (size_t)rows, TRAFFIC_TP);
  float *h = x->host;
  be->download(h, x->first, (size_t)rows);
  be->download(h + rows, targets, (size_t)rows);
  long correct = 0;
  for (int r = 0; r < rows; r++) correct += h[r] == h[rows + r];
  return correct;
}
