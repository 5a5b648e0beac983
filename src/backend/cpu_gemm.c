/* "cpu" backend GEMMs, row-major: OpenBLAS cblas_sgemm, or the backend's own packed kernel
 * (cpu_gemm_kern.h) at the kernels' width where that beats OpenBLAS (bench/bench_gemm.c). */
#include <cblas.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "backend/tn_parts.h"
#include "core/bf16.h"
#include "core/error.h"

/* OpenBLAS's setting is the process's: an in-process background must use 1 too. Atomic: both jobs' threads
 * set it at start-up (to the same 1) and read it (relaxed: it is a count, ordering nothing). */
static atomic_int blas_threads = 1;
/* Per thread, as the kernel width (cpu_simd.c): an in-process background's deck sets its own. */
static _Thread_local backend_gemm_t gemm_mode = BACKEND_GEMM_AUTO;

void cpu_set_threads(int nthreads) {
  if (nthreads <= 0) return;
  openblas_set_num_threads(nthreads);
  atomic_store_explicit(&blas_threads, nthreads, memory_order_relaxed);
}

void cpu_gemm_use(backend_gemm_t g) { gemm_mode = g; }

int cpu_threads(void) { return atomic_load_explicit(&blas_threads, memory_order_relaxed); }

/* Parts of at least 2^21 multiply-adds (20-40 microseconds at the packed kernels' 100-200 GFLOP/s,
 * bench/bench_gemm), and at least one strip of 12 rows each. */
int cpu_gemm_team(int M, int N, int K) {
  const double parts = (double)M * N * K / 2097152.0;
  int T = cpu_threads();
  if (parts < T) T = (int)parts;
  if (M / 12 < T) T = M / 12;
  return T < 1 ? 1 : T;
}

/* Where OpenBLAS's small-matrix path (no packing) beats both own kernels: up to 4 rows, up to 1024
 * outputs (M N) and under 2^20 multiply-adds. There it ran 59-104 GFLOP/s against the few-row kernel's
 * 36-68 and the own packed kernel's 8-16; past 1024 outputs or 2^20 multiply-adds it fell to 12-19
 * (bench/bench_gemm.c's fp32 few-row table: 2 to 4 rows times weights of 256 x 256 and 256 x 1024,
 * B stored (N, K), on AMD EPYC Zen 5). */
static int blas_small_path(int M, int N, int K) {
  return M <= 4 && (double)M * N <= 1024.0 && (double)M * N * K < 1048576.0;
}

/* Whether the own kernel runs this product: single-threaded (it has no threads of its own), at
 * AVX-512 (this Zen 5 runs OpenBLAS 0.3.21's Haswell kernels, at half its FMA width; at AVX2 the
 * kernel is about level with those, bench/bench_gemm.c, so OpenBLAS stays), with at least 64^3
 * multiply-adds (below, OpenBLAS's small-matrix paths skip the packing and win; blas_small_path at a
 * few rows above it) and more than one row (one row is cpu_gemm's matrix-vector product). The route
 * depends on the shape and the deck alone, so results stay reproducible. */
int cpu_gemm_own(int M, int N, int K) {
  return CPU_KERNELS_BUILT && gemm_mode == BACKEND_GEMM_AUTO && cpu_threads() == 1 &&
         cpu_simd() == BACKEND_SIMD_AVX512 && M >= 2 && (double)M * N * K >= 262144.0 && !blas_small_path(M, N, K);
}

/* Where the few-row kernel beats the route a product of up to CPU_FEW_ROWS rows times a weight would
 * take otherwise (bench/bench_gemm.c's fp32 few-row table): everywhere the own packed kernel would run
 * it, and from 4 rows on above 64^3 multiply-adds where OpenBLAS would, except where OpenBLAS's
 * small-matrix path wins (blas_small_path). */
int cpu_gemm_few_rows(int ta, int tb, int M, int N, int K) {
  if (!(CPU_KERNELS_BUILT && gemm_mode == BACKEND_GEMM_AUTO && cpu_threads() == 1 && cpu_simd() != BACKEND_SIMD_NONE &&
        !ta && tb && M >= 2 && M <= CPU_FEW_ROWS) ||
      blas_small_path(M, N, K))
    return 0;
  return cpu_gemm_own(M, N, K) || (M >= 4 && (double)M * N * K > 262144.0);
}

static enum CBLAS_TRANSPOSE cpu_trans(int t) { return t ? CblasTrans : CblasNoTrans; }

#if CPU_KERNELS_BUILT
int cpu_gemm_bf16_pairs(void) { /* cpu_simd() has initialised the CPU's flags */
  return cpu_simd() == BACKEND_SIMD_AVX512 && __builtin_cpu_supports("avx512bf16") &&
         __builtin_cpu_supports("avx512bw");
}

int cpu_gemm_bf16_rows_max(void) { return cpu_gemm_bf16_pairs() ? CPU_BF16_FEW_ROWS : 1; }

int cpu_gemm_bf16_rows(int M, int tb) { return M == 1 || (tb && M <= cpu_gemm_bf16_rows_max()); }

/* precision = bf16: the own kernel's bf16 forms at every shape but one row and, where the CPU has
 * bfloat16 pairs, a few rows times B stored (N, K) (cpu_bf16.c reads B once there); cpu_open refused a
 * width of none */
static void cpu_gemm_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc) {
  if (cpu_gemm_bf16_rows(M, tb)) cpu_gemm_rows_bf16(ta, tb, M, N, K, alpha, A, lda, B, NULL, ldb, beta, C, ldc);
  else if (cpu_gemm_bf16_pairs()) cpu_sgemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else if (cpu_simd() == BACKEND_SIMD_AVX512) cpu_sgemm_round_w16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else cpu_sgemm_round_w8(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
#else
int cpu_gemm_bf16_pairs(void) { return 0; }
int cpu_gemm_bf16_rows_max(void) { return 0; }
int cpu_gemm_bf16_rows(int M, int tb) { return (void)M, (void)tb, 0; }
#endif

void cpu_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
#if CPU_KERNELS_BUILT
  if (host_products_bf16() && K > 0) {
    cpu_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#endif
  if (M == 1 && K > 0) { /* one row (a token generated at a time): a matrix-vector product, B read once and not
                          * copied into OpenBLAS's packed layout; c (N) = alpha op(B)^T a + beta c */
    cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? N : K, tb ? K : N, alpha, B, ldb, A,
                ta ? lda : 1, beta, C, 1);
    return;
  }
#if CPU_KERNELS_BUILT
  if (K > 0 && cpu_gemm_few_rows(ta, tb, M, N, K)) { /* a few rows times a weight: B read once, not packed */
    if (cpu_simd() == BACKEND_SIMD_AVX512) cpu_gemm_rows_w16(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else cpu_gemm_rows_w8(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (cpu_gemm_own(M, N, K)) {
    cpu_sgemm_w16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, cpu_trans(ta), cpu_trans(tb), M, N, K, alpha, A, lda, B, ldb, beta, C,
              ldc);
}

void cpu_gemm_strided(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      size_t sA, const float *B, int ldb, size_t sB, float beta, float *C, int ldc,
                      size_t sC, int batch) {
  for (int i = 0; i < batch; i++)
    cpu_gemm(ta, tb, M, N, K, alpha, A + i * sA, lda, B + i * sB, ldb, beta, C + i * sC, ldc);
}

/* The grid's rows run as strided batches along its second dimension. */
void cpu_gemm_grid(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc, const gemm_grid_t *g) {
  for (int i = 0; i < g->batch[0]; i++)
    cpu_gemm_strided(ta, tb, M, N, K, alpha, A + i * g->sA[0], lda, g->sA[1], B + i * g->sB[0], ldb, g->sB[1], beta,
                     C + i * g->sC[0], ldc, g->sC[1], g->batch[1]);
}

void cpu_gemm_b16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                  const uint16_t *B16, int ldb, float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (B16 && host_products_bf16() && K > 0 && cpu_gemm_bf16_rows(M, tb)) {
    cpu_gemm_rows_bf16(ta, tb, M, N, K, alpha, A, lda, B, B16, ldb, beta, C, ldc);
    return;
  }
  if (B) {
    cpu_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  static _Thread_local void *buf;
  static _Thread_local size_t cap;
  const int rows = tb ? N : K, cols = tb ? K : N; /* B as stored */
  const size_t n = surge_mul_size((size_t)rows, (size_t)cols, "bfloat16 operand");
  float *b = cpu_kept_buffer(&buf, &cap, surge_mul_size(n, sizeof(float), "bfloat16 operand"));
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) b[(size_t)r * cols + c] = bf16_value(B16[(size_t)r * ldb + c]);
  cpu_gemm(ta, tb, M, N, K, alpha, A, lda, b, cols > 0 ? cols : 1, beta, C, ldc);
}

void cpu_gemm_grid_b16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B16,
                       int ldb, float beta, float *C, int ldc, const gemm_grid_t *g) {
  for (int i = 0; i < g->batch[0]; i++)
    for (int j = 0; j < g->batch[1]; j++)
      cpu_gemm_b16(ta, tb, M, N, K, alpha, A + i * g->sA[0] + j * g->sA[1], lda, NULL,
                   B16 + i * g->sB[0] + j * g->sB[1], ldb, beta, C + i * g->sC[0] + j * g->sC[1], ldc);
}

/* d[i] = c[i] + b[i] in double; c[i] = d[i] + b[i] rounded; acc[i] += x[i] widened: built per ISA
 * (scalar loops over megabytes were 2% of a gpt step). */
static CPU_CLONES void cpu_widen_add_row(const float *restrict c, const float *restrict b, double *restrict d, int n) {
  for (int i = 0; i < n; i++) d[i] = (double)c[i] + (double)b[i];
}
static CPU_CLONES void cpu_add_narrow_row(const double *restrict d, const float *restrict b, float *restrict c, int n) {
  for (int i = 0; i < n; i++) c[i] = (float)(d[i] + (double)b[i]);
}
static CPU_CLONES void cpu_add_widened(const float *restrict x, double *restrict acc, size_t n) {
  for (size_t i = 0; i < n; i++) acc[i] += (double)x[i];
}

/* Rows per block of gemm_tn_rows: one GEMM sums at most this many rows in float. */
enum { CPU_GEMM_ROW_BLOCK = 1024 };

void *cpu_kept_buffer(void **buf, size_t *cap, size_t bytes) {
  if (bytes > *cap) {
    host_mem_free(*buf);
    *buf = host_mem_alloc(bytes / sizeof(float) + 1); /* 64-byte aligned: vectors do not straddle cache lines */
    *cap = bytes;
  }
  return *buf;
}

/* C (M,N) += A^T B over K rows: K <= CPU_GEMM_ROW_BLOCK is one GEMM; longer sums run a GEMM per
 * block of rows into a float temporary and add the blocks in double, so the float rounding covers
 * one block whatever K is. The widening of C is fused into the first block's add and the rounding
 * back into the last one's: per element of C, two blocks (a gpt weight gradient at 2048 rows)
 * move 40 bytes through memory where a widening pass, an add per block and a narrowing pass moved
 * 72. C's rows run in parts (tn_parts.h), so the temporaries stay within 16 MiB; an element's sum does not
 * depend on which rows share its product (the own kernel's order, tests/test_gemm_order), so the parts give the
 * bits of one whole product. */
void cpu_gemm_tn_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                      int ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  if (K <= CPU_GEMM_ROW_BLOCK) {
    cpu_gemm(1, 0, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
    return;
  }
  const int parts = tn_parts(M, N, sizeof(float) + sizeof(double)), rows_most = (M + parts - 1) / parts;
  static _Thread_local void *blk_buf, *acc_buf;
  static _Thread_local size_t blk_cap, acc_cap;
  size_t mn = surge_mul_size((size_t)rows_most, (size_t)N, "gemm_tn_rows temporary");
  float *blk = cpu_kept_buffer(&blk_buf, &blk_cap, surge_mul_size(mn, sizeof(float), "gemm_tn_rows temporary"));
  double *acc = cpu_kept_buffer(&acc_buf, &acc_cap, surge_mul_size(mn, sizeof(double), "gemm_tn_rows temporary"));
  for (int p = 0; p < parts; p++) {
    const int i0 = tn_part_row(M, parts, p), m = tn_part_row(M, parts, p + 1) - i0; /* this part's rows of C */
    for (int k0 = 0; k0 < K; k0 += CPU_GEMM_ROW_BLOCK) {
      const int kb = K - k0 < CPU_GEMM_ROW_BLOCK ? K - k0 : CPU_GEMM_ROW_BLOCK;
      const int first = k0 == 0, last = k0 + kb == K;
      cpu_gemm(1, 0, m, N, kb, 1.0f, A + (size_t)k0 * lda + i0, lda, B + (size_t)k0 * ldb, ldb, 0.0f, blk, N);
      for (int i = 0; i < m; i++) {
        float *c = C + (size_t)(i0 + i) * ldc;
        const float *b = blk + (size_t)i * N;
        double *a = acc + (size_t)i * N;
        if (first) cpu_widen_add_row(c, b, a, N);
        else if (last) cpu_add_narrow_row(a, b, c, N);
        else cpu_add_widened(b, a, (size_t)N);
      }
    }
  }
}
