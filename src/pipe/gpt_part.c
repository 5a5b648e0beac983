#include "pipe/gpt_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nn/zoo.h"

int gpt_block_node(int b) { return 2 + b * ZOO_GPT_BLOCK_NODES; }

/* The kinds of a block's nodes, in zoo_gpt_block's order, and their names' last parts. */
static const layer_kind_t block_kinds[ZOO_GPT_BLOCK_NODES] = {
    LAYER_LAYERNORM, LAYER_LINEAR, LAYER_ATTENTION, LAYER_LINEAR, LAYER_ADD,
    LAYER_LAYERNORM, LAYER_LINEAR, LAYER_GELU,      LAYER_LINEAR, LAYER_ADD};
static const char *const block_parts[ZOO_GPT_BLOCK_NODES] = {"ln1", "qkv", "attn", "proj", "add1",
                                                             "ln2", "fc",  "gelu", "fcproj", "add2"};

static int node_is(const graph_t *g, int i, layer_kind_t kind, const char *name) {
  return i >= 0 && i < g->n && g->l[i].kind == kind && strcmp(g->l[i].name, name) == 0;
}

int gpt_dims_of(const graph_t *g, gpt_dims_t *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  int L = (g->n - 4) / ZOO_GPT_BLOCK_NODES;
  if (g->n < 4 + ZOO_GPT_BLOCK_NODES || (g->n - 4) % ZOO_GPT_BLOCK_NODES != 0 || g->l[0].out.ndim != 1 ||
      !node_is(g, 1, LAYER_EMBED, "wte") || !node_is(g, g->n - 2, LAYER_LAYERNORM, "lnf") ||
      !node_is(g, g->n - 1, LAYER_TIED_LINEAR, "lm_head")) {
    snprintf(err, errlen, "the model is not the zoo's gpt (embedding, blocks, lnf, tied lm_head)");
    return -1;
  }
  for (int b = 0; b < L; b++)
    for (int k = 0; k < ZOO_GPT_BLOCK_NODES; k++) {
      char name[LAYER_NAME_MAX];
      snprintf(name, sizeof name, "blocks.%d.%s", b, block_parts[k]);
      if (!node_is(g, gpt_block_node(b) + k, block_kinds[k], name)) {
        snprintf(err, errlen, "the model is not the zoo's gpt (node %d is not %s)", gpt_block_node(b) + k, name);
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
  if (p->first) x = emb = nn_embed_shard(lg, 0, V, p->tp_rank * V, p->tp_rank == 0, d->context, C, "wte");
  for (int b = p->first_block; b < p->first_block + p->blocks; b++)
    x = zoo_gpt_block(lg, x, b, C, d->heads, p->tp, p->tp_rank == 0);
  if (p->last) {
    x = nn_layernorm(lg, x, 1e-5f, "lnf");
    x = p->first ? nn_tied_linear(lg, x, emb, "lm_head") : nn_linear(lg, x, V, 0, "lm_head");
  }
  if (x < 0) {
    snprintf(err, errlen, "%s", lg->err);
    return -1;
  }
  return 0;
}

/* How a kind of tensor (its layer's name, last part, and suffix) is split: GPT_SHARD along `axis`,
 * within each of `blocks` equal blocks of that axis (q, k, v); the rest as `hold` says. */
typedef struct split_rule {
  const char *layer, *suffix;
  gpt_hold_t hold;
  int axis, blocks;
} split_rule_t;

static const split_rule_t rules[] = {
    {"qkv", "weight", GPT_SHARD, 0, 3},    {"qkv", "bias", GPT_SHARD, 0, 3},
    {"fc", "weight", GPT_SHARD, 0, 1},     {"fc", "bias", GPT_SHARD, 0, 1},
    {"proj", "weight", GPT_SHARD, 1, 1},   {"fcproj", "weight", GPT_SHARD, 1, 1},
    {"proj", "bias", GPT_SHARD_ZERO, 0, 1}, {"fcproj", "bias", GPT_SHARD_ZERO, 0, 1},
    {"wte", "weight", GPT_SHARD, 0, 1},    {"wte", "pos", GPT_SHARD_ZERO, 0, 1},
};
static const split_rule_t every_shard = {"", "", GPT_EVERY_SHARD, 0, 1};

/* The rule of a tensor name "[blocks.B.]LAYER.SUFFIX"; *block gets B (-1 outside the blocks). */
static const split_rule_t *rule_of(const char *name, int *block) {
  char layer[SLAB_NAME_MAX] = "", suffix[SLAB_NAME_MAX] = "";
  *block = -1;
  if (sscanf(name, "blocks.%d.%63[^.].%63s", block, layer, suffix) != 3) {
    *block = -1;
    if (sscanf(name, "%63[^.].%63s", layer, suffix) != 2) return &every_shard;
  }
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (strcmp(rules[i].layer, layer) == 0 && strcmp(rules[i].suffix, suffix) == 0) return &rules[i];
  return &every_shard;
}

/* Whether the part's stage holds tensor `name` (of block `block`, -1 outside the blocks), and the name
 * its graph gives it. */
static int stage_holds(const gpt_part_t *p, const char *name, int block, char *local, size_t n) {
  snprintf(local, n, "%s", name);
  if (block >= 0) return block >= p->first_block && block < p->first_block + p->blocks;
  if (strcmp(name, "wte.weight") == 0) {
    if (!p->first && p->last) snprintf(local, n, "lm_head.weight");
    return p->first || p->last;
  }
  if (strncmp(name, "wte.", 4) == 0) return p->first;
  return p->last; /* lnf */
}

int gpt_part_pieces(const gpt_dims_t *d, const gpt_part_t *p, const graph_t *lg, const slab_tensor_t *t,
                    gpt_piece_t *out) {
  (void)d;
  int block;
  const split_rule_t *r = rule_of(t->name, &block);
  char local[SLAB_NAME_MAX];
  int held = stage_holds(p, t->name, block, local, sizeof local) && (r->hold != GPT_SHARD_ZERO || p->tp_rank == 0);
  int li = held ? slab_layout_find(&lg->params, local) : -1;
  if (held && li < 0) surge_runtime_error("3d layout: part of stage blocks %d.. lacks %s (a layout bug)", p->first_block, local);
  int np = r->hold == GPT_SHARD ? r->blocks : 1;
  size_t floats = 0;
  for (int j = 0; j < np; j++) {
    gpt_piece_t *q = &out[j];
    memset(q, 0, sizeof *q);
    q->ndim = t->ndim;
    q->hold = r->hold;
    q->tied = strcmp(t->name, "wte.weight") == 0;
    for (int k = 0; k < t->ndim; k++) q->dims[k] = (size_t)t->d[k];
    if (!held) continue;
    size_t box = 1;
    for (int k = 0; k < t->ndim; k++) q->count[k] = q->dims[k];
    if (r->hold == GPT_SHARD) {
      size_t per_block = q->dims[r->axis] / (size_t)r->blocks, per_shard = per_block / (size_t)p->tp;
      q->start[r->axis] = (size_t)j * per_block + (size_t)p->tp_rank * per_shard;
      q->count[r->axis] = per_shard;
    }
    for (int k = 0; k < t->ndim; k++) box *= q->count[k];
    q->off = lg->params.t[li].off + floats;
    q->n = box;
    floats += box;
  }
  if (held && floats != lg->params.t[li].n)
    surge_runtime_error("3d layout: %s holds %zu floats, its boxes of %s %zu (a layout bug)", local,
                        lg->params.t[li].n, t->name, floats);
  return np;
}
