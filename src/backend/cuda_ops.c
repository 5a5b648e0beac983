/* The CUDA backend's ops other than GEMMs and convolution: each queues its kernels on the
 * process's stream (cuda_kern_*.cu); those that return a value to the host wait for it. Sums that
 * backend.h wants with an error not growing with the batch (bias, layer norm and embedding
 * gradients) are double sums over a fixed split, rounded once when added to their output. */
#include <string.h>

#include "backend/cuda_impl.h"
#include "core/error.h"

/* ---- elementwise */

void cuda_fill(float *x, size_t n, float v) { cuk_fill(x, n, v, cuda_stream()); }
void cuda_scale(float *x, size_t n, float a) { cuk_scale(x, n, a, cuda_stream()); }
void cuda_axpy(size_t n, float a, const float *x, float *y) { cuk_axpy(n, a, x, y, cuda_stream()); }
void cuda_add(size_t n, const float *a, const float *b, float *y) { cuk_add(n, a, b, y, cuda_stream()); }
void cuda_relu_fwd(size_t n, const float *x, float *y) { cuk_relu_fwd(n, x, y, cuda_stream()); }
/* a backward's write: the kernel writes dx without reading it (no fill first) */
void cuda_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int write) {
  cuk_relu_bwd(n, x, dy, dx, write, cuda_stream());
}
/* the fused residual join and ReLU from the existing kernels: the CPU's one pass saves memory
 * traffic, which the GPU path has not measured a need for */
void cuda_add_relu_fwd(size_t n, const float *a, const float *b, float *y) {
  cuda_add(n, a, b, y);
  cuk_relu_fwd(n, y, y, cuda_stream());
}
void cuda_add_relu_bwd(size_t n, const float *y, const float *dy, float *da, float *db, int write_a, int write_b) {
  if (da) cuda_relu_bwd(n, y, dy, da, write_a);
  if (db) cuda_relu_bwd(n, y, dy, db, write_b);
}
void cuda_gelu_fwd(size_t n, const float *x, float *y) { cuk_gelu_fwd(n, x, y, cuda_stream()); }
void cuda_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int write) {
  cuk_gelu_bwd(n, x, dy, dx, write, cuda_stream());
}

double cuda_sumsq(const float *x, size_t n) {
  if (!n) return 0.0;
  double *dev = cuda_workspace(CUDA_WS_SCALAR, sizeof(double)), host = 0;
  cuk_sumsq(x, n, dev, 0, cuda_stream());
  cuda_to_host(&host, dev, sizeof host);
  return host;
}

void cuda_sumsq_add(const float *x, size_t n, double *acc) {
  if (n) cuk_sumsq(x, n, acc, 1, cuda_stream());
}

double cuda_dot(const float *x, const float *y, size_t n) {
  if (!n) return 0.0;
  double *dev = cuda_workspace(CUDA_WS_SCALAR, sizeof(double)), host = 0;
  cuk_dot(x, y, n, dev, cuda_stream());
  cuda_to_host(&host, dev, sizeof host);
  return host;
}

void cuda_orthonormalize(int batch, int n, int r, float *P, size_t sP) {
  if (batch <= 0 || n <= 0 || r <= 0) return;
  size_t per = surge_mul_size((size_t)n + 1, (size_t)r, "orthonormalize"); /* the matrix, its columns' norms */
  double *work = cuda_workspace(CUDA_WS_ACC, surge_mul_size(per * sizeof(double), (size_t)batch, "orthonormalize"));
  cuk_orthonormalize(batch, n, r, P, sP, work, cuda_stream());
}

int cuda_all_finite(const float *x, size_t n) {
  int *flag = cuda_workspace(CUDA_WS_SCALAR, sizeof(int)), host = 0;
  cuda_check(cudaMemsetAsync(flag, 0, sizeof(int), cuda_stream()), "cudaMemsetAsync");
  cuk_any_nonfinite(x, n, flag, cuda_stream());
  cuda_to_host(&host, flag, sizeof host);
  return host == 0;
}

/* ---- bias */

void cuda_bias_add_rows(int rows, int cols, const float *b, float *y) {
  cuk_bias_add_rows(rows, cols, b, y, cuda_stream());
}

void cuda_bias_grad_rows(int rows, int cols, const float *dy, float *db) {
  cuk_colsum_add(dy, rows, cols, cols, db, cols, cols, cuda_stream());
}

void cuda_bias_add_planes(int N, int C, int HW, const float *b, float *y) {
  cuk_bias_planes(N, C, HW, b, 0, y, cuda_stream());
}

void cuda_bias_grad_planes(int N, int C, int HW, const float *dy, float *db) {
  if (N <= 0 || C <= 0) return;
  // each plane's sum (N, C), then the sum over the samples per channel
  double *planes = cuda_workspace(CUDA_WS_PART, (size_t)N * C * sizeof(double));
  cuk_rowsum(dy, (long)N * C, HW, planes, cuda_stream());
  cuk_colsum_add_d(planes, N, C, C, db, cuda_stream());
}

/* ---- pooling */

void cuda_maxpool_fwd(int P, int H, int W, int k, int s, int pad, const float *x, float *y, float *argmax) {
  cuk_maxpool_fwd(P, H, W, k, s, pad, x, y, argmax, cuda_stream());
}
/* dx_write: the gather writes each pixel without reading it (no fill first) */
void cuda_maxpool_bwd(int P, int H, int W, int k, int s, int pad, const float *dy, const float *argmax, float *dx,
                      int dx_write) {
  cuk_maxpool_bwd(P, H, W, k, s, pad, dy, argmax, dx, dx_write, cuda_stream());
}
void cuda_avgpool_fwd(int P, int HW, const float *x, float *y) { cuk_avgpool_fwd(P, HW, x, y, cuda_stream()); }
void cuda_avgpool2d_fwd(int P, int H, int W, int k, int s, int pad, const float *x, float *y) {
  cuk_avgpool2d_fwd(P, H, W, k, s, pad, x, y, cuda_stream());
}
void cuda_avgpool2d_bwd(int P, int H, int W, int k, int s, int pad, const float *dy, float *dx, int dx_write) {
  cuk_avgpool2d_bwd(P, H, W, k, s, pad, dy, dx, dx_write, cuda_stream());
}
void cuda_copy_cols(int rows, int cols, const float *src, size_t lds, float *dst, size_t ldd, int acc) {
  cuk_copy_cols(rows, cols, src, lds, dst, ldd, acc, cuda_stream());
}
void cuda_avgpool_bwd(int P, int HW, const float *dy, float *dx, int dx_write) {
  cuk_avgpool_bwd(P, HW, dy, dx, dx_write, cuda_stream());
}

/* ---- layer norm */

void cuda_layernorm_fwd(int N, int rows, int C, const float *x, const float *w, const float *b, float eps, float *y,
                        float *stats) {
  cuk_layernorm_fwd(N, rows, C, x, w, b, eps, y, stats, cuda_stream());
}

void cuda_layernorm_bwd(int N, int rows, int C, const float *x, const float *w, const float *stats, const float *dy,
                        float *dx, int dx_write, float *dw, float *db) {
  cuk_layernorm_bwd(N, rows, C, x, w, stats, dy, dx, dx_write, dw, db, cuda_stream());
}

/* ---- batch norm and the elementwise product (cuda_kern_norm.cu) */

void cuda_bn_stats(int N, int C, int HW, const float *x, float *part) { cuk_bn_stats(N, C, HW, x, part, cuda_stream()); }
void cuda_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running, float *stats) {
  cuk_bn_finish(C, R, parts, eps, momentum, running, stats, cuda_stream());
}
void cuda_bn_fwd(int N, int C, int HW, const float *x, const float *stats, const float *w, const float *b, int relu,
                 float *y) {
  cuk_bn_fwd(N, C, HW, x, stats, w, b, relu, y, cuda_stream());
}
void cuda_bn_bwd_sums(int N, int C, int HW, const float *x, const float *stats, const float *dy, const float *relu_y,
                      float *part) {
  cuk_bn_bwd_sums(N, C, HW, x, stats, dy, relu_y, part, cuda_stream());
}
void cuda_bn_bwd(int N, int C, int HW, double M, const float *x, const float *stats, const float *w, const float *dy,
                 const float *relu_y, const float *sums, float *dx, int dx_write) {
  cuk_bn_bwd(N, C, HW, M, x, stats, w, dy, relu_y, sums, dx, dx_write, cuda_stream());
}
void cuda_mul(size_t n, const float *a, const float *b, float *y, int acc) { cuk_mul(n, a, b, y, acc, cuda_stream()); }

/* ---- embedding */

void cuda_embed_fwd(int B, int T, int C, const float *idx, int lo, int V, const float *wte, const float *wpe,
                    float *y) {
  cuk_embed_fwd(B, T, C, idx, lo, V, wte, wpe, y, cuda_stream());
}

void cuda_embed_bwd(int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte, float *dwpe) {
  cuk_embed_bwd_wte(B, T, C, idx, lo, V, dy, dwte, cuda_stream());
  if (!dwpe || B <= 0 || (long)T * C <= 0) return;
  // dwpe (T,C) += the sum over the B sequences of dy (B, T*C)
  cuk_colsum_add(dy, B, T * C, (long)T * C, dwpe, T * C, (long)T * C, cuda_stream());
}

/* ---- causal softmax */

void cuda_causal_softmax_fwd(int BH, int T, float scale, const float *s, float *p) {
  cuk_softmax_fwd(BH, T, scale, s, p, cuda_stream());
}
void cuda_causal_softmax_bwd(int BH, int T, float scale, const float *p, const float *dp, float *ds) {
  cuk_softmax_bwd(BH, T, scale, p, dp, ds, cuda_stream());
}
void cuda_softmax_rows(int rows, int n, float scale, const float *s, float *p) {
  cuk_softmax_rows(rows, n, scale, s, p, cuda_stream());
}

/* ---- cross-entropy */

/* The sum of n per-row doubles, on the host. */
static double sum_to_host(const double *rows, long n) {
  double *dev = cuda_workspace(CUDA_WS_SCALAR, sizeof(double)), host = 0;
  cuk_sum_d(rows, n, dev, 0, cuda_stream());
  cuda_to_host(&host, dev, sizeof host);
  return host;
}

double cuda_xent_fwd_bwd(int rows, int V, const float *logits, const float *targets, float grad_scale,
                         float *dlogits) {
  if (rows <= 0) return 0.0;
  double *loss = cuda_workspace(CUDA_WS_PART, (size_t)rows * sizeof(double));
  cuk_xent_rows(rows, V, logits, targets, grad_scale, dlogits, loss, cuda_stream());
  return sum_to_host(loss, rows);
}

void cuda_xent_add(int rows, int V, const float *logits, const float *targets, float grad_scale, float *dlogits,
                   double *loss) {
  if (rows <= 0) return;
  double *part = cuda_workspace(CUDA_WS_PART, (size_t)rows * sizeof(double));
  cuk_xent_rows(rows, V, logits, targets, grad_scale, dlogits, part, cuda_stream());
  cuk_sum_d(part, rows, loss, 1, cuda_stream());
}

void cuda_float_pair(const double *x, float *pair) { cuk_float_pair(x, pair, cuda_stream()); }
void cuda_to_bf16(size_t n, const float *x, uint16_t *y) { cuk_to_bf16(n, x, y, cuda_stream()); }
void cuda_from_bf16(size_t n, const uint16_t *x, float *y) { cuk_from_bf16(n, x, y, cuda_stream()); }

long cuda_count_correct(int rows, int V, const float *logits, const float *targets) {
  if (rows <= 0) return 0;
  double *hit = cuda_workspace(CUDA_WS_PART, (size_t)rows * sizeof(double));
  cuk_argmax_hits(rows, V, logits, targets, hit, cuda_stream());
  return (long)(sum_to_host(hit, rows) + 0.5);
}

void cuda_row_max(int rows, int V, const float *logits, float *mx) { cuk_row_max(rows, V, logits, mx, cuda_stream()); }

void cuda_xent_shard_stats(int rows, int V, int lo, const float *logits, const float *targets, const float *mx,
                           float *sumexp, float *tgt) {
  cuk_xent_shard_stats(rows, V, lo, logits, targets, mx, sumexp, tgt, cuda_stream());
}

void cuda_xent_shard_bwd(int rows, int V, int lo, const float *logits, const float *targets, const float *mx,
                         const float *sumexp, float grad_scale, float *dlogits) {
  cuk_xent_shard_bwd(rows, V, lo, logits, targets, mx, sumexp, grad_scale, dlogits, cuda_stream());
}

void cuda_row_first_index(int rows, int V, int lo, const float *logits, const float *mx, float *first) {
  cuk_row_first_index(rows, V, lo, logits, mx, first, cuda_stream());
}

/* ---- optimizers */

void cuda_sgd_step(size_t n, float *p, const float *g, float *buf, float lr, float mom, int nesterov, float wd,
                   int first, const float *gs) {
  cuk_sgd(n, p, g, buf, lr, mom, nesterov, wd, first, gs, cuda_stream());
}

void cuda_adamw_step(size_t n, float *p, const float *g, float *m, float *v, adamw_coefs_t c, const float *gs) {
  cuk_adamw(n, p, g, m, v, c, gs, cuda_stream());
}

void cuda_clip_factor(const double *sumsq, double max_norm, float *gs) {
  cuk_clip_factor(sumsq, max_norm, gs, cuda_stream());
}

/* ---- the fused forms (issue 32), compiled here and not yet run on a GPU: gelu_bias_bwd is one pass
 * (its kernels are checked on the host, tests/test_cuda_cols); linear_gelu_fwd is cuBLASLt's product
 * with the bias + GELU epilogue where cuda_lt_linear takes it (cuda_lt.c), else the linear forward
 * and the GELU kernel; add_layernorm_fwd is the unfused kernels composed */

void cuda_linear_gelu_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16,
                          const float *b, float *pre, float *y, float *ws, size_t ws_n) {
  if (cuda_lt_linear(rows, out, in, x, w, b, pre, y)) return;
  cuda_linear_fwd(rows, out, in, x, w, w16, b, pre, ws, ws_n);
  cuk_gelu_fwd((size_t)rows * (size_t)out, pre, y, cuda_stream());
}

/* dpre and the bias's column sums in one pass over the rows (cuda_kern_cols.cu); without a bias,
 * the GELU backward alone */
void cuda_gelu_bias_bwd(int rows, int cols, const float *pre, const float *dy, float *dpre, float *db) {
  if (db) cuk_gelu_bias_bwd(rows, cols, pre, dy, dpre, db, cuda_stream());
  else cuda_gelu_bwd((size_t)rows * (size_t)cols, pre, dy, dpre, 1);
}

void cuda_add_layernorm_fwd(int N, int rows, int C, const float *a, const float *b, const float *w, const float *bias,
                            float eps, float *sum, float *y, float *stats) {
  cuda_add((size_t)N * (size_t)rows * (size_t)C, a, b, sum);
  cuda_layernorm_fwd(N, rows, C, sum, w, bias, eps, y, stats);
}
