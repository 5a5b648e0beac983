/* The cuda backend's causal attention (backend.h: attention_fwd, attention_bwd): the fused kernels
 * of cuda_kern_attention.cu (FlashAttention-2: no T x T in memory; the backward's only scratch is D,
 * B H T floats in the backend's own workspace CUDA_WS_ATT), so it asks the layer for none. Their
 * grids have a block per tile of 32 or 64 rows of each head: at most B H T / 32 blocks, below the
 * launch limit of 2^31 whenever qkv fits in a GPU's memory.
 *
 * Which kernels (doc/gpu.md): under `[backend] precision = bf16` the tensor-core form (bf16 x bf16
 * products, float sums) where the head size is a multiple of 16 and the device has bf16 tensor
 * cores (compute capability 8.0 on): under `[backend] attention_kernels = auto` the kernels with
 * their tiles in registers (mma.sync: head sizes 16, 32 and 64, and 128 for the forward), the WMMA
 * kernels at other head sizes, their tiles 64 rows where they fit the device's shared memory (head
 * sizes up to 160 on an H100 or H200) and 32 above; `wmma` the WMMA kernels everywhere; `wmma32`
 * those in 32-row tiles. Otherwise, and always under fp32 (tf32 on or off: its
 * attention stays exact float32), the fp32 form on the CUDA cores. Where a head's tiles exceed the
 * device's shared memory (the fp32 dK, dV kernel's 6 tiles of 32 rows of hs + 1 floats: hs above
 * about 290 on an H100 or H200), the T x T form of before instead: composed from cuBLAS's grid of
 * GEMMs over samples x heads and the softmax kernels, its scores and probabilities in CUDA_WS_ATT
 * (3 B H T^2 floats at most), the backward recomputing the probabilities (the op keeps only lse). */
#include <math.h>

#include "backend/cuda_impl.h"
#include "core/error.h"

size_t cuda_attention_workspace(int T, int hs) {
  (void)T, (void)hs;
  return 0;
}

/* The fused kernels at head size hs, the forward's (fwd 1) or the backward's: *kernels CUK_ATT_*
 * (the tensor cores where the model's products are bf16 and they run here); the fp32 and WMMA
 * kernels' tile rows returned, 0 where none fits (the T x T form). */
static int fused_tile(int hs, int fwd, int *kernels) {
  const backend_attention_t set = cuda_attention_setting();
  const int bf16 = cuda_model_compute() == CUBLAS_COMPUTE_32F_FAST_16BF;
  const int tile = bf16 ? cuk_attention_tile(hs, 1, set == BACKEND_ATTENTION_WMMA32 ? 32 : 0) : 0;
  if (tile > 0) {
    *kernels = set == BACKEND_ATTENTION_AUTO && cuk_attention_rf_fits(hs, fwd) ? CUK_ATT_RF : CUK_ATT_WMMA;
    return tile;
  }
  *kernels = CUK_ATT_FP32;
  return cuk_attention_tile(hs, 0, 0);
}

/* The geometry of one call: per sample, probs = H T^2 floats of scores; qkv rows of ld = 3C. */
typedef struct att_dims {
  int T, C, H, hs, ld;
  size_t tt, probs, qkv, out;
  float scale;
} att_dims_t;

static att_dims_t att_dims(int T, int C, int H) {
  att_dims_t d = {T, C, H, C / H, 3 * C, (size_t)T * T, (size_t)H * T * T, (size_t)T * 3 * C, (size_t)T * C, 0.0f};
  d.scale = 1.0f / sqrtf((float)d.hs);
  return d;
}

/* S (B, H, T, T) = Q K^T and P its causal softmax (lse: each row's log-sum-exp, or NULL). */
static void scores_and_probs(int B, const att_dims_t *d, const float *qkv, float *S, float *P, float *lse) {
  gemm_grid_t g = {{B, d->H}, {d->qkv, (size_t)d->hs}, {d->qkv, (size_t)d->hs}, {d->probs, d->tt}};
  cuda_gemm_grid(0, 1, d->T, d->T, d->hs, 1.0f, qkv, d->ld, qkv + d->C, d->ld, 0.0f, S, d->T, &g);
  if (lse) cuk_softmax_lse(B * d->H, d->T, d->scale, S, P, lse, cuda_stream());
  else cuda_causal_softmax_fwd(B * d->H, d->T, d->scale, S, P);
}

static float *att_buffers(int B, const att_dims_t *d, int n) {
  return cuda_workspace(CUDA_WS_ATT, surge_mul_size(surge_mul_size((size_t)B, d->probs, "attention"),
                                                    (size_t)n * sizeof(float), "attention"));
}

void cuda_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  if (B <= 0 || T <= 0) return;
  int kernels;
  const int tile = fused_tile(C / H, 1, &kernels);
  if (tile > 0) {
    cuk_attention_fwd(B, T, C, H, qkv, y, lse, kernels, tile, cuda_stream());
    return;
  }
  const att_dims_t d = att_dims(T, C, H);
  float *S = att_buffers(B, &d, 2), *P = S + (size_t)B * d.probs;
  scores_and_probs(B, &d, qkv, S, P, lse);
  // Y_bh (T, hs) = P_bh V_bh into columns h*hs.. of y
  gemm_grid_t g = {{B, H}, {d.probs, d.tt}, {d.qkv, (size_t)d.hs}, {d.out, (size_t)d.hs}};
  cuda_gemm_grid(0, 0, T, d.hs, T, 1.0f, P, T, qkv + 2 * C, d.ld, 0.0f, y, C, &g);
}

void cuda_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, const float *dy,
                        float *dqkv, int dx_write, float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  if (B <= 0 || T <= 0) return;
  int kernels;
  const int tile = fused_tile(C / H, 0, &kernels);
  if (tile > 0) {
    float *dd = cuda_workspace(CUDA_WS_ATT, surge_mul_size((size_t)B * H, (size_t)T * sizeof(float), "attention"));
    cuk_attention_bwd(B, T, C, H, qkv, y, lse, dy, dqkv, dx_write, dd, kernels, tile, cuda_stream());
    return;
  }
  const att_dims_t d = att_dims(T, C, H);
  const float beta = dx_write ? 0.0f : 1.0f; /* the heads' blocks of dq, dk, dv cover dqkv whole */
  float *S = att_buffers(B, &d, 3), *P = S + (size_t)B * d.probs, *dP = P + (size_t)B * d.probs;
  const float *q = qkv, *k = qkv + C, *v = qkv + 2 * C;
  float *dq = dqkv, *dk = dqkv + C, *dv = dqkv + 2 * C;
  scores_and_probs(B, &d, qkv, S, P, NULL);
  // dP_bh (T, T) = dY_bh V_bh^T
  gemm_grid_t g = {{B, H}, {d.out, (size_t)d.hs}, {d.qkv, (size_t)d.hs}, {d.probs, d.tt}};
  cuda_gemm_grid(0, 1, T, T, d.hs, 1.0f, dy, C, v, d.ld, 0.0f, dP, T, &g);
  // dV_bh (T, hs) (+)= P_bh^T dY_bh
  g = (gemm_grid_t){{B, H}, {d.probs, d.tt}, {d.out, (size_t)d.hs}, {d.qkv, (size_t)d.hs}};
  cuda_gemm_grid(1, 0, T, d.hs, T, 1.0f, P, T, dy, C, beta, dv, d.ld, &g);
  // dS_bh = softmax backward (with the scale), over S
  cuda_causal_softmax_bwd(B * H, T, d.scale, P, dP, S);
  // dQ_bh (+)= dS_bh K_bh; dK_bh (+)= dS_bh^T Q_bh
  g = (gemm_grid_t){{B, H}, {d.probs, d.tt}, {d.qkv, (size_t)d.hs}, {d.qkv, (size_t)d.hs}};
  cuda_gemm_grid(0, 0, T, d.hs, T, 1.0f, S, T, k, d.ld, beta, dq, d.ld, &g);
  cuda_gemm_grid(1, 0, T, d.hs, T, 1.0f, S, T, q, d.ld, beta, dk, d.ld, &g);
}
