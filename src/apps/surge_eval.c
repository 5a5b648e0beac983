/* surge-eval MODEL ...: the loss, perplexity and bits per byte of a gpt on a token set or a text,
 * or its multiple-choice accuracy on a JSONL file (doc/eval.md), split over the ranks of its MPI
 * job. The work lives in src/eval. */
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_open.h"
#include "comm/comm.h"
#include "core/cli.h"
#include "core/error.h"
#include "core/timer.h"
#include "eval/eval.h"
#include "gen/source.h"
#include "gen/vocab.h"
#include "io/outputs.h"
#include "surge_build_config.h"
#include "tok/files.h"
#include "tok/pretok.h"
#include "tok/shard_read.h"

static const char usage[] =
    "usage: surge-eval MODEL (--tokens SHARD | --text FILE | --ids FILE | --choices FILE.jsonl) [options]\n"
    "  MODEL  model.h5, a checkpoint, a safetensors file (config.json beside it) or llm.c's model file of a gpt\n"
    "  --tokens SHARD     an llm.c token shard: loss over windows of the model's context\n"
    "  --text FILE        a text, as bytes (a byte-level model) or encoded by --tokenizer\n"
    "  --ids FILE         token ids, whitespace-separated\n"
    "  --choices FILE     multiple choice, one JSON example a line (doc/eval.md)\n"
    "  --tokenizer DIR    vocab.json + merges.txt: encodes texts, and gives bits per byte for token ids\n"
    "  --context T        tokens per window (default: the model's positions)\n"
    "  --batch B          windows per forward pass (default 8)\n"
    "  --logits OUT       with --ids: write the float32 logits (tokens, vocabulary) of the first window\n"
    "  --backend NAME     cpu (default), cuda or ref (the naive reference)\n"
    "  --threads N        threads per rank (default 1; OpenBLAS's, and in bf16 the cpu's own matrix products)\n"
    "  --precision P      fp32 (default) or bf16: the matrix products' operands in bfloat16, as [backend] precision\n"
    "Exit codes: 0 done, 2 bad input (one line naming the file and line), 1 runtime failure.\n";

typedef struct args {
  const char *model, *tokens, *text, *ids, *choices, *tokenizer, *logits, *backend, *precision;
  long context, batch, threads;
} args_t;

static long whole(const char *opt, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) surge_input_error("%s %s: expected a whole number in [%ld, %ld]", opt, s, lo, hi);
  return v;
}

static void parse(int argc, char **argv, args_t *a) {
  *a = (args_t){.batch = 8, .threads = 1, .backend = "cpu", .precision = "fp32"};
  struct {
    const char *name, **str;
    long *num, lo, hi;
  } opts[] = {{"--tokens", &a->tokens, NULL, 0, 0},        {"--text", &a->text, NULL, 0, 0},
              {"--ids", &a->ids, NULL, 0, 0},              {"--choices", &a->choices, NULL, 0, 0},
              {"--tokenizer", &a->tokenizer, NULL, 0, 0},  {"--logits", &a->logits, NULL, 0, 0},
              {"--backend", &a->backend, NULL, 0, 0},      {"--context", NULL, &a->context, 1, 65536},
              {"--batch", NULL, &a->batch, 1, 4096},       {"--threads", NULL, &a->threads, 1, 1024},
              {"--precision", &a->precision, NULL, 0, 0}};
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    cli_help_or_version(s, argv[0], usage);
    size_t k = 0, n = sizeof opts / sizeof opts[0];
    while (k < n && strcmp(s, opts[k].name)) k++;
    if (k < n) {
      if (i + 1 >= argc) surge_input_error("%s needs a value (try --help)", s);
      if (opts[k].str) *opts[k].str = argv[++i];
      else *opts[k].num = whole(s, argv[++i], opts[k].lo, opts[k].hi);
    } else if (s[0] == '-' && s[1]) {
      surge_input_error("unknown option '%s' (try --help)", s);
    } else if (!a->model) {
      a->model = s;
    } else {
      surge_input_error("'%s': one MODEL only (try --help)", s);
    }
  }
  if (!a->model) surge_input_error("no MODEL given (try --help)");
  int inputs = !!a->tokens + !!a->text + !!a->ids + !!a->choices;
  if (inputs != 1) surge_input_error("give one of --tokens, --text, --ids and --choices (try --help)");
  if (a->logits && !a->ids) surge_input_error("--logits needs --ids");
  if (strcmp(a->precision, "fp32") != 0 && strcmp(a->precision, "bf16") != 0)
    surge_input_error("--precision %s: expected fp32 or bf16", a->precision);
  char vocab[PATH_MAX] = "", merges[PATH_MAX] = "";
  if (a->tokenizer) bpe_dir_files(a->tokenizer, vocab, merges, PATH_MAX);
  const io_path_t in[] = {{"MODEL", a->model},   {"--tokens", a->tokens},      {"--text", a->text},
                          {"--ids", a->ids},     {"--choices", a->choices},    {"--tokenizer's vocab", vocab},
                          {"--tokenizer's merges", merges}};
  const io_output_t out[] = {{"--logits", a->logits, 1, 0}};
  io_outputs_check(in, (int)(sizeof in / sizeof in[0]), out, 1);
}

/* The tokenizer against the model: the one its file records (a Surge model file of token data), and
 * of its vocabulary's size; without one, text is bytes, for a byte-level model only. */
static void check_tokenizer(const args_t *a, const bpe_t *tok, int V) {
  const char *hint = "--tokenizer DIR, the tokenizer the model was trained with (its deck's [data] tokenizer)";
  if (tok) {
    gen_source_t src;
    gen_source_read(a->model, &src);
    gen_vocab_check_recorded(src.vocab, tok->n, "--tokenizer", tok, a->tokenizer, hint);
    /* a Surge file without its vocabulary recorded (older ones) knows only its padded table */
    int padded = !src.vocab || !src.vocab[0];
    gen_source_free(&src);
    if (padded ? tok->n > V : tok->n != V)
      surge_input_error("--tokenizer %s: a vocabulary of %d tokens, the model's is %d (hint: %s)", a->tokenizer, tok->n,
                        V, hint);
  } else if (a->text && V != GEN_BYTE_VOCAB) { /* (--choices: its texts, eval/choice.c) */
    surge_input_error("--text %s: without --tokenizer a text is read as bytes, for a byte-level model (a vocabulary "
                      "of %d), and this model's is %d (hint: %s)", a->text, GEN_BYTE_VOCAB, V, hint);
  }
}

static bpe_t *load_tokenizer(const char *dir) {
  return dir ? bpe_load_dir(dir) : NULL;
}

/* The first window's logits of the ids, (tokens, V), float32, written by rank 0. */
static void write_logits(scorer_t *s, const ids_t *ids, const char *out) {
  size_t n = ids->n < (size_t)s->T ? ids->n : (size_t)s->T;
  int32_t *x = xcalloc((size_t)s->T, sizeof *x);
  for (size_t t = 0; t < n; t++) x[t] = (int32_t)ids->v[t];
  scorer_forward(s, x, 1);
  FILE *f = fopen(out, "wb");
  if (!f) surge_runtime_error("%s: cannot create: %s", out, strerror(errno));
  for (size_t t = 0; t < n; t++)
    if (fwrite(s->logits + t * (size_t)s->d.Vp, sizeof(float), (size_t)s->d.V, f) != (size_t)s->d.V)
      surge_runtime_error("%s: cannot write: %s", out, strerror(errno));
  if (fclose(f) != 0) surge_runtime_error("%s: cannot write: %s", out, strerror(errno));
  free(x);
}

/* The loss, perplexity and bits per byte of the ids (at least 2), printed by rank 0. */
static void report_loss(const args_t *a, scorer_t *s, const bpe_t *tok, const ids_t *ids, comm_t *world, double t0) {
  uint32_t *bytes = NULL; /* bytes per id: the tokenizer's, or one each for bytes */
  if (tok) {
    bytes = xcalloc((size_t)s->d.V, sizeof *bytes);
    for (int i = 0; i < tok->n; i++) bytes[i] = tok->special[i] ? 0 : tok->len[i];
  }
  int known_bytes = tok || a->text || s->d.V == 256;
  eval_lm_t r = eval_stream(s, ids->v, ids->n, bytes, world);
  if (world->rank == 0) {
    double loss = r.nats / (double)r.targets;
    printf("loss %.6f nats/token, perplexity %.4f", loss, exp(loss));
    if (known_bytes && r.bytes > 0) printf(", %.6f bits/byte", r.nats / log(2.0) / r.bytes);
    printf(" over %ld tokens", r.targets);
    if (known_bytes) printf(" (%.0f bytes)", r.bytes);
    printf(" in windows of %d; %.2f s on %d rank%s\n", s->T, surge_now() - t0, world->size,
           world->size == 1 ? "" : "s");
    if (!known_bytes) printf("bits per byte: give --tokenizer (the bytes each token stands for)\n");
  }
  free(bytes);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  args_t a;
  parse(argc, argv, &a);
  comm_t world;
  comm_world(&world);
  backend_options_t bo = backend_default_options();
  bo.local_rank = comm_local_rank(&world);
  bo.precision = strcmp(a.precision, "bf16") == 0 ? BACKEND_BF16 : BACKEND_FP32;
  const backend_t *be = backend_open(a.backend, &bo, "--backend", world.mpi);
  be->set_threads((int)a.threads);
  double t0 = surge_now();
  scorer_t s;
  scorer_open(&s, a.model, be, (int)a.context, (int)a.batch);
  bpe_t *tok = load_tokenizer(a.tokenizer);
  check_tokenizer(&a, tok, s.d.V);
  if (a.choices) {
    eval_choice_t c = eval_choices(&s, a.choices, tok, &world);
    if (world.rank == 0)
      printf("choices %s: %ld examples, accuracy %.4f (sum of log-probabilities), %.4f (mean per token), label "
             "completion %.6f nats on average; %.2f s on %d rank%s\n",
             a.choices, c.examples, (double)c.correct / (double)c.examples, (double)c.correct_norm / (double)c.examples,
             c.label_nats / (double)c.examples, surge_now() - t0, world.size, world.size == 1 ? "" : "s");
  } else {
    ids_t ids = {0};
    if (a.tokens) shard_read_all(a.tokens, (uint32_t)s.d.V, &ids);
    else if (a.ids) ids_read_text(a.ids, (uint32_t)s.d.V, &ids);
    else {
      size_t len;
      unsigned char *text = file_read_all(a.text, (size_t)1 << 32, "a --text file",
                                          "encode it into shards with surge-tokenize and pass --tokens", &len);
      if (tok) {
        pretok_t *p = pretok_new();
        bpe_encode(tok, p, text, len, &ids);
        pretok_free(p);
      } else { /* a byte-level model (check_tokenizer) */
        for (size_t i = 0; i < len; i++) ids_push(&ids, text[i]);
      }
      free(text);
    }
    /* one token has logits (the next token's distribution) but no loss */
    if (ids.n < 2 && !(ids.n == 1 && a.logits))
      surge_input_error("%s %s: %zu token%s: nothing to predict (a loss needs at least 2%s)",
                        a.tokens ? "--tokens" : a.ids ? "--ids" : "--text",
                        a.tokens ? a.tokens : a.ids ? a.ids : a.text, ids.n, ids.n == 1 ? "" : "s",
                        ids.n == 1 && a.ids ? "; --logits writes one token's" : "");
    if (a.logits && world.rank == 0) write_logits(&s, &ids, a.logits);
    if (ids.n >= 2) report_loss(&a, &s, tok, &ids, &world, t0);
    else if (world.rank == 0) printf("logits of 1 token written to %s; no loss (nothing to predict)\n", a.logits);
    ids_free(&ids);
  }
  if (tok) bpe_free(tok);
  scorer_close(&s);
  comm_free(&world);
  MPI_Finalize();
  return 0;
}
