/* make bench BENCH=gemm: the cpu backend's own packed SGEMM (cpu_gemm_kern.h) at each vector width
 * this CPU runs, against OpenBLAS's cblas_sgemm, at the gpt bench deck's shapes (4 x 256, context
 * 128, batch 16: 2048 rows; widths 256, 768 = 3 x 256, 1024 = 4 x 256; the weight gradients'
 * 1024-row blocks; attention's 64 x 64 tiles) and a few square ones, one thread.
 *
 *   bench/bench_gemm [rounds]        (default 7)
 *
 * Per shape the methods alternate (blas, w16, w8, bf16, blas, ...) for `rounds` rounds, each round
 * timing as many calls as fill 0.05 s; the table gives each one's median GFLOP/s and own / blas.
 * Where the CPU has AVX-512 BF16, precision = bf16's packed GEMM in bfloat16 pairs (cpu_sgemm_bf16)
 * runs too, with its ratio to the own float kernel at 16 floats. Then the products of a few rows times
 * a weight (generation's samples): in fp32 the few-row kernel against OpenBLAS and the own packed
 * kernel, and in bf16 (with AVX-512 BF16) the packed pairs against the dot products cpu_gemm gives
 * them instead. Last, in bf16, a generated token's attention products against a key/value cache held in
 * floats and in bfloat16 (gen/engine_cache.c), at GPT-2 124M's heads, 8 sequences, by length.
 * The CPU's name and the load average are printed before and after: read the ratios, not the
 * rates, on a shared machine. Before the table, the core's float multiply-add peak at each width
 * (independent FMA chains, nothing loaded) with its best round, and each own kernel's share of it in
 * the table: what the kernels leave to gain. */
#include <cblas.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu_ops.h"
#include "core/error.h"

typedef void (*gemm_fn)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        int ldb, float beta, float *C, int ldc);

static void blas_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                      int ldb, float beta, float *C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

#if CPU_KERNELS_BUILT
static void few_rows_w16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                         int ldb, float beta, float *C, int ldc) {
  (void)ta, (void)tb; /* A as stored, B stored (N, K) */
  cpu_gemm_rows_w16(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
static void few_rows_w8(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        int ldb, float beta, float *C, int ldc) {
  (void)ta, (void)tb;
  cpu_gemm_rows_w8(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
#endif

typedef struct shape {
  const char *what;
  int ta, tb, M, N, K;
  float beta;
} shape_t;

/* gpt (bench_models' deck): forward Y = X W^T, input gradient dX = dY W, weight gradient dW += dY^T X
 * over a block of 1024 rows (cpu_gemm_tn_rows), attention's tiles */
static const shape_t shapes[] = {
    {"gpt qkv fwd", 0, 1, 2048, 768, 256, 0.0f},      {"gpt proj fwd", 0, 1, 2048, 256, 256, 0.0f},
    {"gpt fc1 fwd", 0, 1, 2048, 1024, 256, 0.0f},     {"gpt fc2 fwd", 0, 1, 2048, 256, 1024, 0.0f},
    {"gpt qkv dx", 0, 0, 2048, 256, 768, 0.0f},       {"gpt fc1 dx", 0, 0, 2048, 256, 1024, 0.0f},
    {"gpt fc2 dx", 0, 0, 2048, 1024, 256, 0.0f},      {"gpt qkv dw", 1, 0, 768, 256, 1024, 0.0f},
    {"gpt fc1 dw", 1, 0, 1024, 256, 1024, 0.0f},      {"gpt fc2 dw", 1, 0, 256, 1024, 1024, 0.0f},
    {"gpt proj dw", 1, 0, 256, 256, 1024, 0.0f},      {"attn QK^T", 0, 1, 64, 64, 64, 0.0f},
    {"attn PV", 0, 0, 64, 64, 64, 1.0f},              {"attn P^T dY", 1, 0, 64, 64, 64, 1.0f},
    {"small 16^3", 0, 0, 16, 16, 16, 0.0f},           {"small 32^3", 0, 1, 32, 32, 32, 0.0f},
    {"square 512", 0, 0, 512, 512, 512, 0.0f},        {"square 2048", 0, 0, 2048, 2048, 2048, 0.0f},
    {"odd 1000x300x77", 1, 1, 1000, 300, 77, 0.5f},
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#if CPU_KERNELS_BUILT
/* The float multiply-add peak of one core at a width: 12 independent chains of FMAs (more than the
 * pipes times the latency on every x86 with FMA), nothing loaded or stored, for about 0.05 s;
 * GFLOP/s with a multiply-add counted as 2. The chains' sum goes to a volatile so the loop stays. */
static volatile float fma_sink;
#define FMA_PEAK_CHAINS 12
#define FMA_PEAK_BODY(vec, set1, fmadd, add, lanes)                                                            \
  vec a[FMA_PEAK_CHAINS];                                                                                    \
  const vec x = set1(0.999999f), y = set1(1e-6f);                                                            \
  for (int c = 0; c < FMA_PEAK_CHAINS; c++) a[c] = set1((float)c);                                           \
  const double t0 = now();                                                                                   \
  long iters = 0;                                                                                            \
  do {                                                                                                       \
    for (int i = 0; i < 4096; i++) {                                                                         \
      _Pragma("GCC unroll 12") for (int c = 0; c < FMA_PEAK_CHAINS; c++) a[c] = fmadd(a[c], x, y);           \
    }                                                                                                        \
    iters += 4096;                                                                                           \
  } while (now() - t0 < 0.05);                                                                               \
  const double t = now() - t0;                                                                               \
  vec s = a[0];                                                                                              \
  for (int c = 1; c < FMA_PEAK_CHAINS; c++) s = add(s, a[c]);                                                \
  float v[lanes];                                                                                            \
  memcpy(v, &s, sizeof v);                                                                                   \
  fma_sink = v[0];                                                                                           \
  return 2.0 * lanes * FMA_PEAK_CHAINS * (double)iters / t * 1e-9;

__attribute__((target("avx512f"))) static double fma_peak_w16(void) {
  FMA_PEAK_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, 16)
}
__attribute__((target("avx2,fma"))) static double fma_peak_w8(void) {
  FMA_PEAK_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, 8)
}

/* The best of `rounds` measurements of fn (the peak is a ceiling: the best round is the one least
 * disturbed by the machine's other work). */
static double fma_peak(double (*fn)(void), int rounds) {
  double best = 0.0;
  for (int r = 0; r < rounds; r++) {
    const double g = fn();
    if (g > best) best = g;
  }
  return best;
}
#endif

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void print_load(const char *when) {
  double l[3] = {0};
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = NAN;
    fclose(f);
  }
  printf("# load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

static void print_cpu(void) {
  char line[256], name[256] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0) {
      const char *v = strchr(line, ':');
      snprintf(name, sizeof name, "%s", v ? v + 2 : line);
      name[strcspn(name, "\n")] = 0;
      break;
    }
  if (f) fclose(f);
  printf("# CPU: %s\n", name);
}

/* GFLOP/s of one round: calls of fn on the shape until 0.05 s have passed. */
static double round_gflops(gemm_fn fn, const shape_t *s, const float *A, const float *B, float *C) {
  const int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
  const double t0 = now();
  double t = t0;
  long calls = 0;
  while (t - t0 < 0.05) {
    fn(s->ta, s->tb, s->M, s->N, s->K, 1.0f, A, lda, B, ldb, s->beta, C, s->N);
    calls++;
    t = now();
  }
  return 2.0 * s->M * s->N * s->K * (double)calls / (t - t0) * 1e-9;
}

/* med[f] = the median GFLOP/s of fns[f] on the shape over `rounds` rounds, the functions alternating. */
static void shape_medians(const shape_t *s, gemm_fn *fns, int nfn, int rounds, double *med) {
  const size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
  float *A = xmalloc(na * sizeof(float)), *B = xmalloc(nb * sizeof(float)), *C = xmalloc(nc * sizeof(float));
  for (size_t j = 0; j < na; j++) A[j] = (float)((j * 7919) % 1000) * 1e-3f - 0.5f;
  for (size_t j = 0; j < nb; j++) B[j] = (float)((j * 104729) % 1000) * 1e-3f - 0.5f;
  for (size_t j = 0; j < nc; j++) C[j] = 0.0f;
  double g[4][1000];
  for (int r = 0; r < rounds; r++)
    for (int f = 0; f < nfn; f++) g[f][r] = round_gflops(fns[f], s, A, B, C);
  for (int f = 0; f < nfn; f++) {
    qsort(g[f], (size_t)rounds, sizeof(double), cmp_double);
    med[f] = g[f][rounds / 2];
  }
  free(A);
  free(B);
  free(C);
}

#if CPU_KERNELS_BUILT
/* fp32 products of a few rows times a weight stored (N, K) (generation's samples): the few-row kernel
 * at the widest width against OpenBLAS and, at AVX-512, the own packed kernel: the two routes
 * cpu_gemm took before it (cpu_gemm_few_rows says where it runs now). */
static void few_rows_fp32_table(int rounds, backend_simd_t best) {
  static const int weights[][2] = {{256, 256}, {768, 256}, {1024, 256}, {256, 1024}}, rows[] = {2, 3, 4, 8, 16, 32};
  gemm_fn fns[3] = {blas_gemm, best >= BACKEND_SIMD_AVX512 ? few_rows_w16 : few_rows_w8, cpu_sgemm_w16};
  const int nfn = best >= BACKEND_SIMD_AVX512 ? 3 : 2;
  printf("# fp32, a few rows times a weight stored (N, K): the few-row kernel (rows, at %s) against OpenBLAS%s; "
         "ratios rows / the others; * where cpu_gemm takes it\n",
         cpu_simd_name(best), nfn == 3 ? " and the own packed kernel (own)" : "");
  printf("%-18s %2s %2s %5s %5s %5s %9s %9s%s %9s%s\n", "shape", "ta", "tb", "M", "N", "K", "blas", "rows",
         nfn == 3 ? "       own" : "", "rows/blas", nfn == 3 ? "  rows/own" : "");
  for (size_t w = 0; w < sizeof weights / sizeof weights[0]; w++)
    for (size_t m = 0; m < sizeof rows / sizeof rows[0]; m++) {
      const shape_t s = {"fp32 few rows", 0, 1, rows[m], weights[w][0], weights[w][1], 0.0f};
      double med[3];
      shape_medians(&s, fns, nfn, rounds, med);
      printf("%-17s%c %2d %2d %5d %5d %5d %9.1f %9.1f", s.what, cpu_gemm_few_rows(0, 1, s.M, s.N, s.K) ? '*' : ' ',
             0, 1, s.M, s.N, s.K, med[0], med[1]);
      if (nfn == 3) printf(" %9.1f", med[2]);
      printf(" %8.2fx", med[1] / med[0]);
      if (nfn == 3) printf(" %8.2fx", med[1] / med[2]);
      printf("\n");
      fflush(stdout);
    }
}

/* cpu_gemm_rows_bf16 reading B's floats, or a bfloat16 copy of them (a forward-only model's, linear_fwd's
 * w16), made when B first comes (shape_medians fills B alike for a shape: a copy kept for the same
 * address and size holds the same values) */
static void rows_floats(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        int ldb, float beta, float *C, int ldc) {
  cpu_gemm_rows_bf16(ta, tb, M, N, K, alpha, A, lda, B, NULL, ldb, beta, C, ldc);
}
static void rows_copy(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                      int ldb, float beta, float *C, int ldc) {
  static uint16_t *copy;
  static const float *of;
  static size_t n;
  if (B != of || (size_t)N * K != n) {
    free(copy);
    n = (size_t)N * K, of = B, copy = xmalloc(n * sizeof *copy);
    backend_cpu.to_bf16(n, B, copy);
  }
  cpu_gemm_rows_bf16(ta, tb, M, N, K, alpha, A, lda, B, copy, ldb, beta, C, ldc);
}

/* precision = bf16's products of a few rows times a weight stored (N, K) (generation's samples): the
 * dot products of cpu_gemm_rows_bf16, from the floats and from a bfloat16 copy, against the packed GEMM in
 * pairs, at gpt's weights, by rows (cpu_gemm sends up to CPU_BF16_FEW_ROWS rows to the first). */
static void few_rows_table(int rounds) {
  static const int weights[][2] = {{768, 256}, {1024, 256}, {256, 1024}, {2304, 768}}, rows[] = {1, 4, 16, 32, 64};
  gemm_fn fns[3] = {cpu_sgemm_bf16, rows_floats, rows_copy};
  printf("# bf16, a few rows times a weight stored (N, K): dot products (rows; copy: from a bfloat16 copy of the "
         "weight) against the packed GEMM (packed); cpu_gemm takes rows up to M = %d\n", CPU_BF16_FEW_ROWS);
  printf("%-18s %2s %2s %5s %5s %5s %9s %9s %9s %9s %9s\n", "shape", "ta", "tb", "M", "N", "K", "packed", "rows",
         "copy", "rows/pack", "copy/rows");
  for (size_t w = 0; w < sizeof weights / sizeof weights[0]; w++)
    for (size_t m = 0; m < sizeof rows / sizeof rows[0]; m++) {
      const shape_t s = {"bf16 few rows", 0, 1, rows[m], weights[w][0], weights[w][1], 0.0f};
      double med[3];
      shape_medians(&s, fns, 3, rounds, med);
      printf("%-18s %2d %2d %5d %5d %5d %9.1f %9.1f %9.1f %8.2fx %8.2fx\n", s.what, 0, 1, s.M, s.N, s.K, med[0],
             med[1], med[2], med[1] / med[0], med[2] / med[1]);
      fflush(stdout);
    }
}

/* One product of a key/value cache of B sequences x H heads (gen/engine_cache.c's attend_at, its grid): the
 * scores of one query against L keys (tb = 1, N = L, K = hs) or the values' sum weighted by L probabilities
 * (tb = 0, N = hs, K = L), the cache (B, H, context, hs) in floats (gemm_grid) or in bfloat16 (gemm_grid_b16) */
typedef struct cache_case {
  int B, H, hs, L, context, tb;
  const float *A, *Kf;
  const uint16_t *K16;
  float *C;
} cache_case_t;

/* Microseconds per call, the median of `rounds` rounds of 0.05 s, in bfloat16 (b16) or floats. */
static double cache_round_us(const cache_case_t *c, int b16) {
  const int C = c->H * c->hs, M = 1, N = c->tb ? c->L : c->hs, K = c->tb ? c->hs : c->L;
  const size_t rows = (size_t)c->H * c->L;
  const size_t head = (size_t)c->context * c->hs, seq = (size_t)c->H * head; /* the cache's strides */
  const gemm_grid_t scores = {{c->B, c->H}, {3 * (size_t)C, (size_t)c->hs}, {seq, head}, {rows, (size_t)c->L}};
  const gemm_grid_t sum = {{c->B, c->H}, {rows, (size_t)c->L}, {seq, head}, {(size_t)C, (size_t)c->hs}};
  const gemm_grid_t g = c->tb ? scores : sum;
  const int lda = c->tb ? 3 * C : c->L, ldc = c->tb ? c->L : C;
  const double t0 = now();
  double t = t0;
  long calls = 0;
  while (t - t0 < 0.05) {
    if (b16) backend_cpu.gemm_grid_b16(0, c->tb, M, N, K, 1.0f, c->A, lda, c->K16, c->hs, 0.0f, c->C, ldc, &g);
    else backend_cpu.gemm_grid(0, c->tb, M, N, K, 1.0f, c->A, lda, c->Kf, c->hs, 0.0f, c->C, ldc, &g);
    calls++;
    t = now();
  }
  return (t - t0) / (double)calls * 1e6;
}

/* precision = bf16: a generated token's attention products against a key/value cache held in floats and in
 * bfloat16 (the context's kv16: the same bits), at GPT-2 124M's heads (12 x 64), 8 sequences, by length */
static void cache_table(int rounds) {
  backend_options_t o = backend_default_options();
  o.precision = BACKEND_BF16;
  int input_error = 0;
  if (backend_cpu.open(&o, &input_error)) return;
  enum { B = 8, H = 12, HS = 64, CONTEXT = 1024 };
  const size_t C = (size_t)H * HS, cache = (size_t)B * CONTEXT * C;
  float *A = xmalloc((size_t)B * 3 * C * sizeof *A), *Kf = xmalloc(cache * sizeof *Kf);
  float *out = xmalloc((size_t)B * H * CONTEXT * sizeof *out);
  uint16_t *K16 = xmalloc(cache * sizeof *K16);
  for (size_t j = 0; j < (size_t)B * 3 * C; j++) A[j] = (float)((j * 7919) % 1000) * 1e-3f - 0.5f;
  for (size_t j = 0; j < cache; j++) Kf[j] = (float)((j * 104729) % 1000) * 1e-3f - 0.5f;
  backend_cpu.to_bf16(cache, Kf, K16);
  printf("# bf16, a key/value cache's products (%d sequences x %d heads of %d, one query each): the cache in floats "
         "against bfloat16 (kv16); microseconds per call, medians of %d alternating rounds\n", B, H, HS, rounds);
  printf("%-8s %5s %10s %10s %9s %11s\n", "product", "L", "floats us", "bf16 us", "speedup", "bf16 GB/s");
  static const int lengths[] = {128, 512, 1024};
  for (int tb = 1; tb >= 0; tb--)
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
      const cache_case_t c = {B, H, HS, lengths[i], CONTEXT, tb, A, Kf, K16, out};
      double us[2][1000];
      for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) us[k][r] = cache_round_us(&c, k);
      for (int k = 0; k < 2; k++) qsort(us[k], (size_t)rounds, sizeof(double), cmp_double);
      const double f = us[0][rounds / 2], h = us[1][rounds / 2], bytes = 2.0 * B * lengths[i] * C;
      printf("%-8s %5d %10.1f %10.1f %8.2fx %11.1f\n", tb ? "q K^T" : "P V", lengths[i], f, h, f / h, bytes / h * 1e-3);
      fflush(stdout);
    }
  free(A), free(Kf), free(out), free(K16);
  o.precision = BACKEND_FP32;
  backend_cpu.open(&o, &input_error);
}
#endif

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 7;
  if (rounds < 1 || rounds > 1000) surge_input_error("bench_gemm: rounds %s: expected 1..1000", argv[1]);
  openblas_set_num_threads(1);
  const backend_simd_t best = cpu_simd_best();
  gemm_fn fns[4] = {blas_gemm, NULL, NULL, NULL};
  const char *names[4] = {"blas", NULL, NULL, NULL};
  int nfn = 1, w16 = -1, pairs = -1; /* where own w16 and the bf16 pairs are in fns, -1 where not run */
#if CPU_KERNELS_BUILT
  if (best >= BACKEND_SIMD_AVX512) w16 = nfn, names[nfn] = "own w16", fns[nfn++] = cpu_sgemm_w16;
  if (best >= BACKEND_SIMD_AVX2) names[nfn] = "own w8", fns[nfn++] = cpu_sgemm_w8;
  __builtin_cpu_init();
  if (best >= BACKEND_SIMD_AVX512 && __builtin_cpu_supports("avx512bf16"))
    pairs = nfn, names[nfn] = "bf16", fns[nfn++] = cpu_sgemm_bf16;
#endif
  print_cpu();
  print_load("before");
  double peak[4] = {0}; /* per method in fns: the FMA peak at its width (own w16, own w8), 0 where none */
#if CPU_KERNELS_BUILT
  const double peak16 = best >= BACKEND_SIMD_AVX512 ? fma_peak(fma_peak_w16, rounds) : 0.0;
  const double peak8 = best >= BACKEND_SIMD_AVX2 ? fma_peak(fma_peak_w8, rounds) : 0.0;
  if (peak16 > 0.0) printf("# float FMA peak at 16 floats (AVX-512F): %.1f GFLOP/s, best of %d\n", peak16, rounds);
  if (peak8 > 0.0) printf("# float FMA peak at 8 floats (AVX2 + FMA): %.1f GFLOP/s, best of %d\n", peak8, rounds);
  for (int f = 1; f < nfn; f++)
    if (f != pairs) peak[f] = f == w16 ? peak16 : peak8;
#endif
  printf("# 1 thread; GFLOP/s medians of %d alternating rounds of 0.05 s; ratio = own / blas%s\n", rounds,
         pairs > 0 ? "; bf16: precision = bf16's products (bfloat16 pairs), bf16/w16 against the own float kernel"
                   : "");
  printf("%-18s %2s %2s %5s %5s %5s", "shape", "ta", "tb", "M", "N", "K");
  for (int f = 0; f < nfn; f++) printf(" %9s", names[f]);
  for (int f = 1; f < nfn; f++)
    if (f != pairs) printf(" %9s", strcmp(names[f], "own w16") == 0 ? "w16/blas" : "w8/blas");
  if (pairs > 0 && w16 > 0) printf(" %9s", "bf16/w16");
  for (int f = 1; f < nfn; f++)
    if (peak[f] > 0.0) printf(" %9s", f == w16 ? "w16/peak" : "w8/peak");
  printf("\n");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const shape_t *s = &shapes[i];
    double med[4];
    shape_medians(s, fns, nfn, rounds, med);
    printf("%-18s %2d %2d %5d %5d %5d", s->what, s->ta, s->tb, s->M, s->N, s->K);
    for (int f = 0; f < nfn; f++) printf(" %9.1f", med[f]);
    for (int f = 1; f < nfn; f++)
      if (f != pairs) printf(" %8.2fx", med[f] / med[0]);
    if (pairs > 0 && w16 > 0) printf(" %8.2fx", med[pairs] / med[w16]);
    for (int f = 1; f < nfn; f++)
      if (peak[f] > 0.0) printf(" %9.2f", med[f] / peak[f]);
    printf("\n");
    fflush(stdout);
  }
#if CPU_KERNELS_BUILT
  if (best >= BACKEND_SIMD_AVX2) few_rows_fp32_table(rounds, best);
  if (pairs > 0) few_rows_table(rounds);
  if (best >= BACKEND_SIMD_AVX2) cache_table(rounds);
#endif
  print_load("after");
  return 0;
}
