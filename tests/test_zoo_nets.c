/* The networks of DeepPool's evaluation in the zoo (nn/zoo_nets.c, torchvision's definitions):
 *  1. at 224 x 224 x 3 and 1000 classes their parameter counts are the references' (torchvision's
 *     vgg16 138,357,544; resnet18 11,689,512; resnet50 25,557,032; wide_resnet50_2 68,883,240;
 *     wide_resnet101_2 126,886,696; vgg16_bn 138,365,992 less the 4,224 convolution biases that the
 *     zoo leaves out before a batch norm), counted from the graph's slab layout (no slab is
 *     allocated), and their batch norms' running statistics are two buffers per channel;
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
  size_t params; /* at 224 x 224 x 3, 1000 classes */
} refs[] = {
    {"vgg16", "none", 138357544},      {"vgg16", "batchnorm", 138365992 - 4224},
    {"resnet18", "none", 11689512},    {"resnet50", "none", 25557032},
    {"wrn50", "none", 68883240},       {"wrn101", "none", 126886696},
};
enum { NREFS = sizeof refs / sizeof refs[0] };

static void reference_counts(void) {
  for (int r = 0; r < NREFS; r++) {
    graph_t g;
    char err[256];
    zoo_opts_t o = opts(refs[r].model, refs[r].norm, "imagenet", 1);
    if (zoo_build(o, shape3(3, 224, 224), 1000, &g, err, sizeof err) != 0) {
      tap_ok(0, "%s (%s) at 224 x 224: %s", refs[r].model, refs[r].norm, err);
      continue;
    }
    const shape_t out = g.l[graph_output(&g)].out;
    tap_ok(g.params.total == refs[r].params && out.ndim == 1 && out.d[0] == 1000,
           "%s (norm %s) at 224 x 224 x 3, 1000 classes: %zu parameters (reference %zu), %d outputs", refs[r].model,
           refs[r].norm, g.params.total, refs[r].params, out.d[0]);
    tap_ok(g.bufs.total == 2 * bn_channels(&g) && (strcmp(refs[r].norm, "none") != 0 || strcmp(o.model, "vgg16") != 0 ||
                                                   g.bufs.total == 0),
           "%s (norm %s): %zu running statistics, two per batch-norm channel", refs[r].model, refs[r].norm,
           g.bufs.total);
    graph_free(&g);
  }
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

  graph_t g;
  char err[256];
  int rc = zoo_build(opts("vgg16", "none", "imagenet", 1.0 / 16), shape3(1, 28, 28), CLASSES, &g, err, sizeof err);
  tap_ok(rc == -1 && strstr(err, "stem = small") != NULL, "vgg16's 224-pixel form on 28 x 28 is refused: %s", err);
  return tap_done();
}
