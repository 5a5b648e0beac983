/* surge-profile DECK [-D section.key=value ...] [-o PROFILE.h5] [--ranks G] [--warmup N] [--repeats N]:
 * measure the burst planner's cost profile of the deck's model on its backend and this job's network. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/options.h"
#include "burst/plan_input.h"
#include "burst/profiler.h"
#include "core/cli.h"
#include "core/error.h"
#include "io/deck.h"
#include "io/options.h"
#include "io/outputs.h"
#include "sync/options.h"
#include "train/recompute_options.h"
#include "io/deck_shared.h"

static const char usage[] =
    "usage: [mpiexec -n N] surge-profile DECK [-D section.key=value ...] [-o PROFILE.h5] [--ranks G]\n"
    "                                         [--policy P] [--warmup N] [--repeats N]\n"
    "  Measure the forward+backward time of every node of the deck's model at every per-rank batch the\n"
    "  burst planner may choose for the deck's global batch on G ranks, and (on N >= 2 ranks) the\n"
    "  network: point-to-point latency and bandwidth (rank 0 and a rank on another node, else rank 1)\n"
    "  and allreduce (all ranks).\n"
    "  Writes the profile (HDF5 /profile) for surge-plan and prints a table.\n"
    "  -o PROFILE.h5   output file (default: [parallel] profile, else profile.h5)\n"
    "  --ranks G       plan for G ranks (default: N, the ranks of this run)\n"
    "  --policy P      the rank counts whose per-rank batches are measured, as surge-plan --policy: divisors\n"
    "                  (default), pow2 or any (every count: also what hand-written plans may use)\n"
    "  --warmup N      untimed runs before the timing (default 3, at most 10000)\n"
    "  --repeats N     timed runs: the median and the spread (max - min) are stored (default 10, at\n"
    "                  most 10000)\n"
    "  --help, --version\n"
    "On 1 rank the network is not measured: defaults are written, marked measured = 0.\n"
    "Exit codes: 0 done, 2 bad input, 1 runtime failure. doc/burst.md: \"Profile, plan, run\".\n";

/* rank 0's check of the deck before it is shared */
static void check_deck(const char *text, void *arg) {
  const cli_t *cli = arg;
  config_t probe;
  deck_parse(text, cli->deck, cli->noverrides, cli->overrides, &probe, NULL);
}

#define PROFILE_MAX_RUNS 10000 /* --warmup, --repeats: each runs every node at every batch */

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  static const char *const flags[] = {"-o FILE", "--ranks G", "--policy P", "--warmup N", "--repeats N", NULL};
  cli_t cli;
  cli_parse(argc, argv, usage, flags, &cli);
  comm_t world;
  comm_world(&world);

  char *text = deck_read_checked(cli.deck, &world, check_deck, &cli);
  config_t cfg;
  deck_t *deck;
  deck_parse(text, cli.deck, cli.noverrides, cli.overrides, &cfg, &deck);
  free(text);
  deck_check_same(&cfg, &world);

  const char *opt = cli_value(&cli, "--ranks", 0);
  int ranks = opt ? burst_option_int("--ranks", opt, 1) : world.size;
  burst_check_batch_ranks(deck, cfg.global_batch, ranks, "profiled for");
  opt = cli_value(&cli, "--policy", 0);
  burst_ranks_policy_t policy = opt ? plan_parse_policy(opt) : BURST_RANKS_DIVISORS;
  opt = cli_value(&cli, "--warmup", 0);
  int warmup = opt ? burst_option_int_in("--warmup", opt, 0, PROFILE_MAX_RUNS) : 3;
  opt = cli_value(&cli, "--repeats", 0);
  int repeats = opt ? burst_option_int_in("--repeats", opt, 1, PROFILE_MAX_RUNS) : 10;
  const char *out = cli_value(&cli, "-o", 0);
  const char *deck_out = burst_deck(&cfg)->profile_file;
  if (!out) out = deck_out[0] ? deck_out : "profile.h5";
  const io_path_t in = {"DECK", cli.deck};
  const io_output_t outs = {cli_has(&cli, "-o") ? "-o" : "[parallel] profile", out, 0, 0}; /* HDF5 */
  if (world.rank == 0) io_outputs_check(&in, 1, &outs, 1); /* (its error ends the job) */
  if (cfg.global_batch > INT32_MAX) surge_input_error("[train] global_batch %ld is too large", cfg.global_batch);
  backend_options_t bo = backend_opts_of(&cfg, comm_local_rank(&world));
  const backend_t *be = backend_open_of(&cfg, deck, &bo, world.mpi);
  world.bucket_bytes = sync_bucket_bytes(sync_opts(&cfg));
  if (world.bucket_bytes < sizeof(float)) world.bucket_bytes = sizeof(float);

  const burst_profile_opts_t po = {.ranks = ranks, .policy = policy, .warmup = warmup, .repeats = repeats};
  graph_t g;
  burst_measured_t ms;
  burst_profile_run(&cfg, deck, be, &world, &po, &g, &ms);
  if (world.rank == 0) {
    burst_profile_write(out, &g, &ms);
    burst_measured_print(stdout, &g, &ms);
    printf("wrote %s\n", out);
    if (recompute_mode_of(&cfg) != RECOMPUTE_NONE)
      printf("note: measured without [train] recompute = %s: surge-plan adds its re-run forwards from the deck "
             "(doc/recompute.md)\n", recompute_name(recompute_mode_of(&cfg)));
  }
  burst_measured_free(&ms);
  graph_free(&g);
  deck_free(deck);
  comm_free(&world);
  MPI_Finalize();
  return 0;
}
