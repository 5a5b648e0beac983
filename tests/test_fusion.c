/* A conv2d, a residual add or a batch norm fused with the ReLU after it (model_init_fused), and a
 * gradient that its first consumer (a linear, conv2d, pooling, ReLU, GELU, add, concat, flatten, layer
 * norm, attention, tied linear, batch norm or dropout) overwrites rather than adds into a zeroed
 * buffer, compute the same step bit for bit as the plain model: vgg-mini, resnet-mini (both also
 * with batch norm), mlp, gpt, and the small forms of vgg16 (with and without batch norm), resnet50
 * (bottleneck blocks) and inception-v3 (concats, average pools) on both backends: logits, loss and every parameter gradient; a ReLU after any
 * other node (vgg-mini's after its linear layer), or after a node that has other consumers too, is
 * never fused. The same for the epilogues (a linear and
 * its GELU, an add and the layer norm it feeds) and the logits' gradient written in place; and with the
 * activation gradients in shared buffers besides (model_init_on's order), fewer floats; a model that
 * only runs forward (model_init_forward) the same logits without gradients, its activations in shared
 * buffers; the outputs only the forward reads in one buffer (act_pass: the gpt's projections). In bf16 on both
 * backends, the activations that only products, GELU and attention's backward read held in bfloat16 (act16: the
 * gpt's 13, none elsewhere) give the step of the model that holds none, bitwise, in fewer floats. And
 * after 10 training steps with clipping, fused and pooled (the clipping factor folded into the update) and
 * plain give every parameter tensor within 1e-6 (issue 32). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "child.h"
#include "core/error.h"
#include "core/rng.h"
#include "nn/model.h"
#include "nn/zoo.h"
#include "optim/optim.h"
#include "rel_diff.h"
#include "tap.h"

enum { B = 6, CLASSES = 10, STEPS = 10 };
#define STEPS_TOL 1e-6 /* fused against plain after STEPS training steps, per tensor */

/* The ReLUs fusion may take: those whose input is a conv2d, an add or a batch norm that feeds
 * nothing else. */
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

/* The gradients a consumer may overwrite: those of nodes that need one whose first consumer to run
 * backward (the highest-numbered) reads them once and is a linear, a conv2d, a pooling layer, a ReLU,
 * a GELU, an add, a flatten, a layer norm, an attention, a tied linear, a batch norm, a dropout or a
 * concat, but not a conv2d, an add or a batch norm that feeds only its ReLU (the pair fuses: the
 * ReLU's gradient is theirs). Written from the graph, not from layer_ops_t.writes_dx, so that a flag
 * set or lost by mistake shows. */
static int overwriter_fed(const graph_t *g) {
  int n = 0;
  for (int i = 1; i < g->n; i++) {
    int readers = 0, first = 0, slots = 0;
    for (int j = g->n - 1; j > i; j--)
      for (int k = 0; k < g->l[j].nin; k++)
        if (g->l[j].in[k] == i) {
          readers++;
          if (!first) first = j;
          slots += j == first;
        }
    if (!first) continue;
    const layer_kind_t c = g->l[first].kind, k = g->l[i].kind;
    const int writes = c == LAYER_CONV2D || c == LAYER_MAXPOOL2D || c == LAYER_AVGPOOL || c == LAYER_RELU ||
                       c == LAYER_GELU || c == LAYER_ADD || c == LAYER_FLATTEN || c == LAYER_LINEAR ||
                       c == LAYER_LAYERNORM || c == LAYER_ATTENTION || c == LAYER_TIED_LINEAR ||
                       c == LAYER_BATCHNORM || c == LAYER_DROPOUT || c == LAYER_AVGPOOL2D || c == LAYER_CONCAT;
    const int fuses = readers == 1 && c == LAYER_RELU && (k == LAYER_CONV2D || k == LAYER_ADD || k == LAYER_BATCHNORM);
    n += g->l[i].needs_grad && slots == 1 && writes && !fuses;
  }
  return n;
}

/* The epilogues the graph offers (written from the graph, as above): linears whose only consumer is a
 * GELU, and adds that feed a layer norm and no ReLU. */
static int epilogues_offered(const graph_t *g) {
  int n = 0;
  for (int i = 1; i < g->n; i++) {
    int readers = 0, gelu = 0, norm = 0, relu = 0;
    for (int j = 0; j < g->n; j++)
      for (int k = 0; k < g->l[j].nin; k++)
        if (g->l[j].in[k] == i) {
          readers++;
          gelu = g->l[j].kind == LAYER_GELU;
          norm |= g->l[j].kind == LAYER_LAYERNORM;
          relu |= g->l[j].kind == LAYER_RELU;
        }
    n += (g->l[i].kind == LAYER_LINEAR && readers == 1 && gelu) || (g->l[i].kind == LAYER_ADD && norm && !relu);
  }
  return n;
}

/* The output's gradient may be written over the logits: a linear or tied linear output. */
static int in_place_offered(const graph_t *g) {
  const int k = g->l[graph_output(g)].kind;
  return k == LAYER_LINEAR || k == LAYER_TIED_LINEAR;
}

/* What one run of the model fused. */
typedef struct fusion_counts {
  int pairs, written, epilogues, in_place, pooled, buffers, held16, passing, add_shared;
  size_t act_floats; /* the model's activation memory (model_t.act_floats) */
} fusion_counts_t;

/* The modes of a run: plain, fused, and fused with the gradients in shared buffers (model_init_on's
 * order: model_backward's, model_reverse_order). */
enum { PLAIN = 0, FUSED, POOLED };

static void init_model(model_t *m, const graph_t *g, const backend_t *be, int mode) {
  model_init_on(m, g, be, B, mode != PLAIN ? model_allow_all : NULL, NULL, NULL, NULL,
                mode == POOLED ? model_reverse_order : NULL);
}

/* The batch of a step: token ids below the vocabulary with the next ones as targets, or normal
 * images, drawn from the step's stream. */
static void set_batch(model_t *m, const graph_t *g, int step) {
  size_t xs = shape_size(g->l[0].out), ys = (size_t)B * (size_t)g->targets_per_sample;
  float *x = xcalloc((size_t)B * xs, sizeof *x), *y = xcalloc(ys, sizeof *y);
  rng_t r;
  rng_seed_stream(&r, 5, (uint64_t)step, 0);
  if (g->targets_per_sample > 1)
    for (size_t i = 0; i < (size_t)B * xs; i++) x[i] = (float)rng_below(&r, CLASSES);
  else
    rng_fill_normal(&r, x, (size_t)B * xs, 0.0f, 1.0f);
  for (size_t i = 0; i < ys; i++) y[i] = (float)((i + (size_t)step) % CLASSES);
  model_set_batch(m, x, y, B);
  free(x);
  free(y);
}

/* One forward, loss and backward on a fixed batch; the logits (before the loss, which may write the
 * gradient over them), loss and gradients to host memory. */
static double run(const graph_t *g, const backend_t *be, int mode, fusion_counts_t *n, float *logits, float *grads) {
  model_t m;
  memset(n, 0, sizeof *n);
  init_model(&m, g, be, mode);
  for (int i = 0; i < g->n; i++) n->pairs += m.fused[i] > 0;
  n->in_place = m.grad_in_place;
  for (int i = 0; i < g->n; i++)
    n->written += m.writer[i] != 0, n->epilogues += m.epi[i] > 0,
    n->pooled += m.pooled && (m.pooled[i] & MODEL_POOLED_GRAD);
  n->buffers = m.npool;
  n->add_shared = m.nadd_shared;
  n->held16 = m.nact16;
  n->passing = m.npass;
  n->act_floats = m.act_floats;
  model_init_params(&m, 11);
  set_batch(&m, g, 0);
  model_zero_grads(&m);
  model_forward(&m, B);
  int out = graph_output(g);
  be->download(logits, m.act[out], (size_t)B * shape_size(g->l[out].out));
  double loss = model_loss(&m, 0, B, 1.0f / B);
  model_backward(&m, B);
  be->download(grads, m.grads, g->params.total);
  model_free(&m);
  return loss;
}

/* STEPS AdamW steps (a new batch each) with the gradient norm clipped to half the first step's, so
 * every step clips: fused, the model's fusion pass and the clipping factor read by the update
 * (optim_step_part's gs); plain, neither (the gradients scaled by a pass of their own, then the
 * update), with the gradients pooled. The parameters to host memory. */
static void train_steps(const graph_t *g, const backend_t *be, int fuse, float *params) {
  const size_t n = g->params.total;
  const float lr = 1e-2f;
  model_t m;
  init_model(&m, g, be, fuse ? POOLED : PLAIN);
  model_init_params(&m, 11);
  optim_opts_t oo = {.name = "adamw", .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
  optim_t o;
  optim_init(&o, oo, be, n);
  double max_norm = 0;
  float *gs = be->alloc(1); /* the clipping factor, in backend memory as the optimizer reads it */
  for (int step = 0; step < STEPS; step++) {
    set_batch(&m, g, step);
    model_zero_grads(&m);
    model_forward(&m, B);
    model_loss(&m, 0, B, 1.0f / B);
    model_backward(&m, B);
    const double norm = grad_global_norm(be, m.grads, n);
    if (step == 0) max_norm = 0.5 * norm;
    if (fuse) {
      const float f = clip_scale(norm, max_norm);
      be->upload(gs, &f, 1);
      optim_step_part(&o, m.params, m.grads, lr, gs, 0, n);
    } else {
      clip_to_norm(be, m.grads, n, norm, max_norm);
      optim_step(&o, m.params, m.grads, lr);
    }
  }
  be->download(params, m.params, n);
  be->free(gs);
  optim_free(&o);
  model_free(&m);
}

/* Every parameter tensor after STEPS steps, fused against plain. */
static void compare_steps(const char *model, const graph_t *g, const backend_t *be) {
  const size_t n = g->params.total;
  float *plain = xcalloc(n, sizeof *plain), *fused = xcalloc(n, sizeof *fused), *init = xcalloc(n, sizeof *init);
  train_steps(g, be, 0, plain);
  train_steps(g, be, 1, fused);
  graph_init_params(g, 11, init);
  double worst = 0, moved = 0;
  for (int t = 0; t < g->params.n; t++) {
    const size_t off = g->params.t[t].off, len = g->params.t[t].n;
    const double e = rel_diff(fused + off, plain + off, len);
    if (!(e <= worst)) worst = e;
  }
  for (size_t i = 0; i < n; i++) moved = fmax(moved, fabs((double)plain[i] - init[i]));
  tap_ok(worst <= STEPS_TOL && moved > 1e-3,
         "%s on %s: every parameter tensor after %d clipped AdamW steps, fused = plain within %.0e (worst %.1e%s; the "
         "steps moved a parameter by up to %.1e)",
         model, be->name, STEPS, STEPS_TOL, worst, memcmp(fused, plain, n * sizeof *fused) == 0 ? ", bitwise" : "",
         moved);
  free(plain), free(fused), free(init);
}

/* A model that only runs forward (model_init_forward: generation, evaluation) gives the plain
 * model's logits bitwise, without a gradient slab or any activation gradient, with its activations
 * in fewer shared buffers than nodes that take them, filled with NaN before the pass (a node that
 * read a buffer it did not write, or another's stale values, would show), and fewer floats than the
 * fused training model's activations alone. */
static void forward_only(const char *name, const graph_t *g, const backend_t *be, const float *logits,
                         size_t plain_floats) {
  model_t m;
  model_init_forward(&m, g, be, B, NULL);
  model_init_params(&m, 11);
  set_batch(&m, g, 0);
  int shared = 0, in_aux = 0;
  for (int i = 0; i < g->n; i++)
    shared += (m.pooled[i] & MODEL_POOLED_ACT) != 0, in_aux += (m.pooled[i] & MODEL_POOLED_AUX) != 0;
  for (int p = 0; p < m.npool; p++) {
    size_t floats = 0; /* the buffer's size: its largest tenant's */
    for (int i = 0; i < g->n; i++)
      if ((m.pooled[i] & MODEL_POOLED_ACT) && m.act[i] == m.pool[p] && (size_t)B * shape_size(g->l[i].out) > floats)
        floats = (size_t)B * shape_size(g->l[i].out);
    be->fill(m.pool[p], floats, NAN);
  }
  model_forward(&m, B);
  const int out = graph_output(g);
  const size_t nl = (size_t)B * shape_size(g->l[out].out);
  float *got = xcalloc(nl, sizeof *got);
  be->download(got, m.act[out], nl);
  int grads = m.grads != NULL;
  for (int i = 0; i < g->n; i++) grads |= m.dact[i] != NULL;
  tap_ok(!grads && m.npool > 0 && m.npool < shared && m.act_floats < plain_floats &&
             memcmp(got, logits, nl * sizeof *got) == 0,
         "%s on %s: forward only (model_init_forward), no gradients, %d activations in %d shared buffers (NaN "
         "before the pass), %d nodes' saved state in one, %zu activation floats (the fused training model: %zu): "
         "the plain model's logits bitwise",
         name, be->name, shared, m.npool, in_aux, m.act_floats, plain_floats);
  free(got);
  model_free(&m);
}

/* Open the cpu backend on this thread in `precision`. */
static void open_cpu(backend_precision_t precision) {
  backend_options_t o = backend_default_options();
  o.precision = precision;
  int input_error = 0;
  const char *why = backend_cpu.open(&o, &input_error);
  if (why) surge_runtime_error("the cpu backend refused precision %d: %s", (int)precision, why);
}

/* In bf16 on cpu a forward-only model keeps its parameters' bfloat16 copy (model_weights16), which its
 * linear layers and tied projection give their products: one sample's logits are those of the model
 * without the copy, bitwise, and a copy of other weights (the parameters + 1) shows in them where the
 * products read it (one row: a CNN's or mlp's classifier; the gpt's context of rows where the CPU has
 * bfloat16 pairs). In fp32 there is no copy. */
static void weights16(const char *name, const graph_t *g, int sequences) {
  if (!CPU_KERNELS_BUILT || cpu_simd_best() == BACKEND_SIMD_NONE) {
    tap_skip("%s: the cpu backend's bf16 products (its own kernels are not built or this CPU lacks AVX2 + FMA)", name);
    return;
  }
  open_cpu(BACKEND_BF16);
  model_t m[2];
  const int out = graph_output(g);
  const size_t nl = shape_size(g->l[out].out), np = g->params.total; /* one sample's logits */
  float *got[3];
  int made[2];
  for (int k = 0; k < 2; k++) {
    model_init_forward(&m[k], g, &backend_cpu, B, NULL);
    model_init_params(&m[k], 11);
    set_batch(&m[k], g, 0);
    made[k] = k ? model_weights16(&m[k]) : 0;
    model_forward(&m[k], 1);
    got[k] = xcalloc(nl, sizeof *got[k]);
    backend_cpu.download(got[k], m[k].act[out], nl);
  }
  /* the other copy: of every parameter, then (a tied projection's) of its table alone */
  float *other = xcalloc(np, sizeof *other);
  got[2] = xcalloc(nl, sizeof *got[2]);
  int tied = -1, shows = 1;
  for (int i = 0; i < g->n; i++)
    if (g->l[i].kind == LAYER_TIED_LINEAR) tied = g->l[i].tied_param;
  for (int pass = 0; pass < (tied >= 0 ? 2 : 1); pass++) {
    const size_t lo = pass ? g->params.t[tied].off : 0, n = pass ? g->params.t[tied].n : np;
    memcpy(other, m[1].params, np * sizeof *other);
    for (size_t i = lo; i < lo + n; i++) other[i] += 1.0f;
    backend_cpu.to_bf16(np, other, m[1].params16);
    model_forward(&m[1], 1);
    backend_cpu.download(got[2], m[1].act[out], nl);
    shows &= memcmp(got[0], got[2], nl * sizeof(float)) != 0;
  }
  const int reads = !sequences || cpu_gemm_bf16_pairs();
  tap_ok(made[1] && m[1].params16 && memcmp(got[0], got[1], nl * sizeof(float)) == 0 && shows == reads,
         "%s on cpu in bf16: forward only with the parameters' bfloat16 copy (model_weights16): one sample's logits "
         "bitwise those without it; the products read it %s", name,
         !reads       ? "nowhere here"
         : tied >= 0 ? "(another copy shows, of the tied table alone too)"
                     : "(another copy shows)");
  for (int k = 0; k < 3; k++) free(got[k]);
  free(other);
  model_free(&m[1]);
  open_cpu(BACKEND_FP32);
  tap_ok(model_weights16(&m[0]) == 0 && m[0].params16 == NULL, "%s on cpu in fp32: no bfloat16 copy", name);
  model_free(&m[0]);
}

/* Open backend be on this thread in bf16, holding activations in bfloat16 where it may (act16) or not. */
static void open_bf16(const backend_t *be, int act16) {
  backend_options_t o = backend_default_options();
  o.precision = BACKEND_BF16;
  o.bf16_activations = act16;
  int input_error = 0;
  const char *why = be->open(&o, &input_error);
  if (why) surge_runtime_error("the %s backend refused bf16: %s", be->name, why);
}

/* A model whose passing outputs (nn/act_pass.h) are read out of the forward's order, for passing_order. */
typedef struct pass_case {
  model_t *m;
  int writer, reader; /* the forward of writer (a later passing node), then of reader (an earlier one's reader) */
} pass_case_t;

static void forward_out_of_order(const void *arg) {
  const pass_case_t *pc = arg;
  model_forward_node(pc->m, pc->writer, 0, B);
  model_forward_node(pc->m, pc->reader, 0, B);
}

/* The buffer of the passing outputs says whose rows it holds: after a whole forward, the last passing node's reader
 * runs again (its rows are still there); a reader that runs after a later passing node wrote the buffer stops the
 * run, exit 1, naming both nodes (a layout that broke the forward's order could not read stale values). */
static void passing_order(const graph_t *g, const backend_t *be) {
  model_t m;
  init_model(&m, g, be, FUSED);
  model_init_params(&m, 11);
  set_batch(&m, g, 0);
  model_forward(&m, B);
  int first = 0, later = 0, first_reader = 0, last_reader = 0;
  for (int i = 1; i < g->n; i++)
    if (m.act_pass && m.act[i] == m.act_pass) {
      if (!first) first = i;
      else later = i;
    }
  for (int j = 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++) {
      if (first && g->l[j].in[k] == first && !first_reader) first_reader = j;
      if (later && g->l[j].in[k] == later) last_reader = j;
    }
  if (!later || !first_reader || !last_reader) {
    tap_ok(0, "gpt on %s: two passing outputs and their readers (found %d, %d)", be->name, first, later);
    model_free(&m);
    return;
  }
  pass_case_t again = {&m, later, last_reader}, stale = {&m, later, first_reader};
  child_result_t ok = run_in_child(forward_out_of_order, &again), bad = run_in_child(forward_out_of_order, &stale);
  char want[64];
  snprintf(want, sizeof want, "node %d reads rows 0..%d of node %d", first_reader, B - 1, first);
  tap_ok(ok.status == 0 && bad.status == 1 && strstr(bad.err, want) && strstr(bad.err, "a bug"),
         "gpt on %s: node %d's forward again after %d's runs (exit %d); node %d's after %d's stops the run "
         "(exit %d): %s",
         be->name, last_reader, later, ok.status, first_reader, later, bad.status, bad.err);
  model_free(&m);
}

/* In bf16, where the context says act16, a training model holds in bfloat16 the activations that only
 * products read (nn/act16.h): loss, logits and every gradient of a step bitwise those of the model that
 * holds none (bf16_activations = 0), in fewer activation floats. The gpt (2 blocks) holds 13: each block's
 * layer norms' outputs, its query-key-value product's, its attention's (whose backward reads it rounded), its
 * GELU's and the GELU's input (the linear before it, which runs it: GELU rounds its input), and the final norm's;
 * the other zoo models none (no activation only products read, or too few to pay for the float buffers). */
static void held16(const char *name, const graph_t *g, const backend_t *be, int sequences, size_t nl, size_t ng) {
  if (be == &backend_cpu && (!CPU_KERNELS_BUILT || cpu_simd_best() == BACKEND_SIMD_NONE)) {
    tap_skip("%s: the cpu backend's bf16 products (its own kernels are not built or this CPU lacks AVX2 + FMA)", name);
    return;
  }
  fusion_counts_t n[2];
  float *logits[2], *grads[2];
  double loss[2];
  for (int k = 0; k < 2; k++) {
    open_bf16(be, k);
    logits[k] = xcalloc(nl, sizeof *logits[k]);
    grads[k] = xcalloc(ng, sizeof *grads[k]);
    loss[k] = run(g, be, POOLED, &n[k], logits[k], grads[k]);
  }
  const int want = sequences ? 6 * 2 + 1 : 0;
  tap_ok(n[0].held16 == 0 && n[1].held16 == want && (want ? n[1].act_floats < n[0].act_floats : n[1].act_floats ==
         n[0].act_floats) && loss[0] == loss[1] && memcmp(logits[0], logits[1], nl * sizeof(float)) == 0 &&
             memcmp(grads[0], grads[1], ng * sizeof(float)) == 0,
         "%s on %s in bf16: %d activations held in bfloat16 (%d expected), activation memory %zu -> %zu floats: loss, "
         "logits and all %zu gradients bitwise those of the model holding none",
         name, be->name, n[1].held16, want, n[0].act_floats, n[1].act_floats, ng);
  for (int k = 0; k < 2; k++) free(logits[k]), free(grads[k]);
  backend_options_t o = backend_default_options();
  int input_error = 0;
  be->open(&o, &input_error); /* back to fp32 */
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
  char name[64];
  snprintf(name, sizeof name, "%s%s", model, batchnorm ? " (batch norm)" : "");
  int relus, fusable = fusable_relus(&g, &relus);
  fusion_counts_t plain, f, p;
  float *l3 = xcalloc(nl, sizeof *l3), *g3 = xcalloc(ng, sizeof *g3);
  double a = run(&g, be, PLAIN, &plain, l1, g1), b = run(&g, be, FUSED, &f, l2, g2);
  double c = run(&g, be, POOLED, &p, l3, g3);
  const int overwritable = overwriter_fed(&g), offered = epilogues_offered(&g), in_place = in_place_offered(&g);
  int convs = 0; /* the CNNs fuse some pair; the mlp and the gpt have no ReLU after a conv2d, add or batch norm */
  for (int i = 0; i < g.n; i++) convs += g.l[i].kind == LAYER_CONV2D;
  tap_ok(plain.pairs == 0 && plain.written == 0 && plain.epilogues == 0 && !plain.in_place &&
             (f.pairs > 0) == (convs > 0) && f.pairs == fusable && f.written > 0 &&
             f.written == overwritable + in_place && f.epilogues == offered && f.in_place == in_place,
         "%s on %s: %d of %d ReLUs fused, the %d after a conv2d, add or batch norm; %d gradients overwritten, "
         "the %d whose first consumer overwrites%s; %d epilogues (linear + GELU, add + layer norm) of %d offered "
         "(none unasked)",
         name, backend_name, f.pairs, relus, fusable, f.written, overwritable,
         f.in_place ? " and the logits' in place" : "", f.epilogues, offered);
  tap_ok(a == b && memcmp(l1, l2, nl * sizeof *l1) == 0 && memcmp(g1, g2, ng * sizeof *g1) == 0,
         "%s on %s: %d node+ReLU pairs fused, %d gradients overwritten, %d epilogues: loss, logits and all %zu "
         "gradients bitwise those of the plain model",
         name, backend_name, f.pairs, f.written, f.epilogues, ng);
  /* the outputs only the forward reads (nn/act_pass.h) take turns in one buffer: in a gpt each block's attention and
   * feed-forward projections (read by the residual adds); the CNNs' adds are fused with their ReLUs, which read
   * their output back */
  const int passing = zoo_takes_sequences(model) ? 2 * o.gpt.layers : 0;
  tap_ok(plain.passing == 0 && f.passing == passing && (passing ? f.act_floats < plain.act_floats : 1),
         "%s on %s: %d activations only the forward reads (%d expected) share one buffer, the plain model's none; "
         "activation memory %zu -> %zu floats (the step bitwise: above)",
         name, backend_name, f.passing, passing, plain.act_floats, f.act_floats);
  /* every overwritten gradient but the output's is pooled; a step holds fewer of them than nodes; a gpt block's two
   * residual adds pass their gradient's buffer to both inputs (the stream and the projection: nn/grad_alias.h), the
   * CNNs' adds are fused with their ReLUs and pass none */
  const int add_shared = zoo_takes_sequences(model) ? 4 * o.gpt.layers : 0;
  tap_ok(a == c && memcmp(l1, l3, nl * sizeof *l1) == 0 && memcmp(g1, g3, ng * sizeof *g1) == 0 &&
             p.pooled == overwritable && p.buffers > 0 && p.buffers < p.pooled && p.act_floats < f.act_floats &&
             p.add_shared == add_shared && f.add_shared == 0,
         "%s on %s: %d gradients in %d shared buffers (model_init_on's order), %d add inputs in their add's buffer "
         "(%d expected; unpooled none), activation memory %zu -> %zu floats: loss, logits and all %zu gradients "
         "bitwise those of the plain model",
         name, backend_name, p.pooled, p.buffers, p.add_shared, add_shared, f.act_floats, p.act_floats, ng);
  forward_only(name, &g, be, l1, f.act_floats);
  if (be == &backend_cpu) weights16(name, &g, zoo_takes_sequences(model));
  held16(name, &g, be, zoo_takes_sequences(model), nl, ng);
  if (zoo_takes_sequences(model) && !batchnorm) passing_order(&g, be);
  compare_steps(name, &g, be);
  free(l1), free(l2), free(l3), free(g1), free(g2), free(g3);
  graph_free(&g);
}

/* Two residual adds where the second input of the first cannot share its gradient's buffer: a = fc1(x), b = fc2(a),
 * c = fc3(a), s = a + b, y = s + c, out = fc4(y). y passes its buffer to s and to the branch c; at s, a's gradient may
 * not take it too: fc3 (c's backward) reads dc from the buffer and adds into da, and a backward that wrote into its
 * own dy would read a sum. b takes it (nn/grad_alias.h): 3 inputs share, and the pooled step is the plain one. */
static void add_order(const char *backend_name) {
  graph_t g;
  graph_init(&g, shape1(12), INIT_KAIMING_UNIFORM);
  const int a = nn_linear(&g, 0, 12, 1, "fc1"), b = nn_linear(&g, a, 12, 1, "fc2"), c = nn_linear(&g, a, 12, 1, "fc3");
  const int s = nn_add(&g, a, b, "s"), y = nn_add(&g, s, c, "y");
  nn_linear(&g, y, CLASSES, 1, "fc4");
  const backend_t *be = backend_find(backend_name);
  const size_t nl = (size_t)B * CLASSES, ng = g.params.total;
  float *l1 = xcalloc(nl, sizeof *l1), *l2 = xcalloc(nl, sizeof *l2), *g1 = xcalloc(ng, sizeof *g1),
        *g2 = xcalloc(ng, sizeof *g2);
  fusion_counts_t plain, pooled;
  const double loss1 = run(&g, be, PLAIN, &plain, l1, g1), loss2 = run(&g, be, POOLED, &pooled, l2, g2);
  tap_ok(g.err[0] == 0 && pooled.add_shared == 3 && loss1 == loss2 && memcmp(l1, l2, nl * sizeof *l1) == 0 &&
             memcmp(g1, g2, ng * sizeof *g1) == 0,
         "two adds, a stream read by a branch's backward on %s: %d add inputs in their add's buffer (3 expected: "
         "not fc1's), loss, logits and all %zu gradients bitwise those of the plain model",
         be->name, pooled.add_shared, ng);
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
      {"inception-v3", 1}, /* small form: concats, windowed average pools, 1x7 / 7x1 convolutions */
  };
  const char *backends[] = {"cpu", "ref"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int b = 0; b < 2; b++) compare(cases[c].model, backends[b], cases[c].batchnorm);
  for (int b = 0; b < 2; b++) add_order(backends[b]);
  return tap_done();
}
