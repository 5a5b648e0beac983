/* The Pareto frontier of predicted iteration time against rank-time. The feasible configurations of
 * a node change only where A crosses one of its ratios n (comp + sync)(n) / comp(1), so the sweep
 * plans at A = 1 and at those breakpoints (evenly spaced through them when there are more than
 * max_plans), then keeps the plans no other plan beats in both time and rank-time. */
#include <math.h>
#include <stdlib.h>

#include "burst/plan_impl.h"
#include "core/error.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_point(const void *a, const void *b) {
  const burst_pareto_point_t *p = a, *q = b;
  if (p->rank_us != q->rank_us) return p->rank_us < q->rank_us ? -1 : 1;
  if (p->iter_us != q->iter_us) return p->iter_us < q->iter_us ? -1 : 1;
  return p->amp_limit < q->amp_limit ? -1 : p->amp_limit > q->amp_limit;
}

/* Distinct amplification breakpoints >= 1 of every node and candidate, ascending; returns how many. */
static int breakpoints(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, double **out) {
  burst_opts_t free_opts = *o;
  free_opts.amp = BURST_NO_LIMIT;
  burst_ctx_t c;
  burst_ctx_init(&c, g, p, &free_opts);
  burst_ctx_tables(&c);
  double *r = xmalloc(surge_mul_size((size_t)g->n, (size_t)c.C, "breakpoints") * sizeof *r);
  int n = 0;
  for (int v = 0; v < g->n; v++) {
    double one = c.comp[(size_t)v * c.C];
    if (one <= 0) continue;
    for (int k = 1; k < c.C; k++) {
      double ratio = c.cn[k] * c.w[(size_t)v * c.C + k] / one;
      if (ratio > 1) r[n++] = ratio;
    }
  }
  qsort(r, (size_t)n, sizeof *r, cmp_double);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || r[i] > r[m - 1] * (1 + 1e-12)) r[m++] = r[i];
  burst_ctx_free(&c);
  *out = r;
  return m;
}

int burst_pareto(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, int max_plans,
                 burst_pareto_point_t **points) {
  if (max_plans < 2) surge_input_error("burst pareto: need at least 2 plans, got %d", max_plans);
  double *bp;
  int nb = breakpoints(g, p, o, &bp);
  int want = nb + 1 < max_plans ? nb + 1 : max_plans;
  burst_pareto_point_t *pts = xcalloc((size_t)want, sizeof *pts);
  for (int j = 0; j < want; j++) {
    burst_opts_t oj = *o;
    /* j = 0: A = 1; then the breakpoints, or some evenly spaced from the first to the last */
    int b = want == nb + 1 ? j - 1 : want == 2 ? nb - 1 : (int)llround((double)(j - 1) * (nb - 1) / (want - 2));
    oj.amp = j == 0 ? 1.0 : bp[b];
    burst_plan_t plan;
    burst_plan_search(g, p, &oj, &plan);
    pts[j] = (burst_pareto_point_t){oj.amp, plan.iter_us, plan.rank_us, plan.rank_us / plan.one_rank_us,
                                    plan.ranks_used};
    burst_plan_free(&plan);
  }
  free(bp);
  qsort(pts, (size_t)want, sizeof *pts, cmp_point);
  int kept = 0;
  for (int j = 0; j < want; j++)
    if (kept == 0 || pts[j].iter_us < pts[kept - 1].iter_us * (1 - 1e-12)) pts[kept++] = pts[j];
  *points = pts;
  return kept;
}
