/* Tensor-parallel pieces that need the ranks of a stage together (Megatron-LM's f, g and the
 * vocabulary-parallel cross-entropy), through the comm layer in traffic category tp. The layers stay
 * pure backend code; the executor calls these at node boundaries:
 *   g  after the forward of a row-parallel layer (proj, fcproj) and of the vocabulary-parallel
 *      embedding: the shards' partial outputs summed (tp_allreduce); identity backward
 *   f  after the backward of a column-parallel layer (qkv, fc, lm_head): the shards' partial
 *      gradients of its (replicated) input summed; identity forward
 * and the loss of the last stage on its shard of the logits (no rank holds them whole). */
#ifndef SURGE_PIPE_TP_H
#define SURGE_PIPE_TP_H

#include "backend/backend.h"
#include "comm/comm.h"

/* In-place sum of n floats (backend memory) over the tensor-parallel group (nothing on one rank). */
void tp_allreduce(comm_t *tp, float *x, size_t n);

/* The vocabulary-parallel cross-entropy of one shard: columns [lo, lo + V) of the logits. */
typedef struct tp_xent {
  const backend_t *be;
  comm_t *tp;
  int V, lo, cap;        /* shard width, its first column, most rows per call */
  float *mx, *stats;     /* backend (cap): row maxima; (2, cap): sums of exponentials, target logits */
  float *first;          /* backend (cap): first column of the maximum */
  float *host;           /* (4, cap) host copies */
  float *mask;           /* backend (V): the padded columns' mask (nn/logit_mask.h), or NULL */
} tp_xent_t;

/* valid: the real vocabulary (columns at or beyond it are padding, kept out; 0: none). */
void tp_xent_init(tp_xent_t *x, const backend_t *be, comm_t *tp, int V, int lo, int valid, int max_rows);
void tp_xent_free(tp_xent_t *x);
/* Collective over tp: the loss SUM of rows targets, logits (rows, V) this shard's columns; writes
 * dlogits (rows, V) = grad_scale * (softmax - onehot) of this shard's columns when grad_scale != 0. */
double tp_xent_loss(tp_xent_t *x, int rows, float *logits, const float *targets, float grad_scale,
                    float *dlogits); /* logits: the padding masked in place */
/* Collective over tp: rows whose first maximum over the whole vocabulary is the target. */
long tp_xent_correct(tp_xent_t *x, int rows, float *logits, const float *targets);

#endif
