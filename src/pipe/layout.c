#include "pipe/layout.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/say.h"
#include "compress/options.h"
#include "pipe/exec.h"
#include "pipe/options.h"
#include "nn/recompute.h"
#include "nn/zoo.h"
#include "pipe/p2p_cb.h"
#include "pipe/partition.h"
#include "pipe/pipe_log.h"
#include "sync/shard_gather.h"

typedef struct pipe_layout {
  layout_t base;
  pipe_exec_t ex;
  slab_layout_t local;  /* the pieces of every global tensor, in the whole model's order */
  gpt_piece_t *piece;   /* (local.n) */
  size_t *norm_ranges;  /* the boxes this rank counts in the gradient norm (layout_t.norm) */
  int *first_block, *blocks; /* (pp) the stages */
  double *mflop;        /* (pp) training MFLOP per sample of each stage */
  long timeline_every;
  pipe_log_t log;       /* its groups in the run's log (log_pipeline) */
  shard_gather_t gather; /* a sharded optimizer's all-gather of the updated parameters (ex.shard) */
} pipe_layout_t;

static pipe_layout_t *impl(const layout_t *l) { return l->impl; }

/* The deck's grid and pipeline (pipe/options.h). */
static const pipe_opts_t *grid_of(const layout_opts_t *o) { return pipe_opts(o->cfg); }

enum { LAYOUT_MAX_BOUNDARIES = 64 }; /* per-boundary numbers on the stack up to this many stages */

/* ---- options against the job and the model */

/* The first of keys (NULL-terminated) the deck or -D set, else the last one: what a message blames. */
static const char *blame(const layout_opts_t *o, const char *const *keys) {
  int i = 0;
  for (; keys[i + 1]; i++)
    if (!layout_is_default(o, keys[i])) break;
  return layout_where(o, keys[i]);
}

static void check_grid(const layout_opts_t *o, const graph_t *g, const gpt_dims_t *d, int ranks) {
  int tp = grid_of(o)->tp, pp = grid_of(o)->pp, dp = grid_of(o)->dp, M = o->micro_batches;
  const char *grid_keys[] = {"parallel.tp", "parallel.pp", "parallel.dp", "parallel.mode", NULL};
  if ((long)tp * pp * dp != ranks)
    surge_input_error("%s: [parallel] tp = %d, pp = %d, dp = %d: tp * pp * dp = %ld, but the job has %d rank%s "
                      "(hint: launch %ld ranks, or choose tp, pp and dp whose product is %d)",
                      blame(o, grid_keys), tp, pp, dp, (long)tp * pp * dp, ranks, ranks == 1 ? "" : "s",
                      (long)tp * pp * dp, ranks);
  if (d->heads % tp != 0)
    surge_input_error("%s: [parallel] tp = %d does not divide the %d attention heads ([model] gpt_heads) (hint: "
                      "tensor parallelism gives every rank of a stage whole heads: tp must divide gpt_heads)",
                      layout_where(o, "parallel.tp"), tp, d->heads);
  if (d->vocab % tp != 0)
    surge_input_error("%s: [parallel] tp = %d does not divide the vocabulary of %d tokens (hint: the embedding and "
                      "the output layer split the vocabulary evenly: tp must divide %d)",
                      layout_where(o, "parallel.tp"), tp, d->vocab, d->vocab);
  if (pp > d->layers)
    surge_input_error("%s: [parallel] pp = %d stages, but the model has %d transformer block%s ([model] "
                      "gpt_layers) (hint: every stage holds at least one whole block: pp <= gpt_layers)",
                      layout_where(o, "parallel.pp"), pp, d->layers, d->layers == 1 ? "" : "s");
  long share = o->global_batch / dp; /* the smallest replica's share */
  const char *mb_keys[] = {"train.micro_batches", "train.global_batch", NULL};
  if (share < M)
    surge_input_error("%s: [train] micro_batches = %d, but a data-parallel replica gets only %ld of the %ld "
                      "samples of [train] global_batch over dp = %d: a micro-batch would have no samples (hint: "
                      "global_batch >= dp * micro_batches, here %ld)",
                      blame(o, mb_keys), M, share, o->global_batch, dp, (long)dp * M);
  if (pipe_sched_of(grid_of(o)->schedule) < 0)
    surge_input_error("%s: [parallel] schedule = %s: not a schedule (accepted: 1f1b, gpipe)",
                      layout_where(o, "parallel.schedule"), grid_of(o)->schedule);
  (void)g;
}

/* [compress] against the shapes (the deck checked it against the grid): a rank no larger than the
 * matrices it approximates. The same on every rank (from the dimensions alone). */
static void check_compress(const layout_opts_t *o, const compress_opts_t *c, const gpt_dims_t *d) {
  int tp = grid_of(o)->tp, C = d->width, parts = pipe_cb_parts(grid_of(o)->scatter_gather, tp, d->T);
  long samples = o->global_batch / grid_of(o)->dp / o->micro_batches; /* the smallest micro-batch */
  long tokens = samples * d->T / parts, cb_max = tokens < C ? tokens : C; /* a rank's part of its rows */
  if (c->cb && c->cb_rank > cb_max)
    surge_input_error("%s: [compress] cb_rank = %d, but an activation gradient%s is a (tokens x width) matrix of "
                      "at most (%ld x %d), of rank at most %ld (hint: cb_rank <= %ld%s)",
                      layout_where(o, "compress.cb_rank"), c->cb_rank,
                      parts > 1 ? " (a tensor-parallel rank's part of its tokens: [parallel] scatter_gather)" : "",
                      tokens, C, cb_max, cb_max,
                      parts > 1 ? ", or [parallel] scatter_gather = false to compress whole gradients" : "");
  if (c->sc_stages > 0) {
    int sides[][2] = {{3 * C / tp, C}, {C, C / tp}, {4 * C / tp, C}, {C, 4 * C / tp}, {d->context, C},
                      {d->vocab / tp, C}};
    int nsides = c->fe ? 5 : 6, dp_max = 0;
    for (int i = 0; i < nsides; i++) {
      int m = sides[i][0] < sides[i][1] ? sides[i][0] : sides[i][1];
      if (m > dp_max) dp_max = m;
    }
    if (c->dp_rank > dp_max)
      surge_input_error("%s: [compress] dp_rank = %d is larger than every gradient matrix of the compressed stages "
                        "(the widest has rank at most %d) (hint: dp_rank <= %d; smaller matrices use their own "
                        "rank)", layout_where(o, "compress.dp_rank"), c->dp_rank, dp_max, dp_max);
  }
}

/* With [train] recompute, the forward FLOPs each block re-runs before its backward (the segments of
 * nn/recompute.h, all inside the blocks), added to cost[block]. */
static void add_rerun_flops(const graph_t *g, int L, double *cost) {
  if (g->recompute == RECOMPUTE_NONE) return;
  int *seg_first = xcalloc((size_t)g->n, sizeof *seg_first);
  model_fusion_plan(g, NULL, NULL, seg_first);
  for (int v = gpt_block_node(0); v < gpt_block_node(L); v++)
    for (int u = seg_first[v]; u > 0 && u < v; u++)
      cost[(v - gpt_block_node(0)) / ZOO_GPT_BLOCK_NODES] += g->l[u].flops_per_sample;
  free(seg_first);
}

/* Blocks per stage: [parallel] stages, or balanced by training FLOPs (with [train] recompute, the
 * re-run forwards' too). */
static void make_stages(pipe_layout_t *pl, const layout_opts_t *o, const graph_t *g, const gpt_dims_t *d) {
  int pp = grid_of(o)->pp, L = d->layers;
  pl->first_block = xcalloc((size_t)pp, sizeof(int));
  pl->blocks = xcalloc((size_t)pp, sizeof(int));
  pl->mflop = xcalloc((size_t)pp, sizeof(double));
  double *cost = xcalloc((size_t)L, sizeof *cost);
  for (int b = 0; b < L; b++)
    for (int k = 0; k < ZOO_GPT_BLOCK_NODES; k++) cost[b] += graph_node_train_flops(g, gpt_block_node(b) + k);
  add_rerun_flops(g, L, cost);
  double head = graph_node_train_flops(g, 1), tail = graph_node_train_flops(g, g->n - 2) + graph_node_train_flops(g, g->n - 1);
  int automatic = grid_of(o)->nstages == 1 && grid_of(o)->stages[0] == 0;
  if (automatic) {
    pipe_partition(cost, L, head, tail, pp, pl->blocks);
  } else {
    int sum = 0, bad = grid_of(o)->nstages != pp;
    for (int s = 0; s < grid_of(o)->nstages; s++) sum += grid_of(o)->stages[s], bad |= grid_of(o)->stages[s] < 1;
    if (bad || sum != L)
      surge_input_error("%s: [parallel] stages: %d entr%s summing to %d; the pipeline needs pp = %d entries, each at "
                        "least 1, summing to the %d blocks of [model] gpt_layers (hint: stages = 0 balances them by FLOPs)",
                        layout_where(o, "parallel.stages"), grid_of(o)->nstages, grid_of(o)->nstages == 1 ? "y" : "ies", sum,
                        pp, L);
    memcpy(pl->blocks, grid_of(o)->stages, (size_t)pp * sizeof(int));
  }
  for (int s = 0, b = 0; s < pp; s++) {
    pl->first_block[s] = b;
    for (int i = 0; i < pl->blocks[s]; i++) pl->mflop[s] += cost[b + i] / 1e6;
    b += pl->blocks[s];
  }
  pl->mflop[0] += head / 1e6;
  pl->mflop[pp - 1] += tail / 1e6;
  free(cost);
}

/* ---- pieces: this rank's boxes of the global tensors */

static void make_pieces(pipe_layout_t *pl, const graph_t *g) {
  pipe_exec_t *ex = &pl->ex;
  const slab_layout_t *G = &g->params;
  pl->piece = xcalloc((size_t)G->n * GPT_MAX_PIECES, sizeof *pl->piece);
  slab_layout_t *L = &pl->local;
  slab_layout_init(L);
  L->cap = G->n * GPT_MAX_PIECES;
  L->t = xcalloc((size_t)L->cap, sizeof *L->t);
  size_t held = 0;
  for (int t = 0; t < G->n; t++) {
    gpt_piece_t *q = &pl->piece[L->n];
    int n = gpt_part_pieces(g, &ex->part, &ex->lg, t, q);
    for (int j = 0; j < n; j++) {
      slab_tensor_t *e = &L->t[L->n++];
      snprintf(e->name, sizeof e->name, "%s", G->t[t].name);
      e->off = q[j].off;
      e->n = q[j].n;
      e->ndim = q[j].ndim;
      for (int k = 0; k < q[j].ndim; k++) e->d[k] = (int)q[j].count[k];
      e->owner = -1;
      held += q[j].n;
    }
  }
  L->total = ex->lg.params.total;
  if (held != L->total)
    surge_runtime_error("3d layout: the boxes cover %zu of the part's %zu floats (a layout bug)", held, L->total);
}

/* Piece q's replica index and count: the ranks that hold its box are the data-parallel replicas,
 * times the stage's tensor-parallel ranks for a box every shard holds, times two for the word
 * embedding held by the first and the last stage. */
static void replica_of(const pipe_grid_t *G, const gpt_piece_t *q, int *replica, int *replicas) {
  int every = q->hold == GPT_EVERY_SHARD, tied = q->tied && G->pp > 1;
  int tps = every ? G->tp : 1;
  *replicas = G->dp * tps * (tied ? 2 : 1);
  *replica = G->d + G->dp * ((every ? G->t : 0) + tps * (tied && G->p == G->pp - 1));
}

/* The model's initial values (the same on every layout and rank count) of this rank's pieces: each
 * node that holds one computes its parameters alone (graph_init_layer), and its pieces are copied.
 * So a rank's host memory for this is one node's parameters (the largest: a block's feed-forward layer,
 * or the token table of a large vocabulary), not the whole model's; a host backend's slab is written in
 * place (as model_init_params does), a device's through a host copy of it. */
static void init_params(pipe_layout_t *pl, const graph_t *g, uint64_t seed) {
  const slab_layout_t *L = &pl->local, *G = &g->params;
  const backend_t *be = pl->ex.m.be;
  float *mine = be->host_memory ? pl->ex.m.params : xcalloc(L->total ? L->total : 1, sizeof(float));
  int *tensor = xcalloc(L->n ? (size_t)L->n : 1, sizeof *tensor); /* each piece's tensor of the model */
  for (int j = 0; j < L->n; j++) tensor[j] = pl->piece[j].n ? slab_layout_find(G, L->t[j].name) : -1;
  for (int i = 0; i < g->n; i++) {
    const layer_t *l = &g->l[i];
    int held = 0;
    size_t floats = 0;
    for (int k = 0; k < l->np; k++) {
      floats += G->t[l->param[k]].n;
      for (int j = 0; j < L->n; j++) held |= tensor[j] == l->param[k];
    }
    if (!held) continue;
    float *node = xcalloc(floats, sizeof(float)), *w[LAYER_MAX_PARAMS] = {0}; /* its parameters, one after another */
    size_t at = 0;
    for (int k = 0; k < l->np; k++) w[k] = node + at, at += G->t[l->param[k]].n;
    graph_init_layer(g, seed, i, w);
    for (int k = 0; k < l->np; k++)
      for (int j = 0; j < L->n; j++)
        if (tensor[j] == l->param[k]) {
          const gpt_piece_t *q = &pl->piece[j];
          state_box_copy(w[k], mine + q->off, q->ndim, q->dims, q->start, q->count, 1);
        }
    free(node);
  }
  if (!be->host_memory) {
    be->upload(pl->ex.m.params, mine, L->total);
    free(mine);
  }
  free(tensor);
}

/* ---- the layout's operations */

/* The norm's plan: each global value counted once, by replica 0 of its box; the parts summed over
 * the job. A sharded optimizer's rank counts its shard (the only sums it has), of a box every
 * tensor-parallel rank holds only on shard 0: the shards of a data-parallel group tile its stage's
 * slab, and those of the fused embedding group the word embedding. */
static norm_plan_t plan_norm(pipe_layout_t *pl) {
  const shard_plan_t *sp = pl->ex.sync.shard;
  int most = sp ? pl->local.n * sp->nranges : pl->local.n;
  pl->norm_ranges = xcalloc(2 * (size_t)(most ? most : 1), sizeof *pl->norm_ranges);
  int n = 0;
  for (int i = 0; i < pl->local.n; i++) {
    const gpt_piece_t *q = &pl->piece[i];
    int replica, replicas;
    replica_of(&pl->ex.grid, q, &replica, &replicas);
    if (!q->n) continue;
    if (!sp) {
      if (replica == 0) norm_ranges_push(pl->norm_ranges, &n, q->off, q->n);
      continue;
    }
    if (q->hold == GPT_EVERY_SHARD && pl->ex.grid.t != 0) continue;
    for (int k = 0; k < sp->nranges; k++) {
      size_t a = q->off > sp->ranges[2 * k] ? q->off : sp->ranges[2 * k];
      size_t b = q->off + q->n < sp->ranges[2 * k + 1] ? q->off + q->n : sp->ranges[2 * k + 1];
      if (b > a) norm_ranges_push(pl->norm_ranges, &n, a, b - a);
    }
  }
  return (norm_plan_t){.ranges = pl->norm_ranges, .nranges = norm_ranges_merge(pl->norm_ranges, n), .sum = NORM_SUM_JOB};
}

static void step(layout_t *l, const dataset_t *ds, const uint64_t *ids, float grad_scale, layout_step_t *out) {
  pipe_exec_step(&impl(l)->ex, ds, ids, grad_scale, out);
}

/* A sharded optimizer's all-gather of the last update is waited for first (nothing to wait for
 * without one). */
static void eval(layout_t *l, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]) {
  shard_gather_finish(&impl(l)->gather);
  pipe_exec_eval(&impl(l)->ex, ds, split, n, sums);
}

/* Replicas stay equal by construction: they apply the same sums (bitwise equal on every rank of a
 * group) through the same optimizer; checkpoints verify it (io/checkpoint.h). A sharded optimizer's
 * all-gather of the last update completes the parameters. */
static void sync_replicas(layout_t *l, float *slabs[], int nslabs) {
  shard_gather_finish(&impl(l)->gather);
  (void)slabs, (void)nslabs;
}

static void describe(const layout_t *l, state_tensor_t *out) {
  const pipe_layout_t *pl = impl(l);
  for (int i = 0; i < pl->local.n; i++) {
    const gpt_piece_t *q = &pl->piece[i];
    state_tensor_t *s = &out[i];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", pl->local.t[i].name);
    s->ndim = q->ndim;
    for (int k = 0; k < q->ndim; k++) {
      s->dims[k] = q->dims[k];
      s->start[k] = q->n ? q->start[k] : 0;
      s->count[k] = q->n ? q->count[k] : 0;
    }
    s->replicas = 1;
    if (q->n) replica_of(&pl->ex.grid, q, &s->replica, &s->replicas);
  }
}

static void log_pipeline(layout_t *l, run_log_t *log) {
  const pipe_layout_t *pl = impl(l);
  const pipe_exec_t *ex = &pl->ex;
  int pp = ex->grid.pp, ranks = ex->world->size;
  double mine = sizeof(float) * (double)ex->m.act_floats, *all = xcalloc((size_t)ranks, sizeof *all);
  comm_gather_double(ex->world, &mine, 1, all, 0, TRAFFIC_OTHER);
  double *held = xcalloc((size_t)pp, sizeof *held), *bytes = xcalloc((size_t)pp, sizeof *bytes);
  for (int s = 0; s < pp; s++) {
    held[s] = pipe_in_flight(ex->sched, pp, ex->M, s);
    for (int r = 0; r < ranks; r++)
      if (pipe_grid_of(ex->grid.tp, pp, ex->grid.dp, r).p == s && all[r] > bytes[s]) bytes[s] = all[r];
  }
  log_pipe_info_t info = {.tp = ex->grid.tp, .pp = pp, .dp = ex->grid.dp, .micro_batches = ex->M,
                          .schedule = pipe_sched_name(ex->sched), .bubble_theory = pipe_bubble_theory(pp, ex->M),
                          .first_block = pl->first_block, .blocks = pl->blocks, .mflop = pl->mflop, .held = held,
                          .act_bytes = bytes};
  char text[1024];
  if (compress_any(&ex->co)) pipe_compress_summary(ex, text, sizeof text);
  pipe_log_open(&impl(l)->log, log, &info, compress_any(&ex->co) ? text : NULL);
  free(all);
  free(held);
  free(bytes);
}

static void log_step(layout_t *l, long step) {
  pipe_layout_t *pl = impl(l);
  if (compress_any(&pl->ex.co)) {
    double per[2 * LAYOUT_MAX_BOUNDARIES];
    double *b = pl->ex.grid.pp <= LAYOUT_MAX_BOUNDARIES ? per : xcalloc(2 * (size_t)pl->ex.grid.pp, sizeof *b);
    log_compress_row_t row;
    pipe_compress_row(&pl->ex, &row, b);
    pipe_log_compress(&pl->log, step, &row);
    if (b != per) free(b);
  }
  if (pl->timeline_every <= 0 || step % pl->timeline_every != 0) return;
  log_pipe_event_t *ev;
  size_t n = pipe_timeline_gather(&pl->ex.tl, pl->ex.world, &ev);
  pipe_log_events(&pl->log, step, ev, n);
  free(ev);
}

static int state(layout_t *l, state_region_t *out, int max) {
  pipe_exec_t *ex = &impl(l)->ex;
  if (!ex->co.cb) return 0;
  if (max < 1) surge_runtime_error("3d layout: no room for the compressor's checkpoint region");
  out[0] = *pipe_cb_state(&ex->p2p);
  return 1;
}

static void state_loaded(layout_t *l) {
  pipe_exec_t *ex = &impl(l)->ex;
  if (ex->co.cb) pipe_cb_loaded(&ex->p2p);
}

/* A sharded optimizer: each rank updated its shard; the all-gathers start, waited for node by node
 * in the next step's forward pass, or whole before anything else reads the slab. */
static double sharded_updated(layout_t *l, double norm_part) {
  shard_gather_start(&impl(l)->gather);
  (void)norm_part; /* the norm's parts ride on the trainer's metrics (NORM_SUM_JOB) */
  return 0.0;
}

/* The rows of a layer norm's moments are held by one rank of each tensor-parallel index's group (it
 * is never cut): those are replicas; every other box of a shard by its rank alone. */
static void shard_replica(const layout_t *l, int t, int *replica, int *replicas) {
  const pipe_layout_t *pl = impl(l);
  int every = pl->piece[t].hold == GPT_EVERY_SHARD;
  *replica = every ? pl->ex.grid.t : 0;
  *replicas = every ? pl->ex.grid.tp : 1;
}

static void free_layout(layout_t *l) {
  pipe_layout_t *pl = impl(l);
  if (pl->ex.shard) shard_gather_free(&pl->gather); /* before the slab it gathers into goes */
  pipe_exec_free(&pl->ex);
  slab_layout_free(&pl->local);
  free(pl->piece);
  free(pl->norm_ranges);
  free(pl->first_block);
  free(pl->blocks);
  free(pl->mflop);
  free(pl);
}

static const layout_ops_t pipe_layout_ops = {.step = step, .eval = eval, .sync_replicas = sync_replicas,
                                             .describe = describe, .log = log_pipeline, .log_step = log_step,
                                             .state = state, .state_loaded = state_loaded, .free = free_layout};
/* With a sharded optimizer over the data-parallel axis (pipe/exec.h). */
static const layout_ops_t sharded_layout_ops = {
    .step = step, .eval = eval, .sync_replicas = sync_replicas, .describe = describe,
    .log = log_pipeline, .log_step = log_step, .state = state, .state_loaded = state_loaded,
    .updated = sharded_updated, .shard_replica = shard_replica, .free = free_layout};

/* [parallel] shard_optimizer on dp > 1 (else nothing to shard): the data-parallel gradient sync
 * reduce-scatters (sync), or with [compress] sc_stages sums the compressed stages' buckets with
 * PowerSGD, each rank updating its shard of the whole sums (pipe/exec.c). */
static void plan_shards(const layout_opts_t *o, gradsync_opts_t *sync) {
  if (!o->shard_optimizer || grid_of(o)->dp < 2) return;
  sync->shard = 1;
}

/* The sharded optimizer's update ranges (the gradient sync's plan), its all-gather and the banner. */
static void use_shards(pipe_layout_t *pl) {
  pipe_exec_t *ex = &pl->ex;
  const shard_plan_t *sp = ex->sync.shard;
  layout_t *b = &pl->base;
  b->ops = &sharded_layout_ops;
  b->sharded_state = 1;
  b->update_ranges = sp->ranges;
  b->nupdate_ranges = sp->nranges;
  b->update_lo = sp->nranges ? sp->ranges[0] : 0;
  b->update_hi = sp->nranges ? sp->ranges[2 * sp->nranges - 1] : 0;
  shard_gather_init(&pl->gather, &ex->sync, &ex->lg.params, ex->m.params);
  ex->before_forward = shard_gather_hook;
  ex->before_arg = &pl->gather;
  b->note = "3d: sharded optimizer ([parallel] shard_optimizer): each stage's data-parallel group reduce-scatters its "
            "gradients in buckets (stages below [compress] sc_stages sum them with PowerSGD instead, whole on every "
            "rank), each rank updating its shard with moments for it alone (a layer norm never cut); "
            "the word embedding's gradient is reduce-scattered over the fused embedding group (the first and last "
            "stage's ranks of its tensor-parallel index) in place of the embedding sum; parameters all-gathered "
            "over the same groups before the next forward pass reads them";
}

layout_t *pipe_layout_build(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world) {
  gpt_dims_t d;
  char err[256];
  if (strcmp(o->model, "gpt") != 0 || gpt_dims_of(g, &d, err, sizeof err) != 0)
    surge_input_error("%s: [parallel] mode = 3d needs the gpt, but [model] zoo = %s (hint: 3d parallelism splits "
                      "the gpt's transformer blocks, heads and vocabulary; other models run with mode = dp or burst)",
                      layout_where(o, "parallel.mode"), o->model);
  check_grid(o, g, &d, world->size);
  gradsync_opts_t sync = o->sync;
  plan_shards(o, &sync);
  compress_opts_t co = *compress_opts(o->cfg);
  co.steps = o->steps;
  check_compress(o, &co, &d);
  pipe_layout_t *pl = xcalloc(1, sizeof *pl);
  make_stages(pl, o, g, &d);
  pipe_grid_t G = pipe_grid_of(grid_of(o)->tp, grid_of(o)->pp, grid_of(o)->dp, world->rank);
  const pipe_exec_opts_t eo = {.first_block = pl->first_block[G.p], .blocks = pl->blocks[G.p],
                               .M = o->micro_batches, .sched = (pipe_sched_t)pipe_sched_of(grid_of(o)->schedule),
                               .B = (int)o->global_batch, .scatter_gather = grid_of(o)->scatter_gather,
                               .seed = o->seed};
  pipe_exec_init(&pl->ex, g, &d, &G, &eo, be, world, &sync, &co);
  if (world->rank == 0 && compress_any(&co)) {
    char text[1024];
    pipe_compress_summary(&pl->ex, text, sizeof text);
    say("%s\n", text);
  }
  make_pieces(pl, g);
  init_params(pl, g, o->seed);
  pl->timeline_every = grid_of(o)->timeline_every;
  pl->base = (layout_t){.ops = &pipe_layout_ops, .m = &pl->ex.m, .local = &pl->local, .sync = &pl->ex.sync,
                        .window = pl->ex.m.B_cap, .impl = pl};
  if (pl->ex.shard) use_shards(pl);
  else if (o->shard_optimizer) /* said, not silent: plan_shards had nothing to do */
    pl->base.note = "3d: [parallel] shard_optimizer has nothing to shard with dp = 1: each rank keeps its part's "
                    "whole optimizer state (the shards are over a stage's data-parallel group)";
  pl->base.norm = plan_norm(pl);
  return &pl->base;
}
