#include "train/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_file.h"
#include "io/strbuf.h"
#include "io/weights.h"
#include "pipe/options.h"
#include "sync/shard.h"

enum { MAX_REGIONS = 16 };

/* The regions of t's state with host buffers: /params, the optimizer's moments, the reducer's and the
 * layout's own (compressor state). */
typedef struct host_state {
  state_region_t r[MAX_REGIONS];
  int n, nslabs;
  int in_place;          /* the backend's memory is the host's: the slabs are read and written in place */
  float *host[3];        /* [nslabs] host view of each local slab: params, moments (a copy unless in_place) */
  float *device[3];      /* the slabs themselves */
  size_t floats[3];      /* [nslabs] floats of each (a sharded optimizer's moments: its shard's) */
  state_tensor_t *pieces; /* the layout's description (data NULL) */
  int nmodel;            /* the regions of the model file: /params, and /buffers where the model has any */
  float *bufs_host;      /* host view of the model's buffer slab (a copy unless in_place), or NULL */
} host_state_t;

/* A region of one entry per local tensor (the layout's pieces, data NULL) over a slab of `floats`
 * floats of backend memory, its host view in h->host[*k]. */
static state_region_t *slab_region(host_state_t *h, const layout_t *l, const char *group, float *device,
                                   size_t floats, int *k) {
  const slab_layout_t *L = l->local;
  *k = h->nslabs++;
  h->device[*k] = device;
  h->floats[*k] = floats;
  h->host[*k] = h->in_place ? device : xcalloc(floats ? floats : 1, sizeof(float));
  state_region_t *r = &h->r[h->n++];
  snprintf(r->group, sizeof r->group, "%s", group);
  r->n = L->n;
  r->t = xcalloc(L->n ? (size_t)L->n : 1, sizeof *r->t);
  for (int i = 0; i < L->n; i++) r->t[i] = h->pieces[i];
  return r;
}

static void add_slab_region(host_state_t *h, const layout_t *l, const char *group, float *device) {
  int k;
  state_region_t *r = slab_region(h, l, group, device, l->local->total, &k);
  for (int i = 0; i < r->n; i++) r->t[i].data = h->host[k] + l->local->t[i].off;
}

/* A sharded optimizer's moments (sync/shard.h): device holds the floats of o's ranges one after the
 * other; of each tensor's piece (the layout's box of it) this rank holds the rows within them, one box,
 * written by it alone or by the ranks the layout's shard_replica names (which hold the same rows),
 * none where the shard misses it. */
static void add_shard_region(host_state_t *h, const layout_t *l, const char *group, float *device, const optim_t *o) {
  const slab_layout_t *L = l->local;
  int k;
  state_region_t *r = slab_region(h, l, group, device, o->floats, &k);
  for (int i = 0; i < L->n; i++) {
    state_tensor_t *p = &r->t[i];
    size_t a = 0, b = 0;
    for (int j = 0; j < o->nranges && b == a; j++) shard_rows(&L->t[i], o->ranges[2 * j], o->ranges[2 * j + 1], &a, &b);
    p->replica = 0;
    p->replicas = 1;
    if (l->ops->shard_replica) l->ops->shard_replica(l, i, &p->replica, &p->replicas);
    p->data = h->host[k];
    if (b == a || state_tensor_floats(p) == 0) {
      memset(p->count, 0, sizeof p->count);
      continue;
    }
    size_t row = L->t[i].n / p->count[0]; /* floats per row of the piece */
    p->data = h->host[k] + optim_state_at(o, L->t[i].off + a * row);
    p->start[0] += a;
    p->count[0] = b - a;
  }
}

/* The optimizer's moment slab: whole, or a sharded optimizer's shard. */
static void add_moments(host_state_t *h, const trainer_t *t, const char *group, float *device) {
  if (t->layout->sharded_state)
    add_shard_region(h, t->layout, group, device, &t->opt);
  else
    add_slab_region(h, t->layout, group, device);
}

/* The model's buffers (batch norm's running statistics): whole tensors on every rank, the same
 * everywhere after sync_replicas (layout_ops_t), so the ranks split their writing as replicas. */
static void add_bufs_region(host_state_t *h, const trainer_t *t) {
  const model_t *m = t->layout->m;
  const slab_layout_t *L = &m->g->bufs;
  if (L->n == 0) return;
  h->bufs_host = h->in_place ? m->bufs : xcalloc(L->total, sizeof(float));
  state_region_t *r = &h->r[h->n++];
  snprintf(r->group, sizeof r->group, "/buffers");
  r->n = L->n;
  r->t = xcalloc((size_t)L->n, sizeof *r->t);
  for (int i = 0; i < L->n; i++) {
    state_tensor_replicated(&r->t[i], &L->t[i], t->world->rank, t->world->size);
    r->t[i].data = h->bufs_host + L->t[i].off;
  }
}

static void host_state_init(host_state_t *h, const trainer_t *t, int with_optimizer) {
  const layout_t *l = t->layout;
  *h = (host_state_t){.in_place = t->be->host_memory};
  h->pieces = xcalloc(l->local->n ? (size_t)l->local->n : 1, sizeof *h->pieces);
  l->ops->describe(l, h->pieces);
  add_slab_region(h, l, "/params", l->m->params);
  add_bufs_region(h, t);
  h->nmodel = h->n;
  if (!with_optimizer) return;
  if (t->opt.m) add_moments(h, t, "/optim/m", t->opt.m);
  if (t->opt.v) add_moments(h, t, "/optim/v", t->opt.v);
  const reducer_t *red = l->sync->reducer;
  if (red->ops->state) h->n += red->ops->state(l->sync->reducer, h->r + h->n, MAX_REGIONS - h->n);
  if (l->ops->state) h->n += l->ops->state(t->layout, h->r + h->n, MAX_REGIONS - h->n);
}

static void host_state_free(host_state_t *h) {
  for (int k = 0; k < h->nslabs; k++)
    if (!h->in_place) free(h->host[k]);
  for (int k = 0; k < h->nslabs + h->nmodel - 1; k++) free(h->r[k].t); /* the slabs' and the buffers' */
  if (!h->in_place) free(h->bufs_host);
  free(h->pieces);
}

/* Collective: the true values of every slab, downloaded. */
static void gather(trainer_t *t, host_state_t *h) {
  trainer_sync_replicas(t);
  for (int k = 0; k < h->nslabs && !h->in_place; k++) t->be->download(h->host[k], h->device[k], h->floats[k]);
  const model_t *m = t->layout->m;
  if (h->bufs_host && !h->in_place) t->be->download(h->bufs_host, m->bufs, m->g->bufs.total);
}

/* Collective, on the state in backend memory (h's slabs, the model's buffers): the first of its parts
 * holding a value that is not finite on some rank (parameters, optimizer moments, batch norm's
 * statistics), by name, or NULL. The loss and the gradient norm are checked every step, but a NaN
 * parameter can leave both finite (a ReLU maps NaN to 0 on the way to the loss, and its gradient to
 * 0): a run went on, wrote NaN checkpoints and a NaN model.h5, and exited 0. */
static const char *non_finite_part(trainer_t *t, const host_state_t *h) {
  const backend_t *be = t->be;
  const model_t *m = t->layout->m;
  double bad[4] = {0}; /* per slab (params, m, v), then the buffers */
  for (int k = 0; k < h->nslabs && k < 3; k++) bad[k] = h->floats[k] && !be->all_finite(h->device[k], h->floats[k]);
  if (h->bufs_host) bad[3] = !be->all_finite(m->bufs, m->g->bufs.total);
  comm_allreduce_max_double(t->world, bad, 4, TRAFFIC_OTHER);
  static const char *const names[4] = {"parameters (/params)", "optimizer's moments (/optim/m)",
                                       "optimizer's moments (/optim/v)", "running statistics (/buffers)"};
  for (int k = 0; k < 4; k++)
    if (bad[k]) return names[k];
  return NULL;
}

/* A state about to be written (what: "no checkpoint", "the model file") that is not finite ends the
 * run (exit 1), the last checkpoint untouched. */
static void check_state_finite(trainer_t *t, const host_state_t *h, const char *what) {
  const char *part = non_finite_part(t, h);
  if (part)
    surge_runtime_error("step %ld: the %s hold a value that is not finite, so %s is written (hint: lower [train] "
                        "lr, or set [train] clip_norm; the last checkpoint is untouched)", t->step, part, what);
}

/* The token data's vocabulary as checkpoints record it: "SIZE" or "SIZE:HASH"; "" for other data. */
static void vocab_of(const trainer_t *t, char out[CHECKPOINT_VOCAB_LEN]) {
  out[0] = '\0';
  if (strcmp(dataset_name(t->ds), "tokens") != 0) return;
  const char *hash = dataset_vocab_hash(t->ds);
  snprintf(out, CHECKPOINT_VOCAB_LEN, "%d%s%s", dataset_classes(t->ds), hash[0] ? ":" : "", hash);
}

/* The layout that the state of each rank's own (a compressor's buffers, /compress/...) belongs to:
 * its ranks, grid, stages and micro-batches ("" when the state has none). Parameters and optimizer
 * moments move between layouts; these do not, and a grid of the same rank count could give them
 * the same lengths. */
static void rank_grid_of(const trainer_t *t, const host_state_t *h, char out[CHECKPOINT_GRID_LEN]) {
  out[0] = '\0';
  int own = 0;
  const size_t prefix = strlen(CHECKPOINT_RANK_STATE_GROUPS);
  for (int i = 0; i < h->n; i++) own |= strncmp(h->r[i].group, CHECKPOINT_RANK_STATE_GROUPS, prefix) == 0;
  if (!own) return;
  const pipe_opts_t *po = pipe_opts(&t->cfg);
  strbuf_t s = STRBUF_INIT;
  sb_printf(&s, "%d ranks: tp %d x pp %d x dp %d, stages ", t->world->size, po->tp, po->pp, po->dp);
  if (po->nstages == 0 || po->stages[0] == 0) sb_puts(&s, "balanced"); /* ({0}: by FLOPs) */
  for (int i = 0; i < po->nstages && po->stages[0] != 0; i++) sb_printf(&s, "%s%d", i ? "," : "", po->stages[i]);
  sb_printf(&s, ", scatter_gather %s, %d micro-batches", po->scatter_gather ? "on" : "off", t->cfg.micro_batches);
  snprintf(out, CHECKPOINT_GRID_LEN, "%s", sb_str(&s));
  sb_free(&s);
}

void trainer_checkpoint(trainer_t *t, const char *deck_text, char *written, size_t written_len) {
  host_state_t h;
  host_state_init(&h, t, 1);
  gather(t, &h);
  check_state_finite(t, &h, "no checkpoint");
  ckpt_state_t s = {.regions = h.r, .nregions = h.n, .layout = t->layout->name, .opt_t = t->opt.t, .step = t->step};
  snprintf(s.run_id, sizeof s.run_id, "%s", t->run_id);
  vocab_of(t, s.vocab);
  rank_grid_of(t, &h, s.rank_grid);
  checkpoint_write(t->cfg.ckpt_dir, &s, &t->cfg, deck_text, t->world, written, written_len);
  host_state_free(&h);
}

void trainer_resume(trainer_t *t, const char *path) {
  host_state_t h;
  host_state_init(&h, t, 1);
  ckpt_state_t s = {.regions = h.r, .nregions = h.n, .layout = t->layout->name};
  vocab_of(t, s.vocab);
  rank_grid_of(t, &h, s.rank_grid);
  checkpoint_read(path, &s, &t->cfg, t->world);
  for (int k = 0; k < h.nslabs && !h.in_place; k++) t->be->upload(h.device[k], h.host[k], h.floats[k]);
  if (h.bufs_host && !h.in_place) t->be->upload(t->layout->m->bufs, h.bufs_host, t->layout->m->g->bufs.total);
  const char *part = non_finite_part(t, &h); /* (a checkpoint of a release before they were refused) */
  if (part)
    surge_input_error("%s: the %s hold a value that is not finite: the run had diverged when it was written (hint: "
                      "resume from an earlier checkpoint: move this one out of [checkpoint] dir)", path, part);
  reducer_t *red = t->layout->sync->reducer;
  if (red->ops->loaded) red->ops->loaded(red);
  if (t->layout->ops->state_loaded) t->layout->ops->state_loaded(t->layout);
  t->opt.t = s.opt_t;
  t->step = s.step;
  if (s.run_id[0]) snprintf(t->run_id, sizeof t->run_id, "%s", s.run_id);
  host_state_free(&h);
}

/* The rank's pieces as a weights sink: each of the model's tensors read into one buffer, its pieces
 * copied out of it (host memory of the largest tensor, not of the whole model). */
typedef struct piece_sink {
  const slab_layout_t *G;
  const state_region_t *r; /* the pieces, their data the local slab's host view */
  int *tensor;             /* [r->n] the model's tensor each piece is of (-1: none of its floats here) */
  float *buf;
  size_t cap;
} piece_sink_t;

static float *piece_place(void *ctx, int t) {
  piece_sink_t *s = ctx;
  if (s->G->t[t].n > s->cap) {
    free(s->buf);
    s->cap = s->G->t[t].n;
    s->buf = xmalloc(s->cap * sizeof(float));
  }
  return s->buf;
}

static void piece_put(void *ctx, int t) {
  piece_sink_t *s = ctx;
  for (int i = 0; i < s->r->n; i++)
    if (s->tensor[i] == t) {
      const state_tensor_t *p = &s->r->t[i];
      state_box_copy(s->buf, p->data, p->ndim, p->dims, p->start, p->count, 1);
    }
}

void trainer_load_params(trainer_t *t, const char *path) {
  const slab_layout_t *G = &t->g.params;
  host_state_t h;
  host_state_init(&h, t, 0);
  piece_sink_t s = {.G = G, .r = &h.r[0], .tensor = xcalloc(h.r[0].n ? (size_t)h.r[0].n : 1, sizeof(int))};
  for (int i = 0; i < h.r[0].n; i++) {
    state_tensor_t *p = &h.r[0].t[i];
    s.tensor[i] = state_tensor_floats(p) ? slab_layout_find(G, p->name) : -1;
    if (state_tensor_floats(p) && s.tensor[i] < 0)
      surge_runtime_error("layout tensor %s is not in the model (a layout bug)", p->name);
  }
  weights_read_each(path, &t->g, &(weights_sink_t){piece_place, piece_put, &s});
  free(s.tensor);
  free(s.buf);
  if (!h.in_place) t->be->upload(h.device[0], h.host[0], t->layout->local->total);
  host_state_free(&h);
  const slab_layout_t *B = &t->g.bufs; /* the running statistics, whole on every rank (as /buffers) */
  if (B->n == 0) return;
  float *bufs = slab_alloc(B);
  weights_read_bufs(path, &t->g, bufs);
  t->be->upload(t->layout->m->bufs, bufs, B->total);
  slab_free(bufs);
}

/* A piece on its way to the root: the model's tensor it is of, and its box there. */
typedef struct piece_box {
  int32_t tensor, ndim;
  uint64_t start[SLAB_MAX_DIMS], count[SLAB_MAX_DIMS];
} piece_box_t;

/* Root: the floats of piece x (of rank `from`) into the slab full; checked against the model's tensors. */
static void place_piece(const slab_layout_t *G, const piece_box_t *x, float *data, float *full, int from) {
  if (x->tensor < 0 || x->tensor >= G->n || x->ndim != G->t[x->tensor].ndim)
    surge_runtime_error("rank %d sent a piece of no tensor of the model (a bug)", from);
  size_t dims[SLAB_MAX_DIMS], start[SLAB_MAX_DIMS], count[SLAB_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    dims[d] = (size_t)G->t[x->tensor].d[d], start[d] = (size_t)x->start[d], count[d] = (size_t)x->count[d];
    if (start[d] > dims[d] || count[d] > dims[d] - start[d])
      surge_runtime_error("rank %d sent a piece beyond its tensor (a bug)", from);
  }
  state_box_copy(full + G->t[x->tensor].off, data, x->ndim, dims, start, count, 0);
}

static size_t box_floats(const piece_box_t *x) {
  size_t n = 1;
  for (int d = 0; d < x->ndim; d++) n *= (size_t)x->count[d];
  return n;
}

void trainer_params_on_root(trainer_t *t, float *full) {
  host_state_t h;
  host_state_init(&h, t, 0);
  gather(t, &h);
  /* every rank sends the pieces it writes (replica 0: they tile each tensor once) to the root, a piece at a
   * time, straight from its slab: the root holds the whole slab and one piece, the other ranks nothing more */
  const slab_layout_t *G = &t->g.params;
  const state_region_t *r = &h.r[0];
  comm_t *w = t->world;
  const int root = w->rank == 0;
  const state_tensor_t **mine = xcalloc(r->n ? (size_t)r->n : 1, sizeof *mine);
  piece_box_t *box = xcalloc(r->n ? (size_t)r->n : 1, sizeof *box);
  int nbox = 0;
  for (int i = 0; i < r->n; i++) {
    const state_tensor_t *p = &r->t[i];
    int k = slab_layout_find(G, p->name);
    if (k < 0) surge_runtime_error("parameter %s of the layout is not in the model (a bug)", p->name);
    if (p->replica != 0 || state_tensor_floats(p) == 0) continue;
    mine[nbox] = p;
    box[nbox] = (piece_box_t){.tensor = k, .ndim = p->ndim};
    for (int d = 0; d < p->ndim; d++) box[nbox].start[d] = p->start[d], box[nbox].count[d] = p->count[d];
    nbox++;
  }
  double *pieces = xcalloc((size_t)w->size, sizeof *pieces); /* every rank's count, on every rank */
  pieces[w->rank] = nbox;
  comm_allreduce_sum_double(w, pieces, w->size, TRAFFIC_OTHER);
  if (root) {
    memset(full, 0, G->total * sizeof *full);
    for (int b = 0; b < nbox; b++) place_piece(G, &box[b], mine[b]->data, full, 0);
  }
  size_t *n = root ? xcalloc((size_t)w->size, sizeof *n) : NULL, cap = 0; /* root: what each rank gives now */
  float *got = NULL;
  for (int from = 1; from < w->size; from++) { /* rank `from` alone gives bytes in these rounds */
    const int me = w->rank == from, nb = (int)pieces[from];
    piece_box_t *got_box = root ? xcalloc(nb ? (size_t)nb : 1, sizeof *got_box) : NULL;
    if (root) n[from] = (size_t)nb * sizeof *got_box;
    comm_gatherv_bytes(w, box, me ? (size_t)nbox * sizeof *box : 0, got_box, n, 0, TRAFFIC_OTHER);
    for (int b = 0; b < nb; b++) {
      const size_t floats = root ? box_floats(&got_box[b]) : 0;
      if (root && floats > cap) free(got), cap = floats, got = xmalloc(cap * sizeof *got);
      if (root) n[from] = floats * sizeof *got;
      comm_gatherv_bytes(w, me ? mine[b]->data : NULL, me ? state_tensor_floats(mine[b]) * sizeof(float) : 0, got, n,
                         0, TRAFFIC_OTHER);
      if (root) place_piece(G, &got_box[b], got, full, from);
    }
    if (root) n[from] = 0;
    free(got_box);
  }
  free(got);
  free(n);
  free(pieces);
  free(box);
  free(mine);
  host_state_free(&h);
}

void trainer_write_model(trainer_t *t, const char *path, const char *deck_text) {
  host_state_t h;
  host_state_init(&h, t, 0);
  gather(t, &h);
  check_state_finite(t, &h, "no model file");
  char vocab[CHECKPOINT_VOCAB_LEN];
  vocab_of(t, vocab);
  model_file_write(path, h.r, h.nmodel, t->step, t->cfg.zoo, deck_text, t->run_id, vocab, t->world);
  host_state_free(&h);
}
