#include "io/gpt2_map.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "nn/zoo.h"

const gpt2_tensor_info_t gpt2_tensors[GPT2_KINDS] = {
    [GPT2_WTE] = {"wte.weight", "wte.weight", "wte", 0, 0},
    [GPT2_WPE] = {"wte.pos", "wpe.weight", "wpe", 0, 0},
    [GPT2_LN1W] = {"blocks.%d.ln1.weight", "h.%d.ln_1.weight", "ln1w", 1, 0},
    [GPT2_LN1B] = {"blocks.%d.ln1.bias", "h.%d.ln_1.bias", "ln1b", 1, 0},
    [GPT2_QKVW] = {"blocks.%d.qkv.weight", "h.%d.attn.c_attn.weight", "qkvw", 1, 1},
    [GPT2_QKVB] = {"blocks.%d.qkv.bias", "h.%d.attn.c_attn.bias", "qkvb", 1, 0},
    [GPT2_PROJW] = {"blocks.%d.proj.weight", "h.%d.attn.c_proj.weight", "attprojw", 1, 1},
    [GPT2_PROJB] = {"blocks.%d.proj.bias", "h.%d.attn.c_proj.bias", "attprojb", 1, 0},
    [GPT2_LN2W] = {"blocks.%d.ln2.weight", "h.%d.ln_2.weight", "ln2w", 1, 0},
    [GPT2_LN2B] = {"blocks.%d.ln2.bias", "h.%d.ln_2.bias", "ln2b", 1, 0},
    [GPT2_FCW] = {"blocks.%d.fc.weight", "h.%d.mlp.c_fc.weight", "fcw", 1, 1},
    [GPT2_FCB] = {"blocks.%d.fc.bias", "h.%d.mlp.c_fc.bias", "fcb", 1, 0},
    [GPT2_FCPROJW] = {"blocks.%d.fcproj.weight", "h.%d.mlp.c_proj.weight", "fcprojw", 1, 1},
    [GPT2_FCPROJB] = {"blocks.%d.fcproj.bias", "h.%d.mlp.c_proj.bias", "fcprojb", 1, 0},
    [GPT2_LNFW] = {"lnf.weight", "ln_f.weight", "lnfw", 0, 0},
    [GPT2_LNFB] = {"lnf.bias", "ln_f.bias", "lnfb", 0, 0},
};

int gpt2_shape(const gpt2_dims_t *d, gpt2_kind_t k, int dims[2]) {
  int C = d->C;
  switch (k) {
  case GPT2_WTE: dims[0] = d->Vp, dims[1] = C; return 2;
  case GPT2_WPE: dims[0] = d->maxT, dims[1] = C; return 2;
  case GPT2_QKVW: dims[0] = 3 * C, dims[1] = C; return 2;
  case GPT2_QKVB: dims[0] = 3 * C; return 1;
  case GPT2_PROJW: dims[0] = C, dims[1] = C; return 2;
  case GPT2_FCW: dims[0] = 4 * C, dims[1] = C; return 2;
  case GPT2_FCB: dims[0] = 4 * C; return 1;
  case GPT2_FCPROJW: dims[0] = C, dims[1] = 4 * C; return 2;
  default: dims[0] = C; return 1; /* the layer norms and the output biases */
  }
}

size_t gpt2_floats(const gpt2_dims_t *d, gpt2_kind_t k) {
  int dims[2];
  int n = gpt2_shape(d, k, dims);
  return n == 1 ? (size_t)dims[0] : (size_t)dims[0] * (size_t)dims[1];
}

size_t gpt2_max_floats(const gpt2_dims_t *d) {
  size_t most = 1;
  for (int k = 0; k < GPT2_KINDS; k++)
    if (gpt2_floats(d, k) > most) most = gpt2_floats(d, k);
  return most;
}

int gpt2_find(const graph_t *g, gpt2_kind_t k, int block) {
  char name[SLAB_NAME_MAX];
  snprintf(name, sizeof name, gpt2_tensors[k].surge, block);
  return slab_layout_find(&g->params, name);
}

static int find_node(const graph_t *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->l[i].name, name) == 0) return i;
  return -1;
}

/* The nodes GPT-2 fixes besides the tensors: heads alike, GELU, LayerNorm's eps 1e-5, a tied head. */
static int check_nodes(const graph_t *g, const gpt2_dims_t *d, char *why, size_t n) {
  char name[LAYER_NAME_MAX];
  for (int b = 0; b < d->L; b++) {
    snprintf(name, sizeof name, "blocks.%d.attn", b);
    int a = find_node(g, name);
    snprintf(name, sizeof name, "blocks.%d.gelu", b);
    int ge = find_node(g, name);
    if (a < 0 || g->l[a].heads != d->NH || ge < 0 || g->l[ge].kind != LAYER_GELU) {
      snprintf(why, n, "block %d is not a GPT-2 block (attention with %d heads, then a tanh GELU MLP)", b, d->NH);
      return -1;
    }
  }
  for (int i = 0; i < g->n; i++)
    if (g->l[i].kind == LAYER_LAYERNORM && g->l[i].eps != 1e-5f) {
      snprintf(why, n, "layer norm %s has eps %g, GPT-2's is 1e-5", g->l[i].name, (double)g->l[i].eps);
      return -1;
    }
  int head = find_node(g, "lm_head");
  if (head < 0 || g->l[head].kind != LAYER_TIED_LINEAR) {
    snprintf(why, n, "the output layer is not tied to the token embedding, as GPT-2's is");
    return -1;
  }
  return 0;
}

int gpt2_dims_of(const graph_t *g, gpt2_dims_t *d, char *why, size_t why_len) {
  memset(d, 0, sizeof *d);
  int wte = slab_layout_find(&g->params, "wte.weight"), wpe = slab_layout_find(&g->params, "wte.pos");
  if (wte < 0 || wpe < 0 || g->params.t[wte].ndim != 2 || g->params.t[wpe].ndim != 2) {
    snprintf(why, why_len, "tensor %s has no GPT-2 counterpart (GPT-2 starts with wte and wpe)",
             g->params.n ? g->params.t[0].name : "(none)");
    return -1;
  }
  for (int i = 0; i < g->n; i++) d->L += g->l[i].kind == LAYER_ATTENTION;
  int a = find_node(g, "blocks.0.attn");
  d->NH = a >= 0 ? g->l[a].heads : 0;
  d->C = g->params.t[wte].d[1];
  d->Vp = g->params.t[wte].d[0];
  d->maxT = g->params.t[wpe].d[0];
  d->V = g->classes_valid > 0 ? g->classes_valid : d->Vp;
  int expected = 0;
  for (int k = 0; k < GPT2_KINDS; k++)
    for (int b = 0; b < (gpt2_tensors[k].per_block ? d->L : 1); b++, expected++) {
      char name[SLAB_NAME_MAX];
      snprintf(name, sizeof name, gpt2_tensors[k].surge, b);
      int t = slab_layout_find(&g->params, name), dims[2], nd = gpt2_shape(d, k, dims);
      if (t < 0) {
        snprintf(why, why_len, "the model has no %s, which GPT-2 has", name);
        return -1;
      }
      const slab_tensor_t *s = &g->params.t[t];
      if (s->ndim != nd || s->d[0] != dims[0] || (nd == 2 && s->d[1] != dims[1])) {
        snprintf(why, why_len, "%s is not of GPT-2's shape", name);
        return -1;
      }
    }
  if (g->params.n != expected) { /* something more: name the first tensor the table does not have */
    for (int t = 0; t < g->params.n; t++) {
      int known = 0;
      for (int k = 0; k < GPT2_KINDS && !known; k++)
        for (int b = 0; b < (gpt2_tensors[k].per_block ? d->L : 1) && !known; b++) known = gpt2_find(g, k, b) == t;
      if (!known) {
        snprintf(why, why_len, "tensor %s has no GPT-2 counterpart", g->params.t[t].name);
        return -1;
      }
    }
  }
  return check_nodes(g, d, why, why_len);
}

int gpt2_dims_check(const gpt2_dims_t *d, char *why, size_t why_len) {
  const struct {
    const char *name;
    int v, hi;
  } f[] = {{"layers", d->L, 256}, {"width", d->C, 65536}, {"heads", d->NH, 256}, {"positions", d->maxT, 65536},
           {"vocabulary", d->V, 1 << 24}, {"padded vocabulary", d->Vp, 1 << 24}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].v < 1 || f[i].v > f[i].hi) {
      snprintf(why, why_len, "%s %d is out of range (1 to %d)", f[i].name, f[i].v, f[i].hi);
      return -1;
    }
  if (d->C % d->NH) {
    snprintf(why, why_len, "width %d is not a multiple of %d heads", d->C, d->NH);
    return -1;
  }
  if (d->V > d->Vp) {
    snprintf(why, why_len, "vocabulary %d exceeds the padded vocabulary %d", d->V, d->Vp);
    return -1;
  }
  return 0;
}

void gpt2_graph(const gpt2_dims_t *d, graph_t *g) {
  char why[320];
  if (gpt2_dims_check(d, why, sizeof why)) surge_input_error("GPT-2 sizes: %s", why);
  zoo_opts_t o = {.model = "gpt"};
  o.gpt.layers = d->L, o.gpt.width = d->C, o.gpt.heads = d->NH, o.gpt.context = d->maxT;
  o.gpt.vocab_multiple = d->Vp; /* V <= Vp: padded up to Vp exactly */
  if (zoo_build(o, shape1(d->maxT), d->V, g, why, sizeof why) != 0) surge_input_error("GPT-2 model: %s", why);
}

void gpt2_shape_text(char *out, size_t len, int ndim, const long long *d) {
  int n = snprintf(out, len, "(");
  for (int i = 0; i < ndim && n > 0 && (size_t)n < len; i++)
    n += snprintf(out + n, len - (size_t)n, "%s%lld", i ? "," : "", d[i]);
  if (n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, ")");
}

/* (rows, cols) of tensor k in Surge's layout, a vector being (1, n). */
static void matrix_of(const gpt2_dims_t *d, gpt2_kind_t k, size_t *rows, size_t *cols) {
  int dims[2];
  int nd = gpt2_shape(d, k, dims);
  *rows = nd == 2 ? (size_t)dims[0] : 1;
  *cols = nd == 2 ? (size_t)dims[1] : (size_t)dims[0];
}

void gpt2_export(const gpt2_dims_t *d, gpt2_kind_t k, int rows, int transpose, const float *surge, float *file) {
  size_t R, Cn;
  matrix_of(d, k, &R, &Cn);
  if (k == GPT2_WTE) R = (size_t)rows;
  for (size_t i = 0; i < R; i++) // surge (R, Cn) -> file (Cn, R) or (R, Cn)
    for (size_t j = 0; j < Cn; j++) file[transpose ? j * R + i : i * Cn + j] = surge[i * Cn + j];
}

void gpt2_import(const gpt2_dims_t *d, gpt2_kind_t k, int rows, int transpose, const float *file, float *surge) {
  size_t R, Cn;
  matrix_of(d, k, &R, &Cn);
  size_t held = k == GPT2_WTE ? (size_t)rows : R;
  for (size_t i = 0; i < held; i++)
    for (size_t j = 0; j < Cn; j++) surge[i * Cn + j] = file[transpose ? j * held + i : i * Cn + j];
  memset(surge + held * Cn, 0, (R - held) * Cn * sizeof *surge); /* wte's padding rows */
}
