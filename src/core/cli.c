#include "core/cli.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "surge_build_config.h"
#include "core/error.h"

static _Noreturn void cli_exit(int code) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
  exit(code);
}

/* Length of the option's name in its spec ("--write-deck I OUT" -> 12) and the values it takes. */
static size_t spec_name_len(const char *spec) { return strcspn(spec, " "); }

static int spec_nvalues(const char *spec) {
  int n = 0;
  for (const char *p = spec; *p; p++) n += *p == ' ' && p[1] && p[1] != ' ';
  return n;
}

/* Index of the option named by the first len characters of a, -1 if none. */
static int flag_index_n(const cli_t *cli, const char *a, size_t len) {
  for (int i = 0; cli->flags && cli->flags[i] && i < CLI_MAX_FLAGS; i++)
    if (spec_name_len(cli->flags[i]) == len && strncmp(cli->flags[i], a, len) == 0) return i;
  return -1;
}

static int flag_index(const cli_t *cli, const char *a) { return flag_index_n(cli, a, strlen(a)); }

int cli_has(const cli_t *cli, const char *flag) {
  int i = flag_index(cli, flag);
  return i >= 0 && cli->seen[i];
}

const char *cli_value(const cli_t *cli, const char *flag, int k) {
  int i = flag_index(cli, flag);
  return i >= 0 && cli->seen[i] && k >= 0 && k < CLI_MAX_VALUES ? cli->values[i][k] : NULL;
}

/* Option f at argv[*i], written "--name" (values follow) or "--name=value": record its values. */
static void take_option(cli_t *cli, int f, int argc, char **argv, int *i, const char *inline_value) {
  const char *spec = cli->flags[f];
  int n = spec_nvalues(spec);
  if (n > CLI_MAX_VALUES)
    surge_runtime_error("option spec '%s' takes more than %d values", spec, CLI_MAX_VALUES);
  if (inline_value && n != 1)
    surge_input_error("option '%.*s' is written '%s' (try --help)", (int)spec_name_len(spec), spec, spec);
  if (n > 0 && cli->seen[f]) /* (the last would win unseen: --variant 1 --variant 2) */
    surge_input_error("option '%.*s' is given twice: give it once (try --help)", (int)spec_name_len(spec), spec);
  cli->seen[f] = 1;
  if (inline_value) {
    cli->values[f][0] = inline_value;
    return;
  }
  if (*i + n >= argc)
    surge_input_error("option '%s' needs %s: '%s' (try --help)", argv[*i], n > 1 ? "its values" : "a value",
                      spec);
  for (int k = 0; k < n; k++) cli->values[f][k] = argv[++*i];
}

static int shell_safe(const char *w) {
  if (!*w) return 0;
  for (; *w; w++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,", *w)) return 0;
  return 1;
}

/* Append word w, quoted as needed, to out (NULL: only count); returns the bytes it takes. */
static size_t put_word(char *out, const char *w) {
  size_t n = 0;
  if (shell_safe(w)) {
    n = strlen(w);
    if (out) memcpy(out, w, n);
    return n;
  }
  if (out) out[n] = '\'';
  n++;
  for (; *w; w++) {
    const char *piece = *w == '\'' ? "'\\''" : NULL;
    size_t k = piece ? 4 : 1;
    if (out) memcpy(out + n, piece ? piece : w, k);
    n += k;
  }
  if (out) out[n] = '\'';
  return n + 1;
}

char *cli_command_line(int argc, char *const *argv, const char *append) {
  int add = append != NULL;
  for (int i = 1; i < argc && add; i++) add = strcmp(argv[i], append) != 0;
  size_t len = 1;
  for (int i = 0; i < argc; i++) len += put_word(NULL, argv[i]) + 1;
  if (add) len += put_word(NULL, append) + 1;
  char *line = surge_malloc_at(len, __FILE__, __LINE__), *p = line;
  for (int i = 0; i < argc + add; i++) {
    if (i) *p++ = ' ';
    p += put_word(p, i < argc ? argv[i] : append);
  }
  *p = '\0';
  return line;
}

void cli_help_or_version(const char *arg, const char *argv0, const char *usage) {
  const int help = strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0, version = strcmp(arg, "--version") == 0;
  if (!help && !version) return;
  const char *slash = strrchr(argv0, '/');
  if (surge_rank() == 0 && help) fputs(usage, stdout);
  if (surge_rank() == 0 && version) printf("%s (%s) %s\n", slash ? slash + 1 : argv0, PACKAGE_NAME, PACKAGE_VERSION);
  cli_exit(0);
}

static void parse_args(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli) {
  memset(cli, 0, sizeof *cli);
  cli->flags = flags;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    int f = eq ? flag_index_n(cli, a, (size_t)(eq - a)) : flag_index(cli, a);
    cli_help_or_version(a, argv[0], usage);
    if (f >= 0) {
      take_option(cli, f, argc, argv, &i, eq ? eq + 1 : NULL);
    } else if (strncmp(a, "-D", 2) == 0) {
      const char *kv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
      if (!kv) surge_input_error("-D needs section.key=value (%s)", "see --help");
      if (cli->noverrides == CLI_MAX_OVERRIDES) surge_input_error("more than %d -D overrides", CLI_MAX_OVERRIDES);
      cli->overrides[cli->noverrides++] = (char *)kv;
    } else if (a[0] == '-' && a[1]) {
      surge_input_error("unknown option '%s' (try --help)", a);
    } else if (!cli->deck) {
      cli->deck = a;
    } else {
      surge_input_error("more than one deck given ('%s' and '%s'; try --help)", cli->deck, a);
    }
  }
}

void cli_parse(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli) {
  parse_args(argc, argv, usage, flags, cli);
  if (!cli->deck) surge_input_error("no deck given (try --help)");
}

void cli_parse_deck_optional(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli) {
  parse_args(argc, argv, usage, flags, cli);
}

const char *cli_next_value(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) surge_input_error("%s needs a value (try --help)", argv[*i]);
  return argv[++*i];
}

double cli_number(const char *opt, const char *s, double lo, double hi) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    surge_input_error("%s %s: expected a number in [%g, %g]", opt, s, lo, hi);
  return v;
}

long long cli_whole(const char *opt, const char *s, long long lo, long long hi) {
  double v = cli_number(opt, s, (double)lo, (double)hi);
  if (v != (double)(long long)v) surge_input_error("%s %s: expected a whole number", opt, s);
  return (long long)v;
}
