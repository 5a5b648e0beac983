/* The cpu backend's own SGEMM, written once over the vector width SIMD_W of cpu_simd.h and included
 * once per width (cpu_kern_w16.c, cpu_kern_w8.c); cpu_gemm.c decides when it runs instead of
 * OpenBLAS. Row-major C (M,N) = alpha op(A) op(B) + beta C, op(A) (M,K), op(B) (K,N).
 *
 * BLIS's loops: columns in blocks of GK_NC, the sum over K in blocks of GK_KC, rows in blocks of
 * GK_MC. B's block (KC x NC, kept in L2/L3) is packed into strips of GK_NR columns, strip s holding
 * op(B)(k, s NR + j) at [s KC NR + k NR + j]; A's block (MC x KC, L2) into strips of GK_MR rows,
 * op(A)(s MR + r, k) at [s KC MR + k MR + r]; both zero past the matrix's edge. In float, an A stored x-major is
 * read in place, its strips of MR rows as they lie (gk_panel_rows). A micro-tile is
 * GK_MR rows x 2 vectors of columns in accumulators (AVX-512: 12 x 32, 24 zmm; AVX2: 6 x 16, 12 ymm):
 * per k it loads 2 vectors of the B strip (L1) and broadcasts GK_MR values of the A strip; a last strip of fewer
 * rows takes a tile of 4 or 8 (gk_tile_part).
 *
 * Each element of C is summed in one fixed order, k ascending within a K block, the blocks added to
 * C in turn (C = beta C + alpha P_0, then C += alpha P_1, ...): the result depends on the shape
 * alone, never on alignment or on what ran before.
 *
 * precision = bf16 (backend.h): the operands rounded to bfloat16, the sums in float. Two forms:
 *  - cpu_sgemm_round_wW: the packed strips rounded in place (cpu_round_bf16_wW), then the float
 *    tile: products of bfloat16 values are exact in float, so only the operands change. Every width.
 *  - cpu_sgemm_bf16 (GK_PAIRS, cpu_kern_bf16.c, AVX-512 BF16): each strip packed straight into
 *    pairs of k, (k, k+1) of a row or column in one 32-bit word (the odd k's partner 0; an x-major
 *    A's rows converted in their own order instead, gk_rows_pairs, the same words), and the
 *    tile's multiply-adds are VDPBF16PS: per lane acc + a_{k+1} b_{k+1} + a_k b_k, twice the
 *    multiply-adds of an FMA per instruction. The conversion (VCVTNE2PS2BF16) rounds as core/bf16.h
 *    does but reads float denormals as 0, and VDPBF16PS flushes denormal results: the two forms'
 *    results differ by the order of each pair's adds and by denormals. */
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "backend/cpu_simd.h"
#include "backend/cpu_team.h"
#include "core/error.h"

#if SIMD_W == 16
#define GK_MR 12
#else
#define GK_MR 6
#endif
#define GK_NR (2 * SIMD_W)
#define GK_KC 256
#define GK_MC (GK_MR * 20)
#define GK_NC 2048
#ifndef GK_PAIRS
#define GK_PAIRS 0
#endif
#if GK_PAIRS && SIMD_W != 16
#error "the bfloat16 pairs (GK_PAIRS) are written for AVX-512 (SIMD_W 16) only"
#endif

/* The packed blocks of this thread (64-byte aligned; kept until exit, as OpenBLAS keeps its own). */
static float *SIMD_NAME(gk_buffer)(int which) {
  static _Thread_local float *buf[2];
  static const size_t floats[2] = {(size_t)GK_MC * GK_KC, (size_t)GK_KC * GK_NC};
  if (!buf[which] && !(buf[which] = aligned_alloc(64, floats[which] * sizeof(float))))
    surge_runtime_error("out of memory for the GEMM's packed blocks");
  return buf[which];
}

/* Stores row k of a strip: S floats at q (kc rows of S in all). Where S is not a whole number of vectors (the
 * A strips: MR = 12 at 16 floats, 6 at 8), its last vector is stored whole while row k + 1 of the same strip
 * follows, the extra lanes landing there before that row is written; the last row masked. Masked stores in every
 * row had cost the packed GEMM at 8 floats (AVX2's VMASKMOVPS) 1.02-1.45x at the gpt bench's shapes
 * (doc/results.md). */
SIMD_INLINE void gk_strip_store(float *q, int r0, int S, int k, int kc, vf v) {
  const int w = S - r0 < SIMD_W ? S - r0 : SIMD_W;
  if (w == SIMD_W || k + 1 < kc) vf_storeu(q + r0, v);
  else vf_storeu_n(q + r0, w, v);
}

/* Values r0.. of a strip's row in k-major X, from x on: n of the strip's S lie in the matrix, `left` of the block
 * from x on. A whole vector is read wherever the block holds one; its lanes past S are stored only into the next
 * row (gk_strip_store), those past n of a last strip (fewer than S) read masked, as zeros. */
SIMD_INLINE vf gk_kmajor_load(const float *x, int r0, int n, int left) {
  const int m = n - r0 < 0 ? 0 : n - r0 < SIMD_W ? n - r0 : SIMD_W;
  return m == SIMD_W || left - r0 >= SIMD_W ? vf_loadu(x + r0) : vf_loadu_n(x + r0, m);
}

/* x-major strips of S from x0 + t on (n of them valid, `full`: n == S, a constant where inlined): per W values of k
 * a W x W block of (x, k) loaded by rows and transposed, the last kc % W values of k one at a time */
SIMD_INLINE void gk_pack_xmajor_strip(const float *X, int ld, int x, int n, int k0, int kc, float *restrict q,
                                      const int S, const int full) {
  int k = 0;
  for (; k + SIMD_W <= kc; k += SIMD_W)
#pragma GCC unroll 4
    for (int r0 = 0; r0 < S; r0 += SIMD_W) {
      vf v[SIMD_W];
      const float *row = X + (size_t)(x + r0) * ld + k0 + k; /* one pointer stepped along: 16 held would spill */
#pragma GCC unroll 16
      for (int i = 0; i < SIMD_W; i++, row += ld) v[i] = r0 + i < (full ? S : n) ? vf_loadu(row) : vf_zero();
      vf_transpose(v);
#pragma GCC unroll 16
      for (int i = 0; i < SIMD_W; i++) gk_strip_store(q + (size_t)(k + i) * S, r0, S, k + i, kc, v[i]);
    }
  for (; k < kc; k++)
    for (int r = 0; r < S; r++) q[(size_t)k * S + r] = r < n ? X[(size_t)(x + r) * ld + k0 + k] : 0.0f;
}

/* Strips of S along x (A's rows, S = MR; B's columns, S = NR) from elements (x, k), x0 <= x < x0 + nx,
 * k0 <= k < k0 + kc, of a matrix stored x-major (X[x ld + k]: A untransposed, B transposed) or
 * k-major (X[k ld + x]); strip t holds (x0 + t S + r, k0 + k) at p[t S kc + k S + r], zeros past nx.
 * k-major strips are copied a vector of x at a time, row by row of X; x-major ones transposed in blocks
 * (gk_pack_xmajor_strip). Rows are stored in ascending k within a strip and strips in ascending t, so a
 * store's extra lanes (gk_strip_store) never land on a row already written. */
SIMD_INLINE void gk_pack(const float *X, int ld, int k_major, int x0, int nx, int k0, int kc, float *p, const int S) {
  if (k_major) { /* row by row of X, each read once from end to end */
    for (int k = 0; k < kc; k++) {
      const float *x = X + (size_t)(k0 + k) * ld + x0;
      for (int t = 0; t < nx; t += S) {
        const int n = nx - t < S ? nx - t : S;
        float *q = p + (size_t)t * kc + (size_t)k * S;
#pragma GCC unroll 4
        for (int r0 = 0; r0 < S; r0 += SIMD_W) gk_strip_store(q, r0, S, k, kc, gk_kmajor_load(x + t, r0, n, nx - t));
      }
    }
    return;
  }
  for (int t = 0; t < nx; t += S) {
    float *q = p + (size_t)t * kc;
    if (nx - t >= S) gk_pack_xmajor_strip(X, ld, x0 + t, S, k0, kc, q, S, 1);
    else gk_pack_xmajor_strip(X, ld, x0 + t, nx - t, k0, kc, q, S, 0);
  }
}

#if GK_PAIRS
/* 32 values of x from k = 32 v on (of K), as bfloat16 pairs in natural order (VCVTNE2PS2BF16 puts its
 * second operand's 16 in the low half, so VDPBF16PS pairs k and k + 1 of each); zeros past K */
SIMD_INLINE __m512bh pairs_at(const float *x, int v, int K) {
  const int n = K - 32 * v;
  if (n >= 32) return _mm512_cvtne2ps_pbh(vf_loadu(x + 32 * v + 16), vf_loadu(x + 32 * v));
  const int lo = n < 16 ? n : 16, hi = n < 16 ? 0 : n - 16;
  return _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(simd_prefix(hi), x + 32 * v + 16),
                             _mm512_maskz_loadu_ps(simd_prefix(lo), x + 32 * v));
}

/* gk_pack's strips in bfloat16 pairs of k: strip t (at p + t kc, S kc floats of room) holds (kc + 1) / 2 pair rows of
 * S words, word w of pair row kp (at p + t kc + kp S) x(x0 + t + w, k0 + 2kp) in its low half and
 * x(x0 + t + w, k0 + 2kp + 1) (0 past kc) in its high half. From an x-major X in one pass: per 16 of a strip's x
 * and 32 of k, each x's 32 values converted to 16 pair words (pairs_at), the 16 x 16 words transposed (moves only:
 * a word's bits are kept), and pair row kp's words stored at p + kp S. */
SIMD_INLINE void gk_pack_pairs_xmajor(const float *X, int ld, int x0, int nx, int k0, int kc, float *p,
                                      const int S) {
  const int pairs = (kc + 1) / 2;
  for (int t = 0; t < nx; t += S) {
    float *restrict q = p + (size_t)t * kc;
    for (int r0 = 0; r0 < S; r0 += SIMD_W) {
      const int w = S - r0 < SIMD_W ? S - r0 : SIMD_W, n = nx - t - r0; /* words stored; rows of X left */
      for (int v = 0; v * 32 < kc; v++) {
        vf r[SIMD_W];
#pragma GCC unroll 16
        for (int i = 0; i < SIMD_W; i++)
          r[i] = i < n && i < w ? (vf)pairs_at(X + (size_t)(x0 + t + r0 + i) * ld + k0, v, kc) : vf_zero();
        vf_transpose(r);
        const int rows = pairs - 16 * v; /* pair rows of this block: SIMD_W, or fewer in the last */
#pragma GCC unroll 16
        for (int i = 0; i < SIMD_W; i++) { /* unrolled whole, so r stays in registers */
          float *dst = q + (size_t)(16 * v + i) * S + r0;
          if (i >= rows) break;
          if (w == SIMD_W) vf_storeu(dst, r[i]);
          else vf_storeu_n(dst, w, r[i]);
        }
      }
    }
  }
}

/* gk_pack's strips of a k-major X straight in bfloat16 pairs (gk_pack_pairs_xmajor's layout) in one pass: per
 * pair row kp, rows 2kp and 2kp + 1 of X (the second zeros past kc) read a vector of x at a time, converted
 * together (VCVTNE2PS2BF16: the first row's 16 values in the low half) and interleaved into 16 pair words, stored
 * as gk_strip_store stores a row (pair rows in ascending kp, strips in ascending t). */
SIMD_INLINE void gk_pack_pairs_kmajor(const float *X, int ld, int x0, int nx, int k0, int kc, float *p, const int S) {
  /* 16-bit lanes out[2w] = in[w], out[2w + 1] = in[16 + w]: word w of the pair row from lane w of each row */
  static const uint16_t zip[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                   8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i z = _mm512_loadu_si512(zip);
  const int pairs = (kc + 1) / 2;
  for (int kp = 0; kp < pairs; kp++) {
    const float *x = X + (size_t)(k0 + 2 * kp) * ld + x0;
    const int alone = 2 * kp + 1 == kc;
    for (int t = 0; t < nx; t += S) {
      const int n = nx - t < S ? nx - t : S;
      float *q = p + (size_t)t * kc + (size_t)kp * S;
#pragma GCC unroll 4
      for (int r0 = 0; r0 < S; r0 += SIMD_W) {
        const vf lo = gk_kmajor_load(x + t, r0, n, nx - t);
        const vf hi = alone ? vf_zero() : gk_kmajor_load(x + ld + t, r0, n, nx - t);
        const __m512i v = _mm512_permutexvar_epi16(z, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        gk_strip_store(q, r0, S, kp, pairs, (vf)v);
      }
    }
  }
}
#endif

/* op(A)'s rows i0.. (mc) and k0.. (kc) into MR-row strips; op(B)'s k0.. (kc) and columns j0.. (nc) into
 * NR-column strips; in bfloat16 pairs (GK_PAIRS) packed and converted in one pass. In pairs only a k-major A is
 * packed: gk_panel_rows converts an x-major one's rows in their own order (gk_rows_pairs). */
SIMD_TARGET static void gk_pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc, float *ap) {
#if GK_PAIRS
  (void)ta;
  gk_pack_pairs_kmajor(A, lda, i0, mc, k0, kc, ap, GK_MR);
#else
  gk_pack(A, lda, ta, i0, mc, k0, kc, ap, GK_MR);
#endif
}
SIMD_TARGET static void gk_pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *bp) {
#if GK_PAIRS
  if (tb) gk_pack_pairs_xmajor(B, ldb, j0, nc, k0, kc, bp, GK_NR);
  else gk_pack_pairs_kmajor(B, ldb, j0, nc, k0, kc, bp, GK_NR);
#else
  gk_pack(B, ldb, !tb, j0, nc, k0, kc, bp, GK_NR);
#endif
}

#if !GK_PAIRS
/* y = x rounded to bfloat16 values in registers (vf_round_bf16: bf16_round's bits), any n */
SIMD_TARGET void SIMD_NAME(cpu_round_bf16)(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + SIMD_W <= n; i += SIMD_W) vf_storeu(y + i, vf_round_bf16(vf_loadu(x + i)));
  if (i < n) vf_storeu_n(y + i, (int)(n - i), vf_round_bf16(vf_loadu_n(x + i, (int)(n - i))));
}
#endif

/* The packed strips as the tile reads them: as packed (float: already so in bfloat16 pairs), or rounded. */
SIMD_INLINE void gk_prepare(float *p, int nx, int kc, const int S, const int bf16) {
#if GK_PAIRS
  (void)p, (void)nx, (void)kc, (void)S, (void)bf16;
#else
  if (bf16) SIMD_NAME(cpu_round_bf16)(p, p, (size_t)((nx + S - 1) / S) * kc * S);
#endif
}

/* C's tile (mr <= rows rows, nr <= NR columns) = beta C + alpha (the strips' product over kc); beta == 0
 * does not read C; the products of `rows` rows of the strip (MR, or 8 or 4 for the last rows of A: a constant where
 * inlined), those past mr not stored. A's value (r, k) at ap[r ar + k ak]: a packed strip (ar 1, ak MR), or in
 * float an x-major A where it is stored (ar its ld, ak 1); in pairs, the word of pair kp at ap[r ar + kp ak]: a
 * packed strip (ar 1, ak MR) or rows of A converted in their own order (gk_rows_pairs: ar a row's words, ak 1).
 * `full` (a constant where inlined): mr == rows and nr == NR, stored straight from the registers; otherwise through
 * a tile in memory. */
SIMD_INLINE void gk_tile(int kc, const float *restrict ap, size_t ar, size_t ak, const float *restrict bp,
                         float *restrict c, int ldc, float alpha, float beta, int mr, int nr, const int rows,
                         const int full) {
  vf acc[GK_MR][2];
#pragma GCC unroll 16
  for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = vf_zero();
  /* C's lines asked for now, so that they are in L1 when the sums are stored: where C is larger than the L2 (the
   * forward's outputs, 2048 x 768 floats in the gpt bench) each tile's stores otherwise waited on 24 misses. Not in
   * short sums, whose C is small and near: attention's 64^3 tiles lost 1-2% to the prefetches. */
  if (full && kc > 64)
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++) {
      __builtin_prefetch(c + (size_t)r * ldc, 1, 3);
      __builtin_prefetch(c + (size_t)r * ldc + GK_NR - 1, 1, 3);
    }
#if GK_PAIRS /* pair rows of k (gk_pack_pairs_xmajor); a word of the A strip broadcast whole, as a float's bits */
  for (int kp = 0; kp < (kc + 1) / 2; kp++) {
    const __m512bh b0 = (__m512bh)vf_load(bp), b1 = (__m512bh)vf_load(bp + SIMD_W);
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++) {
      const __m512bh a = (__m512bh)vf_set1(ap[r * ar]);
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
    ap += ak;
    bp += GK_NR;
  }
#else
  for (int k = 0; k < kc; k++) {
    const vf b0 = vf_load(bp), b1 = vf_load(bp + SIMD_W);
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++) {
      const vf a = vf_set1(ap[r * ar]);
      acc[r][0] = vf_fmadd(a, b0, acc[r][0]);
      acc[r][1] = vf_fmadd(a, b1, acc[r][1]);
    }
    ap += ak;
    bp += GK_NR;
  }
#endif
  const vf va = vf_set1(alpha), vb = vf_set1(beta);
  if (full) {
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++) {
      float *cr = c + (size_t)r * ldc;
      vf x0 = vf_mul(va, acc[r][0]), x1 = vf_mul(va, acc[r][1]);
      if (beta != 0.0f) {
        x0 = vf_fmadd(vb, vf_loadu(cr), x0);
        x1 = vf_fmadd(vb, vf_loadu(cr + SIMD_W), x1);
      }
      vf_storeu(cr, x0);
      vf_storeu(cr + SIMD_W, x1);
    }
    return;
  }
  float T[GK_MR][GK_NR] __attribute__((aligned(64)));
#pragma GCC unroll 16
  for (int r = 0; r < rows; r++) {
    vf_store(T[r], vf_mul(va, acc[r][0]));
    vf_store(T[r] + SIMD_W, vf_mul(va, acc[r][1]));
  }
  for (int r = 0; r < mr; r++) {
    float *cr = c + (size_t)r * ldc;
    for (int v = 0; v * SIMD_W < nr; v++) {
      const int n = nr - v * SIMD_W < SIMD_W ? nr - v * SIMD_W : SIMD_W;
      vf x = vf_load(T[r] + v * SIMD_W);
      if (beta != 0.0f) x = vf_fmadd(vb, vf_loadu_n(cr + v * SIMD_W, n), x);
      vf_storeu_n(cr + v * SIMD_W, n, x);
    }
  }
}

SIMD_TARGET static void gk_tile_full(int kc, const float *ap, const float *bp, float *c, int ldc, float alpha,
                                     float beta) {
  gk_tile(kc, ap, 1, GK_MR, bp, c, ldc, alpha, beta, GK_MR, GK_NR, GK_MR, 1);
}
/* A tile short of MR rows or NR columns: the products of the fewest of 4, 8 or MR rows that hold its mr (the last
 * rows of A: 8 of a gpt's 2048, 4 of attention's 64, where all 12 were multiplied), stored straight where whole. */
SIMD_INLINE void gk_tile_part(int kc, const float *ap, size_t ar, size_t ak, const float *bp, float *c, int ldc,
                              float alpha, float beta, int mr, int nr) {
  const int whole = nr == GK_NR;
  if (mr == 4 && whole) gk_tile(kc, ap, ar, ak, bp, c, ldc, alpha, beta, mr, nr, 4, 1);
  else if (mr <= 4) gk_tile(kc, ap, ar, ak, bp, c, ldc, alpha, beta, mr, nr, 4, 0);
#if GK_MR > 8
  else if (mr == 8 && whole) gk_tile(kc, ap, ar, ak, bp, c, ldc, alpha, beta, mr, nr, 8, 1);
  else if (mr <= 8) gk_tile(kc, ap, ar, ak, bp, c, ldc, alpha, beta, mr, nr, 8, 0);
#endif
  else gk_tile(kc, ap, ar, ak, bp, c, ldc, alpha, beta, mr, nr, GK_MR, 0);
}
SIMD_TARGET static void gk_tile_edge(int kc, const float *ap, const float *bp, float *c, int ldc, float alpha,
                                     float beta, int mr, int nr) {
  gk_tile_part(kc, ap, 1, GK_MR, bp, c, ldc, alpha, beta, mr, nr);
}
#if GK_PAIRS
/* Rows i0.. (mc of them, zeros up to a whole strip of MR) and k0.. (kc) of an x-major A converted to bfloat16 in their
 * own order: row r's pair kp is the word at ap[r w + kp], w = 16 ceil(kc / 32) words a row, (k0 + 2kp, k0 + 2kp + 1)
 * in its low and high half (0 past kc); the words pairs_at gives, so the tiles see the values gk_pack_pairs_xmajor
 * would have given them, without its transposes. At most MC rows of KC / 2 words: half the packing buffer. Returns
 * w. */
SIMD_INLINE int gk_rows_pairs(const float *A, int lda, int i0, int mc, int k0, int kc, float *restrict ap) {
  const int v_row = (kc + 31) / 32, w = 16 * v_row, rows = (mc + GK_MR - 1) / GK_MR * GK_MR;
  for (int r = 0; r < rows; r++)
    for (int v = 0; v < v_row; v++)
      vf_storeu(ap + (size_t)r * w + 16 * v, r < mc ? (vf)pairs_at(A + (size_t)(i0 + r) * lda + k0, v, kc) : vf_zero());
  return w;
}
#endif

/* A tile whose A strip is rows of A's values (float) or pair words (gk_rows_pairs) in the order of k, ar apart: a
 * whole strip of A where it is stored, or gk_rows_pairs's rows with their zeros (a short last strip read as far as
 * gk_tile_part's tile goes), mr rows stored */
SIMD_TARGET static void gk_tile_rows(int kc, const float *a, size_t ar, const float *bp, float *c, int ldc,
                                     float alpha, float beta, int mr, int nr) {
  if (mr == GK_MR && nr == GK_NR) gk_tile(kc, a, ar, 1, bp, c, ldc, alpha, beta, GK_MR, GK_NR, GK_MR, 1);
  else gk_tile_part(kc, a, ar, 1, bp, c, ldc, alpha, beta, mr, nr);
}

/* One packed panel of B (kc values of k from k0, nc columns from j0) against rows of op(A): what a
 * thread of the team needs (gk_panel_part). */
typedef struct gk_panel {
  int ta, M, k0, kc, j0, nc, bf16;
  const float *A, *bp;
  int lda, ldc;
  float *C;
  float alpha, b_eff;
} gk_panel_t;

/* C's rows [lo, hi) against the panel: blocks of up to MC rows of op(A) packed into this thread's buffer, then the
 * tiles. An x-major A (ta = 0) is not packed: in float its whole strips are read where A is stored (rows lda apart),
 * and only a last strip of fewer than MR rows is packed (with zeros past the matrix); in bfloat16 pairs its rows are
 * converted in their own order (gk_rows_pairs: the pairs of a row are its consecutive values), not transposed into
 * strips. The same products in the same order, so the same bits. The packing's copy cost more than it saved: without
 * it the attention's 64^3 tiles ran 1.17-1.19x in float and 1.09-1.16x in pairs, the gpt bench's step 1.018x and
 * 1.01-1.03x (doc/results.md). A k-major A (ta) stays packed: read in place, fc1's weight gradient in the gpt bench
 * ran 0.85-0.94x (rows of k 4 KiB apart share a set of the L1), the other weight gradients level. */
SIMD_TARGET static void gk_panel_rows(const gk_panel_t *g, int lo, int hi) {
  float *ap = SIMD_NAME(gk_buffer)(0);
  const int kc = g->kc, nc = g->nc;
#if GK_PAIRS
  const int in_place = g->ta ? lo : hi; /* rows [lo, in_place) of A not packed */
#else
  const int in_place = g->ta || g->bf16 ? lo : lo + (hi - lo) / GK_MR * GK_MR;
#endif
  for (int i0 = lo; i0 < in_place; i0 += GK_MC) {
    const int mc = in_place - i0 < GK_MC ? in_place - i0 : GK_MC;
#if GK_PAIRS
    const float *rows = ap;
    const size_t ar = (size_t)gk_rows_pairs(g->A, g->lda, i0, mc, g->k0, kc, ap);
#else
    const float *rows = g->A + (size_t)i0 * g->lda + g->k0;
    const size_t ar = (size_t)g->lda;
#endif
    for (int jr = 0; jr < nc; jr += GK_NR)
      for (int ir = 0; ir < mc; ir += GK_MR)
        gk_tile_rows(kc, rows + (size_t)ir * ar, ar, g->bp + (size_t)jr * kc,
                     g->C + (size_t)(i0 + ir) * g->ldc + g->j0 + jr, g->ldc, g->alpha, g->b_eff,
                     mc - ir < GK_MR ? mc - ir : GK_MR, nc - jr < GK_NR ? nc - jr : GK_NR);
  }
  lo = in_place;
  for (int i0 = lo; i0 < hi; i0 += GK_MC) {
    const int mc = hi - i0 < GK_MC ? hi - i0 : GK_MC;
    gk_pack_a(g->ta, g->A, g->lda, i0, mc, g->k0, kc, ap);
    gk_prepare(ap, mc, kc, GK_MR, g->bf16);
    for (int jr = 0; jr < nc; jr += GK_NR)
      for (int ir = 0; ir < mc; ir += GK_MR) {
        const int mr = mc - ir < GK_MR ? mc - ir : GK_MR, nr = nc - jr < GK_NR ? nc - jr : GK_NR;
        float *c = g->C + (size_t)(i0 + ir) * g->ldc + g->j0 + jr;
        const float *a = ap + (size_t)ir * kc, *b = g->bp + (size_t)jr * kc;
        if (mr == GK_MR && nr == GK_NR) gk_tile_full(kc, a, b, c, g->ldc, g->alpha, g->b_eff);
        else gk_tile_edge(kc, a, b, c, g->ldc, g->alpha, g->b_eff, mr, nr);
      }
  }
}

/* Part t of T (cpu_team.h): a run of whole strips of MR rows. A tile's sums do not depend on which
 * rows share it, so the bits do not depend on T. */
static void gk_panel_part(void *arg, int t, int T) {
  const gk_panel_t *g = arg;
  const int strips = (g->M + GK_MR - 1) / GK_MR, lo = GK_MR * (int)((long)strips * t / T);
  const int end = GK_MR * (int)((long)strips * (t + 1) / T), hi = end < g->M ? end : g->M;
  if (lo < hi) gk_panel_rows(g, lo, hi);
}

/* C (M,N) = alpha op(A) op(B) + beta C for M, N, K >= 1 (what cpu_gemm.c hands it); bf16: the
 * operands rounded to bfloat16 (always, in pairs). Each panel of B is packed once, by the calling
 * thread, and its rows of C split over the team cpu_gemm_team gives (one thread: all of them here). */
SIMD_INLINE void gk_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc, const int bf16) {
  float *bp = SIMD_NAME(gk_buffer)(1);
  const int T = cpu_gemm_team(M, N, K);
  for (int j0 = 0; j0 < N; j0 += GK_NC) {
    const int nc = N - j0 < GK_NC ? N - j0 : GK_NC;
    for (int k0 = 0; k0 < K; k0 += GK_KC) {
      const int kc = K - k0 < GK_KC ? K - k0 : GK_KC;
      gk_pack_b(tb, B, ldb, k0, kc, j0, nc, bp);
      gk_prepare(bp, nc, kc, GK_NR, bf16);
      gk_panel_t g = {ta, M, k0, kc, j0, nc, bf16, A, bp, lda, ldc, C, alpha, k0 == 0 ? beta : 1.0f};
      if (T > 1) cpu_team_run(T, gk_panel_part, &g);
      else gk_panel_rows(&g, 0, M);
    }
  }
}

#if GK_PAIRS
SIMD_TARGET void cpu_sgemm_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                                const float *B, int ldb, float beta, float *C, int ldc) {
  gk_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1);
}
#else
SIMD_TARGET void SIMD_NAME(cpu_sgemm)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                                      const float *B, int ldb, float beta, float *C, int ldc) {
  gk_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 0);
}
SIMD_TARGET void SIMD_NAME(cpu_sgemm_round)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                                            const float *B, int ldb, float beta, float *C, int ldc) {
  gk_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1);
}
#endif

#undef GK_MR
#undef GK_NR
#undef GK_KC
#undef GK_MC
#undef GK_NC
#undef GK_PAIRS
