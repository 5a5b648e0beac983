/* Causal multi-head self-attention core, without parameters (the qkv and output projections are
 * linear layers around it, as in GPT-2's c_attn / c_proj).
 * Input qkv (T,3C): q, k and v are consecutive blocks of C along the last dim, and head h owns
 * columns h*hs..(h+1)*hs of each block, hs = C/H. Output (T,C) with head h in columns
 * h*hs..(h+1)*hs, i.e. PyTorch's y.transpose(1,2).reshape(T,C). Per head:
 *   S = Q K^T (T,T),  P = causal_softmax(S / sqrt(hs)),  Y = P V.
 * Each sample saves P (H,T,T) in aux. Heads run as one strided batch of GEMMs reading the q/k/v
 * blocks in place (leading dim 3C), so nothing is reshaped. */
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
  size_t probs = (size_t)H * T * T;
  /* Q K^T and P V, 2*T*T*hs each per head; about 5 ops per score for the softmax */
  layer_set_no_params(l, probs, 4.0 * T * T * C + 5.0 * (double)probs);
  l->scratch = 2 * probs; /* forward: scores; backward: dP and dS */
  return 0;
}

/* The geometry of one call. */
typedef struct att_dims {
  int T, C, H, hs, ld; /* ld = 3C, the row stride of qkv */
  size_t probs;        /* H*T*T */
  float scale;         /* 1/sqrt(hs) */
} att_dims_t;

static att_dims_t att_dims(const layer_t *l) {
  att_dims_t d;
  d.T = l->in_shape[0].d[0];
  d.ld = l->in_shape[0].d[1];
  d.C = d.ld / 3;
  d.H = l->heads;
  d.hs = d.C / d.H;
  d.probs = (size_t)d.H * d.T * d.T;
  d.scale = 1.0f / sqrtf((float)d.hs);
  return d;
}

static void attention_forward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  att_dims_t d = att_dims(l);
  float *S = c->scratch;
  for (int b = 0; b < c->B; b++) {
    const float *q = c->x[0] + (size_t)b * d.T * d.ld, *k = q + d.C, *v = q + 2 * d.C;
    float *P = c->aux + (size_t)b * d.probs, *y = c->y + (size_t)b * d.T * d.C;
    // S_h (T,T) = Q_h (T,hs) K_h^T, for h < H
    be->gemm_strided(0, 1, d.T, d.T, d.hs, 1.0f, q, d.ld, d.hs, k, d.ld, d.hs, 0.0f, S, d.T,
                     (size_t)d.T * d.T, d.H);
    // P_h = causal softmax of S_h / sqrt(hs)
    be->causal_softmax_fwd(d.H, d.T, d.scale, S, P);
    // Y_h (T,hs) = P_h (T,T) V_h (T,hs), written into columns h*hs.. of y (T,C)
    be->gemm_strided(0, 0, d.T, d.hs, d.T, 1.0f, P, d.T, (size_t)d.T * d.T, v, d.ld, d.hs, 0.0f, y, d.C,
                     d.hs, d.H);
  }
}

static void attention_backward(const layer_t *l, const layer_ctx_t *c) {
  if (!c->dx[0]) return; /* no parameters: nothing else to compute */
  const backend_t *be = c->be;
  att_dims_t d = att_dims(l);
  float *dP = c->scratch, *dS = c->scratch + d.probs;
  size_t tt = (size_t)d.T * d.T;
  for (int b = 0; b < c->B; b++) {
    const float *q = c->x[0] + (size_t)b * d.T * d.ld, *k = q + d.C, *v = q + 2 * d.C;
    const float *P = c->aux + (size_t)b * d.probs, *dy = c->dy + (size_t)b * d.T * d.C;
    float *dq = c->dx[0] + (size_t)b * d.T * d.ld, *dk = dq + d.C, *dv = dq + 2 * d.C;
    // dP_h (T,T) = dY_h (T,hs) V_h^T
    be->gemm_strided(0, 1, d.T, d.T, d.hs, 1.0f, dy, d.C, d.hs, v, d.ld, d.hs, 0.0f, dP, d.T, tt, d.H);
    // dV_h (T,hs) += P_h^T dY_h
    be->gemm_strided(1, 0, d.T, d.hs, d.T, 1.0f, P, d.T, tt, dy, d.C, d.hs, 1.0f, dv, d.ld, d.hs, d.H);
    // dS_h = softmax backward (includes the 1/sqrt(hs) scale)
    be->causal_softmax_bwd(d.H, d.T, d.scale, P, dP, dS);
    // dQ_h (T,hs) += dS_h K_h
    be->gemm_strided(0, 0, d.T, d.hs, d.T, 1.0f, dS, d.T, tt, k, d.ld, d.hs, 1.0f, dq, d.ld, d.hs, d.H);
    // dK_h (T,hs) += dS_h^T Q_h
    be->gemm_strided(1, 0, d.T, d.hs, d.T, 1.0f, dS, d.T, tt, q, d.ld, d.hs, 1.0f, dk, d.ld, d.hs, d.H);
  }
}

const layer_ops_t layer_attention_ops = {"attention", attention_infer, layer_init_none, attention_forward,
                                         attention_backward};
