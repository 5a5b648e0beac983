/* "cpu" backend ops over rows of features: layer norm, embeddings, causal softmax and softmax
 * cross-entropy. Row reductions of fixed length (T or V) are float with 8 lanes; layer norm's row
 * statistics and every sum over many rows (the loss, parameter gradients) are double, or float
 * within a short block of rows and double across blocks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "backend/step_rules.h"
#include "core/error.h"

/* ---- layer norm */

/* One row of C: yr = layer norm of xr; its mean and rstd to st[0] and st[rows]. Row statistics in
 * double (C terms each), the rest of the row work in float. */
static inline __attribute__((always_inline)) void ln_fwd_row(int rows, int C, const float *restrict xr,
                                                             const float *restrict w, const float *restrict b,
                                                             float eps, float *restrict yr, float *restrict st) {
  const float m = (float)(cpu_sum_d(xr, (size_t)C) / C);
  // two passes: centre into y, then the variance of y
  for (int c = 0; c < C; c++) yr[c] = xr[c] - m;
  double var = 0.0;
  for (int c = 0; c < C; c++) var += (double)yr[c] * yr[c];
  const float rs = (float)(1.0 / sqrt(var / C + eps));
  for (int c = 0; c < C; c++) yr[c] = yr[c] * rs * w[c] + b[c];
  st[0] = m;
  st[rows] = rs;
}

CPU_CLONES void cpu_layernorm_fwd(int N, int rows, int C, const float *restrict x, const float *restrict w,
                       const float *restrict b, float eps, float *restrict y, float *restrict stats) {
  for (size_t row = 0; row < (size_t)N * rows; row++) /* stats: each sample's means, then its rstds */
    ln_fwd_row(rows, C, x + row * C, w, b, eps, y + row * C, stats + (row / rows) * 2 * rows + row % rows);
}

/* The residual join and the layer norm after it, row by row: each row's sum is normalised while it
 * is in L1 (apart, the norm read the whole sum back from memory). */
CPU_CLONES void cpu_add_layernorm_fwd(int N, int rows, int C, const float *restrict a, const float *restrict b,
                                      const float *restrict w, const float *restrict bias, float eps,
                                      float *restrict sum, float *restrict y, float *restrict stats) {
  for (size_t row = 0; row < (size_t)N * rows; row++) {
    const size_t at = row * C;
    for (int c = 0; c < C; c++) sum[at + c] = a[at + c] + b[at + c];
    ln_fwd_row(rows, C, sum + at, w, bias, eps, y + at, stats + (row / rows) * 2 * rows + row % rows);
  }
}

/* Rows per block of the weight and bias gradient sums: float inside a block, double across. */
enum { CPU_LN_ROW_BLOCK = 16 };

/* The layer norm backward of NR rows (a constant where this is inlined) at xr, dyr, dxr (row
 * stride C), with their means m and rstds rs: with xhat = (x - m) rs and g = dy w,
 * dx += rs (g - mean(g) - xhat mean(g xhat)) (WR, a constant too: dx =, its old contents unread),
 * and the rows' dy xhat and dy added into pw and pb
 * in row order. Each row's two means are 8-lane float sums (cpu_dot_f); then one pass over the
 * channels serves all NR rows: pw and pb are read and written once per NR rows, not once a row. */
static inline __attribute__((always_inline)) void ln_bwd_rows(const int NR, const int WR, int C,
                                                              const float *restrict xr,
                                                              const float *restrict dyr, float *restrict dxr,
                                                              const float *m, const float *rs,
                                                              const float *restrict w, float *restrict pw,
                                                              float *restrict pb, float *restrict xhat) {
  const float inv_c = 1.0f / (float)C;
  float mean_g[4], mean_gx[4];
  for (int i = 0; i < NR; i++) {
    const float *restrict xi = xr + (size_t)i * C, *restrict di = dyr + (size_t)i * C;
    float *restrict hi = xhat + (size_t)i * C;
    for (int c = 0; c < C; c++) hi[c] = (xi[c] - m[i]) * rs[i];
    float lg[8] = {0}, lgx[8] = {0}; /* sums of g and of g xhat in 8 lanes */
    int c = 0;
    for (; c + 8 <= C; c += 8)
      for (int l = 0; l < 8; l++) {
        const float g = di[c + l] * w[c + l];
        lg[l] += g;
        lgx[l] += g * hi[c + l];
      }
    float sg = ((lg[0] + lg[4]) + (lg[1] + lg[5])) + ((lg[2] + lg[6]) + (lg[3] + lg[7]));
    float sgx = ((lgx[0] + lgx[4]) + (lgx[1] + lgx[5])) + ((lgx[2] + lgx[6]) + (lgx[3] + lgx[7]));
    for (; c < C; c++) {
      const float g = di[c] * w[c];
      sg += g;
      sgx += g * hi[c];
    }
    mean_g[i] = sg * inv_c, mean_gx[i] = sgx * inv_c;
  }
  for (int c = 0; c < C; c++) {
    float aw = pw[c], ab = pb[c];
#pragma GCC unroll 4
    for (int i = 0; i < NR; i++) {
      const size_t at = (size_t)i * C + c;
      const float d = dyr[at], h = xhat[at];
      aw += d * h;
      ab += d;
      const float g = rs[i] * (d * w[c] - mean_g[i] - h * mean_gx[i]);
      dxr[at] = WR ? g : dxr[at] + g;
    }
    pw[c] = aw, pb[c] = ab;
  }
}

/* Rows at a time of the backward's channel pass (CPU_LN_ROW_BLOCK is a multiple). */
enum { CPU_LN_ROW_GROUP = 4 };

CPU_CLONES void cpu_layernorm_bwd(int N, int rows, int C, const float *restrict x, const float *restrict w,
                       const float *restrict stats, const float *restrict dy, float *restrict dx, int dx_write,
                       float *restrict dw, float *restrict db) {
  _Static_assert(CPU_LN_ROW_BLOCK % CPU_LN_ROW_GROUP == 0, "groups of rows within a block");
  const size_t total = (size_t)N * rows;
  float *part = xmalloc(2 * (size_t)C * sizeof *part);   /* a block's dw, db partial sums */
  double *acc = xmalloc(2 * (size_t)C * sizeof *acc);    /* all blocks' dw, db */
  float *xhat = xmalloc((size_t)CPU_LN_ROW_GROUP * C * sizeof *xhat); /* a group's normalised rows */
  float *restrict pw = part, *restrict pb = part + C;
  for (int c = 0; c < 2 * C; c++) acc[c] = 0.0;
  for (size_t r0 = 0; r0 < total; r0 += CPU_LN_ROW_BLOCK) {
    const size_t r1 = total - r0 < CPU_LN_ROW_BLOCK ? total : r0 + CPU_LN_ROW_BLOCK;
    for (int c = 0; c < 2 * C; c++) part[c] = 0.0f;
    for (size_t row = r0; row < r1;) {
      const int nr = r1 - row >= CPU_LN_ROW_GROUP ? CPU_LN_ROW_GROUP : 1;
      float m[CPU_LN_ROW_GROUP], rs[CPU_LN_ROW_GROUP];
      for (int i = 0; i < nr; i++) {
        const float *st = stats + ((row + i) / rows) * 2 * rows + (row + i) % rows;
        m[i] = st[0], rs[i] = st[rows];
      }
      const size_t at = row * C;
      if (nr == CPU_LN_ROW_GROUP && dx_write)
        ln_bwd_rows(CPU_LN_ROW_GROUP, 1, C, x + at, dy + at, dx + at, m, rs, w, pw, pb, xhat);
      else if (nr == CPU_LN_ROW_GROUP)
        ln_bwd_rows(CPU_LN_ROW_GROUP, 0, C, x + at, dy + at, dx + at, m, rs, w, pw, pb, xhat);
      else
        ln_bwd_rows(1, dx_write, C, x + at, dy + at, dx + at, m, rs, w, pw, pb, xhat);
      row += (size_t)nr;
    }
    for (int c = 0; c < 2 * C; c++) acc[c] += (double)part[c];
  }
  for (int c = 0; c < C; c++) {
    dw[c] = (float)((double)dw[c] + acc[c]);
    db[c] = (float)((double)db[c] + acc[C + c]);
  }
  free(xhat);
  free(part);
  free(acc);
}

/* ---- token + position embedding */

CPU_CLONES void cpu_embed_fwd(int B, int T, int C, const float *restrict idx, int lo, int V,
                              const float *restrict wte,
                   const float *restrict wpe, float *restrict y) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const int id = (int)idx[(size_t)b * T + t] - lo;
      float *restrict out = y + ((size_t)b * T + t) * C;
      if (id < 0 || id >= V) {
        if (wpe) memcpy(out, wpe + (size_t)t * C, (size_t)C * sizeof *out);
        else memset(out, 0, (size_t)C * sizeof *out);
        continue;
      }
      const float *restrict tok = wte + (size_t)id * C;
      if (wpe) {
        const float *restrict pos = wpe + (size_t)t * C;
        for (int c = 0; c < C; c++) out[c] = tok[c] + pos[c];
      } else {
        memcpy(out, tok, (size_t)C * sizeof *out);
      }
    }
}

/* dwpe[t] sums dy over the batch and dwte[v] over every use of token lo + v; both in double, so the
 * rounding does not grow with the batch. The uses of each token of the shard are found by a counting
 * sort of the ids, so each table row is summed once; ids outside [lo, lo+V) belong to other shards. */
CPU_CLONES void cpu_embed_bwd(int B, int T, int C, const float *restrict idx, int lo, int V,
                              const float *restrict dy, float *restrict dwte, float *restrict dwpe) {
  const size_t n = (size_t)B * T;
  double *acc = xmalloc((size_t)C * sizeof *acc);
  for (int t = 0; dwpe && t < T; t++) {
    for (int c = 0; c < C; c++) acc[c] = 0.0;
    for (int b = 0; b < B; b++) {
      const float *restrict g = dy + ((size_t)b * T + t) * C;
      for (int c = 0; c < C; c++) acc[c] += (double)g[c];
    }
    float *restrict pos = dwpe + (size_t)t * C;
    for (int c = 0; c < C; c++) pos[c] = (float)((double)pos[c] + acc[c]);
  }
  size_t *start = xcalloc((size_t)V + 1, sizeof *start), *order = xmalloc((n ? n : 1) * sizeof *order);
  for (size_t i = 0; i < n; i++) {
    long id = (long)idx[i] - lo;
    if (id >= 0 && id < V) start[id + 1]++;
  }
  for (int v = 0; v < V; v++) start[v + 1] += start[v];
  for (size_t i = 0; i < n; i++) {
    long id = (long)idx[i] - lo;
    if (id >= 0 && id < V) order[start[id]++] = i; /* start[v] ends at v's end */
  }
  size_t from = 0;
  for (int v = 0; v < V; v++) {
    const size_t to = start[v];
    if (to == from) continue;
    for (int c = 0; c < C; c++) acc[c] = 0.0;
    for (size_t k = from; k < to; k++) {
      const float *restrict g = dy + order[k] * C;
      for (int c = 0; c < C; c++) acc[c] += (double)g[c];
    }
    float *restrict tok = dwte + (size_t)v * C;
    for (int c = 0; c < C; c++) tok[c] = (float)((double)tok[c] + acc[c]);
    from = to;
  }
  free(start);
  free(order);
  free(acc);
}

/* ---- causal softmax */

/* out[j] = exp(in[j] - mx) for j < n (out may be in); returns the sum of out[0..n). */
static float cpu_exp_shifted(int n, float mx, const float *in, float *out) {
  for (int j = 0; j < n; j++) out[j] = cpu_expf(in[j] - mx);
  return cpu_sum_f(out, n);
}

/* Sum over j < n of exp(in[j] - mx), in 8 float lanes. */
static float cpu_sum_exp_shifted(int n, float mx, const float *restrict in) {
  float lane[8] = {0};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; l++) lane[l] += cpu_expf(in[j + l] - mx);
  float s = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; j < n; j++) s += cpu_expf(in[j] - mx);
  return s;
}

/* Rows of n with `valid` of them by row: the first row % T + 1 (causal) or all n (T = 0); the rest 0. */
static inline void cpu_softmax_valid(size_t rows, int n, int T, float scale, const float *restrict s,
                                     float *restrict p) {
  for (size_t row = 0; row < rows; row++) {
    const int valid = T ? (int)(row % (size_t)T) + 1 : n;
    const float *restrict sr = s + row * n;
    float *restrict pr = p + row * n;
    for (int j = 0; j < valid; j++) pr[j] = scale * sr[j];
    const float inv = 1.0f / cpu_exp_shifted(valid, cpu_max_f(pr, valid), pr, pr);
    for (int j = 0; j < valid; j++) pr[j] *= inv;
    memset(pr + valid, 0, (size_t)(n - valid) * sizeof *pr);
  }
}

CPU_CLONES void cpu_causal_softmax_fwd(int BH, int T, float scale, const float *restrict s, float *restrict p) {
  cpu_softmax_valid((size_t)BH * T, T, T, scale, s, p);
}

CPU_CLONES void cpu_softmax_rows(int rows, int n, float scale, const float *restrict s, float *restrict p) {
  cpu_softmax_valid((size_t)rows, n, 0, scale, s, p);
}

CPU_CLONES void cpu_causal_softmax_bwd(int BH, int T, float scale, const float *restrict p,
                            const float *restrict dp, float *restrict ds) {
  for (size_t row = 0; row < (size_t)BH * T; row++) {
    const float *restrict pr = p + row * T, *restrict dpr = dp + row * T;
    float *restrict dsr = ds + row * T;
    const float dot = cpu_dot_f(pr, dpr, T);
    for (int j = 0; j < T; j++) dsr[j] = scale * pr[j] * (dpr[j] - dot);
  }
}

/* ---- softmax cross-entropy */

static int cpu_argmax_first(int n, const float *restrict x) {
  int best = 0;
  for (int j = 1; j < n; j++)
    if (x[j] > x[best]) best = j;
  return best;
}

/* dlogits may be logits (in place): a row's target logit is read before the row is written. */
static CPU_CLONES double xent_sum(int rows, int V, const float *logits, const float *restrict targets,
                                   float grad_scale, float *dlogits) {
  double loss = 0.0;
  for (int r = 0; r < rows; r++) {
    const float *lr = logits + (size_t)r * V;
    const int target = (int)targets[r];
    const float mx = cpu_max_f(lr, V), target_logit = lr[target];
    // log-sum-exp around the max; exps go straight into dlogits when it is wanted
    float sum;
    if (dlogits) {
      float *dr = dlogits + (size_t)r * V;
      sum = cpu_exp_shifted(V, mx, lr, dr);
      const float k = grad_scale / sum;
      for (int v = 0; v < V; v++) dr[v] *= k;
      dr[target] -= grad_scale;
    } else {
      sum = cpu_sum_exp_shifted(V, mx, lr);
    }
    loss += (double)mx + log((double)sum) - (double)target_logit;
  }
  return loss;
}

/* The loss returned to the host counts a wait (backend_context_t.waits); kept in backend memory
 * (xent_add) it does not. */
double cpu_xent_fwd_bwd(int rows, int V, const float *logits, const float *targets, float grad_scale,
                        float *dlogits) {
  host_mem_waited();
  return xent_sum(rows, V, logits, targets, grad_scale, dlogits);
}

void cpu_xent_add(int rows, int V, const float *logits, const float *targets, float grad_scale, float *dlogits,
                  double *loss) {
  *loss += xent_sum(rows, V, logits, targets, grad_scale, dlogits);
}

void cpu_float_pair(const double *x, float *pair) { float_pair_rule(*x, pair); }

long cpu_count_correct(int rows, int V, const float *restrict logits, const float *restrict targets) {
  host_mem_waited();
  long correct = 0;
  for (int r = 0; r < rows; r++) correct += cpu_argmax_first(V, logits + (size_t)r * V) == (int)targets[r];
  return correct;
}

/* ---- vocabulary-parallel cross-entropy (the caller combines the rows' values over the ranks) */

void cpu_row_max(int rows, int V, const float *restrict logits, float *restrict mx) {
  for (int r = 0; r < rows; r++) mx[r] = cpu_max_f(logits + (size_t)r * V, V);
}

/* The column of target t in a shard [lo, lo+V), or -1. */
static int shard_column(float t, int lo, int V) {
  int v = (int)t - lo;
  return v >= 0 && v < V ? v : -1;
}

void cpu_xent_shard_stats(int rows, int V, int lo, const float *restrict logits, const float *restrict targets,
                          const float *restrict mx, float *restrict sumexp, float *restrict tgt) {
  for (int r = 0; r < rows; r++) {
    const float *restrict lr = logits + (size_t)r * V;
    const int v = shard_column(targets[r], lo, V);
    sumexp[r] = cpu_sum_exp_shifted(V, mx[r], lr);
    tgt[r] = v >= 0 ? lr[v] : 0.0f;
  }
}

void cpu_xent_shard_bwd(int rows, int V, int lo, const float *restrict logits, const float *restrict targets,
                        const float *restrict mx, const float *restrict sumexp, float grad_scale,
                        float *restrict dlogits) {
  for (int r = 0; r < rows; r++) {
    float *restrict dr = dlogits + (size_t)r * V;
    const int v = shard_column(targets[r], lo, V);
    cpu_exp_shifted(V, mx[r], logits + (size_t)r * V, dr);
    const float k = grad_scale / sumexp[r];
    for (int j = 0; j < V; j++) dr[j] *= k;
    if (v >= 0) dr[v] -= grad_scale;
  }
}

void cpu_row_first_index(int rows, int V, int lo, const float *restrict logits, const float *restrict mx,
                         float *restrict first) {
  for (int r = 0; r < rows; r++) {
    const float *restrict lr = logits + (size_t)r * V;
    int j = 0;
    while (j < V && lr[j] != mx[r]) j++;
    first[r] = j < V ? (float)(lo + j) : 3e38f;
  }
}
