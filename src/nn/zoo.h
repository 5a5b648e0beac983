/* The model zoo: graphs built from the [model] section of a deck.
 *   mlp          flatten, then (linear, relu) per hidden width, then linear to the classes
 *   vgg-mini     per stage: two 3x3 convs (pad 1) + relu, 2x2 max pool; flatten, fc + relu, fc
 *   resnet-mini  3x3 stem; stages of residual blocks relu(x + conv(relu(conv(x)))), the first block
 *                of later stages strided with a 1x1 strided projection shortcut; global avg pool, fc
 *   gpt          pre-LayerNorm GPT-2: token + position embedding, blocks of
 *                x + proj(attn(qkv(ln1(x)))), x + fcproj(gelu(fc(ln2(x)))), final layernorm, output
 *                tied to the token embedding; byte vocabulary */
#ifndef SURGE_ZOO_H
#define SURGE_ZOO_H

#include <stddef.h>

#include "io/config.h"
#include "nn/graph.h"

/* Build cfg->zoo for inputs of shape `in` with `classes` outputs (per target). Returns 0, or -1
 * with a one-line reason in err (unknown zoo name, layer shapes that do not fit). */
int zoo_build(const config_t *cfg, shape_t in, int classes, graph_t *g, char *err, size_t errlen);

/* Accepted zoo names, comma separated. */
const char *zoo_names(void);

#endif
