/* The networks of DeepPool's evaluation in the zoo (nn/zoo_nets.c, nn/zoo_inception.c, torchvision's
 * definitions):
 *  1. at 224 x 224 x 3 (Inception-v3: 299 x 299 x 3) and 1000 classes their parameter counts are
 *     the references' (torchvision's vgg16 138,357,544; resnet18 11,689,512; resnet50 25,557,032;
 *     wide_resnet50_2 68,883,240; wide_resnet101_2 126,886,696; vgg16_bn 138,365,992 less the 4,224
 *     convolution biases that the zoo leaves out before a batch norm; inception_v3 27,161,264 less
 *     its auxiliary classifier's 3,326,696 = 23,834,568), counted from the graph's slab layout (no
 *     slab is allocated), and their batch norms' running statistics are two buffers per channel;
 *     Inception-v3's blocks end at torchvision's sizes (288 x 35 x 35, 768 x 17 x 17, 2048 x 8 x 8)
 *     and its batch norms have eps 1e-3;
 *  2. the small forms (stem = small, a width multiplier) build at 28 x 28 x 1 and run a forward,
 *     loss and backward of a tiny batch on ref and cpu: a finite loss that both backends agree on,
 *     and a gradient in every parameter tensor (the backward reaches the stem);
 *  3. the 224-pixel form on 28 x 28 inputs is refused with a hint to the small stem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "model_step.h"
#include "nn/model.h"
#include "nn/zoo.h"
#include "tap.h"

enum { B = 3, CLASSES = 10 };

static zoo_opts_t opts(const char *model, const char *norm, const char *stem, double width_mult) {
  zoo_opts_t o;
  memset(&o, 0, sizeof o);
  snprintf(o.model, sizeof o.model, "%s", model);
  snprintf(o.norm, sizeof o.norm, "%s", norm);
  snprintf(o.batchnorm, sizeof o.batchnorm, "global");
  snprintf(o.nets.stem, sizeof o.nets.stem, "%s", stem);
  o.nets.width_mult = width_mult;
  o.nets.wrn_factor = 2;
  return o;
}

/* the channels of g's batch norms */
static size_t bn_channels(const graph_t *g) {
  size_t c = 0;
  for (int i = 0; i < g->n; i++)
    if (g->l[i].kind == LAYER_BATCHNORM) c += (size_t)g->l[i].out.d[0];
  return c;
}

static const struct {
  const char *model, *norm;
  size_t params; /* at side x side x 3, 1000 classes */
  int side;
} refs[] = {
    {"vgg16", "none", 138357544, 224},   {"vgg16", "batchnorm", 138365992 - 4224, 224},
    {"resnet18", "none", 11689512, 224}, {"resnet50", "none", 25557032, 224},
    {"wrn50", "none", 68883240, 224},    {"wrn101", "none", 126886696, 224},
    {"inception-v3", "none", 27161264 - 3326696, 299},
};
enum { NREFS = sizeof refs / sizeof refs[0] };

static void reference_counts(void) {
  for (int r = 0; r < NREFS; r++) {
    graph_t g;
    char err[256];
    zoo_opts_t o = opts(refs[r].model, refs[r].norm, "imagenet", 1);
    const int side = refs[r].side;
    if (zoo_build(o, shape3(3, side, side), 1000, &g, err, sizeof err) != 0) {
      tap_ok(0, "%s (%s) at %d x %d: %s", refs[r].model, refs[r].norm, side, side, err);
      continue;
    }
    const shape_t out = g.l[graph_output(&g)].out;
    tap_ok(g.params.total == refs[r].params && out.ndim == 1 && out.d[0] == 1000,
           "%s (norm %s) at %d x %d x 3, 1000 classes: %zu parameters (reference %zu), %d outputs", refs[r].model,
           refs[r].norm, side, side, g.params.total, refs[r].params, out.d[0]);
    tap_ok(g.bufs.total == 2 * bn_channels(&g) && (strcmp(refs[r].norm, "none") != 0 || strcmp(o.model, "vgg16") != 0 ||
                                                   g.bufs.total == 0),
           "%s (norm %s): %zu running statistics, two per batch-norm channel", refs[r].model, refs[r].norm,
           g.bufs.total);
    graph_free(&g);
  }
}

/* the output shape of g's node `name` is (c, h, h) */
static int node_is(const graph_t *g, const char *name, int c, int h) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->l[i].name, name) == 0)
      return g->l[i].out.ndim == 3 && g->l[i].out.d[0] == c && g->l[i].out.d[1] == h && g->l[i].out.d[2] == h;
  return 0;
}

/* Inception-v3 at 299 x 299: every block's output at torchvision's size, each Inception block
 * joined by concatenations (3 for A, C and E's four branches plus E's two inner splits, 2 for B
 * and D), and every batch norm with eps 1e-3 */
static void inception_shapes(void) {
  graph_t g;
  char err[256];
  if (zoo_build(opts("inception-v3", "none", "imagenet", 1), shape3(3, 299, 299), 1000, &g, err, sizeof err) != 0) {
    tap_ok(0, "inception-v3 at 299 x 299: %s", err);
    return;
  }
  static const struct {
    const char *node;
    int c, h;
  } at[] = {{"maxpool2", 192, 35},        {"Mixed_5b.cat3", 256, 35}, {"Mixed_5d.cat3", 288, 35},
            {"Mixed_6a.cat2", 768, 17},   {"Mixed_6e.cat3", 768, 17}, {"Mixed_7a.cat2", 1280, 8},
            {"Mixed_7b.cat3", 2048, 8},   {"Mixed_7c.cat3", 2048, 8}};
  int bad = 0, concats = 0, bns = 0, bad_eps = 0;
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) bad += !node_is(&g, at[i].node, at[i].c, at[i].h);
  for (int i = 0; i < g.n; i++) {
    concats += g.l[i].kind == LAYER_CONCAT;
    bns += g.l[i].kind == LAYER_BATCHNORM;
    bad_eps += g.l[i].kind == LAYER_BATCHNORM && g.l[i].eps != 1e-3f;
  }
  tap_ok(bad == 0 && concats == 3 * 3 + 2 + 4 * 3 + 2 + 2 * 5 && bns == 94 && bad_eps == 0,
         "inception-v3 at 299 x 299: blocks at torchvision's sizes (%d wrong), %d concatenations (35), %d batch "
         "norms (94 convolutions), %d without eps 1e-3",
         bad, concats, bns, bad_eps);
  graph_free(&g);
  /* at 224 x 224 (DeepPool's input) the same parameters, the blocks at 25, 12 and 5 pixels */
  if (zoo_build(opts("inception-v3", "none", "imagenet", 1), shape3(3, 224, 224), 1000, &g, err, sizeof err) != 0) {
    tap_ok(0, "inception-v3 at 224 x 224: %s", err);
    return;
  }
  tap_ok(g.params.total == 27161264 - 3326696 && node_is(&g, "Mixed_5d.cat3", 288, 25) &&
             node_is(&g, "Mixed_6e.cat3", 768, 12) && node_is(&g, "Mixed_7c.cat3", 2048, 5),
         "inception-v3 at 224 x 224: %zu parameters, blocks at 25, 12, 5 pixels", g.params.total);
  graph_free(&g);
}

/* forward, loss and backward of B samples on backend `be`: the loss; the gradients to grads */
static double step(const graph_t *g, const backend_t *be, float *grads) {
  model_t m;
  model_init(&m, g, be, B);
  model_init_params(&m, 3);
  double loss = test_model_step(&m, B, CLASSES, 7);
  be->download(grads, m.grads, g->params.total);
  model_free(&m);
  return loss / B;
}

/* parameter tensors of g whose gradient is all zero */
static int zero_grads(const graph_t *g, const float *grads) {
  int n = 0;
  for (int t = 0; t < g->params.n; t++) {
    double s = 0;
    for (size_t i = 0; i < g->params.t[t].n; i++) s += fabs(grads[g->params.t[t].off + i]);
    n += s == 0;
  }
  return n;
}

static void small_form(const char *model, const char *norm, double width_mult) {
  graph_t g;
  char err[256];
  if (zoo_build(opts(model, norm, "small", width_mult), shape3(1, 28, 28), CLASSES, &g, err, sizeof err) != 0) {
    tap_ok(0, "%s small at 28 x 28: %s", model, err);
    return;
  }
  float *gr = xcalloc(g.params.total, sizeof *gr), *gc = xcalloc(g.params.total, sizeof *gc);
  double lr = step(&g, backend_find("ref"), gr), lc = step(&g, backend_find("cpu"), gc);
  int zr = zero_grads(&g, gr);
  tap_ok(isfinite(lr) && fabs(lr - lc) <= 1e-4 * fabs(lr) && zr == 0,
         "%s (norm %s) small, width x%g, at 28 x 28 x 1: %d nodes, %zu parameters; loss ref %.6f, cpu %.6f; %d of %d "
         "parameter tensors without gradient",
         model, norm, width_mult, g.n, g.params.total, lr, lc, zr, g.params.n);
  free(gr), free(gc);
  graph_free(&g);
}

int main(void) {
  reference_counts();
  small_form("vgg16", "none", 1.0 / 16);
  small_form("vgg16", "batchnorm", 1.0 / 16);
  small_form("resnet18", "none", 1.0 / 16);
  small_form("resnet50", "none", 1.0 / 16);
  small_form("wrn50", "none", 1.0 / 16);
  inception_shapes();
  small_form("inception-v3", "none", 1.0 / 16);

  graph_t g;
  char err[256];
  int rc = zoo_build(opts("vgg16", "none", "imagenet", 1.0 / 16), shape3(1, 28, 28), CLASSES, &g, err, sizeof err);
  tap_ok(rc == -1 && strstr(err, "stem = small") != NULL, "vgg16's 224-pixel form on 28 x 28 is refused: %s", err);
  rc = zoo_build(opts("inception-v3", "none", "imagenet", 1.0 / 16), shape3(1, 28, 28), CLASSES, &g, err, sizeof err);
  tap_ok(rc == -1 && strstr(err, "stem = small") != NULL, "inception-v3's 299-pixel form on 28 x 28 is refused: %s", err);
  return tap_done();
}
