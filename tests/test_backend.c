/* The "cpu" backend against the naive "ref" backend, op by op, on the same random inputs; plus a
 * few ops against hand-computed values on both backends, and the memory ops and the registry.
 * `test_backend cuda` (tests/gpu/ops.gpu) puts the cuda backend in cpu's place: every op against
 * ref within the same tolerance, its buffers CUDA managed memory that host and GPU both address;
 * without a usable GPU it skips, saying why. `test_backend cuda-bf16` opens it with `precision =
 * bf16` and checks the fused attention's tensor-core kernels against ref at BF16_ATT_TOL (and a
 * head size they refuse, at the fp32 kernels' 1e-5).
 *
 * Agreement per output array: ||cpu - ref|| / max(||ref||, tiny) <= 1e-5 (exact for argmax,
 * count_correct and all_finite). Outputs the header marks "written" are pre-filled with NaN on cpu
 * and with random values on ref, so reading them shows up; outputs marked "+=" are pre-filled with
 * the same random values on both, and each backend is checked to really accumulate: the op run
 * onto a constant c equals the op run onto zeros, plus c. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "surge_build_config.h"
#if HAVE_CUDA
#include <cuda_runtime.h>
#define BUILD_HAS_CUDA 1
#else
#define BUILD_HAS_CUDA 0
#endif

#include "backend/backend.h"
#include "backend/cpu_ops.h" /* cpu_conv_direct_blocks: which conv path a case takes; the denormal modes */
#include "core/bf16.h"
#include "core/error.h"
#include "core/rng.h"
#include "rel_diff.h"
#include "tap.h"

#define AGREE_TOL 1e-5
#define LONG_SUM_TOL 1e-6 /* sums over a long batch of same-sign terms (test_long_sums) */
#define EPILOGUE_TOL 1e-4 /* cuda: the linear forwards through cuBLASLt's epilogues, float32 */
#define EPILOGUE_BF16_TOL 1e-2 /* the same with bf16 products (operands rounded to 8 bits of mantissa) */
#define ACCUM_CONST 0.25f
#define BF16_ATT_TOL 2e-2 /* the tensor-core attention's operands are bf16: tests/test_cuda_attention.c */

static const backend_t *backends[2] = {&backend_cpu, &backend_ref}; /* [0] fast, [1] truth */
static int managed; /* backends[0] is on a GPU: test buffers are CUDA managed memory */
static rng_t rng;
static double worst_agreement; /* largest cpu-vs-ref relative difference seen */
static double agree_tol = AGREE_TOL; /* the tolerance compare_backends applies */

/* ---- buffers */

static void *talloc(size_t bytes) {
#if HAVE_CUDA
  if (managed) {
    void *p = NULL;
    cudaError_t e = cudaMallocManaged(&p, bytes ? bytes : 1, cudaMemAttachGlobal);
    if (e != cudaSuccess) surge_runtime_error("cudaMallocManaged(%zu): %s", bytes, cudaGetErrorString(e));
    return p;
  }
#endif
  return xmalloc(bytes);
}

static void tfree(void *p) {
#if HAVE_CUDA
  if (managed) {
    cudaFree(p);
    return;
  }
#endif
  free(p);
}

static float *buf_uniform(size_t n, float lo, float hi) {
  float *x = talloc((n ? n : 1) * sizeof *x);
  rng_fill_uniform(&rng, x, n, lo, hi);
  return x;
}

static float *buf_const(size_t n, float v) {
  float *x = talloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = v;
  return x;
}

/* Class ids in [0, V) stored as float. */
static float *buf_ids(size_t n, int V) {
  float *x = talloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)rng_below(&rng, (uint64_t)V);
  return x;
}

/* ---- one op case: how to run it, and what its outputs are */

enum out_mode {
  OUT_WRITE, /* written by the op */
  OUT_ACCUM, /* accumulated into ("+=") */
  OUT_INOUT  /* read and updated (optimizer state, C with beta != 0): starts from `init` */
};
enum scalar_mode { SCALAR_NONE, SCALAR_CLOSE, SCALAR_EXACT };
enum { MAX_OUTS = 3 };

typedef struct out_spec {
  const char *name;
  size_t len;
  enum out_mode mode;
  int exact;         /* compare bit for bit (argmax indices) */
  const float *init; /* OUT_INOUT only */
} out_spec_t;

/* Runs the op on `be` into out[0..nout); returns its scalar result (0 when it has none). */
typedef double (*op_run_fn)(const backend_t *be, const void *ctx, float **out);

typedef struct op_case {
  const char *label;
  op_run_fn run;
  const void *ctx;
  int nout;
  out_spec_t out[MAX_OUTS];
  enum scalar_mode scalar;
} op_case_t;

/* Fills the outputs of backend `k` (0 cpu, 1 ref) before a run; `accum` is the ACCUM pre-fill. */
static void prefill(const op_case_t *c, int k, float **out, const float *const *accum) {
  for (int i = 0; i < c->nout; i++) {
    const out_spec_t *o = &c->out[i];
    for (size_t j = 0; j < o->len; j++)
      switch (o->mode) {
      case OUT_WRITE: out[i][j] = k == 0 ? NAN : rng_uniform(&rng) * 100.0f - 50.0f; break;
      case OUT_ACCUM: out[i][j] = accum[i][j]; break;
      case OUT_INOUT: out[i][j] = o->init[j]; break;
      }
  }
}

/* Each backend really accumulates its ACCUM outputs: run onto c equals run onto 0, plus c. */
static void check_accumulates(const op_case_t *c, const backend_t *be) {
  float *on_zero[MAX_OUTS], *on_const[MAX_OUTS];
  const float *zero[MAX_OUTS], *konst[MAX_OUTS];
  for (int i = 0; i < c->nout; i++) {
    zero[i] = on_zero[i] = buf_const(c->out[i].len, 0.0f);
    konst[i] = on_const[i] = buf_const(c->out[i].len, ACCUM_CONST);
  }
  prefill(c, 1, on_zero, zero);
  c->run(be, c->ctx, on_zero);
  be->synchronize();
  prefill(c, 1, on_const, konst);
  c->run(be, c->ctx, on_const);
  be->synchronize();
  for (int i = 0; i < c->nout; i++) {
    if (c->out[i].mode != OUT_ACCUM) continue;
    for (size_t j = 0; j < c->out[i].len; j++) on_zero[i][j] += ACCUM_CONST;
    double e = rel_diff(on_const[i], on_zero[i], c->out[i].len);
    tap_ok(e <= agree_tol, "%s: %s %s accumulates (rel %.1e)", c->label, be->name, c->out[i].name, e);
  }
  for (int i = 0; i < c->nout; i++) {
    tfree(on_zero[i]);
    tfree(on_const[i]);
  }
}

/* Run the case on cpu and ref from the same inputs and compare every output and the scalar. */
static void compare_backends(const op_case_t *c) {
  float *out[2][MAX_OUTS], *accum[MAX_OUTS];
  int has_accum = 0;
  for (int i = 0; i < c->nout; i++) {
    accum[i] = buf_uniform(c->out[i].len, -1.0f, 1.0f);
    has_accum |= c->out[i].mode == OUT_ACCUM;
    for (int k = 0; k < 2; k++) out[k][i] = talloc((c->out[i].len ? c->out[i].len : 1) * sizeof(float));
  }
  double scalar[2];
  for (int k = 0; k < 2; k++) {
    prefill(c, k, out[k], (const float *const *)accum);
    scalar[k] = c->run(backends[k], c->ctx, out[k]);
    backends[k]->synchronize(); /* a GPU's work is queued: done before the host reads */
  }
  for (int i = 0; i < c->nout; i++) {
    const out_spec_t *o = &c->out[i];
    if (o->exact) {
      tap_ok(memcmp(out[0][i], out[1][i], o->len * sizeof(float)) == 0, "%s: %s identical",
             c->label, o->name);
      continue;
    }
    double e = rel_diff(out[0][i], out[1][i], o->len);
    if (!(e <= worst_agreement)) worst_agreement = e;
    tap_ok(e <= agree_tol, "%s: %s rel %.1e <= %.0e", c->label, o->name, e, agree_tol);
  }
  if (c->scalar == SCALAR_EXACT)
    tap_ok(scalar[0] == scalar[1], "%s: result %.17g == %.17g", c->label, scalar[0], scalar[1]);
  if (c->scalar == SCALAR_CLOSE) {
    double e = fabs(scalar[0] - scalar[1]) / fmax(fabs(scalar[1]), 1e-30);
    if (!(e <= worst_agreement)) worst_agreement = e;
    tap_ok(e <= agree_tol, "%s: result %.9g vs %.9g rel %.1e", c->label, scalar[0], scalar[1], e);
  }
  if (has_accum)
    for (int k = 0; k < 2; k++) check_accumulates(c, backends[k]);
  for (int i = 0; i < c->nout; i++) {
    tfree(accum[i]);
    for (int k = 0; k < 2; k++) tfree(out[k][i]);
  }
}

/* ---- dense linear algebra */

typedef struct gemm_ctx {
  int ta, tb, M, N, K, lda, ldb, ldc, batch;
  size_t sA, sB, sC;
  float alpha, beta;
  const float *A, *B;
  const uint16_t *B16; /* B as bfloat16 (gemm_grid_b16) */
} gemm_ctx_t;

static double run_gemm(const backend_t *be, const void *ctx, float **out) {
  const gemm_ctx_t *g = ctx;
  be->gemm(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, out[0], g->ldc);
  return 0.0;
}

static double run_gemm_strided(const backend_t *be, const void *ctx, float **out) {
  const gemm_ctx_t *g = ctx;
  be->gemm_strided(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->sA, g->B, g->ldb, g->sB,
                   g->beta, out[0], g->ldc, g->sC, g->batch);
  return 0.0;
}

static double run_gemm_grid(const backend_t *be, const void *ctx, float **out) {
  const gemm_ctx_t *g = ctx;
  // a grid of batch x 2: the second dimension's matrices sit halfway between the first's
  gemm_grid_t grid = {{g->batch, 2}, {2 * g->sA, g->sA}, {2 * g->sB, g->sB}, {2 * g->sC, g->sC}};
  be->gemm_grid(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, out[0], g->ldc, &grid);
  return 0.0;
}

static double run_gemm_grid_b16(const backend_t *be, const void *ctx, float **out) {
  const gemm_ctx_t *g = ctx;
  gemm_grid_t grid = {{g->batch, 2}, {2 * g->sA, g->sA}, {2 * g->sB, g->sB}, {2 * g->sC, g->sC}};
  be->gemm_grid_b16(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B16, g->ldb, g->beta, out[0], g->ldc,
                    &grid);
  return 0.0;
}

/* op(A) (M,K) times op(B) (K,N) with leading dimensions `extra` wider than needed; `batch` > 1 uses
 * gemm_strided with matrices `extra` floats apart. */
static void test_gemm(int ta, int tb, int M, int N, int K, float beta, int extra, int batch) {
  gemm_ctx_t g = {ta, tb, M, N, K, (ta ? M : K) + extra, (tb ? K : N) + extra, N + extra, batch,
                  0, 0, 0, 1.3f, beta, NULL, NULL, NULL};
  g.sA = (size_t)(ta ? K : M) * g.lda + extra;
  g.sB = (size_t)(tb ? N : K) * g.ldb + extra;
  g.sC = (size_t)M * g.ldc + extra;
  float *A = buf_uniform(g.sA * batch, -1, 1), *B = buf_uniform(g.sB * batch, -1, 1);
  // C's padding is random; with beta == 0 its M x N blocks start as NaN, which must not be read
  float *C0 = buf_uniform(g.sC * batch, -1, 1);
  if (beta == 0.0f)
    for (int b = 0; b < batch; b++)
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C0[b * g.sC + (size_t)i * g.ldc + j] = NAN;
  g.A = A;
  g.B = B;
  char label[96];
  snprintf(label, sizeof label, "%s ta=%d tb=%d M=%d N=%d K=%d beta=%g ld+%d", batch > 1 ? "gemm_strided" : "gemm",
           ta, tb, M, N, K, beta, extra);
  op_case_t c = {label, batch > 1 ? run_gemm_strided : run_gemm, &g, 1,
                 {{"C", g.sC * batch, OUT_INOUT, 0, C0}}, SCALAR_NONE};
  compare_backends(&c);
  if (batch > 1 && batch % 2 == 0) { /* the same matrices as a grid of (batch/2) x 2 */
    g.batch = batch / 2;
    snprintf(label, sizeof label, "gemm_grid %dx2 ta=%d tb=%d M=%d N=%d K=%d beta=%g ld+%d", g.batch, ta, tb, M, N,
             K, beta, extra);
    c.run = run_gemm_grid;
    compare_backends(&c);
    /* the same grid with B held as bfloat16 (a key/value cache's form) */
    uint16_t *B16 = talloc(g.sB * batch * sizeof *B16);
    for (size_t i = 0; i < g.sB * batch; i++) B16[i] = bf16_bits(B[i]);
    g.B16 = B16;
    snprintf(label, sizeof label, "gemm_grid_b16 %dx2 ta=%d tb=%d M=%d N=%d K=%d beta=%g ld+%d", g.batch, ta, tb, M,
             N, K, beta, extra);
    c.run = run_gemm_grid_b16;
    compare_backends(&c);
    tfree(B16);
  }
  tfree(A);
  tfree(B);
  tfree(C0);
}

typedef struct linear_ctx {
  int rows, out, in, bias;
  size_t ws_n;
  const float *x, *w, *b;
} linear_ctx_t;

static double run_linear_fwd(const backend_t *be, const void *ctx, float **out) {
  const linear_ctx_t *v = ctx;
  float *ws = v->ws_n ? talloc(v->ws_n * sizeof *ws) : NULL;
  be->linear_fwd(v->rows, v->out, v->in, v->x, v->w, NULL, v->bias ? v->b : NULL, out[0], ws, v->ws_n);
  be->synchronize();
  if (ws) tfree(ws);
  return 0.0;
}

/* The linear forward with the GELU after it (a fused form): pre = x w^T + b and y = gelu(pre). */
static double run_linear_gelu_fwd(const backend_t *be, const void *ctx, float **out) {
  const linear_ctx_t *v = ctx;
  float *ws = v->ws_n ? talloc(v->ws_n * sizeof *ws) : NULL;
  be->linear_gelu_fwd(v->rows, v->out, v->in, v->x, v->w, NULL, v->bias ? v->b : NULL, out[0], out[1], ws, v->ws_n);
  be->synchronize();
  if (ws) tfree(ws);
  return 0.0;
}

/* A linear layer's forward, y = x w^T + b, with the workspace any backend asks for and with none
 * (the general path). Where the CPU has AVX-512 the cpu backend computes few rows times many
 * outputs without packing w (cpu_linear.c): two row blocks (128), full and partial tiles of rows
 * (64, 17) and of columns (out % 6), depths that are not a multiple of 16; y's old contents (NaN
 * on cpu) never read. The other shapes take OpenBLAS and a bias pass; one row its matrix-vector
 * product. */
static void test_linear_fwd(void) {
  const int shapes[][3] = {{128, 384, 64}, {64, 391, 80}, {17, 389, 100}, {1, 400, 70}, {33, 512, 784},
                           {129, 400, 70}, {20, 10, 512}, {5, 7, 3}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int rows = shapes[s][0], out = shapes[s][1], in = shapes[s][2];
    float *x = buf_uniform((size_t)rows * in, -1, 1), *w = buf_uniform((size_t)out * in, -1, 1),
          *b = buf_uniform((size_t)out, -1, 1);
    const int unpacked = cpu_linear_unpacked(rows, out, in);
    tap_ok(unpacked == (cpu_simd() != BACKEND_SIMD_NONE && rows >= 2 && rows <= 128 && out >= 384 && in >= 64) &&
               (!unpacked || linear_workspace_floats(out, in) >= (size_t)(rows + 15) / 16 * 16 * (size_t)in),
           "linear_fwd rows=%d out=%d in=%d: %s", rows, out, in,
           unpacked ? "the unpacked path, its workspace sized by linear_workspace_floats"
           : rows == 1 ? "OpenBLAS's matrix-vector product" : "OpenBLAS");
    for (int bias = 0; bias < 2; bias++)
      for (int with_ws = 0; with_ws < 2; with_ws++) {
        linear_ctx_t v = {rows, out, in, bias, with_ws ? linear_workspace_floats(out, in) : 0, x, w, b};
        char label[96];
        snprintf(label, sizeof label, "linear_fwd rows=%d out=%d in=%d%s%s", rows, out, in, bias ? " bias" : "",
                 with_ws ? " workspace" : "");
        compare_backends(&(op_case_t){label, run_linear_fwd, &v, 1, {{"y", (size_t)rows * out, OUT_WRITE, 0, NULL}},
                                      0});
        snprintf(label, sizeof label, "linear_gelu_fwd rows=%d out=%d in=%d%s%s", rows, out, in,
                 bias ? " bias" : "", with_ws ? " workspace" : "");
        /* on cuda, cuBLASLt's GELU epilogue, whose tanh NVIDIA does not specify: held to 1e-4
         * (test_epilogues) */
        if (managed) agree_tol = EPILOGUE_TOL;
        compare_backends(&(op_case_t){label, run_linear_gelu_fwd, &v, 2,
                                      {{"pre", (size_t)rows * out, OUT_WRITE, 0, NULL},
                                       {"y", (size_t)rows * out, OUT_WRITE, 0, NULL}}, 0});
        agree_tol = AGREE_TOL;
      }
    tfree(x), tfree(w), tfree(b);
  }
}

/* ---- elementwise, reductions, bias, activations */

typedef struct vec_ctx {
  size_t n;
  int rows, cols, N, C, HW;
  float a;
  const float *x, *y;
  int write; /* an op's dx_write */
} vec_ctx_t;

static double run_fill(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->fill(out[0], v->n, v->a);
  return 0.0;
}
static double run_scale(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->scale(out[0], v->n, v->a);
  return 0.0;
}
static double run_axpy(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->axpy(v->n, v->a, v->x, out[0]);
  return 0.0;
}
static double run_add(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->add(v->n, v->x, v->y, out[0]);
  return 0.0;
}
static double run_add_in_place(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->add(v->n, v->x, out[0], out[0]); /* y = x + y */
  return 0.0;
}
static double run_sumsq(const backend_t *be, const void *ctx, float **out) {
  (void)out;
  const vec_ctx_t *v = ctx;
  return be->sumsq(v->x, v->n);
}
static double run_dot(const backend_t *be, const void *ctx, float **out) {
  (void)out;
  const vec_ctx_t *v = ctx;
  return be->dot(v->x, v->y, v->n);
}
static double run_all_finite(const backend_t *be, const void *ctx, float **out) {
  (void)out;
  const vec_ctx_t *v = ctx;
  return be->all_finite(v->x, v->n);
}
static double run_bias_add_rows(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->bias_add_rows(v->rows, v->cols, v->x, out[0]);
  return 0.0;
}
static double run_bias_grad_rows(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->bias_grad_rows(v->rows, v->cols, v->x, out[0]);
  return 0.0;
}
static double run_bias_add_planes(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->bias_add_planes(v->N, v->C, v->HW, v->x, out[0]);
  return 0.0;
}
static double run_bias_grad_planes(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->bias_grad_planes(v->N, v->C, v->HW, v->x, out[0]);
  return 0.0;
}
static double run_relu_fwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->relu_fwd(v->n, v->x, out[0]);
  return 0.0;
}
static double run_relu_bwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->relu_bwd(v->n, v->x, v->y, out[0], v->write);
  return 0.0;
}
static double run_add_relu_fwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->add_relu_fwd(v->n, v->x, v->y, out[0]);
  return 0.0;
}
/* x as the fused ReLU's output (the mask), y as its gradient, into two inputs' gradients */
static double run_add_relu_bwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->add_relu_bwd(v->n, v->x, v->y, out[0], out[1], v->write & 1, v->write >> 1 & 1);
  return 0.0;
}
static double run_add_relu_bwd_one(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->add_relu_bwd(v->n, v->x, v->y, NULL, out[0], 0, v->write);
  return 0.0;
}
static double run_gelu_fwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->gelu_fwd(v->n, v->x, out[0]);
  return 0.0;
}
static double run_gelu_bwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->gelu_bwd(v->n, v->x, v->y, out[0], v->write);
  return 0.0;
}
static double run_avgpool_fwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->avgpool_fwd(v->rows, v->HW, v->x, out[0]);
  return 0.0;
}
static double run_avgpool_bwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->avgpool_bwd(v->rows, v->HW, v->x, out[0], v->write);
  return 0.0;
}

static void test_flat_ops(size_t n) {
  float *x = buf_uniform(n, -4, 4), *y = buf_uniform(n, -2, 2), *y0 = buf_uniform(n, -1, 1);
  vec_ctx_t v = {.n = n, .a = -0.75f, .x = x, .y = y};
  char label[64];
#define FLAT_CASE(fn, mode, scalar)                                                     \
  do {                                                                                  \
    snprintf(label, sizeof label, "%s%s n=%zu", #fn + 4, v.write ? " written" : "", n); \
    op_case_t c = {label, fn, &v, 1, {{"y", n, mode, 0, y0}}, scalar};                  \
    if (scalar != SCALAR_NONE) c.nout = 0;                                              \
    compare_backends(&c);                                                               \
  } while (0)
  FLAT_CASE(run_fill, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_scale, OUT_INOUT, SCALAR_NONE);
  FLAT_CASE(run_axpy, OUT_ACCUM, SCALAR_NONE);
  FLAT_CASE(run_add, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_add_in_place, OUT_INOUT, SCALAR_NONE);
  FLAT_CASE(run_sumsq, OUT_WRITE, SCALAR_CLOSE);
  FLAT_CASE(run_dot, OUT_WRITE, SCALAR_CLOSE);
  FLAT_CASE(run_all_finite, OUT_WRITE, SCALAR_EXACT);
  FLAT_CASE(run_relu_fwd, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_relu_bwd, OUT_ACCUM, SCALAR_NONE);
  FLAT_CASE(run_add_relu_fwd, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_add_relu_bwd_one, OUT_ACCUM, SCALAR_NONE);
  FLAT_CASE(run_gelu_fwd, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_gelu_bwd, OUT_ACCUM, SCALAR_NONE);
  v.write = 1; /* the backward overwrites dx: its old contents (NaN on cpu) never read */
  FLAT_CASE(run_relu_bwd, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_add_relu_bwd_one, OUT_WRITE, SCALAR_NONE);
  FLAT_CASE(run_gelu_bwd, OUT_WRITE, SCALAR_NONE);
  v.write = 0;
  // a NaN or an Inf anywhere (here: last element, then the first) is seen by both
  x[n - 1] = INFINITY;
  FLAT_CASE(run_all_finite, OUT_WRITE, SCALAR_EXACT);
  x[0] = NAN;
  FLAT_CASE(run_all_finite, OUT_WRITE, SCALAR_EXACT);
#undef FLAT_CASE
  snprintf(label, sizeof label, "add_relu_bwd n=%zu", n);
  compare_backends(
      &(op_case_t){label, run_add_relu_bwd, &v, 2, {{"da", n, OUT_ACCUM, 0, y0}, {"db", n, OUT_ACCUM, 0, x}}, 0});
  for (v.write = 1; v.write <= 3; v.write++) /* da, db, both overwritten */
    compare_backends(&(op_case_t){label, run_add_relu_bwd, &v, 2,
                                  {{"da", n, v.write & 1 ? OUT_WRITE : OUT_ACCUM, 0, y0},
                                   {"db", n, v.write & 2 ? OUT_WRITE : OUT_ACCUM, 0, x}}, 0});
  v.write = 0;
  tfree(x);
  tfree(y);
  tfree(y0);
}

/* Modified Gram-Schmidt of `batch` (n, r) matrices `extra` floats apart: cpu against ref, and on
 * both P^T P = I and the first column the normalised input column. `edit` (or NULL) changes each
 * matrix b first: a column zero or in the span of those before it becomes a unit vector orthogonal to
 * them (backend/orth_rules.h), never stays zero or noise. */
typedef struct orth_ctx {
  int batch, n, r;
  size_t sP;
} orth_ctx_t;

static double run_orthonormalize(const backend_t *be, const void *ctx, float **out) {
  const orth_ctx_t *o = ctx;
  be->orthonormalize(o->batch, o->n, o->r, out[0], o->sP);
  return 0.0;
}

typedef struct orth_edit {
  const char *what;
  void (*fn)(float *m, int b, int n, int r);
} orth_edit_t;

/* Columns 0 and 2 zero, and the whole of the first matrix (a gradient zero at one step). */
static void orth_zero_columns(float *m, int b, int n, int r) {
  for (int row = 0; row < n; row++)
    for (int i = 0; i < r; i++)
      if (i == 0 || i == 2 || b == 0) m[(size_t)row * r + i] = 0.0f;
}

/* Rows 3 and 9 alone non-zero, and column 2 = column 0 + column 1 there (M Q of an embedding's
 * gradient of rank 2 at r > 2: the in-span column's rounding noise lies in the span too). */
static void orth_sparse_in_span(float *m, int b, int n, int r) {
  (void)b;
  for (int row = 0; row < n; row++)
    for (int i = 0; i < r; i++)
      if (row != 3 && row != 9) m[(size_t)row * r + i] = 0.0f;
      else if (i == 2) m[(size_t)row * r + i] = m[(size_t)row * r] + m[(size_t)row * r + 1];
}

static void test_orthonormalize(int batch, int n, int r, int extra, const orth_edit_t *edit) {
  orth_ctx_t o = {batch, n, r, (size_t)n * (size_t)r + (size_t)extra};
  size_t len = o.sP * (size_t)batch;
  float *init = buf_uniform(len, -1, 1);
  for (int b = 0; b < batch && edit; b++) edit->fn(init + (size_t)b * o.sP, b, n, r);
  char label[96];
  snprintf(label, sizeof label, "orthonormalize %dx(%d,%d)%s%s", batch, n, r, edit ? " " : "", edit ? edit->what : "");
  op_case_t c = {label, run_orthonormalize, &o, 1, {{"P", len, OUT_INOUT, 0, init}}, SCALAR_NONE};
  compare_backends(&c);
  for (int k = 0; k < 2; k++) {
    float *p = talloc(len * sizeof *p); /* the test's buffers: a GPU cannot read host memory */
    memcpy(p, init, len * sizeof *p);
    backends[k]->orthonormalize(batch, n, r, p, o.sP);
    backends[k]->synchronize();
    double worst = 0, first = 0;
    for (int b = 0; b < batch; b++) {
      const float *m = p + (size_t)b * o.sP, *m0 = init + (size_t)b * o.sP;
      double n0 = 0;
      for (int row = 0; row < n; row++) n0 += (double)m0[(size_t)row * r] * m0[(size_t)row * r];
      for (int row = 0; row < n && n0 > 0; row++)
        first = fmax(first, fabs(m[(size_t)row * r] - m0[(size_t)row * r] / (sqrt(n0) + 1e-8)));
      for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) {
          double d = 0;
          for (int row = 0; row < n; row++) d += (double)m[(size_t)row * r + i] * m[(size_t)row * r + j];
          worst = fmax(worst, fabs(d - (i == j)));
        }
    }
    int gap_kept = 1; /* the floats between matrices are not touched */
    for (int b = 0; b + 1 < batch; b++)
      for (int e = 0; e < extra; e++) {
        size_t at = (size_t)b * o.sP + (size_t)n * (size_t)r + (size_t)e;
        gap_kept &= p[at] == init[at];
      }
    tap_ok(worst <= 1e-5 && first <= 1e-6 && gap_kept, "%s on %s: |P^T P - I| %.1e, first column %.1e off x/|x|",
           label, backends[k]->name, worst, first);
    tfree(p);
  }
  tfree(init);
}

/* GELU far out in its tails, where the gate saturates to exactly 0 or 1. The inputs in the test's
 * buffers (CUDA managed memory when the cuda backend is tested: a GPU cannot read the stack). */
static void test_gelu_tails(void) {
  static const float tails[] = {-3e38f, -1e20f, -1e4f, -200, -30, -10, -5, 5, 10, 30, 200, 1e4f, 1e20f, 3e38f};
  const size_t n = sizeof tails / sizeof tails[0];
  float *x = talloc(sizeof tails), *dy = buf_const(n, 1.0f), *y0 = buf_const(n, 0.0f);
  memcpy(x, tails, sizeof tails);
  vec_ctx_t v = {.n = n, .x = x, .y = dy};
  compare_backends(&(op_case_t){"gelu_fwd tails", run_gelu_fwd, &v, 1, {{"y", n, OUT_WRITE, 0, y0}}, 0});
  compare_backends(&(op_case_t){"gelu_bwd tails", run_gelu_bwd, &v, 1, {{"dx", n, OUT_ACCUM, 0, y0}}, 0});
  tfree(x);
  tfree(dy);
  tfree(y0);
}

/* The GELU's backward and the bias gradient of the linear before it in one pass (a fused form): x is
 * the pre-activation, y the GELU output's gradient; with and without a bias. */
static double run_gelu_bias_bwd(const backend_t *be, const void *ctx, float **out) {
  const vec_ctx_t *v = ctx;
  be->gelu_bias_bwd(v->rows, v->cols, v->x, v->y, out[0], v->write ? NULL : out[1]);
  return 0.0;
}

static void test_gelu_bias_bwd(int rows, int cols) {
  size_t n = (size_t)rows * cols;
  float *x = buf_uniform(n, -4, 4), *dy = buf_uniform(n, -1, 1);
  vec_ctx_t v = {.n = n, .rows = rows, .cols = cols, .x = x, .y = dy};
  char label[80];
  for (v.write = 0; v.write <= 1; v.write++) { /* write: no bias (db NULL) */
    snprintf(label, sizeof label, "gelu_bias_bwd rows=%d cols=%d%s", rows, cols, v.write ? " no bias" : "");
    compare_backends(&(op_case_t){label, run_gelu_bias_bwd, &v, v.write ? 1 : 2,
                                  {{"dpre", n, OUT_WRITE, 0, NULL}, {"db", (size_t)cols, OUT_ACCUM, 0, NULL}}, 0});
  }
  tfree(x), tfree(dy);
}

static void test_bias(int rows, int cols, int N, int C, int HW) {
  size_t nrow = (size_t)rows * cols, nplane = (size_t)N * C * HW;
  float *brow = buf_uniform((size_t)cols, -1, 1), *yrow = buf_uniform(nrow, -1, 1);
  float *bplane = buf_uniform((size_t)C, -1, 1), *yplane = buf_uniform(nplane, -1, 1);
  char label[96];
  vec_ctx_t v = {.rows = rows, .cols = cols, .N = N, .C = C, .HW = HW};
  snprintf(label, sizeof label, "bias rows=%d cols=%d / planes N=%d C=%d HW=%d", rows, cols, N, C, HW);
  v.x = brow;
  compare_backends(&(op_case_t){label, run_bias_add_rows, &v, 1, {{"y", nrow, OUT_ACCUM, 0, NULL}}, 0});
  v.x = yrow;
  compare_backends(&(op_case_t){label, run_bias_grad_rows, &v, 1, {{"db", (size_t)cols, OUT_ACCUM, 0, NULL}}, 0});
  v.x = bplane;
  compare_backends(&(op_case_t){label, run_bias_add_planes, &v, 1, {{"y", nplane, OUT_ACCUM, 0, NULL}}, 0});
  v.x = yplane;
  compare_backends(&(op_case_t){label, run_bias_grad_planes, &v, 1, {{"db", (size_t)C, OUT_ACCUM, 0, NULL}}, 0});
  tfree(brow);
  tfree(yrow);
  tfree(bplane);
  tfree(yplane);
}

static void test_avgpool(int P, int HW) {
  float *x = buf_uniform((size_t)P * HW, -2, 3), *dy = buf_uniform((size_t)P, -1, 1);
  char label[64];
  snprintf(label, sizeof label, "avgpool P=%d HW=%d", P, HW);
  vec_ctx_t v = {.rows = P, .HW = HW, .x = x};
  compare_backends(&(op_case_t){label, run_avgpool_fwd, &v, 1, {{"y", (size_t)P, OUT_WRITE, 0, NULL}}, 0});
  v.x = dy;
  compare_backends(&(op_case_t){label, run_avgpool_bwd, &v, 1, {{"dx", (size_t)P * HW, OUT_ACCUM, 0, NULL}}, 0});
  v.write = 1; /* dx overwritten: its old contents (NaN on cpu) never read */
  compare_backends(&(op_case_t){label, run_avgpool_bwd, &v, 1, {{"dx written", (size_t)P * HW, OUT_WRITE, 0, NULL}}, 0});
  tfree(x);
  tfree(dy);
}

/* ---- convolution lowering and pooling */

typedef struct conv_ctx {
  int C, H, W, KH, KW, stride, ph, pw; /* the pools: pad ph, window KH (== KW) */
  const float *in; /* x for im2col and the pools' forwards, col for col2im, dy for their backwards */
  const float *argmax;
  int write; /* the pool backwards' dx_write */
} conv_ctx_t;

static double run_im2col(const backend_t *be, const void *ctx, float **out) {
  const conv_ctx_t *g = ctx;
  be->im2col(g->in, g->C, g->H, g->W, g->KH, g->KW, g->stride, g->ph, g->pw, out[0]);
  return 0.0;
}
static double run_col2im(const backend_t *be, const void *ctx, float **out) {
  const conv_ctx_t *g = ctx;
  be->col2im(g->in, g->C, g->H, g->W, g->KH, g->KW, g->stride, g->ph, g->pw, out[0]);
  return 0.0;
}
/* Max pooling: C planes, window KH (== KW) with stride `stride`, padding ph. */
static double run_maxpool_fwd(const backend_t *be, const void *ctx, float **out) {
  const conv_ctx_t *g = ctx;
  be->maxpool_fwd(g->C, g->H, g->W, g->KH, g->stride, g->ph, g->in, out[0], out[1]);
  return 0.0;
}
static double run_maxpool_bwd(const backend_t *be, const void *ctx, float **out) {
  const conv_ctx_t *g = ctx;
  be->maxpool_bwd(g->C, g->H, g->W, g->KH, g->stride, g->ph, g->in, g->argmax, out[0], g->write);
  return 0.0;
}
/* Windowed average pooling, the same geometry. */
static double run_avgpool2d_fwd(const backend_t *be, const void *ctx, float **out) {
  const conv_ctx_t *g = ctx;
  be->avgpool2d_fwd(g->C, g->H, g->W, g->KH, g->stride, g->ph, g->in, out[0]);
  return 0.0;
}
static double run_avgpool2d_bwd(const backend_t *be, const void *ctx, float **out) {
  const conv_ctx_t *g = ctx;
  be->avgpool2d_bwd(g->C, g->H, g->W, g->KH, g->stride, g->ph, g->in, out[0], g->write);
  return 0.0;
}

static void test_conv_lowering(int C, int H, int W, int KH, int KW, int stride, int ph, int pw) {
  int OH = (H + 2 * ph - KH) / stride + 1, OW = (W + 2 * pw - KW) / stride + 1;
  size_t nx = (size_t)C * H * W, ncol = (size_t)C * KH * KW * OH * OW;
  float *x = buf_uniform(nx, -1, 1), *col = buf_uniform(ncol, -1, 1);
  char label[96];
  snprintf(label, sizeof label, "im2col/col2im C=%d H=%d W=%d K=%dx%d s=%d p=%d,%d", C, H, W, KH, KW, stride, ph, pw);
  conv_ctx_t g = {C, H, W, KH, KW, stride, ph, pw, x, NULL, 0};
  compare_backends(&(op_case_t){label, run_im2col, &g, 1, {{"col", ncol, OUT_WRITE, 0, NULL}}, 0});
  g.in = col;
  compare_backends(&(op_case_t){label, run_col2im, &g, 1, {{"dx", nx, OUT_ACCUM, 0, NULL}}, 0});
  tfree(x);
  tfree(col);
}

/* `relu_input`: half the inputs are 0, so windows hold ties that must go to the first maximum (and,
 * padded, the padding must never win over a window of zeros and negatives). */
static void test_maxpool(int P, int H, int W, int k, int s, int pad, int relu_input) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  size_t nx = (size_t)P * H * W, ny = (size_t)P * OH * OW;
  float *x = buf_uniform(nx, -1, 1), *dy = buf_uniform(ny, -1, 1), *argmax = talloc(ny * sizeof *argmax);
  float *y = talloc(ny * sizeof *y);
  if (relu_input)
    for (size_t i = 0; i < nx; i++) x[i] = fmaxf(x[i], 0.0f);
  char label[96];
  snprintf(label, sizeof label, "maxpool P=%d H=%d W=%d k=%d s=%d p=%d%s", P, H, W, k, s, pad,
           relu_input ? " ties" : "");
  conv_ctx_t g = {P, H, W, k, k, s, pad, pad, x, NULL, 0};
  compare_backends(&(op_case_t){label, run_maxpool_fwd, &g, 2,
                                {{"y", ny, OUT_WRITE, 0, NULL}, {"argmax", ny, OUT_WRITE, 1, NULL}}, 0});
  backend_ref.maxpool_fwd(P, H, W, k, s, pad, x, y, argmax);
  g.in = dy;
  g.argmax = argmax;
  compare_backends(&(op_case_t){label, run_maxpool_bwd, &g, 1, {{"dx", nx, OUT_ACCUM, 0, NULL}}, 0});
  g.write = 1; /* dx overwritten, also where no window reaches (H or W not a multiple of the stride) */
  compare_backends(&(op_case_t){label, run_maxpool_bwd, &g, 1, {{"dx written", nx, OUT_WRITE, 0, NULL}}, 0});
  tfree(x);
  tfree(y);
  tfree(dy);
  tfree(argmax);
}

/* Windowed average pool k x k, stride s, padding pad (count_include_pad): forward, backward adding
 * and written. */
static void test_avgpool2d(int P, int H, int W, int k, int s, int pad) {
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  size_t nx = (size_t)P * H * W, ny = (size_t)P * OH * OW;
  float *x = buf_uniform(nx, -2, 3), *dy = buf_uniform(ny, -1, 1);
  char label[96];
  snprintf(label, sizeof label, "avgpool2d P=%d H=%d W=%d k=%d s=%d p=%d", P, H, W, k, s, pad);
  conv_ctx_t g = {P, H, W, k, k, s, pad, pad, x, NULL, 0};
  compare_backends(&(op_case_t){label, run_avgpool2d_fwd, &g, 1, {{"y", ny, OUT_WRITE, 0, NULL}}, 0});
  g.in = dy;
  compare_backends(&(op_case_t){label, run_avgpool2d_bwd, &g, 1, {{"dx", nx, OUT_ACCUM, 0, NULL}}, 0});
  g.write = 1; /* dx overwritten, also where no window reaches */
  compare_backends(&(op_case_t){label, run_avgpool2d_bwd, &g, 1, {{"dx written", nx, OUT_WRITE, 0, NULL}}, 0});
  tfree(x);
  tfree(dy);
}

/* ---- a block of columns (a concatenation's part) */

typedef struct cols_ctx {
  int rows, cols;
  size_t lds, ldd;
  const float *src;
  int acc;
} cols_ctx_t;

static double run_copy_cols(const backend_t *be, const void *ctx, float **out) {
  const cols_ctx_t *c = ctx;
  be->copy_cols(c->rows, c->cols, c->src, c->lds, out[0], c->ldd, c->acc);
  return 0.0;
}

/* rows x cols from a source lds wide into a destination ldd wide, written (the other columns of
 * the destination kept: the comparison sees the whole destination) and added */
static void test_copy_cols(int rows, int cols, size_t lds, size_t ldd) {
  float *src = buf_uniform((size_t)rows * lds, -1, 1), *keep = buf_uniform((size_t)rows * ldd, -1, 1);
  char label[80];
  snprintf(label, sizeof label, "copy_cols %dx%d lds=%zu ldd=%zu", rows, cols, lds, ldd);
  for (int acc = 0; acc <= 1; acc++) { /* written: the columns past cols keep their values (keep) */
    cols_ctx_t c = {rows, cols, lds, ldd, src, acc};
    compare_backends(&(op_case_t){label, run_copy_cols, &c, 1,
                                  {acc ? (out_spec_t){"dst added", (size_t)rows * ldd, OUT_ACCUM, 0, NULL}
                                       : (out_spec_t){"dst", (size_t)rows * ldd, OUT_INOUT, 0, keep}},
                                  0});
  }
  tfree(src), tfree(keep);
}

/* ---- convolution over a batch */

typedef struct convb_ctx {
  conv_shape_t s;
  int B, relu, want_dx, want_dw, want_db;
  size_t ws_n;
  const float *x, *w, *bias, *dy;
  const float *relu_y; /* backward through the fused ReLU when relu is set: a ReLU output (0 or > 0) */
  int dx_write;        /* dx overwritten, not added into */
} convb_ctx_t;

static double run_conv_fwd(const backend_t *be, const void *ctx, float **out) {
  const convb_ctx_t *q = ctx;
  float *ws = talloc(q->ws_n * sizeof *ws);
  be->conv_fwd(&q->s, q->B, q->x, q->w, q->bias, q->relu, out[0], ws, q->ws_n);
  tfree(ws);
  return 0.0;
}
/* Outputs in the order dx, dw, db, leaving out those not wanted. */
static double run_conv_bwd(const backend_t *be, const void *ctx, float **out) {
  const convb_ctx_t *q = ctx;
  float *ws = talloc(q->ws_n * sizeof *ws);
  int k = 0;
  float *dx = q->want_dx ? out[k++] : NULL, *dw = q->want_dw ? out[k++] : NULL, *db = q->want_db ? out[k++] : NULL;
  be->conv_bwd(&q->s, q->B, q->x, q->w, q->dy, q->relu ? q->relu_y : NULL, dx, q->dx_write, dw, db, ws, q->ws_n);
  tfree(ws);
  return 0.0;
}

/* conv_fwd and conv_bwd on B samples; `tight`: a workspace for exactly one sample per block, else
 * the default (several samples per block where the output is small). */
static void test_conv_rect(int B, int C, int H, int W, int O, int kh, int kw, int stride, int ph, int pw, int bias,
                           int relu, int tight) {
  conv_shape_t s = conv_shape_make(C, H, W, O, kh, kw, stride, ph, pw);
  size_t nx = (size_t)B * C * H * W, ny = (size_t)B * O * s.OH * s.OW, nw = (size_t)O * C * kh * kw;
  float *x = buf_uniform(nx, -1, 1), *w = buf_uniform(nw, -1, 1), *b = buf_uniform((size_t)O, -1, 1);
  float *dy = buf_uniform(ny, -1, 1), *relu_y = buf_uniform(ny, -1, 1);
  for (size_t i = 0; i < ny; i++) relu_y[i] = relu_y[i] > 0.0f ? relu_y[i] : 0.0f; /* about half are 0 */
  size_t ws_n = conv_workspace_floats(&s);
  // tight: the least that holds one sample on the lowered path (too little for the direct one)
  while (tight && cpu_conv_lowered_blocks(&s, ws_n - 1) >= 1) ws_n--;
  convb_ctx_t q = {s, B, relu, 1, 1, bias, ws_n, x, w, bias ? b : NULL, dy, relu_y, 0};
  char label[128];
  int direct = cpu_conv_direct_blocks(&s, ws_n); /* the cpu backend's path for this shape */
  snprintf(label, sizeof label, "conv B=%d C=%d %dx%d O=%d k=%dx%d s=%d p=%d,%d%s%s, %s, %d per block", B, C, H, W,
           O, kh, kw, stride, ph, pw, bias ? " bias" : "", relu ? " relu" : "", direct ? "direct" : "lowered",
           direct ? direct : cpu_conv_lowered_blocks(&s, ws_n));
  compare_backends(&(op_case_t){label, run_conv_fwd, &q, 1, {{"y", ny, OUT_WRITE, 0, NULL}}, 0});
  op_case_t bwd = {label, run_conv_bwd, &q, 0, {{0}}, 0};
  bwd.out[bwd.nout++] = (out_spec_t){"dx", nx, OUT_ACCUM, 0, NULL};
  bwd.out[bwd.nout++] = (out_spec_t){"dw", nw, OUT_ACCUM, 0, NULL};
  if (bias) bwd.out[bwd.nout++] = (out_spec_t){"db", (size_t)O, OUT_ACCUM, 0, NULL};
  compare_backends(&bwd);
  // the weight gradient alone (no dx, no db), and dx alone
  q.want_dx = 0, q.want_db = 0;
  compare_backends(&(op_case_t){label, run_conv_bwd, &q, 1, {{"dw only", nw, OUT_ACCUM, 0, NULL}}, 0});
  q.want_dx = 1, q.want_dw = 0;
  compare_backends(&(op_case_t){label, run_conv_bwd, &q, 1, {{"dx only", nx, OUT_ACCUM, 0, NULL}}, 0});
  // dx overwritten: its old contents (NaN on cpu) never read
  q.dx_write = 1;
  compare_backends(&(op_case_t){label, run_conv_bwd, &q, 1, {{"dx written", nx, OUT_WRITE, 0, NULL}}, 0});
  tfree(x), tfree(w), tfree(b), tfree(dy), tfree(relu_y);
}

/* a square k x k kernel padded pad each side */
static void test_conv_batch(int B, int C, int H, int W, int O, int k, int stride, int pad, int bias, int relu,
                            int tight) {
  test_conv_rect(B, C, H, W, O, k, k, stride, pad, pad, bias, relu, tight);
}

typedef struct rows_ctx {
  int M, N, K, lda, ldb, ldc;
  const float *A, *B;
} rows_ctx_t;

static double run_gemm_tn_rows(const backend_t *be, const void *ctx, float **out) {
  const rows_ctx_t *r = ctx;
  be->gemm_tn_rows(r->M, r->N, r->K, r->A, r->lda, r->B, r->ldb, out[0], r->ldc);
  return 0.0;
}

/* C (M,N) += A^T B over K rows, leading dims `extra` wider than needed, entries in [lo, hi); once: C from one
 * random start only (OUT_INOUT: ref runs once, not thrice as for its accumulation checks). */
static void test_gemm_tn_rows_range(int M, int N, int K, int extra, float lo, float hi, int once) {
  rows_ctx_t r = {M, N, K, M + extra, N + extra, N + extra, NULL, NULL};
  float *A = buf_uniform((size_t)K * r.lda, lo, hi), *B = buf_uniform((size_t)K * r.ldb, lo, hi);
  float *C0 = once ? buf_uniform((size_t)M * r.ldc, -1, 1) : NULL;
  r.A = A, r.B = B;
  char label[80];
  snprintf(label, sizeof label, "gemm_tn_rows M=%d N=%d K=%d ld+%d in [%g,%g)", M, N, K, extra, lo, hi);
  compare_backends(&(op_case_t){label, run_gemm_tn_rows, &r, 1,
                                {{"C", (size_t)M * r.ldc, once ? OUT_INOUT : OUT_ACCUM, 0, C0}}, 0});
  tfree(A), tfree(B);
  if (C0) tfree(C0);
}

static void test_gemm_tn_rows(int M, int N, int K, int extra) { test_gemm_tn_rows_range(M, N, K, extra, -1, 1, 0); }

/* ---- layer norm, embedding, causal softmax, cross-entropy */

typedef struct seq_ctx {
  int rows, C, B, T, V;
  int lo, positions; /* embedding: the shard's first id; whether wpe takes part */
  int write;         /* layer norm backward: dx written, not added into */
  float eps, scale;
  const float *x, *w, *b, *stats, *dy, *ids;
} seq_ctx_t;

static double run_layernorm_fwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->layernorm_fwd(q->B, q->rows, q->C, q->x, q->w, q->b, q->eps, out[0], out[1]);
  return 0.0;
}
static double run_layernorm_bwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->layernorm_bwd(q->B, q->rows, q->C, q->x, q->w, q->stats, q->dy, out[0], q->write, out[1], out[2]);
  return 0.0;
}
/* Embedding: x is wte (V,C) holding ids [lo, lo+V), w is wpe (T,C) when positions. */
static double run_embed_fwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->embed_fwd(q->B, q->T, q->C, q->ids, q->lo, q->V, q->x, q->positions ? q->w : NULL, out[0]);
  return 0.0;
}
static double run_embed_bwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->embed_bwd(q->B, q->T, q->C, q->ids, q->lo, q->V, q->dy, out[0], q->positions ? out[1] : NULL);
  return 0.0;
}
/* Causal softmax: rows = BH blocks of (T,T); x is s (fwd) or p (bwd). */
static double run_causal_softmax_fwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->causal_softmax_fwd(q->rows, q->T, q->scale, q->x, out[0]);
  return 0.0;
}
static double run_causal_softmax_bwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->causal_softmax_bwd(q->rows, q->T, q->scale, q->x, q->dy, out[0]);
  return 0.0;
}
/* Softmax of whole rows: rows of T, x is s. */
static double run_softmax_rows(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->softmax_rows(q->rows, q->T, q->scale, q->x, out[0]);
  return 0.0;
}
/* Cross-entropy: x is logits (rows,V), ids the targets, scale the grad_scale. */
static double run_xent(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  return be->xent_fwd_bwd(q->rows, q->V, q->x, q->ids, q->scale, out[0]);
}
/* The gradient written over the logits (in place): out[0] starts as a copy of them. */
static double run_xent_in_place(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  memcpy(out[0], q->x, (size_t)q->rows * (size_t)q->V * sizeof *out[0]);
  return be->xent_fwd_bwd(q->rows, q->V, out[0], q->ids, q->scale, out[0]);
}
static double run_xent_loss_only(const backend_t *be, const void *ctx, float **out) {
  (void)out;
  const seq_ctx_t *q = ctx;
  return be->xent_fwd_bwd(q->rows, q->V, q->x, q->ids, q->scale, NULL);
}
static double run_count_correct(const backend_t *be, const void *ctx, float **out) {
  (void)out;
  const seq_ctx_t *q = ctx;
  return (double)be->count_correct(q->rows, q->V, q->x, q->ids);
}

/* The residual join and the layer norm after it (a fused form): x and dy are the two summands. */
static double run_add_layernorm_fwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->add_layernorm_fwd(q->B, q->rows, q->C, q->x, q->dy, q->w, q->b, q->eps, out[0], out[1], out[2]);
  return 0.0;
}

/* N samples of (rows, C). */
static void test_layernorm(int N, int rows, int C) {
  size_t n = (size_t)N * rows * C, ns = (size_t)N * 2 * rows;
  float *x = buf_uniform(n, 2, 5), *w = buf_uniform((size_t)C, 0.5f, 1.5f), *b = buf_uniform((size_t)C, -1, 1);
  float *dy = buf_uniform(n, -1, 1), *y = talloc(n * sizeof *y), *stats = talloc(ns * sizeof *stats);
  char label[64];
  snprintf(label, sizeof label, "layernorm N=%d rows=%d C=%d", N, rows, C);
  seq_ctx_t q = {.B = N, .rows = rows, .C = C, .eps = 1e-5f, .x = x, .w = w, .b = b, .dy = dy};
  compare_backends(&(op_case_t){label, run_layernorm_fwd, &q, 2,
                                {{"y", n, OUT_WRITE, 0, NULL}, {"stats", ns, OUT_WRITE, 0, NULL}}, 0});
  snprintf(label, sizeof label, "add_layernorm_fwd N=%d rows=%d C=%d", N, rows, C);
  compare_backends(&(op_case_t){label, run_add_layernorm_fwd, &q, 3,
                                {{"sum", n, OUT_WRITE, 0, NULL}, {"y", n, OUT_WRITE, 0, NULL},
                                 {"stats", ns, OUT_WRITE, 0, NULL}}, 0});
  backend_ref.layernorm_fwd(N, rows, C, x, w, b, q.eps, y, stats);
  q.stats = stats;
  for (q.write = 0; q.write <= 1; q.write++) { /* dx added into, then written (never read) */
    snprintf(label, sizeof label, "layernorm N=%d rows=%d C=%d%s", N, rows, C, q.write ? " dx written" : "");
    compare_backends(&(op_case_t){label, run_layernorm_bwd, &q, 3,
                                  {{"dx", n, q.write ? OUT_WRITE : OUT_ACCUM, 0, NULL},
                                   {"dw", (size_t)C, OUT_ACCUM, 0, NULL},
                                   {"db", (size_t)C, OUT_ACCUM, 0, NULL}}, 0});
  }
  tfree(x), tfree(w), tfree(b), tfree(dy), tfree(y), tfree(stats);
}

/* Batch norm over N samples of (C, HW). */
typedef struct bn_ctx {
  int N, C, HW, R, relu, write;
  double M;
  float eps, momentum;
  const float *x, *w, *b, *stats, *dy, *relu_y, *parts, *sums;
} bn_ctx_t;

static double run_bn_stats(const backend_t *be, const void *ctx, float **out) {
  const bn_ctx_t *q = ctx;
  be->bn_stats(q->N, q->C, q->HW, q->x, out[0]);
  return 0.0;
}
static double run_bn_finish(const backend_t *be, const void *ctx, float **out) {
  const bn_ctx_t *q = ctx;
  be->bn_finish(q->C, q->R, q->parts, q->eps, q->momentum, out[1], out[0]);
  return 0.0;
}
static double run_bn_fwd(const backend_t *be, const void *ctx, float **out) {
  const bn_ctx_t *q = ctx;
  be->bn_fwd(q->N, q->C, q->HW, q->x, q->stats, q->w, q->b, q->relu, out[0]);
  return 0.0;
}
static double run_bn_bwd_sums(const backend_t *be, const void *ctx, float **out) {
  const bn_ctx_t *q = ctx;
  be->bn_bwd_sums(q->N, q->C, q->HW, q->x, q->stats, q->dy, q->relu_y, out[0]);
  return 0.0;
}
static double run_bn_bwd(const backend_t *be, const void *ctx, float **out) {
  const bn_ctx_t *q = ctx;
  be->bn_bwd(q->N, q->C, q->HW, q->M, q->x, q->stats, q->w, q->dy, q->relu_y, q->sums, out[0], q->write);
  return 0.0;
}
static double run_mul(const backend_t *be, const void *ctx, float **out) {
  const bn_ctx_t *q = ctx;
  be->mul((size_t)q->N, q->x, q->dy, out[0], !q->write);
  return 0.0;
}

/* The statistics of all N samples against those of R consecutive chunks of them combined (bn_finish
 * over R parts: what R ranks compute), in float from the double truth: mean and variance of each
 * channel within rel of it. x has a mean of `offset` and a spread of 1: E[x^2] - E[x]^2 would lose
 * every digit at offset 1e4 in float. */
static void check_bn_chunks(const backend_t *be, int N, int C, int HW, int R, float offset, const float *x) {
  size_t P = 1 + 3 * (size_t)C;
  float *parts = talloc((size_t)R * P * sizeof *parts), *stats = talloc(2 * (size_t)C * sizeof *stats);
  for (int r = 0, lo = 0; r < R; r++) {
    int hi = (int)((long)N * (r + 1) / R);
    be->bn_stats(hi - lo, C, HW, x + (size_t)lo * C * HW, parts + (size_t)r * P);
    lo = hi;
  }
  be->bn_finish(C, R, parts, 0.0f, 0.1f, NULL, stats);
  be->synchronize(); /* a GPU's work is queued: done before the host reads */
  double worst = 0;
  for (int c = 0; c < C; c++) {
    double m = 0, v = 0, n = (double)N * HW;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < HW; j++) m += x[((size_t)i * C + c) * HW + j];
    m /= n;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < HW; j++) v += (x[((size_t)i * C + c) * HW + j] - m) * (x[((size_t)i * C + c) * HW + j] - m);
    v /= n;
    double var = 1.0 / ((double)stats[C + c] * stats[C + c]);
    double e = fmax(fabs(stats[c] - m) / fabs(m), fabs(var - v) / v);
    worst = fmax(worst, e);
  }
  tap_ok(worst <= 1e-5, "%s bn_stats of %d chunks + bn_finish, mean %g: mean and variance within %.1e <= 1e-5 of "
         "the whole batch's (double)", be->name, R, (double)offset, worst);
  tfree(parts), tfree(stats);
}

/* N samples of (C, HW), with and without the fused ReLU. */
static void test_batchnorm(int N, int C, int HW) {
  size_t n = (size_t)N * C * HW, P = 1 + 3 * (size_t)C;
  float *x = buf_uniform(n, 2, 5), *w = buf_uniform((size_t)C, 0.5f, 1.5f), *b = buf_uniform((size_t)C, -1, 1);
  float *dy = buf_uniform(n, -1, 1), *y = talloc(n * sizeof *y), *stats = talloc(2 * (size_t)C * sizeof *stats);
  float *parts = talloc(3 * P * sizeof *parts), *sums = talloc(2 * (size_t)C * sizeof *sums);
  float *running = buf_uniform(2 * (size_t)C, 0.5f, 1.5f);
  char label[64];
  snprintf(label, sizeof label, "batchnorm N=%d C=%d HW=%d", N, C, HW);
  bn_ctx_t q = {.N = N, .C = C, .HW = HW, .eps = 1e-5f, .momentum = 0.1f, .x = x, .w = w, .b = b, .dy = dy};
  compare_backends(&(op_case_t){label, run_bn_stats, &q, 1, {{"part", P, OUT_WRITE, 0, NULL}}, 0});
  for (int r = 0; r < 3; r++) /* three ranks' parts, the last of one sample */
    backend_ref.bn_stats(r < 2 ? (N - 1) / 2 + (r == 0 ? (N - 1) % 2 : 0) : 1, C, HW, x, parts + (size_t)r * P);
  for (q.R = 0; q.R <= 3; q.R += 3) { /* 0: from the running estimates */
    q.parts = parts;
    compare_backends(&(op_case_t){label, run_bn_finish, &q, 2,
                                  {{"stats", 2 * (size_t)C, OUT_WRITE, 0, NULL},
                                   {"running", 2 * (size_t)C, OUT_INOUT, 0, running}}, 0});
  }
  backend_ref.bn_stats(N, C, HW, x, parts);
  backend_ref.bn_finish(C, 1, parts, q.eps, q.momentum, NULL, stats);
  q.stats = stats;
  for (q.relu = 0; q.relu <= 1; q.relu++) {
    compare_backends(&(op_case_t){label, run_bn_fwd, &q, 1, {{q.relu ? "y (relu)" : "y", n, OUT_WRITE, 0, NULL}}, 0});
    backend_ref.bn_fwd(N, C, HW, x, stats, w, b, q.relu, y);
    q.relu_y = q.relu ? y : NULL;
    compare_backends(&(op_case_t){label, run_bn_bwd_sums, &q, 1, {{"sums", 2 * (size_t)C, OUT_WRITE, 0, NULL}}, 0});
    backend_ref.bn_bwd_sums(N, C, HW, x, stats, dy, q.relu_y, sums);
    q.sums = sums;
    q.M = (double)N * HW;
    for (q.write = 0; q.write <= 1; q.write++)
      compare_backends(&(op_case_t){label, run_bn_bwd, &q, 1,
                                    {{q.write ? "dx written" : "dx", n, q.write ? OUT_WRITE : OUT_ACCUM, 0, NULL}}, 0});
  }
  q.N = (int)n;
  for (q.write = 0; q.write <= 1; q.write++)
    compare_backends(&(op_case_t){"mul", run_mul, &q, 1, {{"y", n, q.write ? OUT_WRITE : OUT_ACCUM, 0, NULL}}, 0});
  tfree(x), tfree(w), tfree(b), tfree(dy), tfree(y), tfree(stats), tfree(parts), tfree(sums), tfree(running);
}

/* Chunks of a batch with a large mean, on both backends (check_bn_chunks). */
static void test_batchnorm_chunks(int N, int C, int HW, float offset) {
  size_t n = (size_t)N * C * HW;
  float *x = buf_uniform(n, offset - 1.7f, offset + 1.7f);
  for (int k = 0; k < 2; k++)
    for (int R = 1; R <= 4; R += 3) check_bn_chunks(backends[k], N, C, HW, R, offset, x);
  tfree(x);
}

/* A table of the ids [lo, lo+V) of a vocabulary of vocab ids (the whole table: lo = 0, V = vocab),
 * with or without the position term. */
static void test_embed(int B, int T, int C, int vocab, int lo, int V, int positions) {
  size_t ny = (size_t)B * T * C;
  float *ids = buf_ids((size_t)B * T, vocab), *wte = buf_uniform((size_t)V * C, -1, 1);
  float *wpe = buf_uniform((size_t)T * C, -1, 1), *dy = buf_uniform(ny, -1, 1);
  char label[96];
  snprintf(label, sizeof label, "embed B=%d T=%d C=%d ids [%d,%d) of %d%s", B, T, C, lo, lo + V, vocab,
           positions ? "" : ", no positions");
  seq_ctx_t q = {.B = B, .T = T, .C = C, .V = V, .lo = lo, .positions = positions, .x = wte, .w = wpe, .dy = dy,
                 .ids = ids};
  compare_backends(&(op_case_t){label, run_embed_fwd, &q, 1, {{"y", ny, OUT_WRITE, 0, NULL}}, 0});
  compare_backends(&(op_case_t){label, run_embed_bwd, &q, positions ? 2 : 1,
                                {{"dwte", (size_t)V * C, OUT_ACCUM, 0, NULL},
                                 {"dwpe", (size_t)T * C, OUT_ACCUM, 0, NULL}}, 0});
  tfree(ids), tfree(wte), tfree(wpe), tfree(dy);
}

/* Shards of a table add up to the whole lookup: the shards [0,k) with positions and [k,vocab)
 * without give, summed, the whole table's output, on both backends. */
static void test_embed_shards_sum(int B, int T, int C, int vocab, int k) {
  size_t ny = (size_t)B * T * C;
  float *ids = buf_ids((size_t)B * T, vocab), *wte = buf_uniform((size_t)vocab * C, -1, 1);
  float *wpe = buf_uniform((size_t)T * C, -1, 1), *whole = talloc(ny * sizeof *whole);
  float *a = talloc(ny * sizeof *a), *b = talloc(ny * sizeof *b);
  for (int i = 0; i < 2; i++) {
    const backend_t *be = backends[i];
    be->embed_fwd(B, T, C, ids, 0, vocab, wte, wpe, whole);
    be->embed_fwd(B, T, C, ids, 0, k, wte, wpe, a);
    be->embed_fwd(B, T, C, ids, k, vocab - k, wte + (size_t)k * C, NULL, b);
    be->synchronize();
    for (size_t j = 0; j < ny; j++) a[j] += b[j];
    double e = rel_diff(a, whole, ny);
    tap_ok(e <= AGREE_TOL, "%s: embedding shards [0,%d) + [%d,%d) = the whole table (rel %.1e)", be->name, k, k,
           vocab, e);
  }
  tfree(ids), tfree(wte), tfree(wpe), tfree(whole), tfree(a), tfree(b);
}

static void test_causal_softmax(int BH, int T) {
  size_t n = (size_t)BH * T * T;
  float *s = buf_uniform(n, -6, 6), *dp = buf_uniform(n, -1, 1), *p = talloc(n * sizeof *p);
  char label[64];
  snprintf(label, sizeof label, "causal_softmax BH=%d T=%d", BH, T);
  seq_ctx_t q = {.rows = BH, .T = T, .scale = 0.35f, .x = s, .dy = dp};
  compare_backends(&(op_case_t){label, run_causal_softmax_fwd, &q, 1, {{"p", n, OUT_WRITE, 0, NULL}}, 0});
  backend_ref.causal_softmax_fwd(BH, T, q.scale, s, p);
  q.x = p;
  compare_backends(&(op_case_t){label, run_causal_softmax_bwd, &q, 1, {{"ds", n, OUT_WRITE, 0, NULL}}, 0});
  tfree(s), tfree(dp), tfree(p);
}

/* Whole rows agree across backends, and each is the last row of a causal block ending in it. */
static void test_softmax_rows(int rows, int n) {
  size_t sz = (size_t)rows * n, block = (size_t)n * n;
  float *s = buf_uniform(sz, -6, 6), *p = talloc(sz * sizeof *p);
  float *blocks = talloc((size_t)rows * block * sizeof *blocks), *pb = talloc((size_t)rows * block * sizeof *pb);
  char label[64];
  snprintf(label, sizeof label, "softmax_rows rows=%d n=%d", rows, n);
  seq_ctx_t q = {.rows = rows, .T = n, .scale = 0.35f, .x = s};
  compare_backends(&(op_case_t){label, run_softmax_rows, &q, 1, {{"p", sz, OUT_WRITE, 0, NULL}}, 0});
  for (int r = 0; r < rows; r++)
    for (size_t i = 0; i < block; i++) blocks[r * block + i] = s[(size_t)r * n + i % n];
  backend_ref.causal_softmax_fwd(rows, n, q.scale, blocks, pb);
  for (int b = 0; b < 2; b++) {
    backends[b]->softmax_rows(rows, n, q.scale, s, p);
    backends[b]->synchronize();
    double worst = 0;
    for (int r = 0; r < rows; r++)
      for (int j = 0; j < n; j++)
        worst = fmax(worst, fabs(p[(size_t)r * n + j] - pb[r * block + (size_t)(n - 1) * n + j]));
    tap_ok(worst <= 1e-6, "%s: %s rows = the last rows of causal blocks (max diff %.1e)", label, backends[b]->name,
           worst);
  }
  tfree(s), tfree(p), tfree(blocks), tfree(pb);
}

/* `offset` shifts every logit (large offsets test the stable log-sum-exp). */
static void test_xent(int rows, int V, float offset, float spread) {
  size_t n = (size_t)rows * V;
  float *logits = buf_uniform(n, offset - spread, offset + spread), *targets = buf_ids((size_t)rows, V);
  char label[64];
  snprintf(label, sizeof label, "xent rows=%d V=%d logits %g+-%g", rows, V, offset, spread);
  seq_ctx_t q = {.rows = rows, .V = V, .scale = 1.0f / rows, .x = logits, .ids = targets};
  compare_backends(&(op_case_t){label, run_xent, &q, 1, {{"dlogits", n, OUT_WRITE, 0, NULL}}, SCALAR_CLOSE});
  compare_backends(&(op_case_t){label, run_xent_loss_only, &q, 0, {{0}}, SCALAR_CLOSE});
  snprintf(label, sizeof label, "xent in place rows=%d V=%d logits %g+-%g", rows, V, offset, spread);
  compare_backends(&(op_case_t){label, run_xent_in_place, &q, 1, {{"dlogits", n, OUT_WRITE, 0, NULL}}, SCALAR_CLOSE});
  { /* in place equals apart, bit for bit, on the fast backend */
    float *apart = talloc(n * sizeof *apart), *over = talloc(n * sizeof *over);
    double l1 = backends[0]->xent_fwd_bwd(rows, V, logits, targets, 0.5f, apart);
    memcpy(over, logits, n * sizeof *over);
    double l2 = backends[0]->xent_fwd_bwd(rows, V, over, targets, 0.5f, over);
    backends[0]->synchronize();
    tap_ok(l1 == l2 && memcmp(apart, over, n * sizeof *over) == 0, "%s: %s in place = apart, loss and gradient bitwise",
           label, backends[0]->name);
    tfree(apart), tfree(over);
  }
  double loss = backends[0]->xent_fwd_bwd(rows, V, logits, targets, 1.0f, NULL);
  tap_ok(isfinite(loss) && loss > 0.0, "%s: %s loss %.6g finite and positive", label, backends[0]->name, loss);
  // coarse logits (integers in [0,3]) give ties, which go to the first maximum
  for (size_t i = 0; i < n; i++) logits[i] = floorf((logits[i] - offset + spread) / (2.0f * spread) * 4.0f);
  compare_backends(&(op_case_t){label, run_count_correct, &q, 0, {{0}}, SCALAR_EXACT});
  tfree(logits), tfree(targets);
}

/* ---- vocabulary-parallel cross-entropy */

/* x is a shard's logits (rows, V) of columns [lo, lo+V), ids the targets, w the row maxima, b the
 * sums of exponentials, scale the grad_scale. */
static double run_row_max(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->row_max(q->rows, q->V, q->x, out[0]);
  return 0.0;
}
static double run_xent_shard_stats(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->xent_shard_stats(q->rows, q->V, q->lo, q->x, q->ids, q->w, out[0], out[1]);
  return 0.0;
}
static double run_xent_shard_bwd(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->xent_shard_bwd(q->rows, q->V, q->lo, q->x, q->ids, q->w, q->b, q->scale, out[0]);
  return 0.0;
}
static double run_row_first_index(const backend_t *be, const void *ctx, float **out) {
  const seq_ctx_t *q = ctx;
  be->row_first_index(q->rows, q->V, q->lo, q->x, q->w, out[0]);
  return 0.0;
}

/* The shards [lo_k, lo_k+V_k) of a vocabulary, combined as the tensor-parallel code combines them
 * (max, then sums, then the first index of the max), reproduce xent_fwd_bwd and count_correct of
 * the whole rows, on both backends; each shard op agrees between the backends. */
static void test_xent_shards(int rows, int vocab, int nshards, float spread) {
  size_t n = (size_t)rows * vocab;
  float *logits = buf_uniform(n, -spread, spread), *targets = buf_ids((size_t)rows, vocab);
  for (int r = 0; r < rows; r += 3) logits[(size_t)r * vocab + (r % vocab)] = logits[(size_t)r * vocab + vocab - 1];
  float *whole = talloc(n * sizeof *whole), *parts = talloc(n * sizeof *parts);
  float *mx = talloc((size_t)rows * sizeof *mx), *sum = talloc((size_t)rows * sizeof *sum);
  float *tgt = talloc((size_t)rows * sizeof *tgt), *first = talloc((size_t)rows * sizeof *first);
  float *shard = talloc(n * sizeof *shard), *a = talloc(n * sizeof *a), *b = talloc(n * sizeof *b);
  char label[96];
  for (int i = 0; i < 2; i++) {
    const backend_t *be = backends[i];
    double want = be->xent_fwd_bwd(rows, vocab, logits, targets, 0.5f, whole);
    long correct = be->count_correct(rows, vocab, logits, targets);
    be->synchronize();
    for (int r = 0; r < rows; r++) mx[r] = -INFINITY, sum[r] = tgt[r] = 0.0f, first[r] = 3e38f;
    for (int pass = 0; pass < 3; pass++)
      for (int k = 0; k < nshards; k++) {
        int lo = vocab * k / nshards, V = vocab * (k + 1) / nshards - lo;
        for (int r = 0; r < rows; r++) memcpy(shard + (size_t)r * V, logits + (size_t)r * vocab + lo, V * sizeof(float));
        if (pass == 0) {
          be->row_max(rows, V, shard, a);
          be->synchronize();
          for (int r = 0; r < rows; r++) mx[r] = fmaxf(mx[r], a[r]);
        } else if (pass == 1) {
          be->xent_shard_stats(rows, V, lo, shard, targets, mx, a, b);
          be->row_first_index(rows, V, lo, shard, mx, a + rows);
          be->synchronize();
          for (int r = 0; r < rows; r++) sum[r] += a[r], tgt[r] += b[r], first[r] = fminf(first[r], a[rows + r]);
        } else {
          be->xent_shard_bwd(rows, V, lo, shard, targets, mx, sum, 0.5f, a);
          be->synchronize();
          for (int r = 0; r < rows; r++) memcpy(parts + (size_t)r * vocab + lo, a + (size_t)r * V, V * sizeof(float));
        }
      }
    double loss = 0.0;
    long hits = 0;
    for (int r = 0; r < rows; r++) {
      loss += (double)mx[r] + log((double)sum[r]) - (double)tgt[r];
      hits += first[r] == targets[r];
    }
    double e = rel_diff(parts, whole, n);
    tap_ok(fabs(loss - want) <= 1e-5 * fabs(want) && e <= AGREE_TOL && hits == correct,
           "%s: %d vocabulary shards of %d rows x %d = the whole: loss %.7g vs %.7g, dlogits rel %.1e, correct %ld "
           "vs %ld", be->name, nshards, rows, vocab, loss, want, e, hits, correct);
  }
  int lo = vocab / 3, V = vocab / 2;
  for (int r = 0; r < rows; r++) memcpy(shard + (size_t)r * V, logits + (size_t)r * vocab + lo, V * sizeof(float));
  snprintf(label, sizeof label, "xent shard rows=%d columns [%d,%d) of %d", rows, lo, lo + V, vocab);
  seq_ctx_t q = {.rows = rows, .V = V, .lo = lo, .scale = 0.25f, .x = shard, .ids = targets, .w = mx, .b = sum};
  compare_backends(&(op_case_t){label, run_row_max, &q, 1, {{"mx", (size_t)rows, OUT_WRITE, 1, NULL}}, 0});
  compare_backends(&(op_case_t){label, run_xent_shard_stats, &q, 2,
                                {{"sumexp", (size_t)rows, OUT_WRITE, 0, NULL}, {"tgt", (size_t)rows, OUT_WRITE, 1, NULL}},
                                0});
  compare_backends(&(op_case_t){label, run_xent_shard_bwd, &q, 1, {{"dlogits", (size_t)rows * V, OUT_WRITE, 0, NULL}},
                                0});
  compare_backends(&(op_case_t){label, run_row_first_index, &q, 1, {{"first", (size_t)rows, OUT_WRITE, 1, NULL}}, 0});
  tfree(logits), tfree(targets), tfree(whole), tfree(parts), tfree(mx), tfree(sum), tfree(tgt), tfree(first);
  tfree(shard), tfree(a), tfree(b);
}

/* ---- causal attention (attention_fwd, attention_bwd): cpu's blocked form (cuda's fused kernels)
 * against ref's naive one */

typedef struct att_ctx {
  int B, T, C, H, write;
  const float *qkv, *y, *lse, *dy;
} att_ctx_t;

/* Each backend with the workspace it asks for itself, and not a float more. */
static float *att_ws(const backend_t *be, const att_ctx_t *a, size_t *n) {
  *n = be->attention_workspace(a->T, a->C / a->H);
  return *n ? talloc(*n * sizeof(float)) : NULL;
}

static double run_attention_fwd(const backend_t *be, const void *ctx, float **out) {
  const att_ctx_t *a = ctx;
  size_t n;
  float *ws = att_ws(be, a, &n);
  be->attention_fwd(a->B, a->T, a->C, a->H, a->qkv, out[0], out[1], ws, n);
  be->synchronize();
  if (ws) tfree(ws);
  return 0.0;
}

static double run_attention_bwd(const backend_t *be, const void *ctx, float **out) {
  const att_ctx_t *a = ctx;
  size_t n;
  float *ws = att_ws(be, a, &n);
  be->attention_bwd(a->B, a->T, a->C, a->H, a->qkv, a->y, a->lse, a->dy, out[0], a->write, ws, n);
  be->synchronize();
  if (ws) tfree(ws);
  return 0.0;
}

/* B samples of T tokens, width C in H heads: T within one tile, across tiles with a remainder, one
 * token; y and lse for the backward from ref; dqkv added into and written. */
static void test_attention(int B, int T, int C, int H) {
  size_t nqkv = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, nl = (size_t)B * H * T;
  float *qkv = buf_uniform(nqkv, -2, 2), *dy = buf_uniform(ny, -1, 1);
  float *y = talloc(ny * sizeof *y), *lse = talloc(nl * sizeof *lse);
  att_ctx_t a = {B, T, C, H, 0, qkv, y, lse, dy};
  char label[96];
  snprintf(label, sizeof label, "attention_fwd B=%d T=%d C=%d H=%d", B, T, C, H);
  compare_backends(&(op_case_t){label, run_attention_fwd, &a, 2,
                                {{"y", ny, OUT_WRITE, 0, NULL}, {"lse", nl, OUT_WRITE, 0, NULL}}, 0});
  size_t ref_n = backend_ref.attention_workspace(T, C / H);
  float *ref_ws = ref_n ? talloc(ref_n * sizeof *ref_ws) : NULL;
  backend_ref.attention_fwd(B, T, C, H, qkv, y, lse, ref_ws, ref_n);
  for (a.write = 0; a.write <= 1; a.write++) {
    snprintf(label, sizeof label, "attention_bwd B=%d T=%d C=%d H=%d%s", B, T, C, H, a.write ? " dqkv written" : "");
    compare_backends(&(op_case_t){label, run_attention_bwd, &a, 1,
                                  {{"dqkv", nqkv, a.write ? OUT_WRITE : OUT_ACCUM, 0, NULL}}, 0});
  }
  if (ref_ws) tfree(ref_ws);
  tfree(qkv), tfree(dy), tfree(y), tfree(lse);
}

/* Whether a and b (n floats) are non-finite at the same places and within tol of each other at the
 * rest; the count of non-finite places in a among the first `cols` of its rows (of width w) before row
 * `before`. */
static int same_nonfinite(const float *a, const float *b, size_t n, size_t w, size_t cols, size_t before, double tol,
                          size_t *early_bad) {
  double d2 = 0.0, b2 = 0.0;
  int same = 1;
  *early_bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(a[i]) && i / w < before && i % w < cols) ++*early_bad;
    if (!isfinite(a[i]) || !isfinite(b[i])) {
      same &= !isfinite(a[i]) && !isfinite(b[i]);
      continue;
    }
    d2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), b2 += (double)b[i] * b[i];
  }
  return same && sqrt(d2) <= tol * fmax(sqrt(b2), 1e-30);
}

/* A NaN or Inf in token t's q, k, v (or its dy) reaches only what depends on it: the outputs of earlier
 * tokens and dq of earlier tokens stay finite, and the non-finite places are ref's (whose sums run over the
 * causal pairs), also when t shares a diagonal tile with earlier tokens. One sample, H = 2, hs = 8. */
static void test_attention_nonfinite(const backend_t *be, int T, int t) {
  if (!be->host_memory) { /* backend.h: the fused kernels multiply the masked pairs' zeros */
    tap_skip("%s attention, T = %d, non-finite in token %d: the CUDA fused kernels are not held to it", be->name, T, t);
    return;
  }
  const int B = 1, C = 16, H = 2;
  const size_t nqkv = (size_t)T * 3 * C, ny = (size_t)T * C, nl = (size_t)H * T;
  const char *what[] = {"q", "k", "v", "dy"};
  for (int w = 0; w < 4; w++)
    for (int inf = 0; inf <= 1; inf++) {
      float *qkv = buf_uniform(nqkv, -2, 2), *dy = buf_uniform(ny, -1, 1);
      float *bad = w < 3 ? qkv + (size_t)t * 3 * C + (size_t)w * C + 3 : dy + (size_t)t * C + 3; /* head 0 */
      *bad = inf ? INFINITY : NAN;
      float *y[2], *lse[2], *dq[2];
      for (int k = 0; k < 2; k++) {
        const backend_t *b = k ? &backend_ref : be;
        size_t n = b->attention_workspace(T, C / H);
        float *ws = n ? talloc(n * sizeof *ws) : NULL;
        y[k] = talloc(ny * sizeof(float)), lse[k] = talloc(nl * sizeof(float)), dq[k] = talloc(nqkv * sizeof(float));
        b->attention_fwd(B, T, C, H, qkv, y[k], lse[k], ws, n);
        b->attention_bwd(B, T, C, H, qkv, y[k], lse[k], dy, dq[k], 1, ws, n);
        b->synchronize();
        if (ws) tfree(ws);
      }
      size_t early_y, early_dq, early_lse;
      int ok = same_nonfinite(y[0], y[1], ny, C, C, t, AGREE_TOL, &early_y) &&
               same_nonfinite(dq[0], dq[1], nqkv, 3 * C, C, t, AGREE_TOL, &early_dq); /* dq: a row's first C */
      early_lse = 0;
      for (int h = 0; h < H; h++)
        for (int i = 0; i < t; i++) early_lse += !isfinite(lse[0][(size_t)h * T + i]);
      tap_ok(ok && early_y == 0 && early_dq == 0 && early_lse == 0,
             "%s attention, T = %d, %s in token %d's %s: y, lse and dq of tokens 0-%d finite (non-finite: %zu, %zu, "
             "%zu), the non-finite places ref's",
             be->name, T, inf ? "Inf" : "NaN", t, what[w], t - 1, early_y, early_lse, early_dq);
      for (int k = 0; k < 2; k++) tfree(y[k]), tfree(lse[k]), tfree(dq[k]);
      tfree(qkv), tfree(dy);
    }
}

/* The workspace the blocked form asks for grows with T, not T^2: at T = 1024 and head size 64 (GPT-2's),
 * per head, against the T^2 floats of one head's scores alone in the naive form, and linearly from
 * T = 512 to 1024 to 2048. */
static void test_attention_memory(const backend_t *be) {
  const size_t w512 = be->attention_workspace(512, 64), w1k = be->attention_workspace(1024, 64),
               w2k = be->attention_workspace(2048, 64);
  tap_ok(w1k <= 2 * 1024 * (64 + 2) + 4 * 64 * 64 && w1k < 1024 * 1024 / 8 && w2k - w1k == 2 * (w1k - w512),
         "%s attention at T = 1024, hs = 64 asks %zu floats for any batch and heads (%.3f of one head's T^2 scores; "
         "T = 512: %zu, 2048: %zu: linear in T)",
         be->name, w1k, (double)w1k / (1024.0 * 1024.0), w512, w2k);
}

/* ---- optimizers */

typedef struct optim_ctx {
  size_t n;
  float lr, mom, wd, b1, b2, eps, bc1, bc2;
  const float *gs; /* the gradient's scale (a clipping factor folded into the step; a test buffer) or NULL */
  int nesterov, first;
  const float *g;
} optim_ctx_t;

static double run_sgd(const backend_t *be, const void *ctx, float **out) {
  const optim_ctx_t *o = ctx;
  be->sgd_step(o->n, out[0], o->g, o->mom == 0.0f ? NULL : out[1], o->lr, o->mom, o->nesterov, o->wd, o->first, o->gs);
  return 0.0;
}
static double run_adamw(const backend_t *be, const void *ctx, float **out) {
  const optim_ctx_t *o = ctx;
  const adamw_coefs_t c = {
      .lr = o->lr, .b1 = o->b1, .b2 = o->b2, .eps = o->eps, .wd = o->wd, .bc1 = o->bc1, .bc2 = o->bc2};
  be->adamw_step(o->n, out[0], o->g, out[1], out[2], c, o->gs);
  return 0.0;
}

static void test_sgd(size_t n, float mom, int nesterov, float wd, int first) {
  float *p = buf_uniform(n, -1, 1), *g = buf_uniform(n, -1, 1), *buf = buf_uniform(n, -1, 1);
  char label[96];
  optim_ctx_t o = {.n = n, .lr = 0.05f, .mom = mom, .wd = wd, .nesterov = nesterov, .first = first, .g = g};
  // the momentum buffer is written on the first step and read after; with mom == 0 it is unused,
  // so it is passed as NULL
  enum out_mode buf_mode = first ? OUT_WRITE : OUT_INOUT;
  float *gs = buf_const(1, 0.37f);
  for (int clipped = 0; clipped < 2; clipped++) { /* the gradient as it is, and scaled by a clipping factor */
    o.gs = clipped ? gs : NULL;
    snprintf(label, sizeof label, "sgd n=%zu mom=%g nesterov=%d wd=%g first=%d gs=%g", n, mom, nesterov, wd, first,
             clipped ? *gs : 1.0f);
    compare_backends(&(op_case_t){label, run_sgd, &o, mom == 0.0f ? 1 : 2,
                                  {{"p", n, OUT_INOUT, 0, p}, {"buf", n, buf_mode, 0, buf}}, 0});
  }
  tfree(p), tfree(g), tfree(buf), tfree(gs);
}

static void test_adamw(size_t n, int t, float wd) {
  float *p = buf_uniform(n, -1, 1), *g = buf_uniform(n, -1, 1), *m = buf_uniform(n, -0.1f, 0.1f);
  float *v = buf_uniform(n, 0.0f, 0.02f);
  char label[64];
  optim_ctx_t o = {.n = n, .lr = 1e-3f, .wd = wd, .b1 = 0.9f, .b2 = 0.999f, .eps = 1e-8f, .g = g};
  o.bc1 = 1.0f - powf(o.b1, (float)t);
  o.bc2 = 1.0f - powf(o.b2, (float)t);
  float *gs = buf_const(1, 0.37f);
  for (int clipped = 0; clipped < 2; clipped++) { /* the gradient as it is, and scaled by a clipping factor */
    o.gs = clipped ? gs : NULL;
    snprintf(label, sizeof label, "adamw n=%zu t=%d wd=%g gs=%g", n, t, wd, clipped ? *gs : 1.0f);
    compare_backends(&(op_case_t){label, run_adamw, &o, 3,
                                  {{"p", n, OUT_INOUT, 0, p}, {"m", n, OUT_INOUT, 0, m}, {"v", n, OUT_INOUT, 0, v}},
                                  0});
  }
  tfree(p), tfree(g), tfree(m), tfree(v), tfree(gs);
}

/* ---- sums over a long batch: every term of the same sign, so a float sum that runs along the
 * batch would drift by about (terms x 6e-8); blocked sums added in double stay near 1e-7. */

static void test_long_sums(void) {
  agree_tol = LONG_SUM_TOL;
  // conv weight and bias gradients over 8192 samples x 196 positions (one GEMM per sample adding
  // into dw, as before, drifts to 1.4e-6; one float GEMM over the 60000 rows below to 4.6e-6)
  {
    conv_shape_t s = conv_shape_make(1, 14, 14, 2, 3, 3, 1, 1, 1);
    int B = 8192;
    size_t nx = (size_t)B * 196, ny = (size_t)B * 2 * 196;
    float *x = buf_uniform(nx, 0.5f, 1.5f), *w = buf_uniform(18, -1, 1), *dy = buf_uniform(ny, 0.5f, 1.5f);
    convb_ctx_t q = {s, B, 0, 0, 1, 1, conv_workspace_floats(&s), x, w, NULL, dy, NULL, 0};
    compare_backends(&(op_case_t){"long sums: conv_bwd B=8192 14x14", run_conv_bwd, &q, 2,
                                  {{"dw", 18, OUT_ACCUM, 0, NULL}, {"db", 2, OUT_ACCUM, 0, NULL}}, 0});
    tfree(x), tfree(w), tfree(dy);
  }
  // a linear layer's weight gradient over 60000 rows
  test_gemm_tn_rows_range(3, 4, 60000, 0, 0.5f, 1.5f, 0);
  // layer norm weight and bias gradients over 8192 x 8 rows
  {
    int N = 8192, rows = 8, C = 4;
    size_t n = (size_t)N * rows * C, ns = (size_t)N * 2 * rows;
    float *x = buf_uniform(n, 0, 1), *w = buf_uniform((size_t)C, 0.5f, 1.5f), *b = buf_uniform((size_t)C, 0, 1);
    float *dy = buf_uniform(n, 0.5f, 1.5f), *y = talloc(n * sizeof *y), *stats = talloc(ns * sizeof *stats);
    backend_ref.layernorm_fwd(N, rows, C, x, w, b, 1e-5f, y, stats);
    seq_ctx_t q = {.B = N, .rows = rows, .C = C, .x = x, .w = w, .stats = stats, .dy = dy};
    compare_backends(&(op_case_t){"long sums: layernorm_bwd 65536 rows", run_layernorm_bwd, &q, 3,
                                  {{"dx", n, OUT_ACCUM, 0, NULL}, {"dw", (size_t)C, OUT_ACCUM, 0, NULL},
                                   {"db", (size_t)C, OUT_ACCUM, 0, NULL}}, 0});
    tfree(x), tfree(w), tfree(b), tfree(dy), tfree(y), tfree(stats);
  }
  // embedding gradients: 3 tokens used about 10000 times each, positions summed over 15000 sequences
  {
    int B = 15000, T = 2, C = 4, V = 3;
    float *ids = buf_ids((size_t)B * T, V), *dy = buf_uniform((size_t)B * T * C, 0.5f, 1.5f);
    seq_ctx_t q = {.B = B, .T = T, .C = C, .V = V, .positions = 1, .dy = dy, .ids = ids};
    compare_backends(&(op_case_t){"long sums: embed_bwd B=15000", run_embed_bwd, &q, 2,
                                  {{"dwte", (size_t)V * C, OUT_ACCUM, 0, NULL},
                                   {"dwpe", (size_t)T * C, OUT_ACCUM, 0, NULL}}, 0});
    tfree(ids), tfree(dy);
  }
  // bias gradients over 200000 rows and over 1000 samples of 784 positions
  {
    float *dy = buf_uniform(200000 * 3, 0.5f, 1.5f);
    vec_ctx_t v = {.rows = 200000, .cols = 3, .N = 1000, .C = 2, .HW = 784, .x = dy};
    compare_backends(&(op_case_t){"long sums: bias_grad_rows 200000 rows", run_bias_grad_rows, &v, 1,
                                  {{"db", 3, OUT_ACCUM, 0, NULL}}, 0});
    float *dp = buf_uniform((size_t)1000 * 2 * 784, 0.5f, 1.5f);
    v.x = dp;
    compare_backends(&(op_case_t){"long sums: bias_grad_planes 1000 x 784", run_bias_grad_planes, &v, 1,
                                  {{"db", 2, OUT_ACCUM, 0, NULL}}, 0});
    tfree(dy), tfree(dp);
  }
  agree_tol = AGREE_TOL;
}

/* ---- hand-computed values, on both backends */

static int near(double got, double want, double tol) { return fabs(got - want) <= tol * fmax(1.0, fabs(want)); }

static int all_near(const float *got, const float *want, int n, double tol) {
  for (int i = 0; i < n; i++)
    if (!near(got[i], want[i], tol)) return 0;
  return 1;
}

static void test_by_hand(const backend_t *be) {
  const char *nm = be->name;
  float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8}, C[4] = {0};
  be->gemm(0, 0, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
  tap_ok(all_near(C, (float[]){19, 22, 43, 50}, 4, 1e-6), "%s: gemm 2x2 A*B", nm);
  be->gemm(1, 0, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
  tap_ok(all_near(C, (float[]){26, 30, 38, 44}, 4, 1e-6), "%s: gemm 2x2 A^T*B", nm);
  be->gemm(0, 1, 2, 2, 2, 0.5f, A, 2, B, 2, 1.0f, C, 2); /* C = 0.5 A B^T + C */
  tap_ok(all_near(C, (float[]){26 + 8.5f, 30 + 11.5f, 38 + 19.5f, 44 + 26.5f}, 4, 1e-6),
         "%s: gemm 2x2 0.5*A*B^T + C", nm);

  float x[3] = {-1, 0, 2}, y[3], dx[3] = {1, 1, 1};
  be->relu_fwd(3, x, y);
  tap_ok(all_near(y, (float[]){0, 0, 2}, 3, 0), "%s: relu [-1,0,2] = [0,0,2]", nm);
  be->relu_bwd(3, x, (float[]){5, 5, 5}, dx, 0);
  tap_ok(all_near(dx, (float[]){1, 1, 6}, 3, 0), "%s: relu_bwd adds dy where x > 0", nm);
  be->add_relu_fwd(3, x, (float[]){0.5f, 0, -1}, y);
  tap_ok(all_near(y, (float[]){0, 0, 1}, 3, 0), "%s: relu([-1,0,2] + [0.5,0,-1]) = [0,0,1]", nm);
  float db[3] = {0, 0, 0};
  be->add_relu_bwd(3, y, (float[]){5, 5, 5}, dx, db, 0, 0);
  tap_ok(all_near(dx, (float[]){1, 1, 11}, 3, 0) && all_near(db, (float[]){0, 0, 5}, 3, 0),
         "%s: add_relu_bwd adds dy where y > 0 into both inputs' gradients", nm);
  be->gelu_fwd(2, (float[]){0, 1}, y);
  tap_ok(y[0] == 0.0f && near(y[1], 0.841192, 1e-6), "%s: gelu(0) = %g, gelu(1) = %.6f", nm, y[0], y[1]);
  dx[0] = 0;
  be->gelu_bwd(1, (float[]){0}, (float[]){1}, dx, 0);
  tap_ok(near(dx[0], 0.5, 1e-6), "%s: gelu'(0) = %g", nm, dx[0]);

  enum { R = 3, V = 10 };
  float logits[R * V], targets[R] = {0, 4, 9}, dl[R * V];
  for (int i = 0; i < R * V; i++) logits[i] = 0.7f;
  double loss = be->xent_fwd_bwd(R, V, logits, targets, 0.5f, dl);
  tap_ok(near(loss, R * log((double)V), 1e-6), "%s: xent of uniform logits = %d log(%d) (%.7f)", nm, R, V, loss);
  tap_ok(near(dl[0], 0.5 * (0.1 - 1.0), 1e-6) && near(dl[1], 0.05, 1e-6) && near(dl[V + 4], -0.45, 1e-6),
         "%s: xent dlogits = grad_scale * (softmax - onehot)", nm);
  logits[V + 3] = NAN;
  loss = be->xent_fwd_bwd(R, V, logits, targets, 0.5f, dl);
  tap_ok(isnan(loss) && isnan(dl[V]), "%s: xent with a NaN logit gives a NaN loss and gradient", nm);
  logits[V + 3] = -INFINITY;
  loss = be->xent_fwd_bwd(R, V, logits, targets, 0.5f, dl);
  tap_ok(near(loss, 2 * log(10.0) + log(9.0), 1e-6) && dl[V + 3] == 0.0f,
         "%s: xent with a -Inf logit: row 1 has 9 classes left (%.7f)", nm, loss);
  float tied[6] = {1, 3, 3, 2, 2, 0}, tt[2] = {1, 0};
  tap_ok(be->count_correct(2, 3, tied, tt) == 2, "%s: count_correct takes the first maximum", nm);
  tt[0] = 2;
  tap_ok(be->count_correct(2, 3, tied, tt) == 1, "%s: count_correct misses a later tie", nm);

  float s[9] = {5, 9, 9, 1, 1, 9, 0, 0, 0}, p[9];
  be->causal_softmax_fwd(1, 3, 1.0f, s, p);
  tap_ok(all_near(p, (float[]){1, 0, 0, 0.5f, 0.5f, 0, 1 / 3.f, 1 / 3.f, 1 / 3.f}, 9, 1e-6),
         "%s: causal softmax rows [1,0,0], [.5,.5,0], [1/3,1/3,1/3]", nm);

  float plane[16], pooled[4], am[4];
  for (int i = 0; i < 16; i++) plane[i] = (float)i;
  be->maxpool_fwd(1, 4, 4, 2, 2, 0, plane, pooled, am);
  tap_ok(all_near(pooled, (float[]){5, 7, 13, 15}, 4, 0) && all_near(am, (float[]){5, 7, 13, 15}, 4, 0),
         "%s: maxpool 4x4 k2s2 of 0..15", nm);
  float neg[4] = {-4, -3, -2, -1}, pooled4[4], am4[4]; /* 2x2 plane, 3x3 windows stride 1 pad 1 */
  be->maxpool_fwd(1, 2, 2, 3, 1, 1, neg, pooled4, am4);
  tap_ok(all_near(pooled4, (float[]){-1, -1, -1, -1}, 4, 0) && all_near(am4, (float[]){3, 3, 3, 3}, 4, 0),
         "%s: maxpool k3s1p1 of a negative 2x2 plane: the padding is never the max", nm);
  float avg[4];
  be->avgpool2d_fwd(1, 2, 2, 3, 1, 1, neg, avg); /* every window holds the 4 elements and 5 of padding */
  tap_ok(all_near(avg, (float[]){-10 / 9.f, -10 / 9.f, -10 / 9.f, -10 / 9.f}, 4, 1e-6),
         "%s: avgpool2d k3s1p1 counts the padding in the divisor (-10/9)", nm);
  for (int i = 0; i < 16; i++) plane[i] = 1.0f;
  be->maxpool_fwd(1, 4, 4, 2, 2, 0, plane, pooled, am);
  tap_ok(all_near(am, (float[]){0, 2, 8, 10}, 4, 0), "%s: maxpool ties go to the window's first element", nm);

  float img[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, col[16];
  be->im2col(img, 1, 3, 3, 2, 2, 1, 0, 0, col);
  tap_ok(all_near(col, (float[]){1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}, 16, 0),
         "%s: im2col 3x3 image, 2x2 kernel", nm);
  float padcol[9 * 9];
  be->im2col(img, 1, 3, 3, 3, 3, 1, 1, 1, padcol); /* row (kh=0,kw=0) sees the top-left padding */
  tap_ok(all_near(padcol, (float[]){0, 0, 0, 0, 1, 2, 0, 4, 5}, 9, 0) &&
             all_near(padcol + 4 * 9, img, 9, 0), "%s: im2col pad 1: corner row and centre row", nm);
  float rowcol[3 * 9];
  be->im2col(img, 1, 3, 3, 1, 3, 1, 0, 1, rowcol); /* a 1x3 kernel padded (0,1): only columns padded */
  tap_ok(all_near(rowcol, (float[]){0, 1, 2, 0, 4, 5, 0, 7, 8}, 9, 0) && all_near(rowcol + 9, img, 9, 0) &&
             all_near(rowcol + 18, (float[]){2, 3, 0, 5, 6, 0, 8, 9, 0}, 9, 0),
         "%s: im2col 1x3 kernel padded (0,1): left, centre and right taps", nm);

  float ln[4] = {1, 2, 3, 4}, w1[4] = {1, 1, 1, 1}, b0[4] = {0}, lny[4], st[2];
  be->layernorm_fwd(1, 1, 4, ln, w1, b0, 1e-5f, lny, st);
  const float mean = st[0], rstd = st[1];
  double rs = 1.0 / sqrt(1.25 + 1e-5);
  tap_ok(near(mean, 2.5, 1e-6) && near(rstd, rs, 1e-6) && near(lny[0], -1.5 * rs, 1e-6),
         "%s: layernorm [1,2,3,4]: mean 2.5, rstd %.6f, y0 %.6f", nm, rstd, lny[0]);

  float sp[1] = {1}, sg[1] = {0.5f}, sb[1] = {0};
  be->sgd_step(1, sp, sg, sb, 0.1f, 0.9f, 0, 0.0f, 1, NULL);
  be->sgd_step(1, sp, sg, sb, 0.1f, 0.9f, 0, 0.0f, 0, NULL);
  tap_ok(near(sp[0], 0.855, 1e-6) && near(sb[0], 0.95, 1e-6), "%s: sgd momentum two steps p=%.6f", nm, sp[0]);
  sp[0] = 1;
  be->sgd_step(1, sp, sg, sb, 0.1f, 0.9f, 1, 0.0f, 1, NULL);
  tap_ok(near(sp[0], 0.905, 1e-6), "%s: sgd nesterov first step p=%.6f", nm, sp[0]);
  float ap[1] = {1}, ag[1] = {0.5f}, amv[2] = {0, 0};
  const adamw_coefs_t ac = {.lr = 0.1f, .b1 = 0.9f, .b2 = 0.999f, .eps = 1e-8f, .wd = 0.01f, .bc1 = 0.1f, .bc2 = 0.001f};
  be->adamw_step(1, ap, ag, &amv[0], &amv[1], ac, NULL);
  tap_ok(near(ap[0], 0.899, 1e-6) && near(amv[0], 0.05, 1e-6) && near(amv[1], 0.00025, 1e-6),
         "%s: adamw first step p=%.7f", nm, ap[0]);
}

/* ---- the scalars a trainer keeps in backend memory (train.c) */

/* sumsq_add and xent_add add to what the accumulator holds, with the bits of the host's acc + sumsq
 * and acc + xent_fwd_bwd; float_pair splits a double into the float pair the side slots carry;
 * clip_factor writes PyTorch's factor min(1, max_norm / (norm + 1e-6)) (below 1 from max_norm - 1e-6
 * on, at max_norm too; 1 below that, for a norm that is not finite and with clipping off); an
 * optimizer reads its factor from backend memory. */
static void test_step_scalars(const backend_t *be) {
  enum { N = 1001, ROWS = 6, V = 10 };
  const char *nm = be->name;
  float *x = buf_uniform(N, -2, 2), *logits = buf_uniform(ROWS * V, -3, 3), *targets = buf_ids(ROWS, V);
  double *acc = talloc(2 * sizeof *acc);
  acc[0] = 0.25, acc[1] = 1.5;
  be->sumsq_add(x, N, &acc[0]);
  be->sumsq_add(x, N, &acc[0]);
  be->xent_add(ROWS, V, logits, targets, 0.5f, NULL, &acc[1]);
  be->synchronize();
  const double s = be->sumsq(x, N), l = be->xent_fwd_bwd(ROWS, V, logits, targets, 0.5f, NULL);
  tap_ok(acc[0] == (0.25 + s) + s && acc[1] == 1.5 + l,
         "%s: sumsq_add twice onto 0.25: %.17g (0.25 + sumsq + sumsq %.17g); xent_add onto 1.5: %.17g (%.17g)", nm,
         acc[0], (0.25 + s) + s, acc[1], 1.5 + l);
  float *pair = talloc(2 * sizeof *pair);
  acc[0] = 1.0 / 3.0;
  be->float_pair(&acc[0], pair);
  be->synchronize();
  tap_ok(pair[0] == (float)(1.0 / 3.0) && pair[1] == (float)(1.0 / 3.0 - (double)(float)(1.0 / 3.0)) &&
             fabs((double)pair[0] + (double)pair[1] - 1.0 / 3.0) < 1e-15,
         "%s: float_pair of 1/3: %.9g + %.9g, their sum within 1e-15", nm, pair[0], pair[1]);
  tfree(pair);

  const double in = 1.0 - 5e-7, out = 1.0 - 2e-6; /* norms within 1e-6 below max_norm 1, and not */
  const double cases[][2] = {{4.0, 1.0},      {0.25, 1.0},      {1.0, 1.0}, {in * in, 1.0},
                             {out * out, 1.0}, {INFINITY, 1.0}, {NAN, 1.0}, {4.0, 0.0}};
  const float want[] = {(float)(1.0 / (2.0 + 1e-6)), 1.0f, (float)(1.0 / (1.0 + 1e-6)),
                        (float)(1.0 / (sqrt(in * in) + 1e-6)), 1.0f, 1.0f, 1.0f, 1.0f};
  float *gs = talloc(sizeof *gs);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    acc[0] = cases[i][0];
    be->clip_factor(&acc[0], cases[i][1], gs);
    be->synchronize();
    tap_ok(*gs == want[i], "%s: clip_factor of squared norm %g to max_norm %g: %.9g (%.9g)", nm, cases[i][0],
           cases[i][1], *gs, want[i]);
  }

  float *p = buf_const(1, 1.0f), *g = buf_const(1, 0.5f);
  *gs = 0.5f;
  be->sgd_step(1, p, g, NULL, 0.1f, 0.0f, 0, 0.0f, 1, gs);
  be->synchronize();
  tap_ok(near(*p, 1.0 - 0.1 * 0.25, 1e-7), "%s: sgd reads the gradient 0.5 scaled by 0.5 from backend memory: p %.7f",
         nm, *p);
  tfree(x), tfree(logits), tfree(targets), tfree(acc), tfree(gs), tfree(p), tfree(g);
}

/* ---- memory ops and registry */

static void test_memory(const backend_t *be) {
  size_t sizes[] = {1, 17, 1000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    float *d = be->alloc(n), *e = be->alloc(n);
    float *host = buf_uniform(n, -1, 1), *back = buf_const(n, 1.0f);
    be->download(back, d, n);
    int zero = 1;
    for (size_t i = 0; i < n; i++) zero &= back[i] == 0.0f;
    be->upload(d, host, n);
    be->copy(e, d, n);
    be->download(back, e, n);
    tap_ok(zero && (uintptr_t)d % 64 == 0 && memcmp(host, back, n * sizeof *host) == 0,
           "%s: alloc(%zu) zeroed and 64-byte aligned; upload/copy/download round-trip", be->name, n);
    be->free(d);
    be->free(e);
    tfree(host);
    tfree(back);
  }
  be->set_threads(1);
}

static void test_registry(void) {
  tap_ok(backend_find("cpu") == &backend_cpu && backend_find("ref") == &backend_ref &&
             backend_find("cuda") == &backend_cuda, "backend_find cpu, ref, cuda");
  tap_ok(backend_find("cuda-nope") == NULL && backend_find(NULL) == NULL, "backend_find of unknown is NULL");
  tap_ok(strcmp(backend_names(), "cpu, ref, cuda") == 0, "backend_names from the table: %s", backend_names());
  /* every slot after host_memory is an op: one left NULL crashes whoever calls it (the cuda table
   * of a build without CUDA only opens, to say why it cannot), except the graph recording and the
   * timing marks a device backend may offer (NULL: none; the host backends have none) */
  const backend_t *const tables[] = {&backend_cpu, &backend_ref, &backend_cuda};
  for (size_t k = 0; k < 2 + BUILD_HAS_CUDA; k++) {
    size_t first = offsetof(backend_t, open), slots = (sizeof(backend_t) - first) / sizeof(void (*)(void)), unset = 0;
    const backend_t *b = tables[k];
    const size_t optional[] = {offsetof(backend_t, capture_begin), offsetof(backend_t, capture_end),
                               offsetof(backend_t, capture_abandon), offsetof(backend_t, mark),
                               offsetof(backend_t, mark_passed), offsetof(backend_t, mark_ns)};
    for (size_t i = 0; i < slots; i++) {
      void (*fn)(void);
      size_t at = first + i * sizeof fn;
      memcpy(&fn, (const char *)b + at, sizeof fn);
      int may_be_null = 0;
      for (size_t j = 0; j < sizeof optional / sizeof optional[0]; j++) may_be_null |= at == optional[j];
      unset += fn == NULL && !may_be_null;
    }
    int recorders = !!b->capture_begin + !!b->capture_end + !!b->capture_abandon;
    int markers = !!b->mark + !!b->mark_passed + !!b->mark_ns;
    if (b->host_memory)
      tap_ok(recorders == 0 && markers == 0, "%s: records no graphs and keeps no marks", b->name);
    else
      tap_ok((recorders == 0 || recorders == 3) && (markers == 0 || markers == 3),
             "%s: graph recording's 3 functions, or none (%d); the marks' 3, or none (%d)", b->name, recorders,
             markers);
    const char *math_unset = "none"; /* the numerical ops by name, as backend.h lists them */
#define FIRST_UNSET(ret, name, params) \
  if (!tables[k]->name && strcmp(math_unset, "none") == 0) math_unset = #name;
    BACKEND_MATH_OPS(FIRST_UNSET)
#undef FIRST_UNSET
    tap_ok(unset == 0, "%s: every one of the table's %zu ops is set (%zu unset; of the numerical ops: %s)",
           tables[k]->name, slots, unset, math_unset);
  }
}

/* ---- a device backend's recorded pieces (backend.h: capture_begin, capture_end; [multiplex] graphs) */

static int graph_gates;
static void count_gate(void) { graph_gates++; }

/* A piece of work: y = 2 y + a x, then y += x (n floats); with halve, then y *= 0.5 (a fourth kernel). */
static void graph_piece(const backend_t *be, size_t n, float a, const float *x, float *y, int halve) {
  be->scale(y, n, 2.0f);
  be->axpy(n, a, x, y);
  be->add(n, y, x, y);
  if (halve) be->scale(y, n, 0.5f);
}

/* The piece recorded and launched equals it run as it comes, bitwise: built the first time, updated
 * in place with another scalar and again at another length (the same kernels with other arguments
 * and grids: CUDA updates those), built again with a kernel more (another graph's shape); a copy to
 * the host inside a recording ends it there (gate, launch: "cut") and the rest runs as it comes,
 * with the same result; each recording passes its gate once. */
static void test_graphs(const backend_t *be) {
  enum { N = 3001 };
  float *x = buf_uniform(N, -1, 1), *want = buf_uniform(N, -1, 1), *got = talloc(N * sizeof *got);
  memcpy(got, want, N * sizeof *got);
  const backend_context_t c0 = *be->context();
  const float scalars[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
  const size_t lengths[4] = {N, N, N - 1000, N - 1000};
  int same = 1;
  for (int i = 0; i < 4; i++) {
    graph_piece(be, lengths[i], scalars[i], x, want, i == 3);
    be->capture_begin(7, count_gate);
    graph_piece(be, lengths[i], scalars[i], x, got, i == 3);
    be->capture_end();
    be->synchronize();
    same &= memcmp(got, want, N * sizeof *got) == 0;
  }
  const backend_context_t *c = be->context();
  tap_ok(same && graph_gates == 4 && c->graphs_launched - c0.graphs_launched == 4 &&
             c->graphs_built - c0.graphs_built == 2 && c->graphs_updated - c0.graphs_updated == 2,
         "%s: a piece recorded 4 times = run as it comes, bitwise (%s); %d gates; %ld launched, %ld built, %ld updated "
         "in place (want 4; 2: the first and the kernel more; 2: the new scalar, the new length)", be->name,
         same ? "yes" : "no", graph_gates, c->graphs_launched - c0.graphs_launched, c->graphs_built - c0.graphs_built,
         c->graphs_updated - c0.graphs_updated);
  float host[2];
  graph_piece(be, N, 0.5f, x, want, 0);
  be->download(host, want, 2);
  graph_piece(be, N, 0.5f, x, want, 0);
  be->capture_begin(8, count_gate);
  graph_piece(be, N, 0.5f, x, got, 0);
  be->download(host, got, 2); /* cuts the recording */
  graph_piece(be, N, 0.5f, x, got, 0);
  be->capture_end();          /* nothing open */
  be->synchronize();
  c = be->context();
  tap_ok(memcmp(got, want, N * sizeof *got) == 0 && graph_gates == 5 && c->graphs_cut - c0.graphs_cut == 1,
         "%s: a copy to the host cuts a recording (gate, launch, %ld cut), the rest runs as it comes: the same bits, "
         "%d gates (want 5)", be->name, c->graphs_cut - c0.graphs_cut, graph_gates);
  tfree(x), tfree(want), tfree(got);
}

/* A device backend's timing marks: a mark passes once the work queued before it has run, and is
 * read without waiting; the time between two marks around a piece of work is positive, and a mark
 * recorded again holds its new time. */
static void test_marks(const backend_t *be) {
  enum { N = 1 << 22 };
  float *x = be->alloc(N), *y = be->alloc(N);
  be->synchronize();
  be->mark(0);
  for (int i = 0; i < 200; i++) be->axpy(N, 0.5f, x, y); /* about 10 GB of traffic: milliseconds */
  be->mark(1);
  long waits = be->context()->waits;
  int early = be->mark_passed(1); /* likely not yet; either answer is right, but it must not wait */
  int waited = be->context()->waits != waits;
  be->synchronize();
  double ns = be->mark_ns(0, 1);
  tap_ok(!waited && be->mark_passed(0) && be->mark_passed(1) && ns > 0,
         "%s: marks around 200 passes over 16 MiB: %.3f ms between them, both passed after synchronize (mark 1 "
         "had %spassed when queried at once; no wait counted)", be->name, ns / 1e6, early ? "" : "not ");
  be->mark(0); /* again, after the work: no time to the old mark 1 */
  be->synchronize();
  tap_ok(be->mark_passed(0) && be->mark_ns(1, 0) >= 0 && be->mark_ns(1, 0) < ns,
         "%s: a mark recorded again holds its new time (%.3f ms after mark 1)", be->name, be->mark_ns(1, 0) / 1e6);
  be->free(x), be->free(y);
}

/* The host backends' context: open accepts float32 and bf16 and says which (tests/test_bf16 checks
 * bf16's products; the ops here run in float32, opened again), and their ops need no waiting. */
static void test_context(const backend_t *be) {
  backend_options_t o = backend_default_options();
  int input_error = -1;
  const char *why = be->open(&o, &input_error);
  tap_ok(why == NULL && input_error == 0 && strcmp(be->context()->precision, "fp32") == 0,
         "%s: opens with the default options, products in fp32", be->name);
  o.precision = BACKEND_BF16;
  why = be->open(&o, &input_error);
  tap_ok(why == NULL && strcmp(be->context()->precision, "bf16") == 0, "%s: opens in bf16 and says so: %s", be->name,
         why ? why : "accepted");
  tap_ok(be->context()->kv16 == 1, "%s in bf16: a key/value cache may be held in bfloat16 (its products round it)",
         be->name);
  o.precision = BACKEND_FP32;
  why = be->open(&o, &input_error);
  tap_ok(why == NULL && strcmp(be->context()->precision, "fp32") == 0, "%s: opened in fp32 again, says fp32", be->name);
  tap_ok(be->context()->kv16 == 0, "%s in fp32: a key/value cache stays in floats", be->name);
  const backend_context_t *c = be->context();
  tap_ok(c && strcmp(c->device, "host") == 0 && c->stream == NULL && c->index == -1 && be->host_memory &&
             strcmp(c->epilogues, "none") == 0 && c->epilogue_counts.bias_all == 0 &&
             c->epilogue_counts.gelu_all == 0 && strcmp(c->attention, "none") == 0,
         "%s: context on the host, no stream, no cuBLASLt epilogues or attention kernels", be->name);
  be->synchronize();
}

/* cpu's flush_denormals option: a momentum that decays below FLT_MIN (a dead unit's, gradient 0)
 * becomes 0 with it and stays a denormal without it; ref keeps gradual underflow. */
static void test_denormal_mode(void) {
  backend_options_t o = backend_default_options();
  tap_ok(o.flush_denormals == 1, "plain runs flush denormals by default");
  for (int on = 0; on < 2; on++) {
    int input_error = 0;
    o.flush_denormals = on;
    tap_ok(backend_cpu.open(&o, &input_error) == NULL, "cpu: opens with flush_denormals = %d", on);
    float p[16], g[16], buf[16];
    for (int i = 0; i < 16; i++) p[i] = 1.0f, g[i] = 0.0f, buf[i] = 2e-38f; /* just above FLT_MIN */
    backend_cpu.sgd_step(16, p, g, buf, 0.1f, 0.5f, 0, 0.0f, 0, NULL);              /* buf = 1e-38: a denormal */
    int zeros = 0, denormal = 0;
    for (int i = 0; i < 16; i++) zeros += buf[i] == 0.0f, denormal += buf[i] > 0.0f && buf[i] < 1.1754944e-38f;
    tap_ok(on ? zeros == 16 : denormal == 16, "cpu, flush_denormals = %d: a momentum decayed below FLT_MIN is %s (%d "
           "zeros, %d denormals)", on, on ? "0" : "kept as a denormal", zeros, denormal);
    tap_ok(cpu_flush_denormals_on() == on, "cpu: the thread's mode reads back as %d", on);
  }
}

/* The cuda backend in cpu's place, on this process's GPU, its products in `precision`; 0 when there
 * is none (why says so). */
static int open_gpu(backend_precision_t precision, char *why, size_t len) {
  backend_options_t o = backend_default_options();
  o.precision = precision;
  int input_error = 0;
  const char *err = backend_cuda.open(&o, &input_error);
  if (err) {
    snprintf(why, len, "%s", err);
    return 0;
  }
  const backend_context_t *c = backend_cuda.context();
  tap_diag("cuda: %s (device %d), %s products, dense peak %.0f TFLOP/s", c->device, c->index, c->precision,
           c->peak_flops * 1e-12);
  const char *want = precision == BACKEND_BF16 ? "bf16" : "fp32";
  tap_ok(c->stream != NULL && c->index >= 0 && !backend_cuda.host_memory && strcmp(c->precision, want) == 0,
         "cuda: context on device %d with a stream, device memory, %s products", c->index, want);
  backends[0] = &backend_cuda;
  managed = 1;
  return 1;
}

#if HAVE_CUDA
/* The cuda backend reopened with these epilogues, precision and attention kernels (the test's
 * managed buffers stay valid: the same device). */
static void reopen_gpu_as(backend_epilogues_t e, backend_precision_t p, backend_attention_t attention) {
  backend_cuda.close();
  backend_options_t o = backend_default_options();
  o.epilogues = e;
  o.precision = p;
  o.attention = attention;
  int input_error = 0;
  const char *err = backend_cuda.open(&o, &input_error);
  if (err) surge_runtime_error("cuda: reopening the backend: %s", err);
}

static void reopen_gpu(backend_epilogues_t e, backend_precision_t p) { reopen_gpu_as(e, p, BACKEND_ATTENTION_AUTO); }

/* One linear case on cuda against ref at tol; returns 1 when cuBLASLt ran it with its epilogue (the
 * context's counts: the GELU epilogue for linear_gelu_fwd, the bias one for linear_fwd), else 0. */
static long epilogue_case(const char *what, op_run_fn run, const linear_ctx_t *v, double tol) {
  char label[160];
  snprintf(label, sizeof label, "epilogues: %s rows=%d out=%d in=%d%s", what, v->rows, v->out, v->in,
           v->bias ? " bias" : "");
  size_t n = (size_t)v->rows * v->out;
  agree_tol = tol;
  backend_epilogue_counts_t c0 = backend_cuda.context()->epilogue_counts;
  if (run == run_linear_fwd)
    compare_backends(&(op_case_t){label, run, v, 1, {{"y", n, OUT_WRITE, 0, NULL}}, 0});
  else
    compare_backends(&(op_case_t){label, run, v, 2, {{"pre", n, OUT_WRITE, 0, NULL}, {"y", n, OUT_WRITE, 0, NULL}}, 0});
  backend_epilogue_counts_t c1 = backend_cuda.context()->epilogue_counts;
  agree_tol = AGREE_TOL;
  return run == run_linear_fwd ? c1.bias - c0.bias : c1.gelu - c0.gelu;
}

/* cuBLASLt's epilogues (cuda_lt.c, doc/gpu.md) at each setting: linear_fwd with a bias and
 * linear_gelu_fwd against ref, float32 (TF32 off) within 1e-4 and bf16 products within 1e-2; which
 * path each call took (cuda_lt_counts): GPT-2's shapes (out a multiple of 8, operands 256-byte
 * aligned) fused at auto, the GELU ones fused only at auto; out % 8 != 0 (pre's ld rule) and an
 * operand 4 bytes off its alignment never fused for GELU and alignment respectively; shapes the
 * heuristic may refuse (in = 3, out = 7) right either way; off never fused; a fused call gives the
 * same bits twice. The backend is left reopened at its defaults. */
static void test_epilogues(void) {
  const struct {
    backend_epilogues_t e;
    backend_precision_t p;
    double tol;
    const char *name;
  } runs[] = {{BACKEND_EPILOGUES_AUTO, BACKEND_FP32, EPILOGUE_TOL, "auto fp32"},
              {BACKEND_EPILOGUES_BIAS, BACKEND_FP32, EPILOGUE_TOL, "bias fp32"},
              {BACKEND_EPILOGUES_OFF, BACKEND_FP32, EPILOGUE_TOL, "off fp32"},
              {BACKEND_EPILOGUES_AUTO, BACKEND_BF16, EPILOGUE_BF16_TOL, "auto bf16"}};
  const int shapes[][4] = {/* rows, out, in, GPT-2 shape (must fuse where the setting allows) */
                           {256, 3072, 768, 1}, {256, 768, 3072, 1}, {128, 2304, 768, 1}, {33, 512, 784, 1},
                           {17, 389, 100, 0},   {5, 7, 3, 0}};
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    reopen_gpu(runs[r].e, runs[r].p);
    const int bias_ok = runs[r].e != BACKEND_EPILOGUES_OFF, gelu_ok = runs[r].e == BACKEND_EPILOGUES_AUTO;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int rows = shapes[s][0], out = shapes[s][1], in = shapes[s][2], nice = shapes[s][3];
      float *x = buf_uniform((size_t)rows * in + 1, -1, 1), *w = buf_uniform((size_t)out * in, -1, 1),
            *b = buf_uniform((size_t)out, -1, 1);
      char what[64];
      for (int bias = 0; bias < 2; bias++) {
        linear_ctx_t v = {rows, out, in, bias, 0, x, w, b};
        snprintf(what, sizeof what, "%s linear_gelu_fwd", runs[r].name);
        long fused = epilogue_case(what, run_linear_gelu_fwd, &v, runs[r].tol);
        if (nice || !gelu_ok || out % 8 != 0)
          tap_ok(fused == (nice && gelu_ok), "epilogues: %s rows=%d out=%d in=%d%s: %s", what, rows, out, in,
                 bias ? " bias" : "", fused ? "cuBLASLt's GELU epilogue" : "GEMM and kernels");
        if (!bias) continue;
        snprintf(what, sizeof what, "%s linear_fwd", runs[r].name);
        fused = epilogue_case(what, run_linear_fwd, &v, runs[r].tol);
        if (nice || !bias_ok)
          tap_ok(fused == (nice && bias_ok), "epilogues: %s rows=%d out=%d in=%d bias: %s", what, rows, out, in,
                 fused ? "cuBLASLt's bias epilogue" : "GEMM and bias kernel");
      }
      if (nice && bias_ok) { /* x one float off its 256-byte start: 4-byte aligned, never fused */
        linear_ctx_t v = {rows, out, in, 1, 0, x + 1, w, b};
        snprintf(what, sizeof what, "%s linear_fwd, x 4-byte aligned", runs[r].name);
        tap_ok(epilogue_case(what, run_linear_fwd, &v, runs[r].tol) == 0,
               "epilogues: %s rows=%d out=%d in=%d: GEMM and bias kernel", what, rows, out, in);
      }
      if (nice && gelu_ok) { /* the same bits from a second call (one algorithm per shape) */
        size_t n = (size_t)rows * out;
        float *pre[2], *y[2];
        for (int k = 0; k < 2; k++) {
          pre[k] = talloc(n * sizeof(float)), y[k] = talloc(n * sizeof(float));
          backend_cuda.linear_gelu_fwd(rows, out, in, x, w, NULL, b, pre[k], y[k], NULL, 0);
        }
        backend_cuda.synchronize();
        tap_ok(memcmp(pre[0], pre[1], n * sizeof(float)) == 0 && memcmp(y[0], y[1], n * sizeof(float)) == 0,
               "epilogues: %s linear_gelu_fwd rows=%d out=%d in=%d: the same bits twice", runs[r].name, rows, out, in);
        for (int k = 0; k < 2; k++) tfree(pre[k]), tfree(y[k]);
      }
      tfree(x), tfree(w), tfree(b);
    }
  }
  reopen_gpu(BACKEND_EPILOGUES_AUTO, BACKEND_FP32);
}
#endif

/* The cpu backend's own packed SGEMM (cpu_gemm_kern.h; cpu_gemm routes to it at AVX-512 from 64^3
 * multiply-adds up, cpu_gemm_own) at shapes that are awkward for its tiles (AVX-512: 12 rows x 32
 * columns) and blocks (K in blocks of 256, rows of 240, columns of 2048): M, N, K past a block by 1
 * or by part of a tile; 2 rows; one column; K of 1000; 4 rows that OpenBLAS keeps; every ta, tb;
 * beta 0 (C's old NaN never read) and 1; leading dimensions past the shape; alpha 1.3 (test_gemm).
 * Against ref's double sums at the GEMM tests' bound. Then its results depend on the shape alone:
 * the same product from operands copied one float further along gives the same bits. */
static void test_own_gemm(void) {
  /* M, N, K, whether the own kernel runs it at AVX-512 (4 x 256 x 256: OpenBLAS's small-matrix path) */
  const int shapes[][4] = {{241, 47, 513, 1}, {37, 2083, 30, 1}, {300, 1, 1000, 1}, {2, 600, 700, 1},
                           {1000, 3, 100, 1},  {64, 64, 64, 1},    {4, 256, 256, 0}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    const int own = cpu_gemm_own(M, N, K);
    if (!managed) /* the cpu backend under test */
      tap_ok(own == (shapes[s][3] && cpu_simd() == BACKEND_SIMD_AVX512), "gemm M=%d N=%d K=%d: %s", M, N, K,
             own ? "the own packed kernel" : "OpenBLAS");
    for (int t = 0; t < 4; t++) {
      test_gemm(t >> 1, t & 1, M, N, K, 0.0f, 0, 1);
      test_gemm(t >> 1, t & 1, M, N, K, 1.0f, 5, 1);
    }
  }
  test_gemm_tn_rows(70, 90, 2100, 2); /* weight gradients: blocks of 1024 rows on the own kernel */
  /* cuda (its float partials, 2 blocks here, in 2 parts of C's rows: src/backend/tn_parts.h); the cpu's parts are
   * tests/test_gemm_order's, bit for bit, without this product's 2.3 G multiply-adds in ref (14 s on an AMD EPYC
   * core: once, onto a random C, not also the accumulation checks' two more; the case above makes those) */
  if (managed) test_gemm_tn_rows_range(1500, 1500, 1025, 1, -1, 1, 1);
  if (managed) return;
  const int M = 241, N = 47, K = 513;
  float *A = buf_uniform((size_t)M * K + 1, -1, 1), *B = buf_uniform((size_t)K * N + 1, -1, 1);
  float *C0 = buf_uniform((size_t)M * N, -1, 1), *C1 = buf_uniform((size_t)M * N, -1, 1);
  backend_cpu.gemm(0, 1, M, N, K, 0.7f, A, K, B, K, 0.0f, C0, N);
  memmove(A + 1, A, (size_t)M * K * sizeof(float));
  memmove(B + 1, B, (size_t)K * N * sizeof(float));
  backend_cpu.gemm(0, 1, M, N, K, 0.7f, A + 1, K, B + 1, K, 0.0f, C1, N);
  tap_ok(memcmp(C0, C1, (size_t)M * N * sizeof(float)) == 0,
         "gemm M=%d N=%d K=%d: the same bits from operands one float further along", M, N, K);
  tfree(A);
  tfree(B);
  tfree(C0);
  tfree(C1);
}

/* The cpu backend's product of a few rows times a matrix stored (N, K) (cpu_rows_kern.h; cpu_gemm
 * routes fp32 products of 2 to CPU_FEW_ROWS rows to it where it wins, cpu_gemm_few_rows), at shapes
 * that leave partial blocks (rows not a multiple of 4, B's rows of the block's, K of the width) and
 * K below one vector; beta 0 (C's NaN never read) and 0.7 with leading dimensions past the shape.
 * Against ref's double sums at the GEMM tests' bound. At 2 and 3 rows it runs where the own packed
 * kernel would (AVX-512), from 4 rows wherever a kernel width is in use, never where OpenBLAS's
 * small-matrix path wins (up to 4 rows, 1024 outputs and 2^20 multiply-adds: 3 x 130 x 700 and
 * 4 x 256 x 256 here). */
static void test_few_rows_gemm(void) {
  /* M, N, K, whether the kernel runs it at AVX-512, at AVX2 */
  const int shapes[][5] = {{2, 769, 300, 1, 0}, {3, 130, 700, 0, 0}, {4, 257, 300, 1, 1}, {4, 256, 256, 0, 0},
                           {5, 1030, 61, 1, 1}, {8, 67, 999, 1, 1},  {13, 130, 160, 1, 1}, {16, 2000, 9, 1, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    if (!managed) {
      const backend_simd_t w = cpu_simd();
      const int want = w == BACKEND_SIMD_AVX512 ? shapes[s][3] : w == BACKEND_SIMD_AVX2 && shapes[s][4];
      tap_ok(cpu_gemm_few_rows(0, 1, M, N, K) == want && !cpu_gemm_few_rows(1, 1, M, N, K) &&
                 !cpu_gemm_few_rows(0, 0, M, N, K),
             "gemm M=%d N=%d K=%d at simd = %s: %s (never with A transposed or B stored (K, N))", M, N, K,
             cpu_simd_name(cpu_simd()), want ? "the few-row kernel" : "not the few-row kernel");
    }
    test_gemm(0, 1, M, N, K, 0.0f, 0, 1);
    test_gemm(0, 1, M, N, K, 0.7f, 3, 1);
  }
}

/* Every op against ref, at the kernel width in use. */
static void test_ops(void) {
  /* one row (M = 1, cpu: a matrix-vector product) with leading dimensions past the shapes (extra) */
  const int gemm_shapes[][3] = {{1, 1, 1}, {1, 37, 19}, {7, 5, 3}, {33, 17, 29}, {64, 48, 80}};
  for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++)
    for (int t = 0; t < 4; t++) {
      const int *d = gemm_shapes[s];
      test_gemm(t >> 1, t & 1, d[0], d[1], d[2], 0.0f, 0, 1);
      test_gemm(t >> 1, t & 1, d[0], d[1], d[2], 0.7f, 3, 1);
      test_gemm(t >> 1, t & 1, d[0], d[1], d[2], 0.0f, 2, 3);
      test_gemm(t >> 1, t & 1, d[0], d[1], d[2], 0.5f, 1, 4);
    }
  test_own_gemm();
  test_few_rows_gemm();
  test_linear_fwd();

  test_flat_ops(1);
  test_flat_ops(17);
  test_flat_ops(1001);
  test_gelu_tails();
  test_bias(5, 7, 2, 3, 1);
  test_bias(33, 300, 3, 4, 49);
  test_attention(2, 1, 8, 2);
  test_attention(2, 5, 12, 3);
  test_attention(1, 64, 16, 2);  /* one tile exactly */
  test_attention(2, 70, 16, 4);  /* a tile and a remainder of 6 */
  test_attention(1, 130, 8, 1);  /* three tiles */
  test_attention_nonfinite(backends[0], 70, 40); /* within the first diagonal tile */
  test_attention_nonfinite(backends[0], 70, 66); /* within the remainder's */
  test_attention_nonfinite(backends[0], 130, 100);
  test_gelu_bias_bwd(5, 7);
  test_gelu_bias_bwd(33, 300); /* two chunks of columns on cpu */
  test_gelu_bias_bwd(64, 1030);
  test_avgpool(6, 49);
  test_avgpool(3, 1);
  // windowed average pools: Inception's 3x3/1 pad 1, strided, unpadded, a 5x5 pad 2, odd sizes
  test_avgpool2d(4, 7, 7, 3, 1, 1);
  test_avgpool2d(3, 9, 8, 3, 2, 1);
  test_avgpool2d(2, 6, 5, 2, 2, 0);
  test_avgpool2d(2, 6, 7, 5, 1, 2);
  test_avgpool2d(3, 1, 1, 3, 1, 1); /* one pixel: 1/9 of it */
  // the columns of a concatenation: each part into its slice of a wider row, and its gradient back
  test_copy_cols(5, 7, 7, 12);
  test_copy_cols(3, 5, 12, 5);
  test_copy_cols(4, 300, 300, 1000);

  // per-axis padding: Inception's 1x7 (0,3), 7x1 (3,0), 1x3 (0,1), 3x1 (1,0), and a strided 3x1 (1,0)
  const int convs[][8] = {{3, 7, 7, 3, 3, 1, 1, 1}, {2, 8, 9, 3, 3, 2, 1, 1}, {3, 6, 5, 2, 3, 1, 0, 0},
                          {1, 9, 9, 3, 2, 2, 0, 0}, {2, 5, 5, 5, 5, 1, 2, 2}, {4, 8, 8, 1, 1, 1, 0, 0},
                          {2, 7, 6, 3, 1, 2, 1, 1}, {2, 4, 4, 3, 3, 2, 0, 0}, {2, 8, 9, 1, 7, 1, 0, 3},
                          {2, 9, 8, 7, 1, 1, 3, 0}, {3, 6, 5, 1, 3, 1, 0, 1}, {3, 5, 6, 3, 1, 1, 1, 0},
                          {2, 9, 7, 3, 1, 2, 1, 0}};
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
    test_conv_lowering(convs[i][0], convs[i][1], convs[i][2], convs[i][3], convs[i][4], convs[i][5], convs[i][6],
                       convs[i][7]);
  // conv over a batch with per-axis padding (the cpu backend's lowered path; the direct one takes
  // square kernels only): 1x7 (0,3) and 7x1 (3,0) on 17x17 as Mixed_6*, 1x3 / 3x1 as Mixed_7*, a
  // 3x3 padded only in rows, strided
  for (int tight = 0; tight < 2; tight++) {
    test_conv_rect(3, 4, 17, 17, 5, 1, 7, 1, 0, 3, 0, 1, tight);
    test_conv_rect(3, 4, 17, 17, 5, 7, 1, 1, 3, 0, 1, 0, tight);
  }
  test_conv_rect(4, 6, 8, 8, 7, 1, 3, 1, 0, 1, 0, 1, 0);
  test_conv_rect(4, 6, 8, 8, 7, 3, 1, 1, 1, 0, 1, 1, 0);
  test_conv_rect(3, 3, 9, 10, 4, 3, 3, 2, 1, 0, 1, 0, 0);
  // conv over a batch: odd sizes, strides, padding, 1x1, blocks of one and of several samples
  for (int tight = 0; tight < 2; tight++) {
    test_conv_batch(5, 3, 7, 7, 4, 3, 1, 1, 1, 0, tight);
    test_conv_batch(3, 2, 8, 9, 3, 3, 2, 1, 1, 1, tight);
    test_conv_batch(4, 4, 6, 5, 2, 1, 1, 0, 1, 0, tight);
    test_conv_batch(3, 3, 7, 7, 5, 1, 2, 0, 0, 0, tight);
    test_conv_batch(2, 2, 5, 5, 3, 5, 1, 2, 1, 1, tight);
    test_conv_batch(1, 1, 4, 4, 2, 3, 1, 0, 0, 1, tight);
  }
  test_conv_batch(50, 2, 5, 5, 3, 3, 1, 1, 1, 1, 0); /* blocks of 20, 20 and 10 samples */
  test_conv_batch(50, 2, 7, 7, 3, 3, 1, 0, 1, 1, 0); /* pad 0: lowered in blocks on every CPU (no direct path) */
  // the direct path's remainders: channels past a tile of 8 (12 out, 10 in), positions past a tile
  // of 48 (9x11), taps past a group of 6 (27), rows past a group of 4 (6), a partial last block
  test_conv_batch(7, 10, 9, 11, 12, 3, 1, 1, 1, 1, 0);
  test_conv_batch(9, 3, 28, 28, 6, 3, 1, 1, 1, 0, 0);
  // stride 2 on even sizes (direct: phases of the input, the input gradient by parity): 3x3 with
  // output channels past a tile (20), 1x1 (parities no tap reaches), 5x5, resnet-mini's downsampling
  // convolution in a partial last block (8 per block)
  test_conv_batch(5, 3, 8, 10, 20, 3, 2, 1, 1, 1, 0);
  test_conv_batch(4, 5, 6, 6, 9, 1, 2, 0, 1, 0, 0);
  test_conv_batch(3, 2, 10, 12, 4, 5, 2, 2, 0, 1, 0);
  test_conv_batch(11, 16, 28, 28, 32, 3, 2, 1, 1, 1, 0);
  test_conv_batch(1, 3, 2, 4, 5, 3, 2, 1, 1, 0, 0); /* one output row: phases of one row and the pad */
  test_gemm_tn_rows(5, 7, 3, 0);
  test_gemm_tn_rows(17, 9, 1300, 3); /* several row blocks */
  test_maxpool(3, 8, 8, 2, 2, 0, 0);
  test_maxpool(2, 9, 7, 3, 2, 0, 0);
  test_maxpool(2, 6, 6, 2, 1, 0, 0);
  test_maxpool(4, 8, 8, 2, 2, 0, 1);
  test_maxpool(3, 7, 9, 2, 2, 0, 1); /* odd sides: the 2x2 fast path drops the last row and column */
  test_maxpool(2, 6, 38, 2, 2, 0, 0); /* 19 outputs a row: the 2x2 fast path's second block of 16 */
  test_maxpool(2, 9, 9, 3, 2, 0, 1);
  // padded: ResNet's 3x3/2 pad 1 (odd and even sides), 3x3/1 pad 1, 2x2/2 pad 1 (not the fast path)
  test_maxpool(3, 9, 9, 3, 2, 1, 0);
  test_maxpool(2, 8, 10, 3, 2, 1, 1);
  test_maxpool(2, 7, 6, 3, 1, 1, 1);
  test_maxpool(2, 6, 6, 2, 2, 1, 0);

  test_layernorm(1, 5, 7);
  test_layernorm(3, 8, 64);
  test_layernorm(7, 9, 33); /* more rows than one block of the gradient sums */
  test_batchnorm(5, 3, 49);
  test_batchnorm(7, 8, 1); /* the 1-D form */
  test_batchnorm(4, 5, 196);
  test_batchnorm_chunks(16, 3, 49, 1e4f);
  test_embed(2, 5, 8, 11, 0, 11, 1);
  test_embed(3, 4, 13, 3, 0, 3, 1);
  test_embed(3, 6, 8, 12, 4, 4, 0);
  test_embed(2, 5, 9, 10, 5, 5, 1);
  test_embed_shards_sum(3, 6, 8, 12, 5);
  test_causal_softmax(3, 1);
  test_causal_softmax(3, 5);
  test_causal_softmax(2, 17);
  test_softmax_rows(1, 1);
  test_softmax_rows(6, 37);
  test_xent(6, 10, 0.0f, 3.0f);
  test_xent(5, 1000, 0.0f, 5.0f);
  test_xent(4, 37, 1000.0f, 30.0f);
  test_xent(4, 37, -5000.0f, 80.0f);
  test_xent_shards(7, 12, 3, 4.0f);
  test_xent_shards(5, 256, 4, 8.0f);

  for (int first = 1; first >= 0; first--) {
    test_sgd(1001, 0.9f, 0, 0.0f, first);
    test_sgd(1001, 0.9f, 1, 1e-2f, first);
  }
  test_sgd(1001, 0.0f, 0, 1e-2f, 0);
  test_orthonormalize(1, 7, 1, 0, NULL);
  test_orthonormalize(3, 40, 5, 3, NULL);
  test_orthonormalize(2, 300, 16, 0, NULL);
  orth_edit_t zero = {"with zero columns", orth_zero_columns}, span = {"row-sparse, in span", orth_sparse_in_span};
  test_orthonormalize(3, 40, 5, 3, &zero);
  test_orthonormalize(2, 4, 4, 0, &zero); /* r = n: the last column has one direction left */
  test_orthonormalize(2, 40, 4, 0, &span);
  test_long_sums();
  test_adamw(1001, 1, 0.0f);
  test_adamw(1001, 10, 1e-2f);
}

/* The cpu backend's ops at every kernel width (backend.simd: none, avx2, avx512), those this CPU
 * cannot execute skipped, saying why; then auto, the widest. */
static void test_every_width(void) {
  const backend_simd_t widths[] = {BACKEND_SIMD_NONE, BACKEND_SIMD_AVX2, BACKEND_SIMD_AVX512};
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
    const char *why = cpu_simd_use(widths[i]);
    if (why) {
      tap_skip("every op at simd = %s: %s", cpu_simd_name(widths[i]), why);
      continue;
    }
    tap_diag("every op at simd = %s", cpu_simd_name(widths[i]));
    tap_ok(cpu_simd() == widths[i], "simd = %s in use", cpu_simd_name(widths[i]));
    test_ops();
  }
  tap_ok(cpu_simd_use(BACKEND_SIMD_AUTO) == NULL && cpu_simd() == cpu_simd_best(), "simd = auto: the widest, %s",
         cpu_simd_name(cpu_simd()));
}

int main(int argc, char **argv) {
  rng_seed(&rng, 20240611);
  const int bf16 = argc > 1 && strcmp(argv[1], "cuda-bf16") == 0;
  if (bf16) {
    char why[400];
    if (!open_gpu(BACKEND_BF16, why, sizeof why)) {
      printf("1..0 # SKIP no GPU: %s\n", why);
      return 77;
    }
    /* the tensor-core attention (attention_kernels = auto: tiles in registers at hs 16, 32, 64) at a
     * tail (70 = a tile + 6), at GPT-2 124M's context and head size (1024, 64) and at hs 16; hs 40
     * (not a multiple of 16) takes the fp32 kernels: 1e-5; then the WMMA kernels in 64-row tiles
     * (wmma) and in 32-row tiles (wmma32), at T = 200 (3 tiles of 64 and a tail, 6 of 32 and a tail)
     * instead of 1024, whose ref took about 27 s a setting on an AMD EPYC core (4 backwards of 6.4 s) */
    agree_tol = BF16_ATT_TOL;
    test_attention(2, 70, 128, 2);
    test_attention(2, 1024, 256, 4);
    test_attention(1, 45, 32, 2);
    agree_tol = AGREE_TOL;
    test_attention(1, 70, 120, 3);
#if HAVE_CUDA
    const backend_attention_t others[] = {BACKEND_ATTENTION_WMMA, BACKEND_ATTENTION_WMMA32};
    for (int i = 0; i < 2; i++) {
      reopen_gpu_as(BACKEND_EPILOGUES_AUTO, BACKEND_BF16, others[i]);
      const char *name = others[i] == BACKEND_ATTENTION_WMMA ? "wmma" : "wmma32";
      tap_ok(strcmp(backend_cuda.context()->attention, name) == 0, "cuda reopened with attention_kernels = %s", name);
      agree_tol = BF16_ATT_TOL;
      test_attention(2, 70, 128, 2);
      test_attention(2, 200, 256, 4);
      agree_tol = AGREE_TOL;
    }
#endif
  } else if (argc > 1 && strcmp(argv[1], "cuda") == 0) {
    char why[400];
    if (!open_gpu(BACKEND_FP32, why, sizeof why)) {
      printf("1..0 # SKIP no GPU: %s\n", why);
      return 77;
    }
    test_memory(backends[0]);
    test_step_scalars(backends[0]);
    test_graphs(backends[0]);
    test_marks(backends[0]);
    /* the fused attention kernels at GPT-2's context, head sizes 64 and 128, and a head too wide for
     * their shared memory (the composed T x T form) */
    test_attention(2, 1024, 256, 4);
    test_attention(1, 1024, 256, 2);
    test_attention(1, 40, 640, 1);
#if HAVE_CUDA
    test_epilogues();
#endif
  } else {
    test_registry();
    test_denormal_mode();
    for (int k = 0; k < 2; k++) {
      test_context(backends[k]);
      test_memory(backends[k]);
      test_step_scalars(backends[k]);
      test_by_hand(backends[k]);
    }
    test_attention_memory(&backend_cpu);
    test_attention(1, 1024, 32, 2); /* GPT-2's context, in the workspace that asks O(T) */
  }

  if (!managed)
    test_every_width();
  else if (!bf16) /* (in bf16 every op's products are bf16: that mode checks the attention alone) */
    test_ops();

  tap_diag("worst %s-vs-ref relative difference: %.2e (tolerance %.0e)", backends[0]->name, worst_agreement, AGREE_TOL);
  return tap_done();
}
