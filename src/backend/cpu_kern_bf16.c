/* "cpu" backend: precision = bf16's products in bfloat16 pairs (AVX-512 BF16's VDPBF16PS: Zen 4 and
 * later, Cooper Lake, Sapphire Rapids and later): the packed GEMM, from the template written once over
 * the width (cpu_gemm_kern.h, GK_PAIRS), and the dot products of a few rows; cpu_gemm.c and
 * cpu_bf16.c run them where the CPU has the instructions. */
#include "backend/cpu_ops.h"
#if CPU_KERNELS_BUILT
#define SIMD_W 16
#define SIMD_BF16 1
#define GK_PAIRS 1
#include "backend/cpu_gemm_kern.h"

/* 32 values of a bfloat16 row from k = 32 v on (of K), in natural order as pairs_at's; zeros past K */
SIMD_INLINE __m512bh pairs16_at(const uint16_t *x, int v, int K) {
  const int n = K - 32 * v;
  if (n >= 32) return (__m512bh)_mm512_loadu_si512(x + 32 * v);
  return (__m512bh)_mm512_maskz_loadu_epi16((__mmask32)((1ull << n) - 1), x + 32 * v);
}

/* Rows as bfloat16 pairs, from floats converted as they are read (f) or from bfloat16 itself (h) */
typedef struct b_rows {
  const float *f;
  const uint16_t *h;
  int ld;
} b_rows_t;

SIMD_INLINE __m512bh b_row_at(b_rows_t B, int j, int v, int K) {
  return B.h ? pairs16_at(B.h + (size_t)j * B.ld, v, K) : pairs_at(B.f + (size_t)j * B.ld, v, K);
}

/* Rows j0 .. j0 + R - 1 of x as bfloat16 pairs (b_row_at): out[r nv + v] holds row j0 + r's values 32 v ..
 * 32 v + 31; rows from R to `pad` are zeros. */
SIMD_TARGET static void rows_to_pairs(int R, int pad, int K, b_rows_t x, int j0, int nv, __m512i *out) {
  for (int r = 0; r < pad; r++)
    for (int v = 0; v < nv; v++)
      _mm512_storeu_si512(out + (size_t)r * nv + v,
                          r < R ? (__m512i)b_row_at(x, j0 + r, v, K) : _mm512_setzero_si512());
}

/* One block of 4 rows of a (in pairs, nv vectors a row) and 4 rows of B: in pairs (b; B NULL), or
 * read as they are needed (B from its row j0, b NULL; rows past J repeat its last: results not kept).
 * Each call site passes one of them as a constant NULL, so its loop has no test.
 * Lane 4 r + j of the result is the dot product of a's row r with B's row j. */
SIMD_TARGET static inline __attribute__((always_inline)) vf dots_4x4(int nv, int K, const __m512i *a,
                                                                       const __m512i *b, const b_rows_t *B,
                                                                       int j0, int J) {
  vf acc[SIMD_W];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) acc[i] = vf_zero();
  for (int v = 0; v < nv; v++) {
    __m512bh bv[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
      bv[j] = B ? b_row_at(*B, j0 + (j < J ? j : J - 1), v, K) : (__m512bh)_mm512_loadu_si512(b + (size_t)j * nv + v);
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
      const __m512bh av = (__m512bh)_mm512_loadu_si512(a + (size_t)r * nv + v);
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) acc[4 * r + j] = _mm512_dpbf16_ps(acc[4 * r + j], av, bv[j]);
    }
  }
  return vf_fold_sums(acc);
}

/* out[j] = the dot product of one row a (in pairs) with B's row j, j < N, each of B's rows converted as
 * it is read (or read as bfloat16, half the bytes): a matrix-vector product, bound by reading B */
SIMD_TARGET static void dots_1(int N, int K, const __m512i *a, b_rows_t B, float *out) {
  const int nv = (K + 31) / 32;
  for (int j = 0; j < N; j++) {
    vf acc = vf_zero();
    for (int v = 0; v < nv; v++) acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(a + v), b_row_at(B, j, v, K));
    out[j] = _mm512_reduce_add_ps(acc);
  }
}

/* out[i ldo + j] = sum over k of a[i lda + k] B[j ldb + k], i < M, j < N, k < K: a few rows times a
 * matrix stored (N, K), in bfloat16 pairs (cpu_bf16.c's product of a few rows where the CPU has them),
 * each row of B read from memory once: from B16, B as bfloat16, where it is given (the same values).
 * a's rows are converted once. One row takes B's rows one at a time; up to 8, 4 of them at a time
 * converted as they are read; more, 4 of them converted (or copied) once into a buffer that meets every 4
 * rows of a while it is in the first-level cache. */
SIMD_TARGET void cpu_rows_bf16_dots(int M, int N, int K, const float *a, int lda, const float *B, const uint16_t *B16,
                                    int ldb, float *out, int ldo) {
  static _Thread_local void *buf;
  static _Thread_local size_t cap;
  const b_rows_t rows = {B, B16, ldb};
  const int nv = (K + 31) / 32, buffered = M > 8, Mp = M == 1 ? 1 : (M + 3) / 4 * 4; /* a's rows in blocks of 4 */
  const size_t vectors = surge_mul_size((size_t)Mp + 4 * (size_t)buffered, (size_t)nv, "bf16 pairs");
  __m512i *ap = cpu_kept_buffer(&buf, &cap, surge_mul_size(vectors, sizeof *ap, "bf16 pairs")),
          *bp = ap + (size_t)Mp * nv; /* B's 4 rows where buffered */
  rows_to_pairs(M, Mp, K, (b_rows_t){a, NULL, lda}, 0, nv, ap);
  if (M == 1) {
    dots_1(N, K, ap, rows, out);
    return;
  }
  for (int j = 0; j < N; j += 4) {
    const int J = N - j < 4 ? N - j : 4;
    if (buffered) rows_to_pairs(J, 4, K, rows, j, nv, bp);
    for (int i = 0; i < M; i += 4) {
      float d[16]; /* lanes 4 r .. 4 r + J - 1: row i + r */
      const __m512i *ai = ap + (size_t)i * nv;
      _mm512_storeu_ps(d, buffered ? dots_4x4(nv, K, ai, bp, NULL, 0, 4) : dots_4x4(nv, K, ai, NULL, &rows, j, J));
      for (int r = 0; r < 4 && i + r < M; r++)
        memcpy(out + (size_t)(i + r) * ldo + j, d + 4 * r, (size_t)J * sizeof *d);
    }
  }
}
#endif
