/* Two reducers behind one table (sync/reducer.h, reducer_split): each bucket goes to one of them under
 * its own index there, in the order the gradient sync starts them. A sharded optimizer with a
 * compressing reducer uses it: the compressor's buckets end as whole sums on every rank of the group
 * (each rank updating its shard of them), the others are reduce-scattered (reducer_scatter). The
 * state is both reducers' regions; the step's raw bytes and compressor seconds are their sums. */
#include <stdlib.h>

#include "core/error.h"
#include "sync/reducer.h"

typedef struct split {
  reducer_t *part[2];
  int *which, *index; /* [nbuckets] the reducer of each bucket (0, 1) and the bucket's index in it */
} split_t;

static split_t *of(reducer_t *r) { return r->impl; }

/* The step's counters are the parts' (their begin zeroes nothing: gradsync_begin zeroes the table's). */
static void add_counters(reducer_t *r) {
  split_t *s = of(r);
  r->raw_bytes = s->part[0]->raw_bytes + s->part[1]->raw_bytes;
  r->seconds = s->part[0]->seconds + s->part[1]->seconds;
}

static void split_begin(reducer_t *r) {
  split_t *s = of(r);
  for (int i = 0; i < 2; i++) {
    s->part[i]->raw_bytes = s->part[i]->seconds = 0;
    if (s->part[i]->ops->begin) s->part[i]->ops->begin(s->part[i]);
  }
}

static void split_start(reducer_t *r, int b, comm_t *c, float *data, size_t n) {
  reducer_t *p = of(r)->part[of(r)->which[b]];
  p->ops->start(p, of(r)->index[b], c, data, n);
  add_counters(r);
}

static int split_test(reducer_t *r, int b) {
  reducer_t *p = of(r)->part[of(r)->which[b]];
  return p->ops->test(p, of(r)->index[b]);
}

static void split_wait(reducer_t *r, int b) {
  reducer_t *p = of(r)->part[of(r)->which[b]];
  p->ops->wait(p, of(r)->index[b]);
  add_counters(r);
}

static int split_state(reducer_t *r, state_region_t *out, int max) {
  int n = 0;
  for (int i = 0; i < 2; i++) {
    reducer_t *p = of(r)->part[i];
    if (p->ops->state) n += p->ops->state(p, out + n, max - n);
  }
  return n;
}

static void split_loaded(reducer_t *r) {
  for (int i = 0; i < 2; i++) {
    reducer_t *p = of(r)->part[i];
    if (p->ops->loaded) p->ops->loaded(p);
  }
}

static void split_free(reducer_t *r) {
  split_t *s = of(r);
  reducer_free(s->part[0]);
  reducer_free(s->part[1]);
  free(s->which);
  free(s->index);
  free(s);
}

static const reducer_ops_t split_ops = {.name = "split", .sums_extra_floats = 0, .begin = split_begin,
                                        .start = split_start, .test = split_test, .wait = split_wait,
                                        .state = split_state, .loaded = split_loaded, .free = split_free};

reducer_t *reducer_split(int nbuckets, const int *which, reducer_t *first, reducer_t *second) {
  split_t *s = xcalloc(1, sizeof *s);
  size_t nb = nbuckets > 0 ? (size_t)nbuckets : 1;
  s->part[0] = first, s->part[1] = second;
  s->which = xcalloc(nb, sizeof *s->which);
  s->index = xcalloc(nb, sizeof *s->index);
  int count[2] = {0, 0};
  for (int b = 0; b < nbuckets; b++) {
    if (which[b] != 0 && which[b] != 1) surge_runtime_error("reducer_split: bucket %d to reducer %d (a bug)", b, which[b]);
    s->which[b] = which[b];
    s->index[b] = count[which[b]]++;
  }
  if (count[0] != first->nbuckets || count[1] != second->nbuckets)
    surge_runtime_error("reducer_split: %d + %d buckets for reducers of %d + %d (a bug)", count[0], count[1],
                        first->nbuckets, second->nbuckets);
  reducer_t *r = xcalloc(1, sizeof *r);
  r->ops = &split_ops;
  r->nbuckets = nbuckets;
  r->impl = s;
  return r;
}
