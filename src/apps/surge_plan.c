/* surge-plan DECK --profile PROFILE.h5 [--ranks G] [--amp A] [-o PLAN.txt] [--pareto]: the burst
 * planner's plan for the deck's model and global batch from a measured profile. */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/profiler.h"
#include "core/cli.h"
#include "core/error.h"
#include "io/deck.h"

static const char usage[] =
    "usage: surge-plan DECK [-D section.key=value ...] [--profile PROFILE.h5] [--ranks G] [--amp A]\n"
    "                       [-o PLAN.txt] [--pareto]\n"
    "  Plan every layer's rank count (burst parallelism, doc/burst.md) from a surge-profile profile:\n"
    "  print the per-layer table beside the data-parallel plan and write the plan file that\n"
    "  surge-train runs with [parallel] mode = burst, plan = PLAN.txt.\n"
    "  --profile FILE   the profile (default: [parallel] profile)\n"
    "  --ranks G        ranks of the job (default: the G the profile was made for)\n"
    "  --amp A          per-layer amplification limit, a number >= 1 or 'none' (default: [parallel]\n"
    "                   amplification)\n"
    "  -o PLAN.txt      plan file (default: [parallel] plan; none written when both are empty)\n"
    "  --pareto         also print the Pareto frontier of iteration time against rank-time over A\n"
    "  --help, --version\n"
    "Exit codes: 0 done, 2 bad input (a profile of another model, a per-rank batch it lacks), 1 runtime\n"
    "failure.\n";

static double parse_amp(const char *text) {
  if (strcmp(text, "none") == 0) return BURST_NO_LIMIT;
  char *end;
  double a = strtod(text, &end);
  if (*text == 0 || *end || !isfinite(a) || a < 1)
    surge_input_error("--amp %s: expected a number >= 1 or 'none'", text);
  return a;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  static const char *const flags[] = {"--profile FILE", "--ranks G", "--amp A", "-o FILE", "--pareto", NULL};
  cli_t cli;
  cli_parse(argc, argv, usage, flags, &cli);
  config_t cfg;
  deck_t *deck;
  deck_load(cli.deck, cli.noverrides, cli.overrides, &cfg, &deck);
  const char *profile = cli_value(&cli, "--profile", 0);
  if (!profile) profile = cfg.profile_file;
  if (!profile[0]) surge_input_error("surge-plan: no profile (give --profile FILE or set [parallel] profile)");
  if (cfg.global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg.global_batch);

  graph_t g;
  dataset_t *ds = burst_deck_graph(&cfg, deck, &g);
  burst_profile_meta_t meta;
  burst_profile_read_meta(profile, &meta);
  const char *ranks = cli_value(&cli, "--ranks", 0), *amp = cli_value(&cli, "--amp", 0);
  burst_opts_t o = {.ranks = ranks ? burst_option_int("--ranks", ranks, 1) : meta.ranks,
                    .batch = (int)cfg.global_batch,
                    .amp = amp ? parse_amp(amp) : cfg.amplification,
                    .policy = BURST_RANKS_DIVISORS};
  burst_profile_t p;
  burst_profile_read(profile, &g, cfg.zoo, &o, &p);
  if (!meta.net_measured)
    fprintf(stderr, "surge-plan: note: %s was profiled on 1 rank: its network numbers are defaults, not "
                    "measurements\n", profile);

  burst_plan_t plan, dp;
  burst_plan_search(&g, &p, &o, &plan);
  burst_plan_data_parallel(&g, &p, &o, &dp);
  burst_plan_print(stdout, &g, &plan, &dp);
  if (cli_has(&cli, "--pareto")) {
    bgraph_t bg;
    bgraph_from_graph(&g, cfg.zoo, &bg);
    burst_frontier_t fr;
    burst_frontier_build(&bg, &p, &o, 0, &fr);
    printf("\n");
    burst_frontier_print(stdout, &fr, &dp, 32);
    burst_frontier_free(&fr);
    bgraph_free(&bg);
  }
  const char *out = cli_value(&cli, "-o", 0);
  if (!out) out = cfg.plan_file;
  if (out[0]) {
    burst_plan_write(out, &g, cfg.zoo, &plan);
    printf("wrote %s\n", out);
  }
  burst_plan_free(&plan);
  burst_plan_free(&dp);
  burst_profile_free(&p);
  graph_free(&g);
  dataset_close(ds);
  deck_free(deck);
  MPI_Finalize();
  return 0;
}
