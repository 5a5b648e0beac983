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

/* Rows as stored: floats (f) or bfloat16 (h), ld elements apart */
typedef struct b_rows {
  const float *f;
  const uint16_t *h;
  int ld;
} b_rows_t;

/* Rows j0 .. j0 + R - 1 of floats x (ld apart) as bfloat16 pairs (pairs_at): out[r nv + v] holds row j0 + r's
 * values 32 v .. 32 v + 31; rows from R to `pad` are zeros. */
SIMD_TARGET static void rows_to_pairs(int R, int pad, int K, const float *x, int ld, int j0, int nv, __m512i *out) {
  for (int r = 0; r < pad; r++)
    for (int v = 0; v < nv; v++)
      _mm512_storeu_si512(out + (size_t)r * nv + v,
                          r < R ? (__m512i)pairs_at(x + (size_t)(j0 + r) * ld, v, K) : _mm512_setzero_si512());
}

/* Where the dot products read B's rows: pairs made before (B_PAIRS), floats converted as they are read
 * (B_FLOATS), bfloat16 (B_HALVES). Every call site passes a constant, so the loops test nothing: a test
 * of the source in the loop left the accumulators spilled to the stack at every step. */
enum { B_PAIRS, B_FLOATS, B_HALVES };

/* Pairs 32 v .. 32 v + 31 of a B row starting at p (a __m512i *, float * or uint16_t * after src) */
SIMD_INLINE __m512bh b_pairs(const void *p, int src, int v, int K) {
  if (src == B_PAIRS) return (__m512bh)_mm512_loadu_si512((const __m512i *)p + v);
  if (src == B_HALVES) return pairs16_at(p, v, K);
  return pairs_at(p, v, K);
}

/* One block of 4 rows of a (in pairs, nv vectors a row) and 4 rows of B starting at row[0..3] (row 3 may
 * repeat row 2 past B's end: results not kept), read as src says. Lane 4 r + j of the result is the dot
 * product of a's row r with B's row j. */
SIMD_TARGET static inline __attribute__((always_inline)) vf dots_4x4(int nv, int K, const __m512i *a,
                                                                       const void *const row[4], int src) {
  vf acc[SIMD_W];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) acc[i] = vf_zero();
  for (int v = 0; v < nv; v++) {
    __m512bh bv[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) bv[j] = b_pairs(row[j], src, v, K);
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
      const __m512bh av = (__m512bh)_mm512_loadu_si512(a + (size_t)r * nv + v);
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) acc[4 * r + j] = _mm512_dpbf16_ps(acc[4 * r + j], av, bv[j]);
    }
  }
  vf sums[SIMD_W]; /* acc's address is never taken, so it stays in registers through the loop */
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) sums[i] = acc[i];
  return vf_fold_sums(sums);
}

/* Row j of B as dots_4x4 reads it: its start as src says */
SIMD_INLINE const void *b_row(b_rows_t B, int src, int j) {
  return src == B_HALVES ? (const void *)(B.h + (size_t)j * B.ld) : (const void *)(B.f + (size_t)j * B.ld);
}

/* out[j] = the dot product of one row a (in pairs) with B's row j, j < N, each of B's rows converted as
 * it is read (or read as bfloat16, half the bytes; src): a matrix-vector product, bound by reading B */
SIMD_TARGET static inline __attribute__((always_inline)) void dots_1(int N, int K, const __m512i *a, b_rows_t B,
                                                                       int src, float *out) {
  const int nv = (K + 31) / 32;
  for (int j = 0; j < N; j++) {
    const void *row = b_row(B, src, j);
    vf acc = vf_zero();
    for (int v = 0; v < nv; v++)
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(a + v), b_pairs(row, src, v, K));
    out[j] = _mm512_reduce_add_ps(acc);
  }
}

/* out[i ldo + j] = sum over k of a[i lda + k] B[j ldb + k], i < M, j < N, k < K: a few rows times a
 * matrix stored (N, K), in bfloat16 pairs (cpu_bf16.c's product of a few rows where the CPU has them),
 * each row of B read from memory once: from B16, B as bfloat16, where it is given (the same values).
 * a's rows are converted once. One row takes B's rows one at a time; more, 4 of them at a time, read
 * as they are (bfloat16; 4 rows of it stay in the first-level cache while every 4 rows of a meet them) or
 * converted as they are read (floats, up to 8 rows of a) or converted once into a buffer (floats, more). */
SIMD_TARGET void cpu_rows_bf16_dots(int M, int N, int K, const float *a, int lda, const float *B, const uint16_t *B16,
                                    int ldb, float *out, int ldo) {
  static _Thread_local void *buf;
  static _Thread_local size_t cap;
  const b_rows_t rows = {B, B16, ldb};
  const int nv = (K + 31) / 32, buffered = M > 8 && !B16, Mp = M == 1 ? 1 : (M + 3) / 4 * 4; /* a's rows in 4s */
  const size_t vectors = surge_mul_size((size_t)Mp + 4 * (size_t)buffered, (size_t)nv, "bf16 pairs");
  __m512i *ap = cpu_kept_buffer(&buf, &cap, surge_mul_size(vectors, sizeof *ap, "bf16 pairs")),
          *bp = ap + (size_t)Mp * nv; /* B's 4 rows where buffered */
  rows_to_pairs(M, Mp, K, a, lda, 0, nv, ap);
  if (M == 1) {
    if (B16) dots_1(N, K, ap, rows, B_HALVES, out);
    else dots_1(N, K, ap, rows, B_FLOATS, out);
    return;
  }
  for (int j = 0; j < N; j += 4) {
    const int J = N - j < 4 ? N - j : 4;
    const void *row[4]; /* B's 4 rows: in pairs where buffered, else as stored (the last repeated past B's end) */
    for (int r = 0; r < 4; r++)
      row[r] = buffered ? (const void *)(bp + (size_t)r * nv)
                        : b_row(rows, B16 ? B_HALVES : B_FLOATS, j + (r < J ? r : J - 1));
    if (buffered) rows_to_pairs(J, 4, K, B, ldb, j, nv, bp); /* floats only */
    for (int i = 0; i < M; i += 4) {
      float d[16]; /* lanes 4 r .. 4 r + J - 1: row i + r */
      const __m512i *ai = ap + (size_t)i * nv;
      const vf sums = buffered ? dots_4x4(nv, K, ai, row, B_PAIRS)
                      : B16    ? dots_4x4(nv, K, ai, row, B_HALVES)
                               : dots_4x4(nv, K, ai, row, B_FLOATS);
      _mm512_storeu_ps(d, sums);
      for (int r = 0; r < 4 && i + r < M; r++)
        memcpy(out + (size_t)(i + r) * ldo + j, d + 4 * r, (size_t)J * sizeof *d);
    }
  }
}
#endif
