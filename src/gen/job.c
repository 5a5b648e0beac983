#include "gen/job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gen/engine.h"
#include "gen/generate.h"
#include "gen/model.h"
#include "gen/source.h"
#include "gen/vocab.h"
#include "io/deck.h"
#include "io/options.h"
#include "io/weights.h"
#include "nn/model.h"

/* The model and its vocabulary, as the file and the deck say. */
typedef struct loaded {
  config_t cfg;
  deck_t *deck;
  gen_vocab_t vocab;
  gen_model_t m;
} loaded_t;

static void load(const gen_job_opts_t *o, loaded_t *L) {
  gen_source_t src = {0};
  if (o->model) gen_source_read(o->model, &src);
  char *text = NULL;
  const char *where = o->deck;
  if (o->deck) {
    text = deck_read_file(o->deck);
  } else if (src.deck) {
    text = xstrdup(src.deck);
    where = o->model;
  } else if (o->model) {
    surge_input_error("%s holds no deck describing its model: give the deck with --deck DECK", o->model);
  } else {
    surge_input_error("no model: give a model file, or --deck DECK with --init SEED (try --help)");
  }
  deck_parse(text, where, o->noverrides, o->overrides, &L->cfg, &L->deck);
  free(text);
  gen_vocab_open(&L->vocab, &L->cfg, L->deck, src.vocab);
  gen_model_build(&L->m, &L->cfg, L->deck, L->vocab.classes);
  if (o->has_init) graph_init_params(&L->m.g, o->init_seed, L->m.params);
  else weights_read(o->model, &L->m.g, L->m.params);
  gen_source_free(&src);
}

/* Prompt p as ids, checked against the vocabulary and the context. */
static void prompt_ids(const gen_job_opts_t *o, const loaded_t *L, int p, ids_t *out) {
  const gen_prompt_t *g = &o->prompts[p];
  if (g->text) {
    gen_vocab_encode(&L->vocab, (const uint8_t *)g->text, strlen(g->text), out);
  } else {
    for (const char *s = g->ids; *s;) {
      if (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') {
        s++;
        continue;
      }
      char *end;
      errno = 0;
      long long v = strtoll(s, &end, 10);
      if (end == s || errno || (*end && !strchr(" ,\t\n", *end)))
        surge_input_error("--ids of prompt %d: '%.20s' is not a token id (hint: ids are whole numbers separated by "
                          "spaces or commas)", p + 1, s);
      if (v < 0 || v >= L->vocab.classes)
        surge_input_error("--ids of prompt %d: id %lld is not in the model's vocabulary 0..%d", p + 1, v,
                          L->vocab.classes - 1);
      ids_push(out, (uint32_t)v);
      s = end;
    }
  }
  int T = L->m.context;
  if (out->n == 0) surge_input_error("prompt %d is empty (hint: generation continues at least one token)", p + 1);
  if (out->n > (size_t)T)
    surge_input_error("prompt %d has %zu tokens, more than the model's context of %d", p + 1, out->n, T);
  if (out->n + (size_t)o->tokens > (size_t)T)
    surge_input_error("prompt %d has %zu tokens: with --tokens %d the sample needs %zu positions, but the model's "
                      "context is %d (hint: fewer --tokens, or a shorter prompt)", p + 1, out->n, o->tokens,
                      out->n + (size_t)o->tokens, T);
}

/* Print sample j's tokens out[0..n) (the prompt's first len of them). */
static void print_sample(const gen_job_opts_t *o, const gen_vocab_t *v, int j, int total, const int *out, int n) {
  if (total > 1) printf("--- sample %d (prompt %d)\n", j + 1, j / o->samples + 1);
  uint32_t *ids = xcalloc((size_t)n, sizeof *ids);
  for (int i = 0; i < n; i++) ids[i] = (uint32_t)out[i];
  if (o->print_ids || !gen_vocab_has_text(v)) {
    for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", out[i]);
  } else if (o->escape) {
    char *text = gen_vocab_printable(v, ids, (size_t)n);
    fputs(text, stdout);
    free(text);
  } else {
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    gen_vocab_decode(v, ids, (size_t)n, &buf, &len, &cap);
    if (len && fwrite(buf, 1, len, stdout) != len) surge_runtime_error("writing standard output failed");
    free(buf);
  }
  free(ids);
  printf("\n");
}

/* What one rank's engine did, for the summary line (the job's: the slowest rank's seconds, any rank's
 * bfloat16, the largest cache). */
typedef struct local_run {
  gen_stats_t st;
  double secs;
  int half[2];      /* the engine read a bfloat16 copy of the weights; held its cache in bfloat16 */
  double cache_mib; /* its key/value cache */
} local_run_t;

/* Samples [lo, lo + B) of the job on this rank's engine (sample j: prompt j / o->samples, random stream
 * j), each written into own one after another: its prompt's ids, then the new tokens. */
static local_run_t run_samples(const gen_job_opts_t *o, loaded_t *L, const backend_t *be, const ids_t *prompts,
                               int lo, int B, int *own, uint64_t seed) {
  local_run_t r = {0};
  const int **pr = xcalloc((size_t)B, sizeof *pr);
  int **out = xcalloc((size_t)B, sizeof *out);
  uint64_t *stream = xcalloc((size_t)B, sizeof *stream);
  int *pid = xcalloc((size_t)B, sizeof *pid);
  for (int s = 0, at = 0; s < B; s++) {
    const ids_t *p = &prompts[(lo + s) / o->samples];
    pid[s] = (int)p->n; /* the prompt's ids as int */
    int *copy = xcalloc(p->n, sizeof *copy);
    for (size_t i = 0; i < p->n; i++) copy[i] = (int)p->v[i];
    pr[s] = copy;
    out[s] = own + at;
    stream[s] = (uint64_t)(lo + s);
    at += pid[s] + o->tokens;
  }
  int longest = 0; /* the engine holds the positions its steps reach: the longest prompt and the new tokens */
  for (int s = 0; s < B; s++) longest = pid[s] > longest ? pid[s] : longest;
  gen_engine_t *e = gen_engine_open(o->engine, &L->m, be, B, longest + o->tokens);
  r.half[0] = e->weights16, r.half[1] = e->kv16;
  r.cache_mib = (double)e->cache_bytes / 1048576.0;
  gen_batch_t batch = {.B = B, .prompt = pr, .len = pid, .stream = stream, .out = out};
  r.st = gen_run(e, &batch, o->tokens, L->m.context, L->vocab.classes, &o->pick, seed);
  e->free(e);
  for (int s = 0; s < B; s++) free((void *)pr[s]);
  free(pr), free(out), free(stream), free(pid);
  return r;
}

/* Rank 0: every sample (tokens: the total samples' ids one after another, sample j's len[j] +
 * o->tokens of them), then the job's line of speed and engine on stderr. */
static void print_all(const gen_job_opts_t *o, const loaded_t *L, const backend_t *be, long total, const int *len,
                      const int *tokens, const local_run_t *r, int size) {
  for (long j = 0, at = 0; j < total; j++) {
    print_sample(o, &L->vocab, (int)j, (int)total, tokens + at, len[j] + o->tokens);
    at += len[j] + o->tokens;
  }
  if (fflush(stdout) != 0) surge_runtime_error("writing standard output failed");
  const long made = total * o->tokens;
  const double mib = r->cache_mib, secs = r->secs;
  char how[96] = "no cache"; /* the cache's size: the largest rank's */
  if (!strcmp(o->engine, "cache"))
    snprintf(how, sizeof how, "key/value cache of %.1f %s%s%s", mib < 1.0 ? mib * 1024.0 : mib,
             mib < 1.0 ? "KiB" : "MiB", size > 1 ? " a rank at most" : "", r->half[1] ? " in bfloat16" : "");
  const int threads = backend_deck(&L->cfg)->threads;
  fprintf(stderr,
          "surge-sample: %ld samples x %d new tokens in %.3f s: %.1f tokens/s (%s%s, %s backend, %d rank%s x "
          "%d thread%s)\n", total, o->tokens, secs, secs > 0 ? (double)made / secs : 0.0, how,
          r->half[0] ? ", weights read as bfloat16" : "", be->name, size, size > 1 ? "s" : "", threads,
          threads > 1 ? "s" : "");
}

void gen_job_run(const gen_job_opts_t *o, MPI_Comm job) {
  int rank, size;
  MPI_Comm_rank(job, &rank);
  MPI_Comm_size(job, &size);
  loaded_t L = {0};
  load(o, &L);
  int np = o->nprompts, own_default = 0;
  gen_prompt_t eot = {0};
  char eot_id[16];
  if (np == 0 && L.vocab.bpe && L.vocab.bpe->eot >= 0) { /* unconditional: start from end-of-text */
    snprintf(eot_id, sizeof eot_id, "%d", L.vocab.bpe->eot);
    eot.ids = eot_id;
    np = 1, own_default = 1;
  }
  if (np == 0) surge_input_error("no prompt: give --prompt TEXT or --ids \"ID ...\" (try --help)");
  ids_t *prompts = xcalloc((size_t)np, sizeof *prompts);
  for (int p = 0; p < np; p++) {
    gen_job_opts_t one = *o;
    if (own_default) one.prompts = &eot;
    prompt_ids(&one, &L, p, &prompts[p]);
  }

  /* samples [lo, hi) on this rank */
  long total = (long)np * o->samples;
  if (total > 1 << 20) surge_input_error("%ld samples are too many (at most %d)", total, 1 << 20);
  int lo = (int)(total * rank / size), hi = (int)(total * (rank + 1) / size), B = hi - lo;
  backend_options_t bo = backend_opts_of(&L.cfg, 0);
  const backend_t *be = backend_open_of(&L.cfg, L.deck, &bo, job);
  uint64_t seed = o->has_seed ? o->seed : L.cfg.seed;
  int *len = xcalloc((size_t)total, sizeof *len), *counts = xcalloc((size_t)size, sizeof *counts);
  int *displs = xcalloc((size_t)size, sizeof *displs);
  long all = 0;
  for (long j = 0; j < total; j++) {
    len[j] = (int)prompts[j / o->samples].n;
    all += len[j] + o->tokens;
  }
  if (all > INT32_MAX) surge_input_error("the samples hold %ld tokens, too many for one job", all);
  for (int r = 0, at = 0; r < size; r++) {
    displs[r] = at;
    for (long j = total * r / size; j < total * (r + 1) / size; j++) counts[r] += len[j] + o->tokens;
    at += counts[r];
  }
  int *tokens = xcalloc((size_t)all, sizeof *tokens); /* every sample's ids, in sample order */
  local_run_t r = {0};
  if (B > 0) r = run_samples(o, &L, be, prompts, lo, B, tokens + displs[rank], seed);
  MPI_Gatherv(rank == 0 ? MPI_IN_PLACE : tokens + displs[rank], counts[rank], MPI_INT, tokens, counts, displs,
              MPI_INT, 0, job);
  r.secs = r.st.seconds;
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &r.secs, &r.secs, 1, MPI_DOUBLE, MPI_MAX, 0, job);
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : r.half, r.half, 2, MPI_INT, MPI_MAX, 0, job); /* any rank's engine */
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &r.cache_mib, &r.cache_mib, 1, MPI_DOUBLE, MPI_MAX, 0, job); /* the largest */
  if (rank == 0) print_all(o, &L, be, total, len, tokens, &r, size);
  free(tokens), free(len), free(counts), free(displs);
  for (int p = 0; p < np; p++) ids_free(&prompts[p]);
  free(prompts);
  gen_vocab_free(&L.vocab);
  gen_model_free(&L.m);
  deck_free(L.deck);
}
