/* The ref backend's fused forms (backend.h, issue 32): each is the ops it replaces composed, run one
 * after the other through ref's own table, so the fused forms of the other backends are tested
 * against exactly what the model computed before fusing (ref_fused.c); and its causal attention in
 * the naive form (ref_attention.c); the operands of its matrix products. */
#ifndef SURGE_BACKEND_REF_FUSED_H
#define SURGE_BACKEND_REF_FUSED_H

#include <stddef.h>

#include "backend/host_mem.h"
#include "core/bf16.h"

/* An operand of a matrix product (the GEMMs, convolutions, attention's products) as ref multiplies
 * it: itself, or in precision = bf16 the nearest bfloat16 (backend.h); products and sums stay double. */
static inline double ref_operand(double x) { return host_products_bf16() ? (double)bf16_round((float)x) : x; }

void ref_linear_gelu_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b,
                         float *pre, float *y, float *ws, size_t ws_n);
void ref_gelu_bias_bwd(int rows, int cols, const float *pre, const float *dy, float *dpre, float *db);
void ref_add_layernorm_fwd(int N, int rows, int C, const float *a, const float *b, const float *w, const float *bias,
                           float eps, float *sum, float *y, float *stats);

size_t ref_attention_workspace(int T, int hs);
void ref_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, float *ws, size_t ws_n);
void ref_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, const float *dy,
                       float *dqkv, int dx_write, float *ws, size_t ws_n);

#endif
