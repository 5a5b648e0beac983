/* "cpu" backend direct convolution with AVX-512 register tiles, for the convolutions that dominate
 * the zoo: stride 1, square odd kernel, "same" padding (pad = (k-1)/2, so OH = H and OW = W). It
 * replaces im2col + GEMM + col2im, whose lowering is a 9x larger copy of the input that OpenBLAS
 * then packs once more.
 *
 * Padded-width trick: an image is copied once into xp (C, Hp*Wp + slack) with Hp = H + 2p and
 * Wp = W + p: p zero rows above and below, and p zero columns before each row, which are also the
 * row above's right pad (its pixel W-1+j and the next row's pixel -p+j share a column). Output
 * position (oh, ow) is computed at q = oh*Wp + ow, and the input it reads through tap (kh, kw)
 * sits at q + kh*Wp + kw in the same channel plane: every tap is a contiguous vector load, no
 * lowering. Columns ow >= W of that grid are computed and dropped (p of every Wp: 3% at 28x28,
 * 7% at 14x14).
 *
 *   forward     tile of 8 output channels x 48 positions in 24 zmm accumulators; per tap 3 loads,
 *               8 broadcasts of packed weights, 24 FMAs; epilogue adds the bias (ReLU) on the way out
 *   input grad  the same tiles over the padded dy with the kernel flipped and transposed
 *               (dx = conv(dy, W') for a stride-1 same convolution), added into dx
 *   weight grad dy is transposed to dyT (position, O) and each position's 16..64 output channels
 *               are one to four vectors; a tile of those times 2..8 segments of 3 taps (24
 *               accumulators, each lane its own output channel and tap) takes per position the
 *               dyT vectors and one broadcast input value per tap: no lane sums, aligned loads only.
 *               Every ~400 positions the tile is added into a double accumulator dwT (tap, O)
 *
 * Used only where the CPU has AVX-512F and the workspace holds the padded images; otherwise
 * cpu_conv_batch.c lowers to GEMMs. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "core/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CPU_DIRECT_BUILT 1
#define CPU_AVX512 __attribute__((target("avx512f,fma")))
#else
#define CPU_DIRECT_BUILT 0
#endif

enum { DMR = 8, DNR = 48, VL = 16 };

/* Geometry of one direct convolution (channels `cin` in, `cout` out; both directions). */
typedef struct dgeom {
  int H, W, k, p, Hp, Wp;
  int Q;        /* output positions on the padded-width grid: H*Wp */
  size_t plane; /* floats of one padded channel, slack for over-reads included, a multiple of 16 */
} dgeom_t;

static dgeom_t dgeom(const conv_shape_t *s) {
  dgeom_t g;
  g.H = s->H, g.W = s->W, g.k = s->KH, g.p = s->pad;
  g.Hp = s->H + 2 * s->pad, g.Wp = s->W + s->pad;
  g.Q = g.H * g.Wp;
  /* tiles read up to position round_up(Q, DNR) - 1 + (k-1)*Wp + k-1 < Hp*Wp + DNR + k */
  g.plane = ((size_t)g.Hp * g.Wp + DNR + (size_t)g.k + VL + 15) / 16 * 16;
  return g;
}

static size_t round8(int n) { return (size_t)(n + 7) / 8 * 8; }

static size_t round16(int n) { return (size_t)(n + 15) / 16 * 16; }

/* Workspace layout: packed forward weights, packed flipped weights, the double weight-gradient
 * sum transposed (CKK, round16(O)), then per sample of a block its padded x (C planes), padded dy
 * (O planes) and transposed dy (H*W positions of round16(O)). */
typedef struct dws {
  float *wf, *wb;
  double *dwT;
  float *xp, *dyp, *dyT; /* nb samples each: x planes (C*plane per sample), dy planes (O*plane), dyT */
} dws_t;

static size_t dws_floats(const conv_shape_t *s, const dgeom_t *g, int nb) {
  size_t kk = (size_t)s->KH * s->KW, ckk = (size_t)s->C * kk, op = round16(s->O);
  return round8(s->O) * ckk + round8(s->C) * (size_t)s->O * kk + 2 * ckk * op +
         (size_t)nb * (((size_t)s->C + s->O) * g->plane + (size_t)g->H * g->W * op) + 6 * 16;
}

#if CPU_DIRECT_BUILT
static dws_t dws_split(const conv_shape_t *s, const dgeom_t *g, int nb, float *ws) {
  size_t kk = (size_t)s->KH * s->KW, ckk = (size_t)s->C * kk;
  float *at = cpu_ws_start(ws);
  dws_t d;
  d.wf = cpu_ws_take(&at, round8(s->O) * ckk);
  d.wb = cpu_ws_take(&at, round8(s->C) * (size_t)s->O * kk);
  d.dwT = (double *)cpu_ws_take(&at, 2 * ckk * round16(s->O));
  d.xp = cpu_ws_take(&at, (size_t)nb * s->C * g->plane); /* planes are whole 64-byte lines */
  d.dyp = cpu_ws_take(&at, (size_t)nb * s->O * g->plane);
  d.dyT = at;
  return d;
}
#endif

#if CPU_DIRECT_BUILT
int cpu_has_avx512(void) {
  static int known = -1;
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx512f") ? 1 : 0;
  }
  return known;
}
#else
int cpu_has_avx512(void) { return 0; }
#endif

/* Positions per block of the backward pass: the weight gradient's tiles each stream the block's
 * padded x and dyT from L2, so a block is as long as stays there comfortably; 800 and 3200 ran
 * slower than 1600 (2 samples of 28x28, 8 of 14x14) on vgg-mini (measured side by side). */
enum { DIRECT_BLOCK_POSITIONS = 1600 };

static int direct_applies(const conv_shape_t *s) {
  return cpu_has_avx512() && s->stride == 1 && s->KH == s->KW && s->KH % 2 == 1 && 2 * s->pad == s->KH - 1;
}

static int direct_default_block(const conv_shape_t *s) {
  int nb = DIRECT_BLOCK_POSITIONS / (s->H * s->W);
  return nb < 1 ? 1 : nb;
}

size_t cpu_conv_direct_floats(const conv_shape_t *s) {
  if (!direct_applies(s)) return 0;
  dgeom_t g = dgeom(s);
  return dws_floats(s, &g, direct_default_block(s));
}

int cpu_conv_direct_blocks(const conv_shape_t *s, size_t ws_n) {
  if (!direct_applies(s)) return 0;
  dgeom_t g = dgeom(s);
  int nb = direct_default_block(s);
  while (nb > 0 && dws_floats(s, &g, nb) > ws_n) nb--;
  return nb;
}

#if CPU_DIRECT_BUILT
/* Packs weights into panels of DMR output rows, tap-major: wp[panel][tap][row], zero rows past the
 * last channel. Forward: out = O, taps (c, kh, kw). Flipped (input gradient): out = C, taps
 * (o, kh, kw) reading W[o][c][k-1-kh][k-1-kw]. */
static void pack_weights(const conv_shape_t *s, const float *w, int flipped, float *wp) {
  const int kk = s->KH * s->KW, out = flipped ? s->C : s->O, in = flipped ? s->O : s->C;
  const size_t taps = (size_t)in * kk;
  for (int r0 = 0; r0 < out; r0 += DMR)
    for (size_t t = 0; t < taps; t++)
      for (int r = 0; r < DMR; r++) {
        const int row = r0 + r;
        float v = 0.0f;
        if (row < out) {
          const int ch = (int)(t / kk), tap = (int)(t % kk);
          v = flipped ? w[((size_t)ch * s->C + row) * kk + (kk - 1 - tap)] : w[(size_t)row * taps + t];
        }
        wp[((size_t)(r0 / DMR) * taps + t) * DMR + r] = v;
      }
}
#endif

#if CPU_DIRECT_BUILT

/* Mask of the first n (<= 16) lanes. */
static inline __mmask16 lanes(int n) { return (__mmask16)((1u << n) - 1u); }

/* The padded plane in chunks of 16 floats: chunk i's lanes that hold pixels (the rest are pad
 * zeros), in its low 16 bits, and how many (the pixels it takes from the image) above them. The
 * pattern is the geometry's, the same for every plane: made once per call, plane/16 entries. */
static uint32_t *pad_chunks(const dgeom_t *g) {
  const size_t n = g->plane / VL;
  uint32_t *chunk = xmalloc(n * sizeof *chunk);
  for (size_t i = 0; i < n; i++) {
    uint32_t mask = 0, count = 0;
    for (int l = 0; l < VL; l++) { /* row r and column col of the padded image; pixels past p of both */
      const size_t u = i * VL + (size_t)l, r = u / (size_t)g->Wp, col = u % (size_t)g->Wp;
      if (r >= (size_t)g->p && r < (size_t)(g->p + g->H) && col >= (size_t)g->p) mask |= 1u << l, count++;
    }
    chunk[i] = mask | count << 16;
  }
  return chunk;
}

/* xp (n planes of g->plane) = the n channels (H, W) of img, zero padded, one expanding load and
 * one aligned store per 16 floats of a plane (chunk from pad_chunks). Where relu_y (n planes like
 * img) is not NULL, a value is copied only where relu_y > 0, else 0 (a fused ReLU's backward).
 * Where sums is not NULL, sums[c] += the sum of plane c as copied, in double lanes (the bias
 * gradient of dy, from the values in registers rather than a second read of dy and relu_y). */
CPU_AVX512 static void pad_planes(const dgeom_t *g, const uint32_t *chunk, int n, const float *img,
                                  const float *relu_y, float *xp, double *sums) {
  _Static_assert(CPU_D_LANES == 16, "two vectors of 8 doubles are the lanes");
  const size_t chunks = g->plane / VL;
  const __m512 zero = _mm512_setzero_ps();
  for (int c = 0; c < n; c++) {
    float *dst = xp + (size_t)c * g->plane;
    const float *src = img + (size_t)c * g->H * g->W, *y = relu_y ? relu_y + (size_t)c * g->H * g->W : NULL;
    __m512d lo = _mm512_setzero_pd(), hi = lo; /* lanes 0..7 and 8..15 of the plane's sum */
    for (size_t i = 0; i < chunks; i++) {
      const __mmask16 m = (__mmask16)chunk[i];
      __m512 v = _mm512_maskz_expandloadu_ps(m, src);
      if (y) {
        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_expandloadu_ps(m, y), zero, _CMP_GT_OQ), v);
        y += chunk[i] >> 16;
      }
      src += chunk[i] >> 16;
      _mm512_store_ps(dst + i * VL, v);
      if (sums) {
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
      }
    }
    if (sums) {
      double lane[CPU_D_LANES];
      _mm512_storeu_pd(lane, lo);
      _mm512_storeu_pd(lane + 8, hi);
      sums[c] += cpu_lanes_total(lane);
    }
  }
}

#define TILE_ROW(r)                                                                                \
  {                                                                                                \
    const __m512 a = _mm512_set1_ps(wk[r]);                                                        \
    c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0);                                                     \
    if (nv > 1) c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1);                                         \
    if (nv > 2) c##r##2 = _mm512_fmadd_ps(a, b2, c##r##2);                                         \
  }

/* Which lanes of a tile's vectors are pixels: vector v's valid lanes, mask[v] (columns < W of
 * positions < Q), are compressed to the front (lanes `stored`[v] then) and written at off[v] of
 * each row's plane, since consecutive valid positions are consecutive pixels. The same for every
 * image and row: a table per call (tile_lane_table). */
typedef struct tile_lanes {
  __mmask16 mask[3], stored[3];
  int off[3];
} tile_lanes_t;

/* Where a tile's rows go; rows past `rows` are dropped. */
typedef struct tile_out {
  float *out;        /* the plane of the tile's first row (output channel r0) */
  size_t HW;         /* floats per output plane */
  const float *bias; /* r0's bias, or NULL */
  int rows, relu, accumulate;
  const tile_lanes_t *lanes; /* the tile's */
} tile_out_t;

#define TILE_VEC_WRITE(r, v)                                                                       \
  if (nv > (v)) {                                                                                  \
    const __mmask16 n_ = o->lanes->stored[v];                                                      \
    float *dst_ = o->out + (r) * o->HW + o->lanes->off[v];                                         \
    __m512 x_ = c##r##v;                                                                           \
    if (o->accumulate)                                                                             \
      x_ = _mm512_add_ps(_mm512_maskz_compress_ps(o->lanes->mask[v], x_), _mm512_maskz_loadu_ps(n_, dst_)); \
    else {                                                                                         \
      x_ = _mm512_add_ps(x_, bias_);                                                               \
      if (o->relu) x_ = _mm512_max_ps(x_, _mm512_setzero_ps());                                    \
      x_ = _mm512_maskz_compress_ps(o->lanes->mask[v], x_);                                        \
    }                                                                                              \
    _mm512_mask_storeu_ps(dst_, n_, x_);                                                           \
  }
#define TILE_WRITE(r)                                                                              \
  if ((r) < o->rows) {                                                                             \
    const __m512 bias_ = _mm512_set1_ps(o->bias ? o->bias[r] : 0.0f);                              \
    TILE_VEC_WRITE(r, 0) TILE_VEC_WRITE(r, 1) TILE_VEC_WRITE(r, 2)                                 \
  }

/* A tile (DMR, 16*nv) = sum over input channels and taps of the packed weights wp (taps, DMR)
 * times the padded input at xq (the tile's first position) shifted by each tap, written out as o
 * says (+ bias, ReLU, or added into the output); nv (1..3, a constant where this is inlined)
 * vectors of 16 positions: 3 but for the grid's last tile. */
CPU_AVX512 static inline __attribute__((always_inline)) void
direct_tile(const float *xq, size_t plane, int cin, int k, int Wp, const float *wp, const tile_out_t *o, const int nv) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00,
         c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00, c40 = c00, c41 = c00, c42 = c00, c50 = c00,
         c51 = c00, c52 = c00, c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
  const float *wk = wp;
  for (int c = 0; c < cin; c++)
    for (int kh = 0; kh < k; kh++) {
      const float *xr = xq + (size_t)c * plane + (size_t)kh * Wp;
      for (int kw = 0; kw < k; kw++, wk += DMR) {
        const __m512 b0 = _mm512_loadu_ps(xr + kw), b1 = nv > 1 ? _mm512_loadu_ps(xr + kw + 16) : b0,
                     b2 = nv > 2 ? _mm512_loadu_ps(xr + kw + 32) : b0;
        TILE_ROW(0) TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6) TILE_ROW(7)
      }
    }
  TILE_WRITE(0) TILE_WRITE(1) TILE_WRITE(2) TILE_WRITE(3) TILE_WRITE(4) TILE_WRITE(5) TILE_WRITE(6) TILE_WRITE(7)
}

CPU_AVX512 static void direct_tile_v3(const float *xq, size_t plane, int cin, int k, int Wp, const float *wp,
                                      const tile_out_t *o) {
  direct_tile(xq, plane, cin, k, Wp, wp, o, 3);
}
CPU_AVX512 static void direct_tile_v2(const float *xq, size_t plane, int cin, int k, int Wp, const float *wp,
                                      const tile_out_t *o) {
  direct_tile(xq, plane, cin, k, Wp, wp, o, 2);
}
CPU_AVX512 static void direct_tile_v1(const float *xq, size_t plane, int cin, int k, int Wp, const float *wp,
                                      const tile_out_t *o) {
  direct_tile(xq, plane, cin, k, Wp, wp, o, 1);
}

/* The lanes of every tile of the grid, tile t at q0 = t * DNR: vector v's lanes at positions
 * q0 + 16v + l that are on the grid (q < Q) and in the image (column < W), and the pixel its first
 * such lane lands on. Made once per call, ceil(Q / DNR) entries. */
static tile_lanes_t *tile_lane_table(const dgeom_t *g) {
  const int tiles = (g->Q + DNR - 1) / DNR;
  tile_lanes_t *table = xmalloc((size_t)tiles * sizeof *table);
  for (int t = 0; t < tiles; t++)
    for (int v = 0; v < 3; v++) {
      unsigned m = 0;
      int off = -1;
      for (int l = 0; l < VL; l++) {
        const int q = t * DNR + VL * v + l, oh = q / g->Wp, ow = q % g->Wp;
        if (q < g->Q && ow < g->W) {
          m |= 1u << l;
          if (off < 0) off = oh * g->W + ow;
        }
      }
      table[t].mask[v] = (__mmask16)m;
      table[t].stored[v] = lanes(__builtin_popcount(m));
      table[t].off[v] = off < 0 ? 0 : off;
    }
  return table;
}

/* One image: out (cout, H, W) = or += conv of the padded input xp (cin planes) with packed weights;
 * `accumulate` adds into out, else out = result + bias (ReLU when asked); table from
 * tile_lane_table. */
CPU_AVX512 static void direct_image(const dgeom_t *g, const tile_lanes_t *table, int cin, int cout, const float *xp,
                                    const float *wp, const float *bias, int relu, int accumulate, float *out) {
  const size_t taps = (size_t)cin * g->k * g->k, HW = (size_t)g->H * g->W;
  tile_out_t o = {.HW = HW, .relu = relu, .accumulate = accumulate};
  for (int q0 = 0; q0 < g->Q; q0 += DNR) {
    const int left = g->Q - q0;
    void (*tile_fn)(const float *, size_t, int, int, int, const float *, const tile_out_t *) =
        left > 2 * VL ? direct_tile_v3 : left > VL ? direct_tile_v2 : direct_tile_v1;
    o.lanes = &table[q0 / DNR];
    for (int r0 = 0; r0 < cout; r0 += DMR) {
      o.out = out + (size_t)r0 * HW;
      o.bias = bias ? bias + r0 : NULL;
      o.rows = cout - r0 < DMR ? cout - r0 : DMR;
      tile_fn(xp + q0, g->plane, cin, g->k, g->Wp, wp + (size_t)(r0 / DMR) * taps * DMR, &o);
    }
  }
}

/* r[i] = column i of the 16x16 block whose rows were r[0..15]. */
CPU_AVX512 static inline void transpose16(__m512 r[16]) {
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

/* dyT (H*W positions, round16(O)) = the padded dy planes (O of them, read at their pixels),
 * transposed 16 channels x up to 16 positions of a row at a time; channels past O are zero. */
CPU_AVX512 static void transpose_dy(const dgeom_t *g, int O, const float *dyp, float *dyT) {
  const size_t op = round16(O), shift = (size_t)g->p * g->Wp + g->p;
  __m512 r[16];
  for (int o0 = 0; o0 < O; o0 += VL)
    for (int oh = 0; oh < g->H; oh++)
      for (int w0 = 0; w0 < g->W; w0 += VL) {
        const int n = g->W - w0 < VL ? g->W - w0 : VL;
        for (int i = 0; i < VL; i++)
          r[i] = o0 + i < O ? _mm512_maskz_loadu_ps(lanes(n), dyp + (size_t)(o0 + i) * g->plane + shift +
                                                                  (size_t)oh * g->Wp + w0)
                            : _mm512_setzero_ps();
        transpose16(r);
        float *out = dyT + ((size_t)oh * g->W + w0) * op + o0;
        for (int i = 0; i < n; i++) _mm512_store_ps(out + (size_t)i * op, r[i]);
      }
}

/* What a weight-gradient tile reads: the block's padded x (xstride floats per sample) and dyT
 * (ostride = round16(O) floats per position), and the output rows [i0, i1) it runs over (row i:
 * sample i / H, output row i % H); and where it adds: dwT (CKK, ostride) in double. */
typedef struct wg_args {
  const dgeom_t *g;
  const float *xp, *dyT;
  size_t xstride, ostride;
  int i0, i1;
  double *dwT;
} wg_args_t;

/* A tile of R vectors of 16 output channels (from o0) by NS segments of 3 taps: segment s reads x
 * at offset koff[s] from the output position, its taps tap0[s] + 0..ntap[s]-1 (ntap 0: a filler
 * whose sums are dropped). dwT[tap][o] += the tile's float sums over the rows, in double. */
CPU_AVX512 static inline __attribute__((always_inline)) void wg_tile(const wg_args_t *a, int o0, const size_t *koff,
                                                                      const int *tap0, const int *ntap, const int R,
                                                                      const int NS) {
  const dgeom_t *g = a->g;
  __m512 acc[8][3][4];
#pragma GCC unroll 8
  for (int s = 0; s < NS; s++)
#pragma GCC unroll 3
    for (int t = 0; t < 3; t++)
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) acc[s][t][r] = _mm512_setzero_ps();
  const float *d = a->dyT + (size_t)a->i0 * g->W * a->ostride + o0;
  for (int i = a->i0; i < a->i1; i++) {
    const float *xr = a->xp + (size_t)(i / g->H) * a->xstride + (size_t)(i % g->H) * g->Wp;
    const float *xs[8]; /* each segment's input at this position */
#pragma GCC unroll 8
    for (int s = 0; s < NS; s++) xs[s] = xr + koff[s];
    for (int ow = 0; ow < g->W; ow++, d += a->ostride) {
      __m512 dv[4];
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) dv[r] = _mm512_load_ps(d + 16 * r);
#pragma GCC unroll 8
      for (int s = 0; s < NS; s++) {
#pragma GCC unroll 3
        for (int t = 0; t < 3; t++) {
          const __m512 b = _mm512_set1_ps(xs[s][t]);
#pragma GCC unroll 4
          for (int r = 0; r < R; r++) acc[s][t][r] = _mm512_fmadd_ps(dv[r], b, acc[s][t][r]);
        }
        /* the next position's taps are this one's shifted by one: hidden from the compiler, which
         * would otherwise carry them over in registers and broadcast them on the FMA's port rather
         * than from memory on a load port */
        xs[s]++;
        __asm__("" : "+r"(xs[s]));
      }
    }
  }
#pragma GCC unroll 8
  for (int s = 0; s < NS; s++)
#pragma GCC unroll 3
    for (int t = 0; t < 3; t++)
      if (t < ntap[s]) {
        double *out = a->dwT + (size_t)(tap0[s] + t) * a->ostride + o0;
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
          const __m512 v = acc[s][t][r];
          const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
          _mm512_store_pd(out + 16 * r, _mm512_add_pd(_mm512_load_pd(out + 16 * r),
                                                       _mm512_cvtps_pd(_mm512_castps512_ps256(v))));
          _mm512_store_pd(out + 16 * r + 8, _mm512_add_pd(_mm512_load_pd(out + 16 * r + 8), _mm512_cvtps_pd(hi)));
        }
      }
}

/* The tile shapes, 24 accumulators or 18 (3 vectors): segments per tile for R vectors (a constant
 * expression, so each wrapper below gets its loops unrolled). */
#define WG_SEGMENTS(R) ((R) == 1 ? 8 : (R) == 2 ? 4 : 2)

CPU_AVX512 static void wg_tile_r1(const wg_args_t *a, int o0, const size_t *koff, const int *tap0, const int *ntap) {
  wg_tile(a, o0, koff, tap0, ntap, 1, WG_SEGMENTS(1));
}
CPU_AVX512 static void wg_tile_r2(const wg_args_t *a, int o0, const size_t *koff, const int *tap0, const int *ntap) {
  wg_tile(a, o0, koff, tap0, ntap, 2, WG_SEGMENTS(2));
}
CPU_AVX512 static void wg_tile_r3(const wg_args_t *a, int o0, const size_t *koff, const int *tap0, const int *ntap) {
  wg_tile(a, o0, koff, tap0, ntap, 3, WG_SEGMENTS(3));
}
CPU_AVX512 static void wg_tile_r4(const wg_args_t *a, int o0, const size_t *koff, const int *tap0, const int *ntap) {
  wg_tile(a, o0, koff, tap0, ntap, 4, WG_SEGMENTS(4));
}

/* Positions a tile sums in float before adding into double: the float sums stay about this long
 * whatever the batch (a row is not split: at most max(W, this)). */
enum { WG_FLUSH_POSITIONS = 400 };

/* Weight gradient of a block of n samples: dwT (C*k*k, round16(O)) += sum over samples and
 * positions of dyT times the input under each tap. A segment is 3 taps of one input row, (c, kh,
 * kw0..kw0+2); a kernel row of k taps is ceil(k/3) segments. */
CPU_AVX512 static void direct_wgrad(const conv_shape_t *s, const dgeom_t *g, int n, const float *xp, const float *dyT,
                                    double *dwT) {
  const int k = g->k, segs_per_row = (k + 2) / 3, nseg = s->C * k * segs_per_row, vecs = (int)round16(s->O) / VL;
  const int rows_per_flush = g->W >= WG_FLUSH_POSITIONS ? 1 : WG_FLUSH_POSITIONS / g->W;
  void (*const tile_fn[5])(const wg_args_t *, int, const size_t *, const int *, const int *) = {
      NULL, wg_tile_r1, wg_tile_r2, wg_tile_r3, wg_tile_r4};
  wg_args_t a = {g, xp, dyT, (size_t)s->C * g->plane, round16(s->O), 0, 0, dwT};
  size_t koff[8];
  int tap0[8], ntap[8];
  for (a.i0 = 0; a.i0 < n * g->H; a.i0 = a.i1) {
    a.i1 = a.i0 + rows_per_flush < n * g->H ? a.i0 + rows_per_flush : n * g->H;
    for (int v0 = 0; v0 < vecs; v0 += 4) {
      const int R = vecs - v0 < 4 ? vecs - v0 : 4, NS = WG_SEGMENTS(R);
      for (int s0 = 0; s0 < nseg; s0 += NS) {
        for (int j = 0; j < NS; j++) { /* segments past the last read its input; their sums are dropped */
          const int seg = s0 + j < nseg ? s0 + j : nseg - 1, row = seg / segs_per_row, kw0 = seg % segs_per_row * 3;
          const int c = row / k, kh = row % k;
          koff[j] = (size_t)c * g->plane + (size_t)kh * g->Wp + kw0;
          tap0[j] = (c * k + kh) * k + kw0;
          ntap[j] = s0 + j < nseg ? (k - kw0 < 3 ? k - kw0 : 3) : 0;
        }
        tile_fn[R](&a, v0 * VL, koff, tap0, ntap);
      }
    }
  }
}

#endif /* CPU_DIRECT_BUILT */

void cpu_conv_direct_fwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu,
                         float *y, float *ws, size_t ws_n) {
#if CPU_DIRECT_BUILT
  dgeom_t g = dgeom(s);
  dws_t d = dws_split(s, &g, 1, ws);
  (void)ws_n; /* the caller checked it with cpu_conv_direct_blocks */
  pack_weights(s, w, 0, d.wf);
  uint32_t *chunk = pad_chunks(&g);
  tile_lanes_t *table = tile_lane_table(&g);
  const size_t in_n = (size_t)s->C * s->H * s->W, out_n = (size_t)s->O * s->H * s->W;
  for (int b = 0; b < B; b++) {
    pad_planes(&g, chunk, s->C, x + (size_t)b * in_n, NULL, d.xp, NULL);
    direct_image(&g, table, s->C, s->O, d.xp, d.wf, bias, relu, 0, y + (size_t)b * out_n);
  }
  free(table);
  free(chunk);
#else
  (void)s, (void)B, (void)x, (void)w, (void)bias, (void)relu, (void)y, (void)ws, (void)ws_n;
#endif
}

void cpu_conv_direct_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                         const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n) {
#if CPU_DIRECT_BUILT
  dgeom_t g = dgeom(s);
  const int nb = cpu_conv_direct_blocks(s, ws_n), ckk = s->C * s->KH * s->KW;
  dws_t d = dws_split(s, &g, nb, ws);
  const size_t in_n = (size_t)s->C * s->H * s->W, out_n = (size_t)s->O * s->H * s->W, HW = (size_t)s->H * s->W;
  if (dx) pack_weights(s, w, 1, d.wb);
  const size_t op = round16(s->O), HW_op = HW * op;
  if (dw)
    for (size_t i = 0; i < (size_t)ckk * op; i++) d.dwT[i] = 0.0;
  double *db_acc = xcalloc((size_t)s->O, sizeof *db_acc);
  uint32_t *chunk = pad_chunks(&g);
  tile_lanes_t *table = dx ? tile_lane_table(&g) : NULL;
  for (int b0 = 0; b0 < B; b0 += nb) {
    const int n = B - b0 < nb ? B - b0 : nb;
    for (int j = 0; j < n; j++) {
      const float *dyj = dy + (size_t)(b0 + j) * out_n, *yj = relu_y ? relu_y + (size_t)(b0 + j) * out_n : NULL;
      pad_planes(&g, chunk, s->O, dyj, yj, d.dyp + (size_t)j * s->O * g.plane, db ? db_acc : NULL);
      if (dw) {
        transpose_dy(&g, s->O, d.dyp + (size_t)j * s->O * g.plane, d.dyT + (size_t)j * HW_op);
        pad_planes(&g, chunk, s->C, x + (size_t)(b0 + j) * in_n, NULL, d.xp + (size_t)j * s->C * g.plane, NULL);
      }
    }
    if (dw) direct_wgrad(s, &g, n, d.xp, d.dyT, d.dwT);
    if (dx)
      for (int j = 0; j < n; j++)
        direct_image(&g, table, s->O, s->C, d.dyp + (size_t)j * s->O * g.plane, d.wb, NULL, 0, !dx_write,
                     dx + (size_t)(b0 + j) * in_n);
  }
  if (dw)
    for (int o = 0; o < s->O; o++)
      for (int t = 0; t < ckk; t++) {
        float *at = &dw[(size_t)o * ckk + t];
        *at = (float)((double)*at + d.dwT[(size_t)t * op + o]);
      }
  if (db)
    for (int o = 0; o < s->O; o++) db[o] = (float)((double)db[o] + db_acc[o]);
  free(db_acc);
  free(table);
  free(chunk);
#else
  (void)s, (void)B, (void)x, (void)w, (void)dy, (void)relu_y, (void)dx, (void)dx_write, (void)dw, (void)db, (void)ws,
      (void)ws_n;
#endif
}
