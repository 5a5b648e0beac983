/* Finite-difference gradient check of one layer kind, used by every layer's test.
 * The loss is L = sum(y * r) with a fixed random r, so dL/dy = r. Inputs are a shuffled grid of
 * distinct values at least 0.005 from zero (spacing >= 0.01), so ReLU kinks and max-pool ties never
 * fall inside the +-1e-3 difference step. Parameters are N(0, 0.5). Gradients are pre-filled with a
 * constant to check that backward accumulates (+=). The error per tensor is ||a - n|| / ||n|| over
 * the checked elements (all, or a seeded sample of 256 in big tensors). */
#ifndef SURGE_GRADCHECK_H
#define SURGE_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "nn/layer.h"

typedef struct gradcheck_result {
  double max_rel_err;  /* worst per-tensor relative error */
  char worst[64];      /* which tensor: "x0", "x1", "w0", "w1" */
  int tensors_checked;
} gradcheck_result_t;

/* Check `ops` on layer prototype `l` whose in_shape[] and hyperparameters are set (infer is called
 * here). B samples. For LAYER_EMBED input 0 holds token ids in [0, vocab) and gets no gradient. For
 * LAYER_TIED_LINEAR the shared weight (vocab, out_features) is w0. Runs on backend `be`. */
gradcheck_result_t gradcheck_layer(const layer_ops_t *ops, layer_t l, int B, const backend_t *be,
                                   uint64_t seed);

/* A one-input prototype of `kind` on per-sample input shape `in`, named after the kind; set the
 * hyperparameters (and nin/in_shape[1] for two inputs) before checking. */
layer_t gradcheck_proto(layer_kind_t kind, shape_t in);

/* A call context's state besides activations and parameters: forward's keep (batch norm's mean and
 * rstd) and the layer's buffers at their initial values (running statistics), in training mode;
 * gradcheck_state_free releases them. */
void gradcheck_state_alloc(const layer_t *l, const backend_t *be, layer_ctx_t *c);
void gradcheck_state_free(const layer_t *l, const backend_t *be, layer_ctx_t *c);

/* The tolerance the layer tests use: catches a wrong sign, a transpose or a missing term. */
#define GRADCHECK_TOL 1e-2

#endif
