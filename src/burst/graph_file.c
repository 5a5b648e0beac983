/* Graph files (graph_file.h): reading (two passes: the lines, then names resolved and the nodes
 * sorted topologically, stable in file order) and writing. */
#include "burst/graph_file.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/graph_ties.h"
#include "burst/textio.h"
#include "core/error.h"

#define GRAPH_FORMAT_VERSION 1
#define GRAPH_MAX_BATCHES 4096

typedef struct raw_node {
  char name[BGRAPH_NAME_MAX], kind[BGRAPH_KIND_MAX];
  char *inputs; /* the inputs word, malloc'd */
  double out_bytes, param_bytes;
  double *us;   /* [nbatch], NAN where '-' */
  int line;
  int nin, *in; /* resolved: indices into the raw nodes */
} raw_node_t;

/* ---- names ---- */

typedef struct name_table {
  int cap, *slot; /* raw node index + 1, 0 = empty */
} name_table_t;

static unsigned long name_hash(const char *s) {
  unsigned long h = 1469598103934665603UL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211UL;
  return h;
}

static int name_find(const name_table_t *t, const raw_node_t *nodes, const char *name) {
  for (unsigned long x = name_hash(name) & (unsigned long)(t->cap - 1);; x = (x + 1) & (unsigned long)(t->cap - 1)) {
    if (!t->slot[x]) return -1;
    if (strcmp(nodes[t->slot[x] - 1].name, name) == 0) return t->slot[x] - 1;
  }
}

static void names_build(name_table_t *t, const raw_node_t *nodes, int n, const char *path) {
  t->cap = 16;
  while (t->cap < 2 * n) t->cap *= 2;
  t->slot = xcalloc((size_t)t->cap, sizeof *t->slot);
  for (int i = 0; i < n; i++) {
    int dup = name_find(t, nodes, nodes[i].name);
    if (dup >= 0)
      tin_error_at(path, nodes[i].line, "node '%s' is defined twice (first on line %d)", nodes[i].name,
                   nodes[dup].line);
    unsigned long x = name_hash(nodes[i].name) & (unsigned long)(t->cap - 1);
    while (t->slot[x]) x = (x + 1) & (unsigned long)(t->cap - 1);
    t->slot[x] = i + 1;
  }
}

/* ---- reading ---- */

typedef struct header {
  int nbatch, *batch, batch_line;
  char model[64];
  int interpolate;
  burst_net_t net;
  burst_step_costs_t step; /* the rest of a step (burst_profile_t.step); 0 where not given */
  uint64_t fingerprint; /* 0: computed from the nodes */
} header_t;

static const char *const net_keys[4] = {"p2p_alpha_us", "p2p_bytes_per_us", "ar_alpha_us", "ar_bytes_per_us"};

static const char *const step_keys[3] = {"data_us_per_sample", "loss_us_per_sample", "step_us"};

static double *step_field(burst_step_costs_t *s, int k) {
  return k == 0 ? &s->data_us_per_sample : k == 1 ? &s->loss_us_per_sample : &s->step_us;
}

static double *net_field(burst_net_t *net, int k) {
  return k == 0 ? &net->p2p_alpha_us : k == 1 ? &net->p2p_bytes_per_us : k == 2 ? &net->ar_alpha_us
                                                                              : &net->ar_bytes_per_us;
}

/* A header line: 1 when it was one. */
static int header_line(tin_t *t, header_t *h) {
  const char *key = t->word[0];
  if (strcmp(key, "model") == 0) {
    if (t->nword != 2 || strlen(t->word[1]) >= sizeof h->model) tin_error(t, "expected 'model NAME' (one word)");
    snprintf(h->model, sizeof h->model, "%s", t->word[1]);
    return 1;
  }
  if (strcmp(key, "batches") == 0) {
    if (h->batch_line) tin_error(t, "'batches' given twice (first on line %d)", h->batch_line);
    if (t->nword < 2 || t->nword - 1 > GRAPH_MAX_BATCHES)
      tin_error(t, "expected 'batches B1 B2 ...' with 1 to %d per-rank batches", GRAPH_MAX_BATCHES);
    h->nbatch = t->nword - 1;
    h->batch = xmalloc((size_t)h->nbatch * sizeof *h->batch);
    for (int k = 0; k < h->nbatch; k++) {
      h->batch[k] = (int)tin_long(t, "per-rank batch", t->word[k + 1], 1, 1L << 30);
      if (k && h->batch[k] <= h->batch[k - 1]) tin_error(t, "batches must be ascending (%d after %d)", h->batch[k], h->batch[k - 1]);
    }
    h->batch_line = t->line;
    return 1;
  }
  if (strcmp(key, "fingerprint") == 0) {
    char *end;
    if (t->nword != 2) tin_error(t, "expected 'fingerprint HEX'");
    h->fingerprint = strtoull(t->word[1], &end, 16);
    if (*end || end == t->word[1] || !h->fingerprint) tin_error(t, "fingerprint '%s' is not a nonzero hexadecimal number", t->word[1]);
    return 1;
  }
  if (strcmp(key, "interpolate") == 0) {
    if (t->nword != 2 || (strcmp(t->word[1], "linear") != 0 && strcmp(t->word[1], "no") != 0))
      tin_error(t, "expected 'interpolate linear' or 'interpolate no'");
    h->interpolate = strcmp(t->word[1], "linear") == 0;
    return 1;
  }
  for (int k = 0; k < 4; k++)
    if (strcmp(key, net_keys[k]) == 0) {
      if (t->nword != 2) tin_error(t, "expected '%s VALUE'", key);
      /* the bounds burst_net_check applies, here where the line is known */
      *net_field(&h->net, k) = k % 2 ? tin_double(t, key, t->word[1], BURST_MIN_BYTES_PER_US, BURST_MAX_BYTES_PER_US)
                                     : tin_double(t, key, t->word[1], 0, BURST_MAX_LATENCY_US);
      return 1;
    }
  for (int k = 0; k < 3; k++)
    if (strcmp(key, step_keys[k]) == 0) {
      if (t->nword != 2) tin_error(t, "expected '%s VALUE' (microseconds)", key);
      *step_field(&h->step, k) = tin_double(t, key, t->word[1], 0, BURST_MAX_US);
      return 1;
    }
  return 0;
}

static double bytes_word(const tin_t *t, const char *what, const char *s, int structure) {
  if (structure && strcmp(s, "-") == 0) return NAN;
  return tin_double(t, what, s, 0, BGRAPH_MAX_BYTES);
}

static void node_line(tin_t *t, const header_t *h, int structure, raw_node_t *v) {
  int want = 5 + h->nbatch;
  if (t->nword != want && !h->nbatch)
    tin_error(t, "node '%s': %d columns, expected 5: name kind inputs out_bytes param_bytes (no 'batches' line: no "
                 "times)",
              t->word[0], t->nword);
  if (t->nword != want && !(t->nword == 5 && strcmp(t->word[1], "input") == 0))
    tin_error(t, "node '%s': %d columns, expected %d: name kind inputs out_bytes param_bytes and a time for each of the "
                 "%d per-rank batches of line %d ('-' for none)",
              t->word[0], t->nword, want, h->nbatch, h->batch_line);
  const char *name = t->word[0];
  if (strlen(name) >= BGRAPH_NAME_MAX || strpbrk(name, ",#"))
    tin_error(t, "node name '%s': at most %d characters, no ',' or '#'", name, BGRAPH_NAME_MAX - 1);
  if (strlen(t->word[1]) >= BGRAPH_KIND_MAX) tin_error(t, "node '%s': kind '%s' is too long", name, t->word[1]);
  snprintf(v->name, sizeof v->name, "%s", name);
  snprintf(v->kind, sizeof v->kind, "%s", t->word[1]);
  v->inputs = xstrdup(t->word[2]);
  v->out_bytes = bytes_word(t, "out_bytes", t->word[3], structure);
  v->param_bytes = bytes_word(t, "param_bytes", t->word[4], structure);
  v->line = t->line;
  v->us = xmalloc((size_t)(h->nbatch ? h->nbatch : 1) * sizeof *v->us);
  for (int k = 0; k < h->nbatch; k++) {
    const char *w = t->nword > 5 + k ? t->word[5 + k] : "-";
    if (strcmp(w, "-") == 0) {
      v->us[k] = NAN;
      continue;
    }
    char *end;
    double us = strtod(w, &end);
    if (end == w || *end || !isfinite(us) || us < 0 || us > BURST_MAX_US)
      tin_error(t, "node '%s': time '%s' for per-rank batch %d is not a number in [0, %g] (microseconds, or '-' "
                   "for none)",
                name, w, h->batch[k], BURST_MAX_US);
    v->us[k] = us;
  }
}

/* Resolve the inputs of every node. */
static void resolve(raw_node_t *nodes, int n, const char *path) {
  name_table_t t;
  names_build(&t, nodes, n, path);
  for (int i = 0; i < n; i++) {
    raw_node_t *v = &nodes[i];
    v->nin = 0;
    if (strcmp(v->inputs, "-") == 0) {
      v->in = NULL;
      continue;
    }
    int cap = 1;
    for (const char *c = v->inputs; *c; c++) cap += *c == ',';
    if (cap > BGRAPH_MAX_IN) tin_error_at(path, v->line, "node '%s' has %d inputs (at most %d)", v->name, cap, BGRAPH_MAX_IN);
    v->in = xmalloc((size_t)cap * sizeof *v->in);
    char *save = NULL;
    for (char *w = strtok_r(v->inputs, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      int j = name_find(&t, nodes, w);
      if (j < 0)
        tin_error_at(path, v->line, "node '%s' takes input '%s', which no line defines (inputs are node names, "
                                    "comma-separated)",
                     v->name, w);
      if (j == i) tin_error_at(path, v->line, "node '%s' takes itself as input (a cycle)", v->name);
      v->in[v->nin++] = j;
    }
    if (!v->nin) tin_error_at(path, v->line, "node '%s': no inputs in '%s' (use '-' for the input node)", v->name, v->inputs);
  }
  free(t.slot);
}

/* A cycle among the nodes Kahn's sort left (done[i] = 0), reported at its first node's line. */
static _Noreturn void report_cycle(const raw_node_t *nodes, int n, const char *done, const char *path) {
  int start = -1;
  for (int i = 0; i < n && start < 0; i++)
    if (!done[i]) start = i;
  /* walk inputs that are not done until a node repeats: that node is on a cycle */
  int *seen = xcalloc((size_t)n, sizeof *seen), x = start, step = 1;
  while (!seen[x]) {
    seen[x] = step++;
    int next = -1;
    for (int k = 0; k < nodes[x].nin && next < 0; k++)
      if (!done[nodes[x].in[k]]) next = nodes[x].in[k];
    x = next;
  }
  char path_text[400] = "";
  int y = x, used = 0, shown = 0;
  do {
    used += snprintf(path_text + used, sizeof path_text - (size_t)used, "%s%s", shown ? " <- " : "", nodes[y].name);
    int next = -1;
    for (int k = 0; k < nodes[y].nin && next < 0; k++)
      if (!done[nodes[y].in[k]] && seen[nodes[y].in[k]]) next = nodes[y].in[k];
    y = next;
    shown++;
  } while (y != x && y >= 0 && shown < 8 && used < (int)sizeof path_text - 80);
  snprintf(path_text + used, sizeof path_text - (size_t)used, " <- %s%s", nodes[x].name, shown >= 8 ? " ..." : "");
  tin_error_at(path, nodes[x].line, "node '%s' is on a cycle of inputs: %s", nodes[x].name, path_text);
}

/* Topological order, stable in file order (a heap of ready nodes by index). */
static int *topo_order(const raw_node_t *nodes, int n, const char *path) {
  int *pending = xcalloc((size_t)n, sizeof *pending), *order = xmalloc((size_t)n * sizeof *order);
  int *cons_off = xcalloc((size_t)n + 1, sizeof *cons_off);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < nodes[i].nin; k++) cons_off[nodes[i].in[k] + 1]++, pending[i]++;
  for (int i = 0; i < n; i++) cons_off[i + 1] += cons_off[i];
  int *cons = xmalloc((size_t)(cons_off[n] ? cons_off[n] : 1) * sizeof *cons), *fill = xmalloc((size_t)(n + 1) * sizeof *fill);
  memcpy(fill, cons_off, (size_t)(n + 1) * sizeof *fill);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < nodes[i].nin; k++) cons[fill[nodes[i].in[k]]++] = i;
  int *heap = xmalloc((size_t)n * sizeof *heap), size = 0, done_n = 0;
  char *done = xcalloc((size_t)n, 1);
  for (int i = 0; i < n; i++)
    if (!pending[i]) heap[size++] = i; /* ascending already: a valid heap */
  while (size) {
    int x = heap[0];
    heap[0] = heap[--size];
    for (int p = 0;;) { /* sift down */
      int l = 2 * p + 1, m = p;
      if (l < size && heap[l] < heap[m]) m = l;
      if (l + 1 < size && heap[l + 1] < heap[m]) m = l + 1;
      if (m == p) break;
      int s = heap[p];
      heap[p] = heap[m];
      heap[m] = s;
      p = m;
    }
    order[done_n++] = x;
    done[x] = 1;
    for (int e = cons_off[x]; e < cons_off[x + 1]; e++)
      if (--pending[cons[e]] == 0) { /* sift up */
        int c = size++;
        heap[c] = cons[e];
        while (c && heap[(c - 1) / 2] > heap[c]) {
          int s = heap[c];
          heap[c] = heap[(c - 1) / 2];
          heap[(c - 1) / 2] = s;
          c = (c - 1) / 2;
        }
      }
  }
  if (done_n < n) report_cycle(nodes, n, done, path);
  /* one input and one output */
  int input = -1, output = -1;
  for (int i = 0; i < n; i++) {
    if (nodes[i].nin == 0) {
      if (strcmp(nodes[i].kind, "input") != 0)
        tin_error_at(path, nodes[i].line, "node '%s' has no inputs but kind '%s': only the input node (kind input) "
                                          "takes none",
                     nodes[i].name, nodes[i].kind);
      if (input >= 0)
        tin_error_at(path, nodes[i].line, "a second input node '%s' (the first is '%s' on line %d)", nodes[i].name,
                     nodes[input].name, nodes[input].line);
      input = i;
    } else if (strcmp(nodes[i].kind, "input") == 0) {
      tin_error_at(path, nodes[i].line, "node '%s' of kind input has inputs", nodes[i].name);
    }
    if (cons_off[i] == cons_off[i + 1]) {
      if (output >= 0)
        tin_error_at(path, nodes[i].line, "no node uses the output of '%s', nor of '%s' (line %d): a graph has one "
                                          "output",
                     nodes[i].name, nodes[output].name, nodes[output].line);
      output = i;
    }
  }
  if (input < 0) surge_input_error("%s: no input node (a node of kind input with inputs '-')", path);
  free(done);
  free(heap);
  free(fill);
  free(cons);
  free(cons_off);
  free(pending);
  return order;
}

void graph_file_read(const char *path, int structure, bgraph_t *g, burst_profile_t *p) {
  tin_t t;
  tin_open(&t, path);
  if (!tin_next(&t) || t.nword != 2 || strcmp(t.word[0], "surge-graph") != 0)
    tin_error(&t, "not a surge graph file (the first line must be 'surge-graph %d')", GRAPH_FORMAT_VERSION);
  long version = tin_long(&t, "format version", t.word[1], 0, 1L << 30);
  if (version != GRAPH_FORMAT_VERSION)
    tin_error(&t, "graph format version %ld; this surge reads version %d", version, GRAPH_FORMAT_VERSION);
  header_t h = {.net = {BURST_NET_UNSET, BURST_NET_UNSET, BURST_NET_UNSET, BURST_NET_UNSET}};
  const char *base = strrchr(path, '/');
  snprintf(h.model, sizeof h.model, "%s", base ? base + 1 : path);
  char *dot = strchr(h.model, '.');
  if (dot && dot != h.model) *dot = '\0';
  raw_node_t *nodes = NULL;
  graph_ties_t ties = {0};
  int n = 0, cap = 0, ended = 0;
  while (tin_next(&t)) {
    if (ended) tin_error(&t, "text after 'end'");
    if (strcmp(t.word[0], "end") == 0 && t.nword == 1) {
      ended = 1;
      continue;
    }
    if (header_line(&t, &h)) {
      if (n) tin_error(&t, "'%s' after the node lines (header keys come first)", t.word[0]);
      continue;
    }
    if (graph_ties_line(&t, &ties)) continue; /* applied once the nodes are in order */
    if (!structure && !h.batch_line) tin_error(&t, "node line before 'batches B1 B2 ...' (the per-rank batches of the time columns)");
    if (n == BGRAPH_MAX_NODES) tin_error(&t, "more than %d nodes", BGRAPH_MAX_NODES);
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      nodes = xrealloc(nodes, (size_t)cap * sizeof *nodes);
    }
    node_line(&t, &h, structure, &nodes[n++]);
  }
  if (!ended) tin_error(&t, "file ends without 'end' (truncated?)");
  if (n < 2) tin_error(&t, "a graph needs an input node and at least one layer (%d node lines)", n);
  tin_close(&t);
  resolve(nodes, n, path);
  int *order = topo_order(nodes, n, path);
  int *pos = xmalloc((size_t)n * sizeof *pos);
  for (int i = 0; i < n; i++) pos[order[i]] = i;
  bgraph_init(g, h.model, path);
  burst_profile_init(p, n, path);
  p->interpolate = h.interpolate;
  p->net = h.net;
  p->step = h.step;
  int *in = xmalloc((size_t)BGRAPH_MAX_IN * sizeof *in);
  for (int i = 0; i < n; i++) {
    const raw_node_t *v = &nodes[order[i]];
    for (int k = 0; k < v->nin; k++) in[k] = pos[v->in[k]];
    bgraph_add(g, v->name, v->kind, v->nin, in, v->out_bytes, v->param_bytes, v->line);
    for (int k = 0; k < h.nbatch; k++)
      if (!isnan(v->us[k])) burst_profile_set(p, i, h.batch[k], v->us[k]);
  }
  graph_ties_apply(&ties, g, path);
  g->fingerprint = h.fingerprint ? h.fingerprint : bgraph_fingerprint(g);
  graph_ties_free(&ties);
  free(in);
  free(pos);
  free(order);
  for (int i = 0; i < n; i++) {
    free(nodes[i].inputs);
    free(nodes[i].us);
    free(nodes[i].in);
  }
  free(nodes);
  free(h.batch);
}

/* ---- writing ---- */

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

void graph_file_write(const char *path, const bgraph_t *g, const burst_profile_t *p) {
  FILE *f = fopen(path, "w");
  if (!f) surge_runtime_error("cannot write graph file %s: %s", path, strerror(errno));
  /* the union of the rows' batches */
  int nb = 0, cap = 16, *b = xmalloc((size_t)cap * sizeof *b);
  for (int v = 0; v < p->nodes; v++)
    for (int k = 0; k < p->row[v].n; k++) {
      if (nb == cap) b = xrealloc(b, (size_t)(cap *= 2) * sizeof *b);
      b[nb++] = p->row[v].batch[k];
    }
  qsort(b, (size_t)nb, sizeof *b, cmp_int);
  int m = 0;
  for (int k = 0; k < nb; k++)
    if (!m || b[k] != b[m - 1]) b[m++] = b[k];
  fprintf(f, "surge-graph %d\nmodel %s\n", GRAPH_FORMAT_VERSION, g->model);
  if (g->fingerprint != bgraph_fingerprint(g)) /* a model graph's: its plan files name it */
    fprintf(f, "fingerprint %016llx\n", (unsigned long long)g->fingerprint);
  if (m) {
    fprintf(f, "batches");
    for (int k = 0; k < m; k++) fprintf(f, " %d", b[k]);
    fprintf(f, "\n");
  }
  if (p->interpolate) fprintf(f, "interpolate linear\n");
  burst_net_t net = p->net;
  for (int k = 0; k < 4; k++)
    if (!isnan(*net_field(&net, k))) fprintf(f, "%s %.17g\n", net_keys[k], *net_field(&net, k));
  burst_step_costs_t step = p->step;
  for (int k = 0; k < 3; k++)
    if (*step_field(&step, k) > 0) fprintf(f, "%s %.17g\n", step_keys[k], *step_field(&step, k));
  fprintf(f, "# name kind inputs out_bytes param_bytes%s\n", m ? " us@batch..." : "");
  for (int v = 0; v < g->n; v++) {
    const bgraph_node_t *x = &g->v[v];
    fprintf(f, "%s %s ", x->name, x->kind);
    if (!x->nin) fprintf(f, "-");
    for (int k = 0; k < x->nin; k++) fprintf(f, "%s%s", k ? "," : "", g->v[x->in[k]].name);
    fprintf(f, " %.17g %.17g", x->act_bytes, x->grad_bytes);
    for (int k = 0; k < m && strcmp(x->kind, "input") != 0; k++) {
      double us;
      if (burst_profile_find(p, v, b[k], &us) == 0)
        fprintf(f, " %.17g", us);
      else
        fprintf(f, " -");
    }
    fprintf(f, "\n");
  }
  graph_ties_write(f, g);
  fprintf(f, "end\n");
  free(b);
  int failed = ferror(f);
  if (fclose(f) != 0 || failed) surge_runtime_error("cannot write graph file %s: %s", path, strerror(errno));
}

/* ---- network constants ---- */

void burst_net_fill(burst_net_t *net, const burst_net_t *from) {
  for (int k = 0; k < 4; k++)
    if (isnan(*net_field(net, k)) && !isnan(*net_field((burst_net_t *)from, k))) *net_field(net, k) = *net_field((burst_net_t *)from, k);
}

void burst_net_require(const burst_net_t *net, const char *source) {
  static const char *const flags[4] = {"--p2p-latency", "--p2p-bandwidth", "--allreduce-latency", "--allreduce-bandwidth"};
  for (int k = 0; k < 4; k++)
    if (isnan(*net_field((burst_net_t *)net, k)))
      surge_input_error("%s gives no %s: add a '%s VALUE' line, give %s, or set [parallel] net_%s in a deck", source,
                        net_keys[k], net_keys[k], flags[k], net_keys[k]);
  burst_net_check(net, source);
}
