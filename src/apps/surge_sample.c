/* surge-sample [MODEL] [options]: text from a trained gpt (doc/generate.md). The work lives in
 * src/gen. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/error.h"
#include "gen/job.h"
#include "surge_build_config.h"

static const char usage[] =
    "usage: surge-sample [MODEL] [options]\n"
    "  Generate text from a gpt: MODEL is a run's OUT_DIR/model.h5 or a checkpoint (both hold their deck).\n"
    "  --prompt TEXT          a prompt as text, through the model's tokenizer or as bytes (repeatable:\n"
    "                         several prompts make one batch)\n"
    "  --ids \"ID ID ...\"      a prompt as token ids, separated by spaces or commas (repeatable)\n"
    "                         (no prompt: <|endoftext|> where the vocabulary has it)\n"
    "  --samples N            samples of each prompt (default 1)\n"
    "  --tokens N             new tokens per sample (default 64; prompt + N must fit the context)\n"
    "  --greedy               the most likely token every step (= --temperature 0)\n"
    "  --temperature T        sample from softmax(logits / T) (default 1)\n"
    "  --top-k K              only from the K most likely tokens (default 0: all)\n"
    "  --top-p P              only from the most likely tokens holding P of the probability (default 1: all)\n"
    "  --seed S               the sampling seed (default the deck's [run] seed); sample J draws from\n"
    "                         stream J, so any rank count gives the same samples\n"
    "  --no-cache             recompute the whole context every token (the reference for the key/value cache)\n"
    "  --print-ids            print token ids instead of text\n"
    "  --escape               write control characters and invalid UTF-8 as escapes (\\n, \\xHH), as the\n"
    "                         samples of a training run are printed and logged\n"
    "  --deck DECK            the deck describing the model (default: the one MODEL holds)\n"
    "  -D section.key=value   override a key of that deck (repeatable); e.g. -D backend.name=cuda\n"
    "  --backend NAME         = -D backend.name=NAME (cpu, cuda, ref)\n"
    "  --threads N            = -D backend.threads=N\n"
    "  --init SEED            no MODEL: parameters freshly initialised from SEED (needs --deck; for speed\n"
    "                         measurements)\n"
    "  --help, --version\n"
    "Samples go to standard output (\"--- sample J (prompt P)\" before each when there are several), the\n"
    "tokens/s to standard error. MPI: the samples spread over the ranks. Exit codes: 0 done, 2 bad input\n"
    "(one line on stderr), 1 runtime failure.\n";

enum { MAX_ARGS = 256 };

typedef struct args {
  gen_job_opts_t o;
  gen_prompt_t prompts[MAX_ARGS];
  char *overrides[MAX_ARGS];
  char own[2][64]; /* --backend, --threads as overrides */
} args_t;

static uint64_t seed_value(const char *opt, const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') surge_input_error("%s %s: expected a whole number >= 0", opt, s);
  return (uint64_t)v;
}

static void add_override(args_t *a, char *kv) {
  if (a->o.noverrides >= MAX_ARGS) surge_input_error("more than %d -D overrides", MAX_ARGS);
  a->overrides[a->o.noverrides++] = kv;
}

static void add_prompt(args_t *a, const char *text, const char *ids) {
  if (a->o.nprompts >= MAX_ARGS) surge_input_error("more than %d prompts", MAX_ARGS);
  a->prompts[a->o.nprompts++] = (gen_prompt_t){text, ids};
}

static void parse(int argc, char **argv, args_t *a) {
  gen_job_opts_t *o = &a->o;
  *o = (gen_job_opts_t){.samples = 1, .tokens = 64, .pick = {.temperature = 1.0, .top_p = 1.0}, .engine = "cache",
                        .prompts = a->prompts, .overrides = a->overrides};
  int greedy = 0;
  const char *temperature = NULL; /* --temperature's text, when given */
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    cli_help_or_version(s, argv[0], usage);
    if (!strcmp(s, "--prompt")) add_prompt(a, cli_next_value(argc, argv, &i), NULL);
    else if (!strcmp(s, "--ids")) add_prompt(a, NULL, cli_next_value(argc, argv, &i));
    else if (!strcmp(s, "--samples")) o->samples = (int)cli_whole(s, cli_next_value(argc, argv, &i), 1, 1 << 20);
    else if (!strcmp(s, "--tokens")) o->tokens = (int)cli_whole(s, cli_next_value(argc, argv, &i), 1, 1 << 24);
    else if (!strcmp(s, "--greedy")) o->pick.temperature = 0, greedy = 1;
    else if (!strcmp(s, "--temperature")) {
      o->pick.temperature = cli_number(s, cli_next_value(argc, argv, &i), 0, 1e6);
      temperature = argv[i];
    }
    else if (!strcmp(s, "--top-k")) o->pick.top_k = (int)cli_whole(s, cli_next_value(argc, argv, &i), 0, 1 << 24);
    else if (!strcmp(s, "--top-p")) { /* (0, 1]: one message for every value outside */
      const char *text = cli_next_value(argc, argv, &i);
      char *end;
      o->pick.top_p = strtod(text, &end);
      if (end == text || *end || !(o->pick.top_p > 0 && o->pick.top_p <= 1))
        surge_input_error("--top-p %s: expected a number in (0, 1]", text);
    } else if (!strcmp(s, "--seed")) {
      o->has_seed = 1;
      o->seed = seed_value(s, cli_next_value(argc, argv, &i));
    } else if (!strcmp(s, "--init")) {
      o->has_init = 1;
      o->init_seed = seed_value(s, cli_next_value(argc, argv, &i));
    } else if (!strcmp(s, "--no-cache")) o->engine = "full";
    else if (!strcmp(s, "--print-ids")) o->print_ids = 1;
    else if (!strcmp(s, "--escape")) o->escape = 1;
    else if (!strcmp(s, "--deck")) o->deck = cli_next_value(argc, argv, &i);
    else if (!strcmp(s, "-D")) add_override(a, (char *)cli_next_value(argc, argv, &i));
    else if (!strcmp(s, "--backend") || !strcmp(s, "--threads")) {
      int k = s[2] == 'b' ? 0 : 1;
      const char *v = cli_next_value(argc, argv, &i);
      if (k) cli_whole(s, v, 1, 1024); /* (named as typed; [backend] threads's bounds) */
      snprintf(a->own[k], sizeof a->own[k], "backend.%s=%s", k ? "threads" : "name", v);
      add_override(a, a->own[k]);
    } else if (s[0] == '-' && s[1]) surge_input_error("unknown option '%s' (try --help)", s);
    else if (!o->model) o->model = s;
    else surge_input_error("a second model file '%s' (one model per run; try --help)", s);
  }
  if (greedy && temperature)
    surge_input_error("--greedy and --temperature %s: give one (--greedy is --temperature 0)", temperature);
  if (o->model && o->has_init) surge_input_error("both a model file and --init: the parameters come from one of them");
  if (o->has_init && !o->deck) surge_input_error("--init needs --deck DECK, the model to initialise");
}

int main(int argc, char **argv) {
  surge_stdout_by_lines();
  MPI_Init(&argc, &argv);
  args_t a;
  parse(argc, argv, &a);
  gen_job_run(&a.o, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
