/* surge-sim's library against hand-derived answers: a plan's rank classes and idle gaps, the
 * background's long-run rate in them, the cluster comparison's invariants on VGG-16's A100 profile,
 * and the 3D simulation of a two-stage pipeline (1F1B timeline, compression, data-parallel
 * allreduce), plus its bad options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/graph_file.h"
#include "core/error.h"
#include "sim/sim.h"
#include "child.h"
#include "tap.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))))

/* input -> a -> b -> c, G = 4, B = 4 */
static void chain_graph(bgraph_t *g, burst_profile_t *p, double act) {
  bgraph_init(g, "chain", "test");
  int x = bgraph_add(g, "input", "input", 0, NULL, act, 0, 0);
  x = bgraph_add(g, "a", "linear", 1, &x, act, 1e6, 0);
  x = bgraph_add(g, "b", "linear", 1, &x, act, 0, 0);
  bgraph_add(g, "c", "relu", 1, &x, act, 0, 0);
  g->fingerprint = bgraph_fingerprint(g);
  burst_profile_init(p, g->n, "test");
  for (int v = 1; v < g->n; v++)
    for (int b = 1; b <= 16; b *= 2) burst_profile_set(p, v, b, 3.0 * b);
}

static void test_timeline(void) {
  /* a hand-made plan: a on 4 ranks [0,10), b on ranks 0..1 [10,30), c on 4 ranks [30,40) */
  burst_plan_t pl;
  burst_opts_t o = {4, 4, BURST_NO_LIMIT, BURST_RANKS_POW2};
  burst_plan_alloc(&pl, 4, &o);
  int n[4] = {4, 4, 2, 4};
  double start[4] = {0, 0, 10, 30}, comp[4] = {0, 10, 20, 10};
  for (int v = 0; v < 4; v++) pl.n[v] = n[v], pl.start_us[v] = start[v], pl.comp_us[v] = comp[v];
  pl.iter_us = 40;
  sim_timeline_t tl;
  sim_timeline_of(&pl, &tl);
  tap_ok(tl.nclass == 2 && tl.c[0].count == 2 && tl.c[1].count == 2 && tl.c[0].ngap == 0 && tl.c[1].ngap == 1 &&
             NEAR(tl.c[1].gap_us[0], 20) && NEAR(tl.idle_rank_us, 40),
         "timeline: ranks 0-1 always busy, ranks 2-3 one 20 us gap; 40 idle rank-us");
  /* the background: pieces 15 and 10 us, batch 2: per 40 us iteration ranks 2-3 run 15 (pos 1),
   * then 10 (a step), then 15, ... : one step every two iterations -> 2 samples / 80 us a rank */
  sim_bg_t bg = {2, 2, (double[]){15, 10}, 25, "bg"};
  double ideal, sps = sim_bg_fill(&bg, &tl, &ideal);
  tap_ok(NEAR(sps, 2 * 2 / 80e-6) && NEAR(ideal, 40.0 / 40 * 2 / 25e-6),
         "background: whole pieces in the gaps: %.1f samples/s (all idle time: %.1f)", sps, ideal);
  /* a gap around the iteration's end: a on ranks 0-1 [0,10), b on all [10,30), c on 0-1 [30,40) */
  pl.n[1] = 2, pl.start_us[1] = 0, pl.comp_us[1] = 10;
  pl.n[2] = 4, pl.start_us[2] = 10, pl.comp_us[2] = 20;
  pl.n[3] = 2, pl.start_us[3] = 30, pl.comp_us[3] = 10;
  sim_timeline_free(&tl);
  sim_timeline_of(&pl, &tl);
  const sim_class_t *idle = tl.c[0].count == 2 && tl.c[0].first == 2 ? &tl.c[0] : &tl.c[1];
  tap_ok(idle->first == 2 && idle->ngap == 1 && NEAR(idle->gap_us[0], 20),
         "timeline: the idle stretch after the last node joins the one before the first (20 us)");
  sim_timeline_free(&tl);
  burst_plan_free(&pl);
}

static void test_cluster(void) {
  char path[1024];
  const char *top = getenv("SURGE_TOP_SRCDIR");
  snprintf(path, sizeof path, "%s/tests/data/deeppool/A100_vgg.prof", top && *top ? top : ".");
  bgraph_t g;
  burst_profile_t p;
  deeppool_report_t rep;
  deeppool_import(path, NULL, NULL, &g, &p, &rep);
  p.net = (burst_net_t){40, 2.66e5, 0, 2.66e5};
  sim_bg_t bg;
  sim_bg_init(&bg, &g, &p, 8);
  sim_opts_t so = {{64, 256, BURST_NO_LIMIT, BURST_RANKS_DIVISORS}, 0, 16, 1};
  sim_result_t r;
  sim_cluster_run(&g, &p, &bg, &so, &r);
  tap_ok(r.dp.idle_rank_us < 1e-9 * r.dp.rank_us && r.dp.bg_sps == 0 && NEAR(r.dp.fg_sps, 256 / r.dp.iter_us * 1e6),
         "VGG-16, G = 64: data parallelism leaves no idle time; %.0f samples/s", r.dp.fg_sps);
  tap_ok(NEAR(r.fastest.iter_us, r.front[0].iter_us) && r.best.total_sps >= r.fastest.total_sps &&
             r.best.total_sps > r.dp.total_sps && r.neval == 16,
         "the fastest plan is the frontier's first; the best total (%.2fx data parallelism) beats it and data "
         "parallelism",
         r.best.total_sps / r.dp.total_sps);
  int ok = 1;
  for (int x = 0; x < r.neval; x++) ok &= r.eval[x].bg_sps <= r.eval[x].bg_ideal_sps * (1 + 1e-12);
  tap_ok(ok, "the background never trains more than the idle time allows");
  so.fg_slowdown = 1.1;
  sim_result_t s;
  sim_cluster_run(&g, &p, &bg, &so, &s);
  int slow = s.neval == r.neval; /* the same frontier points, each slowed where a background runs */
  for (int x = 0; slow && x < r.neval; x++)
    slow &= r.eval[x].bg_sps > 0 ? NEAR(s.eval[x].fg_sps * 1.1, r.eval[x].fg_sps) : NEAR(s.eval[x].fg_sps, r.eval[x].fg_sps);
  tap_ok(slow, "a foreground slowdown of 1.1 divides the foreground's samples/s by 1.1 at every evaluated plan "
               "with a background, and only there");
  sim_result_free(&s);
  sim_result_free(&r);
  sim_bg_free(&bg);
  bgraph_free(&g);
  burst_profile_free(&p);
}

/* A two-stage pipeline: each stage f = 1 us forward, b = 2 us backward per micro-batch, transfers of
 * 0.5 us each way (1e6 bytes at 2e6 bytes/us), 2 micro-batches; 1F1B with non-blocking sends (the
 * sender computes on; one transfer at a time on a link) gives
 *   S0: F0 [0,1] send [1,1.5], F1 [1,2] send [2,2.5], B0 [5,7], B1 [8,10]
 *   S1: F0 [1.5,2.5], B0 [2.5,4.5] send [4.5,5], F1 [4.5,5.5], B1 [5.5,7.5] send [7.5,8]
 * so the pipeline ends at 10 us; stage 0's gradients (1e6 bytes) allreduce over dp = 2 in
 * 2 (1/2) 1e6 / 1e6 = 1 us: 11 us. Compressed (cb 2 in the epilogue: B1's send, 0.25 us; dp 2 on
 * stage 0: 0.5 us): 9.75 + 0.5 = 10.25 us. */
static void test_pipeline(void) {
  bgraph_t g;
  burst_profile_t p;
  chain_graph(&g, &p, 1e6);
  /* units a | b | c; b and c together make the second stage (b: 3 us, c: 0) */
  burst_profile_set(&p, 3, 1, 0);
  sim3d_opts_t o = {.tp = 1, .pp = 2, .dp = 2, .micro_batches = 2, .micro_batch = 1, .fwd_fraction = 1.0 / 3,
                    .tp_link = {0, 1e9}, .pp_link = {0, 2e6}, .dp_link = {0, 1e6}, .cb_ratio = 2,
                    .cb_epilogue_only = 1, .dp_ratio = 2, .dp_stages = 1};
  sim3d_result_t r, c;
  sim3d_run(&g, &p, &o, 0, &r);
  sim3d_run(&g, &p, &o, 1, &c);
  tap_ok(r.nstage == 2 && r.stage_nodes[0] == 1 && r.stage_nodes[1] == 2 && NEAR(r.fwd_us[0], 1) && NEAR(r.bwd_us[1], 2),
         "3D: two stages (a | b c), 1 us forward and 2 us backward each");
  tap_ok(NEAR(r.pipeline_us, 10) && NEAR(r.iter_us, 11), "3D: 1F1B ends at 10 us, the allreduce at 11 us (%.3f, %.3f)",
         r.pipeline_us, r.iter_us);
  int order = r.ops[0].stage == 0 && r.ops[0].kind == SIM3D_FWD && NEAR(r.ops[1].start_us, 1) &&
              NEAR(r.ops[1].send_end_us, 2.5);
  tap_ok(order, "3D: stage 0 computes its second forward while the first one's transfer goes (non-blocking send)");
  int compressed = 0;
  for (int x = 0; x < c.nops; x++) compressed += c.ops[x].compressed;
  tap_ok(NEAR(c.pipeline_us, 9.75) && NEAR(c.iter_us, 10.25) && compressed == 1,
         "3D compressed: the epilogue's one backward transfer halves (9.75 us), stage 0's allreduce halves (10.25 "
         "us)");
  tap_ok(NEAR(r.bubble, 1 - (2 * 3.0 * 2) / (2 * 10.0)), "3D: bubble %.3f = 1 - busy / (stages x time)", r.bubble);
  sim3d_free(&r);
  sim3d_free(&c);

  /* the optimizer once per step, each stage its share of the parameters (all of them on stage 0),
   * not once per micro-batch at the output node as a burst plan charges it */
  p.step.step_us = 2;
  sim3d_run(&g, &p, &o, 0, &r);
  tap_ok(NEAR(r.fwd_us[1], 1) && NEAR(r.pipeline_us, 10) && NEAR(r.opt_us[0], 2) && NEAR(r.opt_us[1], 0) &&
             NEAR(r.iter_us, 13),
         "3D: a 2 us optimizer step lands on stage 0, which holds the parameters, after its allreduce: %.3f us",
         r.iter_us);
  sim3d_free(&r);
  p.step.step_us = 0;

  /* the stages as the trainer splits them: a b | c */
  o.stage_nodes[0] = 2, o.stage_nodes[1] = 1;
  sim3d_run(&g, &p, &o, 0, &r);
  tap_ok(r.stage_nodes[0] == 2 && r.stage_nodes[1] == 1 && NEAR(r.fwd_us[0], 2) && NEAR(r.bwd_us[1], 0),
         "3D: --stage-nodes 2,1 puts a and b on stage 0 (2 us forward), c alone on stage 1");
  sim3d_free(&r);
  bgraph_free(&g);
  burst_profile_free(&p);
}

/* [train] recompute in the 3D model: input -> s -> x -> y (attention) -> add(s, y) -> out, one stage,
 * one micro-batch; each node 3 us a pass at batch 1 (1 us forward): the unit x y add re-runs x and y
 * (block: 2 us more backward) or y alone (attention: 1 us); s and out, units of one node, nothing. */
static void test_recompute_3d(void) {
  bgraph_t g;
  bgraph_init(&g, "res", "test");
  int x = bgraph_add(&g, "input", "input", 0, NULL, 4, 0, 0);
  int s = bgraph_add(&g, "s", "linear", 1, &x, 4, 0, 0);
  x = bgraph_add(&g, "x", "linear", 1, &s, 4, 0, 0);
  int y = bgraph_add(&g, "y", "attention", 1, &x, 4, 0, 0);
  int in[2] = {s, y};
  x = bgraph_add(&g, "add", "add", 2, in, 4, 0, 0);
  bgraph_add(&g, "out", "linear", 1, &x, 4, 0, 0);
  g.fingerprint = bgraph_fingerprint(&g);
  burst_profile_t p;
  burst_profile_init(&p, g.n, "test");
  for (int v = 1; v < g.n; v++) burst_profile_set(&p, v, 1, 3);
  sim3d_opts_t o = {.tp = 1, .pp = 1, .dp = 1, .micro_batches = 1, .micro_batch = 1, .fwd_fraction = 1.0 / 3,
                    .tp_link = {0, 1e9}, .pp_link = {0, 1e9}, .dp_link = {0, 1e9}, .cb_ratio = 1, .dp_ratio = 1};
  const double want[3] = {0, 2, 1};
  int ok = 0;
  double got[3];
  for (int m = RECOMPUTE_NONE; m <= RECOMPUTE_ATTENTION; m++) {
    sim3d_result_t r;
    o.recompute = m;
    sim3d_run(&g, &p, &o, 0, &r);
    got[m] = r.rerun_us[0];
    ok += NEAR(r.rerun_us[0], want[m]) && NEAR(r.bwd_us[0], 10 + want[m]) && NEAR(r.fwd_us[0], 5) &&
          NEAR(r.iter_us, 15 + want[m]);
    sim3d_free(&r);
  }
  tap_ok(ok == 3, "3D recompute: a backward re-runs none, the block's inside (x, y: 2 us) or its attention (1 us): "
         "%g, %g, %g us, in the backward and the iteration", got[0], got[1], got[2]);
  /* a background whose graph recomputes x and y before add's backward (a graph file's recompute line) */
  g.v[x].recompute_from = s + 1;
  sim_bg_t bg;
  sim_bg_init(&bg, &g, &p, 1);
  tap_ok(NEAR(bg.step_us, 5 * 3 + 2), "a background's step holds its re-run forwards: %g us (5 passes of 3 us + 2)",
         bg.step_us);
  sim_bg_free(&bg);
  bgraph_free(&g);
  burst_profile_free(&p);
}

typedef struct bad3d {
  sim3d_opts_t o;
} bad3d_t;

/* The stage partition against the plain dynamic programme it replaced (O(pp U^2): best over every
 * last cut), cuts and all, on random unit times with many ties (small whole numbers and zeros) and
 * on fractions whose sums round. */
static void reference_partition(const double *unit, int U, int pp, int *from) {
  double *best = xmalloc((size_t)(U + 1) * (pp + 1) * sizeof *best), *pre = xmalloc((size_t)(U + 1) * sizeof *pre);
  int *arg = xmalloc((size_t)(U + 1) * (pp + 1) * sizeof *arg);
  pre[0] = 0;
  for (int u = 0; u < U; u++) pre[u + 1] = pre[u] + unit[u];
  for (size_t k = 0; k < (size_t)(U + 1) * (pp + 1); k++) best[k] = HUGE_VAL;
  best[0] = 0;
  for (int s = 1; s <= pp; s++)
    for (int i = s; i <= U; i++)
      for (int j = s - 1; j < i; j++) {
        double b = best[(size_t)j * (pp + 1) + s - 1], t = b > pre[i] - pre[j] ? b : pre[i] - pre[j];
        if (t < best[(size_t)i * (pp + 1) + s]) best[(size_t)i * (pp + 1) + s] = t, arg[(size_t)i * (pp + 1) + s] = j;
      }
  from[pp] = U;
  for (int s = pp; s >= 1; s--) from[s - 1] = arg[(size_t)from[s] * (pp + 1) + s];
  free(arg);
  free(pre);
  free(best);
}

static void test_partition(void) {
  unsigned seed = 12345;
  int cases = 0, same = 0;
  double unit[64];
  for (int trial = 0; trial < 3000; trial++) {
    int U = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 40, pp = 1 + (int)(seed >> 8) % 8;
    if (pp > U) pp = U;
    for (int u = 0; u < U; u++) {
      seed = seed * 1103515245u + 12345u;
      unit[u] = trial % 2 ? (double)((seed >> 16) % 4) : ((seed >> 16) % 1000) / 7.0 + 1e-3;
    }
    int a[9], b[9];
    sim3d_partition(unit, U, pp, a);
    reference_partition(unit, U, pp, b);
    cases++;
    same += memcmp(a, b, (size_t)(pp + 1) * sizeof *a) == 0;
  }
  tap_ok(same == cases, "3D: the O(pp U) stage partition cuts where the O(pp U^2) programme does (%d of %d cases)",
         same, cases);
}

static void run3d_in_child(const void *arg) {
  const bad3d_t *b = arg;
  bgraph_t g;
  burst_profile_t p;
  chain_graph(&g, &p, 1e6);
  sim3d_result_t r;
  sim3d_run(&g, &p, &b->o, 0, &r);
}

static void test_bad(void) {
  bad3d_t b = {{.tp = 1, .pp = 5, .dp = 1, .micro_batches = 2, .micro_batch = 1, .fwd_fraction = 0.5,
                .tp_link = {0, 1}, .pp_link = {0, 1}, .dp_link = {0, 1}, .cb_ratio = 1, .dp_ratio = 1}};
  expect_input_error(run3d_in_child, &b, "more stages than cut points", "--pp 5: the graph test has only 3 places");
  b.o.pp = 2;
  b.o.cb_ratio = 0.5;
  expect_input_error(run3d_in_child, &b, "a compression ratio below 1", "--cb-ratio and --dp-ratio must be finite numbers >= 1");
  b.o.cb_ratio = 1;
  b.o.pp_link.bytes_per_us = 0;
  expect_input_error(run3d_in_child, &b, "a link without bandwidth", "--pp-link 0:0");
  b.o.pp_link.bytes_per_us = 1;
  b.o.stage_nodes[0] = 1, b.o.stage_nodes[1] = 1;
  expect_input_error(run3d_in_child, &b, "stages that leave a node out", "--stage-nodes: stage 1 does not end where");
}

int main(void) {
  test_timeline();
  test_cluster();
  test_pipeline();
  test_recompute_3d();
  test_partition();
  test_bad();
  return tap_done();
}
