/* precision = bf16 on the host backends (backend.h): every matrix product's operands rounded to
 * bfloat16, sums in float (cpu) or double (ref). core/bf16.h's rounding; ref's and cpu's products
 * against each other where both round the same operands (GEMMs through every kernel form, the
 * linear forward, weight gradients, convolutions, the attention: cpu normalises its probabilities
 * before they are rounded, as ref does), where fp32 would differ 100 times more; the opens that refuse
 * bf16. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu_ops.h"
#include "backend/cpu_team.h"
#include "core/bf16.h"
#include "core/rng.h"
#include "rel_diff.h"
#include "tap.h"

#define SAME_OPERANDS_TOL 1e-5 /* cpu and ref rounding the same operands: float against double sums */
#define FP32_APART 1e-4        /* bf16 against fp32 products at least this far apart (about 2^-9 relative) */

static rng_t rng;

static float *uniform(size_t n, float lo, float hi) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  if (!x) abort();
  rng_fill_uniform(&rng, x, n, lo, hi);
  return x;
}

static float *copy_of(const float *x, size_t n) {
  float *y = malloc((n ? n : 1) * sizeof *y);
  if (!y) abort();
  memcpy(y, x, n * sizeof *y);
  return y;
}

static backend_simd_t simd = BACKEND_SIMD_AUTO; /* the cpu's kernel width the checks run at */

/* Open both host backends in `precision` on this thread (they share it: host_mem.h), cpu at `simd`. */
static void open_host(backend_precision_t precision) {
  backend_options_t o = backend_default_options();
  o.precision = precision;
  o.simd = simd;
  int input_error = 0;
  const char *why = backend_cpu.open(&o, &input_error);
  if (!why) why = backend_ref.open(&o, &input_error);
  if (why) {
    printf("Bail out! host backends refused precision %d: %s\n", (int)precision, why);
    exit(1);
  }
}

static void test_rounding(void) {
  const struct {
    uint32_t in;
    uint16_t want;
  } cases[] = {
      {0x3f800000u, 0x3f80}, /* 1 */
      {0x3f808000u, 0x3f80}, /* 1 + 2^-8: a tie, to the even 1 */
      {0x3f818000u, 0x3f82}, /* 1 + 3 2^-8: a tie, to the even 1 + 2^-6 */
      {0x3f808001u, 0x3f81}, /* just past the tie: up */
      {0xbf807fffu, 0xbf80}, /* just below it, negative: down in magnitude */
      {0x7f7fffffu, 0x7f80}, /* FLT_MAX: past the largest bfloat16, to infinity */
      {0x80000000u, 0x8000}, /* -0 */
      {0x00000001u, 0x0000}, /* the smallest denormal: to 0 */
      {0x7f800000u, 0x7f80}, /* infinity */
  };
  int ok = 1;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float x;
    memcpy(&x, &cases[i].in, sizeof x);
    if (bf16_bits(x) != cases[i].want) {
      ok = 0;
      tap_diag("bf16_bits(0x%08x) = 0x%04x, want 0x%04x", cases[i].in, bf16_bits(x), cases[i].want);
    }
  }
  tap_ok(ok, "bf16_bits rounds to nearest, ties to even, overflow to infinity (%zu cases)",
         sizeof cases / sizeof cases[0]);
  const float nan_in = nanf(""), back = bf16_round(nan_in);
  uint32_t low_nan = 0x7f800001u; /* a NaN whose payload sits in the bits rounding drops */
  float low;
  memcpy(&low, &low_nan, sizeof low);
  tap_ok(isnan(back) && isnan(bf16_round(low)) && bf16_round(-1.5f) == -1.5f,
         "a NaN stays a NaN (also one whose payload is only in the low bits); a bfloat16 value is itself");
#if CPU_KERNELS_BUILT
  /* the cpu's vectorised form: the same bits for the cases above and 10000 values over 80 binades */
  enum { N = 10000 + sizeof cases / sizeof cases[0] + 2 };
  float x[N], y[N];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) memcpy(&x[i], &cases[i].in, sizeof x[i]);
  x[N - 2] = nan_in, x[N - 1] = low;
  for (int i = 0; i < 10000; i++) {
    float u;
    rng_fill_uniform(&rng, &u, 1, -40, 40);
    x[sizeof cases / sizeof cases[0] + i] = (i % 2 ? -1.0f : 1.0f) * exp2f(u);
  }
  cpu_round_bf16(x, y, N);
  int same = 1;
  for (int i = 0; i < N; i++) {
    const float want = bf16_round(x[i]);
    same = same && (isnan(want) ? isnan(y[i]) : memcmp(&want, &y[i], sizeof want) == 0);
  }
  tap_ok(same, "cpu_round_bf16 gives bf16_round's bits (%d values: the cases, NaNs, 80 binades)", (int)N);
  /* the kernels' form in registers (vf_round_bf16: the convolutions' planes, the packed strips), at
   * each width this CPU runs, over the same values and a tail of N % W */
  for (int w = 0; w < 2; w++) {
    if (cpu_simd_best() < (w == 0 ? BACKEND_SIMD_AVX512 : BACKEND_SIMD_AVX2)) continue;
    memset(y, 0, sizeof y);
    (w == 0 ? cpu_round_bf16_w16 : cpu_round_bf16_w8)(x, y, N);
    same = 1;
    for (int i = 0; i < N; i++) {
      const float want = bf16_round(x[i]);
      same = same && (isnan(want) ? isnan(y[i]) : memcmp(&want, &y[i], sizeof want) == 0);
    }
    tap_ok(same, "cpu_round_bf16_w%d gives bf16_round's bits (the same %d values)", w == 0 ? 16 : 8, (int)N);
  }
#endif
}

/* C = alpha op(A) op(B) + beta C by `gemm` and by ref in bf16, and by ref in fp32: the bf16 products
 * agree with ref's to float sums, and stand apart from fp32's. */
typedef void gemm_fn(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                     int ldb, float beta, float *C, int ldc);

static void check_gemm(const char *name, gemm_fn *gemm, int ta, int tb, int M, int N, int K, float beta) {
  const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
  const size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
  float *A = uniform(na, -1, 1), *B = uniform(nb, -1, 1), *C0 = uniform(nc, -1, 1);
  float *C = copy_of(C0, nc), *R = copy_of(C0, nc), *F = copy_of(C0, nc);
  gemm(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, C, ldc);
  backend_ref.gemm(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, R, ldc);
  open_host(BACKEND_FP32);
  backend_ref.gemm(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, F, ldc);
  open_host(BACKEND_BF16);
  const double d = rel_diff(C, R, nc), f = rel_diff(C, F, nc);
  tap_ok(d < SAME_OPERANDS_TOL && (f > FP32_APART || K == 1), /* K = 1: one product, no sum to tell apart */
         "%s ta=%d tb=%d M=%d N=%d K=%d beta=%g: %.1e from ref's bf16, %.1e from fp32", name, ta, tb, M, N, K,
         (double)beta, d, f);
  free(A), free(B), free(C0), free(C), free(R), free(F);
}

/* A kernel form on 1 and on 2 threads (cpu_gemm_team splits C's rows between them): the same bits, with the
 * team's parts on a worker, at shapes of several row blocks (MC 240 at 16 floats, 120 at 8), rows off the
 * strips of 12 or 6, two panels of k, transposes and beta. */
static void check_gemm_threads(const char *name, gemm_fn *gemm) {
  const int shapes[][5] = {{0, 1, 500, 70, 300}, {1, 0, 263, 129, 600}, {0, 0, 37, 1000, 700}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int ta = shapes[s][0], tb = shapes[s][1], M = shapes[s][2], N = shapes[s][3], K = shapes[s][4];
    const float beta = s == 1 ? 0.5f : 0.0f;
    const int lda = ta ? M : K, ldb = tb ? K : N;
    float *A = uniform((size_t)(ta ? K : M) * lda, -1, 1), *B = uniform((size_t)(tb ? N : K) * ldb, -1, 1);
    float *C1 = uniform((size_t)M * N, -1, 1), *C2 = copy_of(C1, (size_t)M * N);
    gemm(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, C1, N);
    const long parts = cpu_team_worker_parts();
    cpu_set_threads(2);
    gemm(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, C2, N);
    cpu_set_threads(1);
    const long ran = cpu_team_worker_parts() - parts;
    tap_ok(memcmp(C1, C2, (size_t)M * N * sizeof *C1) == 0 && ran > 0,
           "%s ta=%d tb=%d M=%d N=%d K=%d on 2 threads: the bits of 1 (%ld parts on a worker)", name, ta, tb, M, N, K,
           ran);
    free(A), free(B), free(C1), free(C2);
  }
}

/* Through the table (cpu_gemm's route: every shape to the bf16 kernel), and each kernel form itself. */
static void test_gemms(void) {
  /* one row (M = 1) takes cpu_bf16.c's matrix-vector product: K = 700, 17 and 5 leave 28, 17 and 5
   * past its 32-value vectors. Up to CPU_BF16_FEW_ROWS rows with B stored (N, K) take its dot products
   * of a few rows where the CPU has bfloat16 pairs: B's rows 4 at a time converted as read (M <= 8) or
   * once into a buffer (more), a's in blocks of 4; N and M off multiples of 4 leave partial blocks. */
  const int shapes[][3] = {{241, 47, 513}, {37, 2083, 30}, {1, 300, 700}, {1, 40, 17}, {1, 33, 5},
                           {300, 1, 1000}, {5, 7, 1},      {20, 40, 257}, {64, 64, 64}, {2, 3, 45},
                           {3, 33, 700},   {8, 5, 17},     {9, 41, 96},   {13, 18, 5},  {32, 66, 257}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 4; t++)
      check_gemm("cpu gemm", backend_cpu.gemm, t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2],
                 t == 3 ? 0.5f : 0.0f);
  /* at simd = avx2 the one-row product rounds as it reads, without bfloat16 pairs */
  simd = BACKEND_SIMD_AVX2;
  open_host(BACKEND_BF16);
  tap_ok(!cpu_gemm_bf16_pairs(), "at simd = avx2 no bfloat16 pairs run");
  for (int t = 0; t < 4; t++) check_gemm("cpu gemm at simd = avx2", backend_cpu.gemm, t >> 1, t & 1, 1, 40, 17, 0.0f);
  simd = BACKEND_SIMD_AUTO;
  open_host(BACKEND_BF16);
#if CPU_KERNELS_BUILT
  const backend_simd_t best = cpu_simd_best();
  struct {
    const char *name;
    gemm_fn *fn;
    int runs;
  } forms[] = {{"cpu_sgemm_bf16 (bf16 pairs)", cpu_sgemm_bf16, 0},
               {"cpu_sgemm_round_w16", cpu_sgemm_round_w16, best >= BACKEND_SIMD_AVX512},
               {"cpu_sgemm_round_w8", cpu_sgemm_round_w8, best >= BACKEND_SIMD_AVX2}};
  __builtin_cpu_init();
  forms[0].runs = best >= BACKEND_SIMD_AVX512 && __builtin_cpu_supports("avx512bf16");
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    if (!forms[f].runs) {
      tap_skip("%s: this CPU lacks its instructions", forms[f].name);
      continue;
    }
    check_gemm(forms[f].name, forms[f].fn, 0, 1, 241, 47, 513, 0.0f);
    check_gemm(forms[f].name, forms[f].fn, 1, 0, 37, 100, 257, 0.5f);
    check_gemm_threads(forms[f].name, forms[f].fn);
  }
  tap_ok(cpu_gemm_bf16_pairs() == forms[0].runs, "cpu_gemm runs the pairs form where the CPU has AVX-512 BF16 (%s)",
         forms[0].runs ? "here: yes" : "here: no");
#endif
}

/* An op through both tables in bf16: outputs within tol of ref's; fp32 ref's at least `apart` away
 * (0: not asked). run(be, out) fills out (n floats, zeroed first). */
typedef void op_run(const backend_t *be, float *out, const void *ctx);

static void check_op(const char *label, op_run *run, const void *ctx, size_t n, double tol, double apart) {
  float *c = calloc(n, sizeof *c), *r = calloc(n, sizeof *r), *f = calloc(n, sizeof *f);
  if (!c || !r || !f) abort();
  run(&backend_cpu, c, ctx);
  run(&backend_ref, r, ctx);
  open_host(BACKEND_FP32);
  run(&backend_ref, f, ctx);
  open_host(BACKEND_BF16);
  const double d = rel_diff(c, r, n), a = rel_diff(c, f, n);
  tap_ok(d < tol && (apart == 0 || a > apart), "%s: %.1e from ref's bf16 (tolerance %.0e), %.1e from fp32", label, d,
         tol, a);
  free(c), free(r), free(f);
}

typedef struct lin_ctx {
  int rows, out, in;
  const float *x, *w, *b;
} lin_ctx_t;

static void run_linear(const backend_t *be, float *y, const void *ctx) {
  const lin_ctx_t *l = ctx;
  size_t wn = linear_workspace_floats(l->out, l->in);
  float *ws = wn ? malloc(wn * sizeof *ws) : NULL;
  be->linear_fwd(l->rows, l->out, l->in, l->x, l->w, NULL, l->b, y, ws, wn);
  free(ws);
}

/* to_bf16 on both host backends: bf16_bits' bits for every value, the special ones included, at a length
 * off the vectors' (the copy of a forward-only model's weights, a training model's held activations); from_bf16
 * gives those values back as floats, exactly (bf16_value; a NaN's bits kept) */
static void test_to_bf16(void) {
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0xbf807fffu, 0x7f7fffffu, 0x80000000u,
                              0x00000001u, 0x7f800000u, 0xff800000u, 0x7fc00001u, 0xffa00000u};
  const size_t ns = sizeof special / sizeof special[0], n = 1000 + ns;
  float *x = uniform(n, -3e4f, 3e4f);
  for (size_t i = 0; i < ns; i++) memcpy(&x[37 * i + 5], &special[i], sizeof(float));
  uint16_t *y = malloc(n * sizeof *y);
  float *back = malloc(n * sizeof *back);
  if (!y || !back) abort();
  const backend_t *be[] = {&backend_cpu, &backend_ref};
  for (int b = 0; b < 2; b++) {
    memset(y, 0xab, n * sizeof *y);
    be[b]->to_bf16(n, x, y);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != bf16_bits(x[i]);
    tap_ok(bad == 0, "%s: to_bf16 gives bf16_bits of %zu values, infinities and NaNs among them (%zu differ)",
           be[b]->name, n, bad);
    memset(back, 0xab, n * sizeof *back);
    be[b]->from_bf16(n, y, back);
    bad = 0;
    for (size_t i = 0; i < n; i++) {
      const float v = bf16_value(y[i]);
      bad += memcmp(&back[i], &v, sizeof v) != 0;
    }
    tap_ok(bad == 0, "%s: from_bf16 gives those %zu values back as floats, bit for bit (%zu differ)", be[b]->name, n,
           bad);
  }
  free(x), free(y), free(back);
}

/* The GELU ops of `be` on x (n = rows x cols) in the precision open: y, dx written, dx added onto dy, dpre and db
 * (zero first) of gelu_bias_bwd, into out[0..4] (out[4]: cols floats). */
static void gelu_ops(const backend_t *be, int rows, int cols, const float *x, const float *dy, float *out[5]) {
  const size_t n = (size_t)rows * cols;
  be->gelu_fwd(n, x, out[0]);
  be->gelu_bwd(n, x, dy, out[1], 1);
  memcpy(out[2], dy, n * sizeof *dy);
  be->gelu_bwd(n, x, dy, out[2], 0);
  memset(out[4], 0, (size_t)cols * sizeof *out[4]);
  be->gelu_bias_bwd(rows, cols, x, dy, out[3], out[4]);
}

/* GELU reads its input rounded to bfloat16 in bf16, both ways (backend.h's gelu_fwd), as a product's operand is, so
 * an input held so (nn/act16.h: a linear's output before its GELU) gives the same bits: on both host backends,
 * gelu_fwd, gelu_bwd (written and added) and gelu_bias_bwd (with its bias sums) of x in bf16 are bitwise the fp32
 * ops of x rounded, and apart from the fp32 ops of x; linear_gelu_fwd's GELU output is gelu_fwd's of its own
 * pre-activation (the unfused pair's bits). */
static void test_gelu_rounds(void) {
  enum { ROWS = 37, COLS = 70 }; /* off the vectors' widths */
  const size_t n = (size_t)ROWS * COLS, sizes[5] = {n, n, n, n, COLS};
  float *x = uniform(n, -4, 4), *dy = uniform(n, -1, 1), *xr = copy_of(x, n);
  for (size_t i = 0; i < n; i++) xr[i] = bf16_round(x[i]);
  const backend_t *be[] = {&backend_cpu, &backend_ref};
  for (int b = 0; b < 2; b++) {
    float *o[3][5]; /* fp32 of xr, bf16 of x, fp32 of x */
    for (int k = 0; k < 3; k++)
      for (int t = 0; t < 5; t++) o[k][t] = uniform(sizes[t], 0, 1);
    open_host(BACKEND_FP32);
    gelu_ops(be[b], ROWS, COLS, xr, dy, o[0]);
    gelu_ops(be[b], ROWS, COLS, x, dy, o[2]);
    open_host(BACKEND_BF16);
    gelu_ops(be[b], ROWS, COLS, x, dy, o[1]);
    int same = 1, apart = 1;
    for (int t = 0; t < 5; t++) {
      same &= memcmp(o[0][t], o[1][t], sizes[t] * sizeof(float)) == 0;
      apart &= memcmp(o[2][t], o[1][t], sizes[t] * sizeof(float)) != 0;
    }
    tap_ok(same && apart, "%s in bf16: gelu_fwd, gelu_bwd (written, added) and gelu_bias_bwd of x are bitwise the fp32 "
           "ops of x rounded to bfloat16 (%d rows x %d), and not those of x", be[b]->name, ROWS, COLS);
    /* the fused forward: its y against gelu_fwd of the pre-activation it kept */
    const int in = 40;
    float *xi = uniform((size_t)ROWS * in, -1, 1), *w = uniform((size_t)COLS * in, -1, 1), *bias = uniform(COLS, -1, 1);
    float *pre = uniform(n, 0, 1), *y = uniform(n, 0, 1), *y2 = uniform(n, 0, 1);
    const size_t wn = linear_workspace_floats(COLS, in);
    float *ws = malloc(wn * sizeof *ws);
    if (!ws) abort();
    be[b]->linear_gelu_fwd(ROWS, COLS, in, xi, w, NULL, bias, pre, y, ws, wn);
    be[b]->gelu_fwd(n, pre, y2);
    tap_ok(memcmp(y, y2, n * sizeof *y) == 0, "%s in bf16: linear_gelu_fwd's GELU output is gelu_fwd's of its "
           "pre-activation, bit for bit", be[b]->name);
    free(xi), free(w), free(bias), free(pre), free(y), free(y2), free(ws);
    for (int k = 0; k < 3; k++)
      for (int t = 0; t < 5; t++) free(o[k][t]);
  }
  free(x), free(dy), free(xr);
}

/* attention_bwd in bf16 reads its output y only rounded to bfloat16 (its D = rowsum(dY Y) is a product of rounded
 * operands, backend.h), so y may be held rounded (nn/act16.h): on cpu and ref, y and y rounded give the same bits
 * in bf16, and different ones in fp32 (the test sees the rounding). y and lse from the backend's own forward. */
static void test_attention_reads_rounded(void) {
  const int B = 2, T = 70, C = 64, H = 2; /* T past one of cpu's tiles */
  const size_t nqkv = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, wn = attention_workspace_floats(T, C / H);
  float *qkv = uniform(nqkv, -2, 2), *dy = uniform(ny, -1, 1), *y = malloc(ny * sizeof *y);
  float *yr = malloc(ny * sizeof *yr);
  float *lse = malloc((size_t)B * H * T * sizeof *lse), *ws = malloc((wn ? wn : 1) * sizeof *ws);
  float *d[2] = {malloc(nqkv * sizeof(float)), malloc(nqkv * sizeof(float))};
  if (!y || !yr || !lse || !ws || !d[0] || !d[1]) abort();
  const backend_t *be[] = {&backend_cpu, &backend_ref};
  for (int b = 0; b < 2; b++) {
    int same[2];
    for (int bf16 = 0; bf16 < 2; bf16++) {
      open_host(bf16 ? BACKEND_BF16 : BACKEND_FP32);
      be[b]->attention_fwd(B, T, C, H, qkv, y, lse, ws, wn);
      for (size_t i = 0; i < ny; i++) yr[i] = bf16_round(y[i]);
      be[b]->attention_bwd(B, T, C, H, qkv, y, lse, dy, d[0], 1, ws, wn);
      be[b]->attention_bwd(B, T, C, H, qkv, yr, lse, dy, d[1], 1, ws, wn);
      same[bf16] = memcmp(d[0], d[1], nqkv * sizeof(float)) == 0;
    }
    tap_ok(same[1] && !same[0], "%s: attention_bwd reads y rounded to bfloat16 in bf16 (y and y rounded give the same "
           "bits), and y as it is in fp32", be[b]->name);
  }
  free(qkv), free(dy), free(y), free(yr), free(lse), free(ws), free(d[0]), free(d[1]);
}

/* linear_fwd and linear_gelu_fwd given the weight's bfloat16 copy (w16, as a forward-only model's:
 * model_weights16) give the bits they give without it, at one row, at a few (4 at a time, up to
 * CPU_BF16_FEW_ROWS: where the copy is read) and past them, with tails of K off the 32-value vectors. */
static void check_w16_bits(const char *where) {
  const int shapes[][3] = {{1, 300, 700}, {1, 33, 5},     {3, 33, 70},  {8, 5, 17},
                           {9, 41, 96},   {32, 66, 257}, {33, 20, 64}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int rows = shapes[s][0], out = shapes[s][1], in = shapes[s][2];
    const size_t ny = (size_t)rows * out, wn = linear_workspace_floats(out, in);
    float *x = uniform((size_t)rows * in, -1, 1), *w = uniform((size_t)out * in, -1, 1);
    float *b = uniform((size_t)out, -1, 1);
    float *y[2], *pre[2], *ws = malloc((wn ? wn : 1) * sizeof *ws);
    uint16_t *w16 = malloc((size_t)out * in * sizeof *w16);
    if (!ws || !w16) abort();
    backend_cpu.to_bf16((size_t)out * in, w, w16);
    int same = 1;
    for (int k = 0; k < 2; k++) {
      y[k] = uniform(ny, 0, 1), pre[k] = uniform(ny, 0, 1);
      backend_cpu.linear_fwd(rows, out, in, x, w, k ? w16 : NULL, b, y[k], ws, wn);
    }
    same &= memcmp(y[0], y[1], ny * sizeof(float)) == 0;
    for (int k = 0; k < 2; k++)
      backend_cpu.linear_gelu_fwd(rows, out, in, x, w, k ? w16 : NULL, s % 2 ? NULL : b, pre[k], y[k], ws, wn);
    same &= memcmp(y[0], y[1], ny * sizeof(float)) == 0 && memcmp(pre[0], pre[1], ny * sizeof(float)) == 0;
    /* where the copy is read, a copy of other weights (w + 1) shows in y; elsewhere it does not */
    const int reads = rows == 1 || (rows <= CPU_BF16_FEW_ROWS && cpu_gemm_bf16_pairs());
    float *w1 = copy_of(w, (size_t)out * in);
    for (size_t i = 0; i < (size_t)out * in; i++) w1[i] += 1.0f;
    backend_cpu.to_bf16((size_t)out * in, w1, w16);
    backend_cpu.linear_fwd(rows, out, in, x, w, NULL, b, y[0], ws, wn);
    backend_cpu.linear_fwd(rows, out, in, x, w, w16, b, y[1], ws, wn);
    const int shows = memcmp(y[0], y[1], ny * sizeof(float)) != 0;
    tap_ok(same && shows == reads, "%s: linear_fwd and linear_gelu_fwd rows=%d out=%d in=%d: the same bits with the "
           "bfloat16 copy, which is read %s", where, rows, out, in, reads ? "(another copy shows)" : "nowhere here");
    free(w1);
    for (int k = 0; k < 2; k++) free(y[k]), free(pre[k]);
    free(x), free(w), free(b), free(ws), free(w16);
  }
}

/* [backend] threads = 2 splits the products of a few rows over a team (cpu_team.h): the same bits as one
 * thread, with and without the weight's copy, and the team ran (parts on a worker). Shapes large enough
 * for two parts, N off a multiple of 4 (a part's last block partial). */
static void check_threads(const char *where) {
  const int shapes[][3] = {{1, 300, 700}, {1, 1030, 130}, {4, 522, 600}, {9, 301, 512}, {32, 258, 520}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    float *x = uniform((size_t)M * K, -1, 1), *w = uniform((size_t)N * K, -1, 1), *y[4];
    uint16_t *w16 = malloc((size_t)N * K * sizeof *w16);
    if (!w16) abort();
    backend_cpu.to_bf16((size_t)N * K, w, w16);
    const long parts = cpu_team_worker_parts();
    for (int k = 0; k < 4; k++) { /* threads 1, 2; without the copy, with it */
      cpu_set_threads(k % 2 ? 2 : 1);
      y[k] = uniform((size_t)M * N, 0, 1);
      backend_cpu.linear_fwd(M, N, K, x, w, k / 2 ? w16 : NULL, NULL, y[k], NULL, 0);
    }
    /* the products of a few rows split; without the pairs, more than one row takes the packed GEMM, which
     * splits only strips of 12 rows and more than 2^21 multiply-adds a part */
    const int few = M == 1 || cpu_gemm_bf16_pairs(), packed = !few && cpu_gemm_team(M, N, K) > 1;
    cpu_set_threads(1);
    const size_t bytes = (size_t)M * N * sizeof(float);
    const long ran = cpu_team_worker_parts() - parts;
    tap_ok(memcmp(y[0], y[1], bytes) == 0 && memcmp(y[2], y[3], bytes) == 0 && memcmp(y[0], y[2], bytes) == 0 &&
               (few ? ran == 2 : packed ? ran > 0 : ran == 0),
           "%s: linear_fwd rows=%d out=%d in=%d on 2 threads: the bits of 1, with and without the copy (%ld parts "
           "on a worker%s)", where, M, N, K, ran, few ? "" : packed ? ": the packed GEMM's" : ": too small to split");
    for (int k = 0; k < 4; k++) free(y[k]);
    free(x), free(w), free(w16);
  }
}

/* A key/value cache's products with the cache in bfloat16 (gen/engine_cache.c, where the context says kv16):
 * gemm_grid_b16 gives the bits gemm_grid gives for the cache's values as floats, on 1 thread and on 2, and is
 * within float sums of ref's; at one query a sequence and head (the scores against the keys, tb = 1; the values'
 * weighted sum, tb = 0, at a length past the team's split), at a few rows and past them (the widened path). The
 * grid is 2 x 3 matrices, its operands off their rows' ends (lda, ldb, strides). */
static void check_cache_bits(const char *where) {
  const int shapes[][3] = {{1, 2100, 64}, {1, 64, 2100}, {3, 37, 64}, {40, 64, 70}}; /* M, N, K */
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int tb = 0; tb < 2; tb++) {
      const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], lda = K + 2, ldb = (tb ? K : N) + 5;
      const size_t a1 = (size_t)M * lda, b1 = (size_t)(tb ? N : K) * ldb + 3, c1 = (size_t)M * N;
      const gemm_grid_t g = {{2, 3}, {3 * a1, a1}, {3 * b1, b1}, {3 * c1, c1}};
      float *A = uniform(6 * a1, -1, 1), *B = uniform(6 * b1, -1, 1), *y[4];
      uint16_t *B16 = malloc(6 * b1 * sizeof *B16);
      if (!B16) abort();
      backend_cpu.to_bf16(6 * b1, B, B16);
      for (size_t i = 0; i < 6 * b1; i++) B[i] = bf16_value(B16[i]); /* the values the cache holds */
      const long parts = cpu_team_worker_parts();
      for (int k = 0; k < 4; k++) { /* gemm_grid on floats; gemm_grid_b16 on 1 thread, 2; ref's */
        y[k] = uniform(6 * c1, -1, 1);
        cpu_set_threads(k == 2 ? 2 : 1);
        if (k == 0) backend_cpu.gemm_grid(0, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, y[k], N, &g);
        else {
          const backend_t *be = k < 3 ? &backend_cpu : &backend_ref;
          be->gemm_grid_b16(0, tb, M, N, K, 1.0f, A, lda, B16, ldb, 0.0f, y[k], N, &g);
        }
      }
      cpu_set_threads(1);
      const size_t bytes = 6 * c1 * sizeof(float);
      const double d = rel_diff(y[1], y[3], 6 * c1);
      const long ran = cpu_team_worker_parts() - parts; /* the long products split (2^17 of B's elements) */
      tap_ok(memcmp(y[0], y[1], bytes) == 0 && memcmp(y[1], y[2], bytes) == 0 && d < SAME_OPERANDS_TOL &&
                 (M > 1 || (ran > 0) == ((double)N * K >= 131072)),
             "%s: gemm_grid_b16 tb=%d M=%d N=%d K=%d: gemm_grid's bits on the floats, 1 thread and 2 (%ld parts on a "
             "worker); %.1e from ref's", where, tb, M, N, K, ran, d);
      for (int k = 0; k < 4; k++) free(y[k]);
      free(A), free(B), free(B16);
    }
}

static void test_weights16(void) {
  const int rows16 = cpu_gemm_bf16_pairs() ? CPU_BF16_FEW_ROWS : 1;
  tap_ok(backend_cpu.context()->weights16_rows == rows16 && backend_ref.context()->weights16_rows == 0,
         "in bf16 cpu's context says weights16_rows = %d (its products of so many rows read a copy), ref's 0",
         backend_cpu.context()->weights16_rows);
  check_w16_bits("cpu");
  check_threads("cpu");
  check_cache_bits("cpu");
  simd = BACKEND_SIMD_AVX2; /* no pairs: the one-row product reads the copy's values, the rest its floats */
  open_host(BACKEND_BF16);
  check_w16_bits("cpu at simd = avx2");
  check_threads("cpu at simd = avx2");
  check_cache_bits("cpu at simd = avx2");
  simd = BACKEND_SIMD_AUTO;
  open_host(BACKEND_FP32);
  tap_ok(backend_cpu.context()->weights16_rows == 0, "in fp32 cpu's context says weights16_rows = 0");
  open_host(BACKEND_BF16);
}

static void run_tn_rows(const backend_t *be, float *c, const void *ctx) { /* C (in, out) += X^T W over rows */
  const lin_ctx_t *l = ctx;
  be->gemm_tn_rows(l->in, l->out, l->rows, l->x, l->in, l->w, l->out, c, l->out);
}

typedef struct conv_ctx {
  conv_shape_t s;
  int B;
  const float *x, *w, *bias, *dy, *relu_y;
  int part; /* 0: y, 1: dx, 2: dw, 3: db (through a fused ReLU whose output is relu_y) */
} conv_ctx_t;

static void run_conv(const backend_t *be, float *out, const void *ctx) {
  const conv_ctx_t *k = ctx;
  const size_t wn = conv_workspace_floats(&k->s);
  float *ws = malloc((wn ? wn : 1) * sizeof *ws);
  if (!ws) abort();
  if (k->part == 0) be->conv_fwd(&k->s, k->B, k->x, k->w, k->bias, 0, out, ws, wn);
  else be->conv_bwd(&k->s, k->B, k->x, k->w, k->dy, k->part == 3 ? k->relu_y : NULL, k->part == 1 ? out : NULL, 1,
                    k->part == 2 ? out : NULL, k->part == 3 ? out : NULL, ws, wn);
  free(ws);
}

typedef struct att_ctx {
  int B, T, C, H, bwd;
  const float *qkv, *dy;
} att_ctx_t;

static void run_attention(const backend_t *be, float *out, const void *ctx) {
  const att_ctx_t *a = ctx;
  const size_t wn = attention_workspace_floats(a->T, a->C / a->H), ny = (size_t)a->B * a->T * a->C;
  float *ws = malloc((wn ? wn : 1) * sizeof *ws), *y = malloc(ny * sizeof *y),
        *lse = malloc((size_t)a->B * a->H * a->T * sizeof *lse);
  if (!ws || !y || !lse) abort();
  be->attention_fwd(a->B, a->T, a->C, a->H, a->qkv, a->bwd ? y : out, lse, ws, wn);
  if (a->bwd) be->attention_bwd(a->B, a->T, a->C, a->H, a->qkv, y, lse, a->dy, out, 1, ws, wn);
  free(ws), free(y), free(lse);
}

static void test_ops(void) {
  /* 64 rows of 784 into 512: fp32 takes the unpacked tiles here (cpu_linear.c); bf16 the GEMM's forms */
  lin_ctx_t l = {64, 512, 784, NULL, NULL, NULL};
  float *x = uniform((size_t)l.rows * l.in, -1, 1), *w = uniform((size_t)l.out * l.in, -1, 1), *b = uniform(512, -1, 1);
  l.x = x, l.w = w, l.b = b;
  check_op("linear_fwd rows=64 out=512 in=784", run_linear, &l, (size_t)l.rows * l.out, SAME_OPERANDS_TOL, FP32_APART);
  free(x), free(w);
  /* weight gradients over 2100 rows: blocks of 1024 rows added in double */
  lin_ctx_t g = {2100, 90, 70, NULL, NULL, NULL};
  x = uniform((size_t)g.rows * g.in, -1, 1), w = uniform((size_t)g.rows * g.out, -1, 1);
  g.x = x, g.w = w;
  check_op("gemm_tn_rows M=70 N=90 K=2100", run_tn_rows, &g, (size_t)g.in * g.out, SAME_OPERANDS_TOL, FP32_APART);
  free(x), free(w), free(b);

  /* "same" 3x3 convolutions at stride 1 and 2, which the cpu runs on its direct kernels (bf16's operands
   * rounded as they are padded and packed: cpu_direct_kern.h), and one at stride 3, which it lowers to the
   * bf16 GEMM;
   * the bias gradient is no product (as fp32's, through a fused ReLU's mask) */
  const int strides[] = {1, 2, 3};
  for (int si = 0; si < 3; si++) {
    conv_ctx_t k = {conv_shape_make(8, 12, 12, 16, 3, 3, strides[si], 1, 1), 3, NULL, NULL, NULL, NULL, NULL, 0};
    const size_t nx = (size_t)k.B * 8 * 12 * 12, ny = (size_t)k.B * 16 * k.s.OH * k.s.OW, nw = (size_t)16 * 8 * 9;
    float *cx = uniform(nx, -1, 1), *cw = uniform(nw, -1, 1), *cb = uniform(16, -1, 1), *cdy = uniform(ny, -1, 1),
          *cy = uniform(ny, -1, 1);
    k.x = cx, k.w = cw, k.bias = cb, k.dy = cdy, k.relu_y = cy;
    const char *parts[] = {"conv_fwd y", "conv_bwd dx", "conv_bwd dw", "conv_bwd db through a ReLU"};
    const size_t sizes[] = {ny, nx, nw, 16};
    for (k.part = 0; k.part < 4; k.part++) {
      char label[96];
      snprintf(label, sizeof label, "%s C=8 12x12 O=16 3x3 pad 1 stride %d B=3", parts[k.part], strides[si]);
      check_op(label, run_conv, &k, sizes[k.part], SAME_OPERANDS_TOL, k.part == 3 ? 0 : FP32_APART);
    }
    free(cx), free(cw), free(cb), free(cdy), free(cy);
  }

  att_ctx_t a = {2, 70, 64, 2, 0, NULL, NULL};
  float *qkv = uniform((size_t)a.B * a.T * 3 * a.C, -2, 2), *dy = uniform((size_t)a.B * a.T * a.C, -1, 1);
  a.qkv = qkv, a.dy = dy;
  check_op("attention_fwd B=2 T=70 C=64 H=2", run_attention, &a, (size_t)a.B * a.T * a.C, SAME_OPERANDS_TOL,
           FP32_APART);
  a.bwd = 1;
  check_op("attention_bwd B=2 T=70 C=64 H=2 (dqkv)", run_attention, &a, (size_t)a.B * a.T * 3 * a.C, SAME_OPERANDS_TOL,
           FP32_APART);
  free(qkv), free(dy);
}

/* What the opens say: both host backends take bf16 and report it; cpu refuses it where its own
 * kernels are off (simd = none), naming the key; a later fp32 open turns it off again. */
static void test_opens(void) {
  open_host(BACKEND_BF16);
  tap_ok(strcmp(backend_cpu.context()->precision, "bf16") == 0 && strcmp(backend_ref.context()->precision, "bf16") == 0,
         "cpu and ref opened in bf16 report precision bf16");
  tap_ok(backend_cpu.context()->act16 && backend_ref.context()->act16,
         "cpu and ref in bf16 hold activations in bfloat16 (act16) unless told otherwise");
  backend_options_t o = backend_default_options();
  o.precision = BACKEND_BF16;
  o.bf16_activations = 0;
  int err = 0;
  tap_ok(!backend_cpu.open(&o, &err) && !backend_cpu.context()->act16 && !backend_ref.open(&o, &err) &&
             !backend_ref.context()->act16,
         "in bf16 with bf16_activations = 0 ([backend] activations = float32) neither does");
  o = backend_default_options();
  o.precision = BACKEND_BF16;
  o.simd = BACKEND_SIMD_NONE;
  int input_error = 0;
  const char *why = backend_cpu.open(&o, &input_error);
  tap_ok(why && input_error && strstr(why, "bf16") && strstr(why, "simd"), "cpu refuses bf16 with simd = none: %s",
         why ? why : "(accepted)");
  open_host(BACKEND_FP32);
  tap_ok(strcmp(backend_cpu.context()->precision, "fp32") == 0 && !backend_cpu.context()->act16,
         "an fp32 open after it reports fp32, and no activations in bfloat16");
  open_host(BACKEND_BF16);
}

int main(void) {
  rng_seed(&rng, 20261205);
  test_rounding();
  if (!CPU_KERNELS_BUILT || cpu_simd_best() == BACKEND_SIMD_NONE) {
    tap_skip("the cpu backend's bf16 products: its own kernels are not built or this CPU has no AVX2 + FMA");
    return tap_done();
  }
  test_opens();
  test_gemms();
  test_ops();
  test_to_bf16();
  test_gelu_rounds();
  test_attention_reads_rounded();
  test_weights16();
  return tap_done();
}
