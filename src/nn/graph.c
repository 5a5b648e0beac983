#include "nn/graph.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void graph_init(graph_t *g, shape_t in, init_scheme_t init) {
  memset(g, 0, sizeof *g);
  slab_layout_init(&g->params);
  slab_layout_init(&g->bufs);
  g->init = init;
  g->targets_per_sample = 1;
  g->cap = 16;
  g->l = xcalloc((size_t)g->cap, sizeof *g->l);
  layer_t *l = &g->l[0];
  l->kind = LAYER_INPUT;
  snprintf(l->name, sizeof l->name, "input");
  l->out = in;
  g->n = 1;
}

void graph_free(graph_t *g) {
  free(g->l);
  slab_layout_free(&g->params);
  slab_layout_free(&g->bufs);
  memset(g, 0, sizeof *g);
}

int graph_add(graph_t *g, layer_t proto) {
  if (g->err[0]) return -1;
  if (proto.kind <= LAYER_INPUT || proto.kind >= LAYER_KIND_COUNT) {
    snprintf(g->err, sizeof g->err, "layer %s: invalid kind %d", proto.name, (int)proto.kind);
    return -1;
  }
  for (int k = 0; k < proto.nin; k++) {
    if (proto.in[k] < 0 || proto.in[k] >= g->n) {
      snprintf(g->err, sizeof g->err, "layer %s: input %d refers to node %d, not an earlier node",
               proto.name, k, proto.in[k]);
      return -1;
    }
    proto.in_shape[k] = g->l[proto.in[k]].out;
  }
  char why[200] = "";
  if (layer_ops_of(proto.kind)->infer(&proto, why, sizeof why) != 0) {
    snprintf(g->err, sizeof g->err, "layer %s: %s", proto.name, why);
    return -1;
  }
  if (g->n == g->cap) {
    g->cap *= 2;
    g->l = xrealloc(g->l, (size_t)g->cap * sizeof *g->l);
  }
  int idx = g->n;
  for (int k = 0; k < proto.np; k++) {
    char full[SLAB_NAME_MAX];
    snprintf(full, sizeof full, "%s.%s", proto.name, proto.pdesc[k].suffix);
    proto.param[k] = slab_layout_add(&g->params, full, proto.pdesc[k].ndim, proto.pdesc[k].d, idx);
  }
  for (int k = 0; k < proto.nb; k++) {
    char full[SLAB_NAME_MAX];
    snprintf(full, sizeof full, "%s.%s", proto.name, proto.bdesc[k].suffix);
    proto.buf[k] = slab_layout_add(&g->bufs, full, proto.bdesc[k].ndim, proto.bdesc[k].d, idx);
  }
  if (proto.role_blocks < 1) proto.role_blocks = 1;
  proto.needs_grad = proto.np > 0 || proto.kind == LAYER_TIED_LINEAR;
  for (int k = 0; k < proto.nin; k++) proto.needs_grad |= g->l[proto.in[k]].needs_grad;
  g->l[idx] = proto;
  g->n++;
  return idx;
}

static layer_t proto1(layer_kind_t kind, int x, const char *name) {
  layer_t l;
  memset(&l, 0, sizeof l);
  l.kind = kind;
  l.nin = 1;
  l.in[0] = x;
  snprintf(l.name, sizeof l.name, "%s", name);
  return l;
}

int nn_role(graph_t *g, int x, layer_role_t role, int blocks) {
  if (x < 0 || x >= g->n) return -1;
  g->l[x].role = role;
  g->l[x].role_blocks = blocks > 0 ? blocks : 1;
  return x;
}

int nn_linear(graph_t *g, int x, int out_features, int bias, const char *name) {
  layer_t l = proto1(LAYER_LINEAR, x, name);
  l.out_features = out_features;
  l.bias = bias;
  return graph_add(g, l);
}

int nn_conv2d(graph_t *g, int x, int out_channels, int kernel, int stride, int pad, const char *name) {
  return nn_conv2d_bias(g, x, out_channels, kernel, stride, pad, 1, name);
}

int nn_conv2d_bias(graph_t *g, int x, int out_channels, int kernel, int stride, int pad, int bias, const char *name) {
  return nn_conv2d_rect(g, x, out_channels, kernel, kernel, stride, pad, pad, bias, name);
}

int nn_conv2d_rect(graph_t *g, int x, int out_channels, int kh, int kw, int stride, int ph, int pw, int bias,
                   const char *name) {
  layer_t l = proto1(LAYER_CONV2D, x, name);
  l.out_channels = out_channels;
  l.kernel = kh;
  l.kernel_w = kw;
  l.stride = stride;
  l.pad = ph;
  l.pad_w = pw;
  l.bias = bias;
  return graph_add(g, l);
}

/* a pool's prototype: kernel k x k, stride, padding */
static layer_t pool_proto(layer_kind_t kind, int x, int kernel, int stride, int pad, const char *name) {
  layer_t l = proto1(kind, x, name);
  l.kernel = kernel;
  l.stride = stride;
  l.pad = pad;
  return l;
}

int nn_maxpool2d(graph_t *g, int x, int kernel, int stride, int pad, const char *name) {
  return graph_add(g, pool_proto(LAYER_MAXPOOL2D, x, kernel, stride, pad, name));
}

int nn_avgpool2d(graph_t *g, int x, int kernel, int stride, int pad, const char *name) {
  return graph_add(g, pool_proto(LAYER_AVGPOOL2D, x, kernel, stride, pad, name));
}

int nn_avgpool(graph_t *g, int x, const char *name) { return graph_add(g, proto1(LAYER_AVGPOOL, x, name)); }
int nn_flatten(graph_t *g, int x, const char *name) { return graph_add(g, proto1(LAYER_FLATTEN, x, name)); }
int nn_relu(graph_t *g, int x, const char *name) { return graph_add(g, proto1(LAYER_RELU, x, name)); }
int nn_gelu(graph_t *g, int x, const char *name) { return graph_add(g, proto1(LAYER_GELU, x, name)); }

/* a two-input node's prototype */
static layer_t proto2(layer_kind_t kind, int a, int b, const char *name) {
  layer_t l = proto1(kind, a, name);
  l.nin = 2;
  l.in[1] = b;
  return l;
}

int nn_add(graph_t *g, int a, int b, const char *name) { return graph_add(g, proto2(LAYER_ADD, a, b, name)); }
int nn_concat(graph_t *g, int a, int b, const char *name) { return graph_add(g, proto2(LAYER_CONCAT, a, b, name)); }

int nn_layernorm(graph_t *g, int x, float eps, const char *name) {
  layer_t l = proto1(LAYER_LAYERNORM, x, name);
  l.eps = eps;
  return graph_add(g, l);
}

int nn_batchnorm(graph_t *g, int x, int local, const char *name) {
  return nn_batchnorm_eps(g, x, local, 0.0f, name); /* eps 0: the layer's default */
}

int nn_batchnorm_eps(graph_t *g, int x, int local, float eps, const char *name) {
  layer_t l = proto1(LAYER_BATCHNORM, x, name);
  l.bn_local = local;
  l.eps = eps;
  return graph_add(g, l);
}

int nn_dropout(graph_t *g, int x, float p, const char *name) {
  layer_t l = proto1(LAYER_DROPOUT, x, name);
  l.p = p;
  return graph_add(g, l);
}

void graph_init_bufs(const graph_t *g, float *host) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->l[i].nb; k++) {
      const slab_tensor_t *t = &g->bufs.t[g->l[i].buf[k]];
      for (size_t e = 0; e < t->n; e++) host[t->off + e] = g->l[i].bfill[k];
    }
}

int nn_embed(graph_t *g, int x, int vocab, int context, int channels, const char *name) {
  return nn_embed_shard(g, x, vocab, 0, 1, context, channels, name);
}

int nn_embed_shard(graph_t *g, int x, int vocab, int vocab_lo, int positions, int context, int channels,
                   const char *name) {
  layer_t l = proto1(LAYER_EMBED, x, name);
  l.vocab = vocab;
  l.vocab_lo = vocab_lo;
  l.no_positions = !positions;
  l.context = context;
  l.out_features = channels;
  return graph_add(g, l);
}

int nn_attention(graph_t *g, int qkv, int heads, const char *name) {
  layer_t l = proto1(LAYER_ATTENTION, qkv, name);
  l.heads = heads;
  return graph_add(g, l);
}

int nn_tied_linear(graph_t *g, int x, int embed, const char *name) {
  if (g->err[0]) return -1;
  if (embed < 0 || embed >= g->n || g->l[embed].kind != LAYER_EMBED) {
    snprintf(g->err, sizeof g->err, "layer %s: tied weight must come from an embedding node", name);
    return -1;
  }
  layer_t l = proto1(LAYER_TIED_LINEAR, x, name);
  l.tied_param = g->l[embed].param[0];
  l.vocab = g->l[embed].vocab;
  l.out_features = g->l[embed].out_features;
  return graph_add(g, l);
}

double graph_flops_per_sample(const graph_t *g) {
  double f = 0;
  for (int i = 0; i < g->n; i++) f += g->l[i].flops_per_sample;
  return f;
}

double graph_node_train_flops(const graph_t *g, int i) {
  const layer_t *l = &g->l[i];
  if (i == 0) return 0;
  int input_grad = 0;
  for (int k = 0; k < l->nin; k++) input_grad |= g->l[l->in[k]].needs_grad;
  int weight_grad = l->np > 0 || l->kind == LAYER_TIED_LINEAR;
  return l->flops_per_sample * (1 + input_grad + weight_grad);
}

double graph_train_flops_per_sample(const graph_t *g) {
  double f = 0;
  for (int i = 1; i < g->n; i++) f += graph_node_train_flops(g, i);
  return f;
}

void graph_print(const graph_t *g, FILE *f) {
  fprintf(f, "%4s  %-22s %-12s %-9s %-16s %10s %12s\n", "node", "name", "kind", "inputs", "output",
          "params", "MFLOP/sample");
  for (int i = 0; i < g->n; i++) {
    const layer_t *l = &g->l[i];
    char ins[32] = "-", shp[48];
    if (l->nin == 1) snprintf(ins, sizeof ins, "%d", l->in[0]);
    if (l->nin == 2) snprintf(ins, sizeof ins, "%d,%d", l->in[0], l->in[1]);
    size_t np = 0;
    for (int k = 0; k < l->np; k++) np += g->params.t[l->param[k]].n;
    fprintf(f, "%4d  %-22s %-12s %-9s %-16s %10zu %12.3f\n", i, l->name, layer_kind_name(l->kind), ins,
            shape_str(l->out, shp, sizeof shp), np, l->flops_per_sample / 1e6);
  }
  fprintf(f, "total parameters: %zu, forward MFLOP/sample: %.3f\n", g->params.total,
          graph_flops_per_sample(g) / 1e6);
}

int graph_sole_consumer(const graph_t *g, int i) {
  int who = -1;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++)
      if (g->l[j].in[k] == i) {
        if (who >= 0) return -1;
        who = j;
      }
  return who;
}
