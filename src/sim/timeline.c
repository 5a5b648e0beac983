/* A plan's ranks over one iteration: classes of ranks that run the same nodes (a node's range is
 * contiguous, so the classes are the stretches between range ends: at most twice the nodes), and
 * each class's idle gaps. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sim/sim.h"

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

typedef struct span {
  double a, b;
} span_t;

static int cmp_span(const void *x, const void *y) {
  const span_t *p = x, *q = y;
  return (p->a > q->a) - (p->a < q->a);
}

/* The gaps of [0, T) around the busy spans, the last joined with the first (cyclic). */
static void class_gaps(sim_class_t *c, span_t *busy, int n, double T) {
  qsort(busy, (size_t)n, sizeof *busy, cmp_span);
  c->gap_us = xmalloc((size_t)(n + 1) * sizeof *c->gap_us);
  c->ngap = 0;
  c->busy_us = 0;
  double end = 0, lead = 0;
  int first = 1;
  for (int x = 0; x < n; x++) {
    double a = busy[x].a < 0 ? 0 : busy[x].a, b = busy[x].b > T ? T : busy[x].b;
    if (b <= a) continue;
    if (a > end) {
      if (first)
        lead = a - end; /* joins the trailing gap */
      else
        c->gap_us[c->ngap++] = a - end;
    }
    first = 0;
    if (b > end) {
      c->busy_us += b - (a > end ? a : end);
      end = b;
    }
  }
  if (first) { /* never busy */
    c->always_idle = 1;
    c->busy_us = 0;
    return;
  }
  double tail = (T - end) + lead;
  if (tail > 0) c->gap_us[c->ngap++] = tail;
}

void sim_timeline_of(const burst_plan_t *plan, sim_timeline_t *tl) {
  memset(tl, 0, sizeof *tl);
  int N = plan->nodes, G = plan->ranks;
  tl->ranks = G;
  tl->iter_us = plan->iter_us;
  int *cut = xmalloc((size_t)(2 * N + 2) * sizeof *cut), nc = 0;
  cut[nc++] = 0;
  cut[nc++] = G;
  for (int v = 0; v < N; v++) {
    cut[nc++] = plan->first[v];
    cut[nc++] = plan->first[v] + plan->n[v];
  }
  qsort(cut, (size_t)nc, sizeof *cut, cmp_int);
  int m = 0;
  for (int x = 0; x < nc; x++)
    if (!m || cut[x] != cut[m - 1]) cut[m++] = cut[x];
  tl->c = xcalloc((size_t)m, sizeof *tl->c);
  span_t *busy = xmalloc((size_t)(N ? N : 1) * sizeof *busy);
  for (int x = 0; x + 1 < m; x++) {
    sim_class_t *c = &tl->c[tl->nclass++];
    c->first = cut[x];
    c->count = cut[x + 1] - cut[x];
    int nb = 0;
    for (int v = 0; v < N; v++)
      if (plan->first[v] <= c->first && c->first < plan->first[v] + plan->n[v]) {
        double d = plan->xfer_us[v] + plan->comp_us[v] + plan->sync_us[v];
        if (d > 0) busy[nb++] = (span_t){plan->start_us[v], plan->start_us[v] + d};
      }
    class_gaps(c, busy, nb, plan->iter_us);
    tl->idle_rank_us += c->count * (plan->iter_us - c->busy_us);
  }
  free(busy);
  free(cut);
}

void sim_timeline_free(sim_timeline_t *tl) {
  for (int x = 0; x < tl->nclass; x++) free(tl->c[x].gap_us);
  free(tl->c);
  memset(tl, 0, sizeof *tl);
}
