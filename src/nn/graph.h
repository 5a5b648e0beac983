/* A model is a DAG of layers in topological order (node 0 is the input). Adding a node runs its
 * shape inference at once, so a model that does not fit together fails at build time with a message
 * naming the layer. Parameters of all nodes are laid out in one slab (core/slab.h). */
#ifndef SURGE_GRAPH_H
#define SURGE_GRAPH_H

#include <stdio.h>

#include "core/slab.h"
#include "nn/layer.h"

typedef struct graph {
  int n, cap;
  layer_t *l;             /* l[0] is LAYER_INPUT */
  slab_layout_t params;   /* parameter tensors of all nodes, in node order */
  slab_layout_t bufs;     /* buffers (state that is not trained: batch norm's running statistics), in
                           * node order; owner as in params */
  init_scheme_t init;
  int targets_per_sample; /* 1 for classification, T for next-token prediction */
  int classes_valid;      /* outputs at or beyond this are padding, kept out of the loss and the
                           * gradients (nn/logit_mask.h); 0: every output is a class */
  int recompute;          /* recompute_mode_t (nn/recompute.h): which activations the engine drops after
                           * the forward pass and re-runs in the backward (a training run sets it from
                           * [train] recompute before a layout binds the graph); 0: none */
  char err[256];          /* reason of the last failed add */
} graph_t;

/* Fill a host slab of g->bufs with every buffer's initial value (batch norm: running_var 1). */
void graph_init_bufs(const graph_t *g, float *host);

/* Start a graph whose input is one sample of shape `in` (tokens: shape1(T)). */
void graph_init(graph_t *g, shape_t in, init_scheme_t init);
void graph_free(graph_t *g);

/* Append a node from a prototype (kind, name, inputs, hyperparameters); infers its shape and adds
 * its parameters to the slab. Returns the node index, or -1 with g->err set. Once an add failed,
 * later adds return -1 too, so a builder can check once at the end. */
int graph_add(graph_t *g, layer_t proto);
/* The one consumer of node i, or -1 when it has none or several (input slots count). */
int graph_sole_consumer(const graph_t *g, int i);

/* Builders (return the new node index, or -1 on error). x, a, b are node indices. */
int nn_linear(graph_t *g, int x, int out_features, int bias, const char *name);
int nn_conv2d(graph_t *g, int x, int out_channels, int kernel, int stride, int pad, const char *name);
/* The same with bias = 0: no bias (a batch norm after it shifts instead). */
int nn_conv2d_bias(graph_t *g, int x, int out_channels, int kernel, int stride, int pad, int bias, const char *name);
/* A kh x kw kernel padded ph rows and pw columns each side (Inception's 1x7: kh 1, kw 7, ph 0, pw 3). */
int nn_conv2d_rect(graph_t *g, int x, int out_channels, int kh, int kw, int stride, int ph, int pw, int bias,
                   const char *name);
int nn_maxpool2d(graph_t *g, int x, int kernel, int stride, int pad, const char *name);
/* Global average pool (C,H,W) -> (C); windowed k x k, stride, padding (count_include_pad) -> (C,OH,OW). */
int nn_avgpool(graph_t *g, int x, const char *name);
int nn_avgpool2d(graph_t *g, int x, int kernel, int stride, int pad, const char *name);
/* Channel concatenation of images a (C0,H,W) and b (C1,H,W) -> (C0+C1,H,W). */
int nn_concat(graph_t *g, int a, int b, const char *name);
int nn_flatten(graph_t *g, int x, const char *name);
int nn_relu(graph_t *g, int x, const char *name);
int nn_gelu(graph_t *g, int x, const char *name);
int nn_add(graph_t *g, int a, int b, const char *name);
int nn_layernorm(graph_t *g, int x, float eps, const char *name);
/* Batch norm over the channels of an image (C,H,W) or of features (C) (layer_batchnorm.c); local:
 * statistics of each rank's samples only (layer_t.bn_local). */
int nn_batchnorm(graph_t *g, int x, int local, const char *name);
/* The same with its eps (PyTorch's default 1e-5; torchvision's Inception-v3 1e-3). */
int nn_batchnorm_eps(graph_t *g, int x, int local, float eps, const char *name);
/* Dropout with probability p (layer_dropout.c). */
int nn_dropout(graph_t *g, int x, float p, const char *name);
int nn_embed(graph_t *g, int x, int vocab, int context, int channels, const char *name);
/* A vocabulary-parallel shard of an embedding: the table rows of ids [vocab_lo, vocab_lo + vocab),
 * with the position table only when positions != 0 (layer_embed.c). */
int nn_embed_shard(graph_t *g, int x, int vocab, int vocab_lo, int positions, int context, int channels,
                   const char *name);
int nn_attention(graph_t *g, int qkv, int heads, const char *name);
/* logits = x W^T where W is the "wte" tensor of embedding node `embed`. */
int nn_tied_linear(graph_t *g, int x, int embed, const char *name);

/* Give node x the tensor-parallel role `role` (role_blocks `blocks` >= 1); returns x (-1 stays -1),
 * so a builder can wrap an add: nn_role(g, nn_linear(...), ROLE_COLUMN, 3). */
int nn_role(graph_t *g, int x, layer_role_t role, int blocks);

/* Output node (the last one) and its per-sample shape. */
static inline int graph_output(const graph_t *g) { return g->n - 1; }
/* Forward FLOPs per sample of the whole model. */
double graph_flops_per_sample(const graph_t *g);
/* FLOPs per sample of a training step as the engine runs it: forward, plus one forward's worth for
 * the input gradient (only where it is needed) and one for the weight gradient (layers with weights). */
double graph_train_flops_per_sample(const graph_t *g);
/* Node i's part of it. */
double graph_node_train_flops(const graph_t *g, int i);
/* Print a table of nodes: index, name, kind, inputs, output shape, parameters, MFLOP/sample. */
void graph_print(const graph_t *g, FILE *f);

#endif
