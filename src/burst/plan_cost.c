/* The cost model (plan.h): candidate rank counts, the sync and re-shard primitives, the cost tables
 * of a search, and the evaluation of a given plan along the series-parallel tree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

const char *burst_policy_name(burst_ranks_policy_t policy) {
  return policy == BURST_RANKS_POW2 ? "pow2" : policy == BURST_RANKS_ANY ? "any" : "divisors";
}

static void check_opts(const burst_opts_t *o) {
  if (o->ranks < 1 || o->ranks > BURST_MAX_RANKS)
    surge_input_error("burst plan: %d ranks (need 1 to %d)", o->ranks, BURST_MAX_RANKS);
  if (o->batch < 1 || o->batch > BURST_MAX_BATCH)
    surge_input_error("burst plan: global batch %d (need 1 to %d)", o->batch, BURST_MAX_BATCH);
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

/* The search keeps a node on the ranks of its set's first node (bgraph_node_t.with) through its
 * neighbours in the series-parallel tree: the node before it in a series (a branch's first node: the
 * fork), and at a join its fork or a branch's last node. Each node of a set must have such a
 * neighbour in the set (an earlier node, so the links reach the set's first); a rule a graph file
 * gives between other nodes is refused here rather than broken by the plan. */
static void check_sets(const bgraph_t *g, const sp_seq_t *s, int src) {
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node, prev = i ? s->step[i - 1].node : src, linked = 0;
    const sp_block_t *b = s->step[i].via;
    for (int k = 0; b && k < b->nbranch; k++) {
      check_sets(g, &b->branch[k], prev);
      if (b->branch[k].n) linked |= bgraph_set_of(g, b->branch[k].step[b->branch[k].n - 1].node) == bgraph_set_of(g, v);
    }
    linked |= prev >= 0 && bgraph_set_of(g, prev) == bgraph_set_of(g, v);
    if (bgraph_set_of(g, v) != v && !linked) {
      char where[320] = ""; /* the file's rule that joined v, else v's own line */
      if (g->v[v].rule_line > 0)
        snprintf(where, sizeof where, "%s:%d: ", g->source, g->v[v].rule_line);
      else
        bgraph_where(g, v, where, (int)sizeof where);
      surge_input_error("%sburst planner: node %d '%s' must run on the ranks of node %d '%s', but the search keeps a "
                        "node on another's ranks only through a neighbour in the graph in the same set (the node "
                        "before it in a chain, or at a join its fork or a branch's last node) (hint: name such a "
                        "neighbour in the rule)",
                        where, v, g->v[v].name, bgraph_set_of(g, v),
                        g->v[bgraph_set_of(g, v)].name);
    }
  }
}

void burst_ctx_init(burst_ctx_t *c, const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o) {
  memset(c, 0, sizeof *c);
  check_opts(o);
  burst_profile_check_bg(p, g);
  c->g = g;
  c->p = p;
  c->o = *o;
  sp_build(g, &c->top);
  check_sets(g, &c->top, -1);
  c->group = xmalloc((size_t)g->n * sizeof *c->group);
  bgraph_limit_groups(g, c->group);
  c->grad_total = bgraph_grad_total(g);
  burst_ctx_bn_init(c);
}

double burst_ctx_comp_us(const burst_ctx_t *c, int v, int batch) {
  return burst_profile_pass_us(c->p, c->g, v, batch) + burst_profile_update_us(c->p, c->g, v, c->grad_total) +
         burst_profile_rerun_us(c->p, c->g, v, batch);
}

void burst_ctx_tables(burst_ctx_t *c) {
  const bgraph_t *g = c->g;
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
  /* [group * C + k] the group's comp + sync at k, and [group] its comp on one rank */
  double *gt = xcalloc(cells, sizeof *gt), *gbase = xcalloc((size_t)g->n, sizeof *gbase);
  for (int i = 0; i < g->n; i++) {
    for (int k = 0; k < C; k++) {
      c->comp[i * C + k] = burst_ctx_comp_us(c, i, c->cb[k]);
      c->sync[i * C + k] = burst_ctx_sync_us(c, i, c->cb[k], c->cn[k]);
      gt[(size_t)c->group[i] * C + k] += c->comp[i * C + k] + c->sync[i * C + k];
    }
    gbase[c->group[i]] += c->comp[i * C];
  }
  /* the hard per-layer limit: n (comp + sync)(n) <= A comp(1), with a rounding allowance, judged per
   * limit group (burst_ctx_t.group): a fused ReLU with its node, whose row holds the pair (its own is a
   * zeroing or nothing), a recomputed block or a tied weight's users as one */
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < C; k++) {
      int r = c->group[i];
      int ok = isinf(c->o.amp) || c->cn[k] * gt[(size_t)r * C + k] <= c->o.amp * gbase[r] * (1 + 1e-12);
      c->w[i * C + k] = ok ? c->comp[i * C + k] + c->sync[i * C + k] : BURST_INF;
    }
  free(gt);
  free(gbase);
}

void burst_ctx_free(burst_ctx_t *c) {
  sp_free(&c->top);
  free(c->group);
  burst_ctx_bn_free(c);
  free(c->cn);
  free(c->cb);
  free(c->comp);
  free(c->sync);
  free(c->w);
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
  plan->start_us = xcalloc((size_t)nodes, sizeof *plan->start_us);
}

void burst_plan_free(burst_plan_t *plan) {
  free(plan->n);
  free(plan->first);
  free(plan->per_rank);
  free(plan->comp_us);
  free(plan->xfer_us);
  free(plan->sync_us);
  free(plan->amp);
  free(plan->start_us);
  memset(plan, 0, sizeof *plan);
}
