/* surge-sim: cluster-scale what-ifs from a graph, a profile and a network (doc/sim.md): burst plans
 * and background jobs against data parallelism for a list of rank counts, and one iteration of a 3D
 * layout with and without compression. */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_input.h"
#include "burst/profiler.h"
#include "core/cli.h"
#include "core/error.h"
#include "io/outputs.h"
#include "sim/sim.h"

static const char usage[] =
    "usage: surge-sim --graph GRAPH.txt | --deeppool PROFILE.prof [--structure GRAPH.txt] [network]\n"
    "                 [--ranks G1,G2,... --batch B1[,B2,...] [burst options]]\n"
    "                 [--tp N --pp N --dp N --micro-batches M --micro-batch B [3D options]] [-o SIM.h5]\n"
    "  What a model's profile predicts at cluster scale (doc/sim.md); plots: surge-report --plot DIR SIM.h5.\n" PLAN_INPUT_USAGE
    "Burst parallelism and background jobs, for each rank count:\n"
    "  --ranks LIST     rank counts G, comma-separated (e.g. 8,64,256,1024)\n"
    "  --batch LIST     the global batch: one for every G, or one per G\n"
    "  --amp A          amplification limit, judged per layer as surge-plan does (default none)\n"
    "  --policy P       rank counts a layer may get: divisors (default), pow2, any\n"
    "  --tolerance T    frontier within a factor 1 + T (default 0: exact)\n"
    "  --eval N         frontier plans evaluated with a background (default 64, evenly spread)\n"
    "  --bg-graph F, --bg-deeppool F [--bg-structure F]   the background job (default: the same model)\n"
    "  --bg-batch B     the background's per-rank batch (default 8)\n"
    "  --fg-slowdown S  the foreground's step time with a background over alone (default 1)\n"
    "  --plan FILE      also a plan file's outcome (one rank count; the plan must fit the graph)\n"
    "3D parallelism (one iteration, 1F1B, with and without compression):\n"
    "  --tp N --pp N --dp N, --micro-batches M, --micro-batch B (samples per micro-batch)\n"
    "  --tp-link A:B, --pp-link A:B, --dp-link A:B   latency (us) and bandwidth (bytes/us) of each link\n"
    "                   (default: the allreduce constants for tp and dp, the point-to-point ones for pp)\n"
    "  --cb-ratio R     compressed pipeline backward: bytes over R (default 1: off)\n"
    "  --epilogue-only  ... only the cool-down transfers\n"
    "  --dp-ratio R     PowerSGD data-parallel gradients: bytes over R (default 1: off)\n"
    "  --dp-stages K    ... on stages 0 .. K-1 only (default: all)\n"
    "  --stage-nodes L  nodes per stage in graph order, one per stage (default: balanced by time;\n"
    "                   e.g. the split surge-train's [parallel] stages makes)\n"
    "  --fwd-fraction F forward share of a node's forward+backward time (default 0.3333)\n"
    "  --recompute MODE none (default), block or attention: each backward first re-runs the forward\n"
    "                   of a unit's nodes but its last, or of the attention nodes ([train] recompute)\n"
    "  -o SIM.h5        write the results (HDF5, doc/sim.md)\n"
    "Exit codes: 0 done, 2 bad input (named with its file and line), 1 runtime failure.\n";

static int parse_list(const char *text, const char *flag, int *out, int max) {
  int n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > 1L << 24 || (*end && *end != ',') || n == max)
      surge_input_error("%s %s: expected up to %d positive whole numbers, comma-separated", flag, text, max);
    out[n++] = (int)v;
    p = *end ? end + 1 : end;
  }
  if (!n) surge_input_error("%s: empty list", flag);
  return n;
}

static sim_link_t parse_link(const char *text, const char *flag) {
  char *end;
  sim_link_t l;
  l.alpha_us = strtod(text, &end);
  if (end == text || *end != ':') surge_input_error("%s %s: expected LATENCY_US:BYTES_PER_US", flag, text);
  const char *b = end + 1;
  l.bytes_per_us = strtod(b, &end);
  if (end == b || *end || !isfinite(l.alpha_us) || l.alpha_us < 0 || !isfinite(l.bytes_per_us) || l.bytes_per_us <= 0)
    surge_input_error("%s %s: expected LATENCY_US:BYTES_PER_US, a latency >= 0 and a bandwidth > 0", flag, text);
  return l;
}

static int opt_int(const cli_t *cli, const char *flag, int dflt, int min) {
  const char *v = cli_value(cli, flag, 0);
  return v ? burst_option_int(flag, v, min) : dflt;
}

static double opt_double(const cli_t *cli, const char *flag, double dflt, double min) {
  const char *v = cli_value(cli, flag, 0);
  if (!v) return dflt;
  char *end;
  double x = strtod(v, &end);
  if (!v[0] || *end || !isfinite(x) || x < min) surge_input_error("%s %s: expected a number >= %g", flag, v, min);
  return x;
}

static void print_point(const char *what, const sim_point_t *pt, const sim_point_t *dp, int G) {
  printf("  %-10s %11.1f %13.1f %6.1f%% %11.1f %11.1f %11.1f %7.3fx %5d\n", what, pt->iter_us, pt->rank_us,
         100 * pt->idle_rank_us / (pt->iter_us * G), pt->fg_sps, pt->bg_sps, pt->total_sps, pt->total_sps / dp->total_sps,
         pt->ranks_used);
}

static int run_burst(const cli_t *cli, const plan_input_t *in, const sim_bg_t *bg, sim_result_t **out) {
  int G[64], B[64];
  int ng = parse_list(cli_value(cli, "--ranks", 0), "--ranks", G, 64);
  const char *bl = cli_value(cli, "--batch", 0);
  if (!bl) surge_input_error("--ranks needs --batch (the global batch, one for all or one per rank count)");
  int nb = parse_list(bl, "--batch", B, 64);
  if (nb != 1 && nb != ng) surge_input_error("--batch has %d values for %d rank counts (give one, or one each)", nb, ng);
  sim_opts_t so;
  so.o.amp = cli_value(cli, "--amp", 0) ? plan_parse_amp(cli_value(cli, "--amp", 0), "--amp") : BURST_NO_LIMIT;
  so.o.policy = cli_value(cli, "--policy", 0) ? plan_parse_policy(cli_value(cli, "--policy", 0)) : BURST_RANKS_DIVISORS;
  so.tol = opt_double(cli, "--tolerance", 0, 0);
  so.max_eval = opt_int(cli, "--eval", 64, 2);
  so.fg_slowdown = opt_double(cli, "--fg-slowdown", 1, 1);
  const char *plan = cli_value(cli, "--plan", 0);
  if (plan && ng != 1) surge_input_error("--plan %s: give one rank count (--ranks G) for a plan file", plan);
  sim_result_t *res = xcalloc((size_t)ng, sizeof *res);
  for (int x = 0; x < ng; x++) {
    so.o.ranks = G[x];
    so.o.batch = nb == 1 ? B[0] : B[x];
    sim_result_t given = {0}; /* the plan file's, first: one it refuses costs no search and prints nothing */
    if (plan) sim_cluster_given(&in->g, &in->p, bg, &so, plan, &given);
    sim_cluster_run(&in->g, &in->p, bg, &so, &res[x]);
    res[x].given = given.given, res[x].has_given = given.has_given;
    const sim_result_t *r = &res[x];
    if (x == 0) {
      printf("burst plans and a background (%s, batch %d per rank) against data parallelism alone\n", bg->model,
             bg->batch);
      printf("  %-10s %11s %13s %7s %11s %11s %11s %8s %5s\n", "plan", "iter_us", "rank_us", "idle", "fg_sps", "bg_sps",
             "total_sps", "vs_dp", "ranks");
    }
    printf("G = %d, global batch %d: %d frontier plans (%.3f s)\n", r->ranks, r->batch, r->nfront, r->seconds);
    print_point("dp", &r->dp, &r->dp, r->ranks);
    print_point("fastest", &r->fastest, &r->dp, r->ranks);
    print_point("best", &r->best, &r->dp, r->ranks);
    if (plan) print_point("plan file", &res[x].given, &r->dp, r->ranks);
  }
  *out = res;
  return ng;
}

/* --recompute's mode (absent: none). */
static int recompute_of(const char *text) {
  const int m = text ? recompute_mode_named(text) : RECOMPUTE_NONE;
  if (m < 0) surge_input_error("--recompute %s: expected none, block or attention", text);
  return m;
}

static void run_3d(const cli_t *cli, const plan_input_t *in, sim3d_opts_t *o, sim3d_result_t *plain,
                   sim3d_result_t *comp) {
  const burst_net_t *n = &in->p.net;
  *o = (sim3d_opts_t){.tp = opt_int(cli, "--tp", 1, 1),
                      .pp = opt_int(cli, "--pp", 1, 1),
                      .dp = opt_int(cli, "--dp", 1, 1),
                      .micro_batches = opt_int(cli, "--micro-batches", 0, 1),
                      .micro_batch = opt_int(cli, "--micro-batch", 0, 1),
                      .fwd_fraction = opt_double(cli, "--fwd-fraction", 1.0 / 3, 0),
                      .tp_link = {n->ar_alpha_us, n->ar_bytes_per_us},
                      .pp_link = {n->p2p_alpha_us, n->p2p_bytes_per_us},
                      .dp_link = {n->ar_alpha_us, n->ar_bytes_per_us},
                      .cb_ratio = opt_double(cli, "--cb-ratio", 1, 1),
                      .cb_epilogue_only = cli_has(cli, "--epilogue-only"),
                      .dp_ratio = opt_double(cli, "--dp-ratio", 1, 1),
                      .dp_stages = opt_int(cli, "--dp-stages", 0, 0),
                      .recompute = recompute_of(cli_value(cli, "--recompute", 0))};
  if (!o->micro_batches || !o->micro_batch) surge_input_error("3D: give --micro-batches M and --micro-batch B");
  if (!cli_value(cli, "--dp-stages", 0)) o->dp_stages = o->pp;
  const char *stages = cli_value(cli, "--stage-nodes", 0);
  if (stages && parse_list(stages, "--stage-nodes", o->stage_nodes, SIM3D_MAX_PP) != o->pp)
    surge_input_error("--stage-nodes %s: give one node count per pipeline stage (--pp %d)", stages, o->pp);
  if (cli_value(cli, "--tp-link", 0)) o->tp_link = parse_link(cli_value(cli, "--tp-link", 0), "--tp-link");
  if (cli_value(cli, "--pp-link", 0)) o->pp_link = parse_link(cli_value(cli, "--pp-link", 0), "--pp-link");
  if (cli_value(cli, "--dp-link", 0)) o->dp_link = parse_link(cli_value(cli, "--dp-link", 0), "--dp-link");
  sim3d_run(&in->g, &in->p, o, 0, plain);
  sim3d_run(&in->g, &in->p, o, 1, comp);
  printf("3D layout: tp %d x pp %d x dp %d = %d ranks, %d micro-batches of %d (global batch %d)\n", o->tp, o->pp, o->dp,
         o->tp * o->pp * o->dp, o->micro_batches, o->micro_batch, o->micro_batches * o->micro_batch * o->dp);
  printf("  %-6s %7s %11s %11s %9s %11s %11s %11s\n", "stage", "nodes", "fwd_us", "bwd_us", "tp_us", "dp_us",
         "dp_us_comp", "opt_us");
  for (int s = 0; s < plain->nstage; s++)
    printf("  %-6d %7d %11.1f %11.1f %9.1f %11.1f %11.1f %11.1f\n", s, plain->stage_nodes[s], plain->fwd_us[s],
           plain->bwd_us[s], plain->tp_us[s], plain->dp_us[s], comp->dp_us[s], plain->opt_us[s]);
  if (o->recompute) {
    printf("  recompute = %s: each backward first re-runs a forward of", recompute_name(o->recompute));
    for (int s = 0; s < plain->nstage; s++) printf("%s %.1f", s ? "," : "", plain->rerun_us[s]);
    printf(" us (stage 0 first; in bwd_us)\n");
  }
  printf("  pipeline transfer: forward %.1f us, backward %.1f us (compressed %.1f us)\n", plain->pp_fwd_us,
         plain->pp_bwd_us, plain->pp_bwd_compressed_us);
  printf("  %-24s %12s %12s %8s %14s %14s\n", "", "iter_us", "pipeline_us", "bubble", "pp_bytes", "dp_bytes");
  const sim3d_result_t *rs[2] = {plain, comp};
  for (int k = 0; k < 2; k++)
    printf("  %-24s %12.1f %12.1f %7.1f%% %14.4g %14.4g\n",
           k ? "with compression" : "without compression", rs[k]->iter_us, rs[k]->pipeline_us, 100 * rs[k]->bubble,
           rs[k]->bytes_pp, rs[k]->bytes_dp);
  printf("  compression: %.3fx faster iteration (cb ratio %g%s, dp ratio %g on %d of %d stages)\n",
         plain->iter_us / comp->iter_us, o->cb_ratio, o->cb_epilogue_only ? " in the epilogue" : "", o->dp_ratio,
         o->dp_stages < o->pp ? o->dp_stages : o->pp, o->pp);
}

/* A flag of a kind of run not asked for would be ignored: each is refused by name instead; -o against
 * the inputs (io/outputs.h). */
static void check_flags(const cli_t *cli, int burst, int three_d) {
  static const char *const burst_only[] = {"--batch",  "--amp",          "--policy",       "--tolerance",
                                           "--eval",   "--plan",         "--bg-graph",     "--bg-deeppool",
                                           "--bg-structure", "--bg-batch", "--fg-slowdown", NULL};
  static const char *const d3_only[] = {"--micro-batch", "--fwd-fraction", "--tp-link", "--pp-link", "--dp-link",
                                        "--cb-ratio", "--epilogue-only", "--dp-ratio", "--dp-stages",
                                        "--stage-nodes", NULL};
  for (const char *const *f = burst_only; *f && !burst; f++)
    if (cli_has(cli, *f))
      surge_input_error("surge-sim: %s applies to burst plans (--ranks), and this run simulates 3D only", *f);
  for (const char *const *f = d3_only; *f && !three_d; f++)
    if (cli_has(cli, *f))
      surge_input_error("surge-sim: %s applies to 3D runs (--tp, --pp, --dp), and this run simulates burst plans only",
                        *f);
  if (!three_d && cli_has(cli, "--recompute"))
    surge_input_error("surge-sim: --recompute applies to 3D runs (give --pp/--tp/--dp); a burst plan's graph file says "
                      "what it recomputes (its recompute lines, doc/burst.md)");
  if (cli_has(cli, "--bg-structure") && !cli_has(cli, "--bg-deeppool"))
    surge_input_error("surge-sim: --bg-structure goes with --bg-deeppool (it maps that profile's rows)");
  static const char *const inputs[] = {"--graph", "--deeppool", "--structure", "--bg-graph", "--bg-deeppool",
                                       "--bg-structure", "--plan"};
  enum { NIN = (int)(sizeof inputs / sizeof inputs[0]) };
  io_path_t in[NIN];
  for (int i = 0; i < NIN; i++) in[i] = (io_path_t){inputs[i], cli_value(cli, inputs[i], 0)};
  const io_output_t out = {"-o", cli_value(cli, "-o", 0), 0, 0}; /* HDF5 */
  io_outputs_check(in, NIN, &out, 1);
}

int main(int argc, char **argv) {
  surge_stdout_by_lines();
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  static const char *const flags[] = {PLAN_INPUT_FLAGS, "--ranks LIST", "--batch LIST", "--amp A", "--policy P",
                                      "--tolerance T", "--eval N", "--plan FILE", "--bg-graph FILE", "--bg-deeppool FILE",
                                      "--bg-structure FILE", "--bg-batch B", "--fg-slowdown S", "-o FILE", "--tp N",
                                      "--pp N", "--dp N", "--micro-batches M", "--micro-batch B", "--fwd-fraction F",
                                      "--tp-link A:B", "--pp-link A:B", "--dp-link A:B", "--cb-ratio R",
                                      "--epilogue-only", "--dp-ratio R", "--dp-stages K", "--stage-nodes L",
                                      "--recompute MODE", NULL};
  cli_t cli;
  cli_parse_deck_optional(argc, argv, usage, flags, &cli);
  if (cli.deck) surge_input_error("surge-sim takes no deck: give --graph or --deeppool (surge-plan DECK --write-graph F "
                                  "exports a deck's model)");
  int burst = cli_has(&cli, "--ranks");
  int three_d = cli_has(&cli, "--pp") || cli_has(&cli, "--tp") || cli_has(&cli, "--dp") || cli_has(&cli, "--micro-batches");
  if (!burst && !three_d) surge_input_error("surge-sim: nothing to simulate: give --ranks (burst) or --pp/--tp/--dp (3D)");
  check_flags(&cli, burst, three_d);
  plan_input_t in;
  plan_input_load(&cli, NULL, &in, stdout);

  sim_result_t *res = NULL;
  int nres = 0;
  plan_input_t bgin;
  int own_bg = cli_has(&cli, "--bg-graph") || cli_has(&cli, "--bg-deeppool");
  sim_bg_t bg;
  if (burst) {
    if (own_bg) plan_input_load_files(cli_value(&cli, "--bg-graph", 0), cli_value(&cli, "--bg-deeppool", 0),
                                      cli_value(&cli, "--bg-structure", 0), &bgin, stdout);
    const plan_input_t *b = own_bg ? &bgin : &in;
    sim_bg_init(&bg, &b->g, &b->p, opt_int(&cli, "--bg-batch", 8, 1));
    nres = run_burst(&cli, &in, &bg, &res);
  }
  sim3d_opts_t o3;
  sim3d_result_t plain, comp;
  if (three_d) run_3d(&cli, &in, &o3, &plain, &comp);

  const char *out = cli_value(&cli, "-o", 0);
  if (out) {
    char command[1024] = "";
    for (int i = 0, used = 0; i < argc && used < (int)sizeof command - 2; i++)
      used += snprintf(command + used, sizeof command - (size_t)used, "%s%s", i ? " " : "", argv[i]);
    sim_file_info_t info = {in.g.model, in.g.source, burst ? bg.model : "", &in.p.net, burst ? bg.batch : 0,
                            opt_double(&cli, "--fg-slowdown", 1, 1), opt_double(&cli, "--tolerance", 0, 0), command};
    sim_h5_write(out, &info, res, nres, three_d ? &o3 : NULL, three_d ? &plain : NULL, three_d ? &comp : NULL);
    printf("wrote %s\n", out);
  }
  for (int x = 0; x < nres; x++) sim_result_free(&res[x]);
  free(res);
  if (burst) sim_bg_free(&bg);
  if (own_bg) plan_input_free(&bgin);
  if (three_d) {
    sim3d_free(&plain);
    sim3d_free(&comp);
  }
  plan_input_free(&in);
  MPI_Finalize();
  return 0;
}
