/* The burst planner: dynamic programming over the graph's series-parallel tree (plan_graph.c) with
 * the cost tables of plan_cost.c.
 *
 * Along a series, a vector over the candidate configurations k of the current node holds the least
 * time from the series' start to the end of that node in configuration k; a direct edge advances it
 * by a min-plus step over (previous k, next k) with the re-shard cost between them.
 *
 * A fork/join block is solved for each configuration a of its fork: every branch is a series that
 * starts from the fork in a, and ends with the re-shard into the join, giving its span for each
 * configuration of the join. The branches either run one after another on the enclosing rank range
 * (the spans add up), or - for two branches - at once on disjoint ranges: one branch on the first
 * ranks with at most G' - m of them, the other on the m ranks after it (its entry and exit re-shards
 * move every sample: it starts at another rank), for every candidate m; the spans' maximum counts.
 * G' is the enclosing range (the job's G at the top), so no plan ever needs more ranks than the
 * job has. Direct fork -> join edges (residual identities) re-shard alongside.
 *
 * Every step visits only configurations the per-layer amplification limit allows (w < inf), so the
 * limit holds for every node. Ties go to the fewer ranks. The plan is recovered by recomputing the
 * argmins top-down (cheaper in memory than storing every block's choices), then evaluated by the
 * independent evaluator of plan_cost.c, which must agree with the search. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

static double *vec_alloc(int C) {
  double *v = xmalloc((size_t)C * sizeof *v);
  for (int k = 0; k < C; k++) v[k] = BURST_INF;
  return v;
}

static void block_arrive(const burst_ctx_t *c, const sp_block_t *blk, int fork, int a, int cap, int moved_in,
                         double *arr, int *choice);

/* out[k]: least time from the source's end (source in configuration a; src < 0: the top series,
 * which starts with the input node) to the end of the series' last node in k <= cap. moved_in: the
 * series runs on other ranks than its source. rec (s->n * C, or NULL): the best previous config. */
static void seq_forward(const burst_ctx_t *c, const sp_seq_t *s, int src, int a, int cap, int moved_in,
                        double *out, int *rec) {
  int C = c->C;
  double *cur = vec_alloc(C), *nxt = vec_alloc(C), *arr = vec_alloc(C);
  int *live = xmalloc((size_t)C * sizeof *live);
  if (src >= 0) cur[a] = 0;
  int prev = src;
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node, moved = i == 0 && moved_in;
    const double *w = c->w + (size_t)v * C;
    int nlive = 0;
    for (int k = 0; k < C; k++) {
      nxt[k] = BURST_INF;
      if (rec) rec[i * C + k] = -1;
      if (cur[k] < BURST_INF) live[nlive++] = k;
    }
    if (prev < 0) {
      for (int e = 0; e <= cap; e++) nxt[e] = w[e];
    } else if (!s->step[i].via) {
      for (int e = 0; e <= cap; e++) {
        if (w[e] == BURST_INF) continue;
        double best = BURST_INF;
        int arg = -1;
        for (int j = 0; j < nlive; j++) {
          double t = cur[live[j]] + burst_ctx_xfer(c, prev, live[j], e, moved);
          if (t < best) best = t, arg = live[j];
        }
        nxt[e] = best + w[e];
        if (rec) rec[i * C + e] = arg;
      }
    } else {
      for (int j = 0; j < nlive; j++) {
        block_arrive(c, s->step[i].via, prev, live[j], cap, moved, arr, NULL);
        for (int e = 0; e <= cap; e++) {
          double t = cur[live[j]] + arr[e];
          if (w[e] < BURST_INF && t < nxt[e]) {
            nxt[e] = t;
            if (rec) rec[i * C + e] = live[j];
          }
        }
      }
      for (int e = 0; e <= cap; e++) nxt[e] += w[e];
    }
    double *swap = cur;
    cur = nxt;
    nxt = swap;
    prev = v;
  }
  memcpy(out, cur, (size_t)C * sizeof *out);
  free(live);
  free(arr);
  free(nxt);
  free(cur);
}

/* span[e]: from the fork's end (in a) until branch br's output has reached the join in e; tail[e]:
 * the branch's last node's best configuration for that (when not NULL). */
static void branch_span(const burst_ctx_t *c, const sp_seq_t *br, int fork, int a, int cap, int moved_entry,
                        int moved_exit, double *span, int *tail) {
  int C = c->C, last = br->step[br->n - 1].node;
  double *u = vec_alloc(C);
  seq_forward(c, br, fork, a, cap, moved_entry, u, NULL);
  for (int e = 0; e < C; e++) {
    double best = BURST_INF;
    int arg = -1;
    for (int f = 0; f <= cap; f++) {
      if (u[f] == BURST_INF) continue;
      double t = u[f] + burst_ctx_xfer(c, last, f, e, moved_exit);
      if (t < best) best = t, arg = f;
    }
    span[e] = best;
    if (tail) tail[e] = arg;
  }
  free(u);
}

/* The largest candidate with at most n ranks. */
static int cap_for(const burst_ctx_t *c, int n) {
  int k = 0;
  while (k + 1 < c->C && c->cn[k + 1] <= n) k++;
  return k;
}

/* Spans of the non-empty branches, computed once per (branch, placement, cap) within one block_arrive. */
typedef struct span_memo {
  const burst_ctx_t *c;
  const sp_block_t *blk;
  int fork, a, moved_in;
  double **v; /* [(branch * 2 + offset) * C + cap] */
} span_memo_t;

static const double *memo_span(span_memo_t *m, int branch, int offset, int cap) {
  int C = m->c->C;
  double **slot = &m->v[((size_t)branch * 2 + (size_t)offset) * (size_t)C + (size_t)cap];
  if (!*slot) {
    *slot = xmalloc((size_t)C * sizeof **slot);
    branch_span(m->c, &m->blk->branch[branch], m->fork, m->a, cap, m->moved_in || offset, offset, *slot, NULL);
  }
  return *slot;
}

/* arr[e]: from the fork's end (in a) until all inputs of the join (in e <= cap) have arrived.
 * choice[e] (when not NULL): -1 for the branches one after another, r * C + m for branch ne[r] on
 * the first ranks and the other on m ranks after it. */
static void block_arrive(const burst_ctx_t *c, const sp_block_t *blk, int fork, int a, int cap, int moved_in,
                         double *arr, int *choice) {
  int C = c->C, ne[LAYER_MAX_IN], nne = 0;
  double *direct = xcalloc((size_t)C, sizeof *direct);
  for (int k = 0; k < blk->nbranch; k++) {
    if (blk->branch[k].n == 0) {
      for (int e = 0; e <= cap; e++) {
        double x = burst_ctx_xfer(c, fork, a, e, moved_in);
        if (x > direct[e]) direct[e] = x;
      }
    } else if (nne < LAYER_MAX_IN) {
      ne[nne++] = k;
    }
  }
  span_memo_t memo = {c, blk, fork, a, moved_in, NULL};
  memo.v = xcalloc((size_t)blk->nbranch * 2 * (size_t)C, sizeof *memo.v);
  for (int e = 0; e < C; e++) {
    arr[e] = nne ? 0 : direct[e];
    if (choice) choice[e] = -1;
  }
  for (int j = 0; j < nne; j++) {
    const double *s = memo_span(&memo, ne[j], 0, cap);
    for (int e = 0; e <= cap; e++) arr[e] += s[e];
  }
  if (nne == 2 && c->cn[cap] >= 2) {
    for (int r = 0; r < 2; r++)
      for (int m = 0; m < C && c->cn[m] < c->cn[cap]; m++) {
        const double *sp = memo_span(&memo, ne[r], 0, cap_for(c, c->cn[cap] - c->cn[m]));
        const double *so = memo_span(&memo, ne[1 - r], 1, m);
        for (int e = 0; e <= cap; e++) {
          double t = sp[e] > so[e] ? sp[e] : so[e];
          if (t < arr[e]) {
            arr[e] = t;
            if (choice) choice[e] = r * C + m;
          }
        }
      }
  }
  for (int e = 0; e <= cap; e++)
    if (direct[e] > arr[e]) arr[e] = direct[e];
  for (int e = cap + 1; e < C; e++) arr[e] = BURST_INF;
  for (size_t k = 0; k < (size_t)blk->nbranch * 2 * (size_t)C; k++) free(memo.v[k]);
  free(memo.v);
  free(direct);
}

static void backtrack_block(const burst_ctx_t *c, const sp_block_t *blk, int fork, int a, int e, int cap,
                            int moved_in, int base, burst_plan_t *plan);

/* Set n and first of the nodes of s, its last node ending in configuration e_last on ranks from base. */
static void backtrack_seq(const burst_ctx_t *c, const sp_seq_t *s, int src, int a, int cap, int moved_in,
                          int e_last, int base, burst_plan_t *plan) {
  int C = c->C;
  int *rec = xmalloc((size_t)s->n * (size_t)C * sizeof *rec);
  double *u = vec_alloc(C);
  seq_forward(c, s, src, a, cap, moved_in, u, rec);
  int e = e_last;
  for (int i = s->n - 1; i >= 0; i--) {
    int v = s->step[i].node;
    plan->n[v] = c->cn[e];
    plan->first[v] = base;
    int before = rec[i * C + e];
    if (s->step[i].via)
      backtrack_block(c, s->step[i].via, i ? s->step[i - 1].node : src, before, e, cap, i == 0 && moved_in, base,
                      plan);
    e = before;
  }
  free(u);
  free(rec);
}

/* Backtrack branch br from the fork in a to the join in e. */
static int backtrack_branch(const burst_ctx_t *c, const sp_seq_t *br, int fork, int a, int e, int cap,
                            int moved_entry, int offset, int base, burst_plan_t *plan) {
  int C = c->C;
  double *span = vec_alloc(C);
  int *tail = xmalloc((size_t)C * sizeof *tail);
  branch_span(c, br, fork, a, cap, moved_entry, offset, span, tail);
  backtrack_seq(c, br, fork, a, cap, moved_entry, tail[e], base, plan);
  int lo = plan->ranks, hi = 0;
  sp_seq_extent(br, plan, &lo, &hi);
  free(tail);
  free(span);
  return hi;
}

static void backtrack_block(const burst_ctx_t *c, const sp_block_t *blk, int fork, int a, int e, int cap,
                            int moved_in, int base, burst_plan_t *plan) {
  int C = c->C;
  double *arr = vec_alloc(C);
  int *choice = xmalloc((size_t)C * sizeof *choice);
  block_arrive(c, blk, fork, a, cap, moved_in, arr, choice);
  int ne[LAYER_MAX_IN], nne = 0;
  for (int k = 0; k < blk->nbranch && nne < LAYER_MAX_IN; k++)
    if (blk->branch[k].n) ne[nne++] = k;
  if (choice[e] < 0) {
    for (int j = 0; j < nne; j++) backtrack_branch(c, &blk->branch[ne[j]], fork, a, e, cap, moved_in, 0, base, plan);
  } else {
    int r = choice[e] / C, m = choice[e] % C;
    int end = backtrack_branch(c, &blk->branch[ne[r]], fork, a, e, cap_for(c, c->cn[cap] - c->cn[m]), moved_in, 0,
                               base, plan);
    backtrack_branch(c, &blk->branch[ne[1 - r]], fork, a, e, m, 1, 1, end, plan);
  }
  free(choice);
  free(arr);
}

void burst_plan_search(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  burst_ctx_t c;
  burst_ctx_init(&c, g, p, o);
  burst_ctx_tables(&c);
  int C = c.C;
  double *out = vec_alloc(C);
  seq_forward(&c, &c.top, -1, -1, C - 1, 0, out, NULL);
  int best = 0;
  for (int k = 1; k < C; k++)
    if (out[k] < out[best]) best = k;
  burst_plan_alloc(plan, g->n, o);
  backtrack_seq(&c, &c.top, -1, -1, C - 1, 0, best, 0, plan);
  burst_ctx_evaluate(&c, plan);
  if (!(fabs(plan->iter_us - out[best]) <= 1e-9 * (1 + out[best])))
    surge_runtime_error("burst planner: the search predicted %.6f us but its plan evaluates to %.6f us",
                        out[best], plan->iter_us);
  free(out);
  burst_ctx_free(&c);
}
