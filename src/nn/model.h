/* The engine: a graph bound to a backend with its parameter, gradient and activation memory.
 * Nodes run one at a time on rows [off, off+B) of the batch buffers; model_forward/backward run all
 * nodes on rows [0, B).
 *
 * Wiring: node i reads input slot k from in[i][k] and adds that input's gradient into din[i][k].
 * By default these are the producer's act and dact (model_wire_default); a layout may point them at
 * buffers of its own (the burst executor's staging, when a node's samples are not the ones its
 * producer computed on this rank). */
#ifndef SURGE_MODEL_H
#define SURGE_MODEL_H

#include <stdint.h>

#include "nn/graph.h"

/* Floats after the gradient slab: a step's loss and stop request ride there on the gradient
 * reduction (sync/gradsync.h, side slots), so they need no collective of their own. */
#define MODEL_GRAD_SIDE 3

/* Rows [off, off + B) of node `node`'s output: what a shared activation buffer holds (node 0: nothing). */
typedef struct model_rows {
  int node, off, B;
} model_rows_t;

/* Float buffers for activations held in bfloat16 (nn/act16.h): a call reads at most one held input and writes a
 * held output and the held output of the node its epilogue runs. */
enum { MODEL_ACT_F32_MAX = 3 };

typedef struct model {
  const graph_t *g;
  const backend_t *be;
  int B_cap;      /* samples the buffers hold */
  float *params;  /* slab (g->params layout), backend memory */
  float *grads;   /* same layout, then MODEL_GRAD_SIDE spare floats (gradsync's side slots) */
  float **act;    /* per node: (B_cap, out); act[0] is the input batch; NULL where held in bfloat16 (act16) */
  float **dact;   /* per node: gradient of act; NULL where not needed (!needs_grad, e.g. the input) */
  float **aux;    /* per node: (B_cap, aux_per_sample) or NULL */
  float *(*in)[LAYER_MAX_IN];  /* per node, per input slot: (B_cap, input shape) read by forward */
  float *(*din)[LAYER_MAX_IN]; /* per node, per input slot: its gradient (+=), or NULL */
  int *fused;     /* per node: a conv2d or add whose ReLU is fused into it: the ReLU node's index;
                   * that ReLU node: -1; else 0 (model_init_fused) */
  int *writer;    /* per node: the consumer whose backward overwrites the node's gradient whole, its
                   * first (the highest-numbered: a gradient's adders run in decreasing node order
                   * in every layout), so it is never zeroed; the output: itself where the loss
                   * writes it; else 0: zeroed once a step and added into (model_init_fused) */
  int *epi;       /* per node: j > 0 where this node runs node j's forward in its epilogue (a linear
                   * its GELU, both ways; an add a layer norm it feeds, forward only); node j: -(this
                   * node); else 0 (model_init_fused) */
  int grad_in_place; /* the loss writes the logits' gradient over the logits (one buffer for both) */
  float *scratch; /* max over nodes of layer scratch */
  float *targets; /* (B_cap, targets_per_sample) class ids as float */
  float *logit_mask; /* (classes) padded outputs' mask (g->classes_valid), or NULL */
  size_t act_floats; /* floats held by act + dact + aux + scratch (memory report) */
  float *bufs;    /* the buffer slab (g->bufs layout: running statistics), backend memory */
  float **keep;   /* per node: (layer keep) floats forward leaves for backward, or NULL */
  /* set by a layout (defaults: training, alone, ids = positions, seed and step 0): */
  int train;      /* 1: forward in training mode (batch statistics, dropout); 0: evaluation */
  const layer_group_t **group; /* NULL, or per node its rank set as layers see it (NULL: alone) */
  const uint64_t *ids; /* NULL, or the step's global sample ids (host memory) ... */
  const int *id_lo;    /* ... of which node i's row 0 is ids[id_lo[i]] (NULL: ids[0]) */
  uint64_t seed, step; /* the run's seed and the step's number (dropout's masks) */
  int own_params, own_grads; /* whether the model allocated them (model_init_on) */
  /* activation recomputation (g->recompute, nn/recompute.h), planned by model_init_on: */
  int *seg_first; /* per node: lo where the node ends a recomputed segment [lo, node], else 0: its
                   * backward first zeroes the interior's gradients and re-runs the interior's forward
                   * on the same rows */
  int *shares;    /* per node: the node of an earlier segment whose act, dact and aux it uses, else 0 */
  /* set by a layout: called after each re-run forward of a node (the sums a layout puts at node
   * boundaries: the 3d layout's tensor-parallel one), or NULL */
  void (*reforward_hook)(void *arg, int node, int off, int B);
  void *reforward_arg;
  /* buffers shared by nodes whose tensors are never live at once: a training model's activation
   * gradients (model_init_on's order), a forward-only model's activations (model_init_forward) */
  float **pool;   /* [npool] the shared buffers */
  int npool;
  int *pooled;    /* per node: MODEL_POOLED_* flags, where its tensors live in shared buffers */
  int nadd_shared; /* add inputs whose gradient is the add's own buffer (nn/grad_alias.h): no copy */
  float *aux_pool; /* forward only: the one buffer the nodes' saved state (aux) takes turns in, or NULL */
  uint16_t *params16; /* forward only: the parameters as bfloat16 (model_weights16), backend memory, or NULL */
  /* activations held in bfloat16 (nn/act16.h: a training model where the context says act16): */
  uint16_t **act16;  /* per node: its activation (B_cap, out) as bfloat16, act[i] then NULL; else NULL */
  float *act_f32[MODEL_ACT_F32_MAX]; /* nact_f32 buffers of floats the size of the largest held activation: a held
                                      * node's output as its forward writes it (then rounded into act16), or held
                                      * rows widened for the layer that reads them */
  model_rows_t act_f32_of[MODEL_ACT_F32_MAX]; /* what each holds: floats that round to that node's held rows (what
                                               * its readers use), so a reader in the forward takes them as they are */
  unsigned act_f32_used[MODEL_ACT_F32_MAX]; /* when each was last given to a call (act_f32_clock's count) */
  unsigned act_f32_clock;
  unsigned act_f32_busy; /* bit b: buffer b is given to the call being built */
  int nact_f32;          /* buffers: the most one call reads or writes (act16_plan) */
  int nact16;        /* nodes held so */
  /* activations only the forward reads (nn/act_pass.h: a training model where the layout allows) */
  float *act_pass;   /* the buffer they take turns in (the largest of them), or NULL; act[i] of each is it */
  model_rows_t act_pass_of; /* whose rows it holds */
  int npass;         /* nodes passing so */
} model_t;

/* Whether node i's activation is held in bfloat16 (model_t.act16). */
static inline int model_held16(const model_t *m, int i) { return m->act16 && m->act16[i]; }

/* Whether a recomputed segment's buffers involve node i (model_t.shares): it borrows another's, or lends its own. */
static inline int model_segment_shared(const model_t *m, int i) {
  if (m->shares[i]) return 1;
  for (int j = 1; j < m->g->n; j++)
    if (m->shares[j] == i) return 1;
  return 0;
}

/* model_t.pooled: node i's gradient is in a shared buffer (model_init_on's order), its activation
 * is (model_init_forward's pool, or a training model's act_pass: nn/act_pass.h), its saved state is the
 * forward-only model's aux_pool */
enum { MODEL_POOLED_GRAD = 1, MODEL_POOLED_ACT = 2, MODEL_POOLED_AUX = 4 };

void model_init(model_t *m, const graph_t *g, const backend_t *be, int B_cap);
/* model_init, fusing each conv2d or residual add with the ReLU that is its only consumer where
 * allowed(arg, node, relu) says so (and the forms below) (a layout allows it where both nodes run on the same samples):
 * the node's forward applies the ReLU and writes the ReLU node's buffer, which both share (one
 * pass over the output fewer, and one activation and one gradient buffer fewer, never allocated);
 * its backward takes the ReLU output's gradient and masks it by that output (> 0 exactly where
 * the ReLU's input is) on the way; the ReLU node itself does nothing either way. And where a
 * node's first consumer to run backward (the highest-numbered) is a layer that can overwrite its
 * input gradient (layer_ops_t.writes_dx: every kind that has an input gradient), reads the node
 * once, and allowed(arg, node, c) holds for every consumer c, that gradient is overwritten by it,
 * not zeroed first and added into (model_t.writer). Where allowed likewise (model_t.epi): a linear
 * whose only consumer is a GELU computes both (linear_gelu_fwd, keeping its own output, the
 * pre-activation, for gelu_bias_bwd's one pass); a residual add that feeds a layer norm computes the
 * norm too (add_layernorm_fwd). With allowed given, an output layer whose backward does not read
 * its output (linear, tied linear) shares its buffer with its gradient where allowed(arg, output,
 * output) says the layout's loss may write the gradient over the logits (model_t.grad_in_place).
 * Where g->recompute asks (nn/recompute.h), the segments it plans share their interiors' buffers
 * and are re-filled before their backward (model_t.seg_first); allowed then also says which nodes run on
 * the same samples (a segment must; NULL: all do), and a graph that cannot be recomputed so is an
 * input error. Returns the ReLU pairs fused. */
int model_init_fused(model_t *m, const graph_t *g, const backend_t *be, int B_cap,
                     int (*allowed)(void *arg, int node, int next), void *arg);
/* allowed() where every node runs on the same samples (one rank; data parallelism, where every node
 * runs on every rank): every fused form, epilogue and overwritten gradient, the logits' gradient in
 * place. */
int model_allow_all(void *arg, int node, int next);
/* A layout's backward pass for the model being planned (fusion, writers, epilogues and recomputed
 * segments are known, no buffer yet): the nodes of its phases in the order they run into bwd (room
 * for 2 (g->n - 1)), a node once, or twice when its finish comes later (pass_order.h); returns how
 * many. The layout must touch activation gradients only inside those phases. */
typedef int (*model_order_fn)(void *arg, const model_t *m, int *bwd);
/* model_backward's order: nodes n-1 down to 1, each once (a 3d stage's, one micro-batch at a time). */
int model_reverse_order(void *arg, const model_t *m, int *bwd);

/* model_init_fused on parameter and gradient slabs the caller provides (params: g->params.total
 * floats, grads: that + MODEL_GRAD_SIDE; backend memory), which the model uses and never frees
 * (node-shared memory, sync/node_sum.h); NULL: the model allocates that slab itself. With an order
 * (called with arg), gradients whose lives do not overlap in it share buffers (model_t.pool): those
 * their first consumer overwrites (model_t.writer, so never zeroed), other than the output's and
 * those inside recomputed segments (which share buffers already); model_t.act_floats counts the
 * shared buffers. NULL: a buffer per gradient. */
int model_init_on(model_t *m, const graph_t *g, const backend_t *be, int B_cap,
                  int (*allowed)(void *arg, int node, int next), void *arg, float *params, float *grads,
                  model_order_fn order);
/* A model that only runs forward (generation, evaluation): no gradient slab and no activation
 * gradients (model_t.grads and every dact NULL). It runs on one rank, so it fuses what
 * model_init_fused fuses where every pair is allowed (ReLUs, epilogues); its activations take turns
 * in shared buffers (nn/act_pool.h: the nodes run in order, 1 to n-1, and nothing reads an activation
 * after its last consumer's forward; only the input's and the output's stay whole), and the state
 * nodes save for a backward in one (model_t.aux_pool). So it holds the parameters and a few
 * activations. forward, the loss without a gradient (grad_scale 0) and model_correct run on it,
 * nothing backward. params: the caller's slab (never freed by the model), or NULL: its own. */
void model_init_forward(model_t *m, const graph_t *g, const backend_t *be, int B_cap, float *params);
/* A forward-only model whose backend's context says weights16_rows (cpu in precision = bf16): (re)makes the
 * parameters' bfloat16 copy (model_t.params16) from params, which the linear layers and the tied output
 * projection then give their products (linear_fwd's w16: the same results, half the bytes of the
 * weights read where the backend reads them once: its products of up to weights16_rows rows, a token
 * generated at a time). Call it once the parameters are in place, and again after they change;
 * elsewhere it does nothing. Returns whether the model has the copy. */
int model_weights16(model_t *m);
/* The plans model_init_fused makes where every pair is allowed (one rank: what surge-profile measures),
 * without a buffer: fused, epi and seg_first as model_t holds them (arrays of g->n the caller gives, or
 * NULL where one is not wanted); seg_first where g->recompute asks (a graph that cannot be recomputed so
 * is an input error). */
void model_fusion_plan(const graph_t *g, int *fused, int *epi, int *seg_first);
/* The ReLU node i may fuse with (its only consumer, after a conv2d or add i), or -1. */
int model_fusable_relu(const graph_t *g, int i);
void model_free(model_t *m);
/* Every input slot reads its producer's act and adds into its dact. */
void model_wire_default(model_t *m);

/* Initialise all parameters from the seed, and the buffers to their initial values; node i draws from its own stream (seed, i), so adding
 * a node never changes another node's initial weights. */
void model_init_params(model_t *m, uint64_t seed);
/* The same values into a host slab of g's layout (a layout that holds pieces of the model copies its
 * pieces from it). */
void graph_init_params(const graph_t *g, uint64_t seed, float *host);
/* Node i's parameters alone, the same values: w[k] holds its parameter k (g->params.t[l->param[k]]'s
 * floats), anywhere in memory. A layout that holds pieces of the model computes them a node at a time. */
void graph_init_layer(const graph_t *g, uint64_t seed, int i, float **w);

/* Copy a batch of B samples from host memory: x (B, input shape), y (B, targets_per_sample). */
void model_set_batch(model_t *m, const float *x_host, const float *y_host, int B);

/* Zero parameter gradients and activation gradients (once per step). */
void model_zero_grads(model_t *m);
/* The same with each node's activation gradient zeroed on its first rows[i] samples only (the
 * samples this rank holds at the node; 0: none): a burst rank zeroes what it uses. */
void model_zero_grads_rows(model_t *m, const int *rows);
/* Zero node i's activation gradient on samples [off, off+B) where it needs it (not one its first
 * consumer overwrites, model_t.writer): the once-a-step cost surge-profile charges to the node; a
 * 3d slot's rows when the slot is used again. */
void model_zero_act_grad(model_t *m, int i, int off, int B);

/* Run node i forward / backward on samples [off, off+B). The backward of a recomputed segment's last
 * node first re-fills the segment (model_t.seg_first). */
void model_forward_node(model_t *m, int i, int off, int B);
void model_backward_node(model_t *m, int i, int off, int B);
/* The same in two phases, for a layout that runs other nodes while a node's sum over its ranks
 * (model_t.group, layer_group_t) is in flight: _start runs the node up to where it starts that sum
 * (the whole node where it has none), _finish waits for it and does the rest. Every _start needs its
 * _finish before anything reads the node's output (forward) or its input gradients (backward), and
 * before a second _start of the node. */
void model_forward_node_start(model_t *m, int i, int off, int B);
void model_forward_node_finish(model_t *m, int i, int off, int B);
void model_backward_node_start(model_t *m, int i, int off, int B);
void model_backward_node_finish(model_t *m, int i, int off, int B);
/* Whether node i's forward (backward: 1) runs anything of its own: not a ReLU fused into the node
 * before it, nor a node run in another's epilogue (backward: a GELU its linear runs), nor (backward)
 * a node whose output needs no gradient. */
int model_node_runs(const model_t *m, int i, int backward);

/* Vocabulary (classes) of the output and rows of logits per sample. */
int model_classes(const model_t *m);

/* Softmax cross-entropy of the output on samples [off, off+B): returns the SUM of per-target
 * losses; writes d(loss)/d(logits) * grad_scale into the output's gradient when grad_scale != 0.
 * For a mean over a global batch of N targets, pass grad_scale = 1/N. */
double model_loss(model_t *m, int off, int B, float grad_scale);
/* model_loss with the sum added to *acc (one double of backend memory) instead of returned: on a
 * device nothing waits for it (the trainer reads the step's loss once, train.c). */
void model_loss_add(model_t *m, int off, int B, float grad_scale, double *acc);
/* Targets predicted correctly (argmax) on samples [off, off+B). */
long model_correct(const model_t *m, int off, int B);

/* Whole-batch helpers: all nodes on samples [0, B). */
void model_forward(model_t *m, int B);
void model_backward(model_t *m, int B);

/* Pointer to tensor t of a slab (params or grads). */
static inline float *model_tensor(float *slab, const graph_t *g, int t) { return slab + g->params.t[t].off; }

#endif
