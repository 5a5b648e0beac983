/* The exact reducer: each bucket is one non-blocking allreduce (sum) in place. */
#include <stdlib.h>

#include "core/error.h"
#include "sync/reducer.h"

static comm_op_t *ops_of(reducer_t *r) { return r->impl; }

static void exact_start(reducer_t *r, int b, comm_t *c, float *data, size_t n) {
  comm_iallreduce_sum(c, data, n, TRAFFIC_DP, &ops_of(r)[b]);
}

static int exact_test(reducer_t *r, int b) { return comm_op_test(&ops_of(r)[b]); }

static void exact_wait(reducer_t *r, int b) { comm_op_wait(&ops_of(r)[b]); }

static void exact_free(reducer_t *r) { free(r->impl); }

static const reducer_ops_t exact_ops = {
    .name = "exact", .sums_extra_floats = 1, .begin = NULL, .start = exact_start, .test = exact_test, .wait = exact_wait, .state = NULL, .loaded = NULL, .free = exact_free};

reducer_t *reducer_exact(int nbuckets) {
  reducer_t *r = xcalloc(1, sizeof *r);
  r->ops = &exact_ops;
  r->nbuckets = nbuckets;
  r->impl = xcalloc(nbuckets > 0 ? (size_t)nbuckets : 1, sizeof(comm_op_t));
  return r;
}

void reducer_free(reducer_t *r) {
  if (!r) return;
  if (r->ops->free) r->ops->free(r);
  free(r);
}
