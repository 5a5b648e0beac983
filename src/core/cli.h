/* Command lines shared by the Surge programs: PROGRAM DECK [-D section.key=value ...] [options]. */
#ifndef SURGE_CLI_H
#define SURGE_CLI_H

#define CLI_MAX_OVERRIDES 256
#define CLI_MAX_FLAGS 40
#define CLI_MAX_VALUES 2

typedef struct cli {
  const char *deck;                       /* the deck path */
  int noverrides;
  char *overrides[CLI_MAX_OVERRIDES];     /* "section.key=value" (point into argv) */
  const char *const *flags;               /* the program's own options: {"--resume", "--variant I", NULL} */
  int seen[CLI_MAX_FLAGS];                /* seen[i]: flags[i] was given */
  const char *values[CLI_MAX_FLAGS][CLI_MAX_VALUES]; /* values[i][k]: k-th value of flags[i] (into argv) */
} cli_t;

/* Parse argv. --help prints `usage` and exits 0; --version prints the version and exits 0; flags
 * (NULL-terminated list, may be NULL) are the program's own options: a bare name ("--resume") is a
 * switch, and each word after the name is a value the option takes ("--write-deck I OUT" takes two,
 * given as the next arguments; one value may also be given as "--variant=3"). Given twice, the
 * last one wins. Anything unexpected is an input error (exit 2). MPI need not be initialised. */
void cli_parse(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli);
/* The same for programs whose deck is optional (cli->deck NULL when none was given). */
void cli_parse_deck_optional(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli);
/* 1 if the option (its name, e.g. "--variant") was given. */
int cli_has(const cli_t *cli, const char *flag);
/* The k-th value of an option that was given (k from 0), NULL if it was not given. */
const char *cli_value(const cli_t *cli, const char *flag, int k);
/* argv as a POSIX shell runs it again, word for word: a word other than letters, digits and
 * _ - . / : = @ % + , is put in single quotes (a quote in it written '\''); then `append` (NULL:
 * nothing) unless some word of argv is it already. malloc'd. Surge prints it (the resume command
 * after a stop); nothing ever runs it. */
char *cli_command_line(int argc, char *const *argv, const char *append);

/* arg is --help (or -h): usage on rank 0; --version: "PROGRAM (surge) VERSION" on rank 0, PROGRAM
 * argv0's last part (the GNU form); either ends the program with status 0 (MPI finalized where it
 * was initialized). Any other arg: returns. */
void cli_help_or_version(const char *arg, const char *argv0, const char *usage);

/* Options parsed by hand (programs whose options repeat or take free text: surge-tokenize,
 * surge-sample). Each failure is an input error naming the option and its value. */
/* The value after option argv[*i] (advancing *i to it). */
const char *cli_next_value(int argc, char **argv, int *i);
/* s as a number in [lo, hi]. */
double cli_number(const char *opt, const char *s, double lo, double hi);
/* s as a whole number in [lo, hi]. */
long long cli_whole(const char *opt, const char *s, long long lo, long long hi);

#endif
