/* surge-plan: the burst planner's plan and Pareto frontier for a deck's model (from a surge-profile
 * profile) or for a graph file or DeepPool profile (doc/burst.md). */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/options.h"
#include "burst/options.h"
#include "burst/plan_input.h"
#include "burst/profiler.h"
#include "core/cli.h"
#include "core/error.h"
#include "io/deck.h"
#include "io/outputs.h"
#include "optim/optim.h"
#include "train/recompute_options.h"

static const char usage[] =
    "usage: surge-plan DECK [-D section.key=value ...] [--profile PROFILE.h5] [options]\n"
    "       surge-plan --graph GRAPH.txt | --deeppool PROFILE.prof [--structure GRAPH.txt] [options]\n"
    "  Plan every layer's rank count (burst parallelism, doc/burst.md): print the per-layer table\n"
    "  beside the data-parallel plan and write the plan file that surge-train runs with\n"
    "  [parallel] mode = burst, plan = PLAN.txt. Without a deck the model and its times come from a\n"
    "  graph file or a DeepPool profile.\n"
    "  --profile FILE   the surge-profile profile of the deck's model (default: [parallel] profile)\n" PLAN_INPUT_USAGE
    "  --ranks G        ranks of the job (default: the G the profile was made for; needed without one)\n"
    "  --batch B        global batch (default: the deck's [train] global_batch; needed without a deck)\n"
    "  --amp A          amplification limit, a number >= 1 or 'none', judged per layer (layers that\n"
    "                   must share a rank set by their sums; default: [parallel] amplification, or\n"
    "                   none without a deck)\n"
    "  --policy P       rank counts a layer may get: divisors (of B, default), pow2 or any\n"
    "  --frontier       also print the Pareto frontier of iteration time against rank-time\n"
    "  --rows N         rows of the frontier printed (default 24; the fastest and leanest always)\n"
    "  --tolerance T    frontier within a factor 1 + T in both measures (default 0: exact)\n"
    "  --budget R       plan the fastest plan using at most R rank-microseconds per iteration\n"
    "  --deadline T     plan the leanest plan taking at most T microseconds per iteration\n"
    "  -o PLAN.txt      plan file (default: [parallel] plan; none written when both are empty)\n"
    "  --write-graph F  write the model, its times and network as a graph file\n"
    "  --help, --version\n"
    "Exit codes: 0 done, 2 bad input (named with its file and line), 1 runtime failure.\n";

typedef struct options {
  burst_opts_t o;
  int frontier, rows;
  double tol, budget, deadline; /* budget, deadline: NAN when not asked */
} options_t;

static void parse_options(const cli_t *cli, const config_t *cfg, int profile_ranks, options_t *op) {
  const char *v;
  op->o.ranks = (v = cli_value(cli, "--ranks", 0)) ? burst_option_int("--ranks", v, 1) : profile_ranks;
  if (op->o.ranks < 1) surge_input_error("surge-plan: give --ranks G (the job's ranks)");
  if ((v = cli_value(cli, "--batch", 0)))
    op->o.batch = burst_option_int("--batch", v, 1);
  else if (cfg) {
    if (cfg->global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg->global_batch);
    op->o.batch = (int)cfg->global_batch;
  } else
    surge_input_error("surge-plan: give --batch B (the global batch)");
  op->o.amp = (v = cli_value(cli, "--amp", 0)) ? plan_parse_amp(v, "--amp") : cfg ? burst_deck(cfg)->amplification : BURST_NO_LIMIT;
  op->o.policy = (v = cli_value(cli, "--policy", 0)) ? plan_parse_policy(v) : BURST_RANKS_DIVISORS;
  op->frontier = cli_has(cli, "--frontier");
  op->rows = (v = cli_value(cli, "--rows", 0)) ? burst_option_int("--rows", v, 2) : 24;
  op->tol = 0;
  if ((v = cli_value(cli, "--tolerance", 0))) {
    char *end;
    op->tol = strtod(v, &end);
    if (!v[0] || *end || !isfinite(op->tol) || op->tol < 0) surge_input_error("--tolerance %s: expected a number >= 0", v);
  }
  op->budget = (v = cli_value(cli, "--budget", 0)) ? plan_parse_positive(v, "--budget") : NAN;
  op->deadline = (v = cli_value(cli, "--deadline", 0)) ? plan_parse_positive(v, "--deadline") : NAN;
  if (!isnan(op->budget) && !isnan(op->deadline)) surge_input_error("--budget and --deadline ask for different plans: give one");
  if (cli_has(cli, "--rows") && !op->frontier)
    surge_input_error("--rows sets the rows of --frontier's table: give --frontier");
  if (cli_has(cli, "--tolerance") && !op->frontier && isnan(op->budget) && isnan(op->deadline))
    surge_input_error("--tolerance thins the frontier of --frontier, --budget or --deadline: give one of them");
}

#define PRINTED_HALF_UNIT 0.0005 /* us and rank-us are printed with 3 decimals */

/* The plan asked for: the fastest, or the frontier's answer to --budget / --deadline. */
static void choose_plan(const bgraph_t *g, const burst_profile_t *p, const options_t *op, burst_frontier_t *fr,
                        burst_plan_t *plan) {
  if (isnan(op->budget) && isnan(op->deadline)) {
    burst_search(g, p, &op->o, plan);
    return;
  }
  /* at the precision the programs print (0.001): a time or rank-time copied from their output is met */
  int x = !isnan(op->budget) ? burst_frontier_fastest_within(fr, op->budget + PRINTED_HALF_UNIT)
                             : burst_frontier_leanest_within(fr, op->deadline + PRINTED_HALF_UNIT);
  if (x < 0) {
    if (!isnan(op->budget))
      surge_input_error("--budget %g: no plan uses so little rank-time (the leanest needs %.3f rank-us per iteration)",
                        op->budget, fr->pt[fr->n - 1].rank_us);
    surge_input_error("--deadline %g: no plan is that fast (the fastest takes %.3f us)", op->deadline, fr->pt[0].iter_us);
  }
  burst_frontier_plan(fr, x, plan);
  printf("%s: frontier point %d of %d, counted from the fastest\n",
         !isnan(op->budget) ? "fastest plan within the rank-time budget" : "leanest plan within the deadline", x + 1,
         fr->n);
}

/* Flags that would be ignored are refused; the outputs against the inputs (io/outputs.h). */
static void check_files(const cli_t *cli, const config_t *cp) {
  if (!cli->deck && cli->noverrides)
    surge_input_error("surge-plan: -D %s: -D overrides a deck's keys, and no deck is given", cli->overrides[0]);
  if (plan_input_given(cli) && cli_has(cli, "--profile"))
    surge_input_error("surge-plan: --profile is a deck's model's profile; --graph and --deeppool bring their own "
                      "times");
  const char *profile = cli_value(cli, "--profile", 0), *plan = cli_value(cli, "-o", 0);
  if (!profile && cp && !plan_input_given(cli)) profile = burst_deck(cp)->profile_file;
  if (!plan) plan = cp ? burst_deck(cp)->plan_file : "";
  const io_path_t in[] = {{"DECK", cli->deck},
                          {"--profile", profile},
                          {"--graph", cli_value(cli, "--graph", 0)},
                          {"--deeppool", cli_value(cli, "--deeppool", 0)},
                          {"--structure", cli_value(cli, "--structure", 0)}};
  const io_output_t out[] = {{cli_has(cli, "-o") ? "-o" : "[parallel] plan", plan[0] ? plan : NULL, 1, 0},
                           {"--write-graph", cli_value(cli, "--write-graph", 0), 1, 0}};
  io_outputs_check(in, (int)(sizeof in / sizeof in[0]), out, 2);
}

/* The planner's input from the deck and its profile (--profile, else [parallel] profile) into g and p,
 * with notes on stderr where the profile was measured otherwise than the deck runs. Returns the
 * profile's rank count G. */
static int load_from_deck(const cli_t *cli, const config_t *cfg, const deck_t *deck, bgraph_t *g,
                          burst_profile_t *p) {
  const char *profile = cli_value(cli, "--profile", 0);
  if (!profile) profile = burst_deck(cfg)->profile_file;
  if (!profile[0]) surge_input_error("surge-plan: no profile (give --profile FILE or set [parallel] profile)");
  graph_t model;
  dataset_t *ds = burst_deck_graph(cfg, deck, &model);
  model.recompute = recompute_mode_of(cfg); /* its segments on one rank set, their forwards re-run */
  burst_profile_meta_t meta;
  burst_profile_read_meta(profile, &meta);
  options_t first;
  parse_options(cli, cfg, meta.ranks, &first);
  if (first.o.batch < first.o.ranks && cli_has(cli, "--batch")) /* as surge-train's burst layout */
    surge_input_error("surge-plan: --batch %d is smaller than the %d ranks planned for (hint: surge-train gives "
                      "every rank at least one sample)", first.o.batch, first.o.ranks);
  burst_check_batch_ranks(deck, first.o.batch, first.o.ranks, "planned for");
  burst_profile_read(profile, &model, cfg->zoo, &first.o, p);
  char note[700];
  burst_setting_t run = {backend_deck(cfg)->name, backend_deck(cfg)->precision, optim_opts(cfg)->name};
  burst_profile_setting_note(p, &run, note, sizeof note);
  if (note[0]) fprintf(stderr, "surge-plan: note: %s\n", note);
  if (!meta.net_measured)
    fprintf(stderr, "surge-plan: note: %s was profiled on 1 rank: its network numbers are defaults, not "
                    "measurements\n", profile);
  plan_input_network(cli, cfg, &p->net);
  burst_net_check(&p->net, profile);
  bgraph_from_graph(&model, cfg->zoo, g);
  graph_free(&model);
  dataset_close(ds);
  return meta.ranks;
}

int main(int argc, char **argv) {
  surge_stdout_by_lines();
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  static const char *const flags[] = {"--profile FILE", "--ranks G", "--batch B", "--amp A", "--policy P", "-o FILE",
                                      "--frontier", "--rows N", "--tolerance T", "--budget R",
                                      "--deadline T", "--write-graph FILE", PLAN_INPUT_FLAGS, NULL};
  cli_t cli;
  cli_parse_deck_optional(argc, argv, usage, flags, &cli);
  config_t cfg;
  deck_t *deck = NULL;
  if (cli.deck) deck_load(cli.deck, cli.noverrides, cli.overrides, &cfg, &deck);
  const config_t *cp = cli.deck ? &cfg : NULL;
  check_files(&cli, cp);

  bgraph_t g;
  burst_profile_t p;
  plan_input_t in;
  int profile_ranks = 0, from_files = plan_input_given(&cli);
  if (from_files) {
    plan_input_load(&cli, cp, &in, stdout);
    g = in.g;
    p = in.p;
  } else {
    if (!cp) surge_input_error("surge-plan: give a deck, --graph FILE or --deeppool FILE (try --help)");
    profile_ranks = load_from_deck(&cli, cp, deck, &g, &p);
  }
  if (cp) p.bn_blocking = !burst_deck(cp)->bn_overlap; /* batch norm's sums as the deck's run does them */
  options_t op;
  parse_options(&cli, cp, profile_ranks, &op);

  burst_frontier_t fr = {0};
  int need_frontier = op.frontier || !isnan(op.budget) || !isnan(op.deadline);
  if (need_frontier) burst_frontier_build(&g, &p, &op.o, op.tol, &fr);
  burst_plan_t plan, dp;
  choose_plan(&g, &p, &op, &fr, &plan);
  burst_uniform(&g, &p, &op.o, burst_dp_ranks(&op.o), &dp);
  burst_plan_print_bg(stdout, &g, &plan, &dp);
  if (op.frontier) {
    printf("\n");
    burst_frontier_print(stdout, &fr, &dp, op.rows);
  }
  const char *out = cli_value(&cli, "-o", 0);
  if (!out) out = cp ? burst_deck(&cfg)->plan_file : "";
  if (out[0]) {
    burst_plan_write_bg(out, &g, &plan);
    printf("wrote %s\n", out);
  }
  const char *graph_out = cli_value(&cli, "--write-graph", 0);
  if (graph_out) {
    graph_file_write(graph_out, &g, &p);
    printf("wrote %s\n", graph_out);
  }
  if (need_frontier) burst_frontier_free(&fr);
  burst_plan_free(&plan);
  burst_plan_free(&dp);
  if (from_files)
    plan_input_free(&in);
  else {
    bgraph_free(&g);
    burst_profile_free(&p);
  }
  if (deck) deck_free(deck);
  MPI_Finalize();
  return 0;
}
