/* A layer is one node of the model graph. Each kind provides shape inference, initialisation,
 * forward and backward through a layer_ops_t table; all numerical work goes through the backend.
 *
 * Activations are (B, per-sample shape) row-major, so any sample range is one contiguous slice and
 * the burst executor can run a layer on a subset of a batch. Backward ACCUMULATES (+=) into input
 * gradients (forks in the graph sum their consumers' gradients) and into parameter gradients (ranks
 * and micro-batches sum). The engine zeroes both once per step. */
#ifndef SURGE_LAYER_H
#define SURGE_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/rng.h"
#include "core/shape.h"

typedef enum layer_kind {
  LAYER_INPUT = 0,   /* the batch input: images (C,H,W) or token ids (T) */
  LAYER_LINEAR,      /* y = x W^T + b over the last dim: (..., in) -> (..., out); W (out, in) */
  LAYER_CONV2D,      /* (C,H,W) -> (O,OH,OW); W (O, C, kh, kw), b (O); stride, padding ph, pw */
  LAYER_MAXPOOL2D,   /* (C,H,W) -> (C,OH,OW); kernel k, stride s, padding pad <= k/2 (never chosen) */
  LAYER_AVGPOOL,     /* global average pool: (C,H,W) -> (C) */
  LAYER_FLATTEN,     /* (C,H,W) -> (C*H*W), PyTorch's (C,H,W) order */
  LAYER_RELU,
  LAYER_GELU,        /* tanh approximation */
  LAYER_ADD,         /* residual join: y = a + b, two inputs of one shape */
  LAYER_LAYERNORM,   /* over the last dim; weight, bias (C); eps */
  LAYER_EMBED,       /* token ids (T) -> (T,C): wte (V,C) + wpe (context,C) */
  LAYER_ATTENTION,   /* causal multi-head self-attention core: qkv (T,3C) -> (T,C); heads */
  LAYER_TIED_LINEAR, /* logits = x wte^T: (T,C) -> (T,V), weight shared with an LAYER_EMBED node */
  LAYER_BATCHNORM,   /* batch norm per channel: (C,H,W) (BatchNorm2d) or (C) (BatchNorm1d); weight,
                      * bias (C); buffers running_mean, running_var (C); eps, momentum */
  LAYER_DROPOUT,     /* zeroes each element with probability p, scales the rest by 1/(1-p); training only */
  LAYER_AVGPOOL2D,   /* windowed average pool (C,H,W) -> (C,OH,OW); kernel k, stride s, zero padding
                      * pad <= k/2 counted in the divisor (PyTorch's count_include_pad) */
  LAYER_CONCAT,      /* channel concatenation of two images (C0,H,W), (C1,H,W) -> (C0+C1,H,W) (more
                      * parts: a chain of them) */
  LAYER_KIND_COUNT
} layer_kind_t;

#define LAYER_NAME_MAX 40
#define LAYER_MAX_IN 2
#define LAYER_MAX_PARAMS 2

/* Initialisation schemes, chosen per model (as mature frameworks do). */
typedef enum init_scheme {
  INIT_KAIMING_UNIFORM = 0, /* PyTorch default for Linear/Conv2d: U(+-1/sqrt(fan_in)) for W and b */
  INIT_NORMAL_002,          /* GPT-2: N(0, 0.02) weights and embeddings, zero biases */
} init_scheme_t;

/* A node's tensor-parallel role (Megatron-LM's split, used by the 3d layout in src/pipe/): how its
 * parameters split over a pipeline stage's tensor-parallel shards and which sum its boundary needs.
 * The model's builder sets it (nn/zoo.c); the executor's sums, the gradient norm and checkpoints
 * read it, never the node's name. Layouts without tensor parallelism ignore it. */
typedef enum layer_role {
  ROLE_REPLICATED = 0, /* parameters whole on every shard; no sum at the node (norms, elementwise) */
  ROLE_COLUMN,         /* output features split: every parameter's rows, in role_blocks equal blocks
                        * each split alike (q, k, v: 3); the input's gradient summed over the shards */
  ROLE_ROW,            /* input features split: the weight's columns; the bias on shard 0 only; the
                        * output summed over the shards */
  ROLE_VOCAB,          /* an embedding's vocabulary split: the table's rows; the position table on
                        * shard 0 only; the output summed over the shards */
} layer_role_t;

typedef struct layer_param_desc {
  char suffix[16]; /* "weight", "bias" */
  int ndim;
  int d[4];
} layer_param_desc_t;

typedef struct layer {
  layer_kind_t kind;
  char name[LAYER_NAME_MAX]; /* e.g. "blocks.0.qkv"; parameter tensors are "<name>.<suffix>" */
  int nin;
  int in[LAYER_MAX_IN];      /* indices of input nodes (earlier in topological order) */
  shape_t in_shape[LAYER_MAX_IN];
  shape_t out;               /* per-sample output shape (set by infer) */

  /* hyperparameters (those the kind uses) */
  int out_features;                     /* linear */
  int out_channels, kernel, stride, pad; /* conv2d (kernel and pad: its height's); the pools: kernel,
                                          * stride, pad (square) */
  int kernel_w, pad_w;                  /* conv2d: the kernel's width and the columns' padding */
  int heads;                            /* attention */
  int vocab, context;                   /* embed */
  int vocab_lo;                         /* embed: id of the table's first row (a vocabulary-parallel
                                         * shard holds ids [vocab_lo, vocab_lo + vocab); 0) */
  int no_positions;                     /* embed: 1 = no position table (another rank adds it) */
  int bias;                             /* linear, conv2d: 1 = has a bias */
  float eps;                            /* layernorm, batchnorm */
  float momentum;                       /* batchnorm: running = (1 - momentum) running + momentum batch */
  int bn_local;                         /* batchnorm: statistics of each rank's samples only (DDP's
                                         * default: the maths changes with the rank count); 0: of the
                                         * whole batch the node runs on, summed over its ranks */
  float p;                              /* dropout: the probability of zeroing an element */
  int tied_param;                       /* tied linear: slab tensor index of the shared weight */
  layer_role_t role;                    /* tensor-parallel role (ROLE_REPLICATED unless set) */
  int role_blocks;                      /* ROLE_COLUMN: equal blocks of the rows split alike (1) */

  /* parameters: described by infer, placed in the slab by the graph */
  int np;
  layer_param_desc_t pdesc[LAYER_MAX_PARAMS];
  int param[LAYER_MAX_PARAMS]; /* slab tensor indices (set by the graph) */

  /* buffers: state that is not trained (batch norm's running statistics), in the graph's buffer
   * slab (graph_t.bufs), kept in checkpoints and model.h5; described by infer like parameters */
  int nb;
  layer_param_desc_t bdesc[LAYER_MAX_PARAMS];
  float bfill[LAYER_MAX_PARAMS]; /* each buffer's initial value (running_var: 1) */
  int buf[LAYER_MAX_PARAMS];     /* buffer slab tensor indices (set by the graph) */

  size_t keep;           /* floats forward keeps for backward per call, whatever its B (batch norm's
                            mean and rstd) */
  size_t group_floats;   /* floats per rank of the sum over the node's rank set forward needs (the
                            node's layer_group_t buffer holds ranks times them) */
  int needs_grad;        /* set by the graph: this node or one before it has parameters, so the
                            gradient of this node's output is needed (else backward skips it) */
  size_t aux_per_sample; /* floats forward saves for backward, per sample */
  size_t scratch;        /* temporary floats needed by one forward or backward call (any B) ... */
  size_t scratch_per_sample; /* ... plus these per sample of the call (a whole batch in one backend call) */
  double flops_per_sample; /* forward FLOPs per sample (multiply-add = 2); backward is about 2x */
} layer_t;

/* The ranks that run a node on the other samples of its batch (burst: its rank set; dp: all of a
 * job's ranks), as a layer whose maths spans the batch (batch norm) sees them: set by the layout
 * (model_t.group), one per node, NULL when the node runs alone. start begins adding v[0..n)
 * (backend memory) over the ranks in place (collective over them; metered by the layout) and
 * returns at once; wait completes it (v then holds the sum). A layer that sums starts at the end of
 * its forward or backward op and waits at the start of the matching finish op (layer_ops_t), so the
 * layout may run other nodes in between; at most one sum of a node is in flight. buf holds ranks *
 * the node's group_floats (backend memory), the node's own. */
typedef struct layer_group {
  int ranks, rank;
  int batch; /* samples of the node's whole batch: the sum over the ranks of their calls' B */
  void (*start)(void *arg, float *v, size_t n);
  void (*wait)(void *arg);
  void *arg;
  float *buf;
} layer_group_t;

/* Everything a forward or backward call sees. Pointers are backend memory. */
typedef struct layer_ctx {
  const backend_t *be;
  int B;                          /* samples in this call */
  const float *x[LAYER_MAX_IN];   /* inputs, (B, in_shape) */
  float *y;                       /* output, (B, out) */
  float *aux;                     /* (B, aux_per_sample): written by forward, read by backward */
  float *scratch;                 /* layer_scratch_floats(layer, B) floats */
  int fuse_relu;                  /* a conv2d or add with its ReLU fused (model_init_fused): forward applies
                                   * the ReLU to y; backward gets the ReLU output's gradient as dy and runs
                                   * the ReLU's backward on the way */
  const float *w[LAYER_MAX_PARAMS]; /* parameter tensors */
  const uint16_t *w16[LAYER_MAX_PARAMS]; /* their bfloat16 copies (model_weights16: a forward-only model whose
                                          * backend's context says weights16_rows), or NULL */
  float *st[LAYER_MAX_PARAMS];    /* buffers (running statistics): forward in training updates them */
  float *keep;                    /* layer_t.keep floats: forward writes, backward reads */
  int train;                      /* 1: training (batch statistics, dropout), 0: evaluation */
  const layer_group_t *group;     /* the node's rank set, or NULL (alone) */
  /* the randomness of a step (dropout): host memory; ids NULL: the rows' positions are their ids */
  const uint64_t *ids;            /* (B) global sample ids of the call's rows */
  uint64_t seed, step;            /* the run's seed and the step's number */
  int node;                       /* this node's index in the graph */
  /* a node that runs the node after it in its own epilogue (model_init_fused): a linear the GELU
   * that is its only consumer, an add a layer norm it feeds. NULL / unset otherwise. */
  const layer_t *epi;             /* that node */
  float *epi_y;                   /* its output (B, epi->out): forward writes it */
  float *epi_aux;                 /* its saved state (the layer norm's stats), forward writes it */
  const float *epi_w[LAYER_MAX_PARAMS]; /* its parameters */
  float *epi_grad;                /* backward of a linear + GELU: dy is the GELU output's gradient, and this
                                   * node's own output gradient (B, out) is written here on the way */
  /* backward only */
  const float *dy;                /* (B, out) */
  float *dx[LAYER_MAX_IN];        /* += ; NULL when that input needs no gradient */
  int dx_write[LAYER_MAX_IN];     /* dx[k] is to be overwritten, not added into: this node is its
                                   * producer's only consumer and the model does not zero it (only
                                   * for layers whose ops say writes_dx) */
  float *dw[LAYER_MAX_PARAMS];    /* += */
} layer_ctx_t;

typedef struct layer_ops {
  const char *kind_name;
  /* Check the input shapes (l->in_shape[0..nin)) and hyperparameters; set l->out, l->np and
   * l->pdesc, aux_per_sample, scratch and flops_per_sample. Return 0, or -1 with a one-line reason
   * in err (e.g. "conv2d: kernel 5 larger than input 3x3 with padding 0"). */
  int (*infer)(layer_t *l, char *err, size_t errlen);
  /* Initialise this layer's parameters (host memory, w[k] has pdesc[k] shape). */
  void (*init)(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme);
  void (*forward)(const layer_t *l, const layer_ctx_t *c);
  void (*backward)(const layer_t *l, const layer_ctx_t *c);
  int writes_dx; /* backward honours layer_ctx_t.dx_write (0: it always adds into dx) */
  /* NULL, or the rest of forward / backward after the node's sum over its ranks (c->group): forward
   * and backward then end by starting the sum, and these, called with the same context once other
   * nodes may have run, wait for it and finish the pass; without a group they do nothing (forward and
   * backward did it all). Only the model calls them (model_*_node_finish), always. */
  void (*forward_finish)(const layer_t *l, const layer_ctx_t *c);
  void (*backward_finish)(const layer_t *l, const layer_ctx_t *c);
  /* what lets a training model hold an activation in bfloat16 in precision = bf16 (nn/act16.h): */
  int rounds_input;  /* forward and backward read input 0 only rounded to bfloat16 in bf16: as a matrix product's
                      * operand (linear, tied linear, attention: its queries, keys and values) or GELU's */
  int output_unread; /* backward never reads the node's own output (c->y) unless the node runs another's forward
                      * in its epilogue, and then only as that node's input (layer norm, GELU, linear) */
  int inputs_unread; /* backward never reads the node's inputs (c->x): the add; with output_unread on the producer,
                      * an output only the forward reads (nn/act_pass.h) */
  int output_rounded; /* backward reads the node's own output only rounded to bfloat16 in bf16: attention, whose
                       * D = rowsum(dY Y) is a product of rounded operands (backend.h) */
} layer_ops_t;

/* The scratch one forward or backward call of l on B samples needs. */
size_t layer_scratch_floats(const layer_t *l, int B);

/* The ops of a kind (never NULL for a valid kind). */
const layer_ops_t *layer_ops_of(layer_kind_t kind);
const char *layer_kind_name(layer_kind_t kind);

/* One ops table per kind, each in its own source file. */
extern const layer_ops_t layer_input_ops, layer_linear_ops, layer_conv2d_ops, layer_maxpool2d_ops,
    layer_avgpool_ops, layer_flatten_ops, layer_relu_ops, layer_gelu_ops, layer_add_ops,
    layer_layernorm_ops, layer_embed_ops, layer_attention_ops, layer_tied_linear_ops, layer_batchnorm_ops,
    layer_dropout_ops, layer_avgpool2d_ops, layer_concat_ops;

/* Shared initialiser: Kaiming-uniform (PyTorch default, bound 1/sqrt(fan_in) for weight and bias)
 * or N(0, 0.02) weights with zero bias, for a weight of n_w floats and a bias of n_b floats. */
void layer_init_weight_bias(float *w, size_t n_w, float *b, size_t n_b, int fan_in, rng_t *rng,
                            init_scheme_t scheme);

#endif
