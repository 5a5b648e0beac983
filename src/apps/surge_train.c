/* surge-train DECK [-D section.key=value ...]: train a model as the deck says. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "core/error.h"
#include "io/deck.h"
#include "train/run.h"

static const char usage[] =
    "usage: surge-train DECK [-D section.key=value ...]\n"
    "  Train the model the deck describes; print progress; leave OUT_DIR/model.h5.\n"
    "  -D section.key=value   override a deck key (repeatable)\n"
    "  --help, --version\n"
    "Deck keys: see doc/deck.md.\n";

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported by Surge, one line each */
  cli_t cli;
  cli_parse(argc, argv, usage, &cli);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1)
    surge_input_error("surge-train runs on one rank in this version (started on %d); run it without mpiexec", size);

  config_t cfg;
  deck_t *deck;
  deck_load(cli.deck, cli.noverrides, cli.overrides, &cfg, &deck);
  char *text = deck_resolved_text(&cfg);
  surge_info("# resolved deck (%s)\n%s\n", cli.deck, text);
  free(text);

  int rc = train_run(&cfg, deck);
  deck_free(deck);
  MPI_Finalize();
  return rc;
}
