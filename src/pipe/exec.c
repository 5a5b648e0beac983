#include "pipe/exec.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/events.h"
#include "core/share.h"
#include "data/walk.h"
#include "core/timer.h"
#include "pipe/p2p_cb.h"

pipe_grid_t pipe_grid_of(int tp, int pp, int dp, int r) {
  return (pipe_grid_t){.tp = tp, .pp = pp, .dp = dp, .t = r % tp, .d = (r / tp) % dp, .p = r / (tp * dp)};
}

/* A group of the ranks with the same color (color < 0: none), ordered by key; the job's log counts
 * its traffic. */
static void split(pipe_exec_t *ex, int color, int key, comm_t *c) {
  comm_split(ex->world, color, key, c);
  if (c->size > 0) c->root_meter = &ex->world->meter;
}

static void make_groups(pipe_exec_t *ex) {
  const pipe_grid_t *G = &ex->grid;
  split(ex, G->p * G->dp + G->d, G->t, &ex->tp);
  split(ex, G->p * G->tp + G->t, G->d, &ex->groups[PIPE_DP]);
  split(ex, G->d * G->tp + G->t, G->p, &ex->pp);
  int ends = G->pp > 1 && (G->p == 0 || G->p == G->pp - 1);
  split(ex, ends ? G->d * G->tp + G->t : -1, G->p, &ex->embed);
  if (ex->co.fe || ex->shard) split(ex, ends ? G->t : -1, G->p * G->dp + G->d, &ex->groups[PIPE_FE]);
}

/* The tensor-parallel sums at node boundaries (pipe/tp.h), from the nodes' roles (nn/layer.h): g after
 * row-parallel layers and the vocabulary-parallel embedding, f after column-parallel layers' backward
 * (qkv, fc, the output layer). */
static void mark_reductions(pipe_exec_t *ex) {
  const graph_t *lg = &ex->lg;
  ex->reduce_out = xcalloc((size_t)lg->n, 1);
  ex->reduce_in = xcalloc((size_t)lg->n, 1);
  if (ex->grid.tp == 1) return;
  for (int i = 1; i < lg->n; i++) {
    layer_role_t r = lg->l[i].role;
    ex->reduce_out[i] = r == ROLE_ROW || r == ROLE_VOCAB;
    ex->reduce_in[i] = r == ROLE_COLUMN;
  }
}

/* The fusion pass's question (model_init_fused): a stage runs every node on the same samples, so
 * every fused form, epilogue and overwritten gradient is allowed; but the logits' gradient is not
 * written over the logits (node == next: the vocabulary-parallel loss, tp_xent_loss, reads them
 * while it writes it). */
static int stage_allows(void *arg, int node, int next) {
  (void)arg;
  return node != next;
}

/* After node j's forward on rows [off, off + B): its output summed over the tensor-parallel shards
 * where its role asks (a row-parallel layer's); also the model's hook after a recomputed forward. */
static void reduce_out_of(void *arg, int j, int off, int B) {
  pipe_exec_t *ex = arg;
  size_t n = shape_size(ex->lg.l[j].out);
  if (ex->reduce_out[j]) tp_allreduce(&ex->tp, ex->m.act[j] + (size_t)off * n, (size_t)B * n);
}

/* Every tensor of the part is summed over the data-parallel group (but the word embedding under fe);
 * its gradient is final after the backward of its first user (the embedding for the tied word
 * embedding). With sc every rank runs the PowerSGD reducer (so every rank lists its checkpoint
 * region), at rank dp_rank on stages below sc_stages and at rank 0 (exact) on the others. Sharded,
 * stages below sc_stages sum their data-parallel buckets with PowerSGD (whole sums, each rank
 * updating its shard), the others reduce-scatter them, and the word embedding is reduce-scattered
 * over the fused group on every stage (exact, as fe sums it). */
/* Per tensor of the part: 1 for one every tensor-parallel rank holds whole (a layer norm's), where
 * tensor parallelism puts it at another offset of each rank's slab: a sharded optimizer cuts none, so
 * that each rank holding its moments holds all of them (sync/shard.h). NULL: tp = 1. */
static unsigned char *every_shard_tensors(const pipe_exec_t *ex) {
  if (ex->grid.tp == 1) return NULL;
  const slab_layout_t *L = &ex->lg.params;
  unsigned char *every = xcalloc((size_t)L->n + 1, 1);
  gpt_piece_t q[GPT_MAX_PIECES];
  for (int t = 0; t < ex->g->params.n; t++) {
    int n = gpt_part_pieces(ex->g, &ex->part, &ex->lg, t, q);
    for (int j = 0; j < n; j++)
      for (int k = 0; k < L->n && q[j].n && q[j].hold == GPT_EVERY_SHARD; k++)
        every[k] |= q[j].off >= L->t[k].off && q[j].off < L->t[k].off + L->t[k].n;
  }
  return every;
}

static void make_sync(pipe_exec_t *ex, const gradsync_opts_t *opts, uint64_t seed) {
  const slab_layout_t *L = &ex->lg.params;
  int *group = xcalloc((size_t)L->n + 1, sizeof *group), *ready = xcalloc((size_t)L->n + 1, sizeof *ready);
  for (int t = 0; t < L->n; t++) ready[t] = L->t[t].owner;
  if (ex->groups[PIPE_FE].size > 0 && ex->wte >= 0) group[ex->wte] = ex->shard ? PIPE_FE : -1;
  gradsync_opts_t o = *opts;
  unsigned char *every = ex->shard ? every_shard_tensors(ex) : NULL;
  o.shard_atomic = every;
  o.be = ex->m.be;
  o.job = ex->world;
  static const unsigned char fe_exact[2] = {[PIPE_FE] = 1}; /* sharded: the word embedding's fused sum stays exact */
  o.exact_groups = fe_exact;
  if (ex->co.sc_stages > 0) {
    o.reducer = "powersgd";
    o.psgd = (reducer_psgd_opts_t){.rank = ex->grid.p < ex->co.sc_stages ? ex->co.dp_rank : 0,
                                   .min_rate = ex->co.min_rate,
                                   .warmup_steps = (long)(ex->co.warmup_fraction * (double)ex->co.steps),
                                   .run_steps = ex->co.steps,
                                   .seed = seed};
  }
  gradsync_init(&ex->sync, L, group, ready, ex->groups, &ex->groups[PIPE_DP], ex->m.grads, &o);
  free(every);
  free(group);
  free(ready);
}

/* Positions [*lo, *lo + *cnt) of the global batch of micro-batch k of this rank's replica. */
static void micro_batch(const pipe_exec_t *ex, int k, int *lo, int *cnt) {
  share_t replica = share_of((uint64_t)ex->batch, (uint64_t)ex->grid.d, (uint64_t)ex->grid.dp);
  share_t mb = share_of(replica.hi - replica.lo, (uint64_t)k, (uint64_t)ex->M);
  *lo = (int)(replica.lo + mb.lo);
  *cnt = (int)(mb.hi - mb.lo);
}

void pipe_exec_init(pipe_exec_t *ex, const graph_t *g, const gpt_dims_t *dims, const pipe_grid_t *grid,
                    const pipe_exec_opts_t *o, const backend_t *be, comm_t *world, const gradsync_opts_t *sync,
                    const compress_opts_t *co) {
  const int first_block = o->first_block, blocks = o->blocks, M = o->M, B = o->B;
  const pipe_sched_t sched = o->sched;
  const uint64_t seed = o->seed;
  memset(ex, 0, sizeof *ex);
  ex->co = *co;
  ex->g = g;
  ex->dims = *dims;
  ex->grid = *grid;
  ex->world = world;
  ex->M = M;
  ex->sched = sched;
  ex->batch = B;
  ex->shard = sync->shard;
  make_groups(ex);
  const pipe_grid_t *G = grid;
  ex->part = (gpt_part_t){.tp = G->tp, .tp_rank = G->t, .first_block = first_block, .blocks = blocks,
                          .first = G->p == 0, .last = G->p == G->pp - 1};
  char err[256];
  if (gpt_part_build(dims, &ex->part, &ex->lg, err, sizeof err) != 0)
    surge_input_error("3d layout: the part of stage %d (blocks %d..%d, tensor shard %d of %d) does not fit "
                      "together: %s", G->p, first_block, first_block + blocks - 1, G->t, G->tp, err);
  int share_max = (B + G->dp - 1) / G->dp; /* shares differ by at most one */
  ex->mb_cap = (share_max + M - 1) / M;
  ex->slots = pipe_in_flight(sched, G->pp, M, G->p);
  int window = ex->slots * ex->mb_cap;
  ex->lg.recompute = g->recompute;
  /* a stage's backward runs its nodes from the last down, one micro-batch at a time in its slot's
   * rows: gradients whose lives do not overlap there share buffers */
  model_init_on(&ex->m, &ex->lg, be, window, stage_allows, ex, NULL, NULL, model_reverse_order);
  ex->m.reforward_hook = reduce_out_of;
  ex->m.reforward_arg = ex;
  mark_reductions(ex);
  size_t row = (size_t)dims->T * (size_t)dims->width;
  if (!ex->part.first) { /* the input's gradient goes back to the previous stage */
    ex->din = be->alloc(surge_mul_size((size_t)window, row, "stage input gradient"));
    ex->ring = ex->slots + 1; /* the send of micro-batch k's gradient has a whole round of passes */
    ex->dsend = be->alloc(surge_mul_size((size_t)(ex->ring * ex->mb_cap), row, "stage input gradient sends"));
    ex->m.act_floats += (size_t)(window + ex->ring * ex->mb_cap) * row;
    for (int j = 1; j < ex->lg.n; j++)
      for (int k = 0; k < ex->lg.l[j].nin; k++)
        if (ex->lg.l[j].in[k] == 0) ex->m.din[j][k] = ex->din;
  }
  if (ex->part.last) {
    int V = dims->vocab / G->tp;
    tp_xent_init(&ex->xent, be, &ex->tp, V, G->t * V, dims->vocab_valid, window * dims->T);
  }
  ex->ops = xcalloc(2 * (size_t)M, sizeof *ex->ops);
  pipe_schedule(sched, G->pp, M, G->p, ex->ops);
  /* the timeline's common start: rank 0's clock now, read on every rank's own clock */
  double offset = comm_clock_offset(world, 5), epoch = surge_now();
  comm_bcast(world, &epoch, sizeof epoch, 0, TRAFFIC_OTHER);
  int cap = 6 * M + 4; /* passes, receive and send waits of every micro-batch, and the syncs */
  pipe_timeline_init(&ex->tl, cap < PIPE_TIMELINE_MAX ? cap : PIPE_TIMELINE_MAX, world->rank, G->p, epoch - offset);
  pipe_p2p_init(&ex->p2p, &ex->pp, M);
  if (o->scatter_gather && G->tp > 1) pipe_p2p_scatter_gather(&ex->p2p, &ex->tp);
  /* the word embedding: the first stage's table, or the last stage's output weight (its replica) */
  ex->wte = ex->part.first ? ex->lg.l[1].param[0] : ex->part.last ? ex->lg.l[ex->lg.n - 1].param[0] : -1;
  size_t host = surge_mul_size((size_t)window, (size_t)dims->T, "host batch");
  ex->x = xcalloc(host, sizeof(float));
  ex->y = xcalloc(host, sizeof(float));
  ex->mb_rows = xcalloc((size_t)M, sizeof *ex->mb_rows);
  for (int k = 0; k < M; k++) {
    int lo, cnt;
    micro_batch(ex, k, &lo, &cnt);
    ex->mb_rows[k] = cnt * dims->T;
  }
  if (co->cb) {
    pipe_cb_opts_t cb = {.be = be, .sched = sched, .width = dims->width, .rank = co->cb_rank, .lep = co->lep,
                         .parts = pipe_cb_parts(o->scatter_gather, G->tp, dims->T),
                         .epilogue_only = co->epilogue_only, .min_rate = co->min_rate, .rows = ex->mb_rows,
                         .ring = ex->ring ? ex->ring : 1, .slots = ex->slots, .inputs = ex->m.act[0],
                         .slot_floats = (size_t)ex->mb_cap * row, .seed = seed, .job = world};
    pipe_cb_install(&ex->p2p, &cb);
  }
  make_sync(ex, sync, seed);
}

void pipe_exec_free(pipe_exec_t *ex) {
  const backend_t *be = ex->m.be;
  gradsync_free(&ex->sync);
  if (ex->co.cb) pipe_cb_remove(&ex->p2p);
  pipe_p2p_free(&ex->p2p);
  pipe_timeline_free(&ex->tl);
  if (ex->part.last) tp_xent_free(&ex->xent);
  if (ex->din) be->free(ex->din);
  if (ex->dsend) be->free(ex->dsend);
  model_free(&ex->m);
  graph_free(&ex->lg);
  comm_free(&ex->tp);
  comm_free(&ex->groups[PIPE_DP]);
  comm_free(&ex->pp);
  comm_free(&ex->embed);
  if (ex->co.fe || ex->shard) comm_free(&ex->groups[PIPE_FE]);
  free(ex->mb_rows);
  free(ex->reduce_out);
  free(ex->reduce_in);
  free(ex->ops);
  free(ex->x);
  free(ex->y);
  memset(ex, 0, sizeof *ex);
}

/* ---- one micro-batch */

static size_t out_floats(const graph_t *g, int i) { return shape_size(g->l[i].out); }


/* Token ids into input rows [off, ...) (first stage) and targets into target rows (last stage). */
static void fetch(pipe_exec_t *ex, const dataset_t *ds, data_split_t split, const uint64_t *ids, int cnt, int off) {
  if (!ex->part.first && !ex->part.last) return;
  size_t T = (size_t)ex->dims.T;
  dataset_get(ds, split, ids, cnt, ex->x, ex->y);
  if (ex->part.first) ex->m.be->upload(ex->m.act[0] + (size_t)off * T, ex->x, (size_t)cnt * T);
  if (ex->part.last) ex->m.be->upload(ex->m.targets + (size_t)off * T, ex->y, (size_t)cnt * T);
}

/* Forward of nodes 1.. on rows [off, off + B), with the tensor-parallel sums. */
static void forward_nodes(pipe_exec_t *ex, int off, int B) {
  for (int j = 1; j < ex->lg.n; j++) {
    if (ex->before_forward) ex->before_forward(ex->before_arg, j);
    model_forward_node(&ex->m, j, off, B);
    reduce_out_of(ex, j, off, B);
  }
}

/* A slot used again: its gradients start from zero (its rows of every gradient buffer that is added
 * into), after the send of its output has completed. */
static void reuse_slot(pipe_exec_t *ex, int k) {
  int old = k - ex->slots;
  if (old < 0) return;
  p2p_wait_send(&ex->p2p, P2P_SEND_ACT, old);
  const backend_t *be = ex->m.be;
  const int off = (k % ex->slots) * ex->mb_cap;
  for (int i = 1; i < ex->lg.n; i++) /* a borrowed buffer (recomputation) is its lender's */
    if (!ex->m.shares[i]) model_zero_act_grad(&ex->m, i, off, ex->mb_cap);
  size_t row = out_floats(&ex->lg, 0);
  if (ex->din) be->fill(ex->din + off * row, (size_t)ex->mb_cap * row, 0.0f);
}

/* The receive of micro-batch k's input into its slot (its rows exactly: scatter-gather splits them). */
static void post_recv_act(pipe_exec_t *ex, int k) {
  int lo, B;
  micro_batch(ex, k, &lo, &B);
  size_t row = out_floats(&ex->lg, 0), off = (size_t)(k % ex->slots) * (size_t)ex->mb_cap;
  p2p_post_recv_act(&ex->p2p, k, ex->m.act[0] + off * row, (size_t)B * row);
}

static double forward_pass(pipe_exec_t *ex, const dataset_t *ds, const uint64_t *ids, int k, float grad_scale,
                           layout_step_t *t) {
  int lo, B, off = (k % ex->slots) * ex->mb_cap, out = ex->lg.n - 1;
  micro_batch(ex, k, &lo, &B);
  reuse_slot(ex, k);
  double t0 = surge_now();
  fetch(ex, ds, SPLIT_TRAIN, ids + lo, B, off);
  double t1 = surge_now();
  t->data += t1 - t0;
  if (!ex->part.first) p2p_wait_recv_act(&ex->p2p, k);
  double t2 = surge_now();
  t->comm += t2 - t1;
  ev_raise(EV_WORK, EV_MB_FORWARD, k);
  forward_nodes(ex, off, B);
  double loss = 0;
  size_t n = out_floats(&ex->lg, out), T = (size_t)ex->dims.T;
  model_t *m = &ex->m;
  if (ex->part.last)
    loss = tp_xent_loss(&ex->xent, B * ex->dims.T, m->act[out] + (size_t)off * n, m->targets + (size_t)off * T,
                        grad_scale, m->dact[out] + (size_t)off * n);
  ev_raise(EV_WORK, EV_MB_DONE, k);
  double t3 = surge_now();
  t->forward += t3 - t2;
  if (!ex->part.last) {
    p2p_send_act(&ex->p2p, k, m->act[out] + (size_t)off * n, (size_t)B * n);
    ex->p2p.grad->post_recv(&ex->p2p, k, m->dact[out] + (size_t)off * n, (size_t)B * n);
  }
  return ex->grid.t == 0 ? loss : 0;
}

static void backward_pass(pipe_exec_t *ex, int k, int final, layout_step_t *t) {
  int lo, B, slot = k % ex->slots, off = slot * ex->mb_cap;
  micro_batch(ex, k, &lo, &B);
  model_t *m = &ex->m;
  double t0 = surge_now();
  if (!ex->part.last) ex->p2p.grad->wait_recv(&ex->p2p, k);
  double t1 = surge_now();
  t->comm += t1 - t0;
  ev_raise(EV_WORK, EV_MB_BACKWARD, k);
  for (int j = ex->lg.n - 1; j >= 1; j--) {
    model_backward_node(m, j, off, B);
    if (ex->reduce_in[j] && m->din[j][0]) {
      size_t n = out_floats(&ex->lg, ex->lg.l[j].in[0]);
      tp_allreduce(&ex->tp, m->din[j][0] + (size_t)off * n, (size_t)B * n);
    }
    if (final) gradsync_node_done(&ex->sync, j);
  }
  ev_raise(EV_WORK, EV_MB_DONE, k);
  double t2 = surge_now();
  t->backward += t2 - t1;
  size_t row = out_floats(&ex->lg, 0);
  if (!ex->part.first) { /* the gradient goes from a ring of send buffers: the slot is free at once */
    int r = k % ex->ring;
    if (k >= ex->ring) p2p_wait_send(&ex->p2p, P2P_SEND_GRAD, k - ex->ring);
    float *send = ex->dsend + (size_t)r * (size_t)ex->mb_cap * row;
    m->be->copy(send, ex->din + (size_t)off * row, (size_t)B * row);
    ex->p2p.grad->send(&ex->p2p, k, send, (size_t)B * row);
    if (k + ex->slots < ex->M) /* the slot is free: its next micro-batch may arrive */
      post_recv_act(ex, k + ex->slots);
  }
}

/* The tied word embedding's two gradients (first and last stage) summed, after their data-parallel
 * sums; or, fused (fe), its first and last stage gradients of every replica summed at once. Either
 * gives sum_d g_first,d + sum_d g_last,d: the gradients are already scaled for the global batch, so the
 * data-parallel mean needs no division here. Only the embedding's own region is written. */
static void embed_sync(pipe_exec_t *ex) {
  comm_t *group = ex->groups[PIPE_FE].size > 0 ? &ex->groups[PIPE_FE] : &ex->embed;
  if (ex->shard || group->size < 2 || ex->wte < 0) return; /* sharded: its bucket summed all of it */
  const slab_tensor_t *w = &ex->lg.params.t[ex->wte];
  ev_raise(EV_COLLECTIVE, EV_SYNC, 1);
  comm_allreduce_sum(group, ex->m.grads + w->off, w->n, TRAFFIC_EMBED);
  ev_raise(EV_WORK, EV_SYNC, 1);
}

/* Every reduction after the backward pass, in one place: the last sends completed, the data-parallel
 * buckets' sums finished (exact or PowerSGD), then the tied word embedding's two gradients summed
 * (or, fused, all of its replicas at once). */
static void finalize_grads(pipe_exec_t *ex, layout_step_t *t) {
  double a = surge_now();
  p2p_wait_sends(&ex->p2p);
  ev_raise(EV_COLLECTIVE, EV_SYNC, 0);
  gradsync_finish(&ex->sync);
  ev_raise(EV_WORK, EV_SYNC, 0);
  embed_sync(ex);
  t->backward_done = ex->sync.backward_done;
  t->wait = ex->sync.wait_s;
  t->comm += surge_now() - a - t->wait;
}

void pipe_exec_step(pipe_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale, layout_step_t *t) {
  memset(t, 0, sizeof *t);
  pipe_timeline_reset(&ex->tl);
  model_t *m = &ex->m;
  model_zero_grads(m);
  size_t row = out_floats(&ex->lg, 0);
  if (ex->din) m->be->fill(ex->din, (size_t)m->B_cap * row, 0.0f);
  gradsync_begin(&ex->sync);
  if (!ex->part.first) /* every free slot may receive its micro-batch */
    for (int k = 0; k < ex->slots && k < ex->M; k++) post_recv_act(ex, k);
  for (int i = 0; i < 2 * ex->M; i++) {
    const pipe_op_t *op = &ex->ops[i];
    if (op->pass == PIPE_FORWARD) t->loss += forward_pass(ex, ds, ids, op->mb, grad_scale, t);
    else backward_pass(ex, op->mb, i == 2 * ex->M - 1, t);
  }
  finalize_grads(ex, t);
}

/* One chunk of an evaluation through the stage: received from the previous stage (or fetched), sent
 * on to the next (or scored by the last stage, shard 0 adding the sums). */
static void eval_chunk(void *ctx, const dataset_t *ds, data_split_t split, const uint64_t *ids, int B, int c,
                       double sums[2]) {
  pipe_exec_t *ex = ctx;
  model_t *m = &ex->m;
  int out = ex->lg.n - 1;
  fetch(ex, ds, split, ids, B, 0);
  if (!ex->part.first) p2p_eval_recv(&ex->p2p, c, m->act[0], (size_t)B * out_floats(&ex->lg, 0));
  forward_nodes(ex, 0, B);
  if (ex->part.last) {
    double loss = tp_xent_loss(&ex->xent, B * ex->dims.T, m->act[out], m->targets, 0.0f, NULL);
    long correct = tp_xent_correct(&ex->xent, B * ex->dims.T, m->act[out], m->targets);
    if (ex->grid.t == 0) sums[0] += loss, sums[1] += (double)correct;
  } else {
    p2p_eval_send(&ex->p2p, c, m->act[out], (size_t)B * out_floats(&ex->lg, out));
  }
}

void pipe_exec_eval(pipe_exec_t *ex, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]) {
  /* chunks every stage holds: the last stage has the fewest slots */
  int window = ex->mb_cap * pipe_in_flight(ex->sched, ex->grid.pp, ex->M, ex->grid.pp - 1);
  data_walk(ds, split, n, (uint64_t)ex->grid.d, (uint64_t)ex->grid.dp, window, eval_chunk, ex, sums);
}
