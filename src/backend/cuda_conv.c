/* The CUDA backend's convolution over a whole batch: the batch (in chunks whose lowering fits
 * CONV_COL_BYTES) is lowered by one kernel, multiplied by the weights in one strided-batched GEMM
 * per chunk (one matrix per sample, written straight into its place of y), and the bias and ReLU
 * are one epilogue kernel over the whole batch. A 1x1 stride-1 unpadded convolution needs no
 * lowering: each sample (C, H*W) is its own column matrix.
 *
 * Backward per chunk: the weight gradient of each sample, dY_b col_b^T, as one strided batch into
 * float partials, summed over the samples in double; the input gradient W^T dY_b into a lowering,
 * added into dx by the gather kernel (col2im). The bias gradient is the plane sums of dy, in double.
 * The backend keeps its own scratch (cuda_workspace), so the layer's workspace is not used. */
#include "backend/cuda_impl.h"
#include "core/error.h"

enum { CONV_COL_BYTES = 256 << 20 }; /* the lowering of one chunk of samples, at most (unless one sample is more) */

size_t cuda_conv_workspace(const conv_shape_t *s) {
  (void)s;
  return 0;
}

/* Samples per chunk of B. */
static int chunk_of(const conv_shape_t *s, int B) {
  size_t per = (size_t)s->C * s->KH * s->KW * s->OH * s->OW * sizeof(float);
  size_t n = per ? CONV_COL_BYTES / per : (size_t)B;
  if (n < 1) n = 1;
  return n < (size_t)B ? (int)n : B;
}

/* The lowering (nb, C*KH*KW, OH*OW) of samples [b0, b0+nb) of x: x itself for a pointwise conv. */
static const float *lowered(const conv_shape_t *s, const float *x, int b0, int nb) {
  size_t in = (size_t)s->C * s->H * s->W;
  if (conv_is_pointwise(s)) return x + (size_t)b0 * in;
  size_t n = surge_mul_size((size_t)nb, (size_t)s->C * s->KH * s->KW * s->OH * s->OW, "convolution lowering");
  float *col = cuda_workspace(CUDA_WS_COL, n * sizeof(float));
  cuk_im2col(x + (size_t)b0 * in, nb, s->C, s->H, s->W, s->KH, s->KW, s->stride, s->ph, s->pw, col, cuda_stream());
  return col;
}

void cuda_conv_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu, float *y,
                   float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  if (B <= 0) return;
  int ckk = s->C * s->KH * s->KW, P = s->OH * s->OW, chunk = chunk_of(s, B);
  size_t out = (size_t)s->O * P;
  for (int b0 = 0; b0 < B; b0 += chunk) {
    int nb = B - b0 < chunk ? B - b0 : chunk;
    const float *col = lowered(s, x, b0, nb);
    // Y_b (O, P) = W (O, ckk) col_b (ckk, P), for each sample b of the chunk
    cuda_gemm_strided(0, 0, s->O, P, ckk, 1.0f, w, ckk, 0, col, P, (size_t)ckk * P, 0.0f, y + (size_t)b0 * out, P, out,
                      nb);
  }
  cuk_bias_planes(B, s->O, P, bias, relu, y, cuda_stream());
}

void cuda_conv_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy, const float *relu_y,
                   float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n) {
  (void)ws, (void)ws_n;
  if (B <= 0) return;
  int ckk = s->C * s->KH * s->KW, P = s->OH * s->OW, chunk = chunk_of(s, B);
  size_t out = (size_t)s->O * P, in = (size_t)s->C * s->H * s->W, nw = (size_t)s->O * ckk;
  if (dx && dx_write) cuda_fill(dx, surge_mul_size((size_t)B, in, "conv input gradient"), 0.0f); /* col2im adds */
  if (relu_y) { /* the fused ReLU's backward first, with the relu_bwd kernel: masked = dy (y > 0) */
    size_t n = surge_mul_size((size_t)B, out, "conv gradient");
    float *masked = cuda_workspace(CUDA_WS_MASKED, surge_mul_size(n, sizeof(float), "conv gradient"));
    cuda_relu_bwd(n, relu_y, dy, masked, 1);
    dy = masked;
  }
  double *acc = dw ? cuda_zeroed_acc(nw) : NULL;
  for (int b0 = 0; b0 < B; b0 += chunk) {
    int nb = B - b0 < chunk ? B - b0 : chunk;
    const float *dyb = dy + (size_t)b0 * out;
    if (dw) { /* dW_b (O, ckk) = dY_b (O, P) col_b^T, each sample's into the partials, summed in double */
      const float *col = lowered(s, x, b0, nb);
      float *part = cuda_workspace(CUDA_WS_PART, surge_mul_size((size_t)nb, nw * sizeof(float), "conv partials"));
      cuda_gemm_strided(0, 1, s->O, ckk, P, 1.0f, dyb, P, out, col, P, (size_t)ckk * P, 0.0f, part, ckk, nw, nb);
      cuk_colsum_acc(part, nb, (int)nw, (long)nw, acc, cuda_stream());
    }
    if (!dx) continue;
    if (conv_is_pointwise(s)) { /* dx_b (C, P) += W^T (C, O) dY_b (O, P) */
      cuda_gemm_strided(1, 0, ckk, P, s->O, 1.0f, w, ckk, 0, dyb, P, out, 1.0f, dx + (size_t)b0 * in, P, in, nb);
      continue;
    }
    // dcol_b (ckk, P) = W^T dY_b, then gathered into dx (the lowering's slot: the weight gradient is done with it)
    float *dcol = cuda_workspace(CUDA_WS_COL, surge_mul_size((size_t)nb, (size_t)ckk * P * sizeof(float), "conv"));
    cuda_gemm_strided(1, 0, ckk, P, s->O, 1.0f, w, ckk, 0, dyb, P, out, 0.0f, dcol, P, (size_t)ckk * P, nb);
    cuk_col2im(dcol, nb, s->C, s->H, s->W, s->KH, s->KW, s->stride, s->ph, s->pw, dx + (size_t)b0 * in, cuda_stream());
  }
  if (dw) cuk_add_acc(acc, (long)nw, 1, dw, 1, cuda_stream());
  if (db) cuda_bias_grad_planes(B, s->O, P, dy, db);
}

void cuda_im2col(const float *x, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *col) {
  cuk_im2col(x, 1, C, H, W, KH, KW, stride, ph, pw, col, cuda_stream());
}

void cuda_col2im(const float *col, int C, int H, int W, int KH, int KW, int stride, int ph, int pw, float *dx) {
  cuk_col2im(col, 1, C, H, W, KH, KW, stride, ph, pw, dx, cuda_stream());
}
