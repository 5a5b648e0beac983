// Row kernels of the CUDA backend: one warp per row (softmax, layer norm, cross-entropy and its
// vocabulary shards, average pooling). The lanes stride along the row (coalesced), the row's max and
// sums come from the warp's fixed reduction tree (sums in double), then each lane writes its
// elements with the arithmetic of cuda_elem.h. The softmax, layer norm and cross-entropy kernels
// are cuda_rows.h's phases of (row, lane) between the warp's reductions, which
// tests/test_cuda_rows runs on the host over each kernel's whole grid.
#include "backend/cuda_kern.cuh"
#include "backend/cuda_ln_bwd.h"

using namespace cuk;

static_assert(kRowWarps == CE_ROW_WARPS, "cuda_rows.h's grid is the row kernels' grid");

// ---- softmax: causal (rows of length T in BH blocks of (T,T); row i of a block has i+1 valid
// columns) and of whole rows (softmax_rows)

// Rows of n; T > 0: row r has r % T + 1 valid columns (causal), T = 0: all n (softmax_rows). lse (or
// NULL): each row's log-sum-exp of its scaled scores.
__global__ void k_softmax_fwd(long nrows, int n, int T, float scale, const float *sc, float *p, float *lse) {
  long r = warp_row();
  if (r >= nrows) return;
  const int valid = ce_softmax_valid(r, n, T);
  const float *sr = sc + r * n;
  const float mx = warp_max(ce_softmax_lane_max(sr, valid, scale, lane()));
  const double sum = warp_sum(ce_softmax_lane_sum(sr, valid, scale, mx, lane()));
  ce_softmax_lane_write(r, n, valid, sr, scale, mx, sum, p, lse, lane());
}

__global__ void k_softmax_bwd(long nrows, int T, float scale, const float *p, const float *dp, float *ds) {
  long r = warp_row();
  if (r >= nrows) return;
  const float *pr = p + r * T, *dpr = dp + r * T;
  const double dot = warp_sum(ce_softmax_bwd_lane_dot(pr, dpr, T, lane()));
  ce_softmax_bwd_lane_write(r, T, pr, dpr, dot, scale, ds, lane());
}

extern "C" void cuk_softmax_fwd(int BH, int T, float scale, const float *sc, float *p, cudaStream_t s) {
  long rows = (long)BH * T;
  if (rows <= 0) return;
  k_softmax_fwd<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, T, T, scale, sc, p, nullptr);
  CUK_LAUNCHED("causal_softmax_fwd");
}

extern "C" void cuk_softmax_lse(int BH, int T, float scale, const float *sc, float *p, float *lse, cudaStream_t s) {
  long rows = (long)BH * T;
  if (rows <= 0) return;
  k_softmax_fwd<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, T, T, scale, sc, p, lse);
  CUK_LAUNCHED("attention_softmax");
}

extern "C" void cuk_softmax_rows(int rows, int n, float scale, const float *sc, float *p, cudaStream_t s) {
  if (rows <= 0 || n <= 0) return;
  k_softmax_fwd<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, n, 0, scale, sc, p, nullptr);
  CUK_LAUNCHED("softmax_rows");
}

extern "C" void cuk_softmax_bwd(int BH, int T, float scale, const float *p, const float *dp, float *ds,
                                cudaStream_t s) {
  long rows = (long)BH * T;
  if (rows <= 0) return;
  k_softmax_bwd<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, T, scale, p, dp, ds);
  CUK_LAUNCHED("causal_softmax_bwd");
}

// ---- layer norm over rows of C; stats (N, 2, rows): the sample's row means, then its row rstd

__global__ void k_layernorm_fwd(long nrows, int rows, int C, const float *x, const float *w, const float *b,
                                float eps, float *y, float *stats) {
  long r = warp_row();
  if (r >= nrows) return;
  const float *xr = x + r * C;
  const double m = warp_sum(ce_ln_lane_sum(xr, C, lane())) / C;
  const double var = warp_sum(ce_ln_lane_var(xr, C, m, lane())) / C;
  ce_ln_lane_write(r, rows, C, xr, w, b, (float)m, ce_layernorm_rstd(var, eps), y, stats, lane());
}

// The input gradient of row r (warp-wide): dx = (wr) or += (layernorm_bwd).
__device__ inline void layernorm_dx_row(long r, int rows, int C, const float *x, const float *w, const float *stats,
                                        const float *dy, float *dx, int wr) {
  const float mean = stats[ce_stat_at(r, rows)], rstd = stats[ce_stat_at(r, rows) + rows];
  const float *xr = x + r * C, *dyr = dy + r * C;
  double md, mdx;
  ce_ln_bwd_lane_sums(xr, dyr, w, C, mean, rstd, lane(), &md, &mdx);
  md = warp_sum(md) / C;
  mdx = warp_sum(mdx) / C;
  ce_ln_bwd_lane_write(r, C, xr, dyr, w, mean, rstd, md, mdx, dx, wr, lane());
}

__global__ void k_layernorm_bwd_dx(long nrows, int rows, int C, const float *x, const float *w, const float *stats,
                                   const float *dy, float *dx, int wr) {
  long r = warp_row();
  if (r >= nrows) return;
  layernorm_dx_row(r, rows, C, x, w, stats, dy, dx, wr);
}

// The input gradient and the blocks' parts of dw and db in one pass (cuda_ln_bwd.h); acc: 2C doubles
// of dynamic shared memory.
__global__ void k_layernorm_bwd(ce_cols_t s, const float *w, float *dx, int wr) {
  extern __shared__ double acc[];
  const int t = (int)threadIdx.x;
  ce_lnb_thread_zero(&s, t, acc);
  for (long long g = blockIdx.x; g * CE_ROW_WARPS < s.rows; g += gridDim.x) {
    const long long r = g * CE_ROW_WARPS + (t >> 5);
    if (r < s.rows) layernorm_dx_row((long)r, s.per, s.cols, s.b, w, s.stats, s.a, dx, wr);
    ce_lnb_thread_add(&s, g * CE_ROW_WARPS, t, acc);
  }
  ce_lnb_thread_write(&s, blockIdx.x, t, acc);
}

extern "C" void cuk_layernorm_fwd(int N, int rows, int C, const float *x, const float *w, const float *b, float eps,
                                  float *y, float *stats, cudaStream_t s) {
  long nrows = (long)N * rows;
  if (nrows <= 0) return;
  k_layernorm_fwd<<<row_blocks(nrows), kRowWarps * 32, 0, s>>>(nrows, rows, C, x, w, b, eps, y, stats);
  CUK_LAUNCHED("layernorm_fwd");
}

// The fused kernel's shared memory (2C doubles) where the device allows it (above 48 KiB by opting
// in, to the device's most: cuk::allow_most_smem); 0 where it does not.
static size_t layernorm_bwd_shared(int C) {
  static thread_local bool allowed = false;
  const size_t need = 2 * (size_t)C * sizeof(double);
  if (need <= (size_t)(48 << 10)) return need;
  allow_most_smem(k_layernorm_bwd, "layernorm_bwd shared memory", &allowed);
  return need > optin_bytes() ? 0 : need;
}

extern "C" void cuk_layernorm_bwd(int N, int rows, int C, const float *x, const float *w, const float *stats,
                                  const float *dy, float *dx, int wr, float *dw, float *db, cudaStream_t s) {
  long nrows = (long)N * rows;
  if (nrows <= 0 || C <= 0) return;
  const size_t shared = layernorm_bwd_shared(C);
  if (!shared) { // a row too wide for one block's accumulators: the input gradient, then the column sums
    k_layernorm_bwd_dx<<<row_blocks(nrows), kRowWarps * 32, 0, s>>>(nrows, rows, C, x, w, stats, dy, dx, wr);
    CUK_LAUNCHED("layernorm_bwd");
    cuk_layernorm_params(nrows, rows, C, x, stats, dy, dw, db, s);
    return;
  }
  ce_cols_t sums = ce_lnb_sums(nrows, rows, C, x, stats, dy, dw, db, nullptr);
  sums.part = (double *)cuda_workspace(CUDA_WS_RED, (size_t)sums.chunks * 2 * C * sizeof(double));
  k_layernorm_bwd<<<(unsigned)sums.chunks, CE_LNB_THREADS, shared, s>>>(sums, w, dx, wr);
  CUK_LAUNCHED("layernorm_bwd");
  cuk_cols_finish(&sums, s);
}

// ---- cross-entropy over rows of V logits

__global__ void k_xent_rows(int rows, int V, const float *logits, const float *targets, float grad_scale,
                            float *dlogits, double *loss) {
  long r = warp_row();
  if (r >= rows) return;
  const float *lr = logits + r * V;
  const int t = (int)targets[r];
  const float mx = warp_max(ce_xent_lane_max(lr, V, lane()));
  const double sum = warp_sum(ce_xent_lane_sum(lr, V, mx, lane()));
  const float target_logit = lr[t];
  __syncwarp(); // dlogits may be logits (in place): every lane has read the target's logit before any writes
  ce_xent_lane_write(r, V, lr, t, target_logit, mx, sum, grad_scale, dlogits, loss, lane());
}

// The first maximum of a row: each lane's best (larger value, or the same value further left), then
// the warp's, combined the same way.
__device__ inline void better(float v, int i, float *bv, int *bi) {
  if (*bi < 0 || v > *bv || (v == *bv && i < *bi)) *bv = v, *bi = i;
}

__global__ void k_argmax_hits(int rows, int V, const float *logits, const float *targets, double *hit) {
  long r = warp_row();
  if (r >= rows) return;
  const float *lr = logits + r * V;
  float bv = 0.0f;
  int bi = -1;
  for (int v = lane(); v < V; v += 32) better(lr[v], v, &bv, &bi);
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(kFull, bv, o);
    int oi = __shfl_xor_sync(kFull, bi, o);
    if (oi >= 0) better(ov, oi, &bv, &bi);
  }
  if (lane() == 0) hit[r] = bi == (int)targets[r] ? 1.0 : 0.0;
}

__global__ void k_row_max(int rows, int V, const float *logits, float *mx) {
  long r = warp_row();
  if (r >= rows) return;
  float m = -INFINITY;
  for (int v = lane(); v < V; v += 32) m = fmaxf(m, logits[r * V + v]);
  m = warp_max(m);
  if (lane() == 0) mx[r] = m;
}

__global__ void k_xent_shard_stats(int rows, int V, int lo, const float *logits, const float *targets,
                                   const float *mx, float *sumexp, float *tgt) {
  long r = warp_row();
  if (r >= rows) return;
  double sum = 0.0;
  for (int v = lane(); v < V; v += 32) sum += exp((double)logits[r * V + v] - mx[r]);
  sum = warp_sum(sum);
  if (lane() == 0) {
    long t = ce_shard_column(targets[r], lo, V);
    sumexp[r] = (float)sum;
    tgt[r] = t >= 0 ? logits[r * V + t] : 0.0f;
  }
}

__global__ void k_xent_shard_bwd(size_t n, int V, int lo, const float *logits, const float *targets,
                                 const float *mx, const float *sumexp, float grad_scale, float *dlogits) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    size_t r = i / (size_t)V;
    long v = (long)(i % (size_t)V);
    dlogits[i] = ce_xent_grad(logits[i], mx[r], sumexp[r], v == ce_shard_column(targets[r], lo, V), grad_scale);
  }
}

__global__ void k_row_first_index(int rows, int V, int lo, const float *logits, const float *mx, float *first) {
  long r = warp_row();
  if (r >= rows) return;
  int at = V; /* none */
  for (int v = lane(); v < V && at == V; v += 32)
    if (logits[r * V + v] == mx[r]) at = v;
  at = warp_min_int(at);
  if (lane() == 0) first[r] = at < V ? (float)(lo + at) : 3e38f;
}

extern "C" void cuk_xent_rows(int rows, int V, const float *logits, const float *targets, float grad_scale,
                              float *dlogits, double *loss, cudaStream_t s) {
  if (rows <= 0) return;
  k_xent_rows<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, V, logits, targets, grad_scale, dlogits, loss);
  CUK_LAUNCHED("xent_fwd_bwd");
}

extern "C" void cuk_argmax_hits(int rows, int V, const float *logits, const float *targets, double *hit,
                                cudaStream_t s) {
  if (rows <= 0) return;
  k_argmax_hits<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, V, logits, targets, hit);
  CUK_LAUNCHED("count_correct");
}

extern "C" void cuk_row_max(int rows, int V, const float *logits, float *mx, cudaStream_t s) {
  if (rows <= 0) return;
  k_row_max<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, V, logits, mx);
  CUK_LAUNCHED("row_max");
}

extern "C" void cuk_xent_shard_stats(int rows, int V, int lo, const float *logits, const float *targets,
                                     const float *mx, float *sumexp, float *tgt, cudaStream_t s) {
  if (rows <= 0) return;
  k_xent_shard_stats<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, V, lo, logits, targets, mx, sumexp, tgt);
  CUK_LAUNCHED("xent_shard_stats");
}

extern "C" void cuk_xent_shard_bwd(int rows, int V, int lo, const float *logits, const float *targets,
                                   const float *mx, const float *sumexp, float grad_scale, float *dlogits,
                                   cudaStream_t s) {
  size_t n = (size_t)rows * V;
  if (!n) return;
  k_xent_shard_bwd<<<blocks_for(n), kThreads, 0, s>>>(n, V, lo, logits, targets, mx, sumexp, grad_scale, dlogits);
  CUK_LAUNCHED("xent_shard_bwd");
}

extern "C" void cuk_row_first_index(int rows, int V, int lo, const float *logits, const float *mx, float *first,
                                    cudaStream_t s) {
  if (rows <= 0) return;
  k_row_first_index<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(rows, V, lo, logits, mx, first);
  CUK_LAUNCHED("row_first_index");
}

// ---- average pooling: one warp per plane

__global__ void k_avgpool_fwd(int P, int HW, const float *x, float *y) {
  long p = warp_row();
  if (p >= P) return;
  double sum = 0.0;
  for (int i = lane(); i < HW; i += 32) sum += x[p * HW + i];
  sum = warp_sum(sum);
  if (lane() == 0) y[p] = (float)(sum / HW);
}

extern "C" void cuk_avgpool_fwd(int P, int HW, const float *x, float *y, cudaStream_t s) {
  if (P <= 0) return;
  k_avgpool_fwd<<<row_blocks(P), kRowWarps * 32, 0, s>>>(P, HW, x, y);
  CUK_LAUNCHED("avgpool_fwd");
}
