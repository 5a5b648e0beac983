#include "nn/model.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/events.h"
#include "nn/act16.h"
#include "nn/act_pass.h"
#include "nn/act_pool.h"
#include "nn/grad_pool.h"
#include "nn/logit_mask.h"
#include "nn/recompute.h"

int model_fusable_relu(const graph_t *g, int i) {
  const int kind = g->l[i].kind;
  const int fusable = kind == LAYER_CONV2D || kind == LAYER_ADD || kind == LAYER_BATCHNORM;
  const int j = fusable ? graph_sole_consumer(g, i) : -1;
  return j >= 0 && g->l[j].kind == LAYER_RELU && g->l[i].needs_grad == g->l[j].needs_grad ? j : -1;
}

/* Mark each conv2d or residual add whose sole consumer is a ReLU that allowed() lets it absorb:
 * fused[node] = relu, fused[relu] = -1. Returns the pairs. A fused pair is one node both ways: the
 * node writes the ReLU's output, and its backward takes the ReLU output's gradient and runs the
 * ReLU's on the way (conv_bwd's relu_y, add_relu_bwd), so the pair has one activation and one
 * gradient buffer. */
static int plan_fusion(model_t *m, int (*allowed)(void *arg, int node, int next), void *arg) {
  const graph_t *g = m->g;
  int fused = 0;
  for (int i = 1; i < g->n && allowed; i++) {
    const int j = model_fusable_relu(g, i);
    if (j < 0 || !allowed(arg, i, j)) continue;
    m->fused[i] = j;
    m->fused[j] = -1;
    fused++;
  }
  return fused;
}

/* The consumer that overwrites node i's gradient (model_t.writer), or 0: the first of its consumers
 * to run backward (the highest-numbered), where it reads node i in one slot, its layer can overwrite
 * (layer_ops_t.writes_dx) and allowed() says every consumer runs on node i's samples (nothing is
 * added in from elsewhere before it writes). Not a node fused with its ReLU: their buffer is the
 * ReLU's, planned there. */
static int overwriter(const model_t *m, int i, int (*allowed)(void *arg, int node, int next), void *arg) {
  const graph_t *g = m->g;
  if (m->fused[i] > 0 || !g->l[i].needs_grad) return 0;
  int first = 0, slots = 0;
  for (int j = g->n - 1; j > i; j--)
    for (int k = 0; k < g->l[j].nin; k++)
      if (g->l[j].in[k] == i) {
        if (!allowed(arg, i, j)) return 0;
        if (!first) first = j;
        slots += j == first;
      }
  if (!first || slots != 1 || m->fused[first] < 0 || !layer_ops_of(g->l[first].kind)->writes_dx) return 0;
  return first;
}

/* Mark each gradient buffer its first consumer overwrites whole in its backward, so it is never
 * zeroed: writer[node] = that consumer. */
static void plan_writes(model_t *m, int (*allowed)(void *arg, int node, int next), void *arg) {
  for (int i = 1; i < m->g->n && allowed; i++) m->writer[i] = overwriter(m, i, allowed, arg);
}

/* The node whose forward node i can run in its epilogue, or -1: the GELU that is a linear's only
 * consumer, or a layer norm that reads an add (one not fused with a ReLU). */
static int epilogue_of(const model_t *m, int i) {
  const graph_t *g = m->g;
  if (g->l[i].kind == LAYER_LINEAR) {
    const int j = graph_sole_consumer(g, i);
    return j >= 0 && g->l[j].kind == LAYER_GELU && g->l[i].needs_grad == g->l[j].needs_grad ? j : -1;
  }
  if (g->l[i].kind == LAYER_ADD && m->fused[i] == 0)
    for (int j = i + 1; j < g->n; j++)
      if (g->l[j].kind == LAYER_LAYERNORM && g->l[j].in[0] == i) return j;
  return -1;
}

/* Mark each node that runs the next one's forward in its epilogue where allowed() lets it:
 * epi[node] = next, epi[next] = -node (model_t.epi). */
static void plan_epilogues(model_t *m, int (*allowed)(void *arg, int node, int next), void *arg) {
  for (int i = 1; i < m->g->n && allowed; i++) {
    const int j = epilogue_of(m, i);
    if (j < 0 || m->epi[j] != 0 || !allowed(arg, i, j)) continue;
    m->epi[i] = j;
    m->epi[j] = -i;
  }
}

/* The loss may write the logits' gradient over the logits where the output layer's backward reads
 * its input and weights but never its output (linear, tied linear), and allowed(arg, out, out) says
 * the layout's loss may (the 3d layout's vocabulary-parallel one may not). */
static int plan_grad_in_place(const model_t *m, int (*allowed)(void *arg, int node, int next), void *arg) {
  const int out = graph_output(m->g), kind = m->g->l[out].kind;
  return allowed && m->g->l[out].needs_grad && m->fused[out] == 0 &&
         (kind == LAYER_LINEAR || kind == LAYER_TIED_LINEAR) && allowed(arg, out, out);
}

/* The segments of activation recomputation (g->recompute, nn/recompute.h) into seg_first and
 * shares; a graph that cannot be recomputed so is an input error. None in a forward-only model:
 * nothing runs backward. */
static void plan_recompute(model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, int forward_only) {
  const graph_t *g = m->g;
  m->seg_first = xcalloc((size_t)g->n, sizeof *m->seg_first);
  m->shares = xcalloc((size_t)g->n, sizeof *m->shares);
  if (forward_only) return;
  char why[256];
  if (recompute_plan(g, m->fused, m->epi, allowed, arg, m->seg_first, m->shares, why, sizeof why) < 0)
    surge_input_error("[train] recompute = %s: %s (hint: recompute = none, or a [parallel] plan that runs each "
                      "recomputed block on one rank set)", recompute_name(g->recompute), why);
}

void model_fusion_plan(const graph_t *g, int *fused, int *epi, int *seg_first) {
  model_t m = {.g = g};
  m.fused = xcalloc((size_t)g->n, sizeof *m.fused);
  m.epi = xcalloc((size_t)g->n, sizeof *m.epi);
  plan_fusion(&m, model_allow_all, NULL);
  plan_epilogues(&m, model_allow_all, NULL);
  plan_recompute(&m, model_allow_all, NULL, 0);
  if (fused) memcpy(fused, m.fused, (size_t)g->n * sizeof *fused);
  if (epi) memcpy(epi, m.epi, (size_t)g->n * sizeof *epi);
  if (seg_first) memcpy(seg_first, m.seg_first, (size_t)g->n * sizeof *seg_first);
  free(m.fused);
  free(m.epi);
  free(m.seg_first);
  free(m.shares);
}

void model_init(model_t *m, const graph_t *g, const backend_t *be, int B_cap) {
  model_init_fused(m, g, be, B_cap, NULL, NULL);
}

int model_init_fused(model_t *m, const graph_t *g, const backend_t *be, int B_cap,
                     int (*allowed)(void *arg, int node, int next), void *arg) {
  return model_init_on(m, g, be, B_cap, allowed, arg, NULL, NULL, NULL);
}

/* The shared buffers: a forward-only model's activations (act_pool_plan), else the gradients of the
 * layout's order (grad_pool_plan); slot_of[i] per node (-1: its own buffer), the buffers' sizes in
 * floats; 0 buffers for a training model without an order. */
static int plan_pool(const model_t *m, model_order_fn order, void *arg, int forward_only, int *slot_of,
                     size_t *slot_floats) {
  const int n = m->g->n;
  for (int i = 0; i < n; i++) slot_of[i] = -1;
  if (forward_only) return act_pool_plan(m, slot_of, slot_floats);
  if (!order) return 0;
  int *bwd = xcalloc(2 * (size_t)n, sizeof *bwd);
  const int nbwd = order(arg, m, bwd);
  const int slots = grad_pool_plan(m, bwd, nbwd, slot_of, slot_floats);
  free(bwd);
  return slots;
}

int model_allow_all(void *arg, int node, int next) {
  (void)arg, (void)node, (void)next;
  return 1;
}

/* What the buffers are made from: the plans' verdicts per node, and the sizes they add up to. */
typedef struct buffer_plan {
  int *held;           /* node i's activation held in bfloat16 (act16.h) */
  int *pass;           /* node i's activation in the buffer the passing outputs share (act_pass.h) */
  int *slot_of;        /* node i's shared buffer (plan_pool), -1: its own */
  size_t *slot_floats; /* each shared buffer's floats */
  size_t pass_most;    /* floats of the largest passing activation */
  size_t held_most;    /* floats of the largest held activation */
  size_t scratch;      /* floats of the largest scratch a node asks for */
} buffer_plan_t;

/* Every plan of the model in order, their verdicts in m and bp: fusion, gradient writes, epilogues,
 * the loss's gradient in place, recomputation, bfloat16-held and passing activations, shared buffers.
 * Returns the fused pairs. */
static int plan_model(model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, model_order_fn order,
                      int forward_only, buffer_plan_t *bp) {
  const graph_t *g = m->g;
  int nfused = plan_fusion(m, allowed, arg);
  if (!forward_only) plan_writes(m, allowed, arg);
  plan_epilogues(m, allowed, arg);
  m->grad_in_place = !forward_only && plan_grad_in_place(m, allowed, arg);
  if (m->grad_in_place) m->writer[graph_output(g)] = graph_output(g); /* the loss writes it whole */
  plan_recompute(m, allowed, arg, forward_only);
  bp->held = xcalloc((size_t)g->n, sizeof *bp->held);
  if (!forward_only) m->nact16 = act16_plan(m, allowed, arg, bp->held, &m->nact_f32);
  if (m->nact16) m->act16 = xcalloc((size_t)g->n, sizeof *m->act16);
  bp->pass = xcalloc((size_t)g->n, sizeof *bp->pass);
  if (!forward_only) m->npass = act_pass_plan(m, allowed, arg, bp->held, bp->pass);
  bp->slot_of = xcalloc((size_t)g->n, sizeof *bp->slot_of);
  bp->slot_floats = xcalloc((size_t)g->n, sizeof *bp->slot_floats);
  m->npool = plan_pool(m, order, arg, forward_only, bp->slot_of, bp->slot_floats);
  return nfused;
}

static void buffer_plan_free(buffer_plan_t *bp) {
  free(bp->held), free(bp->pass), free(bp->slot_of), free(bp->slot_floats);
}

/* Each node's own buffers, as bp says: a shared (pooled), bfloat16 or own activation and gradient,
 * its layer state (forward only: one buffer the nodes take turns in) and kept tensors; the sizes of
 * the buffers made later into bp. Nodes that borrow (shares, passing, fused) get theirs in
 * lend_buffers and alias_outputs. */
static void alloc_node_buffers(model_t *m, int forward_only, buffer_plan_t *bp) {
  const graph_t *g = m->g;
  const backend_t *be = m->be;
  const int B_cap = m->B_cap;
  m->pool = xcalloc((size_t)m->npool + 1, sizeof *m->pool);
  m->pooled = xcalloc((size_t)g->n, sizeof *m->pooled);
  for (int p = 0; p < m->npool; p++) {
    m->pool[p] = be->alloc(bp->slot_floats[p]);
    m->act_floats += bp->slot_floats[p];
  }
  size_t aux_most = 0;
  for (int i = 0; i < g->n; i++) aux_most = g->l[i].aux_per_sample > aux_most ? g->l[i].aux_per_sample : aux_most;
  /* forward only: what a node saves for its backward is read by nobody, so the nodes take turns in
   * one buffer (a node run in an epilogue of one that has state of its own keeps its own) */
  if (forward_only && aux_most) {
    m->aux_pool = be->alloc(surge_mul_size((size_t)B_cap, aux_most, "layer state"));
    m->act_floats += (size_t)B_cap * aux_most;
  }
  for (int i = 0; i < g->n; i++) {
    const layer_t *l = &g->l[i];
    size_t n = surge_mul_size((size_t)B_cap, shape_size(l->out), "activations");
    size_t need = layer_scratch_floats(l, B_cap);
    if (need > bp->scratch) bp->scratch = need;
    if (m->shares[i]) continue; /* an earlier segment's interior node lends its buffers (lend_buffers) */
    if (forward_only && bp->slot_of[i] >= 0) { /* a shared activation buffer (plan_pool) */
      m->act[i] = m->pool[bp->slot_of[i]];
      m->pooled[i] = MODEL_POOLED_ACT;
    } else if (bp->held[i]) { /* in bfloat16 (act16.h) */
      m->act16[i] = backend_alloc_bf16(be, n);
      m->act_floats += n / 2 + 1;
      bp->held_most = n > bp->held_most ? n : bp->held_most;
    } else if (bp->pass[i]) { /* the buffer shared by the forward's passing outputs (act_pass.h, lend_buffers) */
      bp->pass_most = n > bp->pass_most ? n : bp->pass_most;
    } else if (m->fused[i] <= 0) { /* a fused node writes its ReLU's buffer (alias_outputs): it has none of its own */
      m->act[i] = be->alloc(n);
      m->act_floats += n;
    }
    if (!forward_only && bp->slot_of[i] >= 0) { /* a shared gradient buffer (plan_pool) */
      m->dact[i] = m->pool[bp->slot_of[i]];
      m->pooled[i] = MODEL_POOLED_GRAD;
    } else if (!forward_only && l->needs_grad && m->fused[i] <= 0 && !(m->grad_in_place && i == graph_output(g))) {
      /* a fused node's is its ReLU's; an in-place output's is its logits (alias_outputs) */
      m->dact[i] = be->alloc(n);
      m->act_floats += n;
    }
    if (l->aux_per_sample && m->aux_pool && !(m->epi[i] < 0 && g->l[-m->epi[i]].aux_per_sample)) {
      m->aux[i] = m->aux_pool;
      m->pooled[i] |= MODEL_POOLED_AUX;
    } else if (l->aux_per_sample) {
      size_t na = surge_mul_size((size_t)B_cap, l->aux_per_sample, "layer state");
      m->aux[i] = be->alloc(na);
      m->act_floats += na;
    }
    if (l->keep) {
      m->keep[i] = be->alloc(l->keep);
      m->act_floats += l->keep;
    }
  }
}

/* Buffers lent by one node to others: an earlier recompute segment's interior to the same node of a
 * later one (m->shares), and the buffer the passing outputs share (made here). */
static void lend_buffers(model_t *m, const buffer_plan_t *bp) {
  const graph_t *g = m->g;
  for (int i = 0; i < g->n; i++)
    if (m->shares[i]) {
      m->act[i] = m->act[m->shares[i]];
      m->dact[i] = m->dact[m->shares[i]];
      m->aux[i] = m->aux[m->shares[i]];
    }
  if (m->npass) {
    m->act_pass = m->be->alloc(bp->pass_most);
    m->act_floats += bp->pass_most;
    for (int i = 0; i < g->n; i++)
      if (bp->pass[i]) m->act[i] = m->act_pass, m->pooled[i] |= MODEL_POOLED_ACT;
  }
}

/* The buffers of a whole pass: the float32 copies of bfloat16-held activations one call reads at once
 * (act16_plan), the scratch, the targets and the logits' mask. */
static void alloc_pass_buffers(model_t *m, const buffer_plan_t *bp) {
  const backend_t *be = m->be;
  if (m->nact16) {
    for (int b = 0; b < m->nact_f32; b++) m->act_f32[b] = be->alloc(bp->held_most);
    m->act_floats += (size_t)m->nact_f32 * bp->held_most;
  }
  m->scratch = be->alloc(bp->scratch);
  m->act_floats += bp->scratch;
  m->targets = be->alloc(surge_mul_size((size_t)m->B_cap, (size_t)m->g->targets_per_sample, "targets"));
  m->logit_mask = logit_mask_new(be, model_classes(m), 0, m->g->classes_valid);
}

/* Outputs written into another node's buffers: a fused node's (its ReLU's), the loss's gradient in
 * place (its logits), and the count of add inputs whose gradient is the add's own buffer. */
static void alias_outputs(model_t *m) {
  const graph_t *g = m->g;
  for (int i = 0; i < g->n; i++)
    if (m->fused[i] > 0) {
      m->act[i] = m->act[m->fused[i]];
      m->dact[i] = m->dact[m->fused[i]];
    }
  if (m->grad_in_place) m->dact[graph_output(g)] = m->act[graph_output(g)];
  for (int i = 1; i < g->n; i++) { /* add inputs in the add's gradient buffer (grad_alias.h) */
    if (g->l[i].kind != LAYER_ADD || !m->dact[i]) continue;
    for (int k = 0; k < g->l[i].nin; k++) m->nadd_shared += m->dact[g->l[i].in[k]] == m->dact[i];
  }
}

/* model_init_on, or with forward_only a model without gradients (model_init_forward). */
static int init_model(model_t *m, const graph_t *g, const backend_t *be, int B_cap,
                      int (*allowed)(void *arg, int node, int next), void *arg, float *params, float *grads,
                      model_order_fn order, int forward_only) {
  memset(m, 0, sizeof *m);
  m->g = g;
  m->be = be;
  m->B_cap = B_cap;
  m->own_params = params == NULL;
  m->own_grads = grads == NULL && !forward_only;
  m->params = params ? params : be->alloc(g->params.total);
  m->grads = grads || forward_only ? grads : be->alloc(g->params.total + MODEL_GRAD_SIDE);
  m->act = xcalloc((size_t)g->n, sizeof *m->act);
  m->dact = xcalloc((size_t)g->n, sizeof *m->dact);
  m->aux = xcalloc((size_t)g->n, sizeof *m->aux);
  m->in = xcalloc((size_t)g->n, sizeof *m->in);
  m->din = xcalloc((size_t)g->n, sizeof *m->din);
  m->fused = xcalloc((size_t)g->n, sizeof *m->fused);
  m->writer = xcalloc((size_t)g->n, sizeof *m->writer);
  m->keep = xcalloc((size_t)g->n, sizeof *m->keep);
  m->bufs = be->alloc(g->bufs.total ? g->bufs.total : 1);
  m->train = 1;
  m->epi = xcalloc((size_t)g->n, sizeof *m->epi);
  if (forward_only) allowed = model_allow_all, arg = NULL;
  buffer_plan_t bp = {0};
  const int nfused = plan_model(m, allowed, arg, order, forward_only, &bp);
  alloc_node_buffers(m, forward_only, &bp);
  lend_buffers(m, &bp);
  alloc_pass_buffers(m, &bp);
  buffer_plan_free(&bp);
  alias_outputs(m);
  model_wire_default(m);
  return nfused;
}

int model_init_on(model_t *m, const graph_t *g, const backend_t *be, int B_cap,
                  int (*allowed)(void *arg, int node, int next), void *arg, float *params, float *grads,
                  model_order_fn order) {
  return init_model(m, g, be, B_cap, allowed, arg, params, grads, order, 0);
}

void model_init_forward(model_t *m, const graph_t *g, const backend_t *be, int B_cap, float *params) {
  init_model(m, g, be, B_cap, NULL, NULL, params, NULL, NULL, 1);
}

int model_weights16(model_t *m) {
  if (m->grads || m->be->context()->weights16_rows <= 0) return 0; /* training models keep float32 products */
  const size_t n = m->g->params.total;
  if (!m->params16) m->params16 = backend_alloc_bf16(m->be, n);
  m->be->to_bf16(n, m->params, m->params16);
  return 1;
}

int model_reverse_order(void *arg, const model_t *m, int *bwd) {
  (void)arg;
  const int n = m->g->n;
  for (int j = n - 1; j >= 1; j--) bwd[n - 1 - j] = j;
  return n - 1;
}

void model_wire_default(model_t *m) {
  const graph_t *g = m->g;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->l[i].nin; k++) {
      m->in[i][k] = m->act[g->l[i].in[k]];
      m->din[i][k] = m->dact[g->l[i].in[k]];
    }
}

void model_free(model_t *m) {
  const backend_t *be = m->be;
  for (int i = 0; i < m->g->n; i++) {
    if (m->shares[i]) continue; /* another node's buffers */
    /* a fused node shares its ReLU's buffers; a pooled one is a shared buffer's (below) */
    if (m->fused[i] <= 0 && !(m->pooled[i] & MODEL_POOLED_ACT)) be->free(m->act[i]);
    if (m->dact[i] && m->fused[i] <= 0 && m->dact[i] != m->act[i] && !(m->pooled[i] & MODEL_POOLED_GRAD))
      be->free(m->dact[i]); /* in place: one */
    if (m->aux[i] && !(m->pooled[i] & MODEL_POOLED_AUX)) be->free(m->aux[i]);
    if (m->keep[i]) be->free(m->keep[i]);
    if (model_held16(m, i)) be->free((float *)m->act16[i]);
  }
  if (m->nact16) {
    for (int b = 0; b < m->nact_f32; b++) be->free(m->act_f32[b]);
  }
  if (m->act_pass) be->free(m->act_pass);
  free(m->act16);
  free(m->keep);
  free(m->seg_first);
  free(m->shares);
  be->free(m->bufs);
  free(m->act);
  free(m->dact);
  free(m->aux);
  free(m->fused);
  free(m->writer);
  free(m->pooled);
  for (int p = 0; p < m->npool; p++) be->free(m->pool[p]);
  if (m->aux_pool) be->free(m->aux_pool);
  if (m->params16) be->free((float *)m->params16);
  free(m->pool);
  free(m->epi);
  free(m->in);
  free(m->din);
  be->free(m->scratch);
  be->free(m->targets);
  if (m->logit_mask) be->free(m->logit_mask);
  if (m->own_params) be->free(m->params);
  if (m->own_grads) be->free(m->grads);
  memset(m, 0, sizeof *m);
}

/* A host backend's slabs are written in place (they are zeroed, as a staging copy would be); a device's
 * go through a host copy. A slab-sized copy would be the largest thing a host process holds while
 * it starts: 472 MiB for a 124M gpt, more than a sharded optimizer's ranks hold in their steps. */
void model_init_params(model_t *m, uint64_t seed) {
  const graph_t *g = m->g;
  int in_place = m->be->host_memory;
  float *host = in_place ? m->params : xcalloc(g->params.total ? g->params.total : 1, sizeof(float));
  graph_init_params(g, seed, host);
  if (!in_place) {
    m->be->upload(m->params, host, g->params.total);
    free(host);
  }
  float *bufs = in_place ? m->bufs : xcalloc(g->bufs.total ? g->bufs.total : 1, sizeof(float));
  graph_init_bufs(g, bufs);
  if (!in_place) {
    m->be->upload(m->bufs, bufs, g->bufs.total);
    free(bufs);
  }
}

void graph_init_params(const graph_t *g, uint64_t seed, float *host) {
  for (int i = 0; i < g->n; i++) {
    const layer_t *l = &g->l[i];
    if (l->np == 0) continue;
    float *w[LAYER_MAX_PARAMS] = {0};
    for (int k = 0; k < l->np; k++) w[k] = model_tensor(host, g, l->param[k]);
    graph_init_layer(g, seed, i, w);
  }
}

void graph_init_layer(const graph_t *g, uint64_t seed, int i, float **w) {
  const layer_t *l = &g->l[i];
  if (l->np == 0) return;
  rng_t r;
  rng_seed_stream(&r, seed, (uint64_t)i, 0x1417);
  layer_ops_of(l->kind)->init(l, w, &r, g->init);
}

void model_set_batch(model_t *m, const float *x_host, const float *y_host, int B) {
  if (B > m->B_cap) surge_runtime_error("batch of %d samples exceeds the model's buffers (%d)", B, m->B_cap);
  const graph_t *g = m->g;
  m->be->upload(m->act[0], x_host, (size_t)B * shape_size(g->l[0].out));
  m->be->upload(m->targets, y_host, (size_t)B * (size_t)g->targets_per_sample);
}

/* A fused node's gradient is its ReLU's, zeroed with it; one with a writer is overwritten whole. */
void model_zero_act_grad(model_t *m, int i, int off, int B) {
  size_t n = shape_size(m->g->l[i].out);
  if (m->dact[i] && B > 0 && m->fused[i] <= 0 && !m->writer[i])
    m->be->fill(m->dact[i] + (size_t)off * n, (size_t)B * n, 0.0f);
}

void model_zero_grads_rows(model_t *m, const int *rows) {
  m->be->fill(m->grads, m->g->params.total, 0.0f);
  for (int i = 1; i < m->g->n; i++) /* a borrowed buffer is its lender's, zeroed once there */
    if (!m->shares[i]) model_zero_act_grad(m, i, 0, rows ? rows[i] : m->B_cap);
}

void model_zero_grads(model_t *m) { model_zero_grads_rows(m, NULL); }

/* The epilogue's part of node i's context (model_t.epi): node j's output, state and parameters;
 * backward of a linear + GELU: dy is the GELU output's gradient, the linear's own is written. */
static void epilogue_ctx(model_t *m, int i, int off, int backward, layer_ctx_t *c) {
  const graph_t *g = m->g;
  const int j = m->epi[i];
  const layer_t *e = &g->l[j];
  c->epi = e;
  c->epi_y = backward ? act16_own(m, j, off, c->B) : act16_output(m, j, off, c->B);
  if (m->aux[j]) c->epi_aux = m->aux[j] + (size_t)off * e->aux_per_sample;
  for (int k = 0; k < e->np; k++) c->epi_w[k] = model_tensor(m->params, g, e->param[k]);
  if (backward && e->kind == LAYER_GELU) {
    c->epi_grad = m->dact[i] + (size_t)off * shape_size(g->l[i].out);
    c->dy = m->dact[j] + (size_t)off * shape_size(e->out);
  }
}

/* Build the call context of node i on samples [off, off+B). */
static layer_ctx_t node_ctx(model_t *m, int i, int off, int B, int backward) {
  const graph_t *g = m->g;
  const layer_t *l = &g->l[i];
  layer_ctx_t c;
  memset(&c, 0, sizeof c);
  c.be = m->be;
  c.B = B;
  act16_call(m);
  for (int k = 0; k < l->nin; k++) {
    int src = l->in[k];
    size_t sz = shape_size(g->l[src].out);
    c.x[k] = act16_input(m, i, k, off, B);
    if (!backward) act_pass_check(m, i, src, off, B);
    if (backward && m->din[i][k]) c.dx[k] = m->din[i][k] + (size_t)off * sz;
    c.dx_write[k] = backward && m->writer[src] == i;
  }
  size_t osz = shape_size(l->out);
  c.y = backward ? act16_own(m, i, off, B) : act16_output(m, i, off, B);
  if (backward) c.dy = m->dact[i] + (size_t)off * osz;
  if (m->aux[i]) c.aux = m->aux[i] + (size_t)off * l->aux_per_sample;
  c.scratch = m->scratch;
  c.fuse_relu = m->fused[i] > 0;
  c.keep = m->keep[i];
  c.train = m->train;
  c.group = m->group ? m->group[i] : NULL;
  c.ids = m->ids ? m->ids + (m->id_lo ? m->id_lo[i] : 0) + off : NULL;
  c.seed = m->seed;
  c.step = m->step;
  c.node = i;
  for (int k = 0; k < l->nb; k++) c.st[k] = m->bufs + g->bufs.t[l->buf[k]].off;
  for (int k = 0; k < l->np; k++) {
    c.w[k] = model_tensor(m->params, g, l->param[k]);
    if (m->params16) c.w16[k] = m->params16 + g->params.t[l->param[k]].off;
    if (backward) c.dw[k] = model_tensor(m->grads, g, l->param[k]);
  }
  if (l->kind == LAYER_TIED_LINEAR) {
    c.w[0] = model_tensor(m->params, g, l->tied_param);
    if (m->params16) c.w16[0] = m->params16 + g->params.t[l->tied_param].off;
    if (backward) c.dw[0] = model_tensor(m->grads, g, l->tied_param);
  }
  if (m->epi[i] > 0) epilogue_ctx(m, i, off, backward, &c);
  return c;
}

/* Node i's forward as it stands (with the epilogue it runs, if any), up to its sum over its ranks
 * where it starts one (layer_ops_t.forward_finish does the rest). */
static void run_forward_start(model_t *m, int i, int off, int B) {
  ev_raise(EV_WORK, EV_FORWARD, i);
  layer_ctx_t c = node_ctx(m, i, off, B, 0);
  layer_ops_of(m->g->l[i].kind)->forward(&m->g->l[i], &c);
  act16_store(m, i, off, B); /* a held output (none has a sum to finish: act16.h) */
  act_pass_wrote(m, i, off, B);
  if (m->epi[i] > 0) act16_store(m, m->epi[i], off, B);
}

/* Whether node i has a second phase, after a sum over its group: a layer with finish ops and a group. */
static int has_finish(const model_t *m, int i, int backward) {
  const layer_ops_t *ops = layer_ops_of(m->g->l[i].kind);
  return (backward ? ops->backward_finish : ops->forward_finish) && m->group && m->group[i];
}

static void run_finish(model_t *m, int i, int off, int B, int backward) {
  if (!has_finish(m, i, backward)) return;
  ev_raise(EV_WORK, backward ? EV_BACKWARD : EV_FORWARD, i); /* back at the node's work after the sum */
  layer_ctx_t c = node_ctx(m, i, off, B, backward);
  const layer_ops_t *ops = layer_ops_of(m->g->l[i].kind);
  (backward ? ops->backward_finish : ops->forward_finish)(&m->g->l[i], &c);
}

static void run_forward(model_t *m, int i, int off, int B) {
  run_forward_start(m, i, off, B);
  run_finish(m, i, off, B, 0);
}

int model_node_runs(const model_t *m, int i, int backward) {
  if (m->fused[i] < 0) return 0; /* a ReLU fused into the node before it, which runs it both ways */
  if (!backward) return m->epi[i] >= 0;
  return m->dact[i] && !(m->epi[i] < 0 && m->g->l[i].kind == LAYER_GELU);
}

void model_forward_node_start(model_t *m, int i, int off, int B) {
  if (model_node_runs(m, i, 0)) run_forward_start(m, i, off, B);
}

void model_forward_node_finish(model_t *m, int i, int off, int B) {
  if (model_node_runs(m, i, 0)) run_finish(m, i, off, B, 0);
}

void model_forward_node(model_t *m, int i, int off, int B) {
  model_forward_node_start(m, i, off, B);
  model_forward_node_finish(m, i, off, B);
}

/* Re-fill the interior lo..hi-1 of the segment that node hi ends, on samples [off, off+B), before
 * hi's backward: the interior's gradients from zero (their buffers served the segment after it),
 * its forward re-run from the kept inputs. A node whose forward ran in the epilogue of a node
 * before the segment (the layer norm after the previous block's residual add) runs standalone. */
static void refill_segment(model_t *m, int hi, int off, int B) {
  const int lo = m->seg_first[hi];
  for (int i = lo; i < hi; i++) model_zero_act_grad(m, i, off, B);
  for (int i = lo; i < hi; i++) {
    if (m->fused[i] < 0 || (m->epi[i] < 0 && -m->epi[i] >= lo)) continue; /* run by a node of the segment */
    run_forward(m, i, off, B);
    if (m->reforward_hook) m->reforward_hook(m->reforward_arg, i, off, B);
  }
}

void model_backward_node_start(model_t *m, int i, int off, int B) {
  if (m->seg_first[i] > 0) refill_segment(m, i, off, B);
  if (!model_node_runs(m, i, 1)) return;
  ev_raise(EV_WORK, EV_BACKWARD, i);
  layer_ctx_t c = node_ctx(m, i, off, B, 1);
  layer_ops_of(m->g->l[i].kind)->backward(&m->g->l[i], &c);
}

void model_backward_node_finish(model_t *m, int i, int off, int B) {
  if (model_node_runs(m, i, 1)) run_finish(m, i, off, B, 1);
}

void model_backward_node(model_t *m, int i, int off, int B) {
  model_backward_node_start(m, i, off, B);
  model_backward_node_finish(m, i, off, B);
}

int model_classes(const model_t *m) {
  const graph_t *g = m->g;
  return (int)(shape_size(g->l[graph_output(g)].out) / (size_t)g->targets_per_sample);
}

/* Where samples [off, off+B) of the output's loss are: its logits (masked first), targets and (with
 * a grad_scale) the logits' gradient, rows x V. */
typedef struct loss_rows {
  int rows, V;
  float *logits, *targets, *dlogits;
} loss_rows_t;

static loss_rows_t loss_rows(model_t *m, int off, int B, float grad_scale) {
  const graph_t *g = m->g;
  int out = graph_output(g), tps = g->targets_per_sample, V = model_classes(m);
  if (grad_scale != 0.0f && !m->dact[out])
    surge_runtime_error("the loss's gradient asked of a model without gradients (model_init_forward; a bug)");
  size_t osz = shape_size(g->l[out].out);
  loss_rows_t r = {B * tps, V, m->act[out] + (size_t)off * osz, m->targets + (size_t)off * tps,
                   grad_scale != 0.0f ? m->dact[out] + (size_t)off * osz : NULL};
  logit_mask_apply(m->be, m->logit_mask, r.rows, V, r.logits);
  return r;
}

double model_loss(model_t *m, int off, int B, float grad_scale) {
  loss_rows_t r = loss_rows(m, off, B, grad_scale);
  return m->be->xent_fwd_bwd(r.rows, r.V, r.logits, r.targets, grad_scale, r.dlogits);
}

void model_loss_add(model_t *m, int off, int B, float grad_scale, double *acc) {
  loss_rows_t r = loss_rows(m, off, B, grad_scale);
  m->be->xent_add(r.rows, r.V, r.logits, r.targets, grad_scale, r.dlogits, acc);
}

long model_correct(const model_t *m, int off, int B) {
  const graph_t *g = m->g;
  int out = graph_output(g), tps = g->targets_per_sample;
  size_t osz = shape_size(g->l[out].out);
  logit_mask_apply(m->be, m->logit_mask, B * tps, model_classes(m), m->act[out] + (size_t)off * osz);
  return m->be->count_correct(B * tps, model_classes(m), m->act[out] + (size_t)off * osz,
                              m->targets + (size_t)off * tps);
}

void model_forward(model_t *m, int B) {
  for (int i = 1; i < m->g->n; i++) model_forward_node(m, i, 0, B);
}

void model_backward(model_t *m, int B) {
  for (int i = m->g->n - 1; i >= 1; i--) model_backward_node(m, i, 0, B);
}
