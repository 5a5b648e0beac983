/* Token + position embedding (GPT-2): token ids (T), stored as float, -> (T,C) with
 * y[t] = wte[id[t]] + wpe[t]. Hyperparameters: vocab V, context (the most positions) and
 * out_features = C; T may be at most context. A vocabulary-parallel shard (3D parallelism) sets
 * vocab_lo: its table holds the ids [vocab_lo, vocab_lo + V) and other ids give a zero token row,
 * so the shards' outputs sum to the whole lookup; no_positions = 1 leaves out wpe (one shard adds
 * the positions).
 * Parameters: param[0] is wte (V,C) with suffix "weight" and param[1] is wpe (context,C) with suffix
 * "pos", so a node named "wte" holds "wte.weight" and "wte.pos"; code comparing against PyTorch maps
 * these names itself. A tied linear layer reads param[0]. Both tensors are initialised N(0, 0.02)
 * under every scheme (GPT-2's choice; PyTorch's nn.Embedding default N(0,1) is never wanted here).
 * The ids get no gradient (the engine passes dx[0] = NULL). */
#include <string.h>

#include "nn/layer.h"
#include "nn/layer_common.h"

static int embed_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "embed", 1, err, n)) return -1;
  if (layer_check_at_least("embed", "vocab", l->vocab, 1, err, n)) return -1;
  if (layer_check_at_least("embed", "context", l->context, 1, err, n)) return -1;
  if (layer_check_at_least("embed", "channels", l->out_features, 1, err, n)) return -1;
  shape_t in = l->in_shape[0];
  if (in.ndim != 1 || in.d[0] < 1) {
    char buf[64];
    snprintf(err, n, "embed: input must be token ids (T), got %s", shape_str(in, buf, sizeof buf));
    return -1;
  }
  int T = in.d[0], C = l->out_features;
  if (l->vocab_lo < 0) {
    snprintf(err, n, "embed: vocab_lo must not be negative, got %d", l->vocab_lo);
    return -1;
  }
  if (T > l->context) {
    snprintf(err, n, "embed: sequence length %d exceeds the context %d", T, l->context);
    return -1;
  }
  l->out = shape2(T, C);
  l->np = l->no_positions ? 1 : 2;
  memset(l->pdesc, 0, sizeof l->pdesc);
  l->pdesc[0] = (layer_param_desc_t){"weight", 2, {l->vocab, C, 0, 0}};
  if (!l->no_positions) l->pdesc[1] = (layer_param_desc_t){"pos", 2, {l->context, C, 0, 0}};
  l->aux_per_sample = 0;
  l->scratch = 0;
  l->flops_per_sample = (double)T * C; /* one add per output */
  return 0;
}

static void embed_init(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme) {
  (void)scheme;
  size_t C = (size_t)l->out_features;
  rng_fill_normal(rng, w[0], (size_t)l->vocab * C, 0.0f, 0.02f);
  if (!l->no_positions) rng_fill_normal(rng, w[1], (size_t)l->context * C, 0.0f, 0.02f);
}

static void embed_forward(const layer_t *l, const layer_ctx_t *c) {
  // ids (B,T) -> y (B,T,C)
  c->be->embed_fwd(c->B, l->in_shape[0].d[0], l->out_features, c->x[0], l->vocab_lo, l->vocab, c->w[0],
                   l->no_positions ? NULL : c->w[1], c->y);
}

static void embed_backward(const layer_t *l, const layer_ctx_t *c) {
  // dwte (V,C) (its ids), dwpe (context,C) += scatter of dy (B,T,C)
  c->be->embed_bwd(c->B, l->in_shape[0].d[0], l->out_features, c->x[0], l->vocab_lo, l->vocab, c->dy, c->dw[0],
                   l->no_positions ? NULL : c->dw[1]);
}

const layer_ops_t layer_embed_ops = {"embed", embed_infer, embed_init, embed_forward, embed_backward, 0, NULL, NULL,
                                     0, 0, 0, 0};
