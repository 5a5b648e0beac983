/* The CUDA backend's row kernels (cuda_kern_rows.cu: softmax, its backward, layer norm and its input
 * gradient, cross-entropy) as functions of (row, lane) that compile for the GPU and for the host.
 * A kernel is one warp per row; its work is phases of per-lane loops (lane, lane + 32, ...)
 * separated by the warp's reductions: on the GPU the shuffles of cuda_kern.cuh, on the host
 * ce_host_warp_sum / ce_host_warp_max below, the same xor tree, so the same bits. tests/test_cuda_rows
 * runs each kernel's whole grid on the host this way and checks bounds, tails, one write per
 * element and the values against ref. Every store goes through CE_STORE, which the harness
 * defines to record it (default: a plain store). */
#ifndef SURGE_BACKEND_CUDA_ROWS_H
#define SURGE_BACKEND_CUDA_ROWS_H

#include "backend/cuda_elem.h"

#ifndef CE_STORE
#define CE_STORE(p, i, v) ((p)[i] = (v))
#endif

enum { CE_WARP = 32, CE_ROW_WARPS = 8 }; /* lanes of a warp; rows (warps) per block of a row kernel */

/* The row of thread `thread` of block `block`, and its lane. */
CE_FN long long ce_warp_row(long long block, int thread) { return block * CE_ROW_WARPS + (thread >> 5); }
CE_FN int ce_lane(int thread) { return thread & (CE_WARP - 1); }

/* ---- softmax of row r of n scores: causal (T > 0: r % T + 1 valid columns) or whole (T = 0) */

CE_FN int ce_softmax_valid(long long r, int n, int T) { return T ? (int)(r % T) + 1 : n; }

/* phase 1: this lane's max of scale s over the valid columns; phase 2: its sum of exp(scale s - mx) */
CE_FN float ce_softmax_lane_max(const float *sr, int valid, float scale, int lane) {
  float mx = -INFINITY;
  for (int j = lane; j < valid; j += CE_WARP) mx = fmaxf(mx, scale * sr[j]);
  return mx;
}
CE_FN double ce_softmax_lane_sum(const float *sr, int valid, float scale, float mx, int lane) {
  double sum = 0.0;
  for (int j = lane; j < valid; j += CE_WARP) sum += expf(scale * sr[j] - mx);
  return sum;
}
/* phase 3: this lane's probabilities of row r (0 past valid) and, lane 0, lse[r] (lse may be NULL) */
CE_FN void ce_softmax_lane_write(long long r, int n, int valid, const float *sr, float scale, float mx, double sum,
                                 float *p, float *lse, int lane) {
  float inv = (float)(1.0 / sum);
  for (int j = lane; j < n; j += CE_WARP)
    CE_STORE(p, r * n + j, j < valid ? ce_softmax_prob(sr[j], scale, mx, inv) : 0.0f);
  if (lse && lane == 0) CE_STORE(lse, r, mx + (float)log(sum));
}

/* ---- causal softmax backward of row r of T: phase 1 this lane's part of sum p dp; phase 2 its ds */
CE_FN double ce_softmax_bwd_lane_dot(const float *pr, const float *dpr, int T, int lane) {
  double dot = 0.0;
  for (int j = lane; j < T; j += CE_WARP) dot += (double)pr[j] * dpr[j];
  return dot;
}
CE_FN void ce_softmax_bwd_lane_write(long long r, int T, const float *pr, const float *dpr, double dot, float scale,
                                     float *ds, int lane) {
  for (int j = lane; j < T; j += CE_WARP) CE_STORE(ds, r * T + j, ce_softmax_grad(pr[j], dpr[j], dot, scale));
}

/* ---- layer norm of row r of C (stats of a sample of `rows` rows: its means, then its rstds) */

CE_FN long long ce_stat_at(long long r, int rows) { return (r / rows) * 2 * rows + r % rows; }

/* phase 1: this lane's sum of x; phase 2: its sum of (x - m)^2 */
CE_FN double ce_ln_lane_sum(const float *xr, int C, int lane) {
  double m = 0.0;
  for (int c = lane; c < C; c += CE_WARP) m += xr[c];
  return m;
}
CE_FN double ce_ln_lane_var(const float *xr, int C, double m, int lane) {
  double var = 0.0;
  for (int c = lane; c < C; c += CE_WARP) var += ((double)xr[c] - m) * ((double)xr[c] - m);
  return var;
}
/* phase 3: this lane's y of row r and, lane 0, the row's mean and rstd */
CE_FN void ce_ln_lane_write(long long r, int rows, int C, const float *xr, const float *w, const float *b, float mean,
                            float rstd, float *y, float *stats, int lane) {
  for (int c = lane; c < C; c += CE_WARP) CE_STORE(y, r * C + c, ce_layernorm_y(xr[c], mean, rstd, w[c], b[c]));
  if (lane == 0) {
    CE_STORE(stats, ce_stat_at(r, rows), mean);
    CE_STORE(stats, ce_stat_at(r, rows) + rows, rstd);
  }
}

/* layer norm's input gradient: phase 1 this lane's sums of dxhat and dxhat xhat (into md, mdx);
 * phase 2 its dx of row r, = (wr) or += */
CE_FN void ce_ln_bwd_lane_sums(const float *xr, const float *dyr, const float *w, int C, float mean, float rstd,
                               int lane, double *md, double *mdx) {
  *md = 0.0, *mdx = 0.0;
  for (int c = lane; c < C; c += CE_WARP) {
    double dxhat = (double)dyr[c] * w[c];
    *md += dxhat;
    *mdx += dxhat * (((double)xr[c] - mean) * rstd);
  }
}
CE_FN void ce_ln_bwd_lane_write(long long r, int C, const float *xr, const float *dyr, const float *w, float mean,
                                float rstd, double md, double mdx, float *dx, int wr, int lane) {
  for (int c = lane; c < C; c += CE_WARP)
    CE_STORE(dx, r * C + c, (wr ? 0.0f : dx[r * C + c]) + ce_layernorm_dx(xr[c], dyr[c], w[c], mean, rstd, md, mdx));
}

/* ---- cross-entropy of row r of V logits: phase 1 this lane's max; phase 2 its sum of exp(l - mx);
 * phase 3 (after every lane read the target's logit: dlogits may be the logits) lane 0's loss and
 * this lane's gradient (dlogits may be NULL) */
CE_FN float ce_xent_lane_max(const float *lr, int V, int lane) {
  float mx = -INFINITY;
  for (int v = lane; v < V; v += CE_WARP) mx = fmaxf(mx, lr[v]);
  return mx;
}
CE_FN double ce_xent_lane_sum(const float *lr, int V, float mx, int lane) {
  double sum = 0.0;
  for (int v = lane; v < V; v += CE_WARP) sum += expf(lr[v] - mx);
  return sum;
}
CE_FN void ce_xent_lane_write(long long r, int V, const float *lr, int t, float target_logit, float mx, double sum,
                              float grad_scale, float *dlogits, double *loss, int lane) {
  if (lane == 0) CE_STORE(loss, r, ce_xent_loss(mx, sum, target_logit));
  if (dlogits)
    for (int v = lane; v < V; v += CE_WARP)
      CE_STORE(dlogits, r * V + v, ce_xent_grad(lr[v], mx, (float)sum, v == t, grad_scale));
}

#ifndef __CUDACC__
/* The host's warp reductions: the device's xor tree (each round, lane l combines its value with lane
 * l ^ o's, o = 16, 8, .. 1), so every lane ends with the same bits as on the GPU; v[CE_WARP] holds
 * the lanes' values and is left holding the result in every lane. */
static inline double ce_host_warp_sum(double *v) {
  for (int o = CE_WARP / 2; o > 0; o >>= 1) {
    double n[CE_WARP];
    for (int l = 0; l < CE_WARP; l++) n[l] = v[l] + v[l ^ o];
    for (int l = 0; l < CE_WARP; l++) v[l] = n[l];
  }
  return v[0];
}
static inline float ce_host_warp_max(float *v) {
  for (int o = CE_WARP / 2; o > 0; o >>= 1) {
    float n[CE_WARP];
    for (int l = 0; l < CE_WARP; l++) n[l] = fmaxf(v[l], v[l ^ o]);
    for (int l = 0; l < CE_WARP; l++) v[l] = n[l];
  }
  return v[0];
}
#endif

#endif
