/* "cpu" backend direct convolution with AVX-512 register tiles, for the convolutions that dominate
 * the zoo: square odd kernel, "same" padding (pad = (k-1)/2), stride 1 (OH = H, OW = W) or stride 2
 * on even H and W (OH = H/2, OW = W/2). It replaces im2col + GEMM + col2im, whose lowering is a 9x
 * larger copy of the input that OpenBLAS then packs once more.
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
 *   forward     tile of 8 output channels x 48 positions in 24 zmm accumulators; per tap 3 loads,
 *               8 broadcasts of packed weights, 24 FMAs; epilogue adds the bias (ReLU) on the way out
 *   input grad  the same tiles over the padded dy with the kernel flipped and transposed
 *               (dx = conv(dy, W') for a stride-1 same convolution; per parity at stride 2)
 *   weight grad dy is transposed to dyT (position, O) and each position's 16..64 output channels
 *               are one to four vectors; a tile of those times 2..8 segments of 3 taps (24
 *               accumulators, each lane its own output channel and tap) takes per position the
 *               dyT vectors and one broadcast input value per tap (from the padded image, every
 *               s-th position): no lane sums, aligned loads only. Every ~400 positions the tile is
 *               added into a double accumulator dwT (tap, O)
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

/* An (H, W) image in padded-width planes: H + 2p rows of Wp = W + p, `plane` floats apart (slack
 * for the tiles' over-reads included, a multiple of 16). */
typedef struct padded {
  int H, W, p, Wp;
  size_t plane;
} padded_t;

/* Floats of a plane of `rows` x `width` that tiles over a grid of it read with taps up to k - 1
 * columns right: they read up to position round_up(grid, DNR) - 1 + (last tap's offset), which is
 * below rows * width + DNR + k. */
static size_t plane_floats(int rows, int width, int k) {
  return ((size_t)rows * width + DNR + (size_t)k + VL + 15) / 16 * 16;
}

static padded_t padded(int H, int W, int p, int k) {
  padded_t x = {H, W, p, W + p, 0};
  x.plane = plane_floats(H + 2 * p, x.Wp, k);
  return x;
}

/* Geometry of one direct convolution (both directions). */
typedef struct dgeom {
  int s, k, p, OH, OW;
  padded_t x;  /* the input as the weight gradient reads it, and the forward at stride 1 */
  padded_t dy; /* the output gradient as the input gradient reads it: OH + 2p rows of OW + p */
  int ph;      /* the forward reads ph*ph planes per input channel: 1, or stride 2's phases (2; 1 for k = 1) */
  int Wq;      /* their width, OW + p; the grid of both directions: OH rows of Wq positions */
  size_t qplane;
} dgeom_t;

static dgeom_t dgeom(const conv_shape_t *s) {
  dgeom_t g;
  g.s = s->stride, g.k = s->KH, g.p = s->pad, g.OH = s->OH, g.OW = s->OW;
  g.x = padded(s->H, s->W, g.p, g.k);
  g.dy = padded(g.OH, g.OW, g.p, g.k);
  g.ph = g.s == 1 || g.k == 1 ? 1 : 2;
  g.Wq = g.OW + g.p;
  g.qplane = g.s == 1 ? g.x.plane : plane_floats(g.OH + g.p, g.Wq, g.k);
  return g;
}

static size_t round8(int n) { return (size_t)(n + 7) / 8 * 8; }

static size_t round16(int n) { return (size_t)(n + 15) / 16 * 16; }

/* Workspace layout: packed forward weights, packed input-gradient weights, the double weight-gradient
 * sum transposed (CKK, round16(O)), then per sample of a block its input planes (padded x, or at
 * stride 2 the larger of that and the forward's phases), padded dy (O planes) and transposed dy
 * (OH*OW positions of round16(O)); at stride 2 one sample's input gradient by parity (C*H*W). */
typedef struct dws {
  float *wf, *wb;
  double *dwT;
  float *xp, *dyp, *dyT; /* nb samples each */
  float *dxq;
} dws_t;

static size_t dws_x_floats(const conv_shape_t *s, const dgeom_t *g) {
  const size_t padded_x = (size_t)s->C * g->x.plane, phases = (size_t)s->C * g->ph * g->ph * g->qplane;
  return g->s == 1 || padded_x > phases ? padded_x : phases;
}

static size_t dws_dxq_floats(const conv_shape_t *s, const dgeom_t *g) {
  return g->s == 1 ? 0 : (size_t)s->C * s->H * s->W;
}

static size_t dws_floats(const conv_shape_t *s, const dgeom_t *g, int nb) {
  size_t kk = (size_t)s->KH * s->KW, ckk = (size_t)s->C * kk, op = round16(s->O);
  size_t per_sample = dws_x_floats(s, g) + (size_t)s->O * g->dy.plane + (size_t)g->OH * g->OW * op;
  return round8(s->O) * ckk + round8(s->C) * (size_t)s->O * kk + 2 * ckk * op + (size_t)nb * per_sample +
         dws_dxq_floats(s, g) + 7 * 16;
}

#if CPU_DIRECT_BUILT
static dws_t dws_split(const conv_shape_t *s, const dgeom_t *g, int nb, float *ws) {
  size_t kk = (size_t)s->KH * s->KW, ckk = (size_t)s->C * kk;
  float *at = cpu_ws_start(ws);
  dws_t d;
  d.wf = cpu_ws_take(&at, round8(s->O) * ckk);
  d.wb = cpu_ws_take(&at, round8(s->C) * (size_t)s->O * kk);
  d.dwT = (double *)cpu_ws_take(&at, 2 * ckk * round16(s->O));
  d.xp = cpu_ws_take(&at, (size_t)nb * dws_x_floats(s, g)); /* planes are whole 64-byte lines */
  d.dyp = cpu_ws_take(&at, (size_t)nb * s->O * g->dy.plane);
  d.dyT = cpu_ws_take(&at, (size_t)nb * g->OH * g->OW * round16(s->O));
  d.dxq = at;
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

/* Output positions per block of the backward pass: the weight gradient's tiles each stream the
 * block's padded x and dyT from L2, so a block is as long as stays there comfortably; 800 and 3200
 * ran slower than 1600 (2 samples of 28x28, 8 of 14x14) on vgg-mini (measured side by side). */
enum { DIRECT_BLOCK_POSITIONS = 1600 };

static int direct_applies(const conv_shape_t *s) {
  const int same = s->KH == s->KW && s->KH % 2 == 1 && 2 * s->pad == s->KH - 1;
  return cpu_has_avx512() && same && (s->stride == 1 || (s->stride == 2 && s->H % 2 == 0 && s->W % 2 == 0));
}

static int direct_default_block(const conv_shape_t *s) {
  int nb = DIRECT_BLOCK_POSITIONS / (s->OH * s->OW);
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
/* Packs weights into panels of DMR output rows, tap-major: wp[panel][tap][row] = w[row * rstride +
 * widx[tap]] (widx NULL: the tap itself), zero rows past the last. */
static void pack_weights(int rows, int ntaps, const size_t *widx, size_t rstride, const float *w, float *wp) {
  for (int r0 = 0; r0 < rows; r0 += DMR)
    for (int t = 0; t < ntaps; t++)
      for (int r = 0; r < DMR; r++) {
        const int row = r0 + r;
        const size_t at = widx ? widx[t] : (size_t)t;
        wp[((size_t)(r0 / DMR) * ntaps + t) * DMR + r] = row < rows ? w[(size_t)row * rstride + at] : 0.0f;
      }
}

/* The forward's taps (c, kh, kw), in weight order: where each reads in the forward's planes from
 * the grid position it computes. C*k*k entries. */
static size_t *forward_taps(const conv_shape_t *s, const dgeom_t *g) {
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
#endif

#if CPU_DIRECT_BUILT

/* Mask of the first n (<= 16) lanes. */
static inline __mmask16 lanes(int n) { return (__mmask16)((1u << n) - 1u); }

/* The padded plane in chunks of 16 floats: chunk i's lanes that hold pixels (the rest are pad
 * zeros), in its low 16 bits, and how many (the pixels it takes from the image) above them. The
 * pattern is the geometry's, the same for every plane: made once per call, plane/16 entries. */
static uint32_t *pad_chunks(const padded_t *g) {
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
CPU_AVX512 static void pad_planes(const padded_t *g, const uint32_t *chunk, int n, const float *img,
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

/* A tile (DMR, 16*nv) = sum over the ntaps taps of the packed weights wp (taps, DMR) times the
 * input planes at xq (the tile's first position) + toff[tap], written out as o says (+ bias, ReLU,
 * or added into the output); nv (1..3, a constant where this is inlined) vectors of 16 positions:
 * 3 but for the grid's last tile. */
CPU_AVX512 static inline __attribute__((always_inline)) void direct_tile(const float *xq, const size_t *toff, int ntaps,
                                                                          const float *wp, const tile_out_t *o,
                                                                          const int nv) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00,
         c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00, c40 = c00, c41 = c00, c42 = c00, c50 = c00,
         c51 = c00, c52 = c00, c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
  const float *wk = wp;
  for (int t = 0; t < ntaps; t++, wk += DMR) {
    const float *xr = xq + toff[t];
    const __m512 b0 = _mm512_loadu_ps(xr), b1 = nv > 1 ? _mm512_loadu_ps(xr + 16) : b0,
                 b2 = nv > 2 ? _mm512_loadu_ps(xr + 32) : b0;
    TILE_ROW(0) TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6) TILE_ROW(7)
  }
  TILE_WRITE(0) TILE_WRITE(1) TILE_WRITE(2) TILE_WRITE(3) TILE_WRITE(4) TILE_WRITE(5) TILE_WRITE(6) TILE_WRITE(7)
}

typedef void (*direct_tile_fn)(const float *, const size_t *, int, const float *, const tile_out_t *);

CPU_AVX512 static void direct_tile_v3(const float *xq, const size_t *toff, int ntaps, const float *wp,
                                      const tile_out_t *o) {
  direct_tile(xq, toff, ntaps, wp, o, 3);
}
CPU_AVX512 static void direct_tile_v2(const float *xq, const size_t *toff, int ntaps, const float *wp,
                                      const tile_out_t *o) {
  direct_tile(xq, toff, ntaps, wp, o, 2);
}
CPU_AVX512 static void direct_tile_v1(const float *xq, const size_t *toff, int ntaps, const float *wp,
                                      const tile_out_t *o) {
  direct_tile(xq, toff, ntaps, wp, o, 1);
}

/* The lanes of every tile of the grid (OH rows of Wq positions), tile t at q0 = t * DNR: vector
 * v's lanes at positions q0 + 16v + l that are on the grid and in the image (column < OW), and the
 * pixel its first such lane lands on. Made once per call, ceil(OH*Wq / DNR) entries. */
static tile_lanes_t *tile_lane_table(const dgeom_t *g) {
  const int Q = g->OH * g->Wq, tiles = (Q + DNR - 1) / DNR;
  tile_lanes_t *table = xmalloc((size_t)tiles * sizeof *table);
  for (int t = 0; t < tiles; t++)
    for (int v = 0; v < 3; v++) {
      unsigned m = 0;
      int off = -1;
      for (int l = 0; l < VL; l++) {
        const int q = t * DNR + VL * v + l, oh = q / g->Wq, ow = q % g->Wq;
        if (q < Q && ow < g->OW) {
          m |= 1u << l;
          if (off < 0) off = oh * g->OW + ow;
        }
      }
      table[t].mask[v] = (__mmask16)m;
      table[t].stored[v] = lanes(__builtin_popcount(m));
      table[t].off[v] = off < 0 ? 0 : off;
    }
  return table;
}

/* One image over the grid: out (cout, OH, OW) = or += the ntaps taps (toff, wp packed for them) of
 * the planes at xp; `accumulate` adds into out, else out = result + bias (ReLU when asked); table
 * from tile_lane_table. */
CPU_AVX512 static void direct_image(const dgeom_t *g, const tile_lanes_t *table, int ntaps, const size_t *toff,
                                    int cout, const float *xp, const float *wp, const float *bias, int relu,
                                    int accumulate, float *out) {
  const int Q = g->OH * g->Wq;
  const size_t HW = (size_t)g->OH * g->OW;
  tile_out_t o = {.HW = HW, .relu = relu, .accumulate = accumulate};
  for (int q0 = 0; q0 < Q; q0 += DNR) {
    const int left = Q - q0;
    const direct_tile_fn tile_fn = left > 2 * VL ? direct_tile_v3 : left > VL ? direct_tile_v2 : direct_tile_v1;
    o.lanes = &table[q0 / DNR];
    for (int r0 = 0; r0 < cout; r0 += DMR) {
      o.out = out + (size_t)r0 * HW;
      o.bias = bias ? bias + r0 : NULL;
      o.rows = cout - r0 < DMR ? cout - r0 : DMR;
      tile_fn(xp + q0, toff, ntaps, wp + (size_t)(r0 / DMR) * ntaps * DMR, &o);
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
CPU_AVX512 static void transpose_dy(const padded_t *g, int O, const float *dyp, float *dyT) {
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
 * sample i / OH, output row i % OH, reading padded rows from s * (i % OH)); and where it adds: dwT
 * (CKK, ostride) in double. */
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
  const float *d = a->dyT + (size_t)a->i0 * g->OW * a->ostride + o0;
  for (int i = a->i0; i < a->i1; i++) {
    const float *xr = a->xp + (size_t)(i / g->OH) * a->xstride + (size_t)(i % g->OH) * g->s * g->x.Wp;
    const float *xs[8]; /* each segment's input at this position */
#pragma GCC unroll 8
    for (int s = 0; s < NS; s++) xs[s] = xr + koff[s];
    for (int ow = 0; ow < g->OW; ow++, d += a->ostride) {
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
        /* the next position's taps are this one's shifted by the stride: hidden from the compiler,
         * which would otherwise carry them over in registers (stride 1) and broadcast them on the
         * FMA's port rather than from memory on a load port */
        xs[s] += g->s;
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
 * kw0..kw0+2), consecutive in the padded image whatever the stride; a kernel row of k taps is
 * ceil(k/3) segments. */
CPU_AVX512 static void direct_wgrad(const conv_shape_t *s, const dgeom_t *g, int n, const float *xp, const float *dyT,
                                    double *dwT) {
  const int k = g->k, segs_per_row = (k + 2) / 3, nseg = s->C * k * segs_per_row, vecs = (int)round16(s->O) / VL;
  const int rows_per_flush = g->OW >= WG_FLUSH_POSITIONS ? 1 : WG_FLUSH_POSITIONS / g->OW;
  void (*const tile_fn[5])(const wg_args_t *, int, const size_t *, const int *, const int *) = {
      NULL, wg_tile_r1, wg_tile_r2, wg_tile_r3, wg_tile_r4};
  wg_args_t a = {g, xp, dyT, dws_x_floats(s, g), round16(s->O), 0, 0, dwT};
  size_t koff[8];
  int tap0[8], ntap[8];
  for (a.i0 = 0; a.i0 < n * g->OH; a.i0 = a.i1) {
    a.i1 = a.i0 + rows_per_flush < n * g->OH ? a.i0 + rows_per_flush : n * g->OH;
    for (int v0 = 0; v0 < vecs; v0 += 4) {
      const int R = vecs - v0 < 4 ? vecs - v0 : 4, NS = WG_SEGMENTS(R);
      for (int s0 = 0; s0 < nseg; s0 += NS) {
        for (int j = 0; j < NS; j++) { /* segments past the last read its input; their sums are dropped */
          const int seg = s0 + j < nseg ? s0 + j : nseg - 1, row = seg / segs_per_row, kw0 = seg % segs_per_row * 3;
          const int c = row / k, kh = row % k;
          koff[j] = (size_t)c * g->x.plane + (size_t)kh * g->x.Wp + kw0;
          tap0[j] = (c * k + kh) * k + kw0;
          ntap[j] = s0 + j < nseg ? (k - kw0 < 3 ? k - kw0 : 3) : 0;
        }
        tile_fn[R](&a, v0 * VL, koff, tap0, ntap);
      }
    }
  }
}

/* Lanes [lo, hi) of 16 where lo < hi, else none. */
static inline __mmask16 lane_run(int lo, int hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > VL ? VL : hi;
  return lo < hi ? (__mmask16)(lanes(hi) & ~lanes(lo)) : 0;
}

/* The 16 floats row[x0 .. x0+15] that lie in [0, W), zeros elsewhere (x0 may be negative). */
CPU_AVX512 static inline __m512 load_in_row(const float *row, int x0, int W) {
  const int lo = x0 < 0 ? -x0 : 0;
  const __mmask16 m = lane_run(lo, W - x0);
  return m ? _mm512_maskz_expandloadu_ps(m, row + x0 + lo) : _mm512_setzero_ps();
}

/* qp (ph*ph planes per channel, qplane floats apart) = the n channels (H, W) of img split into
 * stride 2's phases: phase (a, b)'s row i, column j is padded pixel (2i + a, 2j + b), i.e. image
 * pixel (2i + a - p, 2j + b - p); zero outside the image and in each plane's slack. 16 columns at
 * a time from the 32 image pixels they come from, every other one kept. */
CPU_AVX512 static void phase_planes(const dgeom_t *g, int n, const float *img, float *qp) {
  const int H = g->x.H, W = g->x.W, rows = g->OH + g->p;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int c = 0; c < n; c++)
    for (int a = 0; a < g->ph; a++)
      for (int b = 0; b < g->ph; b++) {
        float *dst = qp + (((size_t)c * g->ph + a) * g->ph + b) * g->qplane;
        for (int i = 0; i < rows; i++) {
          const int y = 2 * i + a - g->p;
          const float *row = y >= 0 && y < H ? img + ((size_t)c * H + y) * W : NULL;
          for (int j0 = 0; j0 < g->Wq; j0 += VL) {
            const int x0 = 2 * j0 + b - g->p;
            const __m512 v = row ? _mm512_permutex2var_ps(load_in_row(row, x0, W), even, load_in_row(row, x0 + VL, W))
                                 : _mm512_setzero_ps();
            _mm512_mask_storeu_ps(dst + (size_t)i * g->Wq + j0, lanes(g->Wq - j0 < VL ? g->Wq - j0 : VL), v);
          }
        }
        for (size_t q = (size_t)rows * g->Wq; q < g->qplane; q++) dst[q] = 0.0f;
      }
}

/* dx (n channels of H, W) = or += (accumulate) the input gradient by parity at stride 2: parity
 * (a, b)'s (n, OH, OW) at dq + (2a + b) * n*OH*OW holds pixels (2i + a, 2j + b). */
CPU_AVX512 static void interleave_parities(const dgeom_t *g, int n, const float *dq, int accumulate, float *dx) {
  const int H = g->x.H, W = g->x.W, OW = g->OW;
  const size_t parity = (size_t)n * g->OH * OW;
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
                second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int c = 0; c < n; c++)
    for (int y = 0; y < H; y++) {
      const size_t src = ((size_t)c * g->OH + (size_t)(y / 2)) * OW;
      const float *even = dq + (size_t)(2 * (y % 2)) * parity + src, *odd = even + parity;
      float *row = dx + ((size_t)c * H + y) * W;
      for (int j0 = 0; j0 < OW; j0 += VL) {
        const int m = OW - j0 < VL ? OW - j0 : VL;
        const __m512 e = _mm512_maskz_loadu_ps(lanes(m), even + j0), o = _mm512_maskz_loadu_ps(lanes(m), odd + j0);
        __m512 lo = _mm512_permutex2var_ps(e, first, o), hi = _mm512_permutex2var_ps(e, second, o);
        const __mmask16 mlo = lane_run(0, 2 * m), mhi = lane_run(0, 2 * m - VL);
        float *at = row + 2 * j0;
        if (accumulate) {
          lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(mlo, at));
          hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(mhi, at + VL));
        }
        _mm512_mask_storeu_ps(at, mlo, lo);
        _mm512_mask_storeu_ps(at + VL, mhi, hi);
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
  const int ckk = s->C * g.k * g.k;
  pack_weights(s->O, ckk, NULL, (size_t)ckk, w, d.wf);
  size_t *toff = forward_taps(s, &g);
  uint32_t *chunk = g.s == 1 ? pad_chunks(&g.x) : NULL;
  tile_lanes_t *table = tile_lane_table(&g);
  const size_t in_n = (size_t)s->C * s->H * s->W, out_n = (size_t)s->O * g.OH * g.OW;
  for (int b = 0; b < B; b++) {
    if (g.s == 1)
      pad_planes(&g.x, chunk, s->C, x + (size_t)b * in_n, NULL, d.xp, NULL);
    else
      phase_planes(&g, s->C, x + (size_t)b * in_n, d.xp);
    direct_image(&g, table, ckk, toff, s->O, d.xp, d.wf, bias, relu, 0, y + (size_t)b * out_n);
  }
  free(table);
  free(chunk);
  free(toff);
#else
  (void)s, (void)B, (void)x, (void)w, (void)bias, (void)relu, (void)y, (void)ws, (void)ws_n;
#endif
}

#if CPU_DIRECT_BUILT
/* The input gradient's taps by parity of dx pixel (stride^2 parities, one at stride 1): their
 * offsets in the padded dy and their packed weights (d->wb, parity after parity). */
typedef struct dx_taps {
  int parities, n[4];
  size_t *off;
} dx_taps_t;

static dx_taps_t dx_taps_pack(const conv_shape_t *s, const dgeom_t *g, const float *w, float *wb) {
  const size_t kk = (size_t)g->k * g->k, okk = (size_t)s->O * kk;
  dx_taps_t t = {g->s * g->s, {0}, xmalloc(okk * sizeof(size_t))};
  size_t *widx = xmalloc(okk * sizeof *widx), at = 0;
  for (int par = 0; par < t.parities; par++) {
    t.n[par] = dx_parity_taps(s, g, par / g->s, par % g->s, t.off + at, widx + at);
    pack_weights(s->C, t.n[par], widx + at, kk, w, wb + round8(s->C) * at);
    at += (size_t)t.n[par];
  }
  free(widx);
  return t;
}

/* One sample's input gradient from its padded dy (dyp): written or added (accumulate) into dx;
 * at stride 2 each parity into dq, then interleaved. */
CPU_AVX512 static void direct_dx(const conv_shape_t *s, const dgeom_t *g, const tile_lanes_t *table,
                                 const dx_taps_t *t, const float *wb, const float *dyp, float *dq, int accumulate,
                                 float *dx) {
  const size_t parity = (size_t)s->C * g->OH * g->OW;
  size_t at = 0;
  for (int par = 0; par < t->parities; par++) {
    float *out = t->parities == 1 ? dx : dq + (size_t)par * parity;
    if (t->n[par] > 0)
      direct_image(g, table, t->n[par], t->off + at, s->C, dyp, wb + round8(s->C) * at, NULL, 0,
                   t->parities == 1 && accumulate, out);
    else if (t->parities > 1) /* no tap lands on these pixels (a 1x1 kernel's odd rows and columns) */
      for (size_t i = 0; i < parity; i++) out[i] = 0.0f;
    at += (size_t)t->n[par];
  }
  if (t->parities > 1) interleave_parities(g, s->C, dq, accumulate, dx);
}
#endif

void cpu_conv_direct_bwd(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                         const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n) {
#if CPU_DIRECT_BUILT
  dgeom_t g = dgeom(s);
  const int nb = cpu_conv_direct_blocks(s, ws_n), ckk = s->C * s->KH * s->KW;
  dws_t d = dws_split(s, &g, nb, ws);
  const size_t in_n = (size_t)s->C * s->H * s->W, OHW = (size_t)g.OH * g.OW, out_n = (size_t)s->O * OHW;
  const size_t xstride = dws_x_floats(s, &g), dystride = (size_t)s->O * g.dy.plane;
  dx_taps_t taps = {0, {0}, NULL};
  if (dx) taps = dx_taps_pack(s, &g, w, d.wb);
  const size_t op = round16(s->O), OHW_op = OHW * op;
  if (dw)
    for (size_t i = 0; i < (size_t)ckk * op; i++) d.dwT[i] = 0.0;
  double *db_acc = xcalloc((size_t)s->O, sizeof *db_acc);
  /* at stride 1 dy pads like x: one table */
  uint32_t *xchunk = pad_chunks(&g.x), *dychunk = g.s == 1 ? xchunk : pad_chunks(&g.dy);
  tile_lanes_t *table = dx ? tile_lane_table(&g) : NULL;
  for (int b0 = 0; b0 < B; b0 += nb) {
    const int n = B - b0 < nb ? B - b0 : nb;
    for (int j = 0; j < n; j++) {
      const float *dyj = dy + (size_t)(b0 + j) * out_n, *yj = relu_y ? relu_y + (size_t)(b0 + j) * out_n : NULL;
      pad_planes(&g.dy, dychunk, s->O, dyj, yj, d.dyp + (size_t)j * dystride, db ? db_acc : NULL);
      if (dw) {
        transpose_dy(&g.dy, s->O, d.dyp + (size_t)j * dystride, d.dyT + (size_t)j * OHW_op);
        pad_planes(&g.x, xchunk, s->C, x + (size_t)(b0 + j) * in_n, NULL, d.xp + (size_t)j * xstride, NULL);
      }
    }
    if (dw) direct_wgrad(s, &g, n, d.xp, d.dyT, d.dwT);
    if (dx)
      for (int j = 0; j < n; j++)
        direct_dx(s, &g, table, &taps, d.wb, d.dyp + (size_t)j * dystride, d.dxq, !dx_write,
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
  if (dychunk != xchunk) free(dychunk);
  free(xchunk);
  free(taps.off);
#else
  (void)s, (void)B, (void)x, (void)w, (void)dy, (void)relu_y, (void)dx, (void)dx_write, (void)dw, (void)db, (void)ws,
      (void)ws_n;
#endif
}
