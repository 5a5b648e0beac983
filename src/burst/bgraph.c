/* The planner graph (bgraph.h): building it, from a model graph or node by node, and its
 * fingerprints. */
#include "burst/bgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan.h"
#include "core/error.h"
#include "nn/model.h"

double burst_act_bytes(const graph_t *g, int node) { return 4.0 * (double)shape_size(g->l[node].out); }

double burst_grad_bytes(const graph_t *g, int node) {
  const layer_t *l = &g->l[node];
  double bytes = 0;
  for (int k = 0; k < l->np; k++) bytes += 4.0 * (double)g->params.t[l->param[k]].n;
  return bytes;
}

static uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ULL;
  }
  return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL

uint64_t burst_graph_fingerprint(const graph_t *g) {
  uint64_t h = FNV_OFFSET;
  char buf[256];
  for (int i = 0; i < g->n; i++) {
    const layer_t *l = &g->l[i];
    snprintf(buf, sizeof buf, "%d|%s|%s|%d", i, l->name, layer_kind_name(l->kind), l->nin);
    h = fnv1a(h, buf);
    for (int k = 0; k < l->nin; k++) {
      snprintf(buf, sizeof buf, "|in%d", l->in[k]);
      h = fnv1a(h, buf);
    }
    shape_str(l->out, buf, sizeof buf);
    h = fnv1a(h, buf);
    for (int k = 0; k < l->np; k++) {
      const slab_tensor_t *t = &g->params.t[l->param[k]];
      snprintf(buf, sizeof buf, "|%s:%d:%d,%d,%d,%d", t->name, t->ndim, t->d[0], t->d[1], t->d[2], t->d[3]);
      h = fnv1a(h, buf);
    }
    h = fnv1a(h, ";");
  }
  return h;
}

uint64_t bgraph_fingerprint(const bgraph_t *bg) {
  uint64_t h = fnv1a(FNV_OFFSET, "bgraph");
  char buf[256];
  for (int i = 0; i < bg->n; i++) {
    const bgraph_node_t *v = &bg->v[i];
    snprintf(buf, sizeof buf, "%d|%s|%s|%d|%.17g|%.17g", i, v->name, v->kind, v->nin, v->act_bytes, v->grad_bytes);
    h = fnv1a(h, buf);
    for (int k = 0; k < v->nin; k++) {
      snprintf(buf, sizeof buf, "|in%d", v->in[k]);
      h = fnv1a(h, buf);
    }
    if (v->tied || v->with || v->weight_of || v->recompute_from) { /* its rules (a graph without: as before) */
      snprintf(buf, sizeof buf, "|f%d|w%d|s%d|r%d", v->tied, v->with, v->weight_of, v->recompute_from);
      h = fnv1a(h, buf);
    }
    h = fnv1a(h, ";");
  }
  return h;
}

void bgraph_init(bgraph_t *bg, const char *model, const char *source) {
  memset(bg, 0, sizeof *bg);
  snprintf(bg->model, sizeof bg->model, "%s", model);
  snprintf(bg->source, sizeof bg->source, "%s", source);
}

int bgraph_add(bgraph_t *bg, const char *name, const char *kind, int nin, const int *in, double act_bytes,
               double grad_bytes, int line) {
  if (bg->n >= BGRAPH_MAX_NODES) surge_input_error("%s: more than %d nodes", bg->source, BGRAPH_MAX_NODES);
  if ((bg->n & (bg->n - 1)) == 0) /* capacity doubles at powers of two */
    bg->v = xrealloc(bg->v, (size_t)(bg->n ? 2 * bg->n : 1) * sizeof *bg->v);
  bgraph_node_t *v = &bg->v[bg->n];
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", name);
  snprintf(v->kind, sizeof v->kind, "%s", kind);
  v->nin = nin;
  v->in = xmalloc((size_t)(nin ? nin : 1) * sizeof *v->in);
  if (nin) memcpy(v->in, in, (size_t)nin * sizeof *in);
  v->act_bytes = act_bytes;
  v->grad_bytes = grad_bytes;
  if (strcmp(kind, "batchnorm") == 0 && grad_bytes > 0) v->bn_channels = grad_bytes / (2 * sizeof(float));
  v->line = line;
  return bg->n++;
}

void bgraph_from_graph(const graph_t *g, const char *model, bgraph_t *bg) {
  bgraph_init(bg, model, "model graph");
  for (int i = 0; i < g->n; i++) {
    const layer_t *l = &g->l[i];
    bgraph_add(bg, l->name, layer_kind_name(l->kind), l->nin, l->in, burst_act_bytes(g, i), burst_grad_bytes(g, i),
               0);
    if (l->bn_local) bg->v[i].bn_channels = 0; /* each rank its own statistics: nothing summed */
  }
  int *fused = xcalloc((size_t)g->n, sizeof *fused), *epi = xcalloc((size_t)g->n, sizeof *epi);
  int *seg_first = xcalloc((size_t)g->n, sizeof *seg_first);
  model_fusion_plan(g, fused, epi, seg_first);
  bgraph_sets_t sets;
  bgraph_sets_init(&sets, g->n);
  for (int i = 1; i < g->n; i++) {
    bgraph_node_t *v = &bg->v[i];
    /* a fused ReLU (fused -1), or a GELU its linear runs both ways (a layer norm an add runs in its
     * epilogue runs its backward alone: it may go elsewhere, and then runs unfused) */
    if (fused[i] < 0 || (epi[i] < 0 && g->l[i].kind == LAYER_GELU)) {
      v->tied = 1;
      bgraph_sets_join(&sets, i, g->l[i].in[0]);
    }
    if (g->l[i].kind == LAYER_TIED_LINEAR) v->weight_of = g->params.t[g->l[i].tied_param].owner;
    if (seg_first[i] > 0) {
      v->recompute_from = seg_first[i];
      bgraph_sets_join_range(&sets, seg_first[i], i);
    }
  }
  bgraph_sets_apply(&sets, bg);
  free(fused);
  free(epi);
  free(seg_first);
  bg->fingerprint = burst_graph_fingerprint(g);
}

void bgraph_sets_init(bgraph_sets_t *s, int n) {
  s->n = n;
  s->parent = xmalloc((size_t)n * sizeof *s->parent);
  s->next = xmalloc(((size_t)n + 1) * sizeof *s->next);
  for (int i = 0; i < n; i++) s->parent[i] = s->next[i] = i;
  s->next[n] = n;
}

int bgraph_sets_root(bgraph_sets_t *s, int x) {
  while (s->parent[x] != x) x = s->parent[x] = s->parent[s->parent[x]];
  return x;
}

void bgraph_sets_join(bgraph_sets_t *s, int a, int b) {
  int ra = bgraph_sets_root(s, a), rb = bgraph_sets_root(s, b);
  if (ra != rb) s->parent[ra > rb ? ra : rb] = ra < rb ? ra : rb; /* the earlier node stays the root */
}

/* The first node at or after x not yet joined to the node before it by a range. */
static int unjoined_from(bgraph_sets_t *s, int x) {
  while (s->next[x] != x) x = s->next[x] = s->next[s->next[x]];
  return x;
}

void bgraph_sets_join_range(bgraph_sets_t *s, int lo, int hi) {
  for (int j = unjoined_from(s, lo + 1); j <= hi; j = unjoined_from(s, j + 1)) {
    bgraph_sets_join(s, j - 1, j);
    s->next[j] = j + 1;
  }
}

void bgraph_sets_apply(bgraph_sets_t *s, bgraph_t *g) {
  for (int v = 0; v < s->n; v++) {
    int r = bgraph_sets_root(s, v);
    g->v[v].with = r == v ? 0 : r;
  }
  bgraph_sets_free(s);
}

void bgraph_limit_groups(const bgraph_t *g, int *group) {
  bgraph_sets_t sets;
  bgraph_sets_init(&sets, g->n);
  for (int v = 0; v < g->n; v++) {
    bgraph_sets_join(&sets, v, bgraph_set_of(g, v));
    if (g->v[v].weight_of) bgraph_sets_join(&sets, v, g->v[v].weight_of);
  }
  for (int v = 0; v < g->n; v++) group[v] = bgraph_sets_root(&sets, v);
  bgraph_sets_free(&sets);
}

void bgraph_sets_free(bgraph_sets_t *s) {
  free(s->parent);
  free(s->next);
  memset(s, 0, sizeof *s);
}

void bgraph_free(bgraph_t *bg) {
  for (int i = 0; i < bg->n; i++) free(bg->v[i].in);
  free(bg->v);
  memset(bg, 0, sizeof *bg);
}

const char *bgraph_where(const bgraph_t *bg, int node, char *buf, int len) {
  buf[0] = '\0';
  if (node >= 0 && node < bg->n && bg->v[node].line > 0) snprintf(buf, (size_t)len, "%s:%d: ", bg->source, bg->v[node].line);
  return buf;
}

double bgraph_grad_total(const bgraph_t *bg) {
  double total = 0;
  for (int v = 0; v < bg->n; v++) total += bg->v[v].grad_bytes;
  return total;
}
