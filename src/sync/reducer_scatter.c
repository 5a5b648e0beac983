/* The exact reducer of a sharded optimizer (sync/shard.h): each bucket is one non-blocking in-place
 * reduce-scatter (sum) whose parts are the ranks' shards within it, traffic dp_scatter. After wait(b)
 * only this rank's shard of the bucket holds the sum over the group; the rest of the bucket is
 * undefined (the optimizer reads its shard only). */
#include <stdlib.h>

#include "core/error.h"
#include "sync/reducer.h"
#include "sync/shard.h"

typedef struct scatter {
  comm_op_t *ops;       /* [nbuckets] */
  size_t *part_off;     /* (nbuckets, R) each rank's part of each bucket, relative to the bucket */
  size_t *part_cnt;     /* (nbuckets, R) */
  size_t *bucket_n;     /* [nbuckets] floats of each bucket */
  int *ranks;           /* [nbuckets] R of its group (0: this rank is not a member) */
  int most;             /* the largest R: the row stride of part_off, part_cnt */
} scatter_t;

static scatter_t *of(reducer_t *r) { return r->impl; }

static void scatter_start(reducer_t *r, int b, comm_t *c, float *data, size_t n) {
  scatter_t *s = of(r);
  if (c->size != s->ranks[b] || n != s->bucket_n[b])
    surge_runtime_error("reducer_scatter: bucket %d of %zu floats over %d ranks, planned %zu over %d (a bug)", b, n,
                        c->size, s->bucket_n[b], s->ranks[b]);
  size_t at = (size_t)b * (size_t)s->most;
  comm_ireduce_scatter_sum(c, data, n, s->part_off + at, s->part_cnt + at, TRAFFIC_DP_SCATTER, &s->ops[b]);
}

static int scatter_test(reducer_t *r, int b) { return comm_op_test(&of(r)->ops[b]); }

static void scatter_wait(reducer_t *r, int b) { comm_op_wait(&of(r)->ops[b]); }

static void scatter_free(reducer_t *r) {
  scatter_t *s = of(r);
  free(s->ops);
  free(s->part_off);
  free(s->part_cnt);
  free(s->bucket_n);
  free(s->ranks);
  free(s);
}

/* sums_extra_floats 0: a float after the slab would land on the last rank only. */
static const reducer_ops_t scatter_ops = {.name = "exact (reduce-scatter)", .sums_extra_floats = 0,
                                          .start = scatter_start, .test = scatter_test, .wait = scatter_wait,
                                          .free = scatter_free};

reducer_t *reducer_scatter(const reducer_setup_t *setup, const shard_plan_t *plan) {
  reducer_t *r = xcalloc(1, sizeof *r);
  scatter_t *s = xcalloc(1, sizeof *s);
  size_t nb = setup->nbuckets > 0 ? (size_t)setup->nbuckets : 1;
  s->most = 1;
  for (int g = 0; g < plan->ngroups; g++) s->most = plan->ranks[g] > s->most ? plan->ranks[g] : s->most;
  s->ops = xcalloc(nb, sizeof *s->ops);
  s->part_off = xcalloc(nb * (size_t)s->most, sizeof *s->part_off);
  s->part_cnt = xcalloc(nb * (size_t)s->most, sizeof *s->part_cnt);
  s->bucket_n = xcalloc(nb, sizeof *s->bucket_n);
  s->ranks = xcalloc(nb, sizeof *s->ranks);
  for (int b = 0; b < setup->nbuckets; b++) {
    int t = setup->b[b].t_first;
    s->bucket_n[b] = setup->b[b].n;
    s->ranks[b] = plan->ranks[plan->group[t]];
    if (s->ranks[b] > 0)
      shard_plan_parts(plan, t, setup->b[b].n, s->part_off + (size_t)b * (size_t)s->most,
                       s->part_cnt + (size_t)b * (size_t)s->most);
  }
  r->ops = &scatter_ops;
  r->nbuckets = setup->nbuckets;
  r->impl = s;
  return r;
}
