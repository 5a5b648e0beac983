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

CPU_CLONES void cpu_maxpool_fwd(int P, int H, int W, int k, int s, const float *restrict x, float *restrict y,
                     float *restrict argmax) {
#if CPU_KERNELS_BUILT
  if (k == 2 && s == 2 && cpu_simd() != BACKEND_SIMD_NONE) { /* the kernels of cpu_pool_kern.h */
    if (cpu_simd() == BACKEND_SIMD_AVX512) cpu_maxpool_2x2_w16(P, H, W, x, y, argmax);
    else cpu_maxpool_2x2_w8(P, H, W, x, y, argmax);
    return;
  }
#endif
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
