#include "sync/gradsync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "core/timer.h"

typedef struct reducer_entry {
  const char *name;
  reducer_t *(*make)(const reducer_setup_t *s);
  int compresses; /* its sums are approximations, whole on every rank of the group (psgd's settings) */
} reducer_entry_t;

static reducer_t *make_exact(const reducer_setup_t *s) { return reducer_exact(s->nbuckets); }

static const reducer_entry_t reducers[] = {{"exact", make_exact, 0}, {"powersgd", reducer_powersgd, 1}};
enum { NREDUCERS = sizeof reducers / sizeof reducers[0] };

const char *gradsync_reducer_names(void) {
  static _Thread_local char names[128];
  if (!names[0])
    for (int i = 0; i < NREDUCERS; i++) names_append(names, sizeof names, reducers[i].name);
  return names;
}

/* Cut the slab into buckets, walking the tensors from the last to the first; a tensor of no group
 * ends the bucket before it. */
static void plan_buckets(gradsync_t *s, const slab_layout_t *L, const int *group, const int *ready,
                         size_t bucket_floats) {
  s->b = xcalloc(L->n ? (size_t)L->n : 1, sizeof *s->b);
  grad_bucket_t *cur = NULL;
  for (int t = L->n - 1; t >= 0; t--) {
    const slab_tensor_t *x = &L->t[t];
    if (group[t] < 0) {
      cur = NULL;
      continue;
    }
    int join = cur && cur->group == group[t] && cur->n + x->n <= bucket_floats;
    if (!join) {
      cur = &s->b[s->nbuckets++];
      *cur = (grad_bucket_t){.off = x->off, .n = 0, .group = group[t], .ready_node = ready[t]};
    }
    cur->off = x->off; /* tensors are consecutive in the slab: the bucket grows downwards */
    cur->n += x->n;
    cur->t_first = t;
    cur->t_count++;
    if (ready[t] < cur->ready_node) cur->ready_node = ready[t];
  }
  for (int k = 0; k < s->nbuckets; k++) s->b[k].local = s->groups[s->b[k].group].size >= 2;
}

/* A sharded optimizer with a compressing reducer: the compressor sums the buckets it compresses (the
 * psgd rank positive, the group not in o->exact_groups), leaving every rank of the group the whole
 * approximate sum, of which each rank updates its shard; the other buckets are reduce-scattered. The
 * compressor is made on every rank, with no bucket where it compresses none (its state is collective
 * over the job). */
static reducer_t *sharded_compressed(const gradsync_t *s, const reducer_setup_t *setup, const reducer_entry_t *e,
                                     const gradsync_opts_t *o) {
  int nb = s->nbuckets, *which = xcalloc((size_t)nb + 1, sizeof *which), count[2] = {0, 0};
  reducer_bucket_t *mine[2] = {xcalloc((size_t)nb + 1, sizeof **mine), xcalloc((size_t)nb + 1, sizeof **mine)};
  for (int k = 0; k < nb; k++) {
    int exact = o->psgd.rank <= 0 || (o->exact_groups && o->exact_groups[s->b[k].group]);
    which[k] = exact;
    mine[exact][count[exact]++] = setup->b[k];
  }
  reducer_setup_t part[2] = {*setup, *setup};
  for (int i = 0; i < 2; i++) part[i].nbuckets = count[i], part[i].b = mine[i];
  reducer_t *r = reducer_split(nb, which, e->make(&part[0]), reducer_scatter(&part[1], s->shard));
  free(mine[0]);
  free(mine[1]);
  free(which);
  return r;
}

void gradsync_init(gradsync_t *s, const slab_layout_t *L, const int *tensor_group, const int *tensor_ready,
                   comm_t *groups, comm_t *world, float *grads, const gradsync_opts_t *o) {
  memset(s, 0, sizeof *s);
  s->groups = groups;
  s->world = world;
  s->grads = grads;
  s->overlap = o->overlap;
  size_t bucket_floats = o->bucket_bytes / sizeof(float);
  if (bucket_floats == 0) bucket_floats = 1;
  plan_buckets(s, L, tensor_group, tensor_ready, bucket_floats);
  const char *name = o->reducer && o->reducer[0] ? o->reducer : "exact";
  reducer_bucket_t *rb = xcalloc((size_t)s->nbuckets + 1, sizeof *rb);
  for (int k = 0; k < s->nbuckets; k++)
    rb[k] = (reducer_bucket_t){.off = s->b[k].off, .n = s->b[k].n, .t_first = s->b[k].t_first,
                               .t_count = s->b[k].t_count};
  reducer_setup_t setup = {.nbuckets = s->nbuckets, .b = rb, .L = L, .be = o->be, .job = o->job ? o->job : world,
                           .psgd = o->psgd};
  const reducer_entry_t *e = NULL;
  for (int i = 0; i < NREDUCERS && !e; i++)
    if (strcmp(reducers[i].name, name) == 0) e = &reducers[i];
  if (!e) surge_input_error("unknown gradient reducer '%s' (accepted: %s)", name, gradsync_reducer_names());
  if (o->shard) {
    int ngroups = 0;
    for (int t = 0; t < L->n; t++) ngroups = tensor_group[t] + 1 > ngroups ? tensor_group[t] + 1 : ngroups;
    s->shard = xcalloc(1, sizeof *s->shard);
    shard_plan_init(s->shard, L, tensor_group, groups, ngroups, o->shard_atomic);
    s->reducer = e->compresses ? sharded_compressed(s, &setup, e, o) : reducer_scatter(&setup, s->shard);
  } else {
    s->reducer = e->make(&setup);
  }
  free(rb);
  const grad_bucket_t *b0 = &s->b[0];
  if (o->side > 0 && s->nbuckets > 0 && s->reducer->ops->sums_extra_floats && b0->local && b0->off + b0->n == L->total &&
      s->groups[b0->group].size == world->size) {
    s->side = o->side;
    s->b[0].n += (size_t)o->side;
  }
}

void gradsync_free(gradsync_t *s) {
  reducer_free(s->reducer);
  if (s->shard) shard_plan_free(s->shard);
  free(s->shard);
  free(s->b);
  memset(s, 0, sizeof *s);
}

void gradsync_begin(gradsync_t *s) {
  for (int k = 0; k < s->nbuckets; k++) s->b[k].started = 0;
  s->reducer->raw_bytes = s->reducer->seconds = 0;
  if (s->reducer->ops->begin) s->reducer->ops->begin(s->reducer);
  s->next = 0;
  s->backward_done = s->first_start = s->wait_s = 0;
}

static void start(gradsync_t *s, int k) {
  grad_bucket_t *b = &s->b[k];
  if (!b->local) return;
  if (s->first_start == 0) s->first_start = surge_now();
  s->reducer->ops->start(s->reducer, k, &s->groups[b->group], s->grads + b->off, b->n);
  b->started = 1;
}

void gradsync_node_done(gradsync_t *s, int node) {
  if (!s->overlap) return;
  while (s->next < s->nbuckets && s->b[s->next].ready_node >= node) start(s, s->next++);
  for (int k = 0; k < s->next; k++)
    if (s->b[k].started) s->reducer->ops->test(s->reducer, k);
}

void gradsync_finish(gradsync_t *s) {
  s->backward_done = surge_now();
  if (!s->overlap) {
    comm_barrier(s->world); /* the slowest rank's lateness, apart from the reduction itself */
    s->wait_s = surge_now() - s->backward_done;
  }
  while (s->next < s->nbuckets) start(s, s->next++);
  for (int k = 0; k < s->nbuckets; k++)
    if (s->b[k].started) s->reducer->ops->wait(s->reducer, k);
}
