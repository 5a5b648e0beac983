#include "nn/zoo.h"

#include <stdio.h>
#include <string.h>

static int build_mlp(const config_t *cfg, graph_t *g, int classes) {
  int x = nn_flatten(g, 0, "flatten");
  char name[LAYER_NAME_MAX];
  for (int i = 0; i < cfg->mlp_nhidden; i++) {
    snprintf(name, sizeof name, "fc%d", i + 1);
    x = nn_linear(g, x, cfg->mlp_hidden[i], 1, name);
    snprintf(name, sizeof name, "relu%d", i + 1);
    x = nn_relu(g, x, name);
  }
  snprintf(name, sizeof name, "fc%d", cfg->mlp_nhidden + 1);
  return nn_linear(g, x, classes, 1, name);
}

static int build_vgg(const config_t *cfg, graph_t *g, int classes) {
  int x = 0;
  char name[LAYER_NAME_MAX];
  for (int s = 0; s < cfg->vgg_nstages; s++) {
    for (int j = 0; j < 2; j++) {
      snprintf(name, sizeof name, "conv%d_%d", s + 1, j + 1);
      x = nn_conv2d(g, x, cfg->vgg_channels[s], 3, 1, 1, name);
      snprintf(name, sizeof name, "relu%d_%d", s + 1, j + 1);
      x = nn_relu(g, x, name);
    }
    snprintf(name, sizeof name, "pool%d", s + 1);
    x = nn_maxpool2d(g, x, 2, 2, name);
  }
  x = nn_flatten(g, x, "flatten");
  x = nn_linear(g, x, cfg->vgg_fc, 1, "fc1");
  x = nn_relu(g, x, "relu_fc1");
  return nn_linear(g, x, classes, 1, "fc2");
}

/* relu(shortcut(x) + conv_b(relu(conv_a(x)))); strided when stride > 1 or the width changes. */
static int residual_block(graph_t *g, int x, int width, int stride, const char *prefix) {
  char name[LAYER_NAME_MAX];
  int in_width = x >= 0 && x < g->n ? g->l[x].out.d[0] : width;
  int shortcut = x;
  if (stride != 1 || in_width != width) {
    snprintf(name, sizeof name, "%.30s.down", prefix);
    shortcut = nn_conv2d(g, x, width, 1, stride, 0, name);
  }
  snprintf(name, sizeof name, "%.30s.conv_a", prefix);
  int r = nn_conv2d(g, x, width, 3, stride, 1, name);
  snprintf(name, sizeof name, "%.30s.relu_a", prefix);
  r = nn_relu(g, r, name);
  snprintf(name, sizeof name, "%.30s.conv_b", prefix);
  r = nn_conv2d(g, r, width, 3, 1, 1, name);
  snprintf(name, sizeof name, "%.30s.add", prefix);
  int y = nn_add(g, shortcut, r, name);
  snprintf(name, sizeof name, "%.30s.relu", prefix);
  return nn_relu(g, y, name);
}

static int build_resnet(const config_t *cfg, graph_t *g, int classes) {
  int x = nn_conv2d(g, 0, cfg->resnet_width, 3, 1, 1, "stem");
  x = nn_relu(g, x, "stem_relu");
  char prefix[LAYER_NAME_MAX];
  for (int s = 0; s < cfg->resnet_stages; s++) {
    int width = cfg->resnet_width << s;
    for (int b = 0; b < cfg->resnet_blocks; b++) {
      snprintf(prefix, sizeof prefix, "stage%d.block%d", s + 1, b + 1);
      x = residual_block(g, x, width, s > 0 && b == 0 ? 2 : 1, prefix);
    }
  }
  x = nn_avgpool(g, x, "avgpool");
  return nn_linear(g, x, classes, 1, "fc");
}

static int build_gpt(const config_t *cfg, graph_t *g, int vocab) {
  int C = cfg->gpt_width;
  int emb = nn_embed(g, 0, vocab, cfg->gpt_context, C, "wte");
  int x = emb;
  char name[LAYER_NAME_MAX];
#define BLOCK_NAME(suffix) (snprintf(name, sizeof name, "blocks.%d." suffix, i), name)
  for (int i = 0; i < cfg->gpt_layers; i++) {
    int h = nn_layernorm(g, x, 1e-5f, BLOCK_NAME("ln1"));
    h = nn_linear(g, h, 3 * C, 1, BLOCK_NAME("qkv"));
    h = nn_attention(g, h, cfg->gpt_heads, BLOCK_NAME("attn"));
    h = nn_linear(g, h, C, 1, BLOCK_NAME("proj"));
    x = nn_add(g, x, h, BLOCK_NAME("add1"));
    h = nn_layernorm(g, x, 1e-5f, BLOCK_NAME("ln2"));
    h = nn_linear(g, h, 4 * C, 1, BLOCK_NAME("fc"));
    h = nn_gelu(g, h, BLOCK_NAME("gelu"));
    h = nn_linear(g, h, C, 1, BLOCK_NAME("fcproj"));
    x = nn_add(g, x, h, BLOCK_NAME("add2"));
  }
#undef BLOCK_NAME
  x = nn_layernorm(g, x, 1e-5f, "lnf");
  return nn_tied_linear(g, x, emb, "lm_head");
}

const char *zoo_names(void) { return "mlp, vgg-mini, resnet-mini, gpt"; }

int zoo_build(const config_t *cfg, shape_t in, int classes, graph_t *g, char *err, size_t errlen) {
  int gpt = strcmp(cfg->zoo, "gpt") == 0;
  if (!gpt && in.ndim != 3) {
    snprintf(err, errlen, "model %s needs images (C,H,W), but the data gives token sequences", cfg->zoo);
    return -1;
  }
  graph_init(g, in, gpt ? INIT_NORMAL_002 : INIT_KAIMING_UNIFORM);
  int out;
  if (strcmp(cfg->zoo, "mlp") == 0)
    out = build_mlp(cfg, g, classes);
  else if (strcmp(cfg->zoo, "vgg-mini") == 0)
    out = build_vgg(cfg, g, classes);
  else if (strcmp(cfg->zoo, "resnet-mini") == 0)
    out = build_resnet(cfg, g, classes);
  else if (gpt) {
    if (in.ndim != 1) {
      snprintf(err, errlen, "model gpt needs token sequences (data source text or synthetic), not images");
      return -1;
    }
    g->targets_per_sample = in.d[0];
    out = build_gpt(cfg, g, classes);
  } else {
    snprintf(err, errlen, "unknown model '%s' (accepted: %s)", cfg->zoo, zoo_names());
    return -1;
  }
  if (out < 0) {
    snprintf(err, errlen, "model %s does not fit together: %s", cfg->zoo, g->err);
    return -1;
  }
  return 0;
}
