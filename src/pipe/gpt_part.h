/* A part of the zoo's GPT for one rank of a 3D layout: the whole blocks of its pipeline stage (the
 * embedding on the first stage; the final norm and the output layer on the last), with its
 * tensor-parallel shard of each (Megatron-LM's split):
 * (the roles as nn/zoo.c gives them; the code reads the roles, nn/layer.h):
 *   qkv, fc        column-parallel: this shard's heads' q, k and v rows / 4C/TP rows of the weight
 *   proj, fcproj   row-parallel: the matching C/TP / 4C/TP columns; the bias on shard 0 only, so the
 *                  shards' outputs sum (the executor's allreduce) to the whole layer's
 *   wte            vocabulary-parallel: rows [tp V/TP, (tp+1) V/TP); the position table on shard 0
 *   lm_head        the same rows of wte: tied to the part's own embedding on a one-stage pipeline,
 *                  else a linear layer holding a replica of the first stage's rows
 *   layer norms    whole on every shard
 * A part's tensors are pieces of the whole model's (its "pieces": boxes of the global tensors), which
 * is what the layout describes to checkpoints and what initialisation copies from the whole model. */
#ifndef SURGE_PIPE_GPT_PART_H
#define SURGE_PIPE_GPT_PART_H

#include <stddef.h>

#include "core/slab.h"
#include "nn/graph.h"

/* The sizes of the zoo's gpt. */
typedef struct gpt_dims {
  int layers, width, heads, context, vocab; /* vocab: the token table's rows (padded) */
  int vocab_valid; /* the real tokens (rows at or beyond are padding, nn/logit_mask.h); 0: all */
  int T; /* tokens per sample */
} gpt_dims_t;

/* The sizes of g if it is the zoo's gpt (its node names and kinds): 0, or -1 with a reason. */
int gpt_dims_of(const graph_t *g, gpt_dims_t *d, char *err, size_t errlen);
/* Global graph node of block b's first node (blocks.b.ln1); blocks have ZOO_GPT_BLOCK_NODES nodes. */
int gpt_block_node(int b);

typedef struct gpt_part {
  int tp, tp_rank;         /* tensor-parallel shards, and this one */
  int first_block, blocks; /* the stage's blocks */
  int first, last;         /* the stage is the pipeline's first (embedding) / last (norm, output) */
} gpt_part_t;

/* The part's graph: its input is the token ids (T) on the first stage, else the activation (T, C);
 * its output is the last block's (T, C), or the logits' shard (T, V/TP) on the last stage.
 * 0, or -1 with a reason. */
int gpt_part_build(const gpt_dims_t *d, const gpt_part_t *p, graph_t *lg, char *err, size_t errlen);

/* How the tensor-parallel shards of a stage hold a box of a global tensor. */
typedef enum gpt_hold {
  GPT_SHARD = 0,   /* each shard its own box */
  GPT_EVERY_SHARD, /* every shard the same box (layer norms) */
  GPT_SHARD_ZERO,  /* shard 0 only (row-parallel biases, the position table) */
} gpt_hold_t;

enum { GPT_MAX_PIECES = 3 };

/* One box of a global tensor as a part holds it. */
typedef struct gpt_piece {
  size_t off, n;                 /* floats [off, off+n) of the part's slab; n = 0: not held here */
  int ndim;
  size_t dims[SLAB_MAX_DIMS];    /* the global tensor's shape */
  size_t start[SLAB_MAX_DIMS], count[SLAB_MAX_DIMS]; /* the box (count 0 where not held) */
  gpt_hold_t hold;
  int tied;                      /* the word embedding: held by the first and the last stage */
} gpt_piece_t;

/* The boxes of tensor t of the whole model g's slab layout into out[GPT_MAX_PIECES]: as many as the
 * tensor has on every part (the role_blocks of a column-parallel node: 3 for qkv, whose shard is
 * three row ranges; else 1), each located in the part lg's slab when this part holds it. How a box
 * is split comes from the owning node's tensor-parallel role (nn/layer.h), never from its name.
 * Returns how many. */
int gpt_part_pieces(const graph_t *g, const gpt_part_t *p, const graph_t *lg, int t, gpt_piece_t *out);

#endif
