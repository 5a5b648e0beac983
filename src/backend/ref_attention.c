/* The ref backend's causal attention (backend.h: attention_fwd, attention_bwd): the naive form, the
 * whole T x T of scores and probabilities of one sample and head in memory of its own, every sum in
 * double (in precision = bf16 each product's operands rounded to bfloat16 first, ref_operand). The
 * truth the blocked cpu form is tested against. Every sum runs over the causal pairs only, so a non-finite value in
 * one token's q, k, v or dy reaches only what depends on it. */
#include <math.h>
#include <stdlib.h>

#include "backend/ref_fused.h"
#include "core/error.h"

/* One sample and head: q, k, v rows at stride ld; p (T, T) = causal softmax(s q k^T) in double. */
static void head_probs(int T, int hs, int ld, double s, const float *q, const float *k, double *p, double *lse) {
  for (int i = 0; i < T; i++) {
    double mx = -INFINITY, sum = 0.0;
    for (int j = 0; j <= i; j++) {
      double d = 0.0;
      for (int c = 0; c < hs; c++) d += ref_operand(q[(size_t)i * ld + c]) * ref_operand(k[(size_t)j * ld + c]);
      p[(size_t)i * T + j] = s * d;
      if (s * d > mx) mx = s * d;
    }
    for (int j = 0; j <= i; j++) sum += exp(p[(size_t)i * T + j] - mx);
    for (int j = 0; j < T; j++) p[(size_t)i * T + j] = j <= i ? exp(p[(size_t)i * T + j] - mx) / sum : 0.0;
    if (lse) lse[i] = mx + log(sum);
  }
}

size_t ref_attention_workspace(int T, int hs) {
  (void)T, (void)hs;
  return 0; /* its T x T lives in memory of its own */
}

void ref_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  const int hs = C / H, ld = 3 * C;
  const double s = 1.0 / sqrt((double)hs);
  double *p = xmalloc((size_t)T * T * sizeof *p), *l = xmalloc((size_t)T * sizeof *l);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++) {
      const float *q = qkv + (size_t)b * T * ld + (size_t)h * hs, *v = q + 2 * C;
      head_probs(T, hs, ld, s, q, q + C, p, l);
      for (int i = 0; i < T; i++) {
        for (int c = 0; c < hs; c++) { // Y = P V
          double acc = 0.0;
          for (int j = 0; j <= i; j++) acc += ref_operand(p[(size_t)i * T + j]) * ref_operand(v[(size_t)j * ld + c]);
          y[((size_t)b * T + i) * C + (size_t)h * hs + c] = (float)acc;
        }
        lse[((size_t)b * H + h) * T + i] = (float)l[i];
      }
    }
  free(p);
  free(l);
}

/* dV = P^T dY, dP = dY V^T, dS = P (dP - D) s with D = rowsum(dY Y), dQ = dS K, dK = dS^T Q; lse unused: the
 * truth recomputes P whole. D = rowsum(P dP) in exact arithmetic; like FlashAttention-2 and the cpu and cuda forms,
 * it is summed as dY . Y of the given Y, the forward's output, and in bf16 as a product of rounded operands
 * (backend.h). */
void ref_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, const float *dy,
                       float *dqkv, int dx_write, float *ws, size_t ws_n) {
  (void)lse, (void)ws, (void)ws_n;
  const int hs = C / H, ld = 3 * C;
  const double s = 1.0 / sqrt((double)hs);
  double *p = xmalloc((size_t)T * T * sizeof *p), *ds = xmalloc((size_t)T * T * sizeof *ds);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++) {
      const size_t base = (size_t)b * T * ld + (size_t)h * hs;
      const float *q = qkv + base, *k = q + C, *v = q + 2 * C, *g = dy + (size_t)b * T * C + (size_t)h * hs;
      float *dq = dqkv + base, *dk = dq + C, *dv = dq + 2 * C;
      head_probs(T, hs, ld, s, q, k, p, NULL);
      for (int i = 0; i < T; i++) { // dS row i
        const float *yi = y + (size_t)b * T * C + (size_t)i * C + (size_t)h * hs;
        double dot = 0.0; // D_i = dY_i . Y_i
        for (int c = 0; c < hs; c++) dot += ref_operand(g[(size_t)i * C + c]) * ref_operand(yi[c]);
        for (int j = 0; j <= i; j++) {
          double dp = 0.0;
          for (int c = 0; c < hs; c++) dp += ref_operand(g[(size_t)i * C + c]) * ref_operand(v[(size_t)j * ld + c]);
          ds[(size_t)i * T + j] = dp;
        }
        for (int j = 0; j < T; j++) {
          const size_t at = (size_t)i * T + j;
          ds[at] = j <= i ? s * p[at] * (ds[at] - dot) : 0.0;
        }
      }
      for (int t = 0; t < T; t++)
        for (int c = 0; c < hs; c++) {
          double gq = 0.0, gk = 0.0, gv = 0.0; /* over the causal pairs only: 0 x NaN is NaN */
          for (int u = 0; u <= t; u++) gq += ref_operand(ds[(size_t)t * T + u]) * ref_operand(k[(size_t)u * ld + c]);
          for (int u = t; u < T; u++) {
            gk += ref_operand(ds[(size_t)u * T + t]) * ref_operand(q[(size_t)u * ld + c]);
            gv += ref_operand(p[(size_t)u * T + t]) * ref_operand(g[(size_t)u * C + c]);
          }
          const size_t at = (size_t)t * ld + c;
          dq[at] = (float)((dx_write ? 0.0 : dq[at]) + gq);
          dk[at] = (float)((dx_write ? 0.0 : dk[at]) + gk);
          dv[at] = (float)((dx_write ? 0.0 : dv[at]) + gv);
        }
    }
  free(p);
  free(ds);
}
