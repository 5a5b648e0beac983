/* "cpu" backend convolution lowering and pooling. im2col/col2im work on whole output rows: for a
 * kernel offset (kh, kw) and an output row oh, the valid output columns form one contiguous run
 * [ow_lo, ow_hi) whose input columns step by the stride; everything outside it is padding. The _ld
 * forms place one image's lowering in columns of a wider matrix (row stride ld), so the images of
 * a block of samples sit side by side in one col (C*KH*KW, nb*OH*OW). */
#include <string.h>

#include "backend/cpu_ops.h"

/* Geometry of one convolution lowering. */
typedef struct conv_geom {
  int C, H, W, KH, KW, stride, pad, OH, OW;
} conv_geom_t;

static conv_geom_t conv_geom(int C, int H, int W, int KH, int KW, int stride, int pad) {
  conv_geom_t g = {C, H, W, KH, KW, stride, pad, 0, 0};
  g.OH = (H + 2 * pad - KH) / stride + 1;
  g.OW = (W + 2 * pad - KW) / stride + 1;
  return g;
}

/* First output column whose input column ow*stride - pad + kw is >= 0, and one past the last whose
 * input column is < W (both clamped to [0, OW]). */
static void conv_valid_cols(const conv_geom_t *g, int kw, int *ow_lo, int *ow_hi) {
  int shift = g->pad - kw; // input column = ow*stride - shift
  int lo = shift > 0 ? (shift + g->stride - 1) / g->stride : 0;
  int last = g->W - 1 + shift; // ow*stride <= last
  int hi = last < 0 ? 0 : last / g->stride + 1;
  if (hi > g->OW) hi = g->OW;
  if (lo > hi) lo = hi;
  *ow_lo = lo;
  *ow_hi = hi;
}

CPU_SHORT_ROWS void cpu_im2col_ld(const float *restrict x, int C, int H, int W, int KH, int KW, int stride, int pad,
                   float *restrict col, size_t ld) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, pad);
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++)
      for (int kw = 0; kw < KW; kw++) {
        int lo, hi;
        conv_valid_cols(&g, kw, &lo, &hi);
        float *restrict out = col + (((size_t)c * KH + kh) * KW + kw) * ld;
        for (int oh = 0; oh < g.OH; oh++, out += g.OW) {
          int h = oh * stride - pad + kh;
          /* rows are short (tens of floats): plain loops beat memcpy/memset calls (CPU_SHORT_ROWS) */
          if (h < 0 || h >= H || lo == hi) {
            for (int ow = 0; ow < g.OW; ow++) out[ow] = 0.0f;
            continue;
          }
          const float *restrict in = x + ((size_t)c * H + h) * W + (lo * stride - pad + kw);
          for (int ow = 0; ow < lo; ow++) out[ow] = 0.0f;
          if (stride == 1)
            for (int ow = lo; ow < hi; ow++) out[ow] = in[ow - lo];
          else
            for (int ow = lo; ow < hi; ow++) out[ow] = in[(size_t)(ow - lo) * stride];
          for (int ow = hi; ow < g.OW; ow++) out[ow] = 0.0f;
        }
      }
}

CPU_SHORT_ROWS void cpu_col2im_ld(const float *restrict col, size_t ld, int C, int H, int W, int KH, int KW, int stride,
                   int pad, float *restrict dx) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, pad);
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++)
      for (int kw = 0; kw < KW; kw++) {
        int lo, hi;
        conv_valid_cols(&g, kw, &lo, &hi);
        const float *restrict src = col + (((size_t)c * KH + kh) * KW + kw) * ld;
        for (int oh = 0; oh < g.OH; oh++, src += g.OW) {
          int h = oh * stride - pad + kh;
          if (h < 0 || h >= H || lo == hi) continue;
          float *restrict dst = dx + ((size_t)c * H + h) * W + (lo * stride - pad + kw);
          if (stride == 1)
            for (int ow = lo; ow < hi; ow++) dst[ow - lo] += src[ow];
          else
            for (int ow = lo; ow < hi; ow++) dst[(size_t)(ow - lo) * stride] += src[ow];
        }
      }
}

void cpu_im2col(const float *x, int C, int H, int W, int KH, int KW, int stride, int pad, float *col) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, pad);
  cpu_im2col_ld(x, C, H, W, KH, KW, stride, pad, col, (size_t)g.OH * g.OW);
}

void cpu_col2im(const float *col, int C, int H, int W, int KH, int KW, int stride, int pad, float *dx) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, pad);
  cpu_col2im_ld(col, (size_t)g.OH * g.OW, C, H, W, KH, KW, stride, pad, dx);
}

/* ---- pooling */

/* The 2x2 stride-2 window (the zoo's pools) in AVX-512, 16 outputs at a time: each row pair's even
 * and odd columns are split by permutes, then the same scan order and strict comparisons as the
 * general loop (a later element wins only when strictly larger; NaN never wins), as mask blends.
 * The general loop's branches mispredict on real data and it ran at about 4 GB/s. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MAXPOOL_AVX512 1

__attribute__((target("avx512f"))) static void maxpool_2x2(int P, int H, int W, const float *restrict x,
                                                           float *restrict y, float *restrict argmax) {
  const int OH = H / 2, OW = W / 2;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i one = _mm512_set1_epi32(1), down = _mm512_set1_epi32(W), diag = _mm512_set1_epi32(W + 1);
  for (int p = 0; p < P; p++) {
    const float *plane = x + (size_t)p * H * W;
    for (int oh = 0; oh < OH; oh++, y += OW, argmax += OW) {
      const float *r0 = plane + (size_t)2 * oh * W, *r1 = r0 + W;
      for (int ow = 0; ow < OW; ow += 16) {
        const int n = OW - ow < 16 ? OW - ow : 16, lo = 2 * n < 16 ? 2 * n : 16, hi = 2 * n - lo;
        const __mmask16 mo = (__mmask16)((1u << n) - 1u), mlo = (__mmask16)((1u << lo) - 1u),
                        mhi = (__mmask16)((1u << hi) - 1u);
        const __m512 t0 = _mm512_maskz_loadu_ps(mlo, r0 + 2 * ow), t1 = _mm512_maskz_loadu_ps(mhi, r0 + 2 * ow + 16);
        const __m512 u0 = _mm512_maskz_loadu_ps(mlo, r1 + 2 * ow), u1 = _mm512_maskz_loadu_ps(mhi, r1 + 2 * ow + 16);
        const __m512 a = _mm512_permutex2var_ps(t0, even, t1), b = _mm512_permutex2var_ps(t0, odd, t1);
        const __m512 c = _mm512_permutex2var_ps(u0, even, u1), d = _mm512_permutex2var_ps(u0, odd, u1);
        __mmask16 g = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ);
        __m512 best = _mm512_mask_blend_ps(g, a, b);
        __m512i off = _mm512_maskz_mov_epi32(g, one);
        g = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ);
        best = _mm512_mask_blend_ps(g, best, c);
        off = _mm512_mask_mov_epi32(off, g, down);
        g = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ);
        best = _mm512_mask_blend_ps(g, best, d);
        off = _mm512_mask_mov_epi32(off, g, diag);
        const __m512i at = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32(2 * oh * W + 2 * ow), even), off);
        _mm512_mask_storeu_ps(y + ow, mo, best);
        _mm512_mask_storeu_ps(argmax + ow, mo, _mm512_cvtepi32_ps(at));
      }
    }
  }
}
#else
#define MAXPOOL_AVX512 0
static void maxpool_2x2(int P, int H, int W, const float *x, float *y, float *argmax) {
  (void)P, (void)H, (void)W, (void)x, (void)y, (void)argmax;
}
#endif

CPU_CLONES void cpu_maxpool_fwd(int P, int H, int W, int k, int s, const float *restrict x, float *restrict y,
                     float *restrict argmax) {
  if (MAXPOOL_AVX512 && k == 2 && s == 2 && cpu_has_avx512()) {
    maxpool_2x2(P, H, W, x, y, argmax);
    return;
  }
  int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
  for (int p = 0; p < P; p++) {
    const float *restrict plane = x + (size_t)p * H * W;
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        // scan the window row by row; a later element wins only when strictly larger
        int top_left = oh * s * W + ow * s, best_at = top_left;
        float best = plane[top_left];
        for (int i = 0; i < k; i++) {
          const float *restrict row = plane + top_left + i * W;
          for (int j = 0; j < k; j++)
            if (row[j] > best) {
              best = row[j];
              best_at = top_left + i * W + j;
            }
        }
        *y++ = best;
        *argmax++ = (float)best_at;
      }
  }
}

CPU_CLONES void cpu_maxpool_bwd(int P, int H, int W, int k, int s, const float *restrict dy,
                     const float *restrict argmax, float *restrict dx, int dx_write) {
  size_t per_plane = (size_t)((H - k) / s + 1) * (size_t)((W - k) / s + 1);
  for (int p = 0; p < P; p++) {
    float *restrict plane = dx + (size_t)p * H * W;
    if (dx_write) memset(plane, 0, (size_t)H * W * sizeof *plane); /* while the plane is cached */
    for (size_t o = 0; o < per_plane; o++) plane[(size_t)argmax[o]] += dy[o];
    dy += per_plane;
    argmax += per_plane;
  }
}

CPU_CLONES void cpu_avgpool_fwd(int P, int HW, const float *restrict x, float *restrict y) {
  for (int p = 0; p < P; p++) y[p] = (float)(cpu_sum_d(x + (size_t)p * HW, (size_t)HW) / HW);
}

CPU_CLONES void cpu_avgpool_bwd(int P, int HW, const float *restrict dy, float *restrict dx, int dx_write) {
  const float inv = 1.0f / (float)HW;
  for (int p = 0; p < P; p++) {
    const float g = dy[p] * inv;
    float *restrict plane = dx + (size_t)p * HW;
    if (dx_write)
      for (int i = 0; i < HW; i++) plane[i] = g;
    else
      for (int i = 0; i < HW; i++) plane[i] += g;
  }
}
