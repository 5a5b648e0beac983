/* The zoo's gpt as GPT-2 (doc/formats.md, "Weights in and out"): its sizes, and the one table that
 * says which Surge tensor is which GPT-2 tensor, in Hugging Face's names and layouts and in llm.c's
 * parameter order. Readers and writers of every weights format go through it, so the names and the
 * transpositions are written down once.
 *
 * Surge (PyTorch shapes)         Hugging Face (Conv1D: [in, out])     llm.c (its order, stacked on L)
 *   wte.weight (Vp, C)            transformer.wte.weight (V, C)         wte (Vp, C)
 *   wte.pos (maxT, C)             transformer.wpe.weight (maxT, C)      wpe (maxT, C)
 *   blocks.i.ln1.weight (C)       transformer.h.i.ln_1.weight (C)       ln1w (L, C)
 *   blocks.i.ln1.bias (C)         transformer.h.i.ln_1.bias             ln1b (L, C)
 *   blocks.i.qkv.weight (3C, C)   transformer.h.i.attn.c_attn.weight (C, 3C)   qkvw (L, 3C, C)
 *   blocks.i.qkv.bias (3C)        transformer.h.i.attn.c_attn.bias      qkvb (L, 3C)
 *   blocks.i.proj.weight (C, C)   transformer.h.i.attn.c_proj.weight (C, C)^T  attprojw (L, C, C)
 *   blocks.i.proj.bias (C)        transformer.h.i.attn.c_proj.bias      attprojb (L, C)
 *   blocks.i.ln2.weight/bias (C)  transformer.h.i.ln_2.weight/bias      ln2w, ln2b (L, C)
 *   blocks.i.fc.weight (4C, C)    transformer.h.i.mlp.c_fc.weight (C, 4C)      fcw (L, 4C, C)
 *   blocks.i.fc.bias (4C)         transformer.h.i.mlp.c_fc.bias         fcb (L, 4C)
 *   blocks.i.fcproj.weight (C, 4C) transformer.h.i.mlp.c_proj.weight (4C, C)   fcprojw (L, C, 4C)
 *   blocks.i.fcproj.bias (C)      transformer.h.i.mlp.c_proj.bias       fcprojb (L, C)
 *   lnf.weight/bias (C)           transformer.ln_f.weight/bias          lnfw, lnfb (C)
 * The output layer is tied to wte (lm_head.weight in Hugging Face's model is the same tensor).
 * V is the data's vocabulary, Vp >= V the padded table (the rows past V are padding: no logit
 * of theirs is ever used, so the Hugging Face file leaves them out and a reader zeroes them). */
#ifndef SURGE_GPT2_MAP_H
#define SURGE_GPT2_MAP_H

#include <stddef.h>

#include "nn/graph.h"

typedef struct gpt2_dims {
  int L, C, NH; /* blocks, width, attention heads */
  int maxT;     /* positions of wpe */
  int V, Vp;    /* vocabulary and its padded table */
} gpt2_dims_t;

/* GPT-2's tensors in llm.c's order. */
typedef enum gpt2_kind {
  GPT2_WTE, GPT2_WPE, GPT2_LN1W, GPT2_LN1B, GPT2_QKVW, GPT2_QKVB, GPT2_PROJW, GPT2_PROJB, GPT2_LN2W, GPT2_LN2B,
  GPT2_FCW, GPT2_FCB, GPT2_FCPROJW, GPT2_FCPROJB, GPT2_LNFW, GPT2_LNFB, GPT2_KINDS
} gpt2_kind_t;

typedef struct gpt2_tensor_info {
  const char *surge;   /* Surge name, "%d" for the block */
  const char *hf;      /* Hugging Face name without "transformer.", "%d" for the block */
  const char *llmc;    /* llm.c's name for it */
  int per_block;       /* one per block (stacked on L in llm.c) */
  int transposed;      /* Hugging Face stores it as Conv1D's [in, out], the transpose of Surge's */
} gpt2_tensor_info_t;

extern const gpt2_tensor_info_t gpt2_tensors[GPT2_KINDS];

/* Shape of one tensor (one block's) in Surge's layout: ndim and d[0..ndim). */
int gpt2_shape(const gpt2_dims_t *d, gpt2_kind_t k, int dims[2]);
/* Floats of one tensor (one block's) in Surge's layout, padding rows of wte included. */
size_t gpt2_floats(const gpt2_dims_t *d, gpt2_kind_t k);
/* The most floats of any one tensor (a buffer for one). */
size_t gpt2_max_floats(const gpt2_dims_t *d);

/* Whether g is the zoo's gpt in GPT-2's form (every tensor GPT-2 has, with biases, nothing else, a
 * tied output): 0 with its sizes in *d, or -1 with the reason in why, naming the first tensor that
 * has no GPT-2 counterpart. */
int gpt2_dims_of(const graph_t *g, gpt2_dims_t *d, char *why, size_t why_len);
/* Index in g->params of kind k of block `block` (ignored for the others), or -1. */
int gpt2_find(const graph_t *g, gpt2_kind_t k, int block);

/* Whether sizes read from a file are ones Surge can build (each positive, within the zoo's limits,
 * C a multiple of NH, V <= Vp): 0, or -1 with the reason. */
int gpt2_dims_check(const gpt2_dims_t *d, char *why, size_t why_len);
/* Build the zoo's gpt of these sizes into g (its vocabulary padded to Vp). Input error when it
 * cannot be built. */
void gpt2_graph(const gpt2_dims_t *d, graph_t *g);

/* One tensor (one block's) between Surge's layout (`surge`) and a file's (`file`): transposed
 * (Conv1D) when `transpose`; of the token table the first `rows` rows (V or Vp), the rows past them
 * zeroed on import. */
void gpt2_export(const gpt2_dims_t *d, gpt2_kind_t k, int rows, int transpose, const float *surge, float *file);
void gpt2_import(const gpt2_dims_t *d, gpt2_kind_t k, int rows, int transpose, const float *file, float *surge);

/* "(a,b)" of a shape, for messages. */
void gpt2_shape_text(char *out, size_t len, int ndim, const long long *d);

#endif
