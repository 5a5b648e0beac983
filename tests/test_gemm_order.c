/* The cpu backend's own packed SGEMM (src/backend/cpu_gemm_kern.h) sums each element of C in the order its
 * header states, at every vector width this CPU runs: a scalar model of that order (per block of 256 values of
 * k, a chain of fused multiply-adds from zero in ascending k, times alpha, added to C in turn: beta C first)
 * gives the same bits as cpu_sgemm_w16 and cpu_sgemm_w8, and, on operands rounded to bfloat16 first, as
 * cpu_sgemm_round_w16 and _w8. The shapes are those awkward for the packing: rows around the strips of 12
 * (AVX-512) and 6 (AVX2), columns around the strips of 32 and 16, K around the transposed blocks of 16 and 8
 * and the blocks of 256, every ta and tb, leading dimensions past the shape, operands at the very end of their
 * allocations (a read past them shows under the sanitizers). The packing only moves values, so a value lost,
 * doubled or zeroed there shows as a wrong bit here. In float an x-major A (ta = 0) is read where it is stored, whole
 * strips of rows at a time, and only a last strip of fewer rows packed: the rows around the strips take both. The
 * form in bfloat16 pairs (cpu_sgemm_bf16, AVX-512 BF16) sums each pair in an order of its own; its packing reads A
 * and B stored either way into the same pairs, so at the same shapes every ta and tb gives the same bits.
 *
 * gemm_tn_rows (backend.h) runs C's rows in parts (src/backend/tn_parts.h) to bound its temporaries; as an element's
 * sum does not depend on the rows beside it, the parts give the bits of one whole product per block of 1024 rows,
 * the blocks added in double: checked where the own kernel runs the products, with C's parts at awkward offsets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "backend/tn_parts.h"
#include "core/bf16.h"
#include "core/rng.h"
#include "tap.h"

#define KBLOCK 256 /* cpu_gemm_kern.h's GK_KC */

typedef void gemm_fn(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                     int ldb, float beta, float *C, int ldc);

static rng_t rng;

/* n floats in [-1, 1) at the end of their own allocation */
static float *operand(size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  if (!x) abort();
  rng_fill_uniform(&rng, x, n, -1.0f, 1.0f);
  return x;
}

/* C = alpha op(A) op(B) + beta C in the kernel's order; `round`: the operands rounded to bfloat16 first */
static void model(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc, int round) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float c = C[(size_t)i * ldc + j];
      for (int k0 = 0; k0 < K; k0 += KBLOCK) {
        float s = 0.0f;
        for (int k = k0; k < K && k < k0 + KBLOCK; k++) {
          float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
          float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
          if (round) a = bf16_round(a), b = bf16_round(b);
          s = fmaf(a, b, s);
        }
        const float p = alpha * s;
        c = k0 > 0 ? fmaf(1.0f, c, p) : beta != 0.0f ? fmaf(beta, c, p) : p;
      }
      C[(size_t)i * ldc + j] = c;
    }
}

/* One shape through fn: the bits of the model's C, and C's elements past each row's N untouched */
static int same_as_model(gemm_fn *fn, int round, int ta, int tb, int M, int N, int K, float beta) {
  const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 3, ldc = N + 3;
  const size_t na = (size_t)(ta ? K : M) * lda - 3, nb = (size_t)(tb ? N : K) * ldb - 3, nc = (size_t)M * ldc;
  float *A = operand(na), *B = operand(nb), *C = operand(nc), *want = malloc(nc * sizeof *want);
  if (!want) abort();
  memcpy(want, C, nc * sizeof *C);
  fn(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, C, ldc);
  model(ta, tb, M, N, K, 1.3f, A, lda, B, ldb, beta, want, ldc, round);
  const int same = memcmp(C, want, nc * sizeof *C) == 0;
  free(A), free(B), free(C), free(want);
  return same;
}

/* One product through fn with its operands stored each way: op(A) (M,K) as A or as A's transpose, op(B) (K,N) as B or
 * B's transpose. The packing reads either into the same strips, so all four give the same bits. */
static int transposes_agree(gemm_fn *fn, int M, int N, int K) {
  float *a = operand((size_t)M * K), *at = malloc((size_t)M * K * sizeof *at); /* a (M,K), at (K,M) */
  float *b = operand((size_t)K * N), *bt = malloc((size_t)K * N * sizeof *bt); /* b (K,N), bt (N,K) */
  float *c[4];
  if (!at || !bt) abort();
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++) at[(size_t)k * M + i] = a[(size_t)i * K + k];
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++) bt[(size_t)j * K + k] = b[(size_t)k * N + j];
  int same = 1;
  for (int t = 0; t < 4; t++) {
    const int ta = t >> 1, tb = t & 1;
    if (!(c[t] = malloc((size_t)M * N * sizeof(float)))) abort();
    fn(ta, tb, M, N, K, 1.0f, ta ? at : a, ta ? M : K, tb ? bt : b, tb ? K : N, 0.0f, c[t], N);
    same &= memcmp(c[t], c[0], (size_t)M * N * sizeof(float)) == 0;
  }
  for (int t = 0; t < 4; t++) free(c[t]);
  free(a), free(at), free(b), free(bt);
  return same;
}

/* C (M,N) += A^T B over K rows as backend.h states it, in one part: per block of up to 1024 rows the whole M x N
 * product in float, the blocks added to C in double, one rounding; against cpu_gemm_tn_rows's parts, bit for bit,
 * with C's elements past N untouched (ldc > N) */
static int tn_rows_same_as_whole(int M, int N, int K) {
  enum { ROWS = 1024 }; /* cpu_gemm.c's CPU_GEMM_ROW_BLOCK */
  const int lda = M + 5, ldb = N + 2, ldc = N + 3;
  const size_t nc = (size_t)M * ldc;
  float *A = operand((size_t)K * lda), *B = operand((size_t)K * ldb), *C = operand(nc);
  float *want = malloc(nc * sizeof *want), *blk = malloc((size_t)M * N * sizeof *blk);
  double *acc = malloc((size_t)M * N * sizeof *acc);
  if (!want || !blk || !acc) abort();
  memcpy(want, C, nc * sizeof *C);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) acc[(size_t)i * N + j] = want[(size_t)i * ldc + j];
  for (int k0 = 0; k0 < K; k0 += ROWS) {
    cpu_gemm(1, 0, M, N, K - k0 < ROWS ? K - k0 : ROWS, 1.0f, A + (size_t)k0 * lda, lda, B + (size_t)k0 * ldb, ldb,
             0.0f, blk, N);
    for (size_t e = 0; e < (size_t)M * N; e++) acc[e] += blk[e];
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) want[(size_t)i * ldc + j] = (float)acc[(size_t)i * N + j];
  cpu_gemm_tn_rows(M, N, K, A, lda, B, ldb, C, ldc);
  const int same = memcmp(C, want, nc * sizeof *C) == 0;
  free(A), free(B), free(C), free(want), free(blk), free(acc);
  return same;
}

int main(void) {
  rng_seed(&rng, 17);
#if CPU_KERNELS_BUILT
  const backend_simd_t best = cpu_simd_best();
  const struct {
    const char *name;
    gemm_fn *fn;
    int round, runs;
  } forms[] = {{"cpu_sgemm_w16", cpu_sgemm_w16, 0, best >= BACKEND_SIMD_AVX512},
               {"cpu_sgemm_w8", cpu_sgemm_w8, 0, best >= BACKEND_SIMD_AVX2},
               {"cpu_sgemm_round_w16", cpu_sgemm_round_w16, 1, best >= BACKEND_SIMD_AVX512},
               {"cpu_sgemm_round_w8", cpu_sgemm_round_w8, 1, best >= BACKEND_SIMD_AVX2}};
  /* M, N, K: strips of rows (12, 6) and columns (32, 16) past by one or short by one; K past the
   * transposed blocks (16, 8) and the sum's blocks (256); one row, one column, one k; last strips of 4, 8 and 5
   * rows (the tiles of 4 and 8 rows, stored straight where their columns are whole) */
  const int shapes[][3] = {{13, 33, 17}, {12, 32, 16}, {11, 31, 15},  {7, 17, 9},    {25, 65, 257}, {1, 1, 1},
                           {1, 40, 300}, {241, 3, 7},  {37, 97, 513}, {6, 16, 256},  {16, 32, 40},  {20, 64, 33},
                           {17, 48, 20}};
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    if (!forms[f].runs) {
      tap_skip("%s: this CPU lacks its instructions", forms[f].name);
      continue;
    }
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int t = 0; t < 4; t++) {
        const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        const float beta = t == 3 ? 0.5f : 0.0f;
        tap_ok(same_as_model(forms[f].fn, forms[f].round, t >> 1, t & 1, M, N, K, beta),
               "%s ta=%d tb=%d M=%d N=%d K=%d beta=%g: the bits of the stated order", forms[f].name, t >> 1, t & 1, M,
               N, K, beta);
      }
  }
  /* the pairs form (AVX-512 BF16) sums each pair in an order of its own, but packs as the others do */
  const int pairs = best >= BACKEND_SIMD_AVX512 && (__builtin_cpu_init(), __builtin_cpu_supports("avx512bf16"));
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    if (!pairs)
      tap_skip("cpu_sgemm_bf16 M=%d N=%d K=%d: this CPU lacks AVX-512 BF16", M, N, K);
    else
      tap_ok(transposes_agree(cpu_sgemm_bf16, M, N, K), "cpu_sgemm_bf16 M=%d N=%d K=%d: the same bits with A and B "
             "stored either way (every ta, tb)", M, N, K);
  }
  /* gemm_tn_rows's parts: 16 MiB of temporaries at 12 bytes an element of C, at least 64 rows a part */
  tap_ok(tn_parts(50304, 768, 12) == 28 && tn_parts(1500, 1000, 12) == 2 && tn_parts(200, 20000, 12) == 3 &&
             tn_parts(1000, 1000, 12) == 1 && tn_parts(100, 1 << 20, 12) == 1,
         "tn_parts: a 124M classifier's gradient in 28 parts, small ones whole, never under 64 rows a part");
  int bounded = 1;
  for (int p = 0; p < 28; p++) {
    const int rows = tn_part_row(50304, 28, p + 1) - tn_part_row(50304, 28, p);
    bounded &= rows >= TN_PART_MIN_ROWS && (size_t)rows * 768 * 12 <= TN_PART_BYTES;
  }
  tap_ok(bounded && tn_part_row(50304, 28, 0) == 0 && tn_part_row(50304, 28, 28) == 50304,
         "tn_part_row: the parts cover the rows, each within the temporaries' bound");
  /* 2 parts of 750 rows over 3 blocks (1024, 1024, 52); 3 parts of 66-67 rows (the 64-row floor binding) over 2 */
  const int tn_shapes[][3] = {{1500, 1000, 2100}, {200, 20000, 1100}};
  for (size_t s = 0; s < sizeof tn_shapes / sizeof tn_shapes[0]; s++) {
    const int M = tn_shapes[s][0], N = tn_shapes[s][1], K = tn_shapes[s][2];
    if (!cpu_gemm_own(M, N, 1024))
      tap_skip("gemm_tn_rows M=%d N=%d K=%d: OpenBLAS runs these products here (its order is its own)", M, N, K);
    else
      tap_ok(tn_rows_same_as_whole(M, N, K), "gemm_tn_rows M=%d N=%d K=%d in %d parts: the bits of one whole product "
             "per block of rows", M, N, K, tn_parts(M, N, 12));
  }
#else
  tap_skip("the cpu backend's own kernels are not built on this architecture");
#endif
  return tap_done();
}
