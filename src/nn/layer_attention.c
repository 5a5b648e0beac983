/* Causal multi-head self-attention core, without parameters (the qkv and output projections are
 * linear layers around it, as in GPT-2's c_attn / c_proj).
 * Input qkv (T,3C): q, k and v are consecutive blocks of C along the last dim, and head h owns
 * columns h*hs..(h+1)*hs of each block, hs = C/H. Output (T,C) with head h in columns
 * h*hs..(h+1)*hs, i.e. PyTorch's y.transpose(1,2).reshape(T,C). Per head:
 *   S = Q K^T (T,T),  P = causal_softmax(S / sqrt(hs)),  Y = P V.
 * One backend op each way over the call's samples x heads (attention_fwd, attention_bwd). Each
 * sample saves only its rows' log-sum-exp, (H,T), in aux; the backward recomputes P from it. The
 * call's scratch is the backend's attention workspace: O(T hs) on cpu (blocked, no T x T), none on
 * cuda (fused kernels; the largest any backend asks, attention_workspace_floats), whatever the
 * batch. */
#include <math.h>
#include "nn/layer.h"
#include "nn/layer_common.h"

static int attention_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "attention", 1, err, n)) return -1;
  if (layer_check_at_least("attention", "heads", l->heads, 1, err, n)) return -1;
  shape_t in = l->in_shape[0];
  char buf[64];
  if (in.ndim != 2 || in.d[0] < 1 || in.d[1] < 1) {
    snprintf(err, n, "attention: input must be qkv (T,3C), got %s", shape_str(in, buf, sizeof buf));
    return -1;
  }
  if (in.d[1] % 3 != 0) {
    snprintf(err, n, "attention: input last dim %d is not divisible by 3 (q, k, v blocks)", in.d[1]);
    return -1;
  }
  int T = in.d[0], C = in.d[1] / 3, H = l->heads;
  if (C % H != 0) {
    snprintf(err, n, "attention: width %d is not divisible by %d heads", C, H);
    return -1;
  }
  l->out = shape2(T, C);
  /* Q K^T and P V, 2*T*T*hs each per head; about 5 ops per score for the softmax */
  layer_set_no_params(l, (size_t)H * T, 4.0 * T * T * C + 5.0 * (double)H * T * T);
  l->scratch = attention_workspace_floats(T, C / H); /* one size for any batch */
  return 0;
}

/* The call's shape: T, C, H from the input. */
static void att_shape(const layer_t *l, int *T, int *C, int *H) {
  *T = l->in_shape[0].d[0];
  *C = l->in_shape[0].d[1] / 3;
  *H = l->heads;
}

static void attention_forward(const layer_t *l, const layer_ctx_t *c) {
  int T, C, H;
  att_shape(l, &T, &C, &H);
  // y (B,T,C) from qkv (B,T,3C); aux (B,H,T): each row's log-sum-exp
  c->be->attention_fwd(c->B, T, C, H, c->x[0], c->y, c->aux, c->scratch, l->scratch);
}

static void attention_backward(const layer_t *l, const layer_ctx_t *c) {
  if (!c->dx[0]) return; /* no parameters: nothing else to compute */
  int T, C, H;
  att_shape(l, &T, &C, &H);
  // dqkv (B,T,3C) += (dx_write: =) the gradients for dy (B,T,C)
  c->be->attention_bwd(c->B, T, C, H, c->x[0], c->y, c->aux, c->dy, c->dx[0], c->dx_write[0], c->scratch,
                       l->scratch);
}

/* writes its input's gradient whole where asked (dx_write); in bf16 its backward reads y only rounded (backend.h's
 * attention_bwd), as the output projection does */
const layer_ops_t layer_attention_ops = {"attention", attention_infer, layer_init_none, attention_forward,
                                         attention_backward, 1, NULL, NULL, .rounds_input = 1, .output_rounded = 1};
