#include "burst/executor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "mux/mux.h"

/* Foreground states of a step (mux/mux.h), each at its own site so that its expected duration is
 * learnt per place: the route before node i's forward (4i), its compute (4i+1, 4i+2 backward), the
 * route after its backward (4i+3), the barrier (1) and the gradient sync (2). */
enum { SITE_BARRIER = 1, SITE_SYNC = 2, SITE_LOSS = 3 };

/* Positions [lo, hi) of the global batch that `rank` computes in node's set (empty when the rank is
 * not in it); the share rule of train.c. Returns whether the share is non-empty. */
static int share_of(const burst_exec_t *ex, int node, int rank, int *lo, int *hi) {
  int k = rank - ex->first[node], n = ex->n[node];
  *lo = *hi = 0;
  if (k < 0 || k >= n) return 0;
  *lo = (int)((long)ex->batch * k / n);
  *hi = (int)((long)ex->batch * (k + 1) / n);
  return *hi > *lo;
}

static size_t out_floats(const graph_t *g, int node) { return shape_size(g->l[node].out); }

/* The node owning slab tensor t (the tied output layer's weight belongs to its embedding). */
static int owner_of_tensor(const graph_t *g, int t) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->l[i].np; k++)
      if (g->l[i].param[k] == t) return i;
  return -1;
}

static void check_tied_weights(const burst_exec_t *ex) {
  const graph_t *g = ex->g;
  for (int i = 0; i < g->n; i++) {
    if (g->l[i].kind != LAYER_TIED_LINEAR) continue;
    int e = owner_of_tensor(g, g->l[i].tied_param);
    if (e >= 0 && (ex->n[e] != ex->n[i] || ex->first[e] != ex->first[i]))
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
    }
    ex->set_of[i] = s;
  }
  free(rep);
}

/* The positions this rank fetches: the shares of its consumers of the input, and its share of the
 * output (for the targets), covered by one range. */
static void data_range(burst_exec_t *ex) {
  const graph_t *g = ex->g;
  int me = ex->world->rank, lo = ex->batch, hi = 0;
  for (int i = 1; i < g->n; i++) {
    int uses_input = i == graph_output(g);
    for (int k = 0; k < g->l[i].nin; k++) uses_input |= g->l[i].in[k] == 0;
    int a, b;
    if (!uses_input || !share_of(ex, i, me, &a, &b)) continue;
    if (a < lo) lo = a;
    if (b > hi) hi = b;
  }
  ex->data_lo = hi > lo ? lo : 0;
  ex->data_hi = hi > lo ? hi : 0;
}

void burst_exec_init(burst_exec_t *ex, const burst_plan_t *plan, const graph_t *g, model_t *m, comm_t *world,
                     int B, size_t sample_floats, size_t target_floats) {
  memset(ex, 0, sizeof *ex);
  if (plan->nodes != g->n) surge_input_error("burst plan: %d nodes for a graph of %d", plan->nodes, g->n);
  if (m->B_cap < B) surge_runtime_error("burst executor: model buffers hold %d samples, the batch has %d", m->B_cap, B);
  ex->g = g;
  ex->m = m;
  ex->world = world;
  ex->batch = B;
  ex->n = xcalloc((size_t)g->n, sizeof *ex->n);
  ex->first = xcalloc((size_t)g->n, sizeof *ex->first);
  for (int i = 0; i < g->n; i++) {
    ex->n[i] = plan->n[i];
    ex->first[i] = plan->first[i];
    if (ex->n[i] < 1 || ex->first[i] < 0 || ex->first[i] + ex->n[i] > world->size)
      surge_input_error("burst plan: node %d '%s' uses ranks %d..%d but the job has %d ranks (0..%d)", i,
                        g->l[i].name, ex->first[i], ex->first[i] + ex->n[i] - 1, world->size, world->size - 1);
  }
  check_tied_weights(ex);
  make_sets(ex);
  data_range(ex);
  int len = ex->data_hi - ex->data_lo;
  ex->x = xcalloc(surge_mul_size(len ? (size_t)len : 1, sample_floats, "input batch"), sizeof(float));
  ex->y = xcalloc(surge_mul_size(len ? (size_t)len : 1, target_floats, "target batch"), sizeof(float));
  size_t scratch = 1;
  for (int i = 1; i < g->n; i++) {
    size_t s = (size_t)burst_per_rank(B, ex->n[i]) * out_floats(g, i);
    if (m->dact[i] && s > scratch) scratch = s;
  }
  ex->recv = m->be->alloc(scratch);
}

void burst_exec_free(burst_exec_t *ex) {
  for (int s = 0; s < ex->nsets; s++) comm_free(&ex->sets[s]);
  ex->m->be->free(ex->recv);
  free(ex->sets);
  free(ex->set_of);
  free(ex->n);
  free(ex->first);
  free(ex->x);
  free(ex->y);
  memset(ex, 0, sizeof *ex);
}

/* A position range moved between an owner of src (a rank of src's set) and a consumer (a rank of
 * node's set that does not own it). */
typedef struct transfer {
  int peer, lo, hi, owner_lo; /* owner_lo: the owner's first position (the receive scratch offset) */
} transfer_t;

/* The transfers of input slot k of node: forward, owners send the consumers' positions; backward,
 * consumers send their gradients of them back. Collective over the two sets; messages of one
 * (sender, receiver) pair are a single range, so the slot number is a unique tag. */
static void route(burst_exec_t *ex, int node, int k, int backward) {
  const graph_t *g = ex->g;
  model_t *m = ex->m;
  int src = g->l[node].in[k], me = ex->world->rank;
  size_t sz = out_floats(g, src);
  float *buf = backward ? m->dact[src] : m->act[src];
  traffic_t cat = backward ? TRAFFIC_ACT_GRAD : TRAFFIC_ACT;
  int cap = ex->n[src] + ex->n[node];
  comm_request_t *req = xcalloc((size_t)cap, sizeof *req);
  transfer_t *as_consumer = xcalloc((size_t)cap, sizeof *as_consumer), *as_owner = xcalloc((size_t)cap, sizeof *as_owner);
  int nreq = 0, nc = 0, no = 0, mlo, mhi, olo, ohi;
  share_of(ex, src, me, &olo, &ohi);
  if (share_of(ex, node, me, &mlo, &mhi)) /* this rank consumes [mlo, mhi): receive what it does not own */
    for (int r = ex->first[src]; r < ex->first[src] + ex->n[src]; r++) {
      int lo, hi;
      if (r == me || !share_of(ex, src, r, &lo, &hi)) continue;
      if (lo < mlo) lo = mlo;
      if (hi > mhi) hi = mhi;
      if (lo < hi) as_consumer[nc++] = (transfer_t){r, lo, hi, 0};
    }
  if (ohi > olo) /* this rank owns [olo, ohi): serve the consumers that do not own it */
    for (int r = ex->first[node]; r < ex->first[node] + ex->n[node]; r++) {
      int lo, hi;
      if (r == me || !share_of(ex, node, r, &lo, &hi)) continue;
      if (lo < olo) lo = olo;
      if (hi > ohi) hi = ohi;
      if (lo < hi) as_owner[no++] = (transfer_t){r, lo, hi, olo};
    }
  for (int c = 0; c < nc; c++) {
    transfer_t *t = &as_consumer[c];
    size_t n = (size_t)(t->hi - t->lo) * sz;
    if (backward)
      comm_isend(ex->world, buf + (size_t)t->lo * sz, n, t->peer, k, cat, &req[nreq++]);
    else
      comm_irecv(ex->world, buf + (size_t)t->lo * sz, n, t->peer, k, cat, &req[nreq++]);
  }
  for (int o = 0; o < no; o++) {
    transfer_t *t = &as_owner[o];
    size_t n = (size_t)(t->hi - t->lo) * sz;
    if (backward)
      comm_irecv(ex->world, ex->recv + (size_t)(t->lo - t->owner_lo) * sz, n, t->peer, k, cat, &req[nreq++]);
    else
      comm_isend(ex->world, buf + (size_t)t->lo * sz, n, t->peer, k, cat, &req[nreq++]);
  }
  comm_waitall(ex->world, req, nreq, cat);
  if (backward) {
    /* the owner adds the consumers' parts; a consumer's sent part is cleared so that another
     * consumer of src on this rank adds only its own */
    for (int o = 0; o < no; o++) {
      transfer_t *t = &as_owner[o];
      size_t n = (size_t)(t->hi - t->lo) * sz;
      m->be->axpy(n, 1.0f, ex->recv + (size_t)(t->lo - t->owner_lo) * sz, buf + (size_t)t->lo * sz);
    }
    for (int c = 0; c < nc; c++) {
      transfer_t *t = &as_consumer[c];
      m->be->fill(buf + (size_t)t->lo * sz, (size_t)(t->hi - t->lo) * sz, 0.0f);
    }
  }
  free(req);
  free(as_consumer);
  free(as_owner);
}

static void fetch(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids) {
  int lo = ex->data_lo, len = ex->data_hi - ex->data_lo;
  if (len == 0) return;
  const graph_t *g = ex->g;
  size_t xs = out_floats(g, 0), ys = (size_t)g->targets_per_sample;
  dataset_get(ds, SPLIT_TRAIN, ids + lo, len, ex->x, ex->y);
  ex->m->be->upload(ex->m->act[0] + (size_t)lo * xs, ex->x, (size_t)len * xs);
  ex->m->be->upload(ex->m->targets + (size_t)lo * ys, ex->y, (size_t)len * ys);
}

/* Sum each node's parameter gradients over its set. */
static void sync_grads(burst_exec_t *ex) {
  const graph_t *g = ex->g;
  for (int i = 1; i < g->n; i++) {
    comm_t *c = &ex->sets[ex->set_of[i]];
    if (c->size < 2) continue;
    for (int k = 0; k < g->l[i].np; k++) {
      int t = g->l[i].param[k];
      comm_allreduce_sum(c, model_tensor(ex->m->grads, g, t), g->params.t[t].n, TRAFFIC_DP);
    }
  }
}

double burst_exec_step(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale,
                       burst_times_t *times) {
  const graph_t *g = ex->g;
  model_t *m = ex->m;
  int me = ex->world->rank, out = graph_output(g), lo, hi;
  memset(times, 0, sizeof *times);
  double t0 = surge_now();
  fetch(ex, ds, ids);
  double t1 = surge_now();
  times->data = t1 - t0;

  model_zero_grads(m);
  for (int i = 1; i < g->n; i++) {
    double a = surge_now();
    int member = share_of(ex, i, me, &lo, &hi);
    mux_fg_set(member ? MUX_WAITING : MUX_INACTIVE, 4 * i);
    for (int k = 0; k < g->l[i].nin; k++)
      if (g->l[i].in[k] != 0) route(ex, i, k, 0);
    double b = surge_now();
    if (member) {
      mux_fg_set(MUX_COMPUTING, 4 * i + 1);
      model_forward_node(m, i, lo, hi - lo);
    }
    times->comm += b - a;
    times->forward += surge_now() - b;
  }
  double loss = 0, l0 = surge_now();
  mux_fg_set(MUX_COMPUTING, SITE_LOSS);
  if (share_of(ex, out, me, &lo, &hi)) loss = model_loss(m, lo, hi - lo, grad_scale);
  times->forward += surge_now() - l0;

  for (int i = out; i >= 1; i--) {
    double a = surge_now();
    int member = share_of(ex, i, me, &lo, &hi);
    if (member) {
      mux_fg_set(MUX_COMPUTING, 4 * i + 2);
      model_backward_node(m, i, lo, hi - lo);
    }
    double b = surge_now();
    mux_fg_set(member ? MUX_WAITING : MUX_INACTIVE, 4 * i + 3);
    for (int k = 0; k < g->l[i].nin; k++) {
      int src = g->l[i].in[k];
      if (src != 0 && m->dact[src]) route(ex, i, k, 1);
    }
    times->backward += b - a;
    times->comm += surge_now() - b;
  }

  double a = surge_now();
  mux_fg_set(MUX_WAITING, SITE_BARRIER);
  comm_barrier(ex->world);
  double b = surge_now();
  mux_fg_set(MUX_ALLREDUCE, SITE_SYNC);
  sync_grads(ex);
  times->wait = b - a;
  times->comm += surge_now() - b;
  return loss;
}

double burst_exec_grad_norm(const burst_exec_t *ex) {
  const graph_t *g = ex->g;
  double sumsq = 0;
  for (int i = 1; i < g->n; i++) {
    if (ex->world->rank != ex->first[i]) continue;
    for (int k = 0; k < g->l[i].np; k++) {
      int t = g->l[i].param[k];
      sumsq += ex->m->be->sumsq(model_tensor(ex->m->grads, g, t), g->params.t[t].n);
    }
  }
  comm_allreduce_sum_double(ex->world, &sumsq, 1, TRAFFIC_OTHER);
  return sqrt(sumsq);
}

void burst_exec_gather(const burst_exec_t *ex, float *slabs[], int nslabs) {
  const graph_t *g = ex->g;
  for (int i = 1; i < g->n; i++)
    for (int k = 0; k < g->l[i].np; k++) {
      const slab_tensor_t *t = &g->params.t[g->l[i].param[k]];
      for (int s = 0; s < nslabs; s++)
        if (slabs[s]) comm_bcast(ex->world, slabs[s] + t->off, t->n * sizeof(float), ex->first[i], TRAFFIC_OTHER);
    }
}
