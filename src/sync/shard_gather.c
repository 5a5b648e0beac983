#include "sync/shard_gather.h"

#include <stdlib.h>

#include "core/error.h"
#include "sync/shard.h"

void shard_gather_init(shard_gather_t *g, const gradsync_t *s, const slab_layout_t *L, float *params) {
  const shard_plan_t *plan = s->shard;
  if (!plan) surge_runtime_error("shard_gather_init: the gradient sync has no shard plan (a bug)");
  *g = (shard_gather_t){.params = params, .nbuckets = s->nbuckets, .most = 1};
  for (int k = 0; k < plan->ngroups; k++) g->most = plan->ranks[k] > g->most ? plan->ranks[k] : g->most;
  size_t nb = s->nbuckets > 0 ? (size_t)s->nbuckets : 1, R = (size_t)g->most;
  g->c = xcalloc(nb, sizeof *g->c);
  g->off = xcalloc(nb, sizeof *g->off);
  g->first_node = xcalloc(nb, sizeof *g->first_node);
  g->part_off = xcalloc(nb * R, sizeof *g->part_off);
  g->part_cnt = xcalloc(nb * R, sizeof *g->part_cnt);
  g->ops = xcalloc(nb, sizeof *g->ops);
  size_t covered = 0;
  for (int k = 0; k < s->nbuckets; k++) {
    const grad_bucket_t *b = &s->b[k];
    if (s->side && k == 0) surge_runtime_error("shard_gather_init: side slots ride on a sharded bucket (a bug)");
    g->off[k] = b->off;
    int first = L->t[b->t_first].owner;
    for (int t = b->t_first; t < b->t_first + b->t_count; t++) first = L->t[t].owner < first ? L->t[t].owner : first;
    g->first_node[k] = first;
    covered += b->n;
    if (!b->local) continue;
    g->c[k] = &s->groups[b->group];
    shard_plan_parts(plan, b->t_first, b->n, g->part_off + (size_t)k * R, g->part_cnt + (size_t)k * R);
  }
  if (covered != L->total)
    surge_runtime_error("shard_gather_init: the buckets cover %zu of the slab's %zu floats (a layout bug)", covered,
                        L->total);
}

void shard_gather_free(shard_gather_t *g) {
  shard_gather_finish(g);
  free(g->c);
  free(g->off);
  free(g->first_node);
  free(g->part_off);
  free(g->part_cnt);
  free(g->ops);
  *g = (shard_gather_t){0};
}

void shard_gather_start(shard_gather_t *g) {
  shard_gather_finish(g);
  size_t R = (size_t)g->most;
  for (int k = g->nbuckets - 1; k >= 0; k--) /* the last bucket holds the first layers' tensors */
    if (g->c[k])
      comm_iallgatherv_float(g->c[k], g->params + g->off[k], g->part_off + (size_t)k * R, g->part_cnt + (size_t)k * R,
                             TRAFFIC_DP_GATHER, &g->ops[k]);
  g->pending = g->nbuckets > 0;
}

void shard_gather_before(shard_gather_t *g, int node) {
  if (!g->pending) return;
  int open = 0;
  for (int k = g->nbuckets - 1; k >= 0; k--) {
    if (!g->c[k]) continue;
    if (g->first_node[k] <= node)
      comm_op_wait(&g->ops[k]);
    else
      open += !comm_op_test(&g->ops[k]);
  }
  g->pending = open > 0;
}

void shard_gather_hook(void *g, int node) { shard_gather_before(g, node); }

void shard_gather_finish(shard_gather_t *g) {
  if (!g->pending) return;
  for (int k = g->nbuckets - 1; k >= 0; k--)
    if (g->c[k]) comm_op_wait(&g->ops[k]);
  g->pending = 0;
}
