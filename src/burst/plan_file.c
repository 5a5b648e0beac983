/* Plan files: text a person can read and diff.
 *
 *   surge-burst-plan 2
 *   model vgg-mini
 *   fingerprint 5e0c2b7a11d3f0e4
 *   nodes 23
 *   ranks 8
 *   global_batch 256
 *   amplification 2            (or "none")
 *   predicted_iteration_us 1234.5   (the three predictions: all or none)
 *   predicted_rank_us 8765.4
 *   one_rank_us 5432.1
 *   predicted_for 9c1e0a4b7d2f3e51  (a hash of the node lines the predictions are for)
 *   # node name ranks first batch
 *   0 input 8 0 32
 *   ...
 *   end
 *
 * '#' starts a comment. The reader checks everything against the run (model, graph fingerprint,
 * ranks, global batch, node names, rank ranges inside the job, batch = ceil(global_batch/ranks),
 * predictions positive and finite with rank-time at least the iteration time) and stops at the
 * first problem with an input error naming file:line. Node lines edited after the predictions were
 * made (their hash is not predicted_for) keep the plan and drop the predictions, which were for
 * other rank sets (burst_plan_t.stale_predictions_line; a file without predicted_for is taken as it
 * says). Format 1 (no prediction keys; its "# predicted:" comment is only a comment) is still read. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan.h"
#include "burst/textio.h"
#include "core/error.h"

#define PLAN_FORMAT_VERSION 2
#define PLAN_VALUE_MAX 128

/* FNV-1a over every node's rank count and first rank (4 bytes each, little-endian): what the
 * predictions of a plan file are for. */
static uint64_t node_lines_hash(const burst_plan_t *plan) {
  uint64_t h = 0xcbf29ce484222325u;
  for (int v = 0; v < plan->nodes; v++) {
    const uint32_t words[2] = {(uint32_t)plan->n[v], (uint32_t)plan->first[v]};
    for (int w = 0; w < 2; w++)
      for (int i = 0; i < 4; i++) h = (h ^ ((words[w] >> (8 * i)) & 0xffu)) * 0x100000001b3u;
  }
  return h;
}

void burst_plan_fwrite_bg(FILE *f, const char *path, const bgraph_t *g, const burst_plan_t *plan) {
  if (plan->nodes != g->n) surge_input_error("burst plan has %d nodes, the model graph %d", plan->nodes, g->n);
  if (!g->model[0] || strpbrk(g->model, " \t\r\n#"))
    surge_input_error("plan file %s: model name '%s' must be one word", path, g->model);
  for (int v = 0; v < g->n; v++)
    if (!g->v[v].name[0] || strpbrk(g->v[v].name, " \t\r\n#"))
      surge_input_error("plan file %s: node %d name '%s' must be one word without '#'", path, v, g->v[v].name);
  fprintf(f, "surge-burst-plan %d\nmodel %s\nfingerprint %016" PRIx64 "\nnodes %d\nranks %d\nglobal_batch %d\n",
          PLAN_FORMAT_VERSION, g->model, g->fingerprint, g->n, plan->ranks, plan->batch);
  if (isinf(plan->amp_limit))
    fprintf(f, "amplification none\n");
  else
    fprintf(f, "amplification %.17g\n", plan->amp_limit);
  if (plan->one_rank_us > 0)
    fprintf(f, "predicted_iteration_us %.17g\npredicted_rank_us %.17g\none_rank_us %.17g\npredicted_for %016" PRIx64
            "\n", plan->iter_us, plan->rank_us, plan->one_rank_us, node_lines_hash(plan));
  fprintf(f, "# node name ranks first batch\n");
  for (int v = 0; v < g->n; v++)
    fprintf(f, "%d %s %d %d %d\n", v, g->v[v].name, plan->n[v], plan->first[v], burst_per_rank(plan->batch, plan->n[v]));
  fprintf(f, "end\n");
}

void burst_plan_write_bg(const char *path, const bgraph_t *g, const burst_plan_t *plan) {
  FILE *f = fopen(path, "w");
  if (!f) surge_runtime_error("cannot write plan file %s: %s", path, strerror(errno));
  burst_plan_fwrite_bg(f, path, g, plan);
  int failed = ferror(f);
  if (fclose(f) != 0 || failed) surge_runtime_error("cannot write plan file %s: %s", path, strerror(errno));
}

enum { KEY_MODEL, KEY_FINGERPRINT, KEY_NODES, KEY_RANKS, KEY_BATCH, KEY_AMP, KEY_REQUIRED,
       KEY_ITER = KEY_REQUIRED, KEY_RANK_US, KEY_ONE_RANK, KEY_PREDICTED_END, KEY_PREDICTED_FOR = KEY_PREDICTED_END,
       KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"model", "fingerprint", "nodes", "ranks", "global_batch",
                                                 "amplification", "predicted_iteration_us", "predicted_rank_us",
                                                 "one_rank_us", "predicted_for"};

static double parse_positive(const tin_t *r, const char *what, const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || !(v > 0))
    tin_error(r, "%s '%s' must be a positive finite number of microseconds", what, s);
  return v;
}

/* The three predictions: all or none (format 2), positive, rank-time at least the iteration time;
 * predicted_for only beside them. */
static void check_predictions(tin_t *r, char val[KEY_COUNT][PLAN_VALUE_MAX], const int *line_of,
                              int version, burst_plan_t *plan) {
  int given = 0;
  for (int k = KEY_ITER; k < KEY_PREDICTED_END; k++) given += line_of[k] != 0;
  tin_t at = *r;
  if (!given && line_of[KEY_PREDICTED_FOR]) {
    at.line = line_of[KEY_PREDICTED_FOR];
    tin_error(&at, "'predicted_for' names the node lines the predictions are for, but the file has no predictions");
  }
  if (!given) return;
  for (int k = KEY_ITER; k < KEY_COUNT; k++)
    if (line_of[k]) at.line = line_of[k];
  if (version < 2) tin_error(&at, "'%s' is a format 2 key; this file says format %d", key_names[KEY_ITER], version);
  for (int k = KEY_ITER; k < KEY_PREDICTED_END; k++)
    if (!line_of[k])
      tin_error(&at, "the predictions come as three keys (predicted_iteration_us, predicted_rank_us, "
                      "one_rank_us) or not at all; '%s' is missing", key_names[k]);
  at.line = line_of[KEY_ITER];
  double iter = parse_positive(&at, key_names[KEY_ITER], val[KEY_ITER]);
  at.line = line_of[KEY_RANK_US];
  double rank = parse_positive(&at, key_names[KEY_RANK_US], val[KEY_RANK_US]);
  if (rank < iter * (1 - 1e-9))
    tin_error(&at, "predicted_rank_us %g is below predicted_iteration_us %g (every node runs on at least one rank)",
               rank, iter);
  at.line = line_of[KEY_ONE_RANK];
  double one = parse_positive(&at, key_names[KEY_ONE_RANK], val[KEY_ONE_RANK]);
  plan->iter_us = iter;
  plan->rank_us = rank;
  plan->one_rank_us = one;
}

/* Check the header keys against the run once they are all read. */
static void check_header(tin_t *r, char val[KEY_COUNT][PLAN_VALUE_MAX], const int *line_of, int version,
                         const bgraph_t *g, const burst_opts_t *o, burst_plan_t *plan) {
  for (int k = 0; k < KEY_REQUIRED; k++)
    if (!line_of[k]) tin_error(r, "missing '%s' before the node lines", key_names[k]);
  tin_t at = *r;
  at.line = line_of[KEY_MODEL];
  if (strcmp(val[KEY_MODEL], g->model) != 0)
    tin_error(&at, "plan is for model '%s', this run's model is '%s'", val[KEY_MODEL], g->model);
  at.line = line_of[KEY_FINGERPRINT];
  char *end;
  errno = 0;
  uint64_t fp = strtoull(val[KEY_FINGERPRINT], &end, 16);
  if (errno || *end || end == val[KEY_FINGERPRINT]) tin_error(&at, "fingerprint '%s' is not hexadecimal", val[KEY_FINGERPRINT]);
  if (fp != g->fingerprint)
    tin_error(&at, "plan was made for another '%s' graph (fingerprint %016" PRIx64 ", this graph %016" PRIx64
               "): make a new plan for this model",
               g->model, fp, g->fingerprint);
  at.line = line_of[KEY_NODES];
  long nodes = tin_long(&at, "nodes", val[KEY_NODES], 1, 1L << 30);
  if (nodes != g->n) tin_error(&at, "plan has %ld nodes, the model graph has %d", nodes, g->n);
  at.line = line_of[KEY_RANKS];
  long ranks = tin_long(&at, "ranks", val[KEY_RANKS], 1, 1L << 30);
  if (ranks != o->ranks)
    tin_error(&at, "plan is for %ld ranks, the job has %d ranks: make a plan for %d ranks", ranks, o->ranks, o->ranks);
  at.line = line_of[KEY_BATCH];
  long batch = tin_long(&at, "global_batch", val[KEY_BATCH], 1, 1L << 30);
  if (batch != o->batch)
    tin_error(&at, "plan is for global batch %ld, this run's global batch is %d", batch, o->batch);
  at.line = line_of[KEY_AMP];
  if (strcmp(val[KEY_AMP], "none") == 0)
    plan->amp_limit = BURST_NO_LIMIT;
  else {
    errno = 0;
    plan->amp_limit = strtod(val[KEY_AMP], &end);
    if (errno || *end || end == val[KEY_AMP] || !(plan->amp_limit >= 1) || isinf(plan->amp_limit))
      tin_error(&at, "amplification '%s' must be a number >= 1 or 'none'", val[KEY_AMP]);
  }
  check_predictions(r, val, line_of, version, plan);
}

/* Predictions made for other node lines (edited by hand since) are dropped: the plan stays, its
 * predictions 0 as in a file without them, and stale_predictions_line says why. */
static void check_predicted_for(tin_t *r, const char *value, int line, burst_plan_t *plan) {
  tin_t at = *r;
  at.line = line;
  char *end;
  errno = 0;
  uint64_t h = strtoull(value, &end, 16);
  if (errno || *end || end == value) tin_error(&at, "predicted_for '%s' is not hexadecimal", value);
  if (h == node_lines_hash(plan)) return;
  plan->iter_us = plan->rank_us = plan->one_rank_us = 0;
  plan->stale_predictions_line = line;
}

static void read_node(tin_t *r, const bgraph_t *g, const burst_opts_t *o, int v, burst_plan_t *plan) {
  if (r->nword != 5) tin_error(r, "expected 'node name ranks first batch' for node %d, got %d words", v, r->nword);
  long idx = tin_long(r, "node", r->word[0], 0, g->n - 1);
  if (idx != v) tin_error(r, "expected node %d, found node %ld (node lines go in order)", v, idx);
  const char *name = g->v[v].name;
  if (strcmp(r->word[1], name) != 0)
    tin_error(r, "node %d is '%s' in the plan but '%s' in the model graph", v, r->word[1], name);
  long n = tin_long(r, "ranks", r->word[2], 1, 1L << 30);
  long first = tin_long(r, "first rank", r->word[3], 0, 1L << 30);
  if (first + n > o->ranks)
    tin_error(r, "node %d '%s' uses ranks %ld..%ld but the job has %d ranks (0..%d)", v, name, first, first + n - 1,
               o->ranks, o->ranks - 1);
  if (n > o->batch) tin_error(r, "node %d '%s' has %ld ranks, more than the global batch %d", v, name, n, o->batch);
  long b = tin_long(r, "batch", r->word[4], 1, 1L << 30);
  if (b != burst_per_rank(o->batch, (int)n))
    tin_error(r, "node %d '%s': per-rank batch %ld, but %ld ranks of a global batch of %d hold %d", v, name, b, n,
               o->batch, burst_per_rank(o->batch, (int)n));
  plan->n[v] = (int)n;
  plan->first[v] = (int)first;
  plan->per_rank[v] = (int)b;
}

static int same_set(const burst_plan_t *pl, int u, int v) {
  return pl->n[u] == pl->n[v] && pl->first[u] == pl->first[v];
}

/* What no run may split (bgraph.h), each error at the plan's line of the node that breaks it: a tied
 * weight's users on one rank set (the executor sums its gradient within one set), and a recomputed
 * segment (its last node's backward re-runs the others' forwards on its own ranks). A fused pair may
 * be split: the executor then runs the two apart. */
static void check_unsplit(const char *path, const bgraph_t *g, const burst_plan_t *pl, const int *line) {
  for (int v = 1; v < g->n; v++) {
    const bgraph_node_t *x = &g->v[v];
    int o = x->weight_of;
    if (o && !same_set(pl, v, o))
      tin_error_at(path, line[v], "node %d '%s' shares its weight with node %d '%s' but runs on ranks %d..%d, not "
                   "%d..%d (hint: give both nodes the same rank set; the executor does not sum a tied weight's "
                   "gradient across two sets)", v, x->name, o, g->v[o].name, pl->first[v],
                   pl->first[v] + pl->n[v] - 1, pl->first[o], pl->first[o] + pl->n[o] - 1);
    for (int u = x->recompute_from; u > 0 && u < v; u++)
      if (!same_set(pl, u, v))
        tin_error_at(path, line[u], "node %d '%s' is in the recomputed segment '%s' .. '%s', which runs on one rank "
                     "set, but runs on ranks %d..%d, not %d..%d (hint: give the segment's nodes one rank set, or "
                     "[train] recompute = none)", u, g->v[u].name, g->v[x->recompute_from].name, x->name,
                     pl->first[u], pl->first[u] + pl->n[u] - 1, pl->first[v], pl->first[v] + pl->n[v] - 1);
  }
}

void burst_plan_read_bg(const char *path, const bgraph_t *g, const burst_opts_t *o, burst_plan_t *plan) {
  tin_t r;
  tin_open(&r, path);
  if (!tin_next(&r)) tin_error(&r, "empty file, not a surge burst plan");
  if (r.nword != 2 || strcmp(r.word[0], "surge-burst-plan") != 0)
    tin_error(&r, "not a surge burst plan (the first line must be 'surge-burst-plan %d')", PLAN_FORMAT_VERSION);
  long version = tin_long(&r, "format version", r.word[1], 0, 1L << 30);
  if (version < 1 || version > PLAN_FORMAT_VERSION)
    tin_error(&r, "plan format version %ld; this surge reads versions 1 to %d", version, PLAN_FORMAT_VERSION);

  char val[KEY_COUNT][PLAN_VALUE_MAX];
  int line_of[KEY_COUNT] = {0};
  burst_plan_alloc(plan, g->n, o);
  int v = 0, header_done = 0, ended = 0, *line = xcalloc((size_t)g->n, sizeof *line); /* [node] its line */
  while (tin_next(&r)) {
    if (ended) tin_error(&r, "text after 'end'");
    if (strcmp(r.word[0], "end") == 0 && r.nword == 1) {
      if (!header_done) check_header(&r, val, line_of, (int)version, g, o, plan);
      if (v < g->n) tin_error(&r, "'end' after %d of %d node lines", v, g->n);
      ended = 1;
      continue;
    }
    int k = 0;
    while (k < KEY_COUNT && strcmp(r.word[0], key_names[k]) != 0) k++;
    if (k < KEY_COUNT) {
      if (header_done) tin_error(&r, "'%s' after the node lines", key_names[k]);
      if (line_of[k]) tin_error(&r, "'%s' given twice (first on line %d)", key_names[k], line_of[k]);
      if (r.nword != 2) tin_error(&r, "expected '%s VALUE'", key_names[k]);
      if (strlen(r.word[1]) >= PLAN_VALUE_MAX) tin_error(&r, "the value of '%s' is too long", key_names[k]);
      snprintf(val[k], sizeof val[k], "%s", r.word[1]);
      line_of[k] = r.line;
      continue;
    }
    if (r.word[0][0] < '0' || r.word[0][0] > '9')
      tin_error(&r, "unknown key '%s' (expected one of model, fingerprint, nodes, ranks, global_batch, "
                     "amplification, predicted_iteration_us, predicted_rank_us, one_rank_us, predicted_for, a node "
                     "line or 'end')",
                 r.word[0]);
    if (!header_done) {
      check_header(&r, val, line_of, (int)version, g, o, plan);
      header_done = 1;
    }
    if (v == g->n) tin_error(&r, "more node lines than the graph's %d nodes", g->n);
    line[v] = r.line;
    read_node(&r, g, o, v++, plan);
  }
  if (!ended) tin_error(&r, "file ends after %d of %d node lines without 'end' (truncated?)", v, g->n);
  check_unsplit(path, g, plan, line);
  if (line_of[KEY_PREDICTED_FOR]) check_predicted_for(&r, val[KEY_PREDICTED_FOR], line_of[KEY_PREDICTED_FOR], plan);
  free(line);
  tin_close(&r);
  plan->ranks = o->ranks;
  plan->batch = o->batch;
}
