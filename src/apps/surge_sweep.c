/* surge-sweep DECK [-D section.key=value ...] --count | --list | --index I | --write-deck I OUT |
 * --array: the variants of a deck's [sweep] section (doc/sweeps.md), for Slurm job arrays. Every
 * variant is resolved and checked before anything is printed. Serial: it needs no mpiexec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/cli.h"
#include "core/error.h"
#include "io/deck.h"
#include "io/sweep.h"

static const char usage[] =
    "usage: surge-sweep DECK [-D section.key=value ...] ACTION\n"
    "  Expand the deck's [sweep] section into variants 0..N-1 (each one run: surge-train DECK\n"
    "  --variant I), after checking that every variant is a valid deck writing its own files.\n"
    "  ACTION, exactly one of:\n"
    "  --count                print N, the number of variants\n"
    "  --list                 print a table: variant, the value of each swept key, run.name\n"
    "  --index I              print the -D arguments that make variant I, in the order they apply (for\n"
    "                         reading; this command's own -D after the swept values, which they override)\n"
    "  --write-deck I OUT     write the resolved deck of variant I to the new file OUT ('-': stdout)\n"
    "  --array                print the Slurm job array range 0-(N-1), for sbatch --array\n"
    "  -D section.key=value   override a deck key in every variant (repeatable)\n"
    "  --help, --version\n"
    "Exit codes: 0 done, 2 bad input (one line on stderr), 1 runtime failure. Syntax: doc/sweeps.md.\n";

static const char *const actions[] = {"--count", "--list", "--index", "--write-deck", "--array"};
enum { NACTIONS = sizeof actions / sizeof actions[0] };

static void write_deck(const char *out, const char *deck_text) {
  if (strcmp(out, "-") == 0) {
    fputs(deck_text, stdout);
    return;
  }
  FILE *f = fopen(out, "wx"); /* never replaces a file */
  if (!f) {
    struct stat st; /* not fopen(out, "r"): on a FIFO that waits for a writer forever */
    if (lstat(out, &st) == 0) {
      surge_input_error("%s: the file exists (hint: surge-sweep never overwrites; remove it or name another)",
                        out);
    }
    surge_input_error("%s: cannot create the deck (hint: does its directory exist?)", out);
  }
  int failed = fputs(deck_text, f) < 0;
  failed |= fclose(f) != 0;
  if (failed) surge_runtime_error("%s: writing the deck failed", out);
}

int main(int argc, char **argv) {
  static const char *const flags[] = {"--count", "--list", "--index I", "--write-deck I OUT",
                                      "--array", NULL};
  cli_t cli;
  cli_parse(argc, argv, usage, flags, &cli);
  const char *action = NULL;
  int nactions = 0;
  for (int a = 0; a < NACTIONS; a++)
    if (cli_has(&cli, actions[a])) action = actions[a], nactions++;
  if (nactions != 1)
    surge_input_error(
        "give exactly one of --count, --list, --index I, --write-deck I OUT, --array (try --help)");

  char *text = deck_read_file(cli.deck);
  sweep_t *s = sweep_parse(text, cli.deck);
  if (!s) {
    config_t cfg; /* the deck's own errors first: [Sweep] is an unknown section with a hint, as surge-train says */
    deck_parse(text, cli.deck, cli.noverrides, cli.overrides, &cfg, NULL);
    surge_input_error("%s: the deck has no [sweep] section (hint: doc/sweeps.md shows one)", cli.deck);
  }
  const char *index_arg = cli_value(&cli, action, 0);
  long i = index_arg ? sweep_index_arg(s, action, index_arg) : 0;

  if (strcmp(action, "--list") == 0) {
    sweep_print_list(s, text, cli.noverrides, cli.overrides, stdout); /* checks every variant first */
  } else {
    sweep_check(s, text, cli.noverrides, cli.overrides, NULL, NULL);
    long n = sweep_count(s);
    if (strcmp(action, "--count") == 0) {
      printf("%ld\n", n);
    } else if (strcmp(action, "--array") == 0) {
      if (n == 1) printf("0\n");
      else printf("0-%ld\n", n - 1);
    } else if (strcmp(action, "--index") == 0) {
      sweep_print_args(s, i, text, cli.noverrides, cli.overrides, stdout);
    } else {
      char *deck_text = sweep_deck_text(s, i, text, cli.noverrides, cli.overrides);
      write_deck(cli_value(&cli, "--write-deck", 1), deck_text);
      free(deck_text);
    }
  }
  sweep_free(s);
  free(text);
  if (fflush(stdout) != 0 || ferror(stdout)) surge_runtime_error("writing to standard output failed");
  return 0;
}
