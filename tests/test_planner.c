/* Burst planner: synthetic profiles with hand-derived answers (doc/burst.md walks through them),
 * brute-force optimality on small graphs, the hard per-layer limit, the rank budget of branches,
 * the Pareto frontier, plan files, and bad input (each in a forked child: exit 2 and the message). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burst/plan_impl.h"
#include "core/error.h"
#include "core/rng.h"
#include "nn/recompute.h"
#include "nn/zoo.h"
#include "child.h"
#include "tap.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))))

static char tmpdir[64];

/* ---- helpers -------------------------------------------------------------------------------- */

static burst_opts_t opts(int G, int B, double A) { return (burst_opts_t){G, B, A, BURST_RANKS_DIVISORS}; }

/* t(b) = base + per_sample * b^gamma at every per-rank batch the options may choose. */
static void set_node(burst_profile_t *p, const burst_opts_t *o, int node, double base, double per_sample,
                     double gamma) {
  int *b = xmalloc((size_t)(o->ranks + 1) * sizeof *b);
  int C = burst_profile_batches(o, b);
  for (int k = 0; k < C; k++) burst_profile_set(p, node, b[k], base + per_sample * pow(b[k], gamma));
  free(b);
}

static void set_net(burst_profile_t *p, double p2p_alpha, double p2p_beta, double ar_alpha, double ar_beta) {
  p->net = (burst_net_t){p2p_alpha, p2p_beta, ar_alpha, ar_beta};
}

static int plan_is(const burst_plan_t *pl, const int *n, int nodes) {
  for (int v = 0; v < nodes; v++)
    if (pl->n[v] != n[v]) return 0;
  return 1;
}

static void diag_plan(const burst_plan_t *pl) {
  char buf[512];
  int k = 0;
  for (int v = 0; v < pl->nodes && k < 480; v++) k += snprintf(buf + k, sizeof buf - (size_t)k, " %d@%d", pl->n[v], pl->first[v]);
  tap_diag("plan (ranks@first):%s; %.6f us, rank-time %.6f", buf, pl->iter_us, pl->rank_us);
}

/* Every node's amplification within A and every rank range inside the job. */
static int respects_limits(const burst_plan_t *pl, double A) {
  for (int v = 0; v < pl->nodes; v++) {
    if (pl->amp[v] > A * (1 + 1e-9)) return 0;
    if (pl->first[v] < 0 || pl->first[v] + pl->n[v] > pl->ranks) return 0;
  }
  return pl->ranks_used <= pl->ranks;
}

/* input(16) -> a relu -> b linear 16x16 -> c relu: the chain of the first tests. */
static void chain3(graph_t *g) {
  graph_init(g, shape1(16), INIT_KAIMING_UNIFORM);
  int x = nn_relu(g, 0, "a");
  x = nn_linear(g, x, 16, 1, "b");
  nn_relu(g, x, "c");
}

/* input(16) -> s relu -> { x relu | y gelu } -> add: a fork/join block of two non-empty branches. */
static void fork2(graph_t *g) {
  graph_init(g, shape1(16), INIT_KAIMING_UNIFORM);
  int s = nn_relu(g, 0, "s");
  int x = nn_relu(g, s, "x");
  int y = nn_gelu(g, s, "y");
  nn_add(g, x, y, "join");
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_candidates(void) {
  int n[32], want_div[] = {1, 2, 3, 4, 6, 8}, want_pow2[] = {1, 2, 4, 8}, want_any[] = {1, 2, 3, 4, 5, 6, 8};
  burst_opts_t o = opts(8, 24, 2);
  int C = burst_rank_counts(&o, n);
  tap_ok(C == 6 && !memcmp(n, want_div, sizeof want_div), "divisors of 24 up to 8: 1 2 3 4 6 8 (%d)", C);
  o.policy = BURST_RANKS_POW2;
  C = burst_rank_counts(&o, n);
  tap_ok(C == 4 && !memcmp(n, want_pow2, sizeof want_pow2), "powers of two up to 8 (%d)", C);
  o.policy = BURST_RANKS_ANY;
  C = burst_rank_counts(&o, n);
  tap_ok(C == 7 && !memcmp(n, want_any, sizeof want_any), "any: 7 is dropped (ceil(24/7) = 4 = ceil(24/6)) (%d)", C);
  /* B = 10, G = 8, powers of two: 8 ranks give ceil(10/8) = 2 per rank, as 5 ranks do */
  o = (burst_opts_t){8, 10, 2, BURST_RANKS_POW2};
  int want10[] = {1, 2, 4, 5};
  C = burst_rank_counts(&o, n);
  tap_ok(C == 4 && !memcmp(n, want10, sizeof want10), "B=10 G=8 pow2: 1 2 4 5 (data parallel = 5 ranks of 2)");
  int b[8];
  C = burst_profile_batches(&o, b);
  tap_ok(C == 4 && b[0] == 10 && b[1] == 5 && b[2] == 3 && b[3] == 2, "profile batches 10 5 3 2");

  burst_net_t net = {1, 1e6, 1, 100};
  tap_ok(NEAR(burst_sync_us(&net, 1088, 8), 25.04), "sync over 8 ranks: 2*3*1 + 2*(7/8)*1088/100 = 25.04 (%.6f)",
         burst_sync_us(&net, 1088, 8));
  tap_ok(burst_sync_us(&net, 1088, 1) == 0, "no sync on one rank");
  tap_ok(burst_link_samples(8, 64, 0) == 56 && burst_link_samples(8, 16, 0) == 8 &&
             burst_link_samples(16, 12, 0) == 12 && burst_link_samples(8, 16, 1) == 16,
         "busiest link: 8->64 moves 56, 8->16 keeps 8 moves 8, 16->12 receives 12, moved 8->16: 16");
}

/* Chain a (10b) -> b (100 us at any batch, 1088 gradient bytes) -> c (10b), G=8, B=64. */
static void test_chain(void) {
  graph_t g;
  chain3(&g);
  burst_opts_t o = opts(8, 64, BURST_NO_LIMIT);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "synthetic");
  set_node(&p, &o, 1, 0, 10, 1);
  set_node(&p, &o, 2, 100, 0, 1);
  set_node(&p, &o, 3, 0, 10, 1);
  tap_ok(burst_grad_bytes(&g, 2) == 1088 && burst_act_bytes(&g, 1) == 64, "bytes: gradient 1088, activation 64");

  /* cheap re-shard: b alone on one rank. x(8->1) = 2 (1 + 56*64/1e6) = 2.007168 each way */
  set_net(&p, 1, 1e6, 1, 100);
  burst_plan_t pl, dp, one;
  burst_plan_search(&g, &p, &o, &pl);
  int want_cheap[] = {8, 8, 1, 8};
  diag_plan(&pl);
  tap_ok(plan_is(&pl, want_cheap, 4), "non-scaling layer with a big gradient gets 1 rank when re-sharding is cheap");
  tap_ok(NEAR(pl.iter_us, 80 + 2.007168 + 100 + 2.007168 + 80), "iteration 264.014336 us (%.6f)", pl.iter_us);
  tap_ok(NEAR(pl.rank_us, 8 * 80 + (100 + 2.007168) + 8 * (80 + 2.007168)), "rank-time 1398.064512 (%.6f)", pl.rank_us);
  tap_ok(NEAR(pl.xfer_us[2], 2.007168) && NEAR(pl.sync_us[2], 0) && NEAR(pl.comp_us[1], 80),
         "per-layer columns: xfer into b 2.007168, no sync on one rank, a computes 80");
  burst_plan_data_parallel(&g, &p, &o, &dp);
  tap_ok(NEAR(dp.iter_us, 80 + 100 + 25.04 + 80) && NEAR(dp.rank_us, 8 * 285.04) && dp.ranks_used == 8,
         "data parallel: 285.04 us, 2280.32 rank-us (%.6f, %.6f)", dp.iter_us, dp.rank_us);
  burst_plan_one_rank(&g, &p, &o, &one);
  tap_ok(NEAR(one.iter_us, 1380) && NEAR(one.rank_us, 1380) && NEAR(pl.one_rank_us, 1380),
         "one rank: 640 + 100 + 640 = 1380 us, amplification 1");
  burst_plan_free(&pl);
  burst_plan_free(&dp);
  burst_plan_free(&one);

  /* expensive re-shard (10 bytes/us): x(8->1) = 718.8, x(8->4) = 104.4: everything stays on 8 = data parallel */
  set_net(&p, 1, 10, 1, 100);
  burst_plan_search(&g, &p, &o, &pl);
  burst_plan_data_parallel(&g, &p, &o, &dp);
  int want_dp[] = {8, 8, 8, 8};
  diag_plan(&pl);
  tap_ok(plan_is(&pl, want_dp, 4) && NEAR(pl.iter_us, 285.04),
         "an expensive re-shard keeps the rank count: the data-parallel plan, 285.04 us");
  tap_ok(NEAR(pl.iter_us, dp.iter_us) && NEAR(pl.rank_us, dp.rank_us), "same numbers as the data-parallel plan");
  burst_plan_free(&pl);
  burst_plan_free(&dp);

  /* the rest of a step: data 0.5 us a sample on a (the input's reader), loss 0.25 us a sample on c
   * (the output), the 30 us of per-step work on b (the only node with parameters): data parallel
   * (8 samples a rank) pays 4 + 2 + 30 more */
  p.step = (burst_step_costs_t){.data_us_per_sample = 0.5, .loss_us_per_sample = 0.25, .step_us = 30};
  burst_plan_data_parallel(&g, &p, &o, &dp);
  tap_ok(NEAR(dp.iter_us, 285.04 + 36) && NEAR(dp.comp_us[1], 80 + 4) && NEAR(dp.comp_us[2], 100 + 30) &&
             NEAR(dp.comp_us[3], 80 + 2) && NEAR(dp.one_rank_us, 1380 + 32 + 16 + 30),
         "step costs: data on the input's reader, loss on the output, the update on the layer with parameters: "
         "%.6f us (285.04 + 36)", dp.iter_us);
  burst_plan_free(&dp);

  /* 1000 us of per-step work under A = 2: b pays it on every rank it holds (n (1100 + sync) > 2 x 1100
   * for n >= 2: one rank), c has no parameters and still bursts (charged to the output as before,
   * c would pay n (10 64/n + 1000) <= 2 (640 + 1000) and get 2 ranks) */
  p.step = (burst_step_costs_t){.step_us = 1000};
  set_net(&p, 1, 1e6, 1, 100);
  o.amp = 2;
  burst_plan_search(&g, &p, &o, &pl);
  diag_plan(&pl);
  tap_ok(plan_is(&pl, want_cheap, 4) && NEAR(pl.iter_us, 80 + 2.007168 + 1100 + 2.007168 + 80) &&
             NEAR(pl.comp_us[2], 1100) && NEAR(pl.comp_us[3], 80) && NEAR(pl.amp[3], 1),
         "A = 2, 1000 us a step: the update is the linear's (1 rank, 1100 us), the output relu keeps 8 ranks "
         "(%.6f us)", pl.iter_us);
  burst_plan_free(&pl);
  o.amp = BURST_NO_LIMIT;
  p.step = (burst_step_costs_t){0, 0, 0};

  /* A = 1 with b a real linear that scales (10b) and a, c too: layers with parameters pay sync for
   * n > 1, so n (comp + sync) > comp(1): only one rank; relus scale perfectly: n * 10 * 64/n = 640 */
  set_node(&p, &o, 2, 0, 10, 1);
  set_net(&p, 1, 1e6, 1, 100);
  o.amp = 1;
  burst_plan_search(&g, &p, &o, &pl);
  int want_a1[] = {8, 8, 1, 8};
  diag_plan(&pl);
  tap_ok(plan_is(&pl, want_a1, 4) && NEAR(pl.iter_us, 80 + 2.007168 + 640 + 2.007168 + 80),
         "A = 1: the linear layer on one rank, the perfectly scaling relus still burst (804.014336 us)");
  tap_ok(respects_limits(&pl, 1), "A = 1 holds for every layer");
  burst_plan_free(&pl);
  burst_profile_free(&p);
  graph_free(&g);
}

/* Overhead-bound layer a: t = 100 + b. Under A = 2: n (100 + 64/n) <= 2 * 164 -> n <= 2. */
static void test_limit(void) {
  graph_t g;
  graph_init(&g, shape1(16), INIT_KAIMING_UNIFORM);
  nn_relu(&g, nn_relu(&g, 0, "a"), "b");
  burst_opts_t o = opts(8, 64, 2);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "synthetic");
  set_net(&p, 1, 1e6, 1, 100);
  set_node(&p, &o, 1, 100, 1, 1);
  set_node(&p, &o, 2, 0, 10, 1);
  burst_plan_t pl;
  burst_plan_search(&g, &p, &o, &pl);
  int want[] = {2, 2, 8};
  diag_plan(&pl);
  /* a on 2 ranks: 132; re-shard 2 -> 8: busiest link 24 samples: 2 (1 + 24*64/1e6) = 2.003072; b 80 */
  tap_ok(plan_is(&pl, want, 3) && NEAR(pl.iter_us, 132 + 2.003072 + 80), "A = 2: overhead-bound layer on 2 ranks "
         "(214.003072 us, got %.6f)", pl.iter_us);
  tap_ok(respects_limits(&pl, 2) && NEAR(pl.amp[1], 264.0 / 164), "its amplification 2*132/164 = 1.6098 <= 2");
  burst_plan_free(&pl);
  o.amp = BURST_NO_LIMIT;
  burst_plan_search(&g, &p, &o, &pl);
  tap_ok(NEAR(pl.iter_us, 108 + 80) && pl.n[1] == 8, "no limit: everything on 8 ranks, 188 us");
  burst_plan_free(&pl);
  burst_profile_free(&p);
  graph_free(&g);
}

/* Two branches of 40 + 10b each. G=8: both on 8 ranks one after another = 240 us; at once they
 * get 4 + 4 ranks: 200 us each, the second (ranks 4..7) moves 16 samples in and out:
 * 2 (1 + 16*64/1000) = 4.048 each way -> 208.096. G=16: 8 + 8 ranks: 120 + 2 * 3.024 = 126.048. */
static void test_branches(void) {
  graph_t g;
  fork2(&g);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "synthetic");
  set_net(&p, 1, 1000, 1, 100);
  for (int G = 8; G <= 16; G += 8) {
    burst_opts_t o = opts(G, 64, BURST_NO_LIMIT);
    set_node(&p, &o, 1, 0, 0, 1);
    set_node(&p, &o, 2, 40, 10, 1);
    set_node(&p, &o, 3, 40, 10, 1);
    set_node(&p, &o, 4, 0, 0, 1);
    burst_plan_t pl;
    burst_plan_search(&g, &p, &o, &pl);
    diag_plan(&pl);
    int half = G / 2;
    int disjoint = pl.n[2] == half && pl.n[3] == half &&
                   (pl.first[2] + pl.n[2] <= pl.first[3] || pl.first[3] + pl.n[3] <= pl.first[2]);
    tap_ok(disjoint && respects_limits(&pl, BURST_NO_LIMIT), "G=%d: the branches run at once on %d + %d disjoint "
           "ranks, never more than %d", G, half, half, G);
    double want = G == 8 ? 208.096 : 126.048;
    tap_ok(NEAR(pl.iter_us, want) && pl.ranks_used == G, "G=%d: %.3f us (got %.6f, %d ranks used)", G, want,
           pl.iter_us, pl.ranks_used);
    burst_plan_free(&pl);
  }
  burst_profile_free(&p);
  graph_free(&g);
}

/* Four branches of 40 + 10b between a free fork and a free join, G = 8, B = 64: each branch on 2
 * ranks (360 us), the four at once in lanes starting at ranks 0, 2, 4 and 6; the three later lanes
 * move all 32 samples in and out, 2 (1 + 32*64/1000) = 6.096 us each way: 372.192 us. The lanes
 * after the first lie on 6, 4 and 2 ranks; with them only on a candidate's last ranks (4, 2, 1) the
 * best was 400 us (two branches on 2 ranks, two on 4). */
static void test_four_lanes(void) {
  bgraph_t g;
  bgraph_init(&g, "fan4", "four branches");
  bgraph_add(&g, "input", "input", 0, NULL, 64, 0, 0);
  int in = 0, fork = bgraph_add(&g, "s", "relu", 1, &in, 64, 0, 0), br[4];
  for (int b = 0; b < 4; b++) {
    char name[8];
    snprintf(name, sizeof name, "b%d", b + 1);
    br[b] = bgraph_add(&g, name, "relu", 1, &fork, 64, 0, 0);
  }
  int join = bgraph_add(&g, "join", "concat", 4, br, 256, 0, 0);
  burst_opts_t o = opts(8, 64, BURST_NO_LIMIT);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "synthetic");
  set_net(&p, 1, 1000, 1, 100);
  for (int b = 8; b <= 64; b *= 2) {
    burst_profile_set(&p, fork, b, 0);
    burst_profile_set(&p, join, b, 0);
    for (int x = 0; x < 4; x++) burst_profile_set(&p, br[x], b, 40 + 10 * b);
  }
  burst_plan_t pl;
  burst_search(&g, &p, &o, &pl);
  diag_plan(&pl);
  int lanes = 0;
  for (int x = 0; x < 4; x++) lanes |= (pl.n[br[x]] == 2 && pl.first[br[x]] % 2 == 0) << pl.first[br[x]] / 2;
  tap_ok(lanes == 15 && NEAR(pl.iter_us, 360 + 2 * 6.096) && pl.ranks_used == 8,
         "four branches on four 2-rank lanes at ranks 0, 2, 4, 6: %.6f us (372.192)", pl.iter_us);
  burst_plan_free(&pl);
  burst_profile_free(&p);
  bgraph_free(&g);
}

/* Batch norm's sums (plan_bn.c) on G = 4, B = 64, allreduce 1 us + 100 bytes/us: a 1-D batch norm
 * of C = 16 features on 4 ranks sums 4 (1 + 48) floats forward, 2 (2) 1 + 2 (3/4) 784/100 = 15.76 us,
 * and 32 floats backward, 4 + 1.5 (128/100) = 5.92 us. The graph s relu -> { y1 gelu -> y2 gelu |
 * bn -> x2 gelu } -> add: the pass order hides nothing of the forward sum (nothing is ready beside
 * it) and runs y2's backward (two thirds of its time) while the backward sum is in flight. The
 * same graph with local statistics (nothing summed) is the baseline; every node runs everywhere. */
static void bn_graph(graph_t *g, int local) {
  graph_init(g, shape1(16), INIT_KAIMING_UNIFORM);
  int s = nn_relu(g, 0, "s");
  int y = nn_gelu(g, nn_gelu(g, s, "y1"), "y2");
  int x = nn_gelu(g, nn_batchnorm(g, s, local, "bn"), "x2");
  nn_add(g, y, x, "add");
}

/* The data-parallel step of bn_graph, global minus local statistics, with y2 taking y2_us. */
static double bn_extra_us(int G, double y2_us, int blocking, double *bn_sync) {
  double iter[2];
  for (int local = 0; local < 2; local++) {
    graph_t g;
    bn_graph(&g, local);
    burst_opts_t o = opts(G, 64, BURST_NO_LIMIT);
    burst_profile_t p;
    burst_profile_init(&p, g.n, "synthetic");
    set_net(&p, 1, 1e6, 1, 100);
    p.bn_blocking = blocking;
    for (int v = 1; v < g.n; v++) set_node(&p, &o, v, v == 3 ? y2_us : 10, 0, 1);
    burst_plan_t dp;
    burst_plan_data_parallel(&g, &p, &o, &dp);
    iter[local] = dp.iter_us;
    if (!local && bn_sync) *bn_sync = dp.sync_us[4];
    burst_plan_free(&dp);
    burst_profile_free(&p);
    graph_free(&g);
  }
  return iter[0] - iter[1];
}

static void test_bn_sums(void) {
  double sync;
  tap_ok(NEAR(burst_bn_sum_us(&(burst_net_t){1, 1e6, 1, 100}, 16, 4, 0), 15.76) &&
             NEAR(burst_bn_sum_us(&(burst_net_t){1, 1e6, 1, 100}, 16, 4, 1), 5.92) &&
             burst_bn_sum_us(&(burst_net_t){1, 1e6, 1, 100}, 16, 1, 0) == 0,
         "a batch norm's sums on 4 ranks: 15.76 us forward, 5.92 backward; none on 1 rank");
  double d = bn_extra_us(4, 30, 1, &sync);
  tap_ok(NEAR(d, 15.76 + 5.92) && NEAR(sync, 5.92 + 15.76 + 5.92),
         "a run that blocks on the sums: the step grows by both, 21.68 us (%.6f; the node's sync %.6f = its "
         "gradient's 5.92 and the sums)", d, sync);
  d = bn_extra_us(4, 30, 0, NULL);
  tap_ok(NEAR(d, 15.76), "overlapped: y2's backward (20 us) hides the backward sum, the forward one stays: "
         "15.76 us (%.6f)", d);
  d = bn_extra_us(4, 3, 0, NULL);
  tap_ok(NEAR(d, 15.76 + 5.92 - 2), "a y2 of 3 us hides 2 us of it: 19.68 us (%.6f)", d);
  d = bn_extra_us(1, 30, 1, NULL);
  tap_ok(d == 0, "on 1 rank nothing is summed (%g us)", d);

  /* The search sees them: input -> a relu (10b) -> bn (1 us) -> c gelu (10b), allreduce 10 us + 100
   * bytes/us, point-to-point 20 us + 1e6 bytes/us. The batch norm on 4 ranks costs its gradient's
   * sync, 41.92 us, and the sums, 51.76 + 41.92 (none hidden: a chain); on 1 rank two re-shards of
   * 48 x 64 bytes, 2 (20 + 0.003072) each. Local statistics keep it on 4 ranks (42.92 < 81.01). */
  for (int local = 0; local < 2; local++) {
    graph_t g;
    graph_init(&g, shape1(16), INIT_KAIMING_UNIFORM);
    nn_gelu(&g, nn_batchnorm(&g, nn_relu(&g, 0, "a"), local, "bn"), "c");
    burst_opts_t o = opts(4, 64, BURST_NO_LIMIT);
    burst_profile_t p;
    burst_profile_init(&p, g.n, "synthetic");
    set_net(&p, 20, 1e6, 10, 100);
    for (int v = 1; v < g.n; v++) set_node(&p, &o, v, v == 2, v == 2 ? 0 : 10, 1); /* the relus 10b, bn 1 us */
    burst_plan_t pl;
    burst_plan_search(&g, &p, &o, &pl);
    diag_plan(&pl);
    double want = 160 + (local ? 1 + 41.92 : 2 * 40.006144 + 1) + 160;
    tap_ok(pl.n[2] == (local ? 4 : 1) && NEAR(pl.iter_us, want), "%s statistics: the batch norm on %d rank%s, "
           "%.6f us (%.6f)", local ? "local" : "global", local ? 4 : 1, local ? "s" : "", want, pl.iter_us);
    burst_plan_free(&pl);
    burst_profile_free(&p);
    graph_free(&g);
  }
}

/* ---- brute force ---- */

/* Enumerate every rank count per node, and for a block of two branches each disjoint placement;
 * the least evaluated time within the limit must equal the search. */
typedef struct brute {
  bgraph_t bg;
  burst_ctx_t c;
  burst_plan_t pl;
  int *cand, C;
  double A, best;
  int fork_branch[2][8], nfb[2]; /* nodes of the two branches of the block (if any) */
} brute_t;

/* Nodes u and v on the same ranks in plan pl. */
static int same_ranks(const burst_plan_t *pl, int u, int v) {
  return pl->n[u] == pl->n[v] && pl->first[u] == pl->first[v];
}

/* Every node on the ranks of the node its set follows (bgraph_node_t.with: a fused ReLU or GELU, a
 * recomputed segment's nodes), a tied weight's user on its owner's, as every plan must keep them. */
static int keeps_ties(const bgraph_t *bg, const burst_plan_t *pl) {
  for (int v = 0; v < pl->nodes; v++) {
    if (!same_ranks(pl, v, bgraph_set_of(bg, v))) return 0;
    if (bg->v[v].weight_of && !same_ranks(pl, v, bg->v[v].weight_of)) return 0;
  }
  return 1;
}

static void brute_eval(brute_t *b) {
  if (!keeps_ties(&b->bg, &b->pl)) return;
  burst_ctx_evaluate(&b->c, &b->pl);
  for (int v = 0; v < b->pl.nodes; v++)
    if (b->pl.amp[v] > b->A * (1 + 1e-12) && !(isinf(b->A))) return;
  if (b->pl.iter_us < b->best) b->best = b->pl.iter_us;
}

static void brute_place(brute_t *b) {
  int nodes = b->pl.nodes;
  for (int v = 0; v < nodes; v++) b->pl.first[v] = 0;
  brute_eval(b);
  if (!b->nfb[0] || !b->nfb[1]) return;
  for (int r = 0; r < 2; r++) { /* branch r first, the other on the ranks after it */
    int hi = 0;
    for (int j = 0; j < b->nfb[r]; j++)
      if (b->pl.n[b->fork_branch[r][j]] > hi) hi = b->pl.n[b->fork_branch[r][j]];
    int fits = 1;
    for (int j = 0; j < b->nfb[1 - r]; j++) {
      b->pl.first[b->fork_branch[1 - r][j]] = hi;
      fits &= hi + b->pl.n[b->fork_branch[1 - r][j]] <= b->pl.ranks;
    }
    if (fits) brute_eval(b);
    for (int j = 0; j < b->nfb[1 - r]; j++) b->pl.first[b->fork_branch[1 - r][j]] = 0;
  }
}

static void brute_rec(brute_t *b, int v) {
  if (v == b->pl.nodes) {
    brute_place(b);
    return;
  }
  /* a node tied to an earlier one takes its count only (keeps_ties then checks the placement) */
  const int with = bgraph_set_of(&b->bg, v), owner = b->bg.v[v].weight_of;
  for (int k = 0; k < b->C; k++) {
    b->pl.n[v] = b->cand[k];
    if ((with != v && b->pl.n[v] != b->pl.n[with]) || (owner && b->pl.n[v] != b->pl.n[owner])) continue;
    brute_rec(b, v + 1);
  }
}

static double brute_force(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, const int *br0, int n0,
                          const int *br1, int n1) {
  brute_t b;
  memset(&b, 0, sizeof b);
  bgraph_from_graph(g, "", &b.bg);
  burst_ctx_init(&b.c, &b.bg, p, o);
  burst_plan_alloc(&b.pl, g->n, o);
  b.cand = xmalloc((size_t)(o->ranks + 1) * sizeof *b.cand);
  b.C = burst_rank_counts(o, b.cand);
  b.A = o->amp;
  b.best = HUGE_VAL;
  if (n0) memcpy(b.fork_branch[0], br0, (size_t)n0 * sizeof *br0);
  if (n1) memcpy(b.fork_branch[1], br1, (size_t)n1 * sizeof *br1);
  b.nfb[0] = n0;
  b.nfb[1] = n1;
  brute_rec(&b, 0);
  free(b.cand);
  burst_plan_free(&b.pl);
  burst_ctx_free(&b.c);
  bgraph_free(&b.bg);
  return b.best;
}

static void random_profile(burst_profile_t *p, const graph_t *g, const burst_opts_t *o, rng_t *r) {
  set_net(p, 5 * rng_uniform(r), 10 + 990 * rng_uniform(r), 5 * rng_uniform(r), 10 + 990 * rng_uniform(r));
  for (int v = 1; v < g->n; v++) set_node(p, o, v, 50 * rng_uniform(r), 10 * rng_uniform(r), 0.4 + 0.6 * rng_uniform(r));
}

/* A fused ReLU's own row (the shared gradient's zeroing, or nothing) is too small to judge: a ReLU
 * after a residual add, costing 1 us at every batch (amplification n on n ranks), does not pull the
 * pair off the ranks the add scales to under A = 2; both report the pair's amplification. */
static void test_tied_limit(void) {
  graph_t res;
  graph_init(&res, shape1(8), INIT_KAIMING_UNIFORM);
  int s = nn_linear(&res, 0, 8, 1, "s");
  int add = nn_add(&res, nn_linear(&res, s, 8, 1, "a"), nn_linear(&res, s, 8, 1, "b"), "add");
  int out = nn_relu(&res, add, "out");
  burst_opts_t o = opts(4, 16, 2);
  burst_profile_t p;
  burst_profile_init(&p, res.n, "tied");
  set_net(&p, 1, 1e6, 1, 1e6);
  for (int v = 1; v < res.n; v++) set_node(&p, &o, v, v == out ? 1 : 0, v == out ? 0 : 10, 1);
  burst_plan_t pl;
  burst_plan_search(&res, &p, &o, &pl);
  tap_ok(pl.n[add] == 4 && pl.n[out] == 4 && pl.amp[out] == pl.amp[add] && pl.amp[out] <= 2,
         "a fused ReLU's own row does not hold its add to the amplification limit: add and ReLU on %d and %d of 4 "
         "ranks, both reporting the pair's amplification %g",
         pl.n[add], pl.n[out], pl.amp[out]);
  burst_plan_free(&pl);
  burst_profile_free(&p);
  graph_free(&res);
}

static void test_brute_force(void) {
  rng_t r;
  rng_seed(&r, 7);
  const double As[] = {1, 1.3, 2, 4, BURST_NO_LIMIT};
  int agree = 0, total = 0, limits = 0, tied = 0;
  /* a chain of 5: G = 8, B = 24: candidates 1 2 3 4 6 8 */
  graph_t chain;
  graph_init(&chain, shape1(8), INIT_KAIMING_UNIFORM);
  int x = nn_linear(&chain, 0, 8, 1, "l1");
  x = nn_relu(&chain, x, "r1");
  x = nn_linear(&chain, x, 32, 1, "l2");
  nn_linear(&chain, x, 4, 1, "l3");
  /* a residual block with a projection: input -> s -> {x1 -> x2 | y} -> add -> out; G = 4, B = 16 */
  graph_t res;
  graph_init(&res, shape1(8), INIT_KAIMING_UNIFORM);
  int s = nn_linear(&res, 0, 8, 1, "s");
  int y = nn_linear(&res, s, 8, 0, "proj");
  int x1 = nn_linear(&res, s, 16, 1, "x1");
  int x2 = nn_linear(&res, nn_relu(&res, x1, "x1r"), 8, 1, "x2");
  nn_relu(&res, nn_add(&res, y, x2, "add"), "out");
  int br0[] = {x1, x1 + 1, x2}, br1[] = {y};
  for (int trial = 0; trial < 10; trial++) {
    for (int which = 0; which < 2; which++) {
      const graph_t *g = which ? &res : &chain;
      burst_opts_t o = which ? opts(4, 16, As[trial % 5]) : opts(8, 24, As[trial % 5]);
      burst_profile_t p;
      burst_profile_init(&p, g->n, "random");
      random_profile(&p, g, &o, &r);
      burst_plan_t pl;
      burst_plan_search(g, &p, &o, &pl);
      double want = which ? brute_force(g, &p, &o, br0, 3, br1, 1) : brute_force(g, &p, &o, NULL, 0, NULL, 0);
      agree += NEAR(pl.iter_us, want);
      limits += respects_limits(&pl, o.amp);
      bgraph_t bg;
      bgraph_from_graph(g, "", &bg);
      tied += keeps_ties(&bg, &pl) && (!which || bg.v[g->n - 1].tied); /* res's last ReLU follows its add */
      bgraph_free(&bg);
      if (!NEAR(pl.iter_us, want)) tap_diag("trial %d %s: search %.6f, brute force %.6f", trial, which ? "res" : "chain", pl.iter_us, want);
      total++;
      burst_plan_free(&pl);
      burst_profile_free(&p);
    }
  }
  tap_ok(agree == total, "search equals brute force over every plan (%d of %d random profiles and limits)", agree, total);
  tap_ok(tied == total, "the ReLU fused into the residual add runs on the add's ranks in every plan (%d of %d)", tied,
         total);
  tap_ok(limits == total, "every plan within the limit and the job's ranks (%d of %d)", limits, total);
  graph_free(&chain);
  graph_free(&res);
}

/* A GPT-like stack (identity skips around 4-node branches) and nested blocks: the limit, the
 * rank budget, and the Pareto frontier. */
static void build_branchy(graph_t *g) {
  graph_init(g, shape2(4, 16), INIT_KAIMING_UNIFORM);
  int x = nn_linear(g, 0, 16, 1, "in");
  char name[LAYER_NAME_MAX];
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "b%d.ln", i);
    int h = nn_layernorm(g, x, 1e-5f, name);
    snprintf(name, sizeof name, "b%d.qkv", i);
    h = nn_linear(g, h, 48, 1, name);
    snprintf(name, sizeof name, "b%d.attn", i);
    h = nn_attention(g, h, 2, name);
    snprintf(name, sizeof name, "b%d.proj", i);
    h = nn_linear(g, h, 16, 1, name);
    snprintf(name, sizeof name, "b%d.add", i);
    x = nn_add(g, x, h, name);
    /* a nested block: two branches that each fork again */
    snprintf(name, sizeof name, "b%d.u", i);
    int u = nn_linear(g, x, 16, 1, name);
    snprintf(name, sizeof name, "b%d.u1", i);
    int u1 = nn_relu(g, u, name);
    snprintf(name, sizeof name, "b%d.uadd", i);
    u = nn_add(g, u, u1, name);
    snprintf(name, sizeof name, "b%d.v", i);
    int v = nn_linear(g, x, 16, 0, name);
    snprintf(name, sizeof name, "b%d.join", i);
    x = nn_add(g, u, v, name);
  }
  nn_linear(g, x, 10, 1, "head");
}

static void test_branchy_and_pareto(void) {
  graph_t g;
  build_branchy(&g);
  tap_ok(!g.err[0], "branchy graph builds (%s)", g.err);
  rng_t r;
  rng_seed(&r, 11);
  burst_opts_t o = opts(16, 64, BURST_NO_LIMIT);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "random");
  random_profile(&p, &g, &o, &r);
  int ok = 1;
  for (int i = 0; i < 5; i++) {
    o.amp = i == 4 ? BURST_NO_LIMIT : 1 + i * 0.75;
    burst_plan_t pl;
    burst_plan_search(&g, &p, &o, &pl); /* the search checks itself against the evaluator */
    ok &= respects_limits(&pl, o.amp);
    burst_plan_free(&pl);
  }
  tap_ok(ok, "branchy graph: limit and rank budget hold for A = 1, 1.75, 2.5, 3.25, none");

  o.amp = BURST_NO_LIMIT;
  bgraph_t bg;
  bgraph_from_graph(&g, "branchy", &bg);
  burst_frontier_t fr;
  burst_frontier_build(&bg, &p, &o, 0, &fr);
  int n = fr.n;
  int mono = n >= 2;
  for (int i = 1; i < n; i++) mono &= fr.pt[i].rank_us < fr.pt[i - 1].rank_us && fr.pt[i].iter_us > fr.pt[i - 1].iter_us;
  burst_plan_t best, dp;
  burst_plan_search(&g, &p, &o, &best);
  burst_plan_data_parallel(&g, &p, &o, &dp);
  burst_frontier_print(stdout, &fr, &dp, 24);
  tap_ok(mono, "Pareto frontier: rank-time falls and iteration time rises along it (%d points)", n);
  tap_ok(n >= 1 && NEAR(fr.pt[0].iter_us, best.iter_us), "its fastest point is the unlimited plan (%.3f us)", best.iter_us);
  tap_ok(best.iter_us <= dp.iter_us * (1 + 1e-12), "the unlimited plan is never slower than data parallel (%.3f <= %.3f)",
         best.iter_us, dp.iter_us);
  burst_plan_print(stdout, &g, &best, &dp);
  burst_frontier_free(&fr);
  bgraph_free(&bg);
  burst_plan_free(&best);
  burst_plan_free(&dp);
  burst_profile_free(&p);
  graph_free(&g);
}

/* The zoo's models (chains, residual blocks with projections, GPT with identity skips and a tied
 * head) decompose and plan; FLOP-based profiles: 10 us + 3 FLOPs/sample * b / 1e7. */
static void test_zoo(void) {
  const char *names[] = {"mlp", "vgg-mini", "resnet-mini", "gpt"};
  for (int i = 0; i < 4; i++) {
    zoo_opts_t zo = {.mlp = {.hidden = {64, 32}, .nhidden = 2},
                     .vgg = {.channels = {4, 8}, .nstages = 2, .fc = 32},
                     .resnet = {.width = 4, .blocks = 2, .stages = 2},
                     .gpt = {.layers = 2, .width = 16, .heads = 2, .context = 8}};
    snprintf(zo.model, sizeof zo.model, "%s", names[i]);
    int gpt = i == 3;
    graph_t g;
    char err[256] = "";
    int rc = zoo_build(zo, gpt ? shape1(8) : shape3(1, 8, 8), gpt ? 256 : 10, &g, err, sizeof err);
    if (!tap_ok(rc == 0, "zoo %s builds (%s)", names[i], err)) continue;
    burst_opts_t o = opts(8, 64, 3);
    burst_profile_t p;
    burst_profile_init(&p, g.n, "flops");
    set_net(&p, 5, 2000, 5, 2000);
    for (int v = 1; v < g.n; v++) set_node(&p, &o, v, 10, 3 * g.l[v].flops_per_sample / 1e7, 1);
    burst_plan_t pl, dp;
    burst_plan_search(&g, &p, &o, &pl);
    burst_plan_data_parallel(&g, &p, &o, &dp);
    tap_ok(respects_limits(&pl, 3), "zoo %s: %d nodes planned within A = 3 and 8 ranks: %.1f us (data parallel %.1f)",
           names[i], g.n, pl.iter_us, dp.iter_us);
    burst_plan_free(&pl);
    burst_plan_free(&dp);
    burst_profile_free(&p);
    graph_free(&g);
  }
}

static int node_named(const graph_t *g, const char *name) {
  for (int v = 0; v < g->n; v++)
    if (strcmp(g->l[v].name, name) == 0) return v;
  return -1;
}

/* The zoo's gpt (1 block) as the trainer runs it: the output layer on its embedding's ranks (a tied
 * weight), the GELU on its linear's, and with [train] recompute = block the block on one rank set, its
 * last node charged a third of the others' profiled time (their re-run forwards). A profile that pulls
 * each pair apart (the embedding, the GELU and the attention core fastest alone, the output layer and
 * the feed-forward linear on both ranks): the search equals brute force over the plans that keep every
 * tie, and its plan with one of those nodes moved alone is faster (so the ties bind); every point of
 * the frontier keeps them too. */
static void test_gpt_ties(void) {
  zoo_opts_t zo = {.gpt = {.layers = 1, .width = 16, .heads = 2, .context = 8}};
  snprintf(zo.model, sizeof zo.model, "gpt");
  graph_t g;
  char err[256] = "";
  if (!tap_ok(zoo_build(zo, shape1(8), 256, &g, err, sizeof err) == 0, "the 1-block gpt builds (%s)", err)) return;
  const int wte = node_named(&g, "wte"), head = node_named(&g, "lm_head"), fc = node_named(&g, "blocks.0.fc");
  const int gelu = node_named(&g, "blocks.0.gelu"), attn = node_named(&g, "blocks.0.attn");
  const int ln1 = node_named(&g, "blocks.0.ln1"), add2 = node_named(&g, "blocks.0.add2");
  burst_opts_t o = opts(2, 16, BURST_NO_LIMIT);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "pulled apart");
  set_net(&p, 1, 1e5, 1, 1e5);
  for (int v = 1; v < g.n; v++) set_node(&p, &o, v, 5, 2, 1);
  const int alone[] = {wte, gelu, attn}, everywhere[] = {head, fc};
  for (int x = 0; x < 3; x++) set_node(&p, &o, alone[x], 0, 400, -0.5); /* 400 / sqrt(b): fastest on 1 rank */
  for (int x = 0; x < 2; x++) set_node(&p, &o, everywhere[x], 0, 300, 1); /* 300 b: fastest on 2 */
  for (int mode = RECOMPUTE_NONE; mode <= RECOMPUTE_BLOCK; mode++) {
    const char *name = mode ? "recompute = block" : "recompute = none";
    g.recompute = mode;
    bgraph_t bg;
    bgraph_from_graph(&g, "", &bg);
    burst_plan_t pl;
    burst_plan_search(&g, &p, &o, &pl);
    double want = brute_force(&g, &p, &o, NULL, 0, NULL, 0);
    /* the plan with one of the nodes that pull away moved to rank 0 alone: faster, and not allowed */
    int moved_faster = 0;
    burst_plan_t mv;
    burst_plan_alloc(&mv, g.n, &o);
    const int tied = mode ? 3 : 2; /* without recompute the attention core may go alone: it does */
    for (int x = 0; x < tied; x++) {
      memcpy(mv.n, pl.n, (size_t)g.n * sizeof *mv.n);
      mv.n[alone[x]] = 1;
      burst_evaluate(&bg, &p, &o, &mv);
      moved_faster += mv.iter_us < pl.iter_us * (1 - 1e-9);
    }
    burst_plan_free(&mv);
    if (!tap_ok(keeps_ties(&bg, &pl) && same_ranks(&pl, head, wte) && same_ranks(&pl, gelu, fc) &&
                    (mode ? same_ranks(&pl, attn, ln1) : pl.n[attn] == 1 && pl.n[ln1] == 2) &&
                    NEAR(pl.iter_us, want) && moved_faster == tied,
                "gpt, %s: the output layer on the embedding's %d ranks, the GELU on its linear's %d, the attention "
                "on %d of the block's %d; %.3f us = brute force over the plans keeping them (%.3f); the embedding "
                "or the GELU%s alone would be faster (%d of %d)",
                name, pl.n[wte], pl.n[fc], pl.n[attn], pl.n[ln1], pl.iter_us, want, mode ? " or the attention" : "",
                moved_faster, tied))
      diag_plan(&pl);
    if (mode) {
      double rerun = 0;
      for (int v = ln1; v < add2; v++) rerun += burst_profile_pass_us(&p, &bg, v, pl.per_rank[add2]) / 3;
      double own = burst_profile_pass_us(&p, &bg, add2, pl.per_rank[add2]);
      tap_ok(NEAR(pl.comp_us[add2], own + rerun) && rerun > 0,
             "gpt, %s: the block's last node costs its own pass and a third of the block's others' (%.3f us = "
             "%.3f + %.3f)", name, pl.comp_us[add2], own, rerun);
    }
    burst_frontier_t fr;
    burst_frontier_build(&bg, &p, &o, 0, &fr);
    int kept = 0;
    for (int i = 0; i < fr.n; i++) {
      burst_plan_t fp;
      burst_frontier_plan(&fr, i, &fp);
      kept += keeps_ties(&bg, &fp);
      burst_plan_free(&fp);
    }
    tap_ok(kept == fr.n && fr.n > 1, "gpt, %s: every point of the frontier keeps the ties (%d of %d)", name, kept,
           fr.n);
    burst_frontier_free(&fr);
    burst_plan_free(&pl);
    bgraph_free(&bg);
  }
  /* random profiles: the fastest plan (whose search skips the runs its bound rules out) equals brute
   * force over the plans that keep the ties */
  rng_t r;
  rng_seed(&r, 11);
  int agree = 0;
  for (int trial = 0; trial < 16; trial++) {
    g.recompute = trial % 2 ? RECOMPUTE_BLOCK : RECOMPUTE_NONE;
    burst_profile_t rp;
    burst_profile_init(&rp, g.n, "random");
    random_profile(&rp, &g, &o, &r);
    burst_plan_t pl;
    burst_plan_search(&g, &rp, &o, &pl);
    double want = brute_force(&g, &rp, &o, NULL, 0, NULL, 0);
    agree += NEAR(pl.iter_us, want);
    if (!NEAR(pl.iter_us, want))
      tap_diag("random gpt profile %d: search %.6f, brute force %.6f", trial, pl.iter_us, want);
    burst_plan_free(&pl);
    burst_profile_free(&rp);
  }
  tap_ok(agree == 16, "gpt, 16 random profiles (recompute none and block): the fastest plan equals brute force over "
         "the plans keeping the ties (%d of 16)", agree);
  /* the amplification limit judges a set as one choice: under A = 1.5, a layer norm that does not scale
   * (50 us at any batch) stays alone on 1 rank without recomputation, and with block goes with its
   * block, whose sums scale; the tied pair (the embedding does not scale either) is judged together */
  burst_opts_t lim = opts(2, 16, 1.5);
  burst_profile_t lp;
  burst_profile_init(&lp, g.n, "one layer norm flat");
  set_net(&lp, 1, 1e5, 1, 1e5);
  for (int v = 1; v < g.n; v++) set_node(&lp, &lim, v, 0, 300, 1);
  set_node(&lp, &lim, ln1, 50, 0, 1);
  set_node(&lp, &lim, wte, 50, 0, 1);
  int judged = 0;
  for (int mode = RECOMPUTE_NONE; mode <= RECOMPUTE_BLOCK; mode++) {
    g.recompute = mode;
    burst_plan_t pl;
    burst_plan_search(&g, &lp, &lim, &pl);
    int ok = mode ? pl.n[ln1] == 2 && pl.n[add2] == 2 : pl.n[ln1] == 1 && pl.n[add2] == 2;
    ok &= pl.n[wte] == 2 && pl.n[head] == 2 && respects_limits(&pl, 1.5);
    if (!ok) diag_plan(&pl);
    judged += ok;
    burst_plan_free(&pl);
  }
  tap_ok(judged == 2, "gpt under A = 1.5: a flat layer norm alone on 1 rank without recomputation, on its block's 2 "
         "with block (the block judged as one); the flat embedding on its output layer's 2 (the pair as one)");
  burst_profile_free(&lp);
  burst_profile_free(&p);
  graph_free(&g);
}

/* ---- plan files and bad input ---- */

typedef struct read_case {
  const char *path, *model;
  const graph_t *g;
  burst_opts_t o;
} read_case_t;

static void read_in_child(const void *arg) {
  const read_case_t *rc = arg;
  burst_plan_t pl;
  burst_plan_read(rc->path, rc->g, rc->model, &rc->o, &pl);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(text, f);
  fclose(f);
}

/* The file at src with line `lineno` (1-based) replaced by `repl`, written to dst. */
static void edit_line(const char *src, const char *dst, int lineno, const char *repl) {
  FILE *f = fopen(src, "r");
  if (!f) abort();
  char buf[8192] = "", line[512];
  for (int i = 1; fgets(line, sizeof line, f); i++) strcat(buf, i == lineno ? repl : line);
  fclose(f);
  write_text(dst, buf);
}

typedef struct search_case {
  const graph_t *g;
  const burst_profile_t *p;
  burst_opts_t o;
} search_case_t;

static void search_in_child(const void *arg) {
  const search_case_t *sc = arg;
  burst_plan_t pl;
  burst_plan_search(sc->g, sc->p, &sc->o, &pl);
}

static void evaluate_in_child(const void *arg) {
  const search_case_t *sc = arg;
  burst_plan_t pl;
  burst_plan_data_parallel(sc->g, sc->p, &sc->o, &pl);
  pl.first[2] = 6; /* 8 ranks from rank 6 */
  burst_plan_evaluate(sc->g, sc->p, &sc->o, &pl);
}

static void test_files(void) {
  graph_t g;
  fork2(&g);
  burst_opts_t o = opts(8, 64, BURST_NO_LIMIT);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "synthetic");
  set_net(&p, 1, 1000, 1, 100);
  set_node(&p, &o, 1, 0, 0, 1);
  set_node(&p, &o, 2, 40, 10, 1);
  set_node(&p, &o, 3, 40, 10, 1);
  set_node(&p, &o, 4, 0, 0, 1);
  burst_plan_t pl, back;
  burst_plan_search(&g, &p, &o, &pl);
  char path[128], bad[128];
  snprintf(path, sizeof path, "%s/plan.txt", tmpdir);
  snprintf(bad, sizeof bad, "%s/bad.txt", tmpdir);
  burst_plan_write(path, &g, "fork2", &pl);
  burst_plan_read(path, &g, "fork2", &o, &back);
  int same = 1;
  for (int v = 0; v < g.n; v++) same &= back.n[v] == pl.n[v] && back.first[v] == pl.first[v];
  burst_plan_evaluate(&g, &p, &o, &back);
  tap_ok(same && NEAR(back.iter_us, pl.iter_us) && isinf(back.amp_limit), "plan file round trip (%.3f us)", back.iter_us);
  burst_plan_free(&back);
  burst_plan_read(path, &g, "fork2", &o, &back);
  tap_ok(back.iter_us == pl.iter_us && back.rank_us == pl.rank_us && back.one_rank_us == pl.one_rank_us,
         "the plan file carries its predictions as data: %.3f us, %.3f rank-us, one rank %.3f us", back.iter_us,
         back.rank_us, back.one_rank_us);
  burst_plan_free(&back);
  { /* a format 1 file (no prediction keys, a comment instead) still reads, without predictions */
    char v1[128];
    snprintf(v1, sizeof v1, "%s/v1.txt", tmpdir);
    edit_line(path, bad, 1, "surge-burst-plan 1\n");
    edit_line(bad, v1, 8, "# predicted: iteration 1.000 us, rank-time 2.000 rank-us, amplification 1.000, ranks used 8\n");
    edit_line(v1, bad, 9, "");
    edit_line(bad, v1, 9, "");
    edit_line(v1, bad, 9, ""); /* predicted_for */
    edit_line(bad, v1, 1, "surge-burst-plan 1\n");
    burst_plan_read(v1, &g, "fork2", &o, &back);
    same = 1;
    for (int v = 0; v < g.n; v++) same &= back.n[v] == pl.n[v] && back.first[v] == pl.first[v];
    tap_ok(same && back.one_rank_us == 0 && back.iter_us == 0, "a format 1 plan file reads, with no predictions");
    burst_plan_free(&back);
  }
  { /* node lines edited after the predictions were made: the plan reads, its predictions dropped */
    char edited[128];
    snprintf(edited, sizeof edited, "%s/edited.txt", tmpdir);
    edit_line(path, edited, 16, "3 y 8 0 8\n");
    burst_plan_read(edited, &g, "fork2", &o, &back);
    tap_ok(back.n[3] == 8 && back.first[3] == 0 && back.iter_us == 0 && back.rank_us == 0 && back.one_rank_us == 0 &&
               back.stale_predictions_line == 11,
           "a plan file whose node lines were edited reads, its predictions dropped (predicted_for on line %d)",
           back.stale_predictions_line);
    burst_plan_free(&back);
    burst_plan_read(path, &g, "fork2", &o, &back);
    tap_ok(back.stale_predictions_line == 0 && back.iter_us > 0, "the unedited file keeps them");
    burst_plan_free(&back);
  }

  read_case_t rc = {path, "other", &g, o};
  expect_input_error(read_in_child, &rc, "plan of another model", "plan is for model 'fork2'");
  rc.model = "fork2";
  rc.o.ranks = 16;
  expect_input_error(read_in_child, &rc, "plan for another rank count", "plan is for 8 ranks, the job has 16");
  rc.o = o;
  rc.o.batch = 32;
  expect_input_error(read_in_child, &rc, "plan for another global batch", "global batch 64");
  graph_t other;
  chain3(&other);
  graph_t same_size;
  graph_init(&same_size, shape1(32), INIT_KAIMING_UNIFORM);
  int ss = nn_relu(&same_size, 0, "s");
  int sx = nn_relu(&same_size, ss, "x");
  nn_add(&same_size, sx, nn_gelu(&same_size, ss, "y"), "join");
  rc.o = o;
  rc.g = &same_size;
  expect_input_error(read_in_child, &rc, "plan of another graph under the same name", "another 'fork2' graph");
  rc.g = &g;
  /* one line of the plan file changed at a time (line 15 is node 2: after 7 header lines, 3
   * predictions, predicted_for and a comment) */
  static const struct {
    int line;
    const char *repl, *what, *needle;
  } edits[] = {
      {15, "2 x 4 6 16\n", "rank set larger than the job", ":15: node 2 'x' uses ranks 6..9 but the job has 8 ranks"},
      {15, "2 x 4 0 15\n", "wrong per-rank batch", ":15: node 2 'x': per-rank batch 15"},
      {15, "2 y 4 0 16\n", "node name mismatch", "node 2 is 'y' in the plan but 'x'"},
      {17, "", "truncated plan", "'end' after 4 of 5 node lines"},
      {1, "surge-burst-plan 3\n", "future format", ":1: plan format version 3"},
      /* the predictions are data: all three or none, positive, rank-time at least the time */
      {10, "", "two of three predictions", "'one_rank_us' is missing"},
      {8, "predicted_iteration_us -3\n", "negative predicted time", ":8: predicted_iteration_us '-3' must be a positive finite"},
      {9, "predicted_rank_us 1\n", "rank-time below the time", ":9: predicted_rank_us 1 is below predicted_iteration_us"},
      {1, "surge-burst-plan 1\n", "predictions in a format 1 file", "is a format 2 key; this file says format 1"},
      {11, "predicted_for 12g4\n", "predicted_for not hexadecimal", ":11: predicted_for '12g4' is not hexadecimal"},
  };
  rc.path = bad;
  for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
    edit_line(path, bad, edits[k].line, edits[k].repl);
    expect_input_error(read_in_child, &rc, edits[k].what, edits[k].needle);
  }

  search_case_t sc = {&g, &p, o};
  expect_input_error(evaluate_in_child, &sc, "rank set larger than the job (API)", "node 2 'x' uses ranks 6..13 but the job has 8 ranks");
  burst_profile_t missing;
  burst_profile_init(&missing, g.n, "holes.h5");
  missing.net = p.net;
  int b[16], C = burst_profile_batches(&o, b);
  for (int v = 1; v < g.n; v++)
    for (int k = 0; k < C; k++)
      if (!(v == 2 && b[k] == 16)) burst_profile_set(&missing, v, b[k], 1 + b[k]);
  sc.p = &missing;
  expect_input_error(search_in_child, &sc, "profile missing a batch size",
                     "profile holes.h5: node 2 'x' has no time for per-rank batch 16");
  sc.p = &p;
  sc.g = &other;
  expect_input_error(search_in_child, &sc, "profile of another graph", "the model graph has 4");

  graph_t bridge; /* 0 -> a, 0 -> b, (a,b) -> c, (a,c) -> d: not series-parallel */
  graph_init(&bridge, shape1(4), INIT_KAIMING_UNIFORM);
  int a = nn_relu(&bridge, 0, "a"), bb = nn_relu(&bridge, 0, "b");
  nn_add(&bridge, a, nn_add(&bridge, a, bb, "c"), "d");
  burst_profile_t pb;
  burst_profile_init(&pb, bridge.n, "synthetic");
  pb.net = p.net;
  for (int v = 1; v < bridge.n; v++) set_node(&pb, &o, v, 1, 1, 1);
  search_case_t sb = {&bridge, &pb, o};
  expect_input_error(search_in_child, &sb, "graph that is not series-parallel", "not series-parallel");
  graph_t dead;
  graph_init(&dead, shape1(4), INIT_KAIMING_UNIFORM);
  nn_relu(&dead, 0, "unused");
  nn_relu(&dead, 0, "out");
  burst_profile_t pd;
  burst_profile_init(&pd, dead.n, "synthetic");
  pd.net = p.net;
  for (int v = 1; v < dead.n; v++) set_node(&pd, &o, v, 1, 1, 1);
  search_case_t sd = {&dead, &pd, o};
  expect_input_error(search_in_child, &sd, "node whose output is unused", "node 1 'unused': no later node uses its output");

  burst_profile_free(&missing);
  burst_profile_free(&pb);
  burst_profile_free(&pd);
  burst_plan_free(&pl);
  burst_profile_free(&p);
  graph_free(&bridge);
  graph_free(&dead);
  graph_free(&other);
  graph_free(&same_size);
  graph_free(&g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/surge-planner-XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  test_candidates();
  test_chain();
  test_limit();
  test_branches();
  test_four_lanes();
  test_bn_sums();
  test_brute_force();
  test_tied_limit();
  test_branchy_and_pareto();
  test_zoo();
  test_gpt_ties();
  test_files();
  const char *files[] = {"plan.txt", "bad.txt", "v1.txt", "edited.txt"};
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, files[k]);
    remove(path);
  }
  if (rmdir(tmpdir) != 0) tap_diag("left %s: %s", tmpdir, strerror(errno));
  return tap_done();
}
