/* Internal to the "cpu" backend: the vector helpers its hand-written kernels are written in, for
 * one vector width. A kernel source defines SIMD_W (16: AVX-512F, 8: AVX2 + FMA) and includes
 * this, then the kernel templates (cpu_*_kern.h); each helper is the width's instruction or, on
 * AVX2, a short sequence of them (masked lanes by table or by compare). So a kernel is written
 * once and compiled once per width (cpu_kern_w16.c, cpu_kern_w8.c), its functions named by
 * SIMD_NAME, every one compiled for the width's target (SIMD_TARGET).
 *
 *   vf            W floats                 vi   W int32        vm   a lane mask from a compare
 *   bits          unsigned, lane l is bit l: which lanes an expanding load fills or a compress keeps
 *   vf_loadu_n    the first n lanes of p, zeros after (never reads past p[n-1]); vf_storeu_n stores them
 *   vf_expand     lanes set in bits take p[0], p[1], ... in order, the others 0
 *   vf_compress   the lanes set in bits moved to the front, in order (the rest unspecified)
 *   vf_even/odd   the even / odd lanes of the 2W lanes a then b; vf_zip_lo/hi: a0 b0 a1 b1 ... */
#ifndef SURGE_BACKEND_CPU_SIMD_H
#define SURGE_BACKEND_CPU_SIMD_H

#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu_simd_tables.h"

#if !defined(SIMD_W)
#error "define SIMD_W (16 or 8) before including cpu_simd.h"
#endif

#define SIMD_CAT_(a, b) a##b
#define SIMD_CAT(a, b) SIMD_CAT_(a, b)

#if SIMD_W == 16 && defined(SIMD_BF16) /* AVX-512 with its bfloat16 instructions (cpu_kern_bf16.c) */
#define SIMD_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16,fma")))
#define SIMD_NAME(x) SIMD_CAT(x, _bf16)
#elif SIMD_W == 16
#define SIMD_TARGET __attribute__((target("avx512f,fma")))
#define SIMD_NAME(x) SIMD_CAT(x, _w16)
#endif
#if SIMD_W == 16
#define SIMD_OP(x) _mm512_##x /* an intrinsic of the width */
#define SIMD_INLINE SIMD_TARGET static inline __attribute__((always_inline))

typedef __m512 vf;
typedef __m512i vi;
typedef __m512d vd;
typedef __mmask16 vm;

SIMD_INLINE __mmask16 simd_prefix(int n) { return (__mmask16)((1u << n) - 1u); }
SIMD_INLINE vf vf_loadu_n(const float *p, int n) { return _mm512_maskz_loadu_ps(simd_prefix(n), p); }
SIMD_INLINE void vf_storeu_n(float *p, int n, vf v) { _mm512_mask_storeu_ps(p, simd_prefix(n), v); }
SIMD_INLINE vf vf_expand(unsigned bits, const float *p) { return _mm512_maskz_expandloadu_ps((__mmask16)bits, p); }
SIMD_INLINE vf vf_compress(unsigned bits, vf v) { return _mm512_maskz_compress_ps((__mmask16)bits, v); }
SIMD_INLINE vm vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
SIMD_INLINE vf vf_keep(vm m, vf v) { return _mm512_maskz_mov_ps(m, v); }
SIMD_INLINE vf vf_pick(vm m, vf if_clear, vf if_set) { return _mm512_mask_blend_ps(m, if_clear, if_set); }
SIMD_INLINE vi vi_pick(vm m, vi if_clear, vi if_set) { return _mm512_mask_blend_epi32(m, if_clear, if_set); }
SIMD_INLINE vm vf_unordered(vf v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q); } /* NaN lanes */
SIMD_INLINE vi vi_of_bits(vf v) { return _mm512_castps_si512(v); }
SIMD_INLINE vf vf_of_bits(vi v) { return _mm512_castsi512_ps(v); }
SIMD_INLINE vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
SIMD_INLINE vi vi_or(vi a, vi b) { return _mm512_or_si512(a, b); }
SIMD_INLINE vi vi_even_lanes(void) { /* 0, 2, 4, ... */
  return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
SIMD_INLINE vf vf_even(vf a, vf b) { return _mm512_permutex2var_ps(a, vi_even_lanes(), b); }
SIMD_INLINE vf vf_odd(vf a, vf b) {
  return _mm512_permutex2var_ps(a, _mm512_add_epi32(vi_even_lanes(), _mm512_set1_epi32(1)), b);
}
SIMD_INLINE vf vf_zip_lo(vf a, vf b) {
  return _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), b);
}
SIMD_INLINE vf vf_zip_hi(vf a, vf b) {
  return _mm512_permutex2var_ps(a, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), b);
}
/* the low and high halves of v widened to doubles */
SIMD_INLINE vd vd_lo(vf v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
SIMD_INLINE vd vd_hi(vf v) { return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))); }

/* r[i] = column i of the 16x16 block whose rows were r[0..15]. */
SIMD_INLINE void vf_transpose(vf r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) { /* pairs of rows interleaved within 128-bit lanes */
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) { /* quads of rows: r[4i+k] holds, per 128-bit lane L, column 4L+k */
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]),
                  c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int k = 0; k < 4; k++) { /* 128-bit lanes gathered across the quads, in two steps */
    t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
    t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
    t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
  }
  for (int k = 0; k < 4; k++) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
    r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xdd);
  }
}

#elif SIMD_W == 8
#define SIMD_TARGET __attribute__((target("avx2,fma")))
#define SIMD_NAME(x) SIMD_CAT(x, _w8)
#define SIMD_OP(x) _mm256_##x
#define SIMD_INLINE SIMD_TARGET static inline __attribute__((always_inline))

typedef __m256 vf;
typedef __m256i vi;
typedef __m256d vd;
typedef __m256 vm; /* all-ones lanes where set */

SIMD_INLINE __m256i simd_prefix(int n) { /* lanes < n all ones */
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
SIMD_INLINE __m256i simd_bit_lanes(unsigned bits) { /* lane l all ones where bit l is set */
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), bit), bit);
}
SIMD_INLINE vf vf_loadu_n(const float *p, int n) { return _mm256_maskload_ps(p, simd_prefix(n)); }
SIMD_INLINE void vf_storeu_n(float *p, int n, vf v) { _mm256_maskstore_ps(p, simd_prefix(n), v); }
SIMD_INLINE vf vf_expand(unsigned bits, const float *p) {
  const vf packed = vf_loadu_n(p, __builtin_popcount(bits));
  const vf spread = _mm256_permutevar8x32_ps(packed, _mm256_load_si256((const __m256i *)cpu_simd_expand8[bits & 255]));
  return _mm256_and_ps(spread, _mm256_castsi256_ps(simd_bit_lanes(bits)));
}
SIMD_INLINE vf vf_compress(unsigned bits, vf v) {
  return _mm256_permutevar8x32_ps(v, _mm256_load_si256((const __m256i *)cpu_simd_compress8[bits & 255]));
}
SIMD_INLINE vm vf_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
SIMD_INLINE vf vf_keep(vm m, vf v) { return _mm256_and_ps(m, v); }
SIMD_INLINE vf vf_pick(vm m, vf if_clear, vf if_set) { return _mm256_blendv_ps(if_clear, if_set, m); }
SIMD_INLINE vi vi_pick(vm m, vi if_clear, vi if_set) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(if_clear), _mm256_castsi256_ps(if_set), m));
}
SIMD_INLINE vm vf_unordered(vf v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); } /* NaN lanes */
SIMD_INLINE vi vi_of_bits(vf v) { return _mm256_castps_si256(v); }
SIMD_INLINE vf vf_of_bits(vi v) { return _mm256_castsi256_ps(v); }
SIMD_INLINE vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
SIMD_INLINE vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
SIMD_INLINE vi vi_even_lanes(void) { return _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14); }
/* within 128-bit lanes, then the 64-bit quarters reordered (a's two halves first) */
SIMD_INLINE vf vf_even(vf a, vf b) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
}
SIMD_INLINE vf vf_odd(vf a, vf b) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
}
SIMD_INLINE vf vf_zip_lo(vf a, vf b) {
  return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x20);
}
SIMD_INLINE vf vf_zip_hi(vf a, vf b) {
  return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x31);
}
SIMD_INLINE vd vd_lo(vf v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
SIMD_INLINE vd vd_hi(vf v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

/* r[i] = column i of the 8x8 block whose rows were r[0..7]. */
SIMD_INLINE void vf_transpose(vf r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int k = 0; k < 4; k++) {
    r[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
    r[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
  }
}

#else
#error "SIMD_W must be 16 or 8"
#endif

/* The ops that are one instruction of the same name at either width. */
SIMD_INLINE vf vf_zero(void) { return SIMD_OP(setzero_ps)(); }
SIMD_INLINE vf vf_set1(float a) { return SIMD_OP(set1_ps)(a); }
SIMD_INLINE vf vf_load(const float *p) { return SIMD_OP(load_ps)(p); }
SIMD_INLINE vf vf_loadu(const float *p) { return SIMD_OP(loadu_ps)(p); }
SIMD_INLINE void vf_store(float *p, vf v) { SIMD_OP(store_ps)(p, v); }
SIMD_INLINE void vf_storeu(float *p, vf v) { SIMD_OP(storeu_ps)(p, v); }
SIMD_INLINE vf vf_add(vf a, vf b) { return SIMD_OP(add_ps)(a, b); }
SIMD_INLINE vf vf_mul(vf a, vf b) { return SIMD_OP(mul_ps)(a, b); }
SIMD_INLINE vf vf_max(vf a, vf b) { return SIMD_OP(max_ps)(a, b); }
SIMD_INLINE vf vf_fmadd(vf a, vf b, vf c) { return SIMD_OP(fmadd_ps)(a, b, c); }
/* lanes 0 .. W/2-1: the sums of x's neighbouring lanes (0+1, 2+3, ...), the rest y's: applied to W
 * vectors in rounds (W/2 calls, W/4, ... 1) it leaves one vector whose lane i is the sum of vector i */
SIMD_INLINE vf vf_pair_sums(vf x, vf y) { return vf_add(vf_even(x, y), vf_odd(x, y)); }
/* One vector whose lane i is the sum of acc[i]'s lanes, from SIMD_W vectors (acc is overwritten):
 * vf_pair_sums in rounds. Give it a copy of a loop's accumulators made after the loop: an array whose
 * address it takes GCC keeps in memory through the loop, a store after every multiply-add. */
SIMD_INLINE vf vf_fold_sums(vf acc[SIMD_W]) {
#pragma GCC unroll 4
  for (int n = SIMD_W; n > 1; n /= 2)
#pragma GCC unroll 8
    for (int i = 0; i < n / 2; i++) acc[i] = vf_pair_sums(acc[2 * i], acc[2 * i + 1]);
  return acc[0];
}
SIMD_INLINE vi vi_set1(int a) { return SIMD_OP(set1_epi32)(a); }
SIMD_INLINE vi vi_add(vi a, vi b) { return SIMD_OP(add_epi32)(a, b); }
SIMD_INLINE vf vf_of_vi(vi a) { return SIMD_OP(cvtepi32_ps)(a); }
SIMD_INLINE vi vi_shr16(vi a) { return SIMD_OP(srli_epi32)(a, 16); }
/* v's lanes rounded to the nearest bfloat16 values, as core/bf16.h's bf16_round: to nearest, ties to
 * even, past the largest to infinity; a NaN stays a quiet NaN */
SIMD_INLINE vf vf_round_bf16(vf v) {
  const vi u = vi_of_bits(v), top = vi_set1((int)0xffff0000u);
  const vi nearest = vi_and(vi_add(vi_add(u, vi_set1(0x7fff)), vi_and(vi_shr16(u), vi_set1(1))), top);
  const vi quiet = vi_and(vi_or(u, vi_set1(0x00400000)), top);
  return vf_of_bits(vi_pick(vf_unordered(v), nearest, quiet));
}
SIMD_INLINE vd vd_zero(void) { return SIMD_OP(setzero_pd)(); }
SIMD_INLINE vd vd_add(vd a, vd b) { return SIMD_OP(add_pd)(a, b); }
SIMD_INLINE vd vd_load(const double *p) { return SIMD_OP(load_pd)(p); }
SIMD_INLINE void vd_store(double *p, vd v) { SIMD_OP(store_pd)(p, v); }
SIMD_INLINE void vd_storeu(double *p, vd v) { SIMD_OP(storeu_pd)(p, v); }

/* A vector's widened halves in memory: W doubles at p (aligned) += v's lanes. */
SIMD_INLINE void vd_add_into(double *p, vf v) {
  vd_store(p, vd_add(vd_load(p), vd_lo(v)));
  vd_store(p + SIMD_W / 2, vd_add(vd_load(p + SIMD_W / 2), vd_hi(v)));
}

#endif
