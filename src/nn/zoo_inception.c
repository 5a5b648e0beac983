/* Inception-v3 as torchvision defines it (torchvision.models.inception_v3, aux_logits=False): so
 * that at 299 x 299 x 3 and 1000 classes its parameter count is torchvision's, 23,834,568
 * (tests/test_zoo_nets.c). Every convolution is torchvision's BasicConv2d: a convolution without
 * bias, a batch norm with eps 1e-3, a ReLU, whatever [model] norm says. Nodes are named after
 * torchvision's modules ("Mixed_5b.branch5x5_2.conv", ".bn", ".relu").
 *
 *   stem       Conv2d_1a_3x3 (32, stride 2), Conv2d_2a_3x3 (32), Conv2d_2b_3x3 (64, pad 1), max pool
 *              3x3/2, Conv2d_3b_1x1 (80), Conv2d_4a_3x3 (192), max pool 3x3/2:
 *              (3,299,299) -> (192,35,35)
 *   Mixed_5b..5d  InceptionA (pool features 32, 64, 64): 1x1 | 1x1, 5x5 | 1x1, 3x3, 3x3 | avg
 *              pool 3x3/1 pad 1, 1x1; concatenated -> (256 | 288 | 288, 35, 35)
 *   Mixed_6a   InceptionB: 3x3/2 | 1x1, 3x3, 3x3/2 | max pool 3x3/2 -> (768,17,17)
 *   Mixed_6b..6e  InceptionC (c7 128, 160, 160, 192): 1x1 | 1x1, 1x7, 7x1 | 1x1, 7x1, 1x7, 7x1,
 *              1x7 | avg pool, 1x1 -> (768,17,17)
 *   Mixed_7a   InceptionD: 1x1, 3x3/2 | 1x1, 1x7, 7x1, 3x3/2 | max pool 3x3/2 -> (1280,8,8)
 *   Mixed_7b, 7c  InceptionE: 1x1 | 1x1, (1x3 | 3x1) | 1x1, 3x3, (1x3 | 3x1) | avg pool, 1x1
 *              -> (2048,8,8)
 *   head       global average pool, dropout ([model] dropout; torchvision's is 0.5), fc
 *
 * The auxiliary classifier (torchvision's AuxLogits after Mixed_6e, 3,326,696 parameters, used in
 * training only) is not built. Branches join by a chain of two-input concatenations (LAYER_CONCAT)
 * in torchvision's order, so the channels are torchvision's. stem = small (28 x 28 inputs): the
 * stem's convolutions keep the size (stride 1, "same" padding) and its max pools are left out, so
 * Mixed_5* run at 28 x 28, Mixed_6* at 13 x 13, Mixed_7* at 6 x 6; no parameter count changes.
 * width_mult scales every convolution's channels. */
#include <stdio.h>

#include "nn/zoo_nets.h"

#define INCEPTION_BN_EPS 1e-3f

/* One BasicConv2d: out channels (before width_mult), a kh x kw kernel, stride, padding ph, pw. */
typedef struct conv_spec {
  const char *name;
  int out, kh, kw, stride, ph, pw;
} conv_spec_t;

/* conv (no bias) "<prefix>.<name>.conv", batch norm ".bn" (eps 1e-3), ReLU ".relu" */
static int basic_conv(const zoo_opts_t *o, graph_t *g, int x, const char *prefix, const conv_spec_t *c) {
  char name[LAYER_NAME_MAX];
  snprintf(name, sizeof name, "%.18s%s%.15s.conv", prefix, prefix[0] ? "." : "", c->name);
  x = nn_conv2d_rect(g, x, zoo_ch(o, c->out), c->kh, c->kw, c->stride, c->ph, c->pw, 0, name);
  snprintf(name, sizeof name, "%.18s%s%.15s.bn", prefix, prefix[0] ? "." : "", c->name);
  x = nn_batchnorm_eps(g, x, zoo_bn_local(o), INCEPTION_BN_EPS, name);
  snprintf(name, sizeof name, "%.18s%s%.15s.relu", prefix, prefix[0] ? "." : "", c->name);
  return nn_relu(g, x, name);
}

/* a branch: the n convolutions one after the other on x */
static int conv_chain(const zoo_opts_t *o, graph_t *g, int x, const char *prefix, const conv_spec_t *c, int n) {
  for (int i = 0; i < n; i++) x = basic_conv(o, g, x, prefix, &c[i]);
  return x;
}

/* torch.cat of the n parts along the channels: "<prefix>.cat<i>" joins the first i+1 */
static int concat_all(graph_t *g, const int *part, int n, const char *prefix) {
  char name[LAYER_NAME_MAX];
  int y = part[0];
  for (int i = 1; i < n; i++) {
    snprintf(name, sizeof name, "%.30s.cat%d", prefix, i);
    y = nn_concat(g, y, part[i], name);
  }
  return y;
}

/* "<prefix>.pool": 3x3 average pool, stride 1, pad 1 (count_include_pad), or 3x3 stride-2 max pool */
static int branch_pool(graph_t *g, int x, int avg, const char *prefix) {
  char name[LAYER_NAME_MAX];
  snprintf(name, sizeof name, "%.30s.pool", prefix);
  return avg ? nn_avgpool2d(g, x, 3, 1, 1, name) : nn_maxpool2d(g, x, 3, 2, 0, name);
}

#define NCONV(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* InceptionA: (C,H,W) -> (224 + pool_features, H, W) */
static int inception_a(const zoo_opts_t *o, graph_t *g, int x, int pool_features, const char *p) {
  static const conv_spec_t b1[] = {{"branch1x1", 64, 1, 1, 1, 0, 0}};
  static const conv_spec_t b5[] = {{"branch5x5_1", 48, 1, 1, 1, 0, 0}, {"branch5x5_2", 64, 5, 5, 1, 2, 2}};
  static const conv_spec_t b3[] = {{"branch3x3dbl_1", 64, 1, 1, 1, 0, 0},
                                   {"branch3x3dbl_2", 96, 3, 3, 1, 1, 1},
                                   {"branch3x3dbl_3", 96, 3, 3, 1, 1, 1}};
  const conv_spec_t bp = {"branch_pool", pool_features, 1, 1, 1, 0, 0};
  int part[4] = {conv_chain(o, g, x, p, b1, NCONV(b1)), conv_chain(o, g, x, p, b5, NCONV(b5)),
                 conv_chain(o, g, x, p, b3, NCONV(b3)), basic_conv(o, g, branch_pool(g, x, 1, p), p, &bp)};
  return concat_all(g, part, 4, p);
}

/* InceptionB: (C,H,W) -> (480 + C, (H-3)/2+1, (W-3)/2+1) */
static int inception_b(const zoo_opts_t *o, graph_t *g, int x, const char *p) {
  static const conv_spec_t b3[] = {{"branch3x3", 384, 3, 3, 2, 0, 0}};
  static const conv_spec_t bd[] = {{"branch3x3dbl_1", 64, 1, 1, 1, 0, 0},
                                   {"branch3x3dbl_2", 96, 3, 3, 1, 1, 1},
                                   {"branch3x3dbl_3", 96, 3, 3, 2, 0, 0}};
  int part[3] = {conv_chain(o, g, x, p, b3, NCONV(b3)), conv_chain(o, g, x, p, bd, NCONV(bd)),
                 branch_pool(g, x, 0, p)};
  return concat_all(g, part, 3, p);
}

/* InceptionC with c7 channels in its 7-wide branches: (C,H,W) -> (768, H, W) */
static int inception_c(const zoo_opts_t *o, graph_t *g, int x, int c7, const char *p) {
  static const conv_spec_t b1[] = {{"branch1x1", 192, 1, 1, 1, 0, 0}};
  const conv_spec_t b7[] = {{"branch7x7_1", c7, 1, 1, 1, 0, 0},
                            {"branch7x7_2", c7, 1, 7, 1, 0, 3},
                            {"branch7x7_3", 192, 7, 1, 1, 3, 0}};
  const conv_spec_t bd[] = {{"branch7x7dbl_1", c7, 1, 1, 1, 0, 0}, {"branch7x7dbl_2", c7, 7, 1, 1, 3, 0},
                            {"branch7x7dbl_3", c7, 1, 7, 1, 0, 3}, {"branch7x7dbl_4", c7, 7, 1, 1, 3, 0},
                            {"branch7x7dbl_5", 192, 1, 7, 1, 0, 3}};
  static const conv_spec_t bp = {"branch_pool", 192, 1, 1, 1, 0, 0};
  int part[4] = {conv_chain(o, g, x, p, b1, NCONV(b1)), conv_chain(o, g, x, p, b7, NCONV(b7)),
                 conv_chain(o, g, x, p, bd, NCONV(bd)), basic_conv(o, g, branch_pool(g, x, 1, p), p, &bp)};
  return concat_all(g, part, 4, p);
}

/* InceptionD: (C,H,W) -> (512 + C, (H-3)/2+1, (W-3)/2+1) */
static int inception_d(const zoo_opts_t *o, graph_t *g, int x, const char *p) {
  static const conv_spec_t b3[] = {{"branch3x3_1", 192, 1, 1, 1, 0, 0}, {"branch3x3_2", 320, 3, 3, 2, 0, 0}};
  static const conv_spec_t b7[] = {{"branch7x7x3_1", 192, 1, 1, 1, 0, 0},
                                   {"branch7x7x3_2", 192, 1, 7, 1, 0, 3},
                                   {"branch7x7x3_3", 192, 7, 1, 1, 3, 0},
                                   {"branch7x7x3_4", 192, 3, 3, 2, 0, 0}};
  int part[3] = {conv_chain(o, g, x, p, b3, NCONV(b3)), conv_chain(o, g, x, p, b7, NCONV(b7)),
                 branch_pool(g, x, 0, p)};
  return concat_all(g, part, 3, p);
}

/* InceptionE's split: cat(1x3 (a), 3x1 (b)) of x, both to 384 channels, joined as "<p>.<cat>" */
static int split_1x3_3x1(const zoo_opts_t *o, graph_t *g, int x, const char *a, const char *b, const char *p,
                         const char *cat) {
  const conv_spec_t ca = {a, 384, 1, 3, 1, 0, 1}, cb = {b, 384, 3, 1, 1, 1, 0};
  char name[LAYER_NAME_MAX];
  snprintf(name, sizeof name, "%.20s.%.14s", p, cat);
  return nn_concat(g, basic_conv(o, g, x, p, &ca), basic_conv(o, g, x, p, &cb), name);
}

/* InceptionE: (C,H,W) -> (2048, H, W) */
static int inception_e(const zoo_opts_t *o, graph_t *g, int x, const char *p) {
  static const conv_spec_t b1 = {"branch1x1", 320, 1, 1, 1, 0, 0}, b3 = {"branch3x3_1", 384, 1, 1, 1, 0, 0},
                           bd1 = {"branch3x3dbl_1", 448, 1, 1, 1, 0, 0}, bd2 = {"branch3x3dbl_2", 384, 3, 3, 1, 1, 1},
                           bp = {"branch_pool", 192, 1, 1, 1, 0, 0};
  int t3 = basic_conv(o, g, x, p, &b3), td = conv_chain(o, g, basic_conv(o, g, x, p, &bd1), p, &bd2, 1);
  int part[4] = {basic_conv(o, g, x, p, &b1), split_1x3_3x1(o, g, t3, "branch3x3_2a", "branch3x3_2b", p, "cat3x3"),
                 split_1x3_3x1(o, g, td, "branch3x3dbl_3a", "branch3x3dbl_3b", p, "cat3x3dbl"),
                 basic_conv(o, g, branch_pool(g, x, 1, p), p, &bp)};
  return concat_all(g, part, 4, p);
}

/* imagenet: torchvision's stem (3,299,299) -> (192,35,35); small: its convolutions at stride 1
 * with "same" padding, no max pools: (1,28,28) -> (192,28,28) */
static int inception_stem(const zoo_opts_t *o, graph_t *g) {
  const int s = zoo_small_stem(o) ? 0 : 1; /* 1: the imagenet form */
  const conv_spec_t c1a = {"Conv2d_1a_3x3", 32, 3, 3, s ? 2 : 1, !s, !s},
                    c2a = {"Conv2d_2a_3x3", 32, 3, 3, 1, !s, !s}, c2b = {"Conv2d_2b_3x3", 64, 3, 3, 1, 1, 1},
                    c3b = {"Conv2d_3b_1x1", 80, 1, 1, 1, 0, 0}, c4a = {"Conv2d_4a_3x3", 192, 3, 3, 1, !s, !s};
  int x = basic_conv(o, g, basic_conv(o, g, basic_conv(o, g, 0, "", &c1a), "", &c2a), "", &c2b);
  if (s) x = nn_maxpool2d(g, x, 3, 2, 0, "maxpool1");
  x = basic_conv(o, g, basic_conv(o, g, x, "", &c3b), "", &c4a);
  return s ? nn_maxpool2d(g, x, 3, 2, 0, "maxpool2") : x;
}

int zoo_build_inception_v3(const zoo_opts_t *o, graph_t *g, int classes) {
  int x = inception_stem(o, g);
  x = inception_a(o, g, x, 32, "Mixed_5b");
  x = inception_a(o, g, x, 64, "Mixed_5c");
  x = inception_a(o, g, x, 64, "Mixed_5d");
  x = inception_b(o, g, x, "Mixed_6a");
  x = inception_c(o, g, x, 128, "Mixed_6b");
  x = inception_c(o, g, x, 160, "Mixed_6c");
  x = inception_c(o, g, x, 160, "Mixed_6d");
  x = inception_c(o, g, x, 192, "Mixed_6e");
  x = inception_d(o, g, x, "Mixed_7a");
  x = inception_e(o, g, x, "Mixed_7b");
  x = inception_e(o, g, x, "Mixed_7c");
  x = nn_avgpool(g, x, "avgpool"); // (2048, 8, 8) -> (2048): torchvision's adaptive pool to 1x1, flattened
  return zoo_output_layer(o, g, x, classes, "fc");
}
