/* The evaluation of a given plan (its n and first per node) along the series-parallel tree: the
 * cost model of plan.h, independent of the search, which must agree with it.
 *
 * In a fork/join block, non-empty branches whose rank ranges (the union over their nodes, nested
 * blocks included) overlap are grouped (transitively): a group's branches run one after another,
 * in branch order, and the groups run at once. The join starts when the slowest group and every
 * direct fork -> join edge have delivered. */
#include <stdlib.h>

#include "burst/plan_impl.h"
#include "core/error.h"

/* Re-shard cost of the edge src -> dst as the plan places them. */
static double edge_xfer(const burst_ctx_t *c, const burst_plan_t *pl, int src, int dst) {
  return burst_xfer_us(&c->p->net, c->g->v[src].act_bytes, pl->n[src], pl->per_rank[src], pl->n[dst],
                       pl->per_rank[dst], pl->first[src] != pl->first[dst]);
}

static double eval_seq(const burst_ctx_t *c, burst_plan_t *pl, const sp_seq_t *s, int src, double t);

static int find_root(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

/* Time all inputs of the join have arrived, given the fork done at t; sets the join's xfer_us. */
static double eval_block(const burst_ctx_t *c, burst_plan_t *pl, const sp_block_t *blk, int fork, int join,
                         double t) {
  int nb = blk->nbranch;
  int *parent = xmalloc((size_t)nb * sizeof *parent), *lo = xmalloc((size_t)nb * sizeof *lo);
  int *hi = xmalloc((size_t)nb * sizeof *hi);
  double *group_end = xmalloc((size_t)nb * sizeof *group_end);
  double direct = 0, xin = 0;
  for (int k = 0; k < nb; k++) {
    parent[k] = k;
    lo[k] = pl->ranks;
    hi[k] = 0;
    group_end[k] = t;
    if (blk->branch[k].n) sp_seq_extent(&blk->branch[k], pl, &lo[k], &hi[k]);
  }
  for (int k = 0; k < nb; k++)
    for (int q = 0; q < k; q++)
      if (blk->branch[k].n && blk->branch[q].n && lo[k] < hi[q] && lo[q] < hi[k])
        parent[find_root(parent, k)] = find_root(parent, q);
  double arrive = t;
  for (int k = 0; k < nb; k++) {
    const sp_seq_t *br = &blk->branch[k];
    if (br->n == 0) {
      double x = edge_xfer(c, pl, fork, join);
      xin += x;
      if (x > direct) direct = x;
      continue;
    }
    int g = find_root(parent, k), tail = br->step[br->n - 1].node;
    double x = edge_xfer(c, pl, tail, join);
    xin += x;
    group_end[g] = eval_seq(c, pl, br, fork, group_end[g]) + x;
    if (group_end[g] > arrive) arrive = group_end[g];
  }
  if (t + direct > arrive) arrive = t + direct;
  pl->xfer_us[join] = xin;
  free(group_end);
  free(hi);
  free(lo);
  free(parent);
  return arrive;
}

static void node_costs(const burst_ctx_t *c, burst_plan_t *pl, int v) {
  pl->comp_us[v] = burst_ctx_comp_us(c, v, pl->per_rank[v]);
  pl->sync_us[v] = burst_ctx_sync_us(c, v, pl->per_rank[v], pl->n[v]);
}

/* Time the series' last node is done, its source done at t (src < 0: the top series). A node's
 * start_us is when its busy time on its ranks begins: its re-shards in, compute and sync follow
 * (at a join, the re-shards in overlap the branches' ends). */
static double eval_seq(const burst_ctx_t *c, burst_plan_t *pl, const sp_seq_t *s, int src, double t) {
  int prev = src;
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node;
    node_costs(c, pl, v);
    if (s->step[i].via) {
      t = eval_block(c, pl, s->step[i].via, prev, v, t);
      pl->start_us[v] = t - pl->xfer_us[v];
    } else {
      pl->xfer_us[v] = prev < 0 ? 0 : edge_xfer(c, pl, prev, v);
      pl->start_us[v] = t;
      t += pl->xfer_us[v];
    }
    t += pl->comp_us[v] + pl->sync_us[v];
    prev = v;
  }
  return t;
}

/* Every node's amplification, its limit group's (burst_ctx_t.group: a node alone, or the nodes that
 * share a rank set), which the limit judges: the group's rank-time over its one-rank time. Sets the
 * plan's one-rank time. */
static void set_amps(const burst_ctx_t *c, burst_plan_t *pl) {
  int n = c->g->n;
  double *used = xcalloc((size_t)n, sizeof *used), *one = xcalloc((size_t)n, sizeof *one);
  pl->one_rank_us = 0;
  for (int v = 0; v < n; v++) {
    double one_v = burst_ctx_comp_us(c, v, c->o.batch);
    used[c->group[v]] += pl->n[v] * (pl->comp_us[v] + pl->sync_us[v]);
    one[c->group[v]] += one_v;
    pl->one_rank_us += one_v;
  }
  for (int v = 0; v < n; v++) {
    int r = c->group[v];
    pl->amp[v] = one[r] > 0 ? used[r] / one[r] : (used[r] > 0 ? BURST_INF : 1);
  }
  free(used);
  free(one);
}

static void check_ranges(const bgraph_t *g, const burst_plan_t *pl) {
  for (int v = 0; v < g->n; v++) {
    if (pl->n[v] < 1 || pl->n[v] > pl->batch)
      surge_input_error("burst plan: node %d '%s' has %d ranks (need 1..%d, the global batch)", v, g->v[v].name,
                        pl->n[v], pl->batch);
    if (pl->first[v] < 0 || pl->first[v] + pl->n[v] > pl->ranks)
      surge_input_error("burst plan: node %d '%s' uses ranks %d..%d but the job has %d ranks (0..%d)", v,
                        g->v[v].name, pl->first[v], pl->first[v] + pl->n[v] - 1, pl->ranks, pl->ranks - 1);
  }
}

void burst_ctx_evaluate(const burst_ctx_t *c, burst_plan_t *pl) {
  const bgraph_t *g = c->g;
  if (pl->nodes != g->n) surge_input_error("burst plan has %d nodes, the model graph %d", pl->nodes, g->n);
  check_ranges(g, pl);
  for (int v = 0; v < g->n; v++) pl->per_rank[v] = burst_per_rank(pl->batch, pl->n[v]);
  pl->iter_us = eval_seq(c, pl, &c->top, -1, 0);
  pl->rank_us = 0;
  pl->ranks_used = 0;
  set_amps(c, pl);
  for (int v = 0; v < g->n; v++) {
    pl->rank_us += pl->n[v] * (pl->xfer_us[v] + pl->comp_us[v] + pl->sync_us[v]);
    if (pl->first[v] + pl->n[v] > pl->ranks_used) pl->ranks_used = pl->first[v] + pl->n[v];
  }
}

void burst_evaluate(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  burst_ctx_t c;
  burst_ctx_init(&c, g, p, o);
  plan->ranks = o->ranks;
  plan->batch = o->batch;
  burst_ctx_evaluate(&c, plan);
  burst_ctx_free(&c);
}

void burst_uniform(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, int n, burst_plan_t *plan) {
  burst_plan_alloc(plan, g->n, o);
  for (int v = 0; v < g->n; v++) plan->n[v] = n;
  burst_evaluate(g, p, o, plan);
}

int burst_dp_ranks(const burst_opts_t *o) {
  int top = o->ranks < o->batch ? o->ranks : o->batch;
  return burst_per_rank(o->batch, burst_per_rank(o->batch, top));
}
