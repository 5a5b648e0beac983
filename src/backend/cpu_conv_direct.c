/* "cpu" backend direct convolution with register tiles of W-float vectors (AVX-512: W = 16; AVX2:
 * 8), for the convolutions that dominate the zoo: square odd kernel, "same" padding (pad = (k-1)/2), stride 1 (OH = H, OW = W) or stride 2
 * on even H and W (OH = H/2, OW = W/2). It replaces im2col + GEMM + col2im, whose lowering is a 9x
 * larger copy of the input that OpenBLAS then packs once more. The kernels are written once over
 * W in cpu_direct_kern.h; this file holds what they share (geometry, workspace, tap tables) and
 * the dispatch to the width in use.
 *
 * Padded-width trick: an image is copied once into xp (C, Hp*Wp + slack) with Hp = H + 2p and
 * Wp = W + p: p zero rows above and below, and p zero columns before each row, which are also the
 * row above's right pad (its pixel W-1+j and the next row's pixel -p+j share a column). Output
 * position (oh, ow) is computed at q = oh*Wp + ow, and the input it reads through tap (kh, kw)
 * sits at q + kh*Wp + kw in the same channel plane: every tap is a contiguous vector load, no
 * lowering. Columns ow >= W of that grid are computed and dropped (p of every Wp: 3% at 28x28,
 * 7% at 14x14).
 *
 * Stride 2 (polyphase): 16 consecutive outputs would read every other input, so the forward reads
 * the padded image split into phases, phase (a, b) holding padded pixels (2i + a, 2j + b) in
 * OH + p rows of Wq = OW + p; tap (kh, kw) reads phase (kh%2, kw%2) at q + (kh/2)*Wq + kw/2, again
 * one contiguous load. The input gradient at the pixels of one parity (h%2, w%2) takes the taps of
 * one parity of the padded dy: four stride-1 grids, each into a buffer then interleaved into dx.
 * Tiles take their taps from a table of offsets (one per input channel and tap), whatever the
 * stride; the grid is OH rows of OW + p positions in both directions.
 *
 *   forward     tile of MR output channels x 3W positions (AVX-512: 8 x 48 in 24 zmm accumulators;
 *               AVX2: 4 x 24 in 12 ymm); per tap 3 loads, MR broadcasts of packed weights, 3 MR
 *               FMAs; epilogue adds the bias (ReLU) on the way out
 *   input grad  the same tiles over the padded dy with the kernel flipped and transposed
 *               (dx = conv(dy, W') for a stride-1 same convolution; per parity at stride 2)
 *   weight grad dy is transposed to dyT (position, O) and each position's output channels are
 *               vectors of W; a tile of up to 4 (AVX2: 2) of those times 2..8 (AVX2: 2..4)
 *               segments of 3 taps (24 accumulators, AVX2 12; each lane its own output channel and
 *               tap) takes per position the dyT vectors and one broadcast input value per tap (from the padded image, every
 *               s-th position): no lane sums, aligned loads only. Every ~400 positions the tile is
 *               added into a double accumulator dwT (tap, O)
 *
 * Used only where the kernels' width (cpu_simd: AVX-512F or AVX2 + FMA) is not "none" and the
 * workspace holds the padded images; otherwise cpu_conv_batch.c lowers to GEMMs. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/cpu_direct.h"
#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "core/bf16.h"
#include "core/error.h"

/* Floats of a plane of `rows` x `width` that tiles over a grid of it read with taps up to k - 1
 * columns right: they read up to position round_up(grid, tile) - 1 + (last tap's offset), which is
 * below rows * width + DIRECT_SLACK + k. */
static size_t plane_floats(int rows, int width, int k) {
  return ((size_t)rows * width + DIRECT_SLACK + (size_t)k + 15) / 16 * 16;
}

static padded_t padded(int H, int W, int p, int k) {
  padded_t x = {H, W, p, W + p, 0};
  x.plane = plane_floats(H + 2 * p, x.Wp, k);
  return x;
}

dgeom_t direct_geom(const conv_shape_t *s) {
  dgeom_t g;
  g.s = s->stride, g.k = s->KH, g.p = s->ph, /* square: ph = pw (direct_applies) */ g.OH = s->OH, g.OW = s->OW;
  g.x = padded(s->H, s->W, g.p, g.k);
  g.dy = padded(g.OH, g.OW, g.p, g.k);
  g.ph = g.s == 1 || g.k == 1 ? 1 : 2;
  g.Wq = g.OW + g.p;
  g.qplane = g.s == 1 ? g.x.plane : plane_floats(g.OH + g.p, g.Wq, g.k);
  return g;
}

size_t direct_x_floats(const conv_shape_t *s, const dgeom_t *g) {
  const size_t padded_x = (size_t)s->C * g->x.plane, phases = (size_t)s->C * g->ph * g->ph * g->qplane;
  return g->s == 1 || padded_x > phases ? padded_x : phases;
}

static size_t dws_dxq_floats(const conv_shape_t *s, const dgeom_t *g) {
  return g->s == 1 ? 0 : (size_t)s->C * s->H * s->W;
}

/* Packed weights take panels of at most 8 rows (round8 holds any width's). */
static size_t dws_floats(const conv_shape_t *s, const dgeom_t *g, int nb) {
  size_t kk = (size_t)s->KH * s->KW, ckk = (size_t)s->C * kk, op = direct_round16(s->O);
  size_t per_sample = direct_x_floats(s, g) + (size_t)s->O * g->dy.plane + (size_t)g->OH * g->OW * op;
  return direct_round8(s->O) * ckk + direct_round8(s->C) * (size_t)s->O * kk + 2 * ckk * op + (size_t)nb * per_sample +
         dws_dxq_floats(s, g) + 7 * 16;
}

dws_t direct_ws_split(const conv_shape_t *s, const dgeom_t *g, int nb, float *ws) {
  size_t kk = (size_t)s->KH * s->KW, ckk = (size_t)s->C * kk;
  float *at = cpu_ws_start(ws);
  dws_t d;
  d.wf = cpu_ws_take(&at, direct_round8(s->O) * ckk);
  d.wb = cpu_ws_take(&at, direct_round8(s->C) * (size_t)s->O * kk);
  d.dwT = (double *)cpu_ws_take(&at, 2 * ckk * direct_round16(s->O));
  d.xp = cpu_ws_take(&at, (size_t)nb * direct_x_floats(s, g)); /* planes are whole 64-byte lines */
  d.dyp = cpu_ws_take(&at, (size_t)nb * s->O * g->dy.plane);
  d.dyT = cpu_ws_take(&at, (size_t)nb * g->OH * g->OW * direct_round16(s->O));
  d.dxq = at;
  return d;
}

/* Output positions per block of the backward pass: the weight gradient's tiles each stream the
 * block's padded x and dyT from L2, so a block is as long as stays there comfortably; 800 and 3200
 * ran slower than 1600 (2 samples of 28x28, 8 of 14x14) on vgg-mini (measured side by side). */
enum { DIRECT_BLOCK_POSITIONS = 1600 };

static int direct_applies(const conv_shape_t *s) {
  const int same = s->KH == s->KW && s->KH % 2 == 1 && s->ph == s->pw && 2 * s->ph == s->KH - 1;
  return cpu_simd() != BACKEND_SIMD_NONE && same &&
         (s->stride == 1 || (s->stride == 2 && s->H % 2 == 0 && s->W % 2 == 0));
}

static int direct_default_block(const conv_shape_t *s) {
  int nb = DIRECT_BLOCK_POSITIONS / (s->OH * s->OW);
  return nb < 1 ? 1 : nb;
}

size_t cpu_conv_direct_floats(const conv_shape_t *s) {
  if (!direct_applies(s)) return 0;
  dgeom_t g = direct_geom(s);
  return dws_floats(s, &g, direct_default_block(s));
}

int cpu_conv_direct_blocks(const conv_shape_t *s, size_t ws_n) {
  if (!direct_applies(s)) return 0;
  dgeom_t g = direct_geom(s);
  int nb = direct_default_block(s);
  while (nb > 0 && dws_floats(s, &g, nb) > ws_n) nb--;
  return nb;
}

void direct_pack_weights(int rows, int ntaps, const size_t *widx, size_t rstride, const float *w, float *wp, int mr) {
  const int round = host_products_bf16();
  for (int r0 = 0; r0 < rows; r0 += mr)
    for (int t = 0; t < ntaps; t++)
      for (int r = 0; r < mr; r++) {
        const int row = r0 + r;
        const size_t at = widx ? widx[t] : (size_t)t;
        const float v = row < rows ? w[(size_t)row * rstride + at] : 0.0f;
        wp[((size_t)(r0 / mr) * ntaps + t) * mr + r] = round ? bf16_round(v) : v;
      }
}

/* The forward's taps (c, kh, kw), in weight order: where each reads in the forward's planes from
 * the grid position it computes. C*k*k entries. */
size_t *direct_forward_taps(const conv_shape_t *s, const dgeom_t *g) {
  const int k = g->k;
  size_t *off = xmalloc((size_t)s->C * k * k * sizeof *off), *at = off;
  for (int c = 0; c < s->C; c++)
    for (int kh = 0; kh < k; kh++)
      for (int kw = 0; kw < k; kw++) {
        const size_t plane = ((size_t)c * g->ph + kh % g->s) * g->ph + kw % g->s;
        *at++ = plane * g->qplane + (size_t)(kh / g->s) * g->Wq + (size_t)(kw / g->s);
      }
  return off;
}

/* The input gradient at the pixels (s*i + a, s*j + b) of one parity, computed at grid position
 * (i, j): the taps (o, kh, kw) with kh = a + p and kw = b + p modulo s, kh and kw descending (at
 * stride 1 the flipped kernel), where each reads in the padded dy (dy pixel (i + (a + p - kh)/s,
 * j + (b + p - kw)/s)) and which weight it takes (its index in w for input channel 0). At most
 * O*k*k; returns how many. */
static int dx_parity_taps(const conv_shape_t *s, const dgeom_t *g, int a, int b, size_t *off, size_t *widx) {
  const int k = g->k, p = g->p, st = g->s;
  int n = 0;
  for (int o = 0; o < s->O; o++)
    for (int kh = k - 1; kh >= 0; kh--)
      for (int kw = k - 1; kw >= 0; kw--) {
        if ((kh - a - p) % st != 0 || (kw - b - p) % st != 0) continue;
        off[n] = (size_t)o * g->dy.plane + (size_t)((a + p - kh) / st + p) * g->dy.Wp + (size_t)((b + p - kw) / st + p);
        widx[n] = (size_t)o * s->C * k * k + (size_t)kh * k + kw;
        n++;
      }
  return n;
}

dx_taps_t direct_dx_taps(const conv_shape_t *s, const dgeom_t *g, const float *w, float *wb, int mr) {
  const size_t kk = (size_t)g->k * g->k, okk = (size_t)s->O * kk;
  dx_taps_t t = {g->s * g->s, {0}, xmalloc(okk * sizeof(size_t))};
  size_t *widx = xmalloc(okk * sizeof *widx), at = 0;
  for (int par = 0; par < t.parities; par++) {
    t.n[par] = dx_parity_taps(s, g, par / g->s, par % g->s, t.off + at, widx + at);
    direct_pack_weights(s->C, t.n[par], widx + at, kk, w, wb + direct_round8(s->C) * at, mr);
    at += (size_t)t.n[par];
  }
  free(widx);
  return t;
}

/* The padded plane in chunks of vl floats: chunk i's lanes that hold pixels (the rest are pad
 * zeros), in its low 16 bits, and how many (the pixels it takes from the image) above them. The
 * pattern is the geometry's, the same for every plane: made once per call, plane/vl entries. */
uint32_t *direct_pad_chunks(const padded_t *g, int vl) {
  const size_t n = g->plane / (size_t)vl;
  uint32_t *chunk = xmalloc(n * sizeof *chunk);
  for (size_t i = 0; i < n; i++) {
    uint32_t mask = 0, count = 0;
    for (int l = 0; l < vl; l++) { /* row r and column col of the padded image; pixels past p of both */
      const size_t u = i * (size_t)vl + (size_t)l, r = u / (size_t)g->Wp, col = u % (size_t)g->Wp;
      if (r >= (size_t)g->p && r < (size_t)(g->p + g->H) && col >= (size_t)g->p) mask |= 1u << l, count++;
    }
    chunk[i] = mask | count << 16;
  }
  return chunk;
}

/* The lanes of every tile of the grid (OH rows of Wq positions), tile t at q0 = t * DIRECT_NV * vl:
 * vector v's lanes at positions q0 + vl*v + l that are on the grid and in the image (column < OW),
 * and the pixel its first such lane lands on. Made once per call, one entry per tile. */
tile_lanes_t *direct_tile_lanes(const dgeom_t *g, int vl) {
  const int Q = g->OH * g->Wq, nr = DIRECT_NV * vl, tiles = (Q + nr - 1) / nr;
  tile_lanes_t *table = xmalloc((size_t)tiles * sizeof *table);
  for (int t = 0; t < tiles; t++)
    for (int v = 0; v < DIRECT_NV; v++) {
      unsigned m = 0;
      int off = -1;
      for (int l = 0; l < vl; l++) {
        const int q = t * nr + vl * v + l, oh = q / g->Wq, ow = q % g->Wq;
        if (q < Q && ow < g->OW) {
          m |= 1u << l;
          if (off < 0) off = oh * g->OW + ow;
        }
      }
      table[t].mask[v] = m;
      table[t].count[v] = __builtin_popcount(m);
      table[t].off[v] = off < 0 ? 0 : off;
    }
  return table;
}

void cpu_conv_direct_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu,
                         float *y, float *ws, size_t ws_n) {
#if CPU_KERNELS_BUILT
  if (cpu_simd() == BACKEND_SIMD_AVX512) direct_fwd_w16(s, B, x, w, bias, relu, y, ws, ws_n);
  else direct_fwd_w8(s, B, x, w, bias, relu, y, ws, ws_n);
#else
  (void)s, (void)B, (void)x, (void)w, (void)bias, (void)relu, (void)y, (void)ws, (void)ws_n;
#endif
}

void cpu_conv_direct_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                         const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n) {
#if CPU_KERNELS_BUILT
  if (cpu_simd() == BACKEND_SIMD_AVX512) direct_bwd_w16(s, B, x, w, dy, relu_y, dx, dx_write, dw, db, ws, ws_n);
  else direct_bwd_w8(s, B, x, w, dy, relu_y, dx, dx_write, dw, db, ws, ws_n);
#else
  (void)s, (void)B, (void)x, (void)w, (void)dy, (void)relu_y, (void)dx, (void)dx_write, (void)dw, (void)db, (void)ws,
      (void)ws_n;
#endif
}
