/* The cost model (plan.h): candidate rank counts, the sync and re-shard primitives, the cost tables
 * of a search, and the evaluation of a given plan along the series-parallel tree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

static void check_opts(const burst_opts_t *o) {
  if (o->ranks < 1) surge_input_error("burst plan: %d ranks (need at least 1)", o->ranks);
  if (o->batch < 1) surge_input_error("burst plan: global batch %d (need at least 1)", o->batch);
  if (!(o->amp >= 1)) surge_input_error("burst plan: amplification limit %g must be >= 1", o->amp);
  if (o->policy < BURST_RANKS_DIVISORS || o->policy > BURST_RANKS_ANY)
    surge_input_error("burst plan: unknown rank-count policy %d", (int)o->policy);
}

int burst_rank_counts(const burst_opts_t *o, int *n_out) {
  check_opts(o);
  int B = o->batch, top = o->ranks < B ? o->ranks : B;
  int dp = burst_per_rank(B, burst_per_rank(B, top)); /* fewest ranks with the data-parallel batch */
  int C = 0;
  for (int n = 1; n <= top; n++) {
    int want = n == 1 || n == dp;
    if (o->policy == BURST_RANKS_DIVISORS) want |= B % n == 0;
    if (o->policy == BURST_RANKS_POW2) want |= (n & (n - 1)) == 0;
    if (o->policy == BURST_RANKS_ANY) want = 1;
    int fewest = burst_per_rank(B, burst_per_rank(B, n));
    if (want && (C == 0 || n_out[C - 1] < fewest)) n_out[C++] = fewest;
  }
  return C;
}

int burst_profile_batches(const burst_opts_t *o, int *batch_out) {
  int C = burst_rank_counts(o, batch_out);
  for (int k = 0; k < C; k++) batch_out[k] = burst_per_rank(o->batch, batch_out[k]);
  return C;
}

double burst_sync_us(const burst_net_t *net, double grad_bytes, int n) {
  if (n <= 1 || grad_bytes <= 0) return 0;
  int steps = 0;
  while ((1 << steps) < n) steps++;
  return 2.0 * steps * net->ar_alpha_us + 2.0 * (n - 1) / n * grad_bytes / net->ar_bytes_per_us;
}

double burst_link_samples(int b_s, int b_d, int moved) {
  if (moved) return b_s > b_d ? b_s : b_d;
  int diff = b_s > b_d ? b_s - b_d : b_d - b_s, low = b_s < b_d ? b_s : b_d;
  return diff > low ? diff : low;
}

double burst_xfer_us(const burst_net_t *net, double bytes_per_sample, int n_s, int b_s, int n_d, int b_d,
                     int moved) {
  if (!moved && n_s == n_d) return 0;
  return 2 * (net->p2p_alpha_us + burst_link_samples(b_s, b_d, moved) * bytes_per_sample / net->p2p_bytes_per_us);
}

/* ---- context ---- */

void burst_ctx_init(burst_ctx_t *c, const graph_t *g, const burst_profile_t *p, const burst_opts_t *o) {
  memset(c, 0, sizeof *c);
  check_opts(o);
  burst_profile_check(p, g);
  c->g = g;
  c->p = p;
  c->o = *o;
  sp_build(g, &c->top);
  c->act = xmalloc((size_t)g->n * sizeof *c->act);
  c->grad = xmalloc((size_t)g->n * sizeof *c->grad);
  for (int i = 0; i < g->n; i++) {
    c->act[i] = burst_act_bytes(g, i);
    c->grad[i] = burst_grad_bytes(g, i);
  }
}

void burst_ctx_tables(burst_ctx_t *c) {
  const graph_t *g = c->g;
  int top = c->o.ranks < c->o.batch ? c->o.ranks : c->o.batch;
  c->cn = xmalloc((size_t)(top + 1) * sizeof *c->cn);
  c->C = burst_rank_counts(&c->o, c->cn);
  int C = c->C;
  c->cb = xmalloc((size_t)C * sizeof *c->cb);
  for (int k = 0; k < C; k++) c->cb[k] = burst_per_rank(c->o.batch, c->cn[k]);
  size_t cells = surge_mul_size((size_t)g->n, (size_t)C, "burst plan table");
  c->comp = xmalloc(cells * sizeof *c->comp);
  c->sync = xmalloc(cells * sizeof *c->sync);
  c->w = xmalloc(cells * sizeof *c->w);
  for (int i = 0; i < g->n; i++) {
    for (int k = 0; k < C; k++) {
      c->comp[i * C + k] = burst_profile_time(c->p, g, i, c->cb[k]);
      c->sync[i * C + k] = burst_sync_us(&c->p->net, c->grad[i], c->cn[k]);
    }
    /* the hard per-layer limit: n (comp + sync)(n) <= A comp(1), with a rounding allowance */
    double base = c->comp[i * C];
    for (int k = 0; k < C; k++) {
      double t = c->comp[i * C + k] + c->sync[i * C + k];
      int ok = isinf(c->o.amp) || c->cn[k] * t <= c->o.amp * base * (1 + 1e-12);
      c->w[i * C + k] = ok ? t : BURST_INF;
    }
  }
  c->lk = xmalloc((size_t)C * C * sizeof *c->lk);
  c->lm = xmalloc((size_t)C * C * sizeof *c->lm);
  for (int a = 0; a < C; a++)
    for (int b = 0; b < C; b++) {
      c->lk[a * C + b] = burst_link_samples(c->cb[a], c->cb[b], 0);
      c->lm[a * C + b] = burst_link_samples(c->cb[a], c->cb[b], 1);
    }
}

void burst_ctx_free(burst_ctx_t *c) {
  sp_free(&c->top);
  free(c->act);
  free(c->grad);
  free(c->cn);
  free(c->cb);
  free(c->comp);
  free(c->sync);
  free(c->w);
  free(c->lk);
  free(c->lm);
  memset(c, 0, sizeof *c);
}

/* ---- plans ---- */

void burst_plan_alloc(burst_plan_t *plan, int nodes, const burst_opts_t *o) {
  memset(plan, 0, sizeof *plan);
  plan->nodes = nodes;
  plan->ranks = o->ranks;
  plan->batch = o->batch;
  plan->amp_limit = o->amp;
  plan->n = xcalloc((size_t)nodes, sizeof *plan->n);
  plan->first = xcalloc((size_t)nodes, sizeof *plan->first);
  plan->per_rank = xcalloc((size_t)nodes, sizeof *plan->per_rank);
  plan->comp_us = xcalloc((size_t)nodes, sizeof *plan->comp_us);
  plan->xfer_us = xcalloc((size_t)nodes, sizeof *plan->xfer_us);
  plan->sync_us = xcalloc((size_t)nodes, sizeof *plan->sync_us);
  plan->amp = xcalloc((size_t)nodes, sizeof *plan->amp);
}

void burst_plan_free(burst_plan_t *plan) {
  free(plan->n);
  free(plan->first);
  free(plan->per_rank);
  free(plan->comp_us);
  free(plan->xfer_us);
  free(plan->sync_us);
  free(plan->amp);
  memset(plan, 0, sizeof *plan);
}

/* Re-shard cost of the edge src -> dst as the plan places them. */
static double edge_xfer(const burst_ctx_t *c, const burst_plan_t *pl, int src, int dst) {
  return burst_xfer_us(&c->p->net, c->act[src], pl->n[src], pl->per_rank[src], pl->n[dst], pl->per_rank[dst],
                       pl->first[src] != pl->first[dst]);
}

static double eval_seq(const burst_ctx_t *c, burst_plan_t *pl, const sp_seq_t *s, int src, double t);

/* Time the join's inputs have all arrived, given the fork done at t. */
static double eval_block(const burst_ctx_t *c, burst_plan_t *pl, const sp_block_t *blk, int fork, int join,
                         double t) {
  double direct = 0, serial = 0, parallel = 0, xin = 0;
  int lo[LAYER_MAX_IN + 1], hi[LAYER_MAX_IN + 1], busy = 0;
  for (int k = 0; k < blk->nbranch; k++) {
    const sp_seq_t *br = &blk->branch[k];
    if (br->n == 0) {
      double x = edge_xfer(c, pl, fork, join);
      xin += x;
      if (x > direct) direct = x;
      continue;
    }
    int tail = br->step[br->n - 1].node;
    double x = edge_xfer(c, pl, tail, join);
    double span = eval_seq(c, pl, br, fork, 0) + x;
    xin += x;
    serial += span;
    if (span > parallel) parallel = span;
    if (busy <= LAYER_MAX_IN) {
      lo[busy] = pl->ranks;
      hi[busy] = 0;
      sp_seq_extent(br, pl, &lo[busy], &hi[busy]);
    }
    busy++;
  }
  /* two branches run at once only on disjoint rank ranges */
  int disjoint = busy == 2 && (hi[0] <= lo[1] || hi[1] <= lo[0]);
  double branches = disjoint ? parallel : serial;
  pl->xfer_us[join] = xin;
  return t + (direct > branches ? direct : branches);
}

static void node_costs(const burst_ctx_t *c, burst_plan_t *pl, int v) {
  pl->comp_us[v] = burst_profile_time(c->p, c->g, v, pl->per_rank[v]);
  pl->sync_us[v] = burst_sync_us(&c->p->net, c->grad[v], pl->n[v]);
  double one = burst_profile_time(c->p, c->g, v, c->o.batch);
  double used = pl->n[v] * (pl->comp_us[v] + pl->sync_us[v]);
  pl->amp[v] = one > 0 ? used / one : (used > 0 ? BURST_INF : 1);
}

/* Time the series' last node is done, its source done at t (src < 0: the top series). */
static double eval_seq(const burst_ctx_t *c, burst_plan_t *pl, const sp_seq_t *s, int src, double t) {
  int prev = src;
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node;
    node_costs(c, pl, v);
    if (s->step[i].via)
      t = eval_block(c, pl, s->step[i].via, prev, v, t);
    else {
      pl->xfer_us[v] = prev < 0 ? 0 : edge_xfer(c, pl, prev, v);
      t += pl->xfer_us[v];
    }
    t += pl->comp_us[v] + pl->sync_us[v];
    prev = v;
  }
  return t;
}

static void check_ranges(const graph_t *g, const burst_plan_t *pl) {
  for (int v = 0; v < g->n; v++) {
    if (pl->n[v] < 1 || pl->n[v] > pl->batch)
      surge_input_error("burst plan: node %d '%s' has %d ranks (need 1..%d, the global batch)", v, g->l[v].name,
                        pl->n[v], pl->batch);
    if (pl->first[v] < 0 || pl->first[v] + pl->n[v] > pl->ranks)
      surge_input_error("burst plan: node %d '%s' uses ranks %d..%d but the job has %d ranks (0..%d)", v,
                        g->l[v].name, pl->first[v], pl->first[v] + pl->n[v] - 1, pl->ranks, pl->ranks - 1);
  }
}

static double one_rank_time(const burst_ctx_t *c) {
  double t = 0;
  for (int v = 0; v < c->g->n; v++) t += burst_profile_time(c->p, c->g, v, c->o.batch);
  return t;
}

void burst_ctx_evaluate(const burst_ctx_t *c, burst_plan_t *pl) {
  const graph_t *g = c->g;
  if (pl->nodes != g->n) surge_input_error("burst plan has %d nodes, the model graph %d", pl->nodes, g->n);
  check_ranges(g, pl);
  for (int v = 0; v < g->n; v++) pl->per_rank[v] = burst_per_rank(pl->batch, pl->n[v]);
  pl->iter_us = eval_seq(c, pl, &c->top, -1, 0);
  pl->rank_us = 0;
  pl->ranks_used = 0;
  for (int v = 0; v < g->n; v++) {
    pl->rank_us += pl->n[v] * (pl->xfer_us[v] + pl->comp_us[v] + pl->sync_us[v]);
    if (pl->first[v] + pl->n[v] > pl->ranks_used) pl->ranks_used = pl->first[v] + pl->n[v];
  }
  pl->one_rank_us = one_rank_time(c);
}

void burst_plan_evaluate(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  burst_ctx_t c;
  burst_ctx_init(&c, g, p, o);
  plan->ranks = o->ranks;
  plan->batch = o->batch;
  burst_ctx_evaluate(&c, plan);
  burst_ctx_free(&c);
}

/* Every node on ranks [0, n). */
static void uniform_plan(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, int n,
                         burst_plan_t *plan) {
  burst_plan_alloc(plan, g->n, o);
  for (int v = 0; v < g->n; v++) plan->n[v] = n;
  burst_plan_evaluate(g, p, o, plan);
}

void burst_plan_data_parallel(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o,
                              burst_plan_t *plan) {
  check_opts(o);
  int top = o->ranks < o->batch ? o->ranks : o->batch;
  uniform_plan(g, p, o, burst_per_rank(o->batch, burst_per_rank(o->batch, top)), plan);
}

void burst_plan_one_rank(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  uniform_plan(g, p, o, 1, plan);
}
