/* Causal multi-head self-attention core, without parameters (the qkv and output projections are
 * linear layers around it, as in GPT-2's c_attn / c_proj).
 * Input qkv (T,3C): q, k and v are consecutive blocks of C along the last dim, and head h owns
 * columns h*hs..(h+1)*hs of each block, hs = C/H. Output (T,C) with head h in columns
 * h*hs..(h+1)*hs, i.e. PyTorch's y.transpose(1,2).reshape(T,C). Per head:
 *   S = Q K^T (T,T),  P = causal_softmax(S / sqrt(hs)),  Y = P V.
 * Each sample saves P (H,T,T) in aux. Every product runs over the whole call's samples x heads as
 * one grid of GEMMs (backend gemm_grid) reading the q/k/v blocks in place (leading dim 3C), so
 * nothing is reshaped and no loop runs over samples; the scores and their gradients live in the
 * call's scratch, (B,H,T,T) each. */
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
  l->scratch_per_sample = 2 * probs; /* forward: scores; backward: dP and dS */
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

/* The grid of samples x heads over operands (A, B, C) whose sample and head strides are given. */
static gemm_grid_t att_grid(int B, const att_dims_t *d, size_t sa, size_t ha, size_t sb, size_t hb, size_t sc,
                            size_t hc) {
  return (gemm_grid_t){{B, d->H}, {sa, ha}, {sb, hb}, {sc, hc}};
}

static void attention_forward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  att_dims_t d = att_dims(l);
  size_t tt = (size_t)d.T * d.T, qkv = (size_t)d.T * d.ld, out = (size_t)d.T * d.C;
  const float *q = c->x[0], *k = q + d.C, *v = q + 2 * d.C;
  float *S = c->scratch, *P = c->aux; /* (B,H,T,T) each */
  // S_bh (T,T) = Q_bh (T,hs) K_bh^T
  gemm_grid_t g = att_grid(c->B, &d, qkv, d.hs, qkv, d.hs, d.probs, tt);
  be->gemm_grid(0, 1, d.T, d.T, d.hs, 1.0f, q, d.ld, k, d.ld, 0.0f, S, d.T, &g);
  // P_bh = causal softmax of S_bh / sqrt(hs)
  be->causal_softmax_fwd(c->B * d.H, d.T, d.scale, S, P);
  // Y_bh (T,hs) = P_bh (T,T) V_bh (T,hs), written into columns h*hs.. of y (T,C)
  g = att_grid(c->B, &d, d.probs, tt, qkv, d.hs, out, d.hs);
  be->gemm_grid(0, 0, d.T, d.hs, d.T, 1.0f, P, d.T, v, d.ld, 0.0f, c->y, d.C, &g);
}

static void attention_backward(const layer_t *l, const layer_ctx_t *c) {
  if (!c->dx[0]) return; /* no parameters: nothing else to compute */
  const backend_t *be = c->be;
  att_dims_t d = att_dims(l);
  size_t tt = (size_t)d.T * d.T, qkv = (size_t)d.T * d.ld, out = (size_t)d.T * d.C;
  const float *q = c->x[0], *k = q + d.C, *v = q + 2 * d.C, *P = c->aux, *dy = c->dy;
  float *dq = c->dx[0], *dk = dq + d.C, *dv = dq + 2 * d.C;
  float *dP = c->scratch, *dS = c->scratch + (size_t)c->B * d.probs; /* (B,H,T,T) each */
  // dP_bh (T,T) = dY_bh (T,hs) V_bh^T
  gemm_grid_t g = att_grid(c->B, &d, out, d.hs, qkv, d.hs, d.probs, tt);
  be->gemm_grid(0, 1, d.T, d.T, d.hs, 1.0f, dy, d.C, v, d.ld, 0.0f, dP, d.T, &g);
  // dV_bh (T,hs) += (dx_write: =) P_bh^T dY_bh; the heads' blocks of dq, dk and dv cover dx whole
  const float beta = layer_dx_beta(c, 0);
  g = att_grid(c->B, &d, d.probs, tt, out, d.hs, qkv, d.hs);
  be->gemm_grid(1, 0, d.T, d.hs, d.T, 1.0f, P, d.T, dy, d.C, beta, dv, d.ld, &g);
  // dS_bh = softmax backward (includes the 1/sqrt(hs) scale)
  be->causal_softmax_bwd(c->B * d.H, d.T, d.scale, P, dP, dS);
  // dQ_bh (T,hs) += (=) dS_bh K_bh
  g = att_grid(c->B, &d, d.probs, tt, qkv, d.hs, qkv, d.hs);
  be->gemm_grid(0, 0, d.T, d.hs, d.T, 1.0f, dS, d.T, k, d.ld, beta, dq, d.ld, &g);
  // dK_bh (T,hs) += (=) dS_bh^T Q_bh
  be->gemm_grid(1, 0, d.T, d.hs, d.T, 1.0f, dS, d.T, q, d.ld, beta, dk, d.ld, &g);
}

/* writes its input's gradient whole where asked (dx_write: GEMMs with beta 0) */
const layer_ops_t layer_attention_ops = {"attention", attention_infer, layer_init_none, attention_forward,
                                         attention_backward, 1};
