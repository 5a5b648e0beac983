/* The networks of DeepPool's evaluation, as torchvision defines them (torchvision.models: vgg16,
 * vgg16_bn, resnet18, resnet50, wide_resnet50_2, wide_resnet101_2), so that at 224 x 224 x 3 and
 * 1000 classes their parameter counts are the references' (tests/test_zoo_nets.c). Two deck keys
 * size them for small inputs ([model] stem, width_mult; nn/zoo_options.c):
 *   stem = imagenet  the 224-pixel forms: ResNet's 7x7 stride-2 convolution and 3x3 stride-2 max
 *                    pool, VGG's five 2x2 max pools and its classifier on the flattened 7x7 map
 *   stem = small     28 x 28 inputs (Fashion-MNIST): ResNet's stem one 3x3 stride-1 convolution,
 *                    no max pool; VGG without its fifth max pool, its classifier on the global
 *                    average (1x1 at 28 x 28)
 *   width_mult       every channel count and VGG's classifier width times this (at least 1)
 * ResNet's stem max pool pads 1 as torchvision's (56 x 56 at 224). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/zoo_nets.h"

/* ---------------------------------------------------------------- VGG-16 */

/* torchvision's configuration "D": per stage this many 3x3 convolutions (pad 1, each with its
 * ReLU) of this many channels, then a 2x2 max pool */
static const int vgg16_convs[5] = {2, 2, 3, 3, 3}, vgg16_channels[5] = {64, 128, 256, 512, 512};

int zoo_build_vgg16(const zoo_opts_t *o, graph_t *g, int classes) {
  int x = 0, small = zoo_small_stem(o);
  char name[LAYER_NAME_MAX];
  for (int s = 0; s < 5; s++) {
    for (int j = 0; j < vgg16_convs[s]; j++) {
      snprintf(name, sizeof name, "conv%d_%d", s + 1, j + 1);
      x = zoo_conv_norm(o, g, x, zoo_ch(o, vgg16_channels[s]), 3, 1, 1, name);
      snprintf(name, sizeof name, "relu%d_%d", s + 1, j + 1);
      x = nn_relu(g, x, name);
    }
    if (small && s == 4) break;
    snprintf(name, sizeof name, "pool%d", s + 1);
    x = nn_maxpool2d(g, x, 2, 2, 0, name);
  }
  // imagenet: x (512 w, 7, 7) at 224 x 224 -> (25088 w); small: (512 w, 1, 1) at 28 x 28 -> (512 w)
  x = small ? nn_avgpool(g, x, "avgpool") : nn_flatten(g, x, "flatten");
  const int fc = zoo_ch(o, 4096);
  x = nn_relu(g, nn_linear(g, x, fc, 1, "fc1"), "relu_fc1");
  if (o->dropout > 0) x = nn_dropout(g, x, (float)o->dropout, "dropout1");
  x = nn_relu(g, nn_linear(g, x, fc, 1, "fc2"), "relu_fc2");
  return zoo_output_layer(o, g, x, classes, "fc3"); /* with dropout: a second one before it */
}

/* ---------------------------------------------------------------- ResNet and Wide-ResNet */

typedef struct resnet_spec {
  int blocks[4];  /* blocks per stage (layer1..layer4); stage s has 64 * 2^s planes */
  int bottleneck; /* 0: basic blocks (two 3x3, out = planes); 1: bottleneck blocks (1x1 to the
                   * inner width, 3x3 strided, 1x1 to out = 4 planes) */
  int wide;       /* bottleneck's inner width = planes * wide (torchvision's width_per_group / 64) */
} resnet_spec_t;

/* imagenet: conv1 7x7 stride 2 pad 3 (64), relu, maxpool 3x3 stride 2 pad 1: (3,224,224) -> (64,56,56);
 * small: conv1 3x3 stride 1 pad 1 (64), relu: (1,28,28) -> (64,28,28) */
static int resnet_stem(const zoo_opts_t *o, graph_t *g) {
  int small = zoo_small_stem(o);
  int x = zoo_conv_norm(o, g, 0, zoo_ch(o, 64), small ? 3 : 7, small ? 1 : 2, small ? 1 : 3, "conv1");
  x = nn_relu(g, x, "relu");
  return small ? x : nn_maxpool2d(g, x, 3, 2, 1, "maxpool");
}

/* relu(shortcut(x) + conv3(relu(conv2(relu(conv1(x)))))): conv1 1x1 to width, conv2 3x3 strided
 * (ResNet v1.5, as torchvision), conv3 1x1 to out */
static int bottleneck_block(const zoo_opts_t *o, graph_t *g, int x, int width, int out, int stride,
                            const char *prefix) {
  char name[LAYER_NAME_MAX];
  int shortcut = zoo_shortcut(o, g, x, out, stride, prefix);
  static const struct {
    int k, strided;
    const char *conv, *relu;
  } step[3] = {{1, 0, "conv1", "relu1"}, {3, 1, "conv2", "relu2"}, {1, 0, "conv3", NULL}};
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "%.30s.%s", prefix, step[i].conv);
    x = zoo_conv_norm(o, g, x, i == 2 ? out : width, step[i].k, step[i].strided ? stride : 1, step[i].k / 2, name);
    if (!step[i].relu) break;
    snprintf(name, sizeof name, "%.30s.%s", prefix, step[i].relu);
    x = nn_relu(g, x, name);
  }
  snprintf(name, sizeof name, "%.30s.add", prefix);
  x = nn_add(g, shortcut, x, name);
  snprintf(name, sizeof name, "%.30s.relu", prefix);
  return nn_relu(g, x, name);
}

/* stem; stages layer1..4 of blocks "layer<s>.<b>" (the first of layer2..4 strided 2); global
 * average pool; fc. Batch norm after every convolution whatever [model] norm says (torchvision's
 * ResNets have it). */
static int build_resnet(const zoo_opts_t *deck, const resnet_spec_t *sp, graph_t *g, int classes) {
  zoo_opts_t bn = *deck;
  snprintf(bn.norm, sizeof bn.norm, "batchnorm");
  const zoo_opts_t *o = &bn;
  int x = resnet_stem(o, g);
  char prefix[LAYER_NAME_MAX];
  for (int s = 0; s < 4; s++) {
    int planes = zoo_ch(o, 64 << s);
    for (int b = 0; b < sp->blocks[s]; b++) {
      int stride = s > 0 && b == 0 ? 2 : 1;
      snprintf(prefix, sizeof prefix, "layer%d.%d", s + 1, b);
      x = sp->bottleneck ? bottleneck_block(o, g, x, zoo_ch(o, (64 << s) * sp->wide), 4 * planes, stride, prefix)
                         : zoo_residual_block(o, g, x, planes, stride, prefix);
    }
  }
  x = nn_avgpool(g, x, "avgpool"); // (out, 7, 7) -> (out): torchvision's adaptive pool to 1x1, flattened
  return zoo_output_layer(o, g, x, classes, "fc");
}

int zoo_build_resnet18(const zoo_opts_t *o, graph_t *g, int classes) {
  const resnet_spec_t sp = {{2, 2, 2, 2}, 0, 1};
  return build_resnet(o, &sp, g, classes);
}

int zoo_build_resnet50(const zoo_opts_t *o, graph_t *g, int classes) {
  const resnet_spec_t sp = {{3, 4, 6, 3}, 1, 1};
  return build_resnet(o, &sp, g, classes);
}

/* Wide-ResNet-50-k and -101-k (torchvision's wide_resnet*_2 at k = 2, [model] wrn_factor) */
int zoo_build_wrn50(const zoo_opts_t *o, graph_t *g, int classes) {
  const resnet_spec_t sp = {{3, 4, 6, 3}, 1, o->nets.wrn_factor};
  return build_resnet(o, &sp, g, classes);
}

int zoo_build_wrn101(const zoo_opts_t *o, graph_t *g, int classes) {
  const resnet_spec_t sp = {{3, 4, 23, 3}, 1, o->nets.wrn_factor};
  return build_resnet(o, &sp, g, classes);
}
