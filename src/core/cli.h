/* Command lines shared by the Surge programs: PROGRAM DECK [-D section.key=value ...] [options]. */
#ifndef SURGE_CLI_H
#define SURGE_CLI_H

#define CLI_MAX_OVERRIDES 256

typedef struct cli {
  const char *deck;                       /* the deck path */
  int noverrides;
  char *overrides[CLI_MAX_OVERRIDES];     /* "section.key=value" (point into argv) */
} cli_t;

/* Parse argv. --help prints `usage` and exits 0; --version prints the version and exits 0; anything
 * unexpected is an input error (exit 2) that shows the usage line. */
void cli_parse(int argc, char **argv, const char *usage, cli_t *cli);

#endif
