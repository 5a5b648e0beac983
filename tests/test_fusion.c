/* A conv2d or a residual add fused with the ReLU after it (model_init_fused), and a gradient that
 * its only consumer (a conv2d, pooling, ReLU, GELU, add or flatten) overwrites rather than adds
 * into a zeroed buffer, compute the same step bit for bit as the plain model: vgg-mini,
 * resnet-mini (both also with batch norm, fused with its ReLU), mlp, gpt, and the small forms of
 * vgg16 (with and without batch norm) and resnet50 (bottleneck blocks) on both backends: logits,
 * loss and every parameter gradient; a ReLU after any other node (vgg-mini's after its linear
 * layer), or after a node that has other consumers too, is never fused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "nn/model.h"
#include "model_step.h"
#include "nn/zoo.h"
#include "tap.h"

enum { B = 6, CLASSES = 10 };

static int always(void *arg, int node, int next) {
  (void)arg, (void)node, (void)next;
  return 1;
}

/* The ReLUs fusion may take: those whose input is a conv2d, an add or a batch norm that feeds nothing
 * else. */
static int fusable_relus(const graph_t *g, int *relus) {
  int n = 0;
  *relus = 0;
  for (int j = 0; j < g->n; j++) {
    if (g->l[j].kind != LAYER_RELU) continue;
    ++*relus;
    const int p = g->l[j].in[0], kind = g->l[p].kind;
    int readers = 0;
    for (int i = 0; i < g->n; i++)
      for (int k = 0; k < g->l[i].nin; k++) readers += g->l[i].in[k] == p;
    n += (kind == LAYER_CONV2D || kind == LAYER_ADD || kind == LAYER_BATCHNORM) && readers == 1;
  }
  return n;
}

/* The gradients a consumer may overwrite: those of nodes that need one and feed only a conv2d, a
 * pooling layer, a ReLU, a GELU, an add, a flatten, a batch norm or a dropout, but not a conv2d, an
 * add or a batch norm that feeds only its ReLU (the pair fuses: the ReLU's gradient is theirs). Written from the graph, not from
 * layer_ops_t.writes_dx, so that a flag set or lost by mistake shows. */
static int overwriter_fed(const graph_t *g) {
  int n = 0;
  for (int i = 1; i < g->n; i++) {
    int readers = 0, writes = 0, relu = 0;
    for (int j = 0; j < g->n; j++)
      for (int k = 0; k < g->l[j].nin; k++)
        if (g->l[j].in[k] == i) {
          const layer_kind_t c = g->l[j].kind;
          readers++;
          relu = c == LAYER_RELU;
          writes = c == LAYER_CONV2D || c == LAYER_MAXPOOL2D || c == LAYER_AVGPOOL || c == LAYER_RELU ||
                   c == LAYER_GELU || c == LAYER_ADD || c == LAYER_FLATTEN || c == LAYER_BATCHNORM || c == LAYER_DROPOUT;
        }
    const layer_kind_t k = g->l[i].kind;
    const int fuses = relu && (k == LAYER_CONV2D || k == LAYER_ADD || k == LAYER_BATCHNORM);
    n += g->l[i].needs_grad && readers == 1 && writes && !fuses;
  }
  return n;
}

/* One forward, loss and backward on a fixed batch; the logits, loss and gradients to host memory. */
static double run(const graph_t *g, const backend_t *be, int fuse, int *fused, int *written, float *logits,
                  float *grads) {
  model_t m;
  *fused = model_init_fused(&m, g, be, B, fuse ? always : NULL, NULL);
  *written = 0;
  for (int i = 0; i < g->n; i++) *written += m.written[i];
  model_init_params(&m, 11);
  double loss = test_model_step(&m, B, CLASSES, 5);
  int out = graph_output(g);
  be->download(logits, m.act[out], (size_t)B * shape_size(g->l[out].out));
  be->download(grads, m.grads, g->params.total);
  model_free(&m);
  return loss;
}

static void compare(const char *model, const char *backend_name, int batchnorm) {
  zoo_opts_t o;
  memset(&o, 0, sizeof o);
  snprintf(o.model, sizeof o.model, "%s", model);
  snprintf(o.norm, sizeof o.norm, "%s", batchnorm ? "batchnorm" : "none");
  o.vgg.nstages = 2, o.vgg.channels[0] = 4, o.vgg.channels[1] = 8, o.vgg.fc = 16;
  o.resnet.width = 4, o.resnet.blocks = 1, o.resnet.stages = 2;
  o.mlp.nhidden = 2, o.mlp.hidden[0] = 16, o.mlp.hidden[1] = 8;
  o.gpt.layers = 2, o.gpt.width = 16, o.gpt.heads = 2, o.gpt.context = 8;
  snprintf(o.nets.stem, sizeof o.nets.stem, "small");
  o.nets.width_mult = 1.0 / 16, o.nets.wrn_factor = 2;
  graph_t g;
  char err[256];
  const shape_t in = zoo_takes_sequences(model) ? shape1(o.gpt.context) : shape3(1, 28, 28);
  if (zoo_build(o, in, CLASSES, &g, err, sizeof err) != 0) {
    tap_ok(0, "%s: %s", model, err);
    return;
  }
  const backend_t *be = backend_find(backend_name);
  size_t nl = (size_t)B * shape_size(g.l[graph_output(&g)].out), ng = g.params.total; /* logits (B, out) */
  float *l1 = xcalloc(nl, sizeof *l1), *l2 = xcalloc(nl, sizeof *l2);
  float *g1 = xcalloc(ng, sizeof *g1), *g2 = xcalloc(ng, sizeof *g2);
  int none, pairs, relus, fusable = fusable_relus(&g, &relus), unwritten, written;
  double a = run(&g, be, 0, &none, &unwritten, l1, g1), b = run(&g, be, 1, &pairs, &written, l2, g2);
  const int overwritable = overwriter_fed(&g);
  int convs = 0; /* the CNNs fuse some pair; the mlp and the gpt have no ReLU after a conv2d, add or batch norm */
  for (int i = 0; i < g.n; i++) convs += g.l[i].kind == LAYER_CONV2D;
  tap_ok(none == 0 && unwritten == 0 && (pairs > 0) == (convs > 0) && pairs == fusable && written > 0 &&
             written == overwritable,
         "%s%s on %s: %d of %d ReLUs fused, the %d after a conv2d, add or batch norm; %d gradients overwritten, the %d "
         "that feed only an overwriting layer (none unasked)",
         model, batchnorm ? " (batch norm)" : "", backend_name, pairs, relus, fusable, written, overwritable);
  tap_ok(a == b && memcmp(l1, l2, nl * sizeof *l1) == 0 && memcmp(g1, g2, ng * sizeof *g1) == 0,
         "%s%s on %s: %d node+ReLU pairs fused, %d gradients overwritten: loss, logits and all %zu gradients bitwise "
         "those of the plain model",
         model, batchnorm ? " (batch norm)" : "", backend_name, pairs, written, ng);
  free(l1), free(l2), free(g1), free(g2);
  graph_free(&g);
}

int main(void) {
  static const struct {
    const char *model;
    int batchnorm;
  } cases[] = {
      {"vgg-mini", 0}, {"vgg-mini", 1}, {"resnet-mini", 0}, {"resnet-mini", 1}, {"mlp", 0}, {"gpt", 0},
      {"vgg16", 0},    {"vgg16", 1},    {"resnet50", 1}, /* small forms; resnet50 always has batch norm */
  };
  const char *backends[] = {"cpu", "ref"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int b = 0; b < 2; b++) compare(cases[c].model, backends[b], cases[c].batchnorm);
  return tap_done();
}
