#include "pipe/gpt_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nn/zoo.h"

int gpt_block_node(int b) { return 2 + b * ZOO_GPT_BLOCK_NODES; }

/* The kinds and tensor-parallel roles of a block's nodes, in zoo_gpt_block's order. */
static const layer_kind_t block_kinds[ZOO_GPT_BLOCK_NODES] = {
    LAYER_LAYERNORM, LAYER_LINEAR, LAYER_ATTENTION, LAYER_LINEAR, LAYER_ADD,
    LAYER_LAYERNORM, LAYER_LINEAR, LAYER_GELU,      LAYER_LINEAR, LAYER_ADD};
static const layer_role_t block_roles[ZOO_GPT_BLOCK_NODES] = {
    ROLE_REPLICATED, ROLE_COLUMN, ROLE_REPLICATED, ROLE_ROW,    ROLE_REPLICATED,
    ROLE_REPLICATED, ROLE_COLUMN, ROLE_REPLICATED, ROLE_ROW,    ROLE_REPLICATED};

static int node_is(const graph_t *g, int i, layer_kind_t kind, layer_role_t role) {
  return i >= 0 && i < g->n && g->l[i].kind == kind && g->l[i].role == role;
}

int gpt_dims_of(const graph_t *g, gpt_dims_t *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  int L = (g->n - 4) / ZOO_GPT_BLOCK_NODES;
  if (g->n < 4 + ZOO_GPT_BLOCK_NODES || (g->n - 4) % ZOO_GPT_BLOCK_NODES != 0 || g->l[0].out.ndim != 1 ||
      !node_is(g, 1, LAYER_EMBED, ROLE_VOCAB) || !node_is(g, g->n - 2, LAYER_LAYERNORM, ROLE_REPLICATED) ||
      !node_is(g, g->n - 1, LAYER_TIED_LINEAR, ROLE_COLUMN)) {
    snprintf(err, errlen, "the model is not the zoo's gpt (embedding, blocks, final norm, tied output layer)");
    return -1;
  }
  for (int b = 0; b < L; b++)
    for (int k = 0; k < ZOO_GPT_BLOCK_NODES; k++) {
      int i = gpt_block_node(b) + k;
      if (!node_is(g, i, block_kinds[k], block_roles[k])) {
        snprintf(err, errlen, "the model is not the zoo's gpt (node %d, %s, is not block %d's %s)", i, g->l[i].name,
                 b, layer_kind_name(block_kinds[k]));
        return -1;
      }
    }
  const layer_t *e = &g->l[1];
  *d = (gpt_dims_t){.layers = L, .width = e->out_features, .heads = g->l[gpt_block_node(0) + 2].heads,
                    .context = e->context, .vocab = e->vocab, .vocab_valid = g->classes_valid,
                    .T = g->l[0].out.d[0]};
  return 0;
}

int gpt_part_build(const gpt_dims_t *d, const gpt_part_t *p, graph_t *lg, char *err, size_t errlen) {
  int C = d->width, V = d->vocab / p->tp;
  graph_init(lg, p->first ? shape1(d->T) : shape2(d->T, C), INIT_NORMAL_002);
  lg->targets_per_sample = d->T;
  lg->classes_valid = d->vocab_valid;
  int x = 0, emb = -1;
  if (p->first) x = emb = zoo_gpt_embed(lg, V, p->tp_rank * V, p->tp_rank == 0, d->context, C);
  for (int b = p->first_block; b < p->first_block + p->blocks; b++)
    x = zoo_gpt_block(lg, x, b, C, d->heads, p->tp, p->tp_rank == 0);
  if (p->last) x = zoo_gpt_head(lg, x, emb, V);
  if (x < 0) {
    snprintf(err, errlen, "%s", lg->err);
    return -1;
  }
  return 0;
}

/* How the shards hold parameter k of a node of the given role: GPT_SHARD along *axis, within each of
 * *blocks equal blocks of that axis (q, k, v); the rest as the result says. */
static gpt_hold_t hold_of(const layer_t *l, int k, int *axis, int *blocks) {
  *axis = 0;
  *blocks = 1;
  switch (l->role) {
  case ROLE_COLUMN:
    *blocks = l->role_blocks;
    return GPT_SHARD;
  case ROLE_ROW: /* weight (out, in): its columns; the bias on shard 0 */
    *axis = 1;
    return k == 0 ? GPT_SHARD : GPT_SHARD_ZERO;
  case ROLE_VOCAB: /* the table's rows; the position table on shard 0 */
    return k == 0 ? GPT_SHARD : GPT_SHARD_ZERO;
  case ROLE_REPLICATED:
    break;
  }
  return GPT_EVERY_SHARD;
}

/* The node of the part's graph lg that holds global node i's parameters (-1: not this stage's).
 * The graphs are laid out alike (gpt_part_build): input, embedding (first stage), the stage's blocks,
 * final norm and output layer (last stage). */
static int part_node(const graph_t *g, const gpt_part_t *p, const graph_t *lg, int i) {
  int block0 = gpt_block_node(0), blocks_end = g->n - 2;
  if (i == 1) return p->first ? 1 : -1;
  if (i >= blocks_end) return p->last ? lg->n - (g->n - i) : -1;
  int b = (i - block0) / ZOO_GPT_BLOCK_NODES;
  if (b < p->first_block || b >= p->first_block + p->blocks) return -1;
  return (p->first ? block0 : 1) + (i - gpt_block_node(p->first_block));
}

/* The slab tensor of lg that holds global tensor t (owned by node o, its parameter k), or -1 when
 * this part holds none of it. The tied word embedding is the last stage's output weight where that
 * stage lacks the embedding. */
static int part_tensor(const graph_t *g, const gpt_part_t *p, const graph_t *lg, int o, int k, int tied) {
  int n = tied && !p->first && p->last ? lg->n - 1 : part_node(g, p, lg, o);
  if (n < 0) return -1;
  if (k >= lg->l[n].np)
    surge_runtime_error("3d layout: node %d of the part of stage blocks %d.. has %d parameters, not %d (a layout bug)",
                        n, p->first_block, lg->l[n].np, k + 1);
  return lg->l[n].param[k];
}

int gpt_part_pieces(const graph_t *g, const gpt_part_t *p, const graph_t *lg, int ti, gpt_piece_t *out) {
  const slab_tensor_t *t = &g->params.t[ti];
  const layer_t *owner = &g->l[t->owner];
  int k = 0;
  while (k < owner->np && owner->param[k] != ti) k++;
  int axis, blocks;
  gpt_hold_t hold = hold_of(owner, k, &axis, &blocks);
  int tied = g->l[g->n - 1].kind == LAYER_TIED_LINEAR && g->l[g->n - 1].tied_param == ti;
  int li = hold != GPT_SHARD_ZERO || p->tp_rank == 0 ? part_tensor(g, p, lg, t->owner, k, tied) : -1;
  int np = hold == GPT_SHARD ? blocks : 1;
  size_t floats = 0;
  for (int j = 0; j < np; j++) {
    gpt_piece_t *q = &out[j];
    memset(q, 0, sizeof *q);
    q->ndim = t->ndim;
    q->hold = hold;
    q->tied = tied;
    for (int a = 0; a < t->ndim; a++) q->dims[a] = (size_t)t->d[a];
    if (li < 0) continue;
    size_t box = 1;
    for (int a = 0; a < t->ndim; a++) q->count[a] = q->dims[a];
    if (hold == GPT_SHARD) {
      size_t per_block = q->dims[axis] / (size_t)blocks, per_shard = per_block / (size_t)p->tp;
      q->start[axis] = (size_t)j * per_block + (size_t)p->tp_rank * per_shard;
      q->count[axis] = per_shard;
    }
    for (int a = 0; a < t->ndim; a++) box *= q->count[a];
    q->off = lg->params.t[li].off + floats;
    q->n = box;
    floats += box;
  }
  if (li >= 0 && floats != lg->params.t[li].n)
    surge_runtime_error("3d layout: %s holds %zu floats, its boxes of %s %zu (a layout bug)", lg->params.t[li].name,
                        lg->params.t[li].n, t->name, floats);
  return np;
}
