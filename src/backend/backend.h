/* The backend op table: every numerical op of the engine goes through one of these function
 * pointers, so a CUDA backend (cuBLAS + kernels, later) drops in without touching the layers.
 * No CUDA type appears here. All matrices are row-major float32. Pointers passed to ops are
 * "backend memory": host memory for the CPU backends, device memory for a GPU backend.
 *
 * Backends: "cpu" and "ref" (host memory), and "cuda" (a GPU through cuBLAS and kernels; in a build
 * without the CUDA toolkit its open says so). A backend is opened by each thread that runs a
 * trainer (backend_open: a process's main thread, and an in-process background's thread) before its
 * ops run; a thread's ops are queued in order on its own stream of work (a GPU stream, or the
 * calling thread), so an op sees every earlier op's results; synchronize waits for them all before
 * timing, and ops returning a value to the host wait by themselves (for that thread's work only).
 *
 * Conventions:
 *  - "+=" in a comment means the op accumulates into its output (gradients of forks and of
 *    parameters accumulate; callers zero them once per step).
 *  - Sizes are int for matrix dims (BLAS), size_t for flat element counts.
 *  - Two CPU backends exist: "cpu" (OpenBLAS GEMM + tuned loops) and "ref" (naive loops with
 *    double accumulation, used by tests as the truth). tests/test_backend.c compares them op by op.
 */
#ifndef SURGE_BACKEND_H
#define SURGE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend/adamw_coefs.h"

/* Geometry of a 2-D convolution over NCHW images: x (C,H,W) per sample, weight (O,C,KH,KW),
 * y (O,OH,OW) per sample with OH = (H + 2 ph - KH)/stride + 1, OW = (W + 2 pw - KW)/stride + 1:
 * zero padding ph rows above and below, pw columns left and right (Inception-v3's 1x7 and 7x1
 * convolutions pad (0,3) and (3,0)). */
typedef struct conv_shape {
  int C, H, W, O, KH, KW, stride, ph, pw, OH, OW;
} conv_shape_t;

static inline conv_shape_t conv_shape_make(int C, int H, int W, int O, int KH, int KW, int stride,
                                           int ph, int pw) {
  conv_shape_t s = {C, H, W, O, KH, KW, stride, ph, pw, 0, 0};
  s.OH = (H + 2 * ph - KH) / stride + 1;
  s.OW = (W + 2 * pw - KW) / stride + 1;
  return s;
}

/* A 1x1 convolution with stride 1 and no padding: a matrix product per sample, nothing to lower. */
static inline int conv_is_pointwise(const conv_shape_t *s) {
  return s->KH == 1 && s->KW == 1 && s->stride == 1 && s->ph == 0 && s->pw == 0;
}

/* Workspace (floats) for conv_fwd and conv_bwd on a batch of any size: the largest that any
 * compiled-in backend asks for (its conv_workspace op), so a layer sizes its scratch at infer time
 * without knowing the backend. A few MiB at most for the zoo's layers. */
size_t conv_workspace_floats(const conv_shape_t *s);
/* Workspace (floats) for linear_fwd with `out` outputs and `in` inputs: the largest any backend
 * wants. */
size_t linear_workspace_floats(int out, int in);
/* Workspace (floats) for attention_fwd and attention_bwd at context T and head size hs, any batch
 * and heads: the largest any backend wants. */
size_t attention_workspace_floats(int T, int hs);

/* The arithmetic precision of the model's matrix products (the rest is float32 everywhere). */
typedef enum backend_precision {
  BACKEND_FP32 = 0, /* float32 products (TF32 tensor cores only when tf32 is set) */
  BACKEND_BF16      /* products of operands rounded to bfloat16, summed in float32, and GELU of its input rounded
                     * so (the host backends; cuda's GELU reads floats: within bf16's tolerance of ref); parameters,
                     * gradients and optimizer state stay float32 (the master copy), activations too but where the
                     * context says act16 (nn/act16.h) */
} backend_precision_t;

/* The vector width of the cpu backend's hand-written kernels (deck key backend.simd). */
typedef enum backend_simd {
  BACKEND_SIMD_AUTO = 0, /* the widest the CPU executes */
  BACKEND_SIMD_NONE,     /* none: the general loops and OpenBLAS (convolutions lowered to GEMMs) */
  BACKEND_SIMD_AVX2,     /* 8 floats: AVX2 + FMA */
  BACKEND_SIMD_AVX512    /* 16 floats: AVX-512F */
} backend_simd_t;

/* Which SGEMM the cpu backend runs (deck key backend.gemm). */
typedef enum backend_gemm {
  BACKEND_GEMM_AUTO = 0, /* its own packed kernel at the shapes where it beats OpenBLAS, OpenBLAS elsewhere */
  BACKEND_GEMM_BLAS      /* OpenBLAS always */
} backend_gemm_t;

/* Which cuBLASLt epilogues the cuda backend's linear forwards use (deck key backend.epilogues,
 * doc/gpu.md); the host backends accept every value and compute the same way whatever it is. */
typedef enum backend_epilogues {
  BACKEND_EPILOGUES_AUTO = 0, /* linear_fwd's bias and linear_gelu_fwd's bias + GELU in the GEMM's epilogue
                               * where cuBLASLt has an algorithm for the shape, GEMM + kernels elsewhere */
  BACKEND_EPILOGUES_BIAS,     /* the bias epilogue only: GELU as its own kernel */
  BACKEND_EPILOGUES_OFF       /* cuBLAS's GEMM, then the bias and GELU kernels, always */
} backend_epilogues_t;

/* Which kernels run the cuda backend's bf16 fused attention (deck key backend.attention_kernels,
 * doc/gpu.md); fp32 and the host backends compute the same way whatever it is. */
typedef enum backend_attention {
  BACKEND_ATTENTION_AUTO = 0, /* tiles in registers (mma.sync) where the head size allows, WMMA elsewhere
                               * in 64-row tiles where they fit (else 32) */
  BACKEND_ATTENTION_WMMA,     /* WMMA everywhere, 64-row tiles where they fit */
  BACKEND_ATTENTION_WMMA32    /* WMMA both ways in 32-row tiles */
} backend_attention_t;

enum { BACKEND_MARKS = 256 }; /* marks a device backend keeps per thread (backend_t.mark) */

/* What a process opens its backend with (backend_open). */
typedef struct backend_options {
  int device;       /* GPU index; -1: this rank's index among its job's ranks on the node, modulo the GPUs */
  int local_rank;   /* this rank's index among its job's ranks on its node */
  backend_precision_t precision;
  int tf32;         /* float32 products may use TF32 tensor cores */
  int low_priority; /* the opening thread runs a background job (mux/mux.h): its device work yields */
  int in_process;   /* that thread is an in-process background in another job's process (train/inproc.h):
                     * the process-wide settings (MPS client priority) stay its host's */
  int flush_denormals; /* cpu: float values below FLT_MIN count as zero on the opening thread (FTZ and
                        * DAZ): decaying optimizer moments otherwise reach them and every op on them
                        * takes the CPU's slow path */
  backend_simd_t simd; /* cpu: the kernels' vector width; a width the CPU lacks fails the open */
  backend_gemm_t gemm; /* cpu: whose SGEMM runs the matrix products */
  backend_epilogues_t epilogues; /* cuda: the cuBLASLt epilogues of the linear forwards */
  backend_attention_t attention; /* cuda, bf16: the fused attention's kernels */
  int bf16_activations; /* bf16 on a host backend: activations every reader rounds are held in bfloat16 (the
                         * context's act16; deck key backend.activations) */
} backend_options_t;

/* The linear forwards that wanted a cuBLASLt epilogue since the backend's open (cuda; zeros on the
 * host): of `bias_all` products with a bias (linear_fwd, and linear_gelu_fwd's where its GELU
 * epilogue was ruled out), `bias` ran with the bias epilogue; of `gelu_all` linear_gelu_fwd calls,
 * `gelu` with the bias + GELU one. The others ran as GEMM + kernels. */
typedef struct backend_epilogue_counts {
  long bias, bias_all, gelu, gelu_all;
} backend_epilogue_counts_t;

/* What an opened backend runs on: for logs, benchmarks and the comm layer. */
typedef struct backend_context {
  const char *device;    /* "host", or the GPU's name */
  int index;             /* the GPU's index, -1 on the host */
  void *stream;          /* the stream its ops are queued on (a cudaStream_t), NULL on the host */
  const char *precision; /* "fp32", "tf32" or "bf16" */
  double peak_flops;     /* the device's dense peak in that precision (FLOP/s), 0 when not known */
  const char *epilogues; /* cuda: the epilogue setting in use, "auto", "bias" or "off"; "none" on the host */
  const char *attention; /* cuda: the attention_kernels setting, "auto", "wmma" or "wmma32"; "none" on the host */
  backend_epilogue_counts_t epilogue_counts; /* as of this call of context() */
  int weights16_rows; /* > 0: linear_fwd and linear_gelu_fwd of up to this many rows read a bfloat16 copy of the
                       * weight where given (w16; a forward-only model's: model_weights16): cpu in bf16, whose
                       * products of a few rows read the weights once (generation), half the bytes from the
                       * copy (32 rows where the CPU has bfloat16 pairs, else 1); 0: none */
  int kv16; /* 1: a forward-only model's key/value cache is held in bfloat16 and read by gemm_grid_b16, the same
             * results in half the memory (cpu and ref in bf16, whose products round their operands anyway) */
  int act16; /* 1: a training model holds an activation in bfloat16 where every layer that reads it rounds it to
              * bfloat16 anyway (model.h; cpu and ref in bf16 unless backend_options_t.bf16_activations is 0): the
              * same results in half its memory; 0: float32 (fp32, and cuda, where it has not run) */
  long waits; /* a running count of the calling thread's waits for results of its queued work (compare two reads):
               * each download, upload and op that returns a value to the host (on a GPU each synchronises
               * its stream; host backends count the same calls, though nothing waits there) */
  /* cuda: the calling thread's recorded pieces (capture_begin): graphs launched, built (instantiated) and
   * updated in place, and recordings an op that waits ended early; 0 on host backends */
  long graphs_launched, graphs_built, graphs_updated, graphs_cut;
} backend_context_t;

/* The batch of gemm_grid: batch[0] x batch[1] matrices, each operand's start i*s[0] + j*s[1] floats
 * from its base. */
typedef struct gemm_grid {
  int batch[2];
  size_t sA[2], sB[2], sC[2];
} gemm_grid_t;

/* The numerical ops of every backend, written once: X(return type, name, (parameters)), each with
 * its contract. backend_t has one pointer per entry; a backend's table fills them all from its
 * functions PREFIX_name (BACKEND_MATH_ENTRIES), and tests/test_backend checks that every compiled
 * table fills every slot. A new op is one entry here and one function per backend. */
#define BACKEND_MATH_OPS(X) \
  /* ---- dense linear algebra \
   * C(M,N) = alpha * op(A) * op(B) + beta * C, op(A) is (M,K), op(B) is (K,N). \
   * ta: A is stored (K,M) and transposed; tb: B is stored (N,K) and transposed. */ \
  X(void, gemm, (int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, \
      float beta, float *C, int ldc)) \
  /* batch independent GEMMs: matrix i uses A + i*sA, B + i*sB, C + i*sC. */ \
  X(void, gemm_strided, (int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, size_t sA, \
      const float *B, int ldb, size_t sB, float beta, float *C, int ldc, size_t sC, int batch)) \
  /* a grid of batch[0] x batch[1] GEMMs: matrix (i, j) uses A + i*sA[0] + j*sA[1], B and C alike \
   * (attention: samples x heads, whose heads are not one stride apart). */ \
  X(void, gemm_grid, (int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, \
      int ldb, float beta, float *C, int ldc, const gemm_grid_t *g)) \
  /* gemm_grid with B held only as bfloat16 (B16: bf16_bits, strides and ldb in its elements), its \
   * values the floats they stand for: a key/value cache in bfloat16 (gen/engine_cache.c, where the \
   * context says kv16). C is gemm_grid's on B widened to floats (bit for bit in bf16: tests/test_bf16). */ \
  X(void, gemm_grid_b16, (int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, \
      const uint16_t *B16, int ldb, float beta, float *C, int ldc, const gemm_grid_t *g)) \
  /* ---- elementwise and reductions */ \
  X(void, fill, (float *x, size_t n, float v)) \
  X(void, scale, (float *x, size_t n, float a)) /* x *= a */ \
  X(void, axpy, (size_t n, float a, const float *x, float *y)) /* y += a * x */ \
  X(void, add, (size_t n, const float *a, const float *b, float *y)) /* y = a + b */ \
  X(double, sumsq, (const float *x, size_t n)) /* sum of x^2 (double) */ \
  /* *acc += sum of x^2, acc one double of backend memory: a norm's parts kept where the \
   * gradients are, read by the host once a step (train.c); the same bits as acc + sumsq(x, n) */ \
  X(void, sumsq_add, (const float *x, size_t n, double *acc)) \
  X(int, all_finite, (const float *x, size_t n)) /* 1 if no NaN/Inf */ \
  /* ---- bias: rows-major (rows, cols) with bias per column, or planes (N, C, HW) bias per channel */ \
  X(void, bias_add_rows, (int rows, int cols, const float *b, float *y)) /* y[r,c] += b[c] */ \
  X(void, bias_grad_rows, (int rows, int cols, const float *dy, float *db)) /* db[c] += sum_r dy[r,c] */ \
  X(void, bias_add_planes, (int N, int C, int HW, const float *b, float *y)) /* y[n,c,:] += b[c] */ \
  X(void, bias_grad_planes, (int N, int C, int HW, const float *dy, float *db)) /* db[c] += sum dy[n,c,:] */ \
  /* ---- activations (n elements). A backward's `write` (per input gradient): = instead of +=, the \
   * old contents unread (a gradient its first consumer overwrites, model_t.writer; never one that \
   * two inputs share, as in x + x, which has two consumer slots) */ \
  X(void, relu_fwd, (size_t n, const float *x, float *y)) \
  X(void, relu_bwd, (size_t n, const float *x, const float *dy, float *dx, int write)) /* dx += dy * (x > 0) */ \
  /* a residual join and the ReLU after it as one pass each way (model_init_fused): y = relu(a + b); \
   * da += dy * (y > 0) and db likewise, each skipped where NULL */ \
  X(void, add_relu_fwd, (size_t n, const float *a, const float *b, float *y)) \
  X(void, add_relu_bwd, (size_t n, const float *y, const float *dy, float *da, float *db, int write_a, int write_b)) \
  /* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); in precision = bf16 the host \
   * backends take x rounded to bfloat16, both ways, as a product's operand (so x may be held so: nn/act16.h) */ \
  X(void, gelu_fwd, (size_t n, const float *x, float *y)) \
  X(void, gelu_bwd, (size_t n, const float *x, const float *dy, float *dx, int write)) /* dx += dy * gelu'(x) */ \
  /* ---- convolution over a whole batch of B samples (NCHW), workspace ws of ws_n >= \
   * conv_workspace(s) floats (conv_workspace_floats(s) is enough for every backend). \
   * conv_workspace: the floats this backend's conv ops want for a batch of any size. \
   * conv_fwd: y (B,O,OH,OW) = conv(x (B,C,H,W), w (O,C,KH,KW)) + bias (O); bias may be NULL; with \
   *   relu != 0 the result goes through max(0, .) (the fused epilogue of conv followed by ReLU). \
   * conv_bwd: dx (B,C,H,W) +=, dw (O,C,KH,KW) +=, db (O) += the gradients for dy (B,O,OH,OW); any \
   *   of dx, dw, db may be NULL. Sums over the batch (dw, db) keep a rounding error that does not \
   *   grow with B (blocked partial sums added in double). relu_y: NULL, or the output y of a \
   *   conv_fwd with relu (the fused ReLU); dy is then the gradient of that output and the \
   *   convolution's own is dy where y > 0, else 0 (the ReLU's backward, fused). dx_write: dx is \
   *   overwritten (its old contents never read) instead of added into. */ \
  X(size_t, conv_workspace, (const conv_shape_t *s)) \
  X(void, conv_fwd, (const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu, \
      float *y, float *ws, size_t ws_n)) \
  X(void, conv_bwd, (const conv_shape_t *s, int B, const float *x, const float *w, const float *dy, \
      const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n)) \
  /* ---- a linear layer's forward: y (rows, out) = x (rows, in) w (out, in)^T + b (out; NULL: none), \
   * with a workspace ws of ws_n >= linear_workspace(out, in) floats (linear_workspace_floats is \
   * enough for every backend), one size for any number of rows; a smaller ws only takes the \
   * backend's general path. w16: NULL, or w as bfloat16 (to_bf16, a forward-only model's copy: \
   * model_weights16) where the context says weights16_rows; the backend may read it instead of w where \
   * that is faster, and y is the same bits either way. */ \
  X(size_t, linear_workspace, (int out, int in)) \
  X(void, linear_fwd, (int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, const float *b, \
      float *y, float *ws, size_t ws_n)) \
  /* ---- weight gradient of a linear map over many rows: C (M,N) += A^T B with A (K,M), B (K,N) \
   * row-major (leading dims lda, ldb, ldc), summed over the K rows with a rounding error that does \
   * not grow with K (blocks of rows, partial sums added in double). */ \
  X(void, gemm_tn_rows, (int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc)) \
  /* ---- convolution lowering, one image: x is (C,H,W), col is (C*KH*KW, OH*OW) with \
   * OH = (H + 2*ph - KH)/stride + 1, OW = (W + 2*pw - KW)/stride + 1 (zero padding ph rows, pw \
   * columns each side); rows ordered (c, kh, kw) as PyTorch's weight (O, C, KH, KW). */ \
  X(void, im2col, (const float *x, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *col)) \
  X(void, col2im, (const float *col, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, \
      float *dx)) /* dx += scatter of col */ \
  /* ---- pooling over P = N*C planes of (H,W) \
   * max pool k x k with stride s and padding pad <= k/2 (floor): y (P, OH, OW) with OH = \
   * (H + 2 pad - k)/s + 1, OW likewise, the padding never chosen (PyTorch's -inf); argmax (P, OH, OW) \
   * holds the flat index h*W+w of the max inside its plane, stored as float (exact below 2^24). */ \
  X(void, maxpool_fwd, (int P, int H, int W, int k, int s, int pad, const float *x, float *y, float *argmax)) \
  /* dx += routed dy; dx_write: dx = routed dy (0 where no window's max is), its old contents unread \
   * (the model never zeroes a gradient that its first consumer overwrites, model_t.writer) */ \
  X(void, maxpool_bwd, (int P, int H, int W, int k, int s, int pad, const float *dy, const float *argmax, float *dx, \
      int dx_write)) \
  X(void, avgpool_fwd, (int P, int HW, const float *x, float *y)) /* y[p] = mean x[p,:] */ \
  X(void, avgpool_bwd, (int P, int HW, const float *dy, float *dx, \
      int dx_write)) /* dx[p,:] += (dx_write: =) dy[p]/HW */ \
  /* windowed average pool k x k, stride s, zero padding pad <= k/2 counted in the divisor \
   * (PyTorch's count_include_pad, torchvision's default): y (P, OH, OW) as max pool's, each the sum \
   * of its window's elements inside the plane over k*k; backward: dx (+)= each window's dy/(k*k) \
   * on its elements inside the plane (dx_write: =, its old contents unread). */ \
  X(void, avgpool2d_fwd, (int P, int H, int W, int k, int s, int pad, const float *x, float *y)) \
  X(void, avgpool2d_bwd, (int P, int H, int W, int k, int s, int pad, const float *dy, float *dx, int dx_write)) \
  /* ---- a block of columns: dst[r, 0..cols) = (acc: +=) src[r, 0..cols) for r < rows, rows lds and \
   * ldd floats apart (a concatenation's parts: each input's rows into a slice of the output's). */ \
  X(void, copy_cols, (int rows, int cols, const float *src, size_t lds, float *dst, size_t ldd, int acc)) \
  /* ---- layer norm over the last dim, N samples of (rows, C): x, y (N, rows, C); stats (N, 2, rows) \
   * holds each sample's row means then row rstd = 1/sqrt(var + eps), saved for backward. dw and db \
   * sum over all N*rows rows with a rounding error that does not grow with N. */ \
  X(void, layernorm_fwd, (int N, int rows, int C, const float *x, const float *w, const float *b, float eps, \
      float *y, float *stats)) \
  /* dx += (dx_write: =, its old contents unread), dw, db += */ \
  X(void, layernorm_bwd, (int N, int rows, int C, const float *x, const float *w, const float *stats, \
      const float *dy, float *dx, int dx_write, float *dw, float *db)) \
  /* ---- batch normalisation over N samples of (C, HW) planes (HW = 1: the 1-D form on (N, C)); the \
   * statistics of channel c run over the values x[n, c, :] of all samples. \
   * bn_stats: part (1 + 3C) written: part[0] = N*HW (the count), part[1 + c] + part[1 + C + c] = the \
   *   mean of channel c as a float pair (the float nearest, and what it misses: a rank's mean must \
   *   not lose digits before the ranks' means are combined), part[1 + 2C + c] = its M2 (sum of \
   *   squared deviations from that mean), from sums kept in double. \
   * bn_finish: combines the R parts (R x (1 + 3C), one per rank, in order) by Chan's parallel \
   *   formula (mean_ab = mean_a + d n_b/n, M2_ab = M2_a + M2_b + d^2 n_a n_b/n, d = mean_b - mean_a; \
   *   no E[x^2] - E[x]^2 cancellation) into stats (2C) written: the mean, then rstd = 1/sqrt(var + eps) \
   *   with the biased variance var = M2/n; running (2C: running mean, running variance) unless NULL \
   *   becomes (1 - momentum) running + momentum (mean, M2/(n-1)) as PyTorch's. R = 0: stats from \
   *   running (evaluation); running is then only read. \
   * bn_fwd: y = (x - mean) rstd w + b per channel, through max(0, .) when relu (BN + ReLU fused). \
   * bn_bwd_sums: part (2C) written: per channel sum of g and of g xhat, xhat = (x - mean) rstd and g = \
   *   dy, or dy where relu_y > 0 when relu_y (the fused ReLU's output) is not NULL. They are the \
   *   bias's and weight's gradients on these samples, and (summed over the batch's ranks) sums. \
   * bn_bwd: with sums the bn_bwd_sums of all M values of the batch (every rank's): dx (+)= w rstd \
   *   (g - sums[c]/M - xhat sums[C + c]/M); dx_write: = instead of +=. */ \
  X(void, bn_stats, (int N, int C, int HW, const float *x, float *part)) \
  X(void, bn_finish, (int C, int R, const float *parts, float eps, float momentum, float *running, float *stats)) \
  X(void, bn_fwd, (int N, int C, int HW, const float *x, const float *stats, const float *w, const float *b, \
      int relu, float *y)) \
  X(void, bn_bwd_sums, (int N, int C, int HW, const float *x, const float *stats, const float *dy, \
      const float *relu_y, float *part)) \
  X(void, bn_bwd, (int N, int C, int HW, double M, const float *x, const float *stats, const float *w, \
      const float *dy, const float *relu_y, const float *sums, float *dx, int dx_write)) \
  /* ---- elementwise product: y = a * b, or y += a * b with acc (dropout's mask, n elements) */ \
  X(void, mul, (size_t n, const float *a, const float *b, float *y, int acc)) \
  /* ---- token + position embedding: idx (B,T) token ids stored as float; wte (V,C) holds the rows of \
   * ids [lo, lo+V) (lo = 0, V = the vocabulary: the whole table; otherwise a vocabulary-parallel \
   * shard); wpe (Tmax,C) or NULL (no position term: another rank adds it); \
   * y (B,T,C) = (lo <= id < lo+V ? wte[id-lo] : 0) + (wpe ? wpe[t] : 0). Ids outside the whole \
   * vocabulary are a caller bug (checked by the data layer). The backward sums (over the batch for \
   * wpe, over every use of a token for wte) keep a rounding error that does not grow with B. */ \
  X(void, embed_fwd, (int B, int T, int C, const float *idx, int lo, int V, const float *wte, const float *wpe, \
      float *y)) \
  X(void, embed_bwd, (int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte, \
      float *dwpe)) /* dwte (rows of ids in [lo, lo+V)), dwpe (unless NULL) += */ \
  /* ---- causal softmax for attention: rows of length T in BH blocks of (T,T); \
   * p[i,j] = softmax_j(scale * s[i,j]) over j <= i, p[i,j] = 0 for j > i. */ \
  X(void, causal_softmax_fwd, (int BH, int T, float scale, const float *s, float *p)) \
  /* ds[i,j] = scale * p[i,j] * (dp[i,j] - sum_k p[i,k] dp[i,k]) (written, not accumulated) */ \
  X(void, causal_softmax_bwd, (int BH, int T, float scale, const float *p, const float *dp, float *ds)) \
  /* ---- softmax of whole rows: p[r,j] = softmax_j(scale * s[r,j]) over each of `rows` rows of n \
   * (one query's scores against a key/value cache, gen/engine_cache.c) */ \
  X(void, softmax_rows, (int rows, int n, float scale, const float *s, float *p)) \
  /* ---- softmax cross-entropy: logits (rows, V), targets (rows) class ids stored as float. \
   * Returns the SUM over rows of -log softmax(logits)[target] (double). If dlogits is not NULL it \
   * is written (not accumulated) with grad_scale * (softmax - onehot(target)); it may be logits \
   * itself (the gradient in place of the logits: model_init_fused). */ \
  X(double, xent_fwd_bwd, (int rows, int V, const float *logits, const float *targets, float grad_scale, \
      float *dlogits)) \
  /* xent_fwd_bwd with its sum added to *loss (one double of backend memory) instead of returned: \
   * the same bits as loss + xent_fwd_bwd(..), and no wait for the host on a device */ \
  X(void, xent_add, (int rows, int V, const float *logits, const float *targets, float grad_scale, \
      float *dlogits, double *loss)) \
  /* pair[0] = (float)*x, pair[1] = (float)(*x - pair[0]), x and pair in backend memory: a double \
   * carried through a float sum as two floats (the loss in the gradient sync's side slots) */ \
  X(void, float_pair, (const double *x, float *pair)) \
  /* y[i] = x[i] as bfloat16 (core/bf16.h's bf16_bits: to nearest, ties to even; a NaN stays a NaN), \
   * n elements: a forward-only model's bfloat16 copy of its weights (model_weights16), a training model's \
   * activations held in bfloat16 (model.h, act16) */ \
  X(void, to_bf16, (size_t n, const float *x, uint16_t *y)) \
  /* y[i] = x[i]'s value as a float (exact), n elements: an activation held in bfloat16 (model.h, act16) \
   * widened for the layer that reads it */ \
  X(void, from_bf16, (size_t n, const uint16_t *x, float *y)) \
  /* Number of rows whose argmax (first maximum) equals the target. */ \
  X(long, count_correct, (int rows, int V, const float *logits, const float *targets)) \
  /* ---- vocabulary-parallel cross-entropy: this rank holds columns [lo, lo+V) of logits whose rows \
   * span a larger vocabulary; per-row values are combined over the ranks by the caller (comm layer). \
   * mx[r] = max over this rank's columns of row r. */ \
  X(void, row_max, (int rows, int V, const float *logits, float *mx)) \
  /* With mx the row maxima over all ranks: sumexp[r] = sum_v exp(logits[r,v] - mx[r]) and \
   * tgt[r] = logits[r, targets[r] - lo] when lo <= targets[r] < lo+V, else 0 (both written). */ \
  X(void, xent_shard_stats, (int rows, int V, int lo, const float *logits, const float *targets, const float *mx, \
      float *sumexp, float *tgt)) \
  /* With mx and sumexp over all ranks: dlogits[r,v] = grad_scale * (exp(logits[r,v] - mx[r]) / sumexp[r] \
   * - (v + lo == targets[r])) (written). */ \
  X(void, xent_shard_bwd, (int rows, int V, int lo, const float *logits, const float *targets, const float *mx, \
      const float *sumexp, float grad_scale, float *dlogits)) \
  /* first[r] = lo + the first v with logits[r,v] == mx[r], or 3e38 when there is none (the minimum \
   * over the ranks is the global first maximum). Indices are exact in float below 2^24. */ \
  X(void, row_first_index, (int rows, int V, int lo, const float *logits, const float *mx, float *first)) \
  /* ---- low-rank compression (compress/powersgd.h: PowerSGD of gradients and of pipeline gradients) \
   * dot: sum of x[i] * y[i] over n elements (double). \
   * orthonormalize: each of `batch` row-major (n, r) matrices P + i*sP gets orthonormal columns by \
   *   modified Gram-Schmidt, column by column from the first: col /= (||col|| + 1e-8), then every later \
   *   column -= (col . later) col. A matrix's columns are held in double while they are orthogonalised \
   *   and written back as float (so P^T P = I to float rounding however ill-conditioned P was). A column \
   *   found in the span of those before it (zero, or left with at most 1% of its length and its direction \
   *   mostly inside the span when the projections are taken again) is replaced by a fixed vector outside \
   *   it (backend/orth_rules.h). */ \
  X(double, dot, (const float *x, const float *y, size_t n)) \
  X(void, orthonormalize, (int batch, int n, int r, float *P, size_t sP)) \
  /* ---- optimizers over a flat slab of n floats (one call per step). Both read the gradient as \
   * gs[0] * g: the clipping factor folded into the step, one float of backend memory (so a device \
   * computes it without the host: clip_factor); gs NULL: g as is; otherwise as if g had been \
   * scaled by gs[0] first, without a pass of its own. \
   * SGD (PyTorch semantics): g' = g + wd*p; buf = mom*buf + g' (buf = g' when first); \
   *   step = nesterov ? g' + mom*buf : buf; p -= lr*step.  With mom == 0, buf is unused. */ \
  X(void, sgd_step, (size_t n, float *p, const float *g, float *buf, float lr, float mom, int nesterov, float wd, \
      int first, const float *gs)) \
  /* AdamW (PyTorch), c's numbers: p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; \
   *   p -= lr * (m / bc1) / (sqrt(v / bc2) + eps), with bc1 = 1 - b1^t, bc2 = 1 - b2^t. */ \
  X(void, adamw_step, (size_t n, float *p, const float *g, float *m, float *v, adamw_coefs_t c, const float *gs)) \
  /* *gs = the factor that clips a gradient of squared norm *sumsq to the norm max_norm \
   * (backend/step_rules.h: PyTorch's min(1, max_norm / (norm + 1e-6)); 1 for max_norm <= 0) */ \
  X(void, clip_factor, (const double *sumsq, double max_norm, float *gs)) \
  /* ---- fused forms (issue 32), chosen by the model's fusion pass (model_init_fused); each equals the \
   * ops it replaces run one after the other (ref composes exactly those). \
   * linear_gelu_fwd: pre (rows, out) = linear_fwd's x w^T + b (b may be NULL), kept for the backward; \
   *   y = gelu(pre). Workspace and w16 as linear_fwd's. \
   * gelu_bias_bwd: dpre (rows, cols) = dy * gelu'(pre) (written), and db (cols) += its column sums \
   *   (db NULL: none) in the same pass, with bias_grad_rows's rounding. \
   * add_layernorm_fwd: sum (N, rows, C) = a + b (written: the residual stream), then layernorm_fwd \
   *   of sum into y and stats. */ \
  X(void, linear_gelu_fwd, (int rows, int out, int in, const float *x, const float *w, const uint16_t *w16, \
      const float *b, float *pre, float *y, float *ws, size_t ws_n)) \
  X(void, gelu_bias_bwd, (int rows, int cols, const float *pre, const float *dy, float *dpre, float *db)) \
  X(void, add_layernorm_fwd, (int N, int rows, int C, const float *a, const float *b, const float *w, \
      const float *bias, float eps, float *sum, float *y, float *stats)) \
  /* ---- causal multi-head self-attention as one op each way (issue 32 item 4): qkv (B, T, 3C) holds \
   * q, k and v as consecutive blocks of C, head h owning columns h*hs..(h+1)*hs of each (hs = C/H); \
   * per sample and head, with s = 1/sqrt(hs): P = causal softmax(s Q K^T), Y = P V written into \
   * columns h*hs.. of y (B, T, C), and lse (B, H, T) = each row's log sum_j<=i exp(s q_i . k_j), \
   * kept for the backward. attention_bwd: dqkv (B, T, 3C) += (dx_write: =, its old contents \
   * unread) the gradients for dy (B, T, C), from qkv, y and lse; in precision = bf16 its D = rowsum(dY Y) \
   * is a product of rounded operands on every backend, dY as dP = dY V^T reads it (else D and dP, equal in \
   * a row that sees one key, differ by dY's rounding) and y as the products after it read it (so y may be \
   * held rounded: nn/act16.h). A workspace ws of ws_n >= \
   * attention_workspace(T, hs) floats, one size for any B and H (attention_workspace_floats is \
   * enough for every backend): cpu's blocked form (online softmax over key blocks, FlashAttention-2's \
   * order) asks O(T hs), never T x T; cuda's fused kernels none (their D, B H T floats, in its own \
   * memory); ref computes the naive T x T form in memory of its own. Sums run over the causal pairs \
   * only, so a NaN or Inf in one token's q, k, v or dy reaches only what depends on it on ref and cpu \
   * (test_backend); cuda's tiles multiply the masked pairs' zeros and may pass it to earlier tokens. */ \
  X(size_t, attention_workspace, (int T, int hs)) \
  X(void, attention_fwd, (int B, int T, int C, int H, const float *qkv, float *y, float *lse, float *ws, size_t ws_n)) \
  X(void, attention_bwd, (int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, \
      const float *dy, float *dqkv, int dx_write, float *ws, size_t ws_n))

typedef struct backend {
  const char *name;
  int host_memory; /* 1: its memory is the host's (host code may read and write it in place, so
                    * upload/download copies can be skipped); 0: a device's */

  /* ---- the process's context: open makes the backend ready (a GPU: picks the device, creates its
   * stream and library handles); it returns NULL, or a one-line reason it cannot, with *input_error
   * set when the options ask for what the backend does not have (then it is the deck's fault), clear
   * when the machine lacks it (no GPU). Opening again with the same options does nothing. close
   * releases what open made (after every buffer was freed). synchronize returns once every op
   * queued so far has completed (host backends: at once). context is valid after open. */
  const char *(*open)(const backend_options_t *o, int *input_error);
  void (*close)(void);
  void (*synchronize)(void);
  const backend_context_t *(*context)(void);

  /* Threads for this rank's math (OpenBLAS threads on the CPU backend). */
  void (*set_threads)(int nthreads);

  /* Priority of this process's device work against other processes on the same device: low != 0
   * for a background job (mux/mux.h). A GPU backend puts its work on low-priority streams
   * (cudaStreamCreateWithPriority) or MPS client priority; host backends have nothing to do here,
   * since the OS priority the multiplexer sets already covers their threads. Returns what it did,
   * for the log. */
  const char *(*set_priority)(int low);

  /* Recording a background's pieces as graphs (mux/background.c, [multiplex] graphs): NULL on host
   * backends. capture_begin: the calling thread's next ops are recorded, not run, as the piece at
   * key (an int that names the same place in every step). capture_end: the recording becomes a
   * graph (the key's graph of an earlier step updated in place where its work has the same nodes,
   * with any arguments and grids, else built anew), gate() runs (the background's gate: its turn),
   * and the graph is launched on the thread's stream; nothing when no recording is open. An op that
   * waits for the device (a copy to or from the host, a value returned, an allocation, synchronize)
   * first ends an open recording the same way (its gate is called there), then runs, as does the
   * rest of the piece. */
  void (*capture_begin)(int key, void (*gate)(void));
  void (*capture_end)(void);
  /* After an error that ends the calling thread only (an in-process background's): an open
   * recording is dropped, nothing launched, nothing of the process waits for it any more, and the
   * thread's kept graphs are freed. */
  void (*capture_abandon)(void);

  /* Timing the device's work without waiting for it (a foreground's slowdown feedback,
   * mux/foreground.c): NULL on host backends, where an op's work is done when it returns. mark(i)
   * records mark i (0 <= i < BACKEND_MARKS; what it held before is forgotten) on the calling
   * thread's stream: it passes once every op the thread queued before it has run. mark_passed(i):
   * whether it has, without waiting. mark_ns(i, j): nanoseconds from mark i to mark j, both passed
   * (the device's time between them, idle gaps included). Not inside a recording (capture_begin):
   * mark ends an open one first. */
  void (*mark)(int i);
  int (*mark_passed)(int i);
  double (*mark_ns)(int i, int j);

  /* ---- memory (host <-> backend); alloc returns zeroed memory, 64-byte aligned */
  float *(*alloc)(size_t n);
  void (*free)(float *p);
  void (*upload)(float *dst, const float *host_src, size_t n);
  void (*download)(float *host_dst, const float *src, size_t n);
  void (*copy)(float *dst, const float *src, size_t n);
  /* Bytes of device memory in use on this process's device, as the driver counts them (total - free:
   * the context, library workspaces and every allocation, of every process on the device), for the
   * memory report; 0 on host backends (their memory is the process's, counted as resident memory).
   * Valid after open. */
  size_t (*device_used)(void);

  /* ---- the numerical ops: one pointer per entry of BACKEND_MATH_OPS (above, with their
   * contracts) */
#define BACKEND_OP_FIELD(ret, name, params) ret(*name) params;
  BACKEND_MATH_OPS(BACKEND_OP_FIELD)
#undef BACKEND_OP_FIELD
} backend_t;

/* The backends compiled in. */
extern const backend_t backend_cpu;  /* OpenBLAS */
extern const backend_t backend_ref;  /* naive reference, for tests */
extern const backend_t backend_cuda; /* cuBLAS + kernels (without the toolkit: open explains) */

/* Look a backend up by name ("cpu", "ref", "cuda"); NULL if unknown. */
const backend_t *backend_find(const char *name);
/* Opening one for the process: backend_open (backend_open.h, with MPI). */
/* The options of a plain run: the first GPU of the node's ranks by local rank, fp32, no TF32,
 * denormals flushed. */
backend_options_t backend_default_options(void);
/* Comma-separated list of known backend names, for error messages. */
const char *backend_names(void);
/* n bfloat16 values of be's memory (be->alloc's floats, two values a float; be->free((float *)p) frees them):
 * a forward-only model's weight copy, a key/value cache in bfloat16 */
static inline uint16_t *backend_alloc_bf16(const backend_t *be, size_t n) { return (uint16_t *)be->alloc(n / 2 + 1); }

#endif
