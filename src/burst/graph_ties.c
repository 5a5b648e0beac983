/* A graph file's rank-set rules (graph_ties.h): reading, applying, writing. */
#include "burst/graph_ties.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef enum graph_tie_kind { TIE_FUSED = 0, TIE_SAME_RANKS, TIE_SHARES_WEIGHT, TIE_RECOMPUTE } graph_tie_kind_t;

static const char *const tie_words[4] = {"fused", "same_ranks", "shares_weight", "recompute"};

int graph_ties_line(tin_t *t, graph_ties_t *ties) {
  int kind = -1;
  for (int k = 0; k < 4 && kind < 0; k++)
    if (strcmp(t->word[0], tie_words[k]) == 0) kind = k;
  if (kind < 0 || t->nword > 4) return 0; /* a node line has at least 5 words, whatever its name */
  int words = kind == TIE_FUSED ? 2 : 3;
  if (t->nword != words)
    tin_error(t, kind == TIE_FUSED ? "expected 'fused NODE'" : "expected '%s NODE EARLIER_NODE'", tie_words[kind]);
  for (int w = 1; w < words; w++)
    if (strlen(t->word[w]) >= BGRAPH_NAME_MAX)
      tin_error(t, "%s: node name '%s' is too long", tie_words[kind], t->word[w]);
  if (ties->n == BGRAPH_MAX_NODES * 4) tin_error(t, "more than %d rules", BGRAPH_MAX_NODES * 4);
  if (ties->n == ties->cap) {
    ties->cap = ties->cap ? 2 * ties->cap : 16;
    ties->v = xrealloc(ties->v, (size_t)ties->cap * sizeof *ties->v);
  }
  graph_tie_t *r = &ties->v[ties->n++];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->line = t->line;
  snprintf(r->node, sizeof r->node, "%s", t->word[1]);
  if (words == 3) snprintf(r->other, sizeof r->other, "%s", t->word[2]);
  return 1;
}

/* ---- applying ---- */

typedef struct names {
  int cap, *slot; /* node index + 1, 0 = empty */
  const bgraph_t *g;
} names_t;

static unsigned long hash_of(const char *s) {
  unsigned long h = 1469598103934665603UL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211UL;
  return h;
}

static int find(const names_t *t, const char *name) {
  for (unsigned long x = hash_of(name) & (unsigned long)(t->cap - 1);; x = (x + 1) & (unsigned long)(t->cap - 1)) {
    if (!t->slot[x]) return -1;
    if (strcmp(t->g->v[t->slot[x] - 1].name, name) == 0) return t->slot[x] - 1;
  }
}

static void names_of(names_t *t, const bgraph_t *g) {
  t->g = g;
  t->cap = 16;
  while (t->cap < 2 * g->n) t->cap *= 2;
  t->slot = xcalloc((size_t)t->cap, sizeof *t->slot);
  for (int v = 0; v < g->n; v++) { /* names are unique (the reader checked) */
    unsigned long x = hash_of(g->v[v].name) & (unsigned long)(t->cap - 1);
    while (t->slot[x]) x = (x + 1) & (unsigned long)(t->cap - 1);
    t->slot[x] = v + 1;
  }
}

/* The node a rule names (which: its node or the other), or an error at its line. */
static int node_of(const names_t *t, const graph_tie_t *r, int which, const char *path) {
  const char *name = which ? r->other : r->node;
  int v = find(t, name);
  if (v < 0) tin_error_at(path, r->line, "%s: no node '%s' in this file", tie_words[r->kind], name);
  return v;
}

/* Per node, the rule of each kind that names it (rule index + 1, 0 = none), rules in node order. */
static int *rules_by_node(const graph_ties_t *ties, const names_t *t, const char *path) {
  int n = t->g->n;
  int *by = xcalloc(surge_mul_size((size_t)n, 4, "graph file rules"), sizeof *by);
  for (int x = 0; x < ties->n; x++) {
    const graph_tie_t *r = &ties->v[x];
    int v = node_of(t, r, 0, path), *slot = &by[(size_t)v * 4 + (size_t)r->kind];
    if (v == 0)
      tin_error_at(path, r->line, "%s %s: the input node takes no rule (it holds no work)", tie_words[r->kind],
                   r->node);
    if (*slot)
      tin_error_at(path, r->line, "%s %s given twice (first on line %d)", tie_words[r->kind], r->node,
                   ties->v[*slot - 1].line);
    int other = r->kind == TIE_FUSED ? TIE_SAME_RANKS : r->kind == TIE_SAME_RANKS ? TIE_FUSED : -1;
    if (other >= 0 && by[(size_t)v * 4 + (size_t)other])
      tin_error_at(path, r->line, "node '%s' is both fused and same_ranks (line %d): give one", r->node,
                   ties->v[by[(size_t)v * 4 + (size_t)other] - 1].line);
    *slot = x + 1;
  }
  return by;
}

/* Nodes lo .. hi joined into a set by the rule on line (the first such rule each keeps). */
static void mark_rule(bgraph_t *g, int lo, int hi, int line) {
  for (int u = lo; u <= hi; u++)
    if (!g->v[u].rule_line) g->v[u].rule_line = line;
}

void graph_ties_apply(const graph_ties_t *ties, bgraph_t *g, const char *path) {
  if (!ties->n) return;
  names_t t;
  names_of(&t, g);
  int *by = rules_by_node(ties, &t, path);
  int *fused_into = xcalloc((size_t)g->n, sizeof *fused_into); /* [input] its fused node's rule + 1 */
  int seg_end = 0, seg_line = 0; /* the last recomputed segment's last node, its rule's line */
  bgraph_sets_t sets;
  bgraph_sets_init(&sets, g->n);
  for (int v = 1; v < g->n; v++)
    for (int k = 0; k < 4; k++) {
      int x = by[(size_t)v * 4 + (size_t)k];
      if (!x) continue;
      const graph_tie_t *r = &ties->v[x - 1];
      bgraph_node_t *node = &g->v[v];
      if (k == TIE_FUSED) {
        if (node->nin != 1)
          tin_error_at(path, r->line, "fused %s: the node has %d inputs (a fused node has one)", r->node, node->nin);
        if (node->in[0] == 0)
          tin_error_at(path, r->line, "fused %s: its input is the input node, which holds no work", r->node);
        if (fused_into[node->in[0]]) /* (the executor fuses one node into another, its only consumer) */
          tin_error_at(path, r->line, "fused %s: its input '%s' has a fused node already, '%s' (line %d); a node "
                       "takes at most one", r->node, g->v[node->in[0]].name, ties->v[fused_into[node->in[0]] - 1].node,
                       ties->v[fused_into[node->in[0]] - 1].line);
        fused_into[node->in[0]] = x;
        node->tied = 1;
        bgraph_sets_join(&sets, v, node->in[0]);
        mark_rule(g, v, v, r->line);
        mark_rule(g, node->in[0], node->in[0], r->line);
        continue;
      }
      int o = node_of(&t, r, 1, path);
      if (o == 0) /* (0 is also "no rule" in bgraph_node_t) */
        tin_error_at(path, r->line, "%s %s %s: the input node holds no work", tie_words[k], r->node, r->other);
      if (o >= v)
        tin_error_at(path, r->line, "%s %s %s: '%s' must come before '%s' in the graph", tie_words[k], r->node,
                     r->other, r->other, r->node);
      if (k == TIE_SAME_RANKS) bgraph_sets_join(&sets, v, o);
      if (k == TIE_SHARES_WEIGHT) node->weight_of = o;
      if (k == TIE_RECOMPUTE) { /* the segment o .. v on one rank set, as bgraph_from_graph */
        if (o <= seg_end) /* (rules come in node order: v > seg_end) */
          tin_error_at(path, r->line, "recompute %s %s: its segment overlaps the one ending at '%s' (line %d); "
                       "segments are disjoint, as [train] recompute makes them", r->node, r->other,
                       g->v[seg_end].name, seg_line);
        seg_end = v, seg_line = r->line;
        node->recompute_from = o;
        bgraph_sets_join_range(&sets, o, v);
        mark_rule(g, o, v, r->line);
      } else {
        mark_rule(g, v, v, r->line);
        mark_rule(g, o, o, r->line);
      }
    }
  bgraph_sets_apply(&sets, g);
  free(fused_into);
  free(by);
  free(t.slot);
}

void graph_ties_free(graph_ties_t *ties) {
  free(ties->v);
  memset(ties, 0, sizeof *ties);
}

void graph_ties_write(FILE *f, const bgraph_t *g) {
  int any = 0;
  for (int v = 0; v < g->n && !any; v++)
    any = g->v[v].with || g->v[v].weight_of || g->v[v].recompute_from;
  if (!any) return;
  fprintf(f, "# what runs on one rank set: fused, same_ranks, shares_weight, recompute (doc/burst.md)\n");
  for (int v = 0; v < g->n; v++) {
    const bgraph_node_t *x = &g->v[v];
    if (x->tied)
      fprintf(f, "fused %s\n", x->name);
    else if (x->with)
      fprintf(f, "same_ranks %s %s\n", x->name, g->v[x->with].name);
    if (x->weight_of) fprintf(f, "shares_weight %s %s\n", x->name, g->v[x->weight_of].name);
    if (x->recompute_from) fprintf(f, "recompute %s %s\n", x->name, g->v[x->recompute_from].name);
  }
}
