/* Burst planner run time on synthetic 100-node graphs at G = 8, 64 and 1024 ranks:
 *   chain    input, then linear/relu pairs of varying width
 *   branchy  residual blocks: every other block has a projection branch beside its
 *            linear-relu-linear branch (two non-empty branches: the rank-split search), the others
 *            an identity skip
 * Profiles come from the layers' FLOPs: t(b) = 10 us + 3 FLOPs/sample * b / (10 TFLOP/s), the
 * network 5 us and 25 GB/s per link. The global batch is 3072 (= 3 * 2^10) at every G, so the
 * per-rank batch shrinks as G grows (strong scaling).
 *
 *   bench/bench_planner [repeats]
 *
 * The searches run without an amplification limit, the slowest case (a limit removes candidates);
 * the target is under a second at G = 1024, frontier included.
 * C: candidate rank counts per node. search_s: least wall time of `repeats` searches (default 3;
 * one when a search takes over a second). eval_s: least time of evaluating the data-parallel plan
 * (one pass of the cost model over the graph, the baseline); search/eval: their ratio, the search's
 * cost in cost-model passes. plan/dp: the plan's predicted iteration time over the data-parallel
 * plan's (below 1: the plan is faster). front_s: time of the exact frontier (every plan no other
 * beats in both time and rank-time; one run), front_cpu its CPU time (the same unless other work
 * shares the cores); points: its size. The frontier and the "any" policy
 * on branchy graphs are skipped when there are more than 24 candidates (they take minutes).
 *   gpt      the zoo's gpt (9 blocks of width 256, context 64: 94 nodes): its output layer uses the
 *            embedding's weight, so the search runs once per rank count the two may share (the
 *            fastest plan skips the runs a search without the tie rules out; plan.h)
 *   gpt-free the same graph with the output layer a plain linear layer: the baseline of gpt's rows */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "burst/plan.h"
#include "core/error.h"
#include "core/timer.h"
#include "nn/zoo.h"

enum { BATCH = 3072, NODES = 100 };

static void build_chain(graph_t *g) {
  graph_init(g, shape1(1024), INIT_KAIMING_UNIFORM);
  int x = 0;
  char name[LAYER_NAME_MAX];
  for (int i = 0; g->n < NODES; i++) {
    snprintf(name, sizeof name, "fc%d", i);
    x = nn_linear(g, x, i % 7 == 3 ? 4096 : 1024, 1, name);
    if (g->n == NODES) break;
    snprintf(name, sizeof name, "relu%d", i);
    x = nn_relu(g, x, name);
  }
}

static void build_branchy(graph_t *g) {
  graph_init(g, shape1(1024), INIT_KAIMING_UNIFORM);
  char name[LAYER_NAME_MAX];
  int x = nn_linear(g, 0, 1024, 1, "stem");
  for (int i = 0; g->n + 7 <= NODES; i++) {
    int skip = x;
    if (i % 2 == 0) {
      snprintf(name, sizeof name, "b%d.proj", i);
      skip = nn_linear(g, x, 1024, 0, name);
    }
    snprintf(name, sizeof name, "b%d.fc1", i);
    int h = nn_linear(g, x, 2048, 1, name);
    snprintf(name, sizeof name, "b%d.relu1", i);
    h = nn_relu(g, h, name);
    snprintf(name, sizeof name, "b%d.fc2", i);
    h = nn_linear(g, h, 1024, 1, name);
    snprintf(name, sizeof name, "b%d.add", i);
    x = nn_add(g, skip, h, name);
    snprintf(name, sizeof name, "b%d.relu", i);
    x = nn_relu(g, x, name);
  }
  while (g->n < NODES) {
    snprintf(name, sizeof name, "head%d", g->n);
    x = nn_linear(g, x, 1024, 1, name);
  }
  if (g->err[0]) surge_runtime_error("bench graph: %s", g->err);
}

/* The zoo's gpt; untied: its output layer a plain linear layer (no weight shared with the embedding). */
static void build_gpt(graph_t *g, int untied) {
  zoo_opts_t zo = {.gpt = {.layers = 9, .width = 256, .heads = 4, .context = 64}};
  snprintf(zo.model, sizeof zo.model, "gpt");
  char err[256];
  if (zoo_build(zo, shape1(64), 256, g, err, sizeof err) != 0) surge_runtime_error("bench gpt: %s", err);
  if (untied) g->l[g->n - 1].kind = LAYER_LINEAR;
}

static void synthetic_profile(const graph_t *g, const burst_opts_t *o, burst_profile_t *p) {
  burst_profile_init(p, g->n, "synthetic");
  p->net = (burst_net_t){5, 25e3, 5, 25e3};
  int *b = xmalloc((size_t)(o->ranks + 1) * sizeof *b);
  int C = burst_profile_batches(o, b);
  for (int v = 1; v < g->n; v++)
    for (int k = 0; k < C; k++) burst_profile_set(p, v, b[k], 10 + 3 * g->l[v].flops_per_sample * b[k] / 1e7);
  free(b);
}

int main(int argc, char **argv) {
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  if (repeats < 1) surge_input_error("usage: bench_planner [repeats >= 1]");
  const int Gs[] = {8, 64, 1024};
  const burst_ranks_policy_t policies[] = {BURST_RANKS_DIVISORS, BURST_RANKS_POW2, BURST_RANKS_ANY};
  const char *policy_names[] = {"divisors", "pow2", "any"};
  printf("%-8s %5s %5s %-9s %4s %10s %10s %12s %12s %12s %8s %10s %10s %6s\n", "graph", "nodes", "G", "policy", "C",
         "search_s", "eval_s", "search/eval", "plan_us", "dp_us", "plan/dp", "front_s", "front_cpu", "points");
  const char *graph_names[] = {"chain", "branchy", "gpt", "gpt-free"};
  for (int gi = 0; gi < 4; gi++) {
    graph_t g;
    if (gi == 0)
      build_chain(&g);
    else if (gi == 1)
      build_branchy(&g);
    else
      build_gpt(&g, gi == 3);
    for (int i = 0; i < 3; i++)
      for (int pi = 0; pi < 3; pi++) {
        burst_opts_t o = {Gs[i], BATCH, BURST_NO_LIMIT, policies[pi]};
        int *cand = xmalloc((size_t)(o.ranks + 1) * sizeof *cand);
        int C = burst_rank_counts(&o, cand);
        free(cand);
        burst_profile_t p;
        synthetic_profile(&g, &o, &p);
        double best = 1e30;
        burst_plan_t plan, dp;
        if (C > 24 && gi == 1) { /* minutes */
          burst_profile_free(&p);
          continue;
        }
        for (int r = 0; r < repeats; r++) {
          if (r) burst_plan_free(&plan);
          double t0 = surge_now();
          burst_plan_search(&g, &p, &o, &plan);
          double t = surge_now() - t0;
          if (t < best) best = t;
          if (t > 1.0) break;
        }
        double eval = 1e30;
        for (int r = 0; r < 20; r++) {
          double t0 = surge_now();
          burst_plan_data_parallel(&g, &p, &o, &dp);
          double t = surge_now() - t0;
          if (t < eval) eval = t;
          if (r < 19) burst_plan_free(&dp);
        }
        double front_s = -1, front_cpu = -1;
        int npts = 0;
        if (C <= 24) {
          bgraph_t bg;
          bgraph_from_graph(&g, "bench", &bg);
          burst_frontier_t fr;
          struct timespec c0, c1;
          clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
          double t0 = surge_now();
          burst_frontier_build(&bg, &p, &o, 0, &fr);
          front_s = surge_now() - t0;
          clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
          front_cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
          npts = fr.n;
          burst_frontier_free(&fr);
          bgraph_free(&bg);
        }
        if (front_s < 0)
          printf("%-8s %5d %5d %-9s %4d %10.6f %10.6f %12.1f %12.1f %12.1f %8.3f %10s %10s %6s\n",
                 graph_names[gi], g.n, o.ranks, policy_names[pi], C, best, eval, best / eval, plan.iter_us,
                 dp.iter_us, plan.iter_us / dp.iter_us, "-", "-", "-");
        else
          printf("%-8s %5d %5d %-9s %4d %10.6f %10.6f %12.1f %12.1f %12.1f %8.3f %10.4f %10.4f %6d\n",
                 graph_names[gi], g.n, o.ranks, policy_names[pi], C, best, eval, best / eval, plan.iter_us,
                 dp.iter_us, plan.iter_us / dp.iter_us, front_s, front_cpu, npts);
        fflush(stdout);
        burst_plan_free(&plan);
        burst_plan_free(&dp);
        burst_profile_free(&p);
      }
    graph_free(&g);
  }
  return 0;
}
