/* surge-tokenize train|encode|decode ...: byte-level BPE vocabularies and llm.c token shards
 * (doc/data.md). decode runs on one rank; train and encode spread the documents over the ranks of
 * their MPI job and write the same files for any rank count. The work lives in src/tok. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/error.h"
#include "io/run_dir.h"
#include "surge_build_config.h"
#include "tok/bpe.h"
#include "tok/corpus.h"
#include "tok/files.h"
#include "tok/pretok.h"
#include "tok/shard_read.h"
#include "tok/train.h"

static const char usage[] =
    "usage: surge-tokenize COMMAND [options] [FILE|DIR ...]\n"
    "  train  --out DIR --vocab-size N [--min-frequency F] FILE|DIR ...\n"
    "         learn a byte-level BPE vocabulary (GPT-2's byte symbols and pre-tokenization, <|endoftext|>\n"
    "         last); writes DIR/vocab.json and DIR/merges.txt (new files). Any rank count counts the\n"
    "         documents' pieces in shares; rank 0 learns the merges: the same files.\n"
    "  encode --tokenizer DIR --out PREFIX [--val-fraction F] [--shard-tokens N] [--progress] FILE|DIR ...\n"
    "         each file a document, <|endoftext|> before each; writes llm.c shards PREFIX_train_000000.bin ...\n"
    "         and PREFIX_val_000000.bin ... (every 1/F-th document; default F 0). Any rank count, same files.\n"
    "  encode --tokenizer DIR --ids FILE\n"
    "         print the ids of FILE's bytes (no end-of-text), space-separated, one line. One rank.\n"
    "  decode --tokenizer DIR [--skip-special] (SHARD.bin ... | --ids FILE)\n"
    "         write the bytes of the tokens of shards, or of the ids in FILE, to standard output. One rank.\n"
    "  --tokenizer DIR: DIR/vocab.json and DIR/merges.txt (GPT-2's or Hugging Face's byte-level BPE files)\n"
    "  --help, --version\n"
    "Exit codes: 0 done, 2 bad input (one line on stderr), 1 runtime failure. Formats: doc/formats.md.\n";

typedef struct args {
  const char *cmd, *out, *tokenizer, *ids;
  long vocab_size, min_frequency;
  double val_fraction;
  long long shard_tokens;
  int skip_special, progress;
  char **paths;
  int npaths;
  unsigned given; /* the options given: bits of option_names */
} args_t;

/* The options, in the order of their bits in args_t.given. */
static const char *const option_names[] = {"--out", "--tokenizer", "--ids", "--vocab-size", "--min-frequency",
                                           "--val-fraction", "--shard-tokens", "--skip-special", "--progress"};
enum { OPT_COUNT = (int)(sizeof option_names / sizeof option_names[0]) };

static void parse(int argc, char **argv, args_t *a) {
  *a = (args_t){.vocab_size = -1, .min_frequency = 2, .shard_tokens = 100000000};
  a->paths = xcalloc((size_t)argc, sizeof *a->paths);
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    cli_help_or_version(s, argv[0], usage);
    for (int k = 0; k < OPT_COUNT; k++)
      if (!strcmp(s, option_names[k])) a->given |= 1u << k;
    if (!strcmp(s, "--out")) a->out = cli_next_value(argc, argv, &i);
    else if (!strcmp(s, "--tokenizer")) a->tokenizer = cli_next_value(argc, argv, &i);
    else if (!strcmp(s, "--ids")) a->ids = cli_next_value(argc, argv, &i);
    else if (!strcmp(s, "--vocab-size")) a->vocab_size = cli_whole(s, cli_next_value(argc, argv, &i), TRAIN_VOCAB_MIN, BPE_VOCAB_MAX);
    else if (!strcmp(s, "--min-frequency")) a->min_frequency = cli_whole(s, cli_next_value(argc, argv, &i), 1, LONG_MAX / 2);
    else if (!strcmp(s, "--val-fraction")) a->val_fraction = cli_number(s, cli_next_value(argc, argv, &i), 0, 0.999999);
    else if (!strcmp(s, "--shard-tokens")) a->shard_tokens = cli_whole(s, cli_next_value(argc, argv, &i), 1, INT32_MAX);
    else if (!strcmp(s, "--skip-special")) a->skip_special = 1;
    else if (!strcmp(s, "--progress")) a->progress = 1;
    else if (s[0] == '-' && s[1]) surge_input_error("unknown option '%s' (try --help)", s);
    else if (!a->cmd) a->cmd = s;
    else a->paths[a->npaths++] = argv[i];
  }
  if (!a->cmd) surge_input_error("no command: train, encode or decode (try --help)");
  if (a->out && !a->out[0])
    surge_input_error("--out: an empty name (hint: --out DIR for train, --out PREFIX for encode)");
}

/* An option the command does not take would be ignored: refused by name instead. allowed: the
 * options it takes, space-separated. */
static void only(const args_t *a, const char *what, const char *allowed) {
  for (int k = 0; k < OPT_COUNT; k++) {
    if (!(a->given & (1u << k))) continue;
    const char *at = strstr(allowed, option_names[k]);
    size_t n = strlen(option_names[k]);
    if (!at || (at[n] && at[n] != ' '))
      surge_input_error("%s takes %s, not %s (try --help)", what, allowed, option_names[k]);
  }
}

static void need(const void *v, const char *cmd, const char *opt) {
  if (!v) surge_input_error("%s needs %s (try --help)", cmd, opt);
}

static void one_rank(const char *cmd) {
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 1) surge_input_error("%s runs on one rank, not %d (train and encode spread over ranks)", cmd, size);
}

static bpe_t *load(const args_t *a) {
  need(a->tokenizer, a->cmd, "--tokenizer DIR");
  return bpe_load_dir(a->tokenizer);
}

static void cmd_train(const args_t *a) {
  only(a, "train", "--out --vocab-size --min-frequency");
  need(a->out, "train", "--out DIR");
  if (a->vocab_size < 0) surge_input_error("train needs --vocab-size N (try --help)");
  if (!a->npaths) surge_input_error("train needs the text files or directories to learn from");
  char v[PATH_MAX], m[PATH_MAX];
  bpe_dir_files(a->out, v, m, PATH_MAX);
  if (surge_rank() == 0) { /* before the training (minutes), not after it */
    char why[PATH_MAX + 64];
    if (run_dir_prepare(a->out, why, sizeof why) != 0) surge_input_error("--out %s: %s", a->out, why);
    const char *const files[] = {v, m};
    struct stat st;
    for (int k = 0; k < 2; k++)
      if (lstat(files[k], &st) == 0)
        surge_input_error("%s: the file exists (hint: remove it or name another directory; train never replaces a "
                          "vocabulary)", files[k]);
      else if (errno != ENOENT)
        surge_input_error("%s: cannot check it: %s", files[k], strerror(errno));
  }
  file_list_t docs = {0};
  file_list_expand(&docs, a->paths, a->npaths);
  train_opts_t o = {.vocab_size = (int)a->vocab_size, .min_frequency = (uint64_t)a->min_frequency};
  train_stats_t st;
  double t0 = MPI_Wtime();
  bpe_t *b = bpe_train(&docs, &o, MPI_COMM_WORLD, &st);
  double t = MPI_Wtime() - t0;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!b) { /* not rank 0: it counted its share */
    file_list_free(&docs);
    return;
  }
  bpe_save(b, v, m);
  printf("train: %zu documents, %" PRIu64 " bytes, %" PRIu64 " pieces (%" PRIu64 " distinct) -> %d tokens, "
         "%d merges in %.2f s (%.2f MB/s) on %d ranks\n",
         docs.n, st.bytes, st.pieces, st.distinct, b->n, b->nmerges, t, t > 0 ? (double)st.bytes / 1e6 / t : 0.0, size);
  if (b->n < o.vocab_size)
    printf("train: no pair occurs %ld times any more: the vocabulary has %d tokens, not %d\n", a->min_frequency,
           b->n, o.vocab_size);
  bpe_free(b);
  file_list_free(&docs);
}

static void print_ids(const args_t *a, const bpe_t *b) {
  one_rank("encode --ids");
  size_t len;
  unsigned char *text = file_read_all(a->ids, CORPUS_DOC_MAX, "a document", "split it", &len);
  pretok_t *pt = pretok_new();
  ids_t ids = {0};
  bpe_encode(b, pt, text, len, &ids);
  for (size_t i = 0; i < ids.n; i++) printf(i ? " %u" : "%u", ids.v[i]);
  printf("\n");
  ids_free(&ids);
  pretok_free(pt);
  free(text);
}

static void cmd_encode(const args_t *a) {
  if (a->ids) {
    only(a, "encode --ids", "--tokenizer --ids");
    if (a->npaths) surge_input_error("encode --ids FILE encodes FILE alone: '%s' is one file too many", a->paths[0]);
  } else {
    only(a, "encode", "--tokenizer --out --val-fraction --shard-tokens --progress");
  }
  bpe_t *b = load(a);
  if (a->ids) {
    print_ids(a, b);
  } else {
    need(a->out, "encode", "--out PREFIX (or --ids FILE)");
    if (!a->npaths) surge_input_error("encode needs the text files or directories to encode");
    file_list_t docs = {0};
    file_list_expand(&docs, a->paths, a->npaths);
    if (surge_rank() == 0) { /* the prefix's directory, made as train makes --out (after the inputs are found) */
      char dir[PATH_MAX], why[PATH_MAX + 64];
      run_dir_of(a->out, dir, sizeof dir);
      if (run_dir_prepare(dir, why, sizeof why) != 0) surge_input_error("--out %s: %s", a->out, why);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every rank writes into it */
    corpus_opts_t o = {.prefix = a->out, .val_fraction = a->val_fraction,
                       .shard_tokens = (uint64_t)a->shard_tokens, .progress = a->progress && isatty(2)};
    corpus_stats_t st;
    corpus_encode(b, &docs, &o, MPI_COMM_WORLD, &st);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (surge_rank() == 0)
      printf("encode: %" PRIu64 " documents, %" PRIu64 " bytes -> %" PRIu64 " training tokens in %" PRIu64
             " shards, %" PRIu64 " validation tokens in %" PRIu64 " shards; %.2f s (%.2f MB/s) on %d ranks\n",
             st.docs, st.bytes, st.tokens[0], st.shards[0], st.tokens[1], st.shards[1], st.seconds,
             st.seconds > 0 ? (double)st.bytes / 1e6 / st.seconds : 0.0, size);
    file_list_free(&docs);
  }
  bpe_free(b);
}

static void cmd_decode(const args_t *a) {
  only(a, "decode", "--tokenizer --skip-special --ids");
  one_rank("decode");
  bpe_t *b = load(a);
  if (!a->ids && !a->npaths) surge_input_error("decode needs shard files or --ids FILE");
  ids_t ids = {0};
  if (a->ids) ids_read_text(a->ids, (uint32_t)b->n, &ids);
  for (int i = 0; i < a->npaths; i++) shard_read_all(a->paths[i], (uint32_t)b->n, &ids);
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  bpe_decode(b, ids.v, ids.n, a->skip_special, &buf, &len, &cap);
  if (len && fwrite(buf, 1, len, stdout) != len) surge_runtime_error("decode: writing standard output failed");
  free(buf);
  ids_free(&ids);
  bpe_free(b);
}

int main(int argc, char **argv) {
  surge_stdout_by_lines();
  MPI_Init(&argc, &argv);
  args_t a;
  parse(argc, argv, &a);
  if (!strcmp(a.cmd, "train")) cmd_train(&a);
  else if (!strcmp(a.cmd, "encode")) cmd_encode(&a);
  else if (!strcmp(a.cmd, "decode")) cmd_decode(&a);
  else surge_input_error("unknown command '%s': train, encode or decode (try --help)", a.cmd);
  free(a.paths);
  if (fflush(stdout) != 0) surge_runtime_error("writing standard output failed");
  MPI_Finalize();
  return 0;
}
