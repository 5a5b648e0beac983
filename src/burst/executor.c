#include "burst/executor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/step_rules.h"
#include "core/error.h"
#include "core/events.h"
#include "core/share.h"
#include "data/walk.h"
#include "core/timer.h"

/* Whether `rank` is in node's set. */
static int in_set(const burst_exec_t *ex, int node, int rank) {
  return rank >= ex->first[node] && rank < ex->first[node] + ex->n[node];
}

/* Positions [lo, hi) of the global batch that `rank` computes in node's set in the micro-batch
 * being run (empty when the rank is not in the set, or the micro-batch has too few samples to give
 * it one). Returns whether the share is non-empty. */
static int node_share(const burst_exec_t *ex, int node, int rank, int *lo, int *hi) {
  *lo = *hi = 0;
  if (!in_set(ex, node, rank)) return 0;
  share_t s = share_of((uint64_t)ex->mb_n, (uint64_t)(rank - ex->first[node]), (uint64_t)ex->n[node]);
  *lo = ex->mb_lo + (int)s.lo;
  *hi = ex->mb_lo + (int)s.hi;
  return *hi > *lo;
}

static size_t out_floats(const graph_t *g, int node) { return shape_size(g->l[node].out); }

/* Whether this rank holds rows of some node in a step (with parameters, when `with_params`: then it
 * has gradients to reduce). */
static int holds_rows(const burst_exec_t *ex, int with_params) {
  for (int j = 1; j < ex->g->n; j++)
    if (ex->cap[j] > 0 && (!with_params || ex->g->l[j].np > 0)) return 1;
  return 0;
}

int burst_exec_idle(const burst_exec_t *ex) { return !holds_rows(ex, 0); }

/* Whether routing node j's inputs moves rows between ranks: not when every input is spread over
 * j's own ranks (each rank's rows are then the same at both; data parallelism's every node). */
static int inputs_move(const burst_exec_t *ex, int j) {
  const graph_t *g = ex->g;
  for (int k = 0; k < g->l[j].nin; k++) {
    int i = g->l[j].in[k];
    if (i != 0 && (ex->first[i] != ex->first[j] || ex->n[i] != ex->n[j])) return 1;
  }
  return 0;
}

/* The event while node j's inputs route (phase: in or out): idle for a rank outside j, waiting for
 * a member; a member whose routes move nothing does not wait, and stays at its work. */
static void route_event(const burst_exec_t *ex, int j, ev_phase_t phase) {
  int member = ex->cnt[j] > 0;
  if (!member || inputs_move(ex, j)) ev_raise(member ? EV_WAIT : EV_IDLE, phase, j);
}

static void check_tied_weights(const burst_exec_t *ex) {
  const graph_t *g = ex->g;
  for (int i = 0; i < g->n; i++) {
    if (g->l[i].kind != LAYER_TIED_LINEAR) continue;
    int e = g->params.t[g->l[i].tied_param].owner;
    if (ex->n[e] != ex->n[i] || ex->first[e] != ex->first[i])
      surge_input_error("burst plan: node %d '%s' shares its weight with node %d '%s' but runs on ranks %d..%d, "
                        "not %d..%d (hint: give both nodes the same rank set; the executor does not sum a tied "
                        "weight's gradient across two sets)",
                        i, g->l[i].name, e, g->l[e].name, ex->first[i], ex->first[i] + ex->n[i] - 1,
                        ex->first[e], ex->first[e] + ex->n[e] - 1);
  }
}

/* One communicator per distinct rank set of the nodes 1.. (node order: the same on every rank). */
static void make_sets(burst_exec_t *ex) {
  const graph_t *g = ex->g;
  ex->set_of = xcalloc((size_t)g->n, sizeof *ex->set_of);
  ex->sets = xcalloc((size_t)g->n, sizeof *ex->sets);
  int *rep = xcalloc((size_t)g->n, sizeof *rep); /* a node of each set */
  for (int i = 1; i < g->n; i++) {
    int s = 0;
    while (s < ex->nsets && (ex->n[rep[s]] != ex->n[i] || ex->first[rep[s]] != ex->first[i])) s++;
    if (s == ex->nsets) {
      rep[ex->nsets++] = i;
      int k = ex->world->rank - ex->first[i];
      int member = k >= 0 && k < ex->n[i];
      comm_split(ex->world, member ? 0 : -1, k, &ex->sets[s]);
      ex->sets[s].root_meter = &ex->world->meter; /* the job's log counts every set's traffic */
    }
    ex->set_of[i] = s;
  }
  free(rep);
}

/* Run the micro-batch of positions [lo, lo + n) next: this rank's share of it at every node (the
 * input node's is its first consumer's, whose set it took). */
static void set_micro(burst_exec_t *ex, int lo, int n) {
  ex->mb_lo = lo;
  ex->mb_n = n;
  for (int i = 0; i < ex->g->n; i++) {
    int a, b;
    node_share(ex, i, ex->world->rank, &a, &b);
    ex->lo[i] = a;
    ex->cnt[i] = b - a;
  }
}

/* Micro-batch u of the step: positions share(B, u, M). */
static void micro_batch(burst_exec_t *ex, int u) {
  share_t s = share_of((uint64_t)ex->batch, (uint64_t)u, (uint64_t)ex->micro);
  set_micro(ex, (int)s.lo, (int)(s.hi - s.lo));
}

/* The sizes a micro-batch has: floor(B / M) and ceil(B / M) samples (the shares of one size depend on
 * it alone). */
static int micro_size(const burst_exec_t *ex, int larger) {
  return ex->batch / ex->micro + (larger && ex->batch % ex->micro != 0);
}

/* The input node's set is its first consumer's; this rank's most rows at every node in any
 * micro-batch (cap), and the largest of them (window, at least 1). */
static void make_shares(burst_exec_t *ex) {
  const graph_t *g = ex->g;
  ex->lo = xcalloc((size_t)g->n, sizeof *ex->lo);
  ex->cnt = xcalloc((size_t)g->n, sizeof *ex->cnt);
  ex->cap = xcalloc((size_t)g->n, sizeof *ex->cap);
  for (int i = 1; i < g->n; i++)
    for (int k = 0; k < g->l[i].nin; k++)
      if (g->l[i].in[k] == 0 && ex->n[0] == 0) {
        ex->n[0] = ex->n[i]; /* the input "runs" where its first consumer does */
        ex->first[0] = ex->first[i];
      }
  ex->window = 1;
  for (int larger = 0; larger < 2; larger++) {
    set_micro(ex, 0, micro_size(ex, larger));
    for (int i = 0; i < g->n; i++) {
      if (ex->cnt[i] > ex->cap[i]) ex->cap[i] = ex->cnt[i];
      if (ex->cnt[i] > ex->window) ex->window = ex->cnt[i];
    }
  }
}

/* Whether input slot k of node j needs a staging buffer on this rank in the micro-batch being run: j
 * runs here on other positions than its producer. */
static int staged(const burst_exec_t *ex, int j, int k) {
  int i = ex->g->l[j].in[k];
  return ex->cnt[j] > 0 && (ex->lo[j] != ex->lo[i] || ex->cnt[j] != ex->cnt[i]);
}

/* Staging buffers where some micro-batch needs them (either size of micro-batch), and the model's
 * wiring to them. */
static void make_staging(burst_exec_t *ex, const backend_t *be) {
  const graph_t *g = ex->g;
  model_t *m = &ex->m;
  ex->stage = xcalloc((size_t)g->n, sizeof *ex->stage);
  ex->dstage = xcalloc((size_t)g->n, sizeof *ex->dstage);
  for (int larger = 0; larger < 2; larger++) {
    set_micro(ex, 0, micro_size(ex, larger));
    for (int j = 1; j < g->n; j++)
      for (int k = 0; k < g->l[j].nin; k++) {
        int i = g->l[j].in[k];
        if (ex->stage[j][k] || !staged(ex, j, k)) continue;
        size_t n = surge_mul_size((size_t)ex->window, out_floats(g, i), "staged activations");
        m->in[j][k] = ex->stage[j][k] = be->alloc(n);
        m->act_floats += n;
        if (m->dact[i]) {
          m->din[j][k] = ex->dstage[j][k] = be->alloc(n);
          m->act_floats += n;
        }
      }
  }
}

/* A node fuses with its ReLU, or has its gradient overwritten by its only consumer, where both run on
 * the same rank set: nothing moves between them. */
static int same_set(void *arg, int node, int next) {
  const burst_exec_t *ex = arg;
  return ex->n[node] == ex->n[next] && ex->first[node] == ex->first[next];
}

/* The slab tensors' groups and the nodes that make their gradients final, for the gradient sync:
 * a tensor belongs to its owner node (a tied weight to its embedding, the first node using it). */
static void make_sync(burst_exec_t *ex, const gradsync_opts_t *o) {
  const slab_layout_t *L = &ex->g->params;
  int *group = xcalloc(L->n ? (size_t)L->n : 1, sizeof *group), *ready = xcalloc(L->n ? (size_t)L->n : 1, sizeof *ready);
  for (int t = 0; t < L->n; t++) {
    ready[t] = L->t[t].owner;
    group[t] = ex->shared ? -1 : ex->set_of[L->t[t].owner]; /* shared: node_sum sums every tensor */
  }
  gradsync_opts_t with_side = *o;
  with_side.side = ex->all_ranks_everywhere && !ex->shared ? MODEL_GRAD_SIDE : 0;
  if (ex->shared) with_side.shard = 0; /* node_sum's slices are the shards (burst/layout.c) */
  gradsync_init(&ex->sync, L, group, ready, ex->sets, ex->world, ex->m.grads, &with_side);
  ex->summed = ex->all_ranks_everywhere &&
               (ex->world->size == 1 || ex->sync.side == MODEL_GRAD_SIDE || ex->shared);
  free(group);
  free(ready);
}

/* A node's sum over its rank set in flight (layer_group_t's start and wait): one non-blocking
 * allreduce over the set's communicator, metered as TRAFFIC_BN, the same call whether or not other
 * nodes run before its wait, so overlap changes no bit of it. */
typedef struct burst_sum {
  burst_exec_t *ex;
  comm_t *set;
  comm_op_t op;
  int node;
  int overlapped; /* another node's work ran on this rank while it was in flight */
} burst_sum_t;

static void sum_start(void *arg, float *v, size_t n) {
  burst_sum_t *s = arg;
  comm_iallreduce_sum(s->set, v, n, TRAFFIC_BN, &s->op);
  s->overlapped = 0;
  s->ex->flying[s->ex->nflying++] = s->node;
  s->ex->step_sums++;
}

static void sum_wait(void *arg) {
  burst_sum_t *s = arg;
  burst_exec_t *ex = s->ex;
  comm_op_wait(&s->op);
  ex->step_overlapped += s->overlapped;
  int k = 0;
  while (ex->flying[k] != s->node) k++;
  ex->flying[k] = ex->flying[--ex->nflying];
}

/* Node j's own work is about to run here: the sums in flight overlap it, and MPI advances them (it
 * does so only inside MPI calls). */
static void overlap_flying(burst_exec_t *ex, int j) {
  for (int k = 0; k < ex->nflying; k++) {
    burst_sum_t *s = &ex->sums[ex->flying[k]];
    if (s->node == j) continue;
    s->overlapped = 1;
    comm_op_test(&s->op);
  }
}

/* Whether node i sums over its rank set (batch norm's global statistics on 2+ ranks): the same on
 * every rank, from the graph and the plan. */
static int node_sums(const burst_exec_t *ex, int i) {
  const layer_t *l = &ex->g->l[i];
  return l->group_floats > 0 && !l->bn_local && ex->n[i] > 1 && layer_ops_of(l->kind)->forward_finish;
}

/* Each node that sums over its set, as its layer sees the set (on the set's members), with a buffer
 * of its own (a node's sums may be in flight beside another's); the passes' order of node phases. */
static void make_groups(burst_exec_t *ex, const backend_t *be) {
  const graph_t *g = ex->g;
  int any = 0;
  size_t floats = 0;
  for (int i = 1; i < g->n; i++) {
    ex->local_bufs |= g->l[i].nb > 0 && g->l[i].bn_local && ex->world->size > 1;
    const int sums = node_sums(ex, i);
    any |= sums;
    if (sums && ex->cap[i] > 0) floats += (size_t)ex->n[i] * g->l[i].group_floats;
  }
  if (!any) return;
  ex->group_buf = floats ? be->alloc(floats) : NULL;
  ex->groups = xcalloc((size_t)g->n, sizeof *ex->groups);
  ex->group_of = xcalloc((size_t)g->n, sizeof *ex->group_of);
  ex->sums = xcalloc((size_t)g->n, sizeof *ex->sums);
  ex->flying = xcalloc((size_t)g->n, sizeof *ex->flying);
  float *buf = ex->group_buf;
  for (int i = 1; i < g->n; i++) {
    comm_t *set = &ex->sets[ex->set_of[i]];
    if (!node_sums(ex, i) || ex->cap[i] <= 0) continue;
    ex->sums[i] = (burst_sum_t){.ex = ex, .set = set, .node = i};
    ex->groups[i] = (layer_group_t){.ranks = set->size, .rank = set->rank, .batch = ex->batch, .start = sum_start,
                                    .wait = sum_wait, .arg = &ex->sums[i], .buf = buf};
    ex->group_of[i] = &ex->groups[i];
    buf += (size_t)set->size * g->l[i].group_floats;
  }
  ex->m.group = ex->group_of;
}

/* The passes' order of node phases (pass_order.h), from the model's fusion plan and recomputed
 * segments, with the nodes of the backward pass's phases in bwd for the model (model_order_fn: the
 * model shares the buffers of gradients whose lives do not overlap in it). */
static int build_order(void *arg, const model_t *m, int *bwd) {
  burst_exec_t *ex = arg;
  const graph_t *g = ex->g;
  int *sums = xcalloc((size_t)g->n, sizeof *sums), recomputed = 0;
  for (int i = 1; i < g->n; i++) {
    sums[i] = node_sums(ex, i);
    recomputed |= m->seg_first[i] > 0;
  }
  /* a re-filled segment re-runs forwards inside a backward: keep the blocking order */
  ex->overlap_sums = ex->overlap_sums && !recomputed;
  pass_order_build(&ex->order, g, m->fused, sums, ex->overlap_sums);
  free(sums);
  for (int e = 0; e < ex->order.nbwd; e++) bwd[e] = ex->order.bwd[e].node;
  return ex->order.nbwd;
}

/* Floats of the buffer an owner receives its consumers' gradient parts into: the largest share of
 * a producer with a gradient whose consumer runs on another rank set (the only backward routes
 * that receive); 1 when every node runs on the same set, as in data parallelism. */
static size_t recv_floats(const burst_exec_t *ex) {
  const graph_t *g = ex->g;
  size_t most = 1;
  for (int j = 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++) {
      int i = g->l[j].in[k];
      size_t s = (size_t)ex->cap[i] * out_floats(g, i);
      if (ex->m.dact[i] && !same_set((void *)ex, i, j) && s > most) most = s;
    }
  return most;
}

void burst_exec_init(burst_exec_t *ex, const burst_plan_t *plan, const graph_t *g, const backend_t *be,
                     comm_t *world, int B, int M, const gradsync_opts_t *sync, int node_shared, int overlap_sums) {
  memset(ex, 0, sizeof *ex);
  if (plan->nodes != g->n) surge_input_error("burst plan: %d nodes for a graph of %d", plan->nodes, g->n);
  if (M < 1 || M > B) surge_input_error("%d micro-batches of a batch of %d samples (1 .. %d)", M, B, B);
  ex->g = g;
  ex->world = world;
  ex->batch = B;
  ex->micro = M;
  ex->n = xcalloc((size_t)g->n, sizeof *ex->n);
  ex->first = xcalloc((size_t)g->n, sizeof *ex->first);
  ex->all_ranks_everywhere = 1;
  for (int i = 1; i < g->n; i++) {
    ex->n[i] = plan->n[i];
    ex->first[i] = plan->first[i];
    if (ex->n[i] < 1 || ex->first[i] < 0 || ex->first[i] + ex->n[i] > world->size)
      surge_input_error("burst plan: node %d '%s' uses ranks %d..%d but the job has %d ranks (0..%d)", i,
                        g->l[i].name, ex->first[i], ex->first[i] + ex->n[i] - 1, world->size, world->size - 1);
    ex->all_ranks_everywhere &= ex->n[i] == world->size;
  }
  check_tied_weights(ex);
  make_sets(ex);
  make_shares(ex);
  float *params = NULL, *grads = NULL;
  size_t n = g->params.total, grad_floats = g->params.total + MODEL_GRAD_SIDE;
  if (node_shared && ex->all_ranks_everywhere &&
      node_sum_possible(world, be, ex->shared_refused, sizeof ex->shared_refused) &&
      node_sum_fits(world, n, grad_floats, ex->shared_refused, sizeof ex->shared_refused)) {
    ex->shared = xcalloc(1, sizeof *ex->shared);
    node_sum_init(ex->shared, world, be, n, grad_floats);
    params = node_sum_params(ex->shared);
    grads = node_sum_grads(ex->shared);
  }
  ex->overlap_sums = overlap_sums; /* as asked; build_order keeps it where nothing is recomputed */
  model_init_on(&ex->m, g, be, ex->window, same_set, ex, params, grads, build_order);
  make_staging(ex, be);
  size_t xs = out_floats(g, 0), ys = (size_t)g->targets_per_sample;
  ex->x = xcalloc(surge_mul_size((size_t)ex->window, xs, "input batch"), sizeof(float));
  ex->y = xcalloc(surge_mul_size((size_t)ex->window, ys, "target batch"), sizeof(float));
  size_t recv = recv_floats(ex);
  ex->recv = be->alloc(recv);
  ex->m.act_floats += recv;
  make_groups(ex, be);
  ex->m.id_lo = ex->lo;
  make_sync(ex, sync);
}

void burst_exec_free(burst_exec_t *ex) {
  const backend_t *be = ex->m.be;
  gradsync_free(&ex->sync);
  for (int j = 0; j < ex->g->n; j++)
    for (int k = 0; k < LAYER_MAX_IN; k++) {
      if (ex->stage[j][k]) be->free(ex->stage[j][k]);
      if (ex->dstage[j][k]) be->free(ex->dstage[j][k]);
    }
  for (int s = 0; s < ex->nsets; s++) comm_free(&ex->sets[s]);
  be->free(ex->recv);
  if (ex->group_buf) be->free(ex->group_buf);
  free(ex->groups);
  free(ex->group_of);
  free(ex->sums);
  free(ex->flying);
  pass_order_free(&ex->order);
  model_free(&ex->m);
  if (ex->shared) node_sum_free(ex->shared);
  free(ex->shared);
  free(ex->stage);
  free(ex->dstage);
  free(ex->sets);
  free(ex->set_of);
  free(ex->n);
  free(ex->first);
  free(ex->lo);
  free(ex->cnt);
  free(ex->cap);
  free(ex->x);
  free(ex->y);
  memset(ex, 0, sizeof *ex);
}

/* The positions [lo, hi) both shares hold, 1 when not empty. */
static int overlap(int alo, int ahi, int blo, int bhi, int *lo, int *hi) {
  *lo = alo > blo ? alo : blo;
  *hi = ahi < bhi ? ahi : bhi;
  return *hi > *lo;
}

/* The transfers of input slot k of node j (producer i). Forward: the producer's ranks send each
 * staged consumer the positions of its share they computed; a rank copies what it computed itself.
 * Backward: the consumer sends those positions' gradients back; owners add them. Collective over the
 * two sets; messages of one (sender, receiver) pair in one call are a single range, so the slot
 * number is a unique tag. */
static void route(burst_exec_t *ex, int j, int k, int backward) {
  const graph_t *g = ex->g;
  model_t *m = &ex->m;
  const backend_t *be = m->be;
  int i = g->l[j].in[k], me = ex->world->rank;
  size_t sz = out_floats(g, i);
  traffic_t cat = backward ? TRAFFIC_ACT_GRAD : TRAFFIC_ACT;
  float *mine = backward ? m->dact[i] : m->act[i];              /* rows of [lo_i, lo_i + cnt_i) */
  float *stage = backward ? ex->dstage[j][k] : ex->stage[j][k]; /* rows of [lo_j, lo_j + cnt_j) */
  if (backward && !mine) return;
  int cap = ex->n[i] + ex->n[j], nreq = 0, lo, hi, plo, phi;
  comm_request_t *req = xcalloc((size_t)cap, sizeof *req);
  int my_lo = ex->lo[i], my_hi = ex->lo[i] + ex->cnt[i];
  comm_group_begin(ex->world); /* on a GPU: the transfers below go as one NCCL group */
  if (stage) /* this rank consumes [lo_j, hi_j) from the producer's ranks */
    for (int r = ex->first[i]; r < ex->first[i] + ex->n[i]; r++) {
      if (!node_share(ex, i, r, &plo, &phi) || !overlap(plo, phi, ex->lo[j], ex->lo[j] + ex->cnt[j], &lo, &hi))
        continue;
      float *s = stage + (size_t)(lo - ex->lo[j]) * sz;
      size_t n = (size_t)(hi - lo) * sz;
      if (r == me && backward)
        be->axpy(n, 1.0f, s, mine + (size_t)(lo - my_lo) * sz);
      else if (r == me)
        be->copy(s, mine + (size_t)(lo - my_lo) * sz, n);
      else if (backward)
        comm_isend(ex->world, s, n, r, k, cat, &req[nreq++]);
      else
        comm_irecv(ex->world, s, n, r, k, cat, &req[nreq++]);
    }
  int served = nreq;
  if (ex->cnt[i] > 0) /* this rank owns [my_lo, my_hi): serve the other consumers */
    for (int r = ex->first[j]; r < ex->first[j] + ex->n[j]; r++) {
      int clo, chi;
      if (r == me || !node_share(ex, j, r, &clo, &chi) || !overlap(my_lo, my_hi, clo, chi, &lo, &hi)) continue;
      size_t at = (size_t)(lo - my_lo) * sz, n = (size_t)(hi - lo) * sz;
      if (backward)
        comm_irecv(ex->world, ex->recv + at, n, r, k, cat, &req[nreq++]);
      else
        comm_isend(ex->world, mine + at, n, r, k, cat, &req[nreq++]);
    }
  comm_waitall(ex->world, req, nreq, cat);
  if (backward) /* the owner adds the consumers' parts (disjoint ranges of its share) */
    for (int r = ex->first[j], q = served; r < ex->first[j] + ex->n[j]; r++) {
      int clo, chi;
      if (r == me || !node_share(ex, j, r, &clo, &chi) || !overlap(my_lo, my_hi, clo, chi, &lo, &hi)) continue;
      size_t at = (size_t)(lo - my_lo) * sz;
      be->axpy((size_t)(hi - lo) * sz, 1.0f, ex->recv + at, mine + at);
      q++;
    }
  free(req);
}

/* Samples [lo, lo + cnt) of the batch into x_dst (input rows) and y_dst (target rows), either NULL.
 * A host-memory backend's buffers are filled in place; a device's through the host batch. */
static void fetch_range(burst_exec_t *ex, const dataset_t *ds, data_split_t split, const uint64_t *ids, int lo,
                        int cnt, float *x_dst, float *y_dst) {
  if (cnt <= 0) return;
  const graph_t *g = ex->g;
  const backend_t *be = ex->m.be;
  size_t xs = out_floats(g, 0), ys = (size_t)g->targets_per_sample;
  float *x = be->host_memory && x_dst ? x_dst : ex->x, *y = be->host_memory && y_dst ? y_dst : ex->y;
  dataset_get(ds, split, ids + lo, cnt, x, y);
  if (x_dst && x != x_dst) be->upload(x_dst, x, (size_t)cnt * xs);
  if (y_dst && y != y_dst) be->upload(y_dst, y, (size_t)cnt * ys);
}

/* The input rows of this rank's nodes and the targets of its share of the output. */
static void fetch(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids) {
  const graph_t *g = ex->g;
  int out = graph_output(g);
  int same = ex->lo[out] == ex->lo[0] && ex->cnt[out] == ex->cnt[0];
  fetch_range(ex, ds, SPLIT_TRAIN, ids, ex->lo[0], ex->cnt[0], ex->m.act[0], same ? ex->m.targets : NULL);
  if (!same) fetch_range(ex, ds, SPLIT_TRAIN, ids, ex->lo[out], ex->cnt[out], NULL, ex->m.targets);
  for (int j = 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++)
      if (g->l[j].in[k] == 0 && ex->stage[j][k])
        fetch_range(ex, ds, SPLIT_TRAIN, ids, ex->lo[j], ex->cnt[j], ex->stage[j][k], NULL);
}

/* The staged input gradients, on the rows this rank holds at their consumer (what it uses). */
static void zero_staged_grads(burst_exec_t *ex) {
  const graph_t *g = ex->g;
  for (int j = 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++)
      if (ex->dstage[j][k] && ex->cnt[j] > 0)
        ex->m.be->fill(ex->dstage[j][k], (size_t)ex->cnt[j] * out_floats(g, g->l[j].in[k]), 0.0f);
}

/* The loss (a float pair: its float and what that misses) and the stop request into the side
 * slots after the gradient slab, before the first bucket starts; a loss kept in backend memory
 * (loss_acc) is split there, and nothing waits. */
static void put_side(burst_exec_t *ex, double loss, const double *loss_acc, double stop) {
  const backend_t *be = ex->m.be;
  float *side = ex->m.grads + ex->g->params.total;
  if (loss_acc) {
    be->float_pair(loss_acc, side);
    be->fill(side + 2, 1, (float)stop);
    return;
  }
  float host[MODEL_GRAD_SIDE] = {0, 0, (float)stop};
  float_pair_rule(loss, host);
  be->upload(side, host, MODEL_GRAD_SIDE);
}

static void get_side(const burst_exec_t *ex, burst_metrics_t *mx) {
  float side[MODEL_GRAD_SIDE];
  ex->m.be->download(side, ex->m.grads + ex->g->params.total, MODEL_GRAD_SIDE);
  mx->loss = (double)side[0] + (double)side[1];
  mx->stop = side[2];
}

/* Every reduction after the backward pass, in one place: the gradient buckets' sums finished (with
 * the loss and stop riding on them where they can), or the node-shared sum of this rank's slice. */
static void finalize_grads(burst_exec_t *ex, burst_metrics_t *mx, burst_times_t *times) {
  double a = surge_now();
  /* a rank holding no parameter this step reduces no gradient: it only waits for the others' */
  ev_raise(holds_rows(ex, 1) ? EV_COLLECTIVE : EV_WAIT, EV_SYNC, 0);
  mx->summed = ex->summed;
  if (ex->shared) {
    times->backward_done = a;
    double mine[NODE_SUM_SCALARS] = {[NODE_SUM_LOSS] = mx->loss, [NODE_SUM_STOP] = mx->stop}, sum[NODE_SUM_SCALARS];
    node_sum_reduce(ex->shared, mine, sum);
    mx->loss = sum[NODE_SUM_LOSS];
    mx->stop = sum[NODE_SUM_STOP];
    times->comm += surge_now() - a;
    return;
  }
  gradsync_finish(&ex->sync);
  times->backward_done = ex->sync.backward_done;
  times->wait = ex->sync.wait_s;
  times->comm += surge_now() - a - times->wait;
  if (ex->sync.side) get_side(ex, mx);
}

/* The gradients the micro-batch being run starts from: the first zeroes the parameters' (each
 * later one adds to them); every one zeroes the activation gradients on the rows this rank holds at
 * each node (what it uses) and the staged ones. */
static void zero_micro_grads(burst_exec_t *ex, int first) {
  model_t *m = &ex->m;
  if (first)
    model_zero_grads_rows(m, ex->cnt);
  else
    for (int i = 1; i < ex->g->n; i++) model_zero_act_grad(m, i, 0, ex->cnt[i]);
  zero_staged_grads(ex);
}

/* Forward event e of the pass order: a start routes the node's inputs in and runs it up to its sum
 * (or all of it), a finish completes it. */
static void forward_event(burst_exec_t *ex, const pass_event_t *e, burst_times_t *times) {
  int j = e->node, member = ex->cnt[j] > 0;
  double a = surge_now(), b = a;
  if (!e->finish) {
    if (ex->before_forward) ex->before_forward(ex->before_arg, j);
    route_event(ex, j, EV_ROUTE_IN);
    for (int k = 0; k < ex->g->l[j].nin; k++)
      if (ex->g->l[j].in[k] != 0) route(ex, j, k, 0);
    b = surge_now();
    if (member && model_node_runs(&ex->m, j, 0)) overlap_flying(ex, j);
    if (member) model_forward_node_start(&ex->m, j, 0, ex->cnt[j]);
  } else if (member) {
    if (ex->group_of && ex->group_of[j]) overlap_flying(ex, j);
    model_forward_node_finish(&ex->m, j, 0, ex->cnt[j]);
  }
  times->comm += b - a;
  times->forward += surge_now() - b;
}

/* Backward event e: a start runs the node's backward up to its sum (or all of it), a finish
 * completes it and sends its input gradients back to their producers' ranks; the gradient sync hears
 * when parameter gradients are final (a batch norm's are this rank's sums, added before its sum
 * starts; the others' after their routes, as before). */
static void backward_event(burst_exec_t *ex, const pass_event_t *e, int last, burst_times_t *times) {
  int j = e->node, member = ex->cnt[j] > 0;
  double a = surge_now(), b;
  if (!e->finish) {
    if (member && model_node_runs(&ex->m, j, 1)) overlap_flying(ex, j);
    if (member) model_backward_node_start(&ex->m, j, 0, ex->cnt[j]);
    b = surge_now();
  } else {
    if (member && ex->group_of && ex->group_of[j]) overlap_flying(ex, j);
    if (member) model_backward_node_finish(&ex->m, j, 0, ex->cnt[j]);
    b = surge_now();
    route_event(ex, j, EV_ROUTE_OUT);
    for (int k = 0; k < ex->g->l[j].nin; k++)
      if (ex->g->l[j].in[k] != 0) route(ex, j, k, 1);
  }
  if (last && e->sync_node > 0) gradsync_node_done(&ex->sync, e->sync_node);
  times->backward += b - a;
  times->comm += surge_now() - b;
}

/* One micro-batch forward and backward, its loss added into *loss, in the pass order's events. Every
 * rank runs the same sequence of events, each doing its own part of an event (a rank outside a
 * node's set only its routes), because MPI wants the collectives of one communicator started in
 * the same order on all of its ranks: a node's sum on its set's communicator, the gradient buckets
 * on theirs, and the routes' messages on world (each route waits for its own before the next) all
 * start at fixed events of that one sequence, computed from the graph and the plan alone
 * (pass_order.h), not from what this rank happens to be waiting for. In the last one (last),
 * the gradient sync starts bucket by bucket during the backward pass, with the step's loss (all
 * micro-batches') and stop request in the side slots. */
static void run_micro(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale, int first,
                      int last, const burst_metrics_t *mx, double *loss, burst_times_t *times) {
  const graph_t *g = ex->g;
  model_t *m = &ex->m;
  int out = graph_output(g);
  double t0 = surge_now();
  fetch(ex, ds, ids);
  times->data += surge_now() - t0;

  zero_micro_grads(ex, first);
  if (last) gradsync_begin(&ex->sync);
  for (int e = 0; e < ex->order.nfwd; e++) forward_event(ex, &ex->order.fwd[e], times);
  double l0 = surge_now();
  ev_raise(EV_WORK, EV_LOSS, 0);
  double *acc = mx->loss_acc && !ex->shared ? mx->loss_acc : NULL; /* the loss kept in backend memory */
  if (ex->cnt[out] > 0 && acc)
    model_loss_add(m, 0, ex->cnt[out], grad_scale, acc);
  else if (ex->cnt[out] > 0)
    *loss += model_loss(m, 0, ex->cnt[out], grad_scale);
  if (last && ex->sync.side) put_side(ex, *loss, acc, mx->stop);
  times->forward += surge_now() - l0;
  for (int e = 0; e < ex->order.nbwd; e++) backward_event(ex, &ex->order.bwd[e], last, times);
}

void burst_exec_step(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale,
                     burst_metrics_t *mx, burst_times_t *times) {
  model_t *m = &ex->m;
  memset(times, 0, sizeof *times);
  m->ids = ids; /* node j's rows are positions lo[j].. of the batch (m->id_lo): dropout keys on ids */
  m->step = (uint64_t)mx->step;
  ex->step_sums = ex->step_overlapped = 0;
  /* the step's loss is left in backend memory where it is this rank's alone: the side slots bring the
   * job's sum back to the host (get_side) */
  mx->loss_on_device = mx->loss_acc && !ex->sync.side && !ex->shared;
  double loss = 0;
  for (int u = 0; u < ex->micro; u++) {
    micro_batch(ex, u);
    run_micro(ex, ds, ids, grad_scale, u == 0, u == ex->micro - 1, mx, &loss, times);
  }
  mx->loss = loss;
  mx->sums = ex->step_sums;
  mx->sums_overlapped = ex->step_overlapped;
  finalize_grads(ex, mx, times);
}

/* One chunk of an evaluation: every node on every position of it. */
static void eval_chunk(void *ctx, const dataset_t *ds, data_split_t split, const uint64_t *ids, int B, int c,
                       double sums[2]) {
  burst_exec_t *ex = ctx;
  model_t *m = &ex->m;
  (void)c;
  fetch_range(ex, ds, split, ids, 0, B, m->act[0], m->targets);
  model_forward(m, B);
  sums[0] += model_loss(m, 0, B, 0.0f);
  sums[1] += (double)model_correct(m, 0, B);
}

void burst_exec_eval(burst_exec_t *ex, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]) {
  model_t *m = &ex->m;
  model_wire_default(m); /* every node on every position of the chunk */
  m->train = 0;          /* running statistics, no dropout: no sums over ranks either */
  data_walk(ds, split, n, (uint64_t)ex->world->rank, (uint64_t)ex->world->size, ex->window, eval_chunk, ex, sums);
  m->train = 1;
  for (int j = 1; j < ex->g->n; j++) /* back to the plan's wiring */
    for (int k = 0; k < ex->g->l[j].nin; k++) {
      if (ex->stage[j][k]) m->in[j][k] = ex->stage[j][k];
      if (ex->stage[j][k]) m->din[j][k] = ex->dstage[j][k];
    }
}

void burst_exec_gather(const burst_exec_t *ex, float *slabs[], int nslabs) {
  if (ex->all_ranks_everywhere) return;
  const slab_layout_t *L = &ex->g->params;
  for (int t = 0; t < L->n; t++)
    for (int s = 0; s < nslabs; s++)
      if (slabs[s])
        comm_bcast(ex->world, slabs[s] + L->t[t].off, L->t[t].n * sizeof(float), ex->first[L->t[t].owner],
                   TRAFFIC_OTHER);
}

void burst_exec_gather_bufs(const burst_exec_t *ex) {
  if (ex->all_ranks_everywhere && !ex->local_bufs) return;
  const slab_layout_t *L = &ex->g->bufs;
  for (int t = 0; t < L->n; t++)
    comm_bcast(ex->world, ex->m.bufs + L->t[t].off, L->t[t].n * sizeof(float), ex->first[L->t[t].owner],
               TRAFFIC_OTHER);
}
