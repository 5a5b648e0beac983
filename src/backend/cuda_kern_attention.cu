// The fused causal attention's kernels (FlashAttention-2 on the GPU): cuda_attention_tiles.h's
// phases of (block, thread), and of (block, warp) for the bf16 form's tensor-core products, between
// __syncthreads and the warp's reductions, which tests/test_cuda_attention runs on the host over
// each kernel's whole grid. Two forms of each kernel: fp32 (CUDA cores) and bf16 (tensor cores,
// cuda_attention_mma.h); cuda_attention.c chooses. One block per tile of g.tile rows of one
// (sample, head): 32 in fp32, 64 or 32 in bf16 (fa_tile_for); the tiles live in dynamic shared
// memory sized by the head size and the tile (over 48 KiB from hs = 64 up on the fp32 backward and
// for most 64-row bf16 kernels: the launchers opt in). And the bf16 kernels with their tiles in
// registers (cuda_attention_rf.h: mma.sync, a block of 4 warps a tile of 64 rows; under 48 KiB of
// shared memory, no opt-in).
#include "backend/cuda_attention_rf.h"
#include "backend/cuda_attention_tiles.h"
#include "backend/cuda_kern.cuh"

using namespace cuk;

static_assert(FA_TILE == 32 && FA_THREADS % 32 == 0, "fp32: one key column per lane, whole warps");
static_assert(FA_TILE_WIDE % 32 == 0 && FA_TILE_WIDE <= FA_THREADS, "a tile's row values a thread each");

// The block's dynamic shared memory (one declaration for every kernel of the file), 128-byte
// aligned: FA_BF16's fragments need 32.
__device__ inline void *block_smem() {
  extern __shared__ __align__(128) unsigned char fa_block_smem[];
  return fa_block_smem;
}

// The softmax phase of the forward: each warp's rows, a score (FA_FP32) or tile / 32 scores a lane.
__device__ inline void fwd_softmax_rows(const fa_smem_t *s) {
  for (int k = 0; k < fa_rows_per_warp(s); k++) {
    const int r = fa_row_of(threadIdx.x, k);
    const float mx = fmaxf(s->m[r], warp_max(fa_lane_score(s, r, lane())));
    const double sum = warp_sum(fa_lane_exp(s, r, lane(), mx));
    __syncwarp();  // every lane has read m[r] before lane 0 moves it
    if (lane() == 0) fa_row_update(s, r, mx, sum);
  }
}

// The kernels in either form F (cuda_attention_tiles.h: FA_FP32 0, FA_BF16 1; an int, so the
// kernel table of tests/gpu/kernel_times.c names them k_attention_fwd<0> and <1>); the forms'
// phases differ only around the products, FA_BF16's split where warps (the tensor cores) and
// threads (the element-wise work) take turns.
template <int F>
__global__ void __launch_bounds__(FA_THREADS) k_attention_fwd(fa_geom_t g, const float *qkv, float *y, float *lse) {
  const fa_smem_t s = fa_smem(block_smem(), g.hs, FA_FWD, (fa_form_t)F, g.tile);
  const long long block = blockIdx.x;
  const int t = threadIdx.x, w = t / CE_WARP, keys = fa_block_query_tile(&g, block) + 1;
  fa_fwd_begin(&g, qkv, block, &s, t);
  for (int jt = 0; jt < keys; jt++) {
    __syncthreads();  // the last tile's P V is done with K and V
    fa_load_kv(&g, qkv, fa_block_bh(&g, block), jt, &s, t);
    __syncthreads();
    if (F == FA_FP32) {
      fa_fwd_scores(&g, block, jt, &s, t);
    } else {
      fa_tc_fwd_scores(&s, g.hs, w);
      __syncthreads();
      fa_tc_fwd_mask(&g, block, jt, &s, t);
    }
    __syncthreads();
    fwd_softmax_rows(&s);
    __syncthreads();
    if (F == FA_FP32) {
      fa_fwd_accumulate(&s, g.hs, t);
    } else {
      fa_tc_fwd_rescale(&s, g.hs, t);
      __syncthreads();
      fa_tc_fwd_accumulate(&s, g.hs, w);
    }
  }
  __syncthreads();
  fa_fwd_end(&g, block, &s, y, lse, t);
}

// The register kernels ask for at least 2 blocks (8 warps) an SM, so up to 255 registers a thread:
// held to fewer for more blocks (ptxas's own choice without a minimum), they spilled.
constexpr int FA_RF_MIN_BLOCKS = 2;

// A register kernel's block (g's head size set to HS): its thread, lane, (sample, head), tile (the
// query tile of the forward and dQ kernels, the key tile of the dK, dV kernel) and the first of its
// warp's 16 rows there.
struct rf_block {
  int t, ln, bh, tile, row0;
};
template <int HS>
__device__ inline rf_block rf_block_of(fa_geom_t *g, bool query_tiles) {
  g->hs = HS;
  rf_block b;
  b.t = threadIdx.x, b.ln = lane(), b.bh = fa_block_bh(g, blockIdx.x);
  b.tile = query_tiles ? fa_block_query_tile(g, blockIdx.x) : fa_block_key_tile(g, blockIdx.x);
  b.row0 = b.tile * FA_RF_TILE + b.t / CE_WARP * FA_RF_ROWS;
  return b;
}

// The bf16 forward with its tiles in registers (cuda_attention_rf.h) at head size HS (a constant,
// so every loop over hs unrolls and the lane's fragments stay in registers). A block: FA_RF_TILE
// query rows of one (sample, head), warp w its rows 16 w ..; per key tile, K and V into shared
// memory, then each warp's S = Q K^T, masked softmax and O += P V in registers.
template <int HS>
__global__ void __launch_bounds__(FA_RF_THREADS, FA_RF_MIN_BLOCKS)
    k_attention_fwd_rf(fa_geom_t g, const float *qkv, float *y, float *lse) {
  constexpr int ld = HS + 8;
  fa_bf16 *k = (fa_bf16 *)block_smem(), *v = k + FA_RF_TILE * ld;
  const rf_block b = rf_block_of<HS>(&g, true);
  const int t = b.t, ln = b.ln, bh = b.bh, it = b.tile, i0 = b.row0;
  fa_rf_lane_t x;
  fa_rf_begin(&g, qkv, bh, i0, &x, ln);
  for (int jt = 0; jt <= it; jt++) {
    __syncthreads();  // every warp is done with the last tile's K and V
    fa_rf_load_kv(&g, qkv, bh, jt, k, v, t);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < FA_RF_KT; j++) {
      x.s[j][0] = x.s[j][1] = x.s[j][2] = x.s[j][3] = 0.0f;
      if (!fa_rf_seen(i0, jt * FA_RF_TILE + j * 8)) continue;
#pragma unroll
      for (int kk = 0; kk < HS / 16; kk++) {
        uint32_t b[2];
        fa_rf_b_kt(k, ld, j, kk, ln, b);
        fa_rf_mma(x.s[j], x.q[kk], b);
      }
    }
    fa_rf_mask(&g, i0, jt, &x, ln);
    fa_rf_quad_max(&x);
    fa_rf_softmax(&x, HS);
#pragma unroll
    for (int kk = 0; kk < FA_RF_TILE / 16; kk++) {
      if (!fa_rf_seen(i0, jt * FA_RF_TILE + kk * 16)) continue;  // (P is 0 there)
      uint32_t a[4];
      fa_rf_a_p(&x, kk, a);
#pragma unroll
      for (int n = 0; n < HS / 8; n++) {
        uint32_t b[2];
        fa_rf_b_v(v, ld, kk, n, ln, b);
        fa_rf_mma(x.o[n], a, b);
      }
    }
  }
  fa_rf_quad_sum(&x);
  fa_rf_end(&g, bh, i0, &x, y, lse, ln);
}

// One k16 step of a backward rf kernel's score tile: s (+)= A B and dp = A2 B2 over hs, B from the
// tile's rows 16 kk .. of x and x2 in shared memory (the dQ kernel: K and V; the other: Q and dY).
template <int HS>
__device__ __forceinline__ void rf_scores(fa_rf_bwd_lane_t *x, const fa_bf16 *t1, const fa_bf16 *t2, int kk, int ln) {
#pragma unroll
  for (int jj = 0; jj < 2; jj++) {
    x->s[jj][0] = x->s[jj][1] = x->s[jj][2] = x->s[jj][3] = 0.0f;
    x->dp[jj][0] = x->dp[jj][1] = x->dp[jj][2] = x->dp[jj][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < HS / 16; ks++) {
      uint32_t b[2];
      fa_rf_b_kt(t1, HS + 8, 2 * kk + jj, ks, ln, b);
      fa_rf_mma(x->s[jj], x->a[ks], b);
      fa_rf_b_kt(t2, HS + 8, 2 * kk + jj, ks, ln, b);
      fa_rf_mma(x->dp[jj], x->a2[ks], b);
    }
  }
}

// acc (16 x HS) += A (the k16 step's 16 columns of c, two C fragments) B (rows 16 kk .. of tile t).
template <int HS>
__device__ __forceinline__ void rf_accumulate(float acc[][4], const float c[2][4], const fa_bf16 *t, int kk, int ln) {
  uint32_t a[4];
  fa_rf_a_of(c[0], c[1], a);
#pragma unroll
  for (int n = 0; n < HS / 8; n++) {
    uint32_t b[2];
    fa_rf_b_v(t, HS + 8, kk, n, ln, b);
    fa_rf_mma(acc[n], a, b);
  }
}

// The backward's dQ kernel with its tiles in registers (cuda_attention_rf.h): a block's warps 16
// query rows each; D of its rows first (stored to dd), then per key tile K and V in shared memory.
template <int HS>
__global__ void __launch_bounds__(FA_RF_THREADS, FA_RF_MIN_BLOCKS)
    k_attention_bwd_dq_rf(fa_geom_t g, const float *qkv, const float *y, const float *lse, const float *dy,
                          float *dqkv, int write, float *dd) {
  fa_bf16 *k = (fa_bf16 *)block_smem(), *v = k + FA_RF_TILE * (HS + 8);
  const rf_block b = rf_block_of<HS>(&g, true);
  const int t = b.t, ln = b.ln, bh = b.bh, it = b.tile, i0 = b.row0;
  fa_rf_bwd_lane_t x;
  fa_rf_dq_begin(&g, qkv, y, lse, dy, bh, i0, &x, ln);
  fa_rf_quad_dsum(&x);
  fa_rf_dq_d(&g, bh, i0, &x, dd, ln);
  for (int jt = 0; jt <= it; jt++) {
    __syncthreads();
    fa_rf_load_kv(&g, qkv, bh, jt, k, v, t);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < FA_RF_TILE / 16; kk++) {
      if (!fa_rf_seen(i0, jt * FA_RF_TILE + kk * 16)) continue;  // (dS is 0 there)
      rf_scores<HS>(&x, k, v, kk, ln);
      fa_rf_dq_ds(&g, i0, jt, kk, &x, ln);
      rf_accumulate<HS>(x.acc, x.s, k, kk, ln);
    }
  }
  fa_rf_put(&g, dqkv, fa_qkv_row(&g, bh, 0), 3LL * g.C, i0, x.acc, write, ln);
}

// The backward's dK, dV kernel with its tiles in registers: a block's warps 16 key rows each; per
// query tile from its own on, Q, dY, lse and D in shared memory. At HS = 128 its K, V, dK and dV
// fragments need more than 255 registers, so it is not built there.
template <int HS>
__global__ void __launch_bounds__(FA_RF_THREADS, FA_RF_MIN_BLOCKS)
    k_attention_bwd_dkv_rf(fa_geom_t g, const float *qkv, const float *lse, const float *dd, const float *dy,
                           float *dqkv, int write) {
  fa_bf16 *q = (fa_bf16 *)block_smem(), *dyt = q + FA_RF_TILE * (HS + 8);
  float *ls = (float *)(dyt + FA_RF_TILE * (HS + 8)), *ds = ls + FA_RF_TILE;
  const rf_block b = rf_block_of<HS>(&g, false);
  const int t = b.t, ln = b.ln, bh = b.bh, jt = b.tile, j0 = b.row0;
  fa_rf_bwd_lane_t x;
  fa_rf_dkv_begin(&g, qkv, bh, j0, &x, ln);
  for (int it = jt; it < g.tiles; it++) {
    __syncthreads();
    fa_rf_load_q_dy(&g, qkv, dy, lse, dd, bh, it, q, dyt, ls, ds, t);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < FA_RF_TILE / 16; kk++) {
      if (!fa_rf_seen(it * FA_RF_TILE + kk * 16, j0)) continue;  // (P^T and dS^T are 0 there)
      rf_scores<HS>(&x, q, dyt, kk, ln);
      fa_rf_dkv_ds(&g, j0, it, kk, ls, ds, &x, ln);
      rf_accumulate<HS>(x.acc2, x.s, dyt, kk, ln);  // dV += P^T dY
      rf_accumulate<HS>(x.acc, x.dp, q, kk, ln);    // dK += dS^T Q
    }
  }
  const long long dk = fa_qkv_row(&g, bh, 0) + g.C;  // (and dv C further)
  fa_rf_put(&g, dqkv, dk, 3LL * g.C, j0, x.acc, write, ln);
  fa_rf_put(&g, dqkv, dk + g.C, 3LL * g.C, j0, x.acc2, write, ln);
}

// One score tile of a backward kernel: after the last tile's products, `load` the other side's
// tiles, then P and dS of query tile it against key tile jt, then `accumulate` into this block's.
template <int F, typename Load, typename Accumulate>
__device__ inline void bwd_tile(const fa_geom_t *g, int it, int jt, const fa_smem_t *s, Load load,
                                Accumulate accumulate) {
  __syncthreads();
  load();
  __syncthreads();
  if (F == FA_FP32) {
    fa_bwd_scores(g, it, jt, s, threadIdx.x);
  } else {
    fa_tc_bwd_scores(s, g->hs, threadIdx.x / CE_WARP);
    __syncthreads();
    fa_tc_bwd_probs(g, it, jt, s, threadIdx.x);
  }
  __syncthreads();
  accumulate();
}

template <int F>
__global__ void __launch_bounds__(FA_THREADS)
    k_attention_bwd_dq(fa_geom_t g, const float *qkv, const float *y, const float *lse, const float *dy, float *dqkv,
                       int write, float *dd) {
  const fa_smem_t s = fa_smem(block_smem(), g.hs, FA_BWD_DQ, (fa_form_t)F, g.tile);
  const long long block = blockIdx.x;
  const int t = threadIdx.x, w = t / CE_WARP, it = fa_block_query_tile(&g, block);
  fa_dq_begin(&g, qkv, dy, lse, block, &s, t);
  for (int k = 0; k < fa_rows_per_warp(&s); k++) {
    const int r = fa_row_of(t, k);
    fa_row_d(&g, block, &s, r, warp_sum(fa_lane_d(&g, y, dy, block, r, lane(), F == FA_BF16)), dd);
  }
  for (int jt = 0; jt <= it; jt++)  // the first tile's leading __syncthreads: D is in
    bwd_tile<F>(&g, it, jt, &s, [&] { fa_load_kv(&g, qkv, fa_block_bh(&g, block), jt, &s, t); },
                [&] {
                  if (F == FA_FP32) fa_dq_accumulate(&s, g.hs, t);
                  else fa_tc_dq_accumulate(&s, g.hs, w);
                });
  __syncthreads();
  fa_dq_end(&g, block, &s, dqkv, write, t);
}

template <int F>
__global__ void __launch_bounds__(FA_THREADS)
    k_attention_bwd_dkv(fa_geom_t g, const float *qkv, const float *lse, const float *dd, const float *dy,
                        float *dqkv, int write) {
  const fa_smem_t s = fa_smem(block_smem(), g.hs, FA_BWD_DKV, (fa_form_t)F, g.tile);
  const long long block = blockIdx.x;
  const int t = threadIdx.x, w = t / CE_WARP, jt = fa_block_key_tile(&g, block), bh = fa_block_bh(&g, block);
  fa_dkv_begin(&g, qkv, block, &s, t);
  for (int it = jt; it < g.tiles; it++)
    bwd_tile<F>(&g, it, jt, &s, [&] { fa_load_q_dy(&g, qkv, dy, lse, dd, bh, it, &s, t); },
                [&] {
                  if (F == FA_FP32) fa_dkv_accumulate(&s, g.hs, t);
                  else fa_tc_dkv_accumulate(&s, g.hs, w);
                });
  __syncthreads();
  fa_dkv_end(&g, block, &s, dqkv, write, t);
}

// Bytes of dynamic shared memory a kernel's block of call g takes.
static size_t smem_bytes(const fa_geom_t &g, fa_kernel_t kind, int form) {
  return (size_t)fa_smem_bytes(g.hs, kind, (fa_form_t)form, g.tile);
}

// This device has bf16 tensor cores for WMMA (compute capability 8.0 on).
static int has_bf16_mma(void) {
  static thread_local int major = -1;
  return device_attribute(cudaDevAttrComputeCapabilityMajor, &major, "cudaDeviceGetAttribute (compute capability)") >= 8;
}

static fa_form_t form_of(int tc) { return tc ? FA_BF16 : FA_FP32; }

extern "C" int cuk_attention_tile(int hs, int wmma, int most) {
  if (wmma && !has_bf16_mma()) return 0;
  const long optin = (long)optin_bytes();
  const fa_form_t form = form_of(wmma);
  const int tile = fa_tile_for(hs, optin, form);
  return most > 0 && tile > most ? FA_TILE : tile;  // (most is 32: where 64 rows fit, 32 do)
}

// The head sizes the register-fragment kernels are compiled for (each an instance of their
// templates): the forward 16, 32, 64, 128; the backward 16, 32, 64.
extern "C" int cuk_attention_rf_fits(int hs, int fwd) {
  return has_bf16_mma() && (hs == 16 || hs == 32 || hs == 64 || (fwd && hs == 128));
}

// (The register kernels' shared memory is within the 48 KiB every launch may take, at most 35 KiB:
// tests/test_cuda_attention checks it; they need no opt-in.)
template <int HS>
static void attention_fwd_rf(const fa_geom_t &g, const float *qkv, float *y, float *lse, cudaStream_t s) {
  k_attention_fwd_rf<HS><<<(unsigned)fa_blocks(&g), FA_RF_THREADS, (size_t)fa_rf_smem_bytes(HS), s>>>(g, qkv, y, lse);
  CUK_LAUNCHED("attention_fwd (bf16, tiles in registers)");
}

template <int HS>
static void attention_bwd_rf(const fa_geom_t &g, const float *qkv, const float *y, const float *lse, const float *dy,
                             float *dqkv, int write, float *dd, cudaStream_t s) {
  k_attention_bwd_dq_rf<HS><<<(unsigned)fa_blocks(&g), FA_RF_THREADS, (size_t)fa_rf_smem_bytes(HS), s>>>(
      g, qkv, y, lse, dy, dqkv, write, dd);
  CUK_LAUNCHED("attention_bwd_dq (bf16, tiles in registers)");
  k_attention_bwd_dkv_rf<HS><<<(unsigned)fa_blocks(&g), FA_RF_THREADS, (size_t)fa_rf_bwd_smem_bytes(HS), s>>>(
      g, qkv, lse, dd, dy, dqkv, write);
  CUK_LAUNCHED("attention_bwd_dkv (bf16, tiles in registers)");
}

template <int F>
static void attention_fwd(const fa_geom_t &g, const float *qkv, float *y, float *lse, cudaStream_t s) {
  static thread_local bool allowed = false;  // one per form F
  allow_most_smem(k_attention_fwd<F>, "attention_fwd shared memory", &allowed);
  k_attention_fwd<F><<<(unsigned)fa_blocks(&g), FA_THREADS, smem_bytes(g, FA_FWD, F), s>>>(g, qkv, y, lse);
  CUK_LAUNCHED(F == FA_BF16 ? "attention_fwd (bf16 tensor cores)" : "attention_fwd");
}

template <int F>
static void attention_bwd(const fa_geom_t &g, const float *qkv, const float *y, const float *lse, const float *dy,
                          float *dqkv, int write, float *dd, cudaStream_t s) {
  static thread_local bool allowed[2] = {false, false};  // dQ, dK dV kernels of form F
  allow_most_smem(k_attention_bwd_dq<F>, "attention_bwd_dq shared memory", &allowed[0]);
  k_attention_bwd_dq<F><<<(unsigned)fa_blocks(&g), FA_THREADS, smem_bytes(g, FA_BWD_DQ, F), s>>>(
      g, qkv, y, lse, dy, dqkv, write, dd);
  CUK_LAUNCHED(F == FA_BF16 ? "attention_bwd_dq (bf16 tensor cores)" : "attention_bwd_dq");
  allow_most_smem(k_attention_bwd_dkv<F>, "attention_bwd_dkv shared memory", &allowed[1]);
  k_attention_bwd_dkv<F><<<(unsigned)fa_blocks(&g), FA_THREADS, smem_bytes(g, FA_BWD_DKV, F), s>>>(
      g, qkv, lse, dd, dy, dqkv, write);
  CUK_LAUNCHED(F == FA_BF16 ? "attention_bwd_dkv (bf16 tensor cores)" : "attention_bwd_dkv");
}

extern "C" void cuk_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, int kernels,
                                  int tile, cudaStream_t s) {
  if (kernels == CUK_ATT_RF) {  // its own tiles of FA_RF_TILE query rows
    const fa_geom_t g = fa_geom(B, T, C, H, FA_RF_TILE);
    if (fa_blocks(&g) <= 0) return;
    switch (g.hs) {
    case 16: attention_fwd_rf<16>(g, qkv, y, lse, s); return;
    case 32: attention_fwd_rf<32>(g, qkv, y, lse, s); return;
    case 64: attention_fwd_rf<64>(g, qkv, y, lse, s); return;
    case 128: attention_fwd_rf<128>(g, qkv, y, lse, s); return;
    default: break;  // (cuk_attention_rf_fits refused it): the WMMA forward
    }
  }
  const fa_geom_t g = fa_geom(B, T, C, H, tile);
  if (fa_blocks(&g) <= 0) return;
  if (kernels != CUK_ATT_FP32) attention_fwd<FA_BF16>(g, qkv, y, lse, s);
  else attention_fwd<FA_FP32>(g, qkv, y, lse, s);
}

extern "C" void cuk_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse,
                                  const float *dy, float *dqkv, int write, float *dd, int kernels, int tile,
                                  cudaStream_t s) {
  if (kernels == CUK_ATT_RF) {  // its own tiles of FA_RF_TILE rows
    const fa_geom_t g = fa_geom(B, T, C, H, FA_RF_TILE);
    if (fa_blocks(&g) <= 0) return;
    switch (g.hs) {
    case 16: attention_bwd_rf<16>(g, qkv, y, lse, dy, dqkv, write, dd, s); return;
    case 32: attention_bwd_rf<32>(g, qkv, y, lse, dy, dqkv, write, dd, s); return;
    case 64: attention_bwd_rf<64>(g, qkv, y, lse, dy, dqkv, write, dd, s); return;
    default: break;  // (cuk_attention_rf_fits refused it): the WMMA kernels
    }
  }
  const fa_geom_t g = fa_geom(B, T, C, H, tile);
  if (fa_blocks(&g) <= 0) return;
  if (kernels != CUK_ATT_FP32) attention_bwd<FA_BF16>(g, qkv, y, lse, dy, dqkv, write, dd, s);
  else attention_bwd<FA_FP32>(g, qkv, y, lse, dy, dqkv, write, dd, s);
}
