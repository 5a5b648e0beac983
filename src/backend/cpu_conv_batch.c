/* "cpu" backend convolution over a whole batch (backend.h conv_fwd / conv_bwd), lowered to GEMMs:
 * the batch is cut into blocks of nb samples (cpu_conv_lowered_blocks: up to CPU_CONV_BLOCK_COLUMNS
 * output positions, so the block's lowering stays in the L2 cache) and each block is one GEMM over
 * all its samples:
 *
 *   forward   col (CKK, nb*P) = lowering of the block, P = OH*OW, CKK = C*KH*KW
 *             out (O, nb*P) = W (O, CKK) col; epilogue: y[b,o,:] = out[o, b*P..] + bias[o] (ReLU)
 *   backward  dyb (O, nb*P) = the block's dy side by side (bias sums taken in the same pass)
 *             dW_blk^T (CKK, O) = col dyb^T, added into a double accumulator
 *             dcol (CKK, nb*P) = W^T dyb, scattered back into dx (col2im)
 *
 * A one-sample block skips the side-by-side copies (GEMMs read and write the sample in place), and a
 * 1x1 stride-1 unpadded convolution uses the image itself as its lowering. The epilogue runs on the
 * block while it is still in cache, so bias and ReLU cost no pass over memory. "Same" convolutions
 * of stride 1, and of stride 2 on even sizes, go to the direct AVX-512 path (cpu_conv_direct.c)
 * where the CPU has it (in precision = bf16 it rounds its operands as it pads and packs them; the
 * lowered GEMMs take the bf16 forms of cpu_gemm by themselves). */
#include <stdint.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "core/error.h"

/* Workspace pieces, in the order lowered_floats counts them, each 64-byte aligned. */
typedef struct conv_ws {
  float *col;     /* (CKK, nb*P) */
  float *blk;     /* (O, nb*P) */
  float *dw_blk;  /* (CKK, O): one block's weight gradient, transposed */
  double *dw_acc; /* (CKK, O): the sum of the blocks' dw_blk */
  double *db_acc; /* (O) */
} conv_ws_t;

static conv_ws_t conv_ws_split(const conv_shape_t *s, int nb, float *ws) {
  size_t ckk = (size_t)s->C * s->KH * s->KW, cols = (size_t)nb * s->OH * s->OW;
  float *at = cpu_ws_start(ws);
  conv_ws_t w;
  w.col = cpu_ws_take(&at, ckk * cols);
  w.blk = cpu_ws_take(&at, (size_t)s->O * cols);
  w.dw_blk = cpu_ws_take(&at, (size_t)s->O * ckk);
  w.dw_acc = (double *)cpu_ws_take(&at, 2 * (size_t)s->O * ckk);
  w.db_acc = (double *)cpu_ws_take(&at, 2 * (size_t)s->O);
  return w;
}

/* A block of nb samples needs: the lowering col (C*KH*KW, nb*OH*OW), the output or gradient block
 * (O, nb*OH*OW), one block's weight gradient (O, C*KH*KW) and its double accumulator (twice that in
 * floats), the bias gradient's double accumulator (2*O floats), and 16 floats of alignment slack
 * for each of those five pieces. */
static size_t lowered_floats(const conv_shape_t *s, size_t nb) {
  size_t ckk = (size_t)s->C * s->KH * s->KW, cols = nb * (size_t)s->OH * s->OW;
  return (ckk + (size_t)s->O) * cols + 3 * (size_t)s->O * ckk + 2 * (size_t)s->O + 5 * 16;
}

/* Whole samples up to CPU_CONV_BLOCK_COLUMNS output positions, at least one. */
static size_t lowered_default_block(const conv_shape_t *s) {
  size_t ohow = (size_t)s->OH * s->OW;
  return ohow >= CPU_CONV_BLOCK_COLUMNS ? 1 : CPU_CONV_BLOCK_COLUMNS / ohow;
}

int cpu_conv_lowered_blocks(const conv_shape_t *s, size_t ws_n) {
  size_t fixed = lowered_floats(s, 0), per = lowered_floats(s, 1) - fixed;
  if (ws_n < fixed + per) return 0;
  size_t nb = (ws_n - fixed) / per, cap = lowered_default_block(s);
  return (int)(nb < cap ? nb : cap);
}

size_t cpu_conv_workspace(const conv_shape_t *s) {
  size_t lowered = lowered_floats(s, lowered_default_block(s)), direct = cpu_conv_direct_floats(s);
  return lowered > direct ? lowered : direct;
}

static int conv_blocks(const conv_shape_t *s, size_t ws_n, const char *op) {
  int nb = cpu_conv_lowered_blocks(s, ws_n);
  if (nb < 1)
    surge_runtime_error("%s: workspace of %zu floats is below the %zu one sample needs "
                        "(size it with conv_workspace_floats)", op, ws_n, lowered_floats(s, 1));
  return nb;
}

/* The block's lowering (CKK, n*P) into col, or the image itself for a pointwise one-sample block;
 * returns the matrix and its leading dim through *ld. */
static const float *conv_lower_block(const conv_shape_t *s, const float *x, int n, float *col, size_t *ld) {
  size_t P = (size_t)s->OH * s->OW, in_n = (size_t)s->C * s->H * s->W;
  if (n == 1 && conv_is_pointwise(s)) {
    *ld = P;
    return x;
  }
  *ld = (size_t)n * P;
  for (int j = 0; j < n; j++)
    cpu_im2col_ld(x + (size_t)j * in_n, s->C, s->H, s->W, s->KH, s->KW, s->stride, s->ph, s->pw, col + (size_t)j * P, *ld);
  return col;
}

/* y[j,o,:] = out[o, j*P..(j+1)*P) + bias[o], through ReLU when asked; out may be y itself (n = 1). */
CPU_SHORT_ROWS static void conv_epilogue(const conv_shape_t *s, int n, const float *out, const float *bias, int relu, float *y) {
  size_t P = (size_t)s->OH * s->OW, ld = (size_t)n * P;
  for (int j = 0; j < n; j++)
    for (int o = 0; o < s->O; o++) {
      const float *src = out + (size_t)o * ld + (size_t)j * P;
      float *dst = y + ((size_t)j * s->O + o) * P;
      const float b = bias ? bias[o] : 0.0f;
      if (relu)
        for (size_t i = 0; i < P; i++) {
          const float v = src[i] + b;
          dst[i] = v > 0.0f ? v : 0.0f;
        }
      else
        for (size_t i = 0; i < P; i++) dst[i] = src[i] + b;
    }
}

void cpu_conv_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu,
                  float *y, float *ws, size_t ws_n) {
  if (cpu_conv_direct_blocks(s, ws_n) > 0) {
    cpu_conv_direct_fwd(s, B, x, w, bias, relu, y, ws, ws_n);
    return;
  }
  const int nb = conv_blocks(s, ws_n, "conv_fwd");
  conv_ws_t k = conv_ws_split(s, nb, ws);
  const int ckk = s->C * s->KH * s->KW;
  const size_t P = (size_t)s->OH * s->OW, in_n = (size_t)s->C * s->H * s->W, out_n = (size_t)s->O * P;
  for (int b0 = 0; b0 < B; b0 += nb) {
    const int n = B - b0 < nb ? B - b0 : nb;
    size_t ld;
    const float *col = conv_lower_block(s, x + (size_t)b0 * in_n, n, k.col, &ld);
    // out (O, n*P) = W (O, CKK) col (CKK, n*P); a one-sample block lands in y directly
    float *yb = y + (size_t)b0 * out_n, *out = n == 1 ? yb : k.blk;
    cpu_gemm(0, 0, s->O, (int)ld, ckk, 1.0f, w, ckk, col, (int)ld, 0.0f, out, (int)ld);
    if (n > 1 || bias || relu) conv_epilogue(s, n, out, bias, relu, yb);
  }
}

/* dyb (O, n*P): the block's dy side by side (a one-sample block without a ReLU is dy itself),
 * where relu_y (the block's fused ReLU output, or NULL) is > 0; adds each channel's sum into db_acc. */
CPU_SHORT_ROWS static const float *conv_gather_dy(const conv_shape_t *s, int n, const float *dy, const float *relu_y,
                                                  float *blk, double *db_acc) {
  const size_t P = (size_t)s->OH * s->OW, ld = (size_t)n * P;
  for (int j = 0; j < n; j++)
    for (int o = 0; o < s->O; o++) {
      const size_t at = ((size_t)j * s->O + o) * P;
      const float *src = dy + at;
      float *dst = blk + (size_t)o * ld + (size_t)j * P;
      if (relu_y) {
        const float *y = relu_y + at;
        for (size_t i = 0; i < P; i++) dst[i] = y[i] > 0.0f ? src[i] : 0.0f;
        if (db_acc) db_acc[o] += cpu_sum_d(dst, P);
        continue;
      }
      if (db_acc) db_acc[o] += cpu_sum_d(src, P);
      if (n > 1) memcpy(dst, src, P * sizeof *src);
    }
  return n > 1 || relu_y ? blk : dy;
}

void cpu_conv_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy, const float *relu_y,
                  float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n) {
  if (cpu_conv_direct_blocks(s, ws_n) > 0) { /* writes dx in place of adding where asked */
    cpu_conv_direct_bwd(s, B, x, w, dy, relu_y, dx, dx_write, dw, db, ws, ws_n);
    return;
  }
  const int nb = conv_blocks(s, ws_n, "conv_bwd");
  conv_ws_t k = conv_ws_split(s, nb, ws);
  const int ckk = s->C * s->KH * s->KW;
  const size_t P = (size_t)s->OH * s->OW, in_n = (size_t)s->C * s->H * s->W, out_n = (size_t)s->O * P;
  if (dx && dx_write) memset(dx, 0, (size_t)B * in_n * sizeof *dx); /* col2im adds overlapping taps */
  const size_t nw = (size_t)s->O * ckk;
  if (dw)
    for (size_t i = 0; i < nw; i++) k.dw_acc[i] = 0.0;
  if (db)
    for (int o = 0; o < s->O; o++) k.db_acc[o] = 0.0;
  for (int b0 = 0; b0 < B; b0 += nb) {
    const int n = B - b0 < nb ? B - b0 : nb;
    const int ld = n * (int)P;
    const float *dyb = conv_gather_dy(s, n, dy + (size_t)b0 * out_n, relu_y ? relu_y + (size_t)b0 * out_n : NULL, k.blk,
                                      db ? k.db_acc : NULL);
    if (dw) {
      size_t cld;
      const float *col = conv_lower_block(s, x + (size_t)b0 * in_n, n, k.col, &cld);
      // dW_blk^T (CKK, O) = col (CKK, n*P) dyb^T: OpenBLAS runs this orientation 10-25% faster
      // than dyb col^T on these shapes; its float sum runs over one block only
      cpu_gemm(0, 1, ckk, s->O, ld, 1.0f, col, (int)cld, dyb, ld, 0.0f, k.dw_blk, s->O);
      for (size_t i = 0; i < nw; i++) k.dw_acc[i] += (double)k.dw_blk[i];
    }
    if (!dx) continue;
    float *dxb = dx + (size_t)b0 * in_n;
    if (n == 1 && conv_is_pointwise(s)) {
      // dx_b (C, P) += W^T (C, O) dy_b (O, P)
      cpu_gemm(1, 0, ckk, ld, s->O, 1.0f, w, ckk, dyb, ld, 1.0f, dxb, ld);
      continue;
    }
    // dcol (CKK, n*P) = W^T dyb, then each sample's columns scattered into its dx
    cpu_gemm(1, 0, ckk, ld, s->O, 1.0f, w, ckk, dyb, ld, 0.0f, k.col, ld);
    for (int j = 0; j < n; j++)
      cpu_col2im_ld(k.col + (size_t)j * P, (size_t)ld, s->C, s->H, s->W, s->KH, s->KW, s->stride, s->ph, s->pw,
                    dxb + (size_t)j * in_n);
  }
  if (dw) // dw (O, CKK) += the transposed sum
    for (int o = 0; o < s->O; o++)
      for (int j = 0; j < ckk; j++) {
        float *d = &dw[(size_t)o * ckk + j];
        *d = (float)((double)*d + k.dw_acc[(size_t)j * s->O + o]);
      }
  if (db)
    for (int o = 0; o < s->O; o++) db[o] = (float)((double)db[o] + k.db_acc[o]);
}
