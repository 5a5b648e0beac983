/* Command lines shared by the Surge programs: PROGRAM DECK [-D section.key=value ...] [options]. */
#ifndef SURGE_CLI_H
#define SURGE_CLI_H

#define CLI_MAX_OVERRIDES 256
#define CLI_MAX_FLAGS 8

typedef struct cli {
  const char *deck;                       /* the deck path */
  int noverrides;
  char *overrides[CLI_MAX_OVERRIDES];     /* "section.key=value" (point into argv) */
  const char *const *flags;               /* the program's own flags, e.g. {"--resume", NULL} */
  int seen[CLI_MAX_FLAGS];                /* seen[i]: flags[i] was given */
} cli_t;

/* Parse argv. --help prints `usage` and exits 0; --version prints the version and exits 0; flags
 * (NULL-terminated list, may be NULL) are the program's own boolean options; anything unexpected is
 * an input error (exit 2). */
void cli_parse(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli);
/* 1 if the flag (one of those passed to cli_parse) was given. */
int cli_has(const cli_t *cli, const char *flag);

#endif
