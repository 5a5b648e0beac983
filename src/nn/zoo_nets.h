/* Inside the zoo: the pieces its builders share (nn/zoo.c) and the builders of the networks of
 * DeepPool's evaluation (nn/zoo_nets.c), which the zoo's table (nn/zoo.c) lists. Not for use
 * outside src/nn: a model is built through zoo_build. */
#ifndef SURGE_ZOO_NETS_H
#define SURGE_ZOO_NETS_H

#include <math.h>
#include <string.h>

#include "nn/zoo.h"

/* A convolution named `name` (k x k, stride, padding pad), then with norm = batchnorm a batch norm
 * "<name>_bn" (the convolution then without bias: the norm's shift replaces it). */
int zoo_conv_norm(const zoo_opts_t *o, graph_t *g, int x, int out, int k, int stride, int pad, const char *name);
/* The output layer `name` (linear to the classes), after a dropout node where o->dropout > 0. */
int zoo_output_layer(const zoo_opts_t *o, graph_t *g, int x, int classes, const char *name);
/* A residual block's shortcut on x (C,H,W): x itself, or where stride > 1 or C != width a strided
 * 1x1 projection "<prefix>.down" (with its batch norm) to (width, H/stride, W/stride). */
int zoo_shortcut(const zoo_opts_t *o, graph_t *g, int x, int width, int stride, const char *prefix);
/* relu(shortcut(x) + conv_b(relu(conv_a(x)))), both 3x3, conv_a strided: ResNet's basic block. */
int zoo_residual_block(const zoo_opts_t *o, graph_t *g, int x, int width, int stride, const char *prefix);

/* c channels times the width multiplier ([model] width_mult), at least 1. */
static inline int zoo_ch(const zoo_opts_t *o, int c) {
  long v = lround(c * o->nets.width_mult);
  return v < 1 ? 1 : (int)v;
}
/* [model] stem = small: the forms for 28 x 28 inputs. */
static inline int zoo_small_stem(const zoo_opts_t *o) { return strcmp(o->nets.stem, "small") == 0; }

/* The networks of DeepPool's evaluation (torchvision's definitions; nn/zoo_nets.c, Inception-v3 in
 * nn/zoo_inception.c). Each returns the output node, or -1 with g->err set. */
int zoo_build_vgg16(const zoo_opts_t *o, graph_t *g, int classes);
int zoo_build_resnet18(const zoo_opts_t *o, graph_t *g, int classes);
int zoo_build_resnet50(const zoo_opts_t *o, graph_t *g, int classes);
int zoo_build_wrn50(const zoo_opts_t *o, graph_t *g, int classes);
int zoo_build_wrn101(const zoo_opts_t *o, graph_t *g, int classes);
int zoo_build_inception_v3(const zoo_opts_t *o, graph_t *g, int classes);

#endif
