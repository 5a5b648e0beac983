/* Dropout (PyTorch's nn.Dropout(p)): in training each element is zeroed with probability p and the
 * others scaled by 1/(1 - p); in evaluation y = x. The mask is a function of (seed, node, step,
 * global sample id, element) only: sample id's elements are the draws, in order, of the stream
 * seeded by (seed, node, step, id) (core/rng.h), so every layout, rank count and resumed run draws
 * the same mask for a sample whatever rank computes it. aux holds each sample's mask (0 or
 * 1/(1 - p)) for backward. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nn/layer.h"
#include "nn/layer_common.h"

static int dropout_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "dropout", 1, err, n)) return -1;
  if (!(l->p >= 0.0f && l->p < 1.0f)) {
    snprintf(err, n, "dropout: p must be in [0, 1), got %g", (double)l->p);
    return -1;
  }
  l->out = l->in_shape[0];
  layer_set_no_params(l, shape_size(l->out), (double)shape_size(l->out)); /* aux: the mask */
  return 0;
}

/* The mask of the call's B samples of n elements each into host memory (B, n). */
static void dropout_mask(const layer_t *l, const layer_ctx_t *c, size_t n, float *mask) {
  rng_t key;
  rng_seed_stream(&key, c->seed, (uint64_t)c->node, 0xd40); /* this node's key */
  const uint64_t node_seed = rng_u64(&key);
  const float scale = 1.0f / (1.0f - l->p);
  for (int b = 0; b < c->B; b++) {
    rng_t r;
    rng_seed_stream(&r, node_seed, c->step, c->ids ? c->ids[b] : (uint64_t)b);
    for (size_t e = 0; e < n; e++) mask[(size_t)b * n + e] = rng_uniform(&r) < l->p ? 0.0f : scale;
  }
}

static void dropout_forward(const layer_t *l, const layer_ctx_t *c) {
  size_t n = shape_size(l->out), total = (size_t)c->B * n;
  if (!c->train || l->p == 0.0f) {
    c->be->copy(c->y, c->x[0], total);
    return;
  }
  float *mask = c->be->host_memory ? c->aux : xcalloc(total ? total : 1, sizeof *mask);
  dropout_mask(l, c, n, mask);
  if (mask != c->aux) {
    c->be->upload(c->aux, mask, total);
    free(mask);
  }
  c->be->mul(total, c->x[0], c->aux, c->y, 0);
}

static void dropout_backward(const layer_t *l, const layer_ctx_t *c) {
  size_t total = (size_t)c->B * shape_size(l->out);
  if (!c->dx[0]) return;
  if (l->p == 0.0f) {
    layer_pass_grad(c, 0, total);
    return;
  }
  c->be->mul(total, c->dy, c->aux, c->dx[0], !c->dx_write[0]); /* dx (+)= dy * mask */
}

const layer_ops_t layer_dropout_ops = {"dropout", dropout_infer, layer_init_none, dropout_forward, dropout_backward,
                                       1, NULL, NULL, 0, 0, 0, 0};
