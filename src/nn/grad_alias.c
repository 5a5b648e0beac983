/* A residual add's input gradients in the add's own gradient buffer (grad_alias.h). */
#include "nn/grad_alias.h"

#include <stdlib.h>

#include "core/error.h"

/* Phases [lo, hi] of the backward pass, of the buffer of node `group`'s gradient. */
typedef struct span {
  int group, lo, hi;
} span_t;

/* spans of one kind: phases in which a node adds into a buffer (writes), or in which a branch's gradient in it is
 * still to be read as its add left it (reads) */
typedef struct spans {
  span_t *s;
  int n;
} spans_t;

typedef struct plan {
  const model_t *m;
  const int *first, *last;
  int *lo, *hi, *group, *closed;
  spans_t writes, reads;
  int edges; /* the graph's input slots: the most writes */
} plan_t;

static void spans_add(spans_t *l, int cap, int group, int lo, int hi) {
  if (l->n >= cap) surge_runtime_error("grad_alias: more spans than the graph's edges");
  l->s[l->n++] = (span_t){group, lo, hi};
}

/* Whether some span of l in the buffer of `group` meets [lo, hi]. */
static int spans_meet(const spans_t *l, int group, int lo, int hi) {
  for (int e = 0; e < l->n; e++)
    if (l->s[e].group == group && l->s[e].lo <= hi && lo <= l->s[e].hi) return 1;
  return 0;
}

/* The phases in which consumer c of a node adds into that node's gradient: those of its backward, run by c, or for
 * a GELU in a linear's epilogue by that linear; 0 when they are not in the pass (nothing then says when it writes). */
static int consumer_phases(const plan_t *p, int c, int *lo, int *hi) {
  const model_t *m = p->m;
  const int runner = m->epi[c] < 0 && m->g->l[c].kind == LAYER_GELU ? -m->epi[c] : c; /* as model_node_runs */
  *lo = p->first[runner], *hi = p->last[runner];
  return *lo >= 0;
}

/* Whether node s's consumers other than add i (which writes its gradient; i = 0: none is left out) can add into the
 * buffer of `group` without meeting a branch's reads there; with `record`, their phases are recorded as the buffer's
 * writes. */
static int others_fit(plan_t *p, int s, int i, int group, int record) {
  const graph_t *g = p->m->g;
  for (int c = s + 1; c < g->n; c++) {
    if (c == i) continue;
    for (int k = 0; k < g->l[c].nin; k++) {
      if (g->l[c].in[k] != s) continue;
      int lo, hi;
      if (!consumer_phases(p, c, &lo, &hi) || spans_meet(&p->reads, group, lo, hi)) return 0;
      if (record) spans_add(&p->writes, p->edges, group, lo, hi);
    }
  }
  return 1;
}

/* Whether add i is node b's only consumer, in one input slot. */
static int only_consumer(const graph_t *g, int b, int i) {
  int slots = 0, elsewhere = 0;
  for (int c = b + 1; c < g->n; c++)
    for (int k = 0; k < g->l[c].nin; k++)
      if (g->l[c].in[k] == b) slots++, elsewhere += c != i;
  return slots == 1 && !elsewhere;
}

/* Node s's gradient takes the buffer of `group`: its span widens the buffer's. */
static void join(plan_t *p, int s, int i, int group) {
  others_fit(p, s, i, group, 1);
  p->group[s] = group;
  if (p->lo[s] < p->lo[group]) p->lo[group] = p->lo[s];
  if (p->hi[s] > p->hi[group]) p->hi[group] = p->hi[s];
}

/* Both inputs of add i into its buffer, input `branch` the branch: its reads run from the add's first phase to the
 * end of its span, and no write into the buffer, the stream's later ones included, may fall among them. */
static int join_both(plan_t *p, int i, int branch, int stream) {
  const graph_t *g = p->m->g;
  const int group = p->group[i], lo = p->first[i], hi = p->hi[branch];
  if (!only_consumer(g, branch, i) || spans_meet(&p->writes, group, lo, hi)) return 0;
  spans_add(&p->reads, g->n, group, lo, hi);
  if (!others_fit(p, stream, i, group, 0)) {
    p->reads.n--;
    return 0;
  }
  join(p, branch, i, group);
  join(p, stream, i, group);
  p->closed[branch] = 1;
  return 1;
}

/* Whether add i may pass its buffer on to input s: both pooled, i writes s's gradient. */
static int may_take(const plan_t *p, int i, int s) { return p->lo[s] >= 0 && p->m->writer[s] == i; }

void grad_alias_plan(const model_t *m, const int *first, const int *last, int *lo, int *hi, int *group) {
  const graph_t *g = m->g;
  const int n = g->n;
  plan_t p = {m, first, last, lo, hi, group, xcalloc((size_t)n, sizeof *p.closed), {NULL, 0}, {NULL, 0}, 0};
  for (int c = 0; c < n; c++) p.edges += g->l[c].nin;
  p.writes.s = xcalloc((size_t)p.edges + 1, sizeof *p.writes.s);
  p.reads.s = xcalloc((size_t)n, sizeof *p.reads.s);
  for (int b = 0; b < n; b++) group[b] = b;
  for (int i = n - 1; i > 0; i--) { /* an add's own buffer is settled before its inputs' */
    const layer_t *l = &g->l[i];
    if (l->kind != LAYER_ADD || m->fused[i] != 0 || lo[i] < 0 || p.closed[i] || l->in[0] == l->in[1]) continue;
    const int a = l->in[0], b = l->in[1];
    if (group[i] == i && !others_fit(&p, i, 0, i, 1)) continue; /* a buffer's first add: its gradient's writers */
    if (may_take(&p, i, a) && may_take(&p, i, b) && (join_both(&p, i, b, a) || join_both(&p, i, a, b))) continue;
    for (int k = 0; k < 2; k++) {
      const int s = l->in[k];
      if (may_take(&p, i, s) && others_fit(&p, s, i, group[i], 0)) {
        join(&p, s, i, group[i]);
        break;
      }
    }
  }
  free(p.closed), free(p.writes.s), free(p.reads.s);
}
