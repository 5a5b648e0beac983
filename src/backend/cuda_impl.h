/* Inside the CUDA backend: the process's context (cuda.c), the GEMMs (cuda_blas.c) and the kernel
 * launchers (cuda_kern_*.cu), shared by its C files and its CUDA C++ files. Not a public header:
 * CUDA types stay behind backend.h.
 *
 * Every launcher queues its kernels on stream s and returns; a launch failure ends the job through
 * cuda_check. Sums over many terms run in double in a fixed order, and no kernel adds floats with
 * atomics, so every op gives the same bits run after run (the background test compares a
 * foreground's parameters bit for bit with and without a partner). */
#ifndef SURGE_BACKEND_CUDA_IMPL_H
#define SURGE_BACKEND_CUDA_IMPL_H

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda_device_calls.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the context (cuda.c) */

cudaStream_t cuda_stream(void);
cublasHandle_t cuda_blas(void);
/* The compute type of the model's matrix products ([backend] precision, tf32). */
cublasComputeType_t cuda_model_compute(void);
/* The cuBLASLt epilogue setting the backend was opened with ([backend] epilogues). */
backend_epilogues_t cuda_epilogues(void);
/* The bf16 fused attention's kernels the backend was opened with ([backend] attention_kernels). */
backend_attention_t cuda_attention_setting(void);
/* Rows per float block of gemm_tn_rows (longer sums add blocks in double). */
int cuda_row_block(void);
/* A CUDA call that failed ends the job: "cuda: WHAT: CUDA's words". */
void cuda_check(cudaError_t e, const char *what);
void cuda_check_blas(cublasStatus_t e, const char *what);
/* After a kernel launch: its configuration error, if any, ends the job naming the kernel. */
void cuda_check_launch(const char *kernel);

/* Scratch device memory by slot, at least `bytes`, valid until the next request of that slot (it grows in
 * stream order, so queued kernels still see the old block until they are done with it). */
enum {
  CUDA_WS_COL,    /* convolution lowering */
  CUDA_WS_PART,   /* partial results of an op (per-sample or per-block GEMM outputs, row sums) */
  CUDA_WS_RED,    /* the reduction launchers' own partial sums (callers never use it) */
  CUDA_WS_ACC,    /* an op's double accumulators */
  CUDA_WS_PTR,    /* gemm_grid's pointer arrays */
  CUDA_WS_SCALAR, /* a result on its way to the host */
  CUDA_WS_MASKED, /* an op's input gradient through a fused ReLU's mask (conv_bwd) */
  CUDA_WS_ATT,    /* attention: the fused backward's D (B, H, T); the composed form's scores,
                   * probabilities and their gradients (B, H, T, T) each */
  CUDA_WS_LT,     /* cuBLASLt's workspace (cuda_lt.c; one fixed size) */
  CUDA_WS_WIDE,   /* gemm_grid_b16: its bfloat16 operand widened to floats */
  CUDA_WS_SLOTS
};
void *cuda_workspace(int slot, size_t bytes);
/* n doubles of accumulator (slot CUDA_WS_ACC), set to zero on the stream. */
double *cuda_zeroed_acc(size_t n);
/* Wait for the stream, then copy bytes of device memory to the host. */
void cuda_to_host(void *host, const void *dev, size_t bytes);

/* ---- the recorded pieces (cuda_graph.c; backend.h: capture_begin, capture_end) */
void cuda_capture_begin(int key, void (*gate)(void));
void cuda_capture_end(void);
void cuda_capture_abandon(void);
/* cuda_capture_leave, cuda_device_call_begin and _end: backend/cuda_device_calls.h */
/* The thread's counts into c (graphs_launched, _built, _updated, _cut). */
void cuda_capture_counts(backend_context_t *c);
/* End any recording and free the thread's graphs (backend close). */
void cuda_capture_close(void);

/* ---- timing marks (cuda_marks.c; backend.h: mark, mark_passed, mark_ns) */
void cuda_mark(int i);
int cuda_mark_passed(int i);
double cuda_mark_ns(int i, int j);
/* Destroy the thread's marks (backend close). */
void cuda_marks_close(void);

/* ---- GEMMs (cuda_blas.c): row-major, as backend.h; `exact` runs in true float32 whatever the
 * model's precision (internal sums), otherwise in the model's compute type */
void cuda_gemm_strided_as(int exact, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                          size_t sA, const float *B, int ldb, size_t sB, float beta, float *C, int ldc, size_t sC,
                          int batch);
void cuda_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc);
void cuda_gemm_strided(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, size_t sA,
                       const float *B, int ldb, size_t sB, float beta, float *C, int ldc, size_t sC, int batch);
void cuda_gemm_grid(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc, const gemm_grid_t *g);
void cuda_gemm_grid_b16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B16,
                        int ldb, float beta, float *C, int ldc, const gemm_grid_t *g);
void cuda_gemm_tn_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc);
size_t cuda_linear_workspace(int out, int in);
void cuda_linear_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b,
                     float *y, float *ws, size_t ws_n);

/* ---- the linear forwards with cuBLASLt epilogues (cuda_lt.c) */
/* the cuBLASLt handle, made at the backend's open and freed at its close (cublasLtCreate's and cublasLtDestroy's
 * status: the caller checks it, after the device-wide lock it calls them under) */
cublasStatus_t cuda_lt_open(void);
cublasStatus_t cuda_lt_close(void);
/* y (rows, out) = x (rows, in) w (out, in)^T + b (out) with the bias in the product's epilogue; with
 * pre, also GELU: pre = that sum, kept, and y = gelu(pre) (b may then be NULL). Returns 1 when queued,
 * 0 (nothing queued) when the setting, the shape, the operands' alignment or cuBLASLt's heuristic
 * rule it out: the caller then runs cuBLAS's GEMM and the kernels. The same answer every time for
 * a shape and the operands' alignments. */
int cuda_lt_linear(int rows, int out, int in, const float *x, const float *w, const float *b, float *pre, float *y);
/* The calls since the open, fused and all (backend.h; the context reports them). */
backend_epilogue_counts_t cuda_lt_counts(void);

/* ---- convolution (cuda_conv.c) */
size_t cuda_conv_workspace(const conv_shape_t *s);
void cuda_conv_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu, float *y,
                   float *ws, size_t ws_n);
void cuda_conv_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy, const float *relu_y,
                   float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n);
void cuda_im2col(const float *x, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *col);
void cuda_col2im(const float *col, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *dx);

/* ---- the other ops of the table (cuda_ops.c): launch kernels, wait only to return a value */
void cuda_fill(float *x, size_t n, float v);
void cuda_scale(float *x, size_t n, float a);
void cuda_axpy(size_t n, float a, const float *x, float *y);
void cuda_add(size_t n, const float *a, const float *b, float *y);
double cuda_sumsq(const float *x, size_t n);
void cuda_sumsq_add(const float *x, size_t n, double *acc);
double cuda_dot(const float *x, const float *y, size_t n);
void cuda_orthonormalize(int batch, int n, int r, float *P, size_t sP);
int cuda_all_finite(const float *x, size_t n);
void cuda_bias_add_rows(int rows, int cols, const float *b, float *y);
void cuda_bias_grad_rows(int rows, int cols, const float *dy, float *db);
void cuda_bias_add_planes(int N, int C, int HW, const float *b, float *y);
void cuda_bias_grad_planes(int N, int C, int HW, const float *dy, float *db);
void cuda_relu_fwd(size_t n, const float *x, float *y);
void cuda_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int write);
void cuda_add_relu_fwd(size_t n, const float *a, const float *b, float *y);
void cuda_add_relu_bwd(size_t n, const float *y, const float *dy, float *da, float *db, int write_a, int write_b);
void cuda_gelu_fwd(size_t n, const float *x, float *y);
void cuda_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int write);
void cuda_maxpool_fwd(int P, int H, int W, int k, int s, int pad, const float *x, float *y, float *argmax);
void cuda_maxpool_bwd(int P, int H, int W, int k, int s, int pad, const float *dy, const float *argmax, float *dx,
                      int dx_write);
void cuda_avgpool2d_fwd(int P, int H, int W, int k, int s, int pad, const float *x, float *y);
void cuda_avgpool2d_bwd(int P, int H, int W, int k, int s, int pad, const float *dy, float *dx, int dx_write);
void cuda_copy_cols(int rows, int cols, const float *src, size_t lds, float *dst, size_t ldd, int acc);
void cuda_avgpool_fwd(int P, int HW, const float *x, float *y);
void cuda_avgpool_bwd(int P, int HW, const float *dy, float *dx, int dx_write);
void cuda_layernorm_fwd(int N, int rows, int C, const float *x, const float *w, const float *b, float eps, float *y,
                        float *stats);
void cuda_layernorm_bwd(int N, int rows, int C, const float *x, const float *w, const float *stats, const float *dy,
                        float *dx, int dx_write, float *dw, float *db);
void cuda_bn_stats(int N, int C, int HW, const float *x, float *part);
void cuda_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running, float *stats);
void cuda_bn_fwd(int N, int C, int HW, const float *x, const float *stats, const float *w, const float *b, int relu,
                 float *y);
void cuda_bn_bwd_sums(int N, int C, int HW, const float *x, const float *stats, const float *dy, const float *relu_y,
                      float *part);
void cuda_bn_bwd(int N, int C, int HW, double M, const float *x, const float *stats, const float *w, const float *dy,
                 const float *relu_y, const float *sums, float *dx, int dx_write);
void cuda_mul(size_t n, const float *a, const float *b, float *y, int acc);
void cuda_embed_fwd(int B, int T, int C, const float *idx, int lo, int V, const float *wte, const float *wpe,
                    float *y);
void cuda_embed_bwd(int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte, float *dwpe);
void cuda_causal_softmax_fwd(int BH, int T, float scale, const float *s, float *p);
void cuda_causal_softmax_bwd(int BH, int T, float scale, const float *p, const float *dp, float *ds);
void cuda_softmax_rows(int rows, int n, float scale, const float *s, float *p);
double cuda_xent_fwd_bwd(int rows, int V, const float *logits, const float *targets, float grad_scale,
                         float *dlogits);
void cuda_xent_add(int rows, int V, const float *logits, const float *targets, float grad_scale, float *dlogits,
                   double *loss);
void cuda_float_pair(const double *x, float *pair);
void cuda_to_bf16(size_t n, const float *x, uint16_t *y);
void cuda_from_bf16(size_t n, const uint16_t *x, float *y);
long cuda_count_correct(int rows, int V, const float *logits, const float *targets);
void cuda_row_max(int rows, int V, const float *logits, float *mx);
void cuda_xent_shard_stats(int rows, int V, int lo, const float *logits, const float *targets, const float *mx,
                           float *sumexp, float *tgt);
void cuda_xent_shard_bwd(int rows, int V, int lo, const float *logits, const float *targets, const float *mx,
                         const float *sumexp, float grad_scale, float *dlogits);
void cuda_row_first_index(int rows, int V, int lo, const float *logits, const float *mx, float *first);
void cuda_sgd_step(size_t n, float *p, const float *g, float *buf, float lr, float mom, int nesterov, float wd,
                   int first, const float *gs);
void cuda_adamw_step(size_t n, float *p, const float *g, float *m, float *v, adamw_coefs_t c, const float *gs);
void cuda_clip_factor(const double *sumsq, double max_norm, float *gs);
/* causal attention (cuda_attention.c): the fused kernels, or the T x T form composed from cuBLAS and
 * the softmax kernels where a head's tiles exceed the device's shared memory */
size_t cuda_attention_workspace(int T, int hs);
void cuda_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, float *ws, size_t ws_n);
void cuda_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, const float *dy,
                        float *dqkv, int dx_write, float *ws, size_t ws_n);
/* the fused forms (cuda_ops.c), composed from the unfused kernels */
void cuda_linear_gelu_fwd(int rows, int out, int in, const float *x, const float *w, const uint16_t *w16,
                          const float *b, float *pre, float *y, float *ws, size_t ws_n);
void cuda_gelu_bias_bwd(int rows, int cols, const float *pre, const float *dy, float *dpre, float *db);
void cuda_add_layernorm_fwd(int N, int rows, int C, const float *a, const float *b, const float *w, const float *bias,
                            float eps, float *sum, float *y, float *stats);

/* ---- elementwise kernels (cuda_kern_elem.cu) */
void cuk_fill(float *x, size_t n, float v, cudaStream_t s);
void cuk_scale(float *x, size_t n, float a, cudaStream_t s);
void cuk_axpy(size_t n, float a, const float *x, float *y, cudaStream_t s);
void cuk_add(size_t n, const float *a, const float *b, float *y, cudaStream_t s);
void cuk_relu_fwd(size_t n, const float *x, float *y, cudaStream_t s);
/* the backwards' wr: dx = instead of dx += (the old contents unread) */
void cuk_relu_bwd(size_t n, const float *x, const float *dy, float *dx, int wr, cudaStream_t s);
void cuk_gelu_fwd(size_t n, const float *x, float *y, cudaStream_t s);
void cuk_gelu_bwd(size_t n, const float *x, const float *dy, float *dx, int wr, cudaStream_t s);
/* y[r,c] += b[c], y (rows, cols) */
void cuk_bias_add_rows(int rows, int cols, const float *b, float *y, cudaStream_t s);
/* y[n,c,:] = act(y[n,c,:] + b[c]) over (N, C, HW); b may be NULL (no bias); act is max(0, .) when relu */
void cuk_bias_planes(int N, int C, int HW, const float *b, int relu, float *y, cudaStream_t s);
/* the optimizers read the gradient as gs[0] g (the clipping factor folded in, from device memory;
 * gs NULL: g) */
void cuk_sgd(size_t n, float *p, const float *g, float *buf, float lr, float mom, int nesterov, float wd, int first,
             const float *gs, cudaStream_t s);
void cuk_adamw(size_t n, float *p, const float *g, float *m, float *v, adamw_coefs_t c, const float *gs,
               cudaStream_t s);
/* *gs = clip_rule_sumsq(*sumsq, max_norm), one thread */
void cuk_clip_factor(const double *sumsq, double max_norm, float *gs, cudaStream_t s);
/* backend.h's float_pair, one thread */
void cuk_float_pair(const double *x, float *pair, cudaStream_t s);
/* backend.h's to_bf16: __float2bfloat16_rn's bits (a NaN becomes the canonical one) */
void cuk_to_bf16(size_t n, const float *x, uint16_t *y, cudaStream_t s);
/* y[i] = the float bfloat16 x[i] stands for (exact) */
void cuk_from_bf16(size_t n, const uint16_t *x, float *y, cudaStream_t s);
void cuk_embed_fwd(int B, int T, int C, const float *idx, int lo, int V, const float *wte, const float *wpe, float *y,
                   cudaStream_t s);
/* dx[p,:] += (wr: =) dy[p] / HW */
void cuk_avgpool_bwd(int P, int HW, const float *dy, float *dx, int wr, cudaStream_t s);
void cuk_maxpool_fwd(int P, int H, int W, int k, int st, int pad, const float *x, float *y, float *argmax,
                     cudaStream_t s);
void cuk_maxpool_bwd(int P, int H, int W, int k, int st, int pad, const float *dy, const float *argmax, float *dx,
                     int wr, cudaStream_t s);
void cuk_avgpool2d_fwd(int P, int H, int W, int k, int st, int pad, const float *x, float *y, cudaStream_t s);
void cuk_avgpool2d_bwd(int P, int H, int W, int k, int st, int pad, const float *dy, float *dx, int wr,
                       cudaStream_t s);
void cuk_copy_cols(int rows, int cols, const float *src, size_t lds, float *dst, size_t ldd, int acc, cudaStream_t s);
/* B images x (B,C,H,W) lowered into col (B, C*KH*KW, OH*OW); col2im adds the gather of col into dx. */
void cuk_im2col(const float *x, int B, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *col,
                cudaStream_t s);
void cuk_col2im(const float *col, int B, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *dx,
                cudaStream_t s);
/* C = beta C over (M, N) with leading dim ldc (beta 0: zeros, whatever C held) */
void cuk_scale_matrix(int M, int N, float beta, float *C, int ldc, cudaStream_t s);
/* The pointer arrays of a gemm_grid: ptr[0..n) for A, [n..2n) for B, [2n..3n) for C, n = batch[0] batch[1],
 * matrix i*batch[1] + j at base + i s[0] + j s[1]. */
void cuk_grid_pointers(const float *A, const float *B, float *C, const gemm_grid_t *g, void **ptr, cudaStream_t s);

/* ---- column sums (cuda_kern_cols.cu, cuda_cols.h): over r < rows of x[r*ld + c], c < cols, in
 * double over a fixed split; added to, never overwritten */
/* acc[c] += the sum of column c */
void cuk_colsum_acc(const float *x, long rows, int cols, long ld, double *acc, cudaStream_t s);
/* out[(c / ocols) ld_out + c % ocols] = (float)(that + the sum of column c): one rounding */
void cuk_colsum_add(const float *x, long rows, int cols, long ld, float *out, int ocols, long ld_out, cudaStream_t s);
void cuk_colsum_add_d(const double *x, long rows, int cols, long ld, float *out, cudaStream_t s);
/* layer norm's parameter gradients over all nrows rows (samples of `rows`): dw[c] += sum dy xhat,
 * db[c] += sum dy */
void cuk_layernorm_params(long nrows, int rows, int C, const float *x, const float *stats, const float *dy, float *dw,
                          float *db, cudaStream_t s);
/* dpre (rows, cols) = dy gelu'(pre) (written), and db (cols, unless NULL) += its column sums, in one pass */
void cuk_gelu_bias_bwd(int rows, int cols, const float *pre, const float *dy, float *dpre, float *db, cudaStream_t s);

/* ---- reductions (cuda_kern_reduce.cu); acc and out rows are added to, never overwritten */
/* out[r] = sum of x[r*len .. r*len + len) in double, r < rows */
void cuk_rowsum(const float *x, long rows, int len, double *out, cudaStream_t s);
/* out[r*ld + c] = (float)(out[r*ld + c] + acc[r*cols + c]) over (rows, cols): one rounding of the whole sum */
void cuk_add_acc(const double *acc, long rows, int cols, float *out, long ld, cudaStream_t s);
/* *out = sum of x[0..n) (double), and *out = sum of squares of float x */
void cuk_sum_d(const double *x, long n, double *out, int add, cudaStream_t s); /* add: *out += */
void cuk_sumsq(const float *x, size_t n, double *out, int add, cudaStream_t s);
void cuk_dot(const float *x, const float *y, size_t n, double *out, cudaStream_t s);
void cuk_orthonormalize(int batch, int n, int r, float *P, size_t sP, double *work, cudaStream_t s);
/* *flag = 1 when some x[i] is NaN or infinite (flag set to 0 first by the caller) */
void cuk_any_nonfinite(const float *x, size_t n, int *flag, cudaStream_t s);
/* embedding backward (cuda_kern_embed.cu): dwte[v,:] += the sum of dy over the positions holding id
 * lo + v in position order (rows used only): the positions sorted by token, then one block per token */
void cuk_embed_bwd_wte(int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte,
                       cudaStream_t s);

/* ---- batch norm (cuda_kern_norm.cu): backend.h's bn ops on the stream; the elementwise product */
void cuk_bn_stats(int N, int C, int HW, const float *x, float *part, cudaStream_t s);
void cuk_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running, float *stats,
                   cudaStream_t s);
void cuk_bn_fwd(int N, int C, int HW, const float *x, const float *stats, const float *w, const float *b, int relu,
                float *y, cudaStream_t s);
void cuk_bn_bwd_sums(int N, int C, int HW, const float *x, const float *stats, const float *dy, const float *relu_y,
                     float *part, cudaStream_t s);
void cuk_bn_bwd(int N, int C, int HW, double M, const float *x, const float *stats, const float *w, const float *dy,
                const float *relu_y, const float *sums, float *dx, int dx_write, cudaStream_t s);
void cuk_mul(size_t n, const float *a, const float *b, float *y, int acc, cudaStream_t s);

/* ---- row kernels (cuda_kern_rows.cu): one warp per row */
void cuk_softmax_fwd(int BH, int T, float scale, const float *sc, float *p, cudaStream_t s);
void cuk_softmax_bwd(int BH, int T, float scale, const float *p, const float *dp, float *ds, cudaStream_t s);
void cuk_softmax_rows(int rows, int n, float scale, const float *sc, float *p, cudaStream_t s);
/* the causal softmax, and each row's log-sum-exp of its scaled scores into lse (BH, T) */
void cuk_softmax_lse(int BH, int T, float scale, const float *sc, float *p, float *lse, cudaStream_t s);
void cuk_layernorm_fwd(int N, int rows, int C, const float *x, const float *w, const float *b, float eps, float *y,
                       float *stats, cudaStream_t s);
/* layernorm_bwd: dx (wr: =, else +=), dw and db += in one pass (cuda_ln_bwd.h) and the blocks' parts
 * added in order */
void cuk_layernorm_bwd(int N, int rows, int C, const float *x, const float *w, const float *stats, const float *dy,
                       float *dx, int wr, float *dw, float *db, cudaStream_t s);
/* loss[r] = -log softmax(logits[r])[target r] (double); dlogits (may be NULL) written */
void cuk_xent_rows(int rows, int V, const float *logits, const float *targets, float grad_scale, float *dlogits,
                   double *loss, cudaStream_t s);
/* hit[r] = 1 when the first maximum of row r is its target, else 0 */
void cuk_argmax_hits(int rows, int V, const float *logits, const float *targets, double *hit, cudaStream_t s);
void cuk_row_max(int rows, int V, const float *logits, float *mx, cudaStream_t s);
void cuk_xent_shard_stats(int rows, int V, int lo, const float *logits, const float *targets, const float *mx,
                          float *sumexp, float *tgt, cudaStream_t s);
void cuk_xent_shard_bwd(int rows, int V, int lo, const float *logits, const float *targets, const float *mx,
                        const float *sumexp, float grad_scale, float *dlogits, cudaStream_t s);
void cuk_row_first_index(int rows, int V, int lo, const float *logits, const float *mx, float *first,
                         cudaStream_t s);
/* ---- the fused causal attention (cuda_kern_attention.cu, cuda_attention_tiles.h,
 * cuda_attention_rf.h): backend.h's attention_fwd and attention_bwd without the T x T; the backward
 * keeps D (B, H, T) in dd. Kernels: CUK_ATT_FP32 (CUDA cores), CUK_ATT_WMMA (bf16 x bf16 products
 * on the tensor cores through WMMA, float sums; head sizes a multiple of 16, compute capability
 * 8.0 on), CUK_ATT_RF (the tiles in registers, mma.sync; head sizes 16, 32, 64 and the forward's
 * 128); tile: the rows of the fp32 and WMMA kernels' tiles. */
enum { CUK_ATT_FP32 = 0, CUK_ATT_WMMA = 1, CUK_ATT_RF = 2 };
/* The rows of the tiles the fp32 (wmma 0) or WMMA (1) kernels take at head size hs on this device,
 * at most `most` (0: any), or 0 where none fit (fp32: 32; WMMA: 64 or 32). */
int cuk_attention_tile(int hs, int wmma, int most);
/* The register-fragment forward (fwd 1) or backward (0) runs at head size hs on this device. */
int cuk_attention_rf_fits(int hs, int fwd);
void cuk_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, int kernels, int tile,
                       cudaStream_t s);
void cuk_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, const float *dy,
                       float *dqkv, int write, float *dd, int kernels, int tile, cudaStream_t s);
/* y[p] = mean of x[p, 0..HW) */
void cuk_avgpool_fwd(int P, int HW, const float *x, float *y, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
