/* surge-train DECK [-D section.key=value ...] [--resume]: train a model as the deck says. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/cli.h"
#include "core/error.h"
#include "io/deck.h"
#include "train/run.h"

static const char usage[] =
    "usage: [mpiexec -n N] surge-train DECK [-D section.key=value ...] [--resume]\n"
    "  Train the model the deck describes on all ranks (data parallel); print progress; write the\n"
    "  HDF5 log, checkpoints and OUT_DIR/model.h5.\n"
    "  -D section.key=value   override a deck key (repeatable)\n"
    "  --resume               continue from the newest checkpoint ([checkpoint] resume = true)\n"
    "  --help, --version\n"
    "SIGTERM or SIGUSR1 finish the step, write a checkpoint and exit 0. Deck keys: doc/deck.md.\n";

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by Surge, one line each */
  static const char *const flags[] = {"--resume", NULL};
  cli_t cli;
  cli_parse(argc, argv, usage, flags, &cli);
  if (cli_has(&cli, "--resume")) {
    if (cli.noverrides == CLI_MAX_OVERRIDES) surge_input_error("too many -D overrides");
    cli.overrides[cli.noverrides++] = (char *)"checkpoint.resume=true";
  }
  comm_t world;
  comm_world(&world);

  /* rank 0 reads and validates the deck first (its errors are the only ones printed), then every
   * rank parses the same text */
  char *text = NULL;
  unsigned long long len = 0;
  if (world.rank == 0) {
    text = deck_read_file(cli.deck);
    len = strlen(text) + 1;
    config_t probe;
    deck_parse(text, cli.deck, cli.noverrides, cli.overrides, &probe, NULL);
  }
  comm_bcast(&world, &len, sizeof len, 0, TRAFFIC_OTHER);
  if (world.rank != 0) text = xmalloc((size_t)len);
  comm_bcast(&world, text, (size_t)len, 0, TRAFFIC_OTHER);
  config_t cfg;
  deck_t *deck;
  deck_parse(text, cli.deck, cli.noverrides, cli.overrides, &cfg, &deck);
  free(text);
  char *resolved = deck_resolved_text(&cfg);
  surge_info("# resolved deck (%s)\n%s\n", cli.deck, resolved);
  free(resolved);

  int rc = train_run(&cfg, deck, cli.deck, &world);
  deck_free(deck);
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
