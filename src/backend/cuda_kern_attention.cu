// The fused causal attention's kernels (FlashAttention-2 on the GPU, fp32): cuda_attention_tiles.h's
// phases of (block, thread) between __syncthreads and the warp's reductions, which
// tests/test_cuda_attention runs on the host over each kernel's whole grid. One block per tile of
// FA_TILE rows of one (sample, head); the tiles live in dynamic shared memory sized by the head
// size (over 48 KiB from hs = 64 up on the backward: the launchers opt in).
#include "backend/cuda_attention_tiles.h"
#include "backend/cuda_kern.cuh"

using namespace cuk;

static_assert(FA_TILE == 32 && FA_THREADS % 32 == 0, "one key column per lane, whole warps");

// The softmax phase of the forward: each warp's rows, one score a lane.
__device__ inline void fwd_softmax_rows(const fa_smem_t *s) {
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int r = fa_row_of(threadIdx.x, k);
    const float mx = fmaxf(s->m[r], warp_max(fa_lane_score(s, r, lane())));
    const double sum = warp_sum(fa_lane_exp(s, r, lane(), mx));
    __syncwarp();  // every lane has read m[r] before lane 0 moves it
    if (lane() == 0) fa_row_update(s, r, mx, sum);
  }
}

__global__ void __launch_bounds__(FA_THREADS) k_attention_fwd(fa_geom_t g, const float *qkv, float *y, float *lse) {
  extern __shared__ float smem[];
  const fa_smem_t s = fa_smem(smem, g.hs, FA_FWD);
  const long long block = blockIdx.x;
  const int t = threadIdx.x, keys = fa_block_query_tile(&g, block) + 1;
  fa_fwd_begin(&g, qkv, block, &s, t);
  for (int jt = 0; jt < keys; jt++) {
    __syncthreads();  // the last tile's P V is done with K and V
    fa_load_kv(&g, qkv, fa_block_bh(&g, block), jt, &s, t);
    __syncthreads();
    fa_fwd_scores(&g, block, jt, &s, t);
    __syncthreads();
    fwd_softmax_rows(&s);
    __syncthreads();
    fa_fwd_accumulate(&s, g.hs, t);
  }
  __syncthreads();
  fa_fwd_end(&g, block, &s, y, lse, t);
}

// One score tile of a backward kernel: after the last tile's products, `load` the other side's
// tiles, then P and dS of query tile it against key tile jt, then `accumulate` into this block's.
template <typename Load, typename Accumulate>
__device__ inline void bwd_tile(const fa_geom_t *g, int it, int jt, const fa_smem_t *s, Load load,
                                Accumulate accumulate) {
  __syncthreads();
  load();
  __syncthreads();
  fa_bwd_scores(g, it, jt, s, threadIdx.x);
  __syncthreads();
  accumulate();
}

__global__ void __launch_bounds__(FA_THREADS)
    k_attention_bwd_dq(fa_geom_t g, const float *qkv, const float *y, const float *lse, const float *dy, float *dqkv,
                       int write, float *dd) {
  extern __shared__ float smem[];
  const fa_smem_t s = fa_smem(smem, g.hs, FA_BWD_DQ);
  const long long block = blockIdx.x;
  const int t = threadIdx.x, it = fa_block_query_tile(&g, block);
  fa_dq_begin(&g, qkv, dy, lse, block, &s, t);
  __syncthreads();
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int r = fa_row_of(t, k);
    fa_row_d(&g, block, &s, r, warp_sum(fa_lane_d(&g, y, block, &s, r, lane())), dd);
  }
  for (int jt = 0; jt <= it; jt++)  // the first tile's leading __syncthreads: D is in
    bwd_tile(&g, it, jt, &s, [&] { fa_load_kv(&g, qkv, fa_block_bh(&g, block), jt, &s, t); },
             [&] { fa_dq_accumulate(&s, g.hs, t); });
  __syncthreads();
  fa_dq_end(&g, block, &s, dqkv, write, t);
}

__global__ void __launch_bounds__(FA_THREADS)
    k_attention_bwd_dkv(fa_geom_t g, const float *qkv, const float *lse, const float *dd, const float *dy,
                        float *dqkv, int write) {
  extern __shared__ float smem[];
  const fa_smem_t s = fa_smem(smem, g.hs, FA_BWD_DKV);
  const long long block = blockIdx.x;
  const int t = threadIdx.x, jt = fa_block_key_tile(&g, block), bh = fa_block_bh(&g, block);
  fa_dkv_begin(&g, qkv, block, &s, t);
  for (int it = jt; it < g.tiles; it++)
    bwd_tile(&g, it, jt, &s, [&] { fa_load_q_dy(&g, qkv, dy, lse, dd, bh, it, &s, t); },
             [&] { fa_dkv_accumulate(&s, g.hs, t); });
  __syncthreads();
  fa_dkv_end(&g, block, &s, dqkv, write, t);
}

// Bytes of dynamic shared memory a kernel's block takes at head size hs.
static size_t smem_bytes(int hs, fa_kernel_t kind) { return (size_t)fa_smem_floats(hs, kind) * sizeof(float); }

// The most dynamic shared memory a block of this device may take (opting in beyond 48 KiB).
static size_t optin_bytes(void) {
  int dev = 0, optin = 0;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice (attention)");
  cuda_check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
             "cudaDeviceGetAttribute (shared memory per block)");
  return (size_t)optin;
}

// Let kernel's blocks take up to the device's most: one value whatever the head size, so threads
// launching at different head sizes (an in-process background deck) never undo each other's.
template <typename K>
static void allow_smem(K kernel, const char *name) {
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin_bytes()), name);
}

extern "C" int cuk_attention_fits(int hs) {
  return fa_fits(hs, (long)optin_bytes());
}

extern "C" void cuk_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, cudaStream_t s) {
  const fa_geom_t g = fa_geom(B, T, C, H);
  if (fa_blocks(&g) <= 0) return;
  const size_t bytes = smem_bytes(g.hs, FA_FWD);
  allow_smem(k_attention_fwd, "attention_fwd shared memory");
  k_attention_fwd<<<(unsigned)fa_blocks(&g), FA_THREADS, bytes, s>>>(g, qkv, y, lse);
  CUK_LAUNCHED("attention_fwd");
}

extern "C" void cuk_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse,
                                  const float *dy, float *dqkv, int write, float *dd, cudaStream_t s) {
  const fa_geom_t g = fa_geom(B, T, C, H);
  if (fa_blocks(&g) <= 0) return;
  size_t bytes = smem_bytes(g.hs, FA_BWD_DQ);
  allow_smem(k_attention_bwd_dq, "attention_bwd_dq shared memory");
  k_attention_bwd_dq<<<(unsigned)fa_blocks(&g), FA_THREADS, bytes, s>>>(g, qkv, y, lse, dy, dqkv, write, dd);
  CUK_LAUNCHED("attention_bwd_dq");
  bytes = smem_bytes(g.hs, FA_BWD_DKV);
  allow_smem(k_attention_bwd_dkv, "attention_bwd_dkv shared memory");
  k_attention_bwd_dkv<<<(unsigned)fa_blocks(&g), FA_THREADS, bytes, s>>>(g, qkv, lse, dd, dy, dqkv, write);
  CUK_LAUNCHED("attention_bwd_dkv");
}
