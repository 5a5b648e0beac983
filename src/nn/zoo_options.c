/* The deck's [model] keys of the zoo's sizes (nn/zoo.h); the model's name ([model] zoo) is the
 * run's own key, since checkpoints, logs and plans name their model by it. */
#include <stdio.h>

#include "nn/zoo.h"

#define CFG_OPTS zoo_opts_t
#define MAX_WIDTH 65536LL /* any layer width */
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_LIST_KEY("model", "mlp_hidden", mlp.hidden, mlp.nhidden, "512,512", 1, MAX_WIDTH,
                 "mlp: hidden layer widths, input to output"),
    CFG_LIST_KEY("model", "vgg_channels", vgg.channels, vgg.nstages, "32,64", 1, 4096,
                 "vgg-mini: conv channels per stage (two 3x3 convs and a 2x2 max-pool each)"),
    CFG_INT_KEY("model", "vgg_fc", vgg.fc, "256", 1, MAX_WIDTH, "vgg-mini: width of the hidden fully-connected layer"),
    CFG_INT_KEY("model", "resnet_width", resnet.width, "16", 1, 4096, "resnet-mini: stem channels"),
    CFG_INT_KEY("model", "resnet_blocks", resnet.blocks, "2", 1, 64, "resnet-mini: residual blocks per stage"),
    CFG_INT_KEY("model", "resnet_stages", resnet.stages, "2", 1, 8,
                "resnet-mini: stages (each after the first halves H,W and doubles channels)"),
    CFG_ENUM_KEY("model", "norm", norm, "none", CFG_VALUES("none", "batchnorm"),
                 "vgg-mini, resnet-mini, vgg16: batchnorm puts a batch norm after every convolution (which then has no "
                 "bias; resnet18, resnet50 and wrn* always have them)"),
    CFG_ENUM_KEY("model", "batchnorm", batchnorm, "global", CFG_VALUES("global", "local"),
                 "batch norm statistics: global, of the whole batch a layer runs on, summed over its ranks (every "
                 "layout computes one rank's numbers); local, of each rank's samples only (PyTorch DDP's default: "
                 "the maths changes with the rank count)"),
    CFG_FLOAT_KEY("model", "dropout", dropout, "0", 0, CFG_CLOSED, 1, CFG_OPEN,
                  "the CNNs: dropout probability before the output layer (vgg16: after both hidden fcs) (0: no dropout; the mask is "
                  "a function of seed, step, sample id and element, the same in every layout)"),
    CFG_ENUM_KEY("model", "stem", nets.stem, "imagenet", CFG_VALUES("imagenet", "small"),
                 "vgg16, resnet*, wrn*, inception-v3: imagenet, the 224 x 224 forms (ResNet's 7x7 stride-2 stem and "
                 "max pool, VGG's five max pools; Inception-v3's at 299 x 299); small, for 28 x 28 inputs (a 3x3 "
                 "stride-1 stem, no max pool; VGG without its last max pool, its classifier on the global average; "
                 "Inception-v3's stem convolutions at stride 1 keeping the size, without its max pools)"),
    CFG_FLOAT_KEY("model", "width_mult", nets.width_mult, "1", 0, CFG_OPEN, 4, CFG_CLOSED,
                  "vgg16, resnet*, wrn*, inception-v3: every channel count (and VGG's classifier width) times this, at least 1 "
                  "(1: torchvision's widths)"),
    CFG_INT_KEY("model", "wrn_factor", nets.wrn_factor, "2", 1, 64,
                "wrn50, wrn101: the bottleneck's inner width factor (Wide-ResNet-50-2: 2)"),
    CFG_INT_KEY("model", "gpt_layers", gpt.layers, "4", 1, 256, "gpt: transformer blocks"),
    CFG_INT_KEY("model", "gpt_width", gpt.width, "256", 1, MAX_WIDTH, "gpt: embedding width (a multiple of gpt_heads)"),
    CFG_INT_KEY("model", "gpt_heads", gpt.heads, "4", 1, 256, "gpt: attention heads per block"),
    CFG_INT_KEY("model", "gpt_context", gpt.context, "128", 1, MAX_WIDTH, "gpt: context length in tokens"),
    CFG_INT_KEY("model", "gpt_vocab_multiple", gpt.vocab_multiple, "128", 1, 4096,
                "gpt: the token table and logits padded to a multiple of this (llm.c: 50257 -> 50304); the "
                "padding is kept out of the loss and the gradients (1: no padding)"),
};
// clang-format on

/* Heads split the width evenly. */
static int check(const struct config *cfg, cfg_problem_t *p) {
  const zoo_opts_t *o = zoo_opts(cfg);
  if (o->gpt.width % o->gpt.heads == 0) return 0;
  snprintf(p->key, sizeof p->key, "model.gpt_heads");
  snprintf(p->or_key, sizeof p->or_key, "model.gpt_width");
  snprintf(p->msg, sizeof p->msg, "gpt_heads (%d) must divide gpt_width (%d) (hint: e.g. gpt_width = %d)",
           o->gpt.heads, o->gpt.width, (o->gpt.width / o->gpt.heads + 1) * o->gpt.heads);
  return 1;
}

const cfg_part_t zoo_options = {
    .name = "zoo", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(zoo_opts_t), .check = check};
