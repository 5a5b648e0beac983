#include "nn/layer.h"

#include <stdint.h>

#include "core/error.h"

static const layer_ops_t *const ops_by_kind[LAYER_KIND_COUNT] = {
    [LAYER_INPUT] = &layer_input_ops,         [LAYER_LINEAR] = &layer_linear_ops,
    [LAYER_CONV2D] = &layer_conv2d_ops,       [LAYER_MAXPOOL2D] = &layer_maxpool2d_ops,
    [LAYER_AVGPOOL] = &layer_avgpool_ops,     [LAYER_FLATTEN] = &layer_flatten_ops,
    [LAYER_RELU] = &layer_relu_ops,           [LAYER_GELU] = &layer_gelu_ops,
    [LAYER_ADD] = &layer_add_ops,             [LAYER_LAYERNORM] = &layer_layernorm_ops,
    [LAYER_EMBED] = &layer_embed_ops,         [LAYER_ATTENTION] = &layer_attention_ops,
    [LAYER_TIED_LINEAR] = &layer_tied_linear_ops, [LAYER_BATCHNORM] = &layer_batchnorm_ops,
    [LAYER_DROPOUT] = &layer_dropout_ops,     [LAYER_AVGPOOL2D] = &layer_avgpool2d_ops,
    [LAYER_CONCAT] = &layer_concat_ops,
};

const layer_ops_t *layer_ops_of(layer_kind_t kind) { return ops_by_kind[kind]; }

const char *layer_kind_name(layer_kind_t kind) {
  if (kind < 0 || kind >= LAYER_KIND_COUNT) return "?";
  return ops_by_kind[kind]->kind_name;
}


size_t layer_scratch_floats(const layer_t *l, int B) {
  size_t per = surge_mul_size(l->scratch_per_sample, B > 0 ? (size_t)B : 0, "layer scratch");
  if (per > SIZE_MAX - l->scratch) surge_runtime_error("layer %s: scratch of %d samples overflows", l->name, B);
  return l->scratch + per;
}
