#include "nn/zoo.h"

#include <stdio.h>
#include <string.h>

#include "core/names.h"
#include "nn/zoo_nets.h"

static int build_mlp(const zoo_opts_t *o, graph_t *g, int classes) {
  int x = nn_flatten(g, 0, "flatten");
  char name[LAYER_NAME_MAX];
  for (int i = 0; i < o->mlp.nhidden; i++) {
    snprintf(name, sizeof name, "fc%d", i + 1);
    x = nn_linear(g, x, o->mlp.hidden[i], 1, name);
    snprintf(name, sizeof name, "relu%d", i + 1);
    x = nn_relu(g, x, name);
  }
  snprintf(name, sizeof name, "fc%d", o->mlp.nhidden + 1);
  return nn_linear(g, x, classes, 1, name);
}

int zoo_batchnorm(const zoo_opts_t *o) { return strcmp(o->norm, "batchnorm") == 0; }

int zoo_bn_local(const zoo_opts_t *o) { return strcmp(o->batchnorm, "local") == 0; }

int zoo_conv_norm(const zoo_opts_t *o, graph_t *g, int x, int out, int k, int stride, int pad, const char *name) {
  int with_bn = zoo_batchnorm(o);
  x = nn_conv2d_bias(g, x, out, k, stride, pad, !with_bn, name);
  if (!with_bn) return x;
  char bn[LAYER_NAME_MAX];
  snprintf(bn, sizeof bn, "%.32s_bn", name);
  return nn_batchnorm(g, x, zoo_bn_local(o), bn);
}

int zoo_output_layer(const zoo_opts_t *o, graph_t *g, int x, int classes, const char *name) {
  if (o->dropout > 0) x = nn_dropout(g, x, (float)o->dropout, "dropout");
  return nn_linear(g, x, classes, 1, name);
}

static int build_vgg(const zoo_opts_t *o, graph_t *g, int classes) {
  int x = 0;
  char name[LAYER_NAME_MAX];
  for (int s = 0; s < o->vgg.nstages; s++) {
    for (int j = 0; j < 2; j++) {
      snprintf(name, sizeof name, "conv%d_%d", s + 1, j + 1);
      x = zoo_conv_norm(o, g, x, o->vgg.channels[s], 3, 1, 1, name);
      snprintf(name, sizeof name, "relu%d_%d", s + 1, j + 1);
      x = nn_relu(g, x, name);
    }
    snprintf(name, sizeof name, "pool%d", s + 1);
    x = nn_maxpool2d(g, x, 2, 2, 0, name);
  }
  x = nn_flatten(g, x, "flatten");
  x = nn_linear(g, x, o->vgg.fc, 1, "fc1");
  x = nn_relu(g, x, "relu_fc1");
  return zoo_output_layer(o, g, x, classes, "fc2");
}

int zoo_shortcut(const zoo_opts_t *o, graph_t *g, int x, int width, int stride, const char *prefix) {
  int in_width = x >= 0 && x < g->n ? g->l[x].out.d[0] : width;
  if (stride == 1 && in_width == width) return x;
  char name[LAYER_NAME_MAX];
  snprintf(name, sizeof name, "%.30s.down", prefix);
  return zoo_conv_norm(o, g, x, width, 1, stride, 0, name);
}

int zoo_residual_block(const zoo_opts_t *o, graph_t *g, int x, int width, int stride, const char *prefix) {
  char name[LAYER_NAME_MAX];
  int shortcut = zoo_shortcut(o, g, x, width, stride, prefix);
  snprintf(name, sizeof name, "%.30s.conv_a", prefix);
  int r = zoo_conv_norm(o, g, x, width, 3, stride, 1, name);
  snprintf(name, sizeof name, "%.30s.relu_a", prefix);
  r = nn_relu(g, r, name);
  snprintf(name, sizeof name, "%.30s.conv_b", prefix);
  r = zoo_conv_norm(o, g, r, width, 3, 1, 1, name);
  snprintf(name, sizeof name, "%.30s.add", prefix);
  int y = nn_add(g, shortcut, r, name);
  snprintf(name, sizeof name, "%.30s.relu", prefix);
  return nn_relu(g, y, name);
}

static int build_resnet(const zoo_opts_t *o, graph_t *g, int classes) {
  int x = zoo_conv_norm(o, g, 0, o->resnet.width, 3, 1, 1, "stem");
  x = nn_relu(g, x, "stem_relu");
  char prefix[LAYER_NAME_MAX];
  for (int s = 0; s < o->resnet.stages; s++) {
    int width = o->resnet.width << s;
    for (int b = 0; b < o->resnet.blocks; b++) {
      snprintf(prefix, sizeof prefix, "stage%d.block%d", s + 1, b + 1);
      x = zoo_residual_block(o, g, x, width, s > 0 && b == 0 ? 2 : 1, prefix);
    }
  }
  x = nn_avgpool(g, x, "avgpool");
  return zoo_output_layer(o, g, x, classes, "fc");
}

int zoo_gpt_block_of(const char *node_name) {
  int b, n = 0;
  return sscanf(node_name, "blocks.%d.%n", &b, &n) == 1 && n > 0 ? b : -1;
}

int zoo_gpt_block(graph_t *g, int x, int i, int width, int heads, int shards, int out_bias) {
  int C = width;
  char name[LAYER_NAME_MAX];
#define BLOCK_NAME(suffix) (snprintf(name, sizeof name, "blocks.%d." suffix, i), name)
  int h = nn_layernorm(g, x, 1e-5f, BLOCK_NAME("ln1"));
  h = nn_role(g, nn_linear(g, h, 3 * C / shards, 1, BLOCK_NAME("qkv")), ROLE_COLUMN, 3);
  h = nn_attention(g, h, heads / shards, BLOCK_NAME("attn"));
  h = nn_role(g, nn_linear(g, h, C, out_bias, BLOCK_NAME("proj")), ROLE_ROW, 1);
  x = nn_add(g, x, h, BLOCK_NAME("add1"));
  h = nn_layernorm(g, x, 1e-5f, BLOCK_NAME("ln2"));
  h = nn_role(g, nn_linear(g, h, 4 * C / shards, 1, BLOCK_NAME("fc")), ROLE_COLUMN, 1);
  h = nn_gelu(g, h, BLOCK_NAME("gelu"));
  h = nn_role(g, nn_linear(g, h, C, out_bias, BLOCK_NAME("fcproj")), ROLE_ROW, 1);
  return nn_add(g, x, h, BLOCK_NAME("add2"));
#undef BLOCK_NAME
}

int zoo_gpt_embed(graph_t *g, int vocab, int vocab_lo, int positions, int context, int width) {
  return nn_role(g, nn_embed_shard(g, 0, vocab, vocab_lo, positions, context, width, "wte"), ROLE_VOCAB, 1);
}

int zoo_gpt_head(graph_t *g, int x, int emb, int vocab) {
  x = nn_layernorm(g, x, 1e-5f, "lnf");
  x = emb >= 0 ? nn_tied_linear(g, x, emb, "lm_head") : nn_linear(g, x, vocab, 0, "lm_head");
  return nn_role(g, x, ROLE_COLUMN, 1);
}

static const struct {
  const char *name; /* "%d": the block */
  int per_block;
} gpt_params[ZOO_GPT_PARAMS] = {
    [ZOO_GPT_WTE] = {"wte.weight", 0},           [ZOO_GPT_WPE] = {"wte.pos", 0},
    [ZOO_GPT_LN1W] = {"blocks.%d.ln1.weight", 1}, [ZOO_GPT_LN1B] = {"blocks.%d.ln1.bias", 1},
    [ZOO_GPT_QKVW] = {"blocks.%d.qkv.weight", 1}, [ZOO_GPT_QKVB] = {"blocks.%d.qkv.bias", 1},
    [ZOO_GPT_PROJW] = {"blocks.%d.proj.weight", 1}, [ZOO_GPT_PROJB] = {"blocks.%d.proj.bias", 1},
    [ZOO_GPT_LN2W] = {"blocks.%d.ln2.weight", 1}, [ZOO_GPT_LN2B] = {"blocks.%d.ln2.bias", 1},
    [ZOO_GPT_FCW] = {"blocks.%d.fc.weight", 1},   [ZOO_GPT_FCB] = {"blocks.%d.fc.bias", 1},
    [ZOO_GPT_FCPROJW] = {"blocks.%d.fcproj.weight", 1}, [ZOO_GPT_FCPROJB] = {"blocks.%d.fcproj.bias", 1},
    [ZOO_GPT_LNFW] = {"lnf.weight", 0},          [ZOO_GPT_LNFB] = {"lnf.bias", 0},
};

int zoo_gpt_param_per_block(zoo_gpt_param_t k) { return gpt_params[k].per_block; }

void zoo_gpt_param_name(zoo_gpt_param_t k, int block, char *out, size_t len) {
  snprintf(out, len, gpt_params[k].name, block);
}

static int find_node(const graph_t *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->l[i].name, name) == 0) return i;
  return -1;
}

int zoo_gpt_form(const graph_t *g, int *blocks, int *heads, char *why, size_t why_len) {
  *blocks = 0;
  for (int i = 0; i < g->n; i++) *blocks += g->l[i].kind == LAYER_ATTENTION;
  int a0 = find_node(g, "blocks.0.attn");
  *heads = a0 >= 0 ? g->l[a0].heads : 0;
  char name[LAYER_NAME_MAX];
  for (int b = 0; b < *blocks; b++) {
    snprintf(name, sizeof name, "blocks.%d.attn", b);
    int a = find_node(g, name);
    snprintf(name, sizeof name, "blocks.%d.gelu", b);
    int ge = find_node(g, name);
    if (a < 0 || g->l[a].heads != *heads || ge < 0 || g->l[ge].kind != LAYER_GELU) {
      snprintf(why, why_len, "block %d is not a GPT-2 block (attention with %d heads, then a tanh GELU MLP)", b, *heads);
      return -1;
    }
  }
  for (int i = 0; i < g->n; i++)
    if (g->l[i].kind == LAYER_LAYERNORM && g->l[i].eps != 1e-5f) {
      snprintf(why, why_len, "layer norm %s has eps %g, GPT-2's is 1e-5", g->l[i].name, (double)g->l[i].eps);
      return -1;
    }
  int head = find_node(g, "lm_head");
  if (head < 0 || g->l[head].kind != LAYER_TIED_LINEAR) {
    snprintf(why, why_len, "the output layer is not tied to the token embedding, as GPT-2's is");
    return -1;
  }
  return 0;
}

static int build_gpt(const zoo_opts_t *o, graph_t *g, int vocab) {
  int m = o->gpt.vocab_multiple > 0 ? o->gpt.vocab_multiple : 1;
  int padded = (int)(((long)vocab + m - 1) / m * m);
  if (padded != vocab) g->classes_valid = vocab;
  int emb = zoo_gpt_embed(g, padded, 0, 1, o->gpt.context, o->gpt.width);
  int x = emb;
  for (int i = 0; i < o->gpt.layers; i++) x = zoo_gpt_block(g, x, i, o->gpt.width, o->gpt.heads, 1, 1);
  return zoo_gpt_head(g, x, emb, vocab);
}

/* The zoo: each model's name, its builder (returns the output node, or -1 with g->err set), the
 * input it takes and how its parameters are initialised. */
typedef struct zoo_entry {
  const char *name;
  int (*build)(const zoo_opts_t *o, graph_t *g, int classes);
  int sequences; /* 1: token sequences (T); 0: images (C,H,W) */
  init_scheme_t init;
  int cnn;       /* 1: takes [model] norm and dropout; 2: also stem and width_mult (nn/zoo_nets.c) */
} zoo_entry_t;

static const zoo_entry_t zoo[] = {
    {"mlp", build_mlp, 0, INIT_KAIMING_UNIFORM, 0},
    {"vgg-mini", build_vgg, 0, INIT_KAIMING_UNIFORM, 1},
    {"resnet-mini", build_resnet, 0, INIT_KAIMING_UNIFORM, 1},
    {"gpt", build_gpt, 1, INIT_NORMAL_002, 0},
    {"vgg16", zoo_build_vgg16, 0, INIT_KAIMING_UNIFORM, 2},
    {"resnet18", zoo_build_resnet18, 0, INIT_KAIMING_UNIFORM, 2},
    {"resnet50", zoo_build_resnet50, 0, INIT_KAIMING_UNIFORM, 2},
    {"wrn50", zoo_build_wrn50, 0, INIT_KAIMING_UNIFORM, 2},
    {"wrn101", zoo_build_wrn101, 0, INIT_KAIMING_UNIFORM, 2},
    {"inception-v3", zoo_build_inception_v3, 0, INIT_KAIMING_UNIFORM, 2},
};
enum { ZOO_SIZE = sizeof zoo / sizeof zoo[0], ZOO_NAMES_MAX = 256 };

const char *zoo_names(void) {
  static _Thread_local char names[ZOO_NAMES_MAX];
  if (!names[0])
    for (size_t i = 0; i < ZOO_SIZE; i++) names_append(names, sizeof names, zoo[i].name);
  return names;
}

static const zoo_entry_t *zoo_find(const char *model) {
  for (size_t i = 0; i < ZOO_SIZE; i++)
    if (strcmp(model, zoo[i].name) == 0) return &zoo[i];
  return NULL;
}

int zoo_takes_sequences(const char *model) {
  const zoo_entry_t *z = zoo_find(model);
  return z && z->sequences;
}

int zoo_build(zoo_opts_t o, shape_t in, int classes, graph_t *g, char *err, size_t errlen) {
  return zoo_build_blamed(o, in, classes, g, err, errlen, NULL);
}

int zoo_build_blamed(zoo_opts_t o, shape_t in, int classes, graph_t *g, char *err, size_t errlen, const char **key) {
  const char *unused;
  if (!key) key = &unused;
  *key = "model.zoo";
  const zoo_entry_t *z = zoo_find(o.model);
  if (!z) {
    snprintf(err, errlen, "unknown model '%s' (accepted: %s)", o.model, zoo_names());
    return -1;
  }
  if (!z->sequences && in.ndim != 3) {
    snprintf(err, errlen, "model %s needs images (C,H,W), but the data gives token sequences", o.model);
    *key = "data.source";
    return -1;
  }
  if (z->sequences && in.ndim != 1) {
    snprintf(err, errlen, "model %s needs token sequences (data source text or synthetic), not images", o.model);
    *key = "data.source";
    return -1;
  }
  if ((zoo_batchnorm(&o) || o.dropout > 0) && !z->cnn) {
    snprintf(err, errlen, "model %s takes no %s (only the CNNs do)", o.model,
             zoo_batchnorm(&o) ? "norm = batchnorm" : "dropout");
    *key = zoo_batchnorm(&o) ? "model.norm" : "model.dropout";
    return -1;
  }
  graph_init(g, in, z->init);
  if (z->sequences) g->targets_per_sample = in.d[0];
  if (z->build(&o, g, classes) < 0) {
    snprintf(err, errlen, "model %s does not fit together: %s%s", o.model, g->err,
             z->cnn == 2 && strcmp(o.nets.stem, "small") != 0 ? " (hint: [model] stem = small for inputs under 224 x 224)"
                                                                : "");
    return -1;
  }
  return 0;
}
