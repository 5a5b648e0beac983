#include "core/cli.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "surge_build_config.h"
#include "core/error.h"

static _Noreturn void cli_exit(int code) {
  MPI_Finalize();
  exit(code);
}

static int flag_index(const cli_t *cli, const char *a) {
  for (int i = 0; cli->flags && cli->flags[i] && i < CLI_MAX_FLAGS; i++)
    if (strcmp(cli->flags[i], a) == 0) return i;
  return -1;
}

int cli_has(const cli_t *cli, const char *flag) {
  int i = flag_index(cli, flag);
  return i >= 0 && cli->seen[i];
}

void cli_parse(int argc, char **argv, const char *usage, const char *const *flags, cli_t *cli) {
  memset(cli, 0, sizeof *cli);
  cli->flags = flags;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int f = flag_index(cli, a);
    if (f >= 0) {
      cli->seen[f] = 1;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (surge_rank() == 0) printf("%s", usage);
      cli_exit(0);
    } else if (strcmp(a, "--version") == 0) {
      if (surge_rank() == 0) printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
      cli_exit(0);
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
  if (!cli->deck) surge_input_error("no deck given (try --help)");
}
