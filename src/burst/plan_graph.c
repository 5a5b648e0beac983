/* The model graph as a series-parallel tree of chains and fork/join blocks (plan_impl.h). */
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

/* ---- series-parallel decomposition ----
 * A region is a source node, the nodes between (in topological order) and a sink node. Inner nodes
 * that no edge of the region jumps over are cuts: the region is a series of them. Between two
 * consecutive cuts either one edge leads on, or the nodes between fall into weakly connected
 * components: the branches of a fork/join block, each again a region from the fork to the join
 * (without the fork's direct edges to the join, which are the block's empty branches). */

typedef struct sp_builder {
  const bgraph_t *g;
  int *cons_off, *cons; /* consumers of node i: cons[cons_off[i] .. cons_off[i+1]) */
  int *pos;             /* position of a node in the region being cut, -1 elsewhere */
} sp_builder_t;

static _Noreturn void not_series_parallel(const bgraph_t *g, int node) {
  char where[320];
  surge_input_error("%sthe model graph is not series-parallel around node %d '%s': the burst planner "
                    "handles chains and fork/join blocks (residual and branchy graphs)",
                    bgraph_where(g, node, where, sizeof where), node, g->v[node].name);
}

static int find_root(int *parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

static void decompose(sp_builder_t *b, int src, const int *mid, int m, int sink, int keep_direct, sp_seq_t *out);

/* The block between cut nodes a and z with `inner` nodes in between, `direct` edges a -> z. */
static sp_block_t *make_block(sp_builder_t *b, int a, const int *inner, int ni, int z, int direct) {
  int *parent = xmalloc((size_t)(ni ? ni : 1) * sizeof *parent);
  for (int i = 0; i < ni; i++) parent[i] = i;
  for (int i = 0; i < ni; i++) b->pos[inner[i]] = i;
  for (int i = 0; i < ni; i++)
    for (int e = b->cons_off[inner[i]]; e < b->cons_off[inner[i] + 1]; e++) {
      int j = b->pos[b->cons[e]];
      if (j >= 0) parent[find_root(parent, i)] = find_root(parent, j);
    }
  for (int i = 0; i < ni; i++) b->pos[inner[i]] = -1;

  sp_block_t *blk = xcalloc(1, sizeof *blk);
  blk->branch = xcalloc((size_t)(ni + direct), sizeof *blk->branch);
  int *members = xmalloc((size_t)(ni ? ni : 1) * sizeof *members);
  char *taken = xcalloc((size_t)(ni ? ni : 1), 1);
  for (int i = 0; i < ni; i++) {
    int root = find_root(parent, i);
    if (taken[root]) continue;
    taken[root] = 1;
    /* the component of i (its first member), in topological order */
    int cnt = 0;
    for (int j = i; j < ni; j++)
      if (find_root(parent, j) == root) members[cnt++] = inner[j];
    sp_seq_t *br = &blk->branch[blk->nbranch++];
    decompose(b, a, members, cnt, z, 0, br);
    /* the branch ends with the join, which its tail feeds by one edge */
    if (br->n < 2 || br->step[br->n - 1].via) not_series_parallel(b->g, members[0]);
    br->n--;
  }
  free(taken);
  for (int d = 0; d < direct; d++) blk->branch[blk->nbranch++] = (sp_seq_t){0, NULL};
  free(members);
  free(parent);
  return blk;
}

static void decompose(sp_builder_t *b, int src, const int *mid, int m, int sink, int keep_direct, sp_seq_t *out) {
  int L = m + 2;
  int *nodes = xmalloc((size_t)L * sizeof *nodes);
  char *cut = xcalloc((size_t)L, 1);
  nodes[0] = src;
  memcpy(nodes + 1, mid, (size_t)m * sizeof *nodes);
  nodes[L - 1] = sink;
  for (int i = 0; i < L; i++) b->pos[nodes[i]] = i;
  int reach = 0, inner_cuts = 0;
  for (int i = 0; i < L - 1; i++) {
    if (i > 0) inner_cuts += cut[i] = reach <= i;
    for (int e = b->cons_off[nodes[i]]; e < b->cons_off[nodes[i] + 1]; e++) {
      int j = b->pos[b->cons[e]];
      if (j < 0 || (i == 0 && j == L - 1 && !keep_direct)) continue;
      if (j > reach) reach = j;
    }
  }
  cut[L - 1] = 1;
  for (int i = 0; i < L; i++) b->pos[nodes[i]] = -1;
  if (!keep_direct && inner_cuts == 0) not_series_parallel(b->g, mid[0]);

  out->n = 0;
  out->step = xmalloc((size_t)(inner_cuts + 1) * sizeof *out->step);
  int a = 0;
  for (int z = 1; z < L; z++) {
    if (!cut[z]) continue;
    int direct = 0;
    if (!(a == 0 && z == L - 1 && !keep_direct))
      for (int e = b->cons_off[nodes[a]]; e < b->cons_off[nodes[a] + 1]; e++) direct += b->cons[e] == nodes[z];
    int ni = z - a - 1;
    sp_step_t st = {nodes[z], NULL};
    if (ni == 0 && direct == 0) not_series_parallel(b->g, nodes[z]);
    if (ni > 0 || direct > 1) st.via = make_block(b, nodes[a], nodes + a + 1, ni, nodes[z], direct);
    out->step[out->n++] = st;
    a = z;
  }
  free(cut);
  free(nodes);
}

void sp_build(const bgraph_t *g, sp_seq_t *top) {
  if (g->n < 2) surge_input_error("%s: the model graph has no layers to plan", g->source);
  sp_builder_t b = {g, NULL, NULL, NULL};
  b.cons_off = xcalloc((size_t)g->n + 1, sizeof *b.cons_off);
  for (int i = 1; i < g->n; i++)
    for (int k = 0; k < g->v[i].nin; k++) b.cons_off[g->v[i].in[k] + 1]++;
  for (int i = 0; i < g->n; i++) b.cons_off[i + 1] += b.cons_off[i];
  b.cons = xmalloc((size_t)(b.cons_off[g->n] ? b.cons_off[g->n] : 1) * sizeof *b.cons);
  int *fill = xmalloc((size_t)g->n * sizeof *fill);
  memcpy(fill, b.cons_off, (size_t)g->n * sizeof *fill);
  for (int i = 1; i < g->n; i++)
    for (int k = 0; k < g->v[i].nin; k++) b.cons[fill[g->v[i].in[k]]++] = i;
  free(fill);
  for (int i = 0; i < g->n - 1; i++)
    if (b.cons_off[i] == b.cons_off[i + 1]) {
      char where[320];
      surge_input_error("%snode %d '%s': no later node uses its output; the planner needs every node on a "
                        "path to the output (node %d '%s')",
                        bgraph_where(g, i, where, sizeof where), i, g->v[i].name, g->n - 1, g->v[g->n - 1].name);
    }
  b.pos = xmalloc((size_t)g->n * sizeof *b.pos);
  for (int i = 0; i < g->n; i++) b.pos[i] = -1;

  int m = g->n - 2;
  int *mid = xmalloc((size_t)(m ? m : 1) * sizeof *mid);
  for (int i = 0; i < m; i++) mid[i] = i + 1;
  sp_seq_t rest;
  decompose(&b, 0, mid, m, g->n - 1, 1, &rest);
  top->n = rest.n + 1;
  top->step = xmalloc((size_t)top->n * sizeof *top->step);
  top->step[0] = (sp_step_t){0, NULL};
  memcpy(top->step + 1, rest.step, (size_t)rest.n * sizeof *rest.step);
  free(rest.step);
  free(mid);
  free(b.pos);
  free(b.cons);
  free(b.cons_off);
}

void sp_free(sp_seq_t *s) {
  for (int i = 0; i < s->n; i++) {
    sp_block_t *blk = s->step[i].via;
    if (!blk) continue;
    for (int k = 0; k < blk->nbranch; k++) sp_free(&blk->branch[k]);
    free(blk->branch);
    free(blk);
  }
  free(s->step);
  s->step = NULL;
  s->n = 0;
}

void sp_seq_extent(const sp_seq_t *s, const burst_plan_t *plan, int *lo, int *hi) {
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node;
    if (plan->first[v] < *lo) *lo = plan->first[v];
    if (plan->first[v] + plan->n[v] > *hi) *hi = plan->first[v] + plan->n[v];
    const sp_block_t *blk = s->step[i].via;
    if (blk)
      for (int k = 0; k < blk->nbranch; k++) sp_seq_extent(&blk->branch[k], plan, lo, hi);
  }
}
