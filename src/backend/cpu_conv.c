/* "cpu" backend convolution lowering and pooling. im2col/col2im work on whole output rows: for a
 * kernel offset (kh, kw) and an output row oh, the valid output columns form one contiguous run
 * [ow_lo, ow_hi) whose input columns step by the stride; everything outside it is padding. The _ld
 * forms place one image's lowering in columns of a wider matrix (row stride ld), so the images of
 * a block of samples sit side by side in one col (C*KH*KW, nb*OH*OW). */
#include <string.h>

#include "backend/cpu_ops.h"

/* Geometry of one convolution lowering: zero padding ph rows and pw columns each side. */
typedef struct conv_geom {
  int C, H, W, KH, KW, stride, ph, pw, OH, OW;
} conv_geom_t;

static conv_geom_t conv_geom(int C, int H, int W, int KH, int KW, int stride, int ph, int pw) {
  conv_geom_t g = {C, H, W, KH, KW, stride, ph, pw, 0, 0};
  g.OH = (H + 2 * ph - KH) / stride + 1;
  g.OW = (W + 2 * pw - KW) / stride + 1;
  return g;
}

/* First output column whose input column ow*stride - pw + kw is >= 0, and one past the last whose
 * input column is < W (both clamped to [0, OW]). */
static void conv_valid_cols(const conv_geom_t *g, int kw, int *ow_lo, int *ow_hi) {
  int shift = g->pw - kw; // input column = ow*stride - shift
  int lo = shift > 0 ? (shift + g->stride - 1) / g->stride : 0;
  int last = g->W - 1 + shift; // ow*stride <= last
  int hi = last < 0 ? 0 : last / g->stride + 1;
  if (hi > g->OW) hi = g->OW;
  if (lo > hi) lo = hi;
  *ow_lo = lo;
  *ow_hi = hi;
}

CPU_SHORT_ROWS void cpu_im2col_ld(const float *restrict x, int C, int H, int W, int KH, int KW, int stride, int ph,
                                  int pw, float *restrict col, size_t ld) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, ph, pw);
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++)
      for (int kw = 0; kw < KW; kw++) {
        int lo, hi;
        conv_valid_cols(&g, kw, &lo, &hi);
        float *restrict out = col + (((size_t)c * KH + kh) * KW + kw) * ld;
        for (int oh = 0; oh < g.OH; oh++, out += g.OW) {
          int h = oh * stride - ph + kh;
          /* rows are short (tens of floats): plain loops beat memcpy/memset calls (CPU_SHORT_ROWS) */
          if (h < 0 || h >= H || lo == hi) {
            for (int ow = 0; ow < g.OW; ow++) out[ow] = 0.0f;
            continue;
          }
          const float *restrict in = x + ((size_t)c * H + h) * W + (lo * stride - pw + kw);
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
                                  int ph, int pw, float *restrict dx) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, ph, pw);
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++)
      for (int kw = 0; kw < KW; kw++) {
        int lo, hi;
        conv_valid_cols(&g, kw, &lo, &hi);
        const float *restrict src = col + (((size_t)c * KH + kh) * KW + kw) * ld;
        for (int oh = 0; oh < g.OH; oh++, src += g.OW) {
          int h = oh * stride - ph + kh;
          if (h < 0 || h >= H || lo == hi) continue;
          float *restrict dst = dx + ((size_t)c * H + h) * W + (lo * stride - pw + kw);
          if (stride == 1)
            for (int ow = lo; ow < hi; ow++) dst[ow - lo] += src[ow];
          else
            for (int ow = lo; ow < hi; ow++) dst[(size_t)(ow - lo) * stride] += src[ow];
        }
      }
}

void cpu_im2col(const float *x, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *col) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, ph, pw);
  cpu_im2col_ld(x, C, H, W, KH, KW, stride, ph, pw, col, (size_t)g.OH * g.OW);
}

void cpu_col2im(const float *col, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *dx) {
  conv_geom_t g = conv_geom(C, H, W, KH, KW, stride, ph, pw);
  cpu_col2im_ld(col, (size_t)g.OH * g.OW, C, H, W, KH, KW, stride, ph, pw, dx);
}

/* ---- pooling */

/* A pool window along one axis: output o's [o*s - pad, o*s - pad + k) clipped to [0, n). */
static inline void pool_span(int o, int k, int s, int pad, int n, int *lo, int *hi) {
  int a = o * s - pad, b = a + k;
  *lo = a < 0 ? 0 : a;
  *hi = b < n ? b : n;
}

CPU_CLONES void cpu_maxpool_fwd(int P, int H, int W, int k, int s, int pad, const float *restrict x,
                                float *restrict y, float *restrict argmax) {
#if CPU_KERNELS_BUILT
  if (k == 2 && s == 2 && pad == 0 && cpu_simd() != BACKEND_SIMD_NONE) { /* the kernels of cpu_pool_kern.h */
    if (cpu_simd() == BACKEND_SIMD_AVX512) cpu_maxpool_2x2_w16(P, H, W, x, y, argmax);
    else cpu_maxpool_2x2_w8(P, H, W, x, y, argmax);
    return;
  }
#endif
  int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  for (int p = 0; p < P; p++) {
    const float *restrict plane = x + (size_t)p * H * W;
    for (int oh = 0; oh < OH; oh++) {
      int h0, h1;
      pool_span(oh, k, s, pad, H, &h0, &h1);
      for (int ow = 0; ow < OW; ow++) {
        // scan the window's part inside the plane row by row; a later element wins only when
        // strictly larger (the padding is never chosen)
        int w0, w1;
        pool_span(ow, k, s, pad, W, &w0, &w1);
        int best_at = h0 * W + w0;
        float best = plane[best_at];
        for (int i = h0; i < h1; i++) {
          const float *restrict row = plane + (size_t)i * W;
          for (int j = w0; j < w1; j++)
            if (row[j] > best) {
              best = row[j];
              best_at = i * W + j;
            }
        }
        *y++ = best;
        *argmax++ = (float)best_at;
      }
    }
  }
}

CPU_CLONES void cpu_maxpool_bwd(int P, int H, int W, int k, int s, int pad, const float *restrict dy,
                                const float *restrict argmax, float *restrict dx, int dx_write) {
  size_t per_plane = (size_t)((H + 2 * pad - k) / s + 1) * (size_t)((W + 2 * pad - k) / s + 1);
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

/* Windowed average pool (count_include_pad): each window's part inside the plane summed in float,
 * over k*k; backward scatters each output's share over the same part. */
CPU_CLONES void cpu_avgpool2d_fwd(int P, int H, int W, int k, int s, int pad, const float *restrict x,
                                  float *restrict y) {
  const int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  const float inv = 1.0f / (float)(k * k);
  for (int p = 0; p < P; p++) {
    const float *restrict plane = x + (size_t)p * H * W;
    for (int oh = 0; oh < OH; oh++) {
      int h0, h1;
      pool_span(oh, k, s, pad, H, &h0, &h1);
      for (int ow = 0; ow < OW; ow++) {
        int w0, w1;
        pool_span(ow, k, s, pad, W, &w0, &w1);
        float acc = 0.0f;
        for (int i = h0; i < h1; i++)
          for (int j = w0; j < w1; j++) acc += plane[(size_t)i * W + j];
        *y++ = acc * inv;
      }
    }
  }
}

CPU_CLONES void cpu_avgpool2d_bwd(int P, int H, int W, int k, int s, int pad, const float *restrict dy,
                                  float *restrict dx, int dx_write) {
  const int OH = (H + 2 * pad - k) / s + 1, OW = (W + 2 * pad - k) / s + 1;
  const float inv = 1.0f / (float)(k * k);
  for (int p = 0; p < P; p++) {
    float *restrict plane = dx + (size_t)p * H * W;
    if (dx_write) memset(plane, 0, (size_t)H * W * sizeof *plane); /* while the plane is cached */
    for (int oh = 0; oh < OH; oh++) {
      int h0, h1;
      pool_span(oh, k, s, pad, H, &h0, &h1);
      for (int ow = 0; ow < OW; ow++) {
        int w0, w1;
        pool_span(ow, k, s, pad, W, &w0, &w1);
        const float g = *dy++ * inv;
        for (int i = h0; i < h1; i++)
          for (int j = w0; j < w1; j++) plane[(size_t)i * W + j] += g;
      }
    }
  }
}
