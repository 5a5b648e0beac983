/* surge-train DECK [-D section.key=value ...] [--variant I] [--resume]: train a model as the deck
 * says (one variant of it when the deck has a [sweep] section). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/cli.h"
#include "core/error.h"
#include "core/say.h"
#include "io/deck.h"
#include "io/deck_shared.h"
#include "io/sweep.h"
#include "mux/launch.h"
#include "mux/options.h"
#include "train/inproc.h"
#include "train/run.h"

static const char usage[] =
    "usage: [mpiexec -n N] surge-train DECK [-D section.key=value ...] [--variant I] [--resume]\n"
    "                      [--stopped-exit N] [--foreground | --background]\n"
    "                      [--background-deck BG_DECK [-D bg:section.key=value ...]]\n"
    "  Train the model the deck describes on all ranks in the layout of [parallel] mode: dp (data\n"
    "  parallel), burst (a burst plan: every layer its own rank set) or 3d (the gpt over tensor x\n"
    "  pipeline x data ranks, [compress] for Optimus-CC's compression); print progress; write the\n"
    "  HDF5 log, checkpoints and OUT_DIR/model.h5.\n"
    "  -D section.key=value   override a deck key (repeatable)\n"
    "  --variant I            run variant I of the deck's [sweep] (required there; surge-sweep lists them)\n"
    "  --resume               continue from the newest checkpoint ([checkpoint] resume = true)\n"
    "  --stopped-exit N       exit status after a stop by a signal (default 0; the job scripts use 75\n"
    "                         to tell \"stopped, requeue me\" from \"finished\")\n"
    "  --foreground           publish this job's idle time to a background partner ([multiplex] channel)\n"
    "  --background           run as a low-priority background job in its foreground partner's idle\n"
    "                         time; in one MPMD mpiexec (A : B --background) the other half is the\n"
    "                         foreground (doc/multiplexing.md)\n"
    "  --background-deck BG_DECK  run BG_DECK as a background inside each rank's process, in a thread\n"
    "                         at the lowest priority ([multiplex] placement = thread), a 1-rank job\n"
    "                         per rank or one job over N ranks' threads ([multiplex] background_ranks);\n"
    "                         job J writes to its [run] out_dir/bgJ; -D bg:section.key=value\n"
    "                         overrides its keys, --resume resumes both\n"
    "  --help, --version\n"
    "SIGTERM or SIGUSR1 finish the step, write a checkpoint and exit (0, or --stopped-exit N) saying how\n"
    "to resume. Under mpiexec send SIGUSR1, which it forwards to every rank (on SIGTERM Open MPI's mpiexec\n"
    "kills the ranks about a second later; doc/checkpoints.md). Exit codes: 0 finished, 2 bad input, 1\n"
    "runtime failure. Deck keys: doc/deck.md.\n";

struct deck_args {
  const cli_t *cli;
  const char *variant;
};

/* rank 0's check of the deck, every variant of a sweep, before it is shared */
static void check_deck(const char *text, void *arg) {
  const struct deck_args *a = arg;
  config_t probe;
  sweep_parse_run(text, a->cli->deck, a->variant, 1, a->cli->noverrides, a->cli->overrides, &probe, NULL);
}

/* Whether the command line asks for an in-process background (MPI must then allow threads). */
static int wants_threads(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--background-deck", 17) == 0) return 1;
  return 0;
}

/* Move the -D bg:section.key=value overrides (the prefix kept, to name them in errors) out of cli
 * into bg. */
static int split_background_overrides(cli_t *cli, char **bg) {
  int n = 0, kept = 0;
  for (int i = 0; i < cli->noverrides; i++)
    if (deck_override_body(cli->overrides[i]) != cli->overrides[i])
      bg[n++] = cli->overrides[i];
    else
      cli->overrides[kept++] = cli->overrides[i];
  cli->noverrides = kept;
  return n;
}

int main(int argc, char **argv) {
  train_catch_stop_signals(); /* a stop while MPI, the deck and the data start: train/run.h */
  deck_accept_background_prefix(); /* -D bg:section.key=value: the in-process background's */
  int thread_level = MPI_THREAD_SINGLE;
  if (wants_threads(argc, argv))
    thread_level = comm_init_threads(&argc, &argv);
  else
    comm_init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by Surge, one line each */
  static const char *const flags[] = {"--resume", "--variant I", "--stopped-exit N", "--foreground",
                                      "--background", "--background-deck BG_DECK", NULL};
  cli_t cli;
  cli_parse(argc, argv, usage, flags, &cli);
  const char *variant = cli_value(&cli, "--variant", 0);
  const char *stopped_text = cli_value(&cli, "--stopped-exit", 0);
  int stopped_exit = 0;
  if (stopped_text) {
    char *end;
    long v = strtol(stopped_text, &end, 10);
    if (*stopped_text == 0 || *end || v < 0 || v > 255)
      surge_input_error("--stopped-exit %s: expected an exit status 0..255", stopped_text);
    stopped_exit = (int)v;
  }
  static char *bg_overrides[CLI_MAX_OVERRIDES + 1];
  int nbg = split_background_overrides(&cli, bg_overrides);
  const char *bg_deck = cli_value(&cli, "--background-deck", 0);
  if (nbg && !bg_deck)
    surge_input_error("-D %s: a bg: override is for the deck of --background-deck, which was not given",
                      bg_overrides[0]);
  if (cli_has(&cli, "--resume")) {
    if (cli.noverrides == CLI_MAX_OVERRIDES) surge_input_error("too many -D overrides");
    cli.overrides[cli.noverrides++] = (char *)"checkpoint.resume=true";
    bg_overrides[nbg++] = (char *)DECK_BACKGROUND_PREFIX "checkpoint.resume=true"; /* the background resumes too */
  }
  if (cli_has(&cli, "--foreground") && cli_has(&cli, "--background"))
    surge_input_error("--foreground and --background: a job has one role");
  mux_role_t asked = cli_has(&cli, "--background")   ? MUX_ROLE_BACKGROUND
                     : cli_has(&cli, "--foreground") ? MUX_ROLE_FOREGROUND
                                                     : MUX_ROLE_NONE;
  comm_t world; /* this job's ranks: MPI_COMM_WORLD, or its half of an MPMD launch */
  mux_launch_t launch;
  mux_launch_split(asked, &world, &launch);
  if (launch.mpmd) surge_set_job(world.mpi, launch.label);
  /* two jobs share stdout: this one's lines start with its name (core/say.h) */
  say_set_label(launch.mpmd ? launch.label : bg_deck ? "foreground" : "");

  /* rank 0 validates the deck (every variant of a sweep) before it is shared */
  struct deck_args da = {&cli, variant};
  char *text = deck_read_checked(cli.deck, &world, check_deck, &da);
  config_t cfg;
  deck_t *deck;
  sweep_parse_run(text, cli.deck, variant, 0, cli.noverrides, cli.overrides, &cfg, &deck);
  free(text);
  deck_check_same(&cfg, &world);
  multiplex_opts_t *mo = cfg_part_rw(&cfg, &multiplex_options);
  mo->role = (int)launch.role;
  snprintf(mo->auto_channel, sizeof mo->auto_channel, "%s", launch.channel);
  char *resolved = deck_resolved_text(&cfg);
  surge_info("# resolved deck (%s%s%s)\n%s\n", cli.deck, variant ? ", variant " : "", variant ? variant : "",
             resolved);
  free(resolved);

  train_inproc_t *inproc = NULL; /* [multiplex] placement = thread: this rank's background thread */
  if (bg_deck) {
    inproc_args_t ia = {.deck = bg_deck, .noverrides = nbg, .overrides = bg_overrides, .program = argv[0],
                        .mpi_thread_level = thread_level};
    inproc = train_inproc_start(&ia, &cfg, deck, &world);
  } else if (strcmp(mo->placement, "thread") == 0) {
    surge_input_error("%s: [multiplex] placement = thread needs the background's deck (hint: surge-train %s "
                      "--background-deck BG.deck; doc/multiplexing.md)", deck_where(deck, "multiplex.placement"),
                      cli.deck);
  }
  /* the command line as given (every -D, --variant, the role), quoted for a shell, plus --resume */
  char *resume_cmd = cli_command_line(argc, argv, "--resume");
  int rc = train_run(&cfg, deck, resume_cmd, &world) == TRAIN_STOPPED ? stopped_exit : 0;
  if (inproc) train_inproc_join(inproc, &world); /* its status is printed; the job's is the foreground's */
  free(resume_cmd);
  deck_free(deck);
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
