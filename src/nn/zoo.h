/* The model zoo: graphs built from the [model] section of a deck.
 *   mlp          flatten, then (linear, relu) per hidden width, then linear to the classes
 *   vgg-mini     per stage: two 3x3 convs (pad 1) + relu, 2x2 max pool; flatten, fc + relu, fc
 *   resnet-mini  3x3 stem; stages of residual blocks relu(x + conv(relu(conv(x)))), the first block
 *                of later stages strided with a 1x1 strided projection shortcut; global avg pool, fc
 *   (vgg-mini and resnet-mini: with batchnorm, conv -> batch norm -> relu, each conv without bias;
 *   with dropout, a dropout node before the last linear layer)
 * The networks of DeepPool's evaluation, torchvision's definitions (nn/zoo_nets.c; sized for 28 x 28
 * by [model] stem = small and width_mult):
 *   vgg16        13 3x3 convs in 5 stages (each + relu, a 2x2 max pool per stage), fc 4096, fc
 *                4096, fc; with norm = batchnorm VGG-16-BN; with dropout, after both hidden fcs
 *   resnet18     7x7/2 stem + 3x3/2 max pool, basic blocks 2,2,2,2 of 64..512 planes, batch norm,
 *                global avg pool, fc
 *   resnet50     the same with bottleneck blocks 3,4,6,3 (1x1, 3x3 strided, 1x1 to 4 x planes)
 *   wrn50 wrn101 Wide-ResNet-50-2 and -101-2 (bottlenecks 3,4,6,3 and 3,4,23,3, the inner width
 *                times wrn_factor)
 *   gpt          pre-LayerNorm GPT-2: token + position embedding, blocks of
 *                x + proj(attn(qkv(ln1(x)))), x + fcproj(gelu(fc(ln2(x)))), final layernorm, output
 *                tied to the token embedding; the data's vocabulary (bytes, or a
 *                tokenizer's), padded up to a multiple of gpt.vocab_multiple */
#ifndef SURGE_ZOO_H
#define SURGE_ZOO_H

#include <stddef.h>

#include "core/keys.h"
#include "nn/graph.h"

#define ZOO_MAX_LIST 16 /* most entries of a width list */

/* What to build: a model of the zoo and its sizes (the deck's [model] section: the sizes are this
 * part's rows, nn/zoo_options.c; the name is the run's [model] zoo). */
typedef struct zoo_opts {
  char model[32]; /* a name of zoo_names() */
  struct {
    int hidden[ZOO_MAX_LIST]; /* hidden layer widths, input to output */
    int nhidden;
  } mlp;
  struct {
    int channels[ZOO_MAX_LIST]; /* conv channels per stage (two 3x3 convs and a 2x2 max-pool each) */
    int nstages;
    int fc; /* width of the hidden fully-connected layer */
  } vgg;
  char norm[16];      /* vgg-mini, resnet-mini: none | batchnorm (a batch norm after every convolution,
                       * whose bias it makes redundant: the convolutions then have none), as VGG-BN and
                       * ResNet (zoo_batchnorm) */
  char batchnorm[16]; /* global | local: batch norm statistics of each rank's samples only (zoo_bn_local) */
  double dropout;     /* vgg-mini, resnet-mini: dropout with this probability before the output layer
                       * (0: no dropout node) */
  struct {
    int width;  /* stem channels */
    int blocks; /* residual blocks per stage */
    int stages; /* each after the first halves H,W and doubles the channels */
  } resnet;
  struct {
    char stem[16];     /* vgg16, resnet*, wrn*: imagenet (the 224-pixel forms) | small (28 x 28: a 3x3
                        * stride-1 stem, no early pooling; nn/zoo_nets.c) */
    double width_mult; /* vgg16, resnet*, wrn*: every channel count (and VGG's classifier) times this */
    int wrn_factor;    /* wrn50, wrn101: the bottleneck's inner width factor (torchvision's 2) */
  } nets;
  struct {
    int layers, width, heads; /* transformer blocks, embedding width, attention heads per block */
    int context;              /* positions of the position embedding: tokens per sequence */
    int vocab_multiple;       /* the token table and the logits padded to a multiple of this
                               * (llm.c: 128); the padding is kept out of loss and gradients */
  } gpt;
} zoo_opts_t;

/* Whether o puts a batch norm after every convolution; whether its statistics are each rank's own. */
int zoo_batchnorm(const zoo_opts_t *o);
int zoo_bn_local(const zoo_opts_t *o);

/* The [model] rows of the sizes, and their check (heads divide the width). */
extern const cfg_part_t zoo_options;

/* A parsed configuration's sizes (its model name is the run's [model] zoo). */
static inline const zoo_opts_t *zoo_opts(const struct config *cfg) {
  return (const zoo_opts_t *)cfg_part(cfg, &zoo_options);
}

/* Build o.model for inputs of shape `in` with `classes` outputs (per target). Returns 0, or -1
 * with a one-line reason in err (unknown model name, layer shapes that do not fit). */
int zoo_build(zoo_opts_t o, shape_t in, int classes, graph_t *g, char *err, size_t errlen);
/* zoo_build, and on a refusal *key the deck key it is about: "model.norm" or "model.dropout" (a
 * model without them), "data.source" (images for a sequence model or the other way round), else
 * "model.zoo" (the name, or sizes that do not fit together). */
int zoo_build_blamed(zoo_opts_t o, shape_t in, int classes, graph_t *g, char *err, size_t errlen, const char **key);

/* One gpt block i on x (T, width): the zoo's gpt and its tensor-parallel parts (3D parallelism,
 * src/pipe/) build their blocks with it. Nodes blocks.i.{ln1, qkv, attn, proj, add1, ln2, fc, gelu,
 * fcproj, add2}, in that order, with their tensor-parallel roles (nn/layer.h: qkv and fc column-,
 * proj and fcproj row-parallel). shards > 1 builds one tensor-parallel shard: the attention heads
 * and the first MLP layer's columns split into `shards` parts (qkv (T, 3 width/shards), fc
 * (T, 4 width/shards)), of which the graph holds one; out_bias 0 leaves out the biases of proj and
 * fcproj (one shard holds them). Returns the block's output node (add2), or -1 with g->err set. */
int zoo_gpt_block(graph_t *g, int x, int i, int width, int heads, int shards, int out_bias);
/* The gpt's embedding on its token ids (node 0): `vocab` rows of the table from id vocab_lo (the
 * whole table: vocab_lo 0; a vocabulary-parallel shard otherwise), with the position table when
 * positions != 0. Returns its node, or -1 with g->err set. */
int zoo_gpt_embed(graph_t *g, int vocab, int vocab_lo, int positions, int context, int width);
/* The gpt's head on x (T, width): the final layer norm and the output layer, tied to embedding node
 * emb when emb >= 0, else a linear layer of `vocab` rows without bias (the last pipeline stage's
 * replica of the embedding's rows). Returns the output node, or -1 with g->err set. */
int zoo_gpt_head(graph_t *g, int x, int emb, int vocab);
enum { ZOO_GPT_BLOCK_NODES = 10 };
/* The block number i of a node that zoo_gpt_block named (blocks.i.*), or -1 for any other name. */
int zoo_gpt_block_of(const char *node_name);

/* The gpt's parameter tensors in GPT-2's order (llm.c's: wte, wpe, then per block ln1 w/b, qkv w/b,
 * proj w/b, ln2 w/b, fc w/b, fcproj w/b, then lnf w/b), for the weights formats (io/gpt2_map.h). */
typedef enum zoo_gpt_param {
  ZOO_GPT_WTE, ZOO_GPT_WPE, ZOO_GPT_LN1W, ZOO_GPT_LN1B, ZOO_GPT_QKVW, ZOO_GPT_QKVB, ZOO_GPT_PROJW, ZOO_GPT_PROJB,
  ZOO_GPT_LN2W, ZOO_GPT_LN2B, ZOO_GPT_FCW, ZOO_GPT_FCB, ZOO_GPT_FCPROJW, ZOO_GPT_FCPROJB, ZOO_GPT_LNFW, ZOO_GPT_LNFB,
  ZOO_GPT_PARAMS
} zoo_gpt_param_t;
/* 1 when there is one of k per block, 0 for the embedding and the final layer norm. */
int zoo_gpt_param_per_block(zoo_gpt_param_t k);
/* The name the builders give parameter k of block `block` (ignored outside the blocks). */
void zoo_gpt_param_name(zoo_gpt_param_t k, int block, char *out, size_t len);
/* Whether g is the zoo's whole gpt in GPT-2's form: blocks of attention with one head count and a
 * tanh-GELU MLP, every layer norm's eps 1e-5, the output tied to the token embedding. 0 with its
 * blocks and heads, or -1 with the reason in why (the tensors' names and shapes are the caller's
 * to check, through zoo_gpt_param_name). */
int zoo_gpt_form(const graph_t *g, int *blocks, int *heads, char *why, size_t why_len);

/* 1 when the model takes token sequences (gpt), 0 when it takes images or is unknown. */
int zoo_takes_sequences(const char *model);

/* Accepted model names, comma separated. */
const char *zoo_names(void);

#endif
