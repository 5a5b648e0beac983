/* The direct convolution's kernels (cpu_conv_direct.c tells the method), written once over the
 * vector width SIMD_W of cpu_simd.h and included once per width (cpu_kern_w16.c, cpu_kern_w8.c);
 * every function here is static but the two drivers, direct_fwd_wW and direct_bwd_wW.
 *
 * Tile shapes by width (all fit the width's registers: 32 zmm, 16 ymm):
 *   DMR       output channels (broadcast weights) of a forward / input-gradient tile: 8 or 4;
 *             its positions are DIRECT_NV vectors, 24 or 12 accumulators
 *   WG_RMAX   vectors of output channels of a weight-gradient tile: 4 or 2; WG_SEGMENTS(R) segments
 *             of 3 taps beside them (R * 3 * segments: 24 or 12 accumulators) */
#include <stdlib.h>

#include "backend/cpu_direct.h"
#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "backend/cpu_simd.h"
#include "core/error.h"

#define VL SIMD_W
#if SIMD_W == 16
#define DMR 8
#define WG_RMAX 4
#define WG_SEGMENTS(R) ((R) == 1 ? 8 : (R) == 2 ? 4 : 2)
#else
#define DMR 4
#define WG_RMAX 2
#define WG_SEGMENTS(R) ((R) == 1 ? 4 : 2)
#endif
#define DNR (DIRECT_NV * VL)

/* xp (n planes of g->plane) = the n channels (H, W) of img, zero padded, one expanding load and
 * one aligned store per vector of a plane (chunk from direct_pad_chunks). Where relu_y (n planes
 * like img) is not NULL, a value is copied only where relu_y > 0, else 0 (a fused ReLU's backward).
 * Where sums is not NULL, sums[c] += the sum of plane c as copied, in double lanes (the bias
 * gradient of dy, from the values in registers rather than a second read of dy and relu_y). With
 * round (precision = bf16), the values stored are rounded to bfloat16 values in registers: the
 * products' operands (the sums above are of the values before). */
SIMD_TARGET static void pad_planes(const padded_t *g, const uint32_t *chunk, int n, const float *img,
                                   const float *relu_y, float *xp, double *sums, int round) {
  _Static_assert(CPU_D_LANES >= SIMD_W, "a vector's lanes are the sum's lanes");
  const size_t chunks = g->plane / VL;
  const vf zero = vf_zero();
  for (int c = 0; c < n; c++) {
    float *dst = xp + (size_t)c * g->plane;
    const float *src = img + (size_t)c * g->H * g->W, *y = relu_y ? relu_y + (size_t)c * g->H * g->W : NULL;
    vd lo = vd_zero(), hi = lo; /* the low and high lanes of the plane's sum */
    for (size_t i = 0; i < chunks; i++) {
      const unsigned m = chunk[i] & 0xffffu;
      vf v = vf_expand(m, src);
      if (y) {
        v = vf_keep(vf_gt(vf_expand(m, y), zero), v);
        y += chunk[i] >> 16;
      }
      src += chunk[i] >> 16;
      vf_store(dst + i * VL, round ? vf_round_bf16(v) : v);
      if (sums) {
        lo = vd_add(lo, vd_lo(v));
        hi = vd_add(hi, vd_hi(v));
      }
    }
    if (sums) {
      double lane[CPU_D_LANES] = {0};
      vd_storeu(lane, lo);
      vd_storeu(lane + VL / 2, hi);
      sums[c] += cpu_lanes_total(lane);
    }
  }
}

#define TILE_ROW(r)                                                                                \
  if ((r) < DMR) {                                                                                 \
    const vf a = vf_set1(wk[r]);                                                                   \
    c##r##0 = vf_fmadd(a, b0, c##r##0);                                                            \
    if (nv > 1) c##r##1 = vf_fmadd(a, b1, c##r##1);                                                \
    if (nv > 2) c##r##2 = vf_fmadd(a, b2, c##r##2);                                                \
  }

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
    const int n_ = o->lanes->count[v];                                                             \
    float *dst_ = o->out + (r) * o->HW + o->lanes->off[v];                                         \
    vf x_ = c##r##v;                                                                               \
    if (o->accumulate)                                                                             \
      x_ = vf_add(vf_compress(o->lanes->mask[v], x_), vf_loadu_n(dst_, n_));                       \
    else {                                                                                         \
      x_ = vf_add(x_, bias_);                                                                      \
      if (o->relu) x_ = vf_max(x_, vf_zero());                                                     \
      x_ = vf_compress(o->lanes->mask[v], x_);                                                     \
    }                                                                                              \
    vf_storeu_n(dst_, n_, x_);                                                                     \
  }
#define TILE_WRITE(r)                                                                              \
  if ((r) < DMR && (r) < o->rows) {                                                                \
    const vf bias_ = vf_set1(o->bias ? o->bias[r] : 0.0f);                                         \
    TILE_VEC_WRITE(r, 0) TILE_VEC_WRITE(r, 1) TILE_VEC_WRITE(r, 2)                                 \
  }

/* A tile (DMR, VL*nv) = sum over the ntaps taps of the packed weights wp (taps, DMR) times the
 * input planes at xq (the tile's first position) + toff[tap], written out as o says (+ bias, ReLU,
 * or added into the output); nv (1..3, a constant where this is inlined) vectors of positions:
 * 3 but for the grid's last tile. */
SIMD_INLINE void direct_tile(const float *xq, const size_t *toff, int ntaps, const float *wp, const tile_out_t *o,
                             const int nv) {
  vf c00 = vf_zero(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00, c21 = c00, c22 = c00,
     c30 = c00, c31 = c00, c32 = c00, c40 = c00, c41 = c00, c42 = c00, c50 = c00, c51 = c00, c52 = c00, c60 = c00,
     c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
  const float *wk = wp;
  for (int t = 0; t < ntaps; t++, wk += DMR) {
    const float *xr = xq + toff[t];
    const vf b0 = vf_loadu(xr), b1 = nv > 1 ? vf_loadu(xr + VL) : b0, b2 = nv > 2 ? vf_loadu(xr + 2 * VL) : b0;
    TILE_ROW(0) TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6) TILE_ROW(7)
  }
  TILE_WRITE(0) TILE_WRITE(1) TILE_WRITE(2) TILE_WRITE(3) TILE_WRITE(4) TILE_WRITE(5) TILE_WRITE(6) TILE_WRITE(7)
}

typedef void (*direct_tile_fn)(const float *, const size_t *, int, const float *, const tile_out_t *);

#define DIRECT_TILE_NV(nv)                                                                         \
  SIMD_TARGET static void direct_tile_v##nv(const float *xq, const size_t *toff, int ntaps, const float *wp, \
                                            const tile_out_t *o) {                                 \
    direct_tile(xq, toff, ntaps, wp, o, nv);                                                       \
  }
DIRECT_TILE_NV(3)
DIRECT_TILE_NV(2)
DIRECT_TILE_NV(1)

/* One image over the grid: out (cout, OH, OW) = or += the ntaps taps (toff, wp packed for them) of
 * the planes at xp; `accumulate` adds into out, else out = result + bias (ReLU when asked); table
 * from direct_tile_lanes. */
SIMD_TARGET static void direct_image(const dgeom_t *g, const tile_lanes_t *table, int ntaps, const size_t *toff,
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

/* dyT (H*W positions, round16(O)) = the padded dy planes (O of them, read at their pixels),
 * transposed VL channels x up to VL positions of a row at a time; channels past O up to a multiple
 * of VL are zero. */
SIMD_TARGET static void transpose_dy(const padded_t *g, int O, const float *dyp, float *dyT) {
  const size_t op = direct_round16(O), shift = (size_t)g->p * g->Wp + g->p;
  vf r[VL];
  for (int o0 = 0; o0 < O; o0 += VL)
    for (int oh = 0; oh < g->H; oh++)
      for (int w0 = 0; w0 < g->W; w0 += VL) {
        const int n = g->W - w0 < VL ? g->W - w0 : VL;
        for (int i = 0; i < VL; i++)
          r[i] = o0 + i < O ? vf_loadu_n(dyp + (size_t)(o0 + i) * g->plane + shift + (size_t)oh * g->Wp + w0, n)
                            : vf_zero();
        vf_transpose(r);
        float *out = dyT + ((size_t)oh * g->W + w0) * op + o0;
        for (int i = 0; i < n; i++) vf_store(out + (size_t)i * op, r[i]);
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

/* A tile of R vectors of VL output channels (from o0) by NS segments of 3 taps: segment s reads x
 * at offset koff[s] from the output position, its taps tap0[s] + 0..ntap[s]-1 (ntap 0: a filler
 * whose sums are dropped). dwT[tap][o] += the tile's float sums over the rows, in double. */
SIMD_INLINE void wg_tile(const wg_args_t *a, int o0, const size_t *koff, const int *tap0, const int *ntap, const int R,
                         const int NS) {
  const dgeom_t *g = a->g;
  vf acc[8][3][4];
#pragma GCC unroll 8
  for (int s = 0; s < NS; s++)
#pragma GCC unroll 3
    for (int t = 0; t < 3; t++)
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) acc[s][t][r] = vf_zero();
  const float *d = a->dyT + (size_t)a->i0 * g->OW * a->ostride + o0;
  for (int i = a->i0; i < a->i1; i++) {
    const float *xr = a->xp + (size_t)(i / g->OH) * a->xstride + (size_t)(i % g->OH) * g->s * g->x.Wp;
    const float *xs[8]; /* each segment's input at this position */
#pragma GCC unroll 8
    for (int s = 0; s < NS; s++) xs[s] = xr + koff[s];
    for (int ow = 0; ow < g->OW; ow++, d += a->ostride) {
      vf dv[4];
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) dv[r] = vf_load(d + VL * r);
#pragma GCC unroll 8
      for (int s = 0; s < NS; s++) {
#pragma GCC unroll 3
        for (int t = 0; t < 3; t++) {
          const vf b = vf_set1(xs[s][t]);
#pragma GCC unroll 4
          for (int r = 0; r < R; r++) acc[s][t][r] = vf_fmadd(dv[r], b, acc[s][t][r]);
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
        for (int r = 0; r < R; r++) vd_add_into(out + VL * r, acc[s][t][r]);
      }
}

typedef void (*wg_tile_fn)(const wg_args_t *, int, const size_t *, const int *, const int *);

/* One function per R with its loops unrolled (R and WG_SEGMENTS(R) constants). */
#define WG_TILE_R(R)                                                                               \
  SIMD_TARGET static void wg_tile_r##R(const wg_args_t *a, int o0, const size_t *koff, const int *tap0, \
                                       const int *ntap) {                                          \
    wg_tile(a, o0, koff, tap0, ntap, R, WG_SEGMENTS(R));                                           \
  }
WG_TILE_R(1)
WG_TILE_R(2)
#if WG_RMAX > 2
WG_TILE_R(3)
WG_TILE_R(4)
static const wg_tile_fn wg_tiles[WG_RMAX + 1] = {NULL, wg_tile_r1, wg_tile_r2, wg_tile_r3, wg_tile_r4};
#else
static const wg_tile_fn wg_tiles[WG_RMAX + 1] = {NULL, wg_tile_r1, wg_tile_r2};
#endif

/* Positions a tile sums in float before adding into double: the float sums stay about this long
 * whatever the batch (a row is not split: at most max(W, this)). */
enum { WG_FLUSH_POSITIONS = 400 };

/* Weight gradient of a block of n samples: dwT (C*k*k, round16(O)) += sum over samples and
 * positions of dyT times the input under each tap. A segment is 3 taps of one input row, (c, kh,
 * kw0..kw0+2), consecutive in the padded image whatever the stride; a kernel row of k taps is
 * ceil(k/3) segments. */
SIMD_TARGET static void direct_wgrad(const conv_shape_t *s, const dgeom_t *g, int n, const float *xp, const float *dyT,
                                     double *dwT) {
  const int k = g->k, segs_per_row = (k + 2) / 3, nseg = s->C * k * segs_per_row;
  const int vecs = (s->O + VL - 1) / VL; /* dyT's channels past them are not read */
  const int rows_per_flush = g->OW >= WG_FLUSH_POSITIONS ? 1 : WG_FLUSH_POSITIONS / g->OW;
  wg_args_t a = {g, xp, dyT, direct_x_floats(s, g), direct_round16(s->O), 0, 0, dwT};
  size_t koff[8];
  int tap0[8], ntap[8];
  for (a.i0 = 0; a.i0 < n * g->OH; a.i0 = a.i1) {
    a.i1 = a.i0 + rows_per_flush < n * g->OH ? a.i0 + rows_per_flush : n * g->OH;
    for (int v0 = 0; v0 < vecs; v0 += WG_RMAX) {
      const int R = vecs - v0 < WG_RMAX ? vecs - v0 : WG_RMAX, NS = WG_SEGMENTS(R);
      for (int s0 = 0; s0 < nseg; s0 += NS) {
        for (int j = 0; j < NS; j++) { /* segments past the last read its input; their sums are dropped */
          const int seg = s0 + j < nseg ? s0 + j : nseg - 1, row = seg / segs_per_row, kw0 = seg % segs_per_row * 3;
          const int c = row / k, kh = row % k;
          koff[j] = (size_t)c * g->x.plane + (size_t)kh * g->x.Wp + kw0;
          tap0[j] = (c * k + kh) * k + kw0;
          ntap[j] = s0 + j < nseg ? (k - kw0 < 3 ? k - kw0 : 3) : 0;
        }
        wg_tiles[R](&a, v0 * VL, koff, tap0, ntap);
      }
    }
  }
}

/* Lanes [lo, hi) of VL where lo < hi, else none. */
static inline unsigned lane_run(int lo, int hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > VL ? VL : hi;
  return lo < hi ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0;
}

/* The VL floats row[x0 .. x0+VL-1] that lie in [0, W), zeros elsewhere (x0 may be negative). */
SIMD_INLINE vf load_in_row(const float *row, int x0, int W) {
  const int lo = x0 < 0 ? -x0 : 0;
  const unsigned m = lane_run(lo, W - x0);
  return m ? vf_expand(m, row + x0 + lo) : vf_zero();
}

/* qp (ph*ph planes per channel, qplane floats apart) = the n channels (H, W) of img split into
 * stride 2's phases: phase (a, b)'s row i, column j is padded pixel (2i + a, 2j + b), i.e. image
 * pixel (2i + a - p, 2j + b - p); zero outside the image and in each plane's slack. VL columns at
 * a time from the 2 VL image pixels they come from, every other one kept. With round, the values
 * stored are rounded to bfloat16 values, as pad_planes does. */
SIMD_TARGET static void phase_planes(const dgeom_t *g, int n, const float *img, float *qp, int round) {
  const int H = g->x.H, W = g->x.W, rows = g->OH + g->p;
  for (int c = 0; c < n; c++)
    for (int a = 0; a < g->ph; a++)
      for (int b = 0; b < g->ph; b++) {
        float *dst = qp + (((size_t)c * g->ph + a) * g->ph + b) * g->qplane;
        for (int i = 0; i < rows; i++) {
          const int y = 2 * i + a - g->p;
          const float *row = y >= 0 && y < H ? img + ((size_t)c * H + y) * W : NULL;
          for (int j0 = 0; j0 < g->Wq; j0 += VL) {
            const int x0 = 2 * j0 + b - g->p;
            const vf v = row ? vf_even(load_in_row(row, x0, W), load_in_row(row, x0 + VL, W)) : vf_zero();
            vf_storeu_n(dst + (size_t)i * g->Wq + j0, g->Wq - j0 < VL ? g->Wq - j0 : VL, round ? vf_round_bf16(v) : v);
          }
        }
        for (size_t q = (size_t)rows * g->Wq; q < g->qplane; q++) dst[q] = 0.0f;
      }
}

/* dx (n channels of H, W) = or += (accumulate) the input gradient by parity at stride 2: parity
 * (a, b)'s (n, OH, OW) at dq + (2a + b) * n*OH*OW holds pixels (2i + a, 2j + b). */
SIMD_TARGET static void interleave_parities(const dgeom_t *g, int n, const float *dq, int accumulate, float *dx) {
  const int H = g->x.H, W = g->x.W, OW = g->OW;
  const size_t parity = (size_t)n * g->OH * OW;
  for (int c = 0; c < n; c++)
    for (int y = 0; y < H; y++) {
      const size_t src = ((size_t)c * g->OH + (size_t)(y / 2)) * OW;
      const float *even = dq + (size_t)(2 * (y % 2)) * parity + src, *odd = even + parity;
      float *row = dx + ((size_t)c * H + y) * W;
      for (int j0 = 0; j0 < OW; j0 += VL) {
        const int m = OW - j0 < VL ? OW - j0 : VL, nlo = 2 * m < VL ? 2 * m : VL, nhi = 2 * m - nlo;
        const vf e = vf_loadu_n(even + j0, m), o = vf_loadu_n(odd + j0, m);
        vf lo = vf_zip_lo(e, o), hi = vf_zip_hi(e, o);
        float *at = row + 2 * j0;
        if (accumulate) {
          lo = vf_add(lo, vf_loadu_n(at, nlo));
          hi = vf_add(hi, vf_loadu_n(at + VL, nhi));
        }
        vf_storeu_n(at, nlo, lo);
        vf_storeu_n(at + VL, nhi, hi);
      }
    }
}

void SIMD_NAME(direct_fwd)(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu,
                           float *y, float *ws, size_t ws_n) {
  dgeom_t g = direct_geom(s);
  dws_t d = direct_ws_split(s, &g, 1, ws);
  (void)ws_n; /* the caller checked it with cpu_conv_direct_blocks */
  const int ckk = s->C * g.k * g.k;
  direct_pack_weights(s->O, ckk, NULL, (size_t)ckk, w, d.wf, DMR);
  size_t *toff = direct_forward_taps(s, &g);
  uint32_t *chunk = g.s == 1 ? direct_pad_chunks(&g.x, VL) : NULL;
  tile_lanes_t *table = direct_tile_lanes(&g, VL);
  const size_t in_n = (size_t)s->C * s->H * s->W, out_n = (size_t)s->O * g.OH * g.OW;
  const int round = host_products_bf16(); /* the products' operands rounded to bfloat16 (weights: when packed) */
  for (int b = 0; b < B; b++) {
    if (g.s == 1)
      pad_planes(&g.x, chunk, s->C, x + (size_t)b * in_n, NULL, d.xp, NULL, round);
    else
      phase_planes(&g, s->C, x + (size_t)b * in_n, d.xp, round);
    direct_image(&g, table, ckk, toff, s->O, d.xp, d.wf, bias, relu, 0, y + (size_t)b * out_n);
  }
  free(table);
  free(chunk);
  free(toff);
}

/* One sample's input gradient from its padded dy (dyp): written or added (accumulate) into dx;
 * at stride 2 each parity into dq, then interleaved. */
SIMD_TARGET static void direct_dx(const conv_shape_t *s, const dgeom_t *g, const tile_lanes_t *table,
                                  const dx_taps_t *t, const float *wb, const float *dyp, float *dq, int accumulate,
                                  float *dx) {
  const size_t parity = (size_t)s->C * g->OH * g->OW;
  size_t at = 0;
  for (int par = 0; par < t->parities; par++) {
    float *out = t->parities == 1 ? dx : dq + (size_t)par * parity;
    if (t->n[par] > 0)
      direct_image(g, table, t->n[par], t->off + at, s->C, dyp, wb + direct_round8(s->C) * at, NULL, 0,
                   t->parities == 1 && accumulate, out);
    else if (t->parities > 1) /* no tap lands on these pixels (a 1x1 kernel's odd rows and columns) */
      for (size_t i = 0; i < parity; i++) out[i] = 0.0f;
    at += (size_t)t->n[par];
  }
  if (t->parities > 1) interleave_parities(g, s->C, dq, accumulate, dx);
}

void SIMD_NAME(direct_bwd)(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,
                           const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws,
                           size_t ws_n) {
  dgeom_t g = direct_geom(s);
  const int nb = cpu_conv_direct_blocks(s, ws_n), ckk = s->C * s->KH * s->KW;
  dws_t d = direct_ws_split(s, &g, nb, ws);
  const size_t in_n = (size_t)s->C * s->H * s->W, OHW = (size_t)g.OH * g.OW, out_n = (size_t)s->O * OHW;
  const size_t xstride = direct_x_floats(s, &g), dystride = (size_t)s->O * g.dy.plane;
  dx_taps_t taps = {0, {0}, NULL};
  if (dx) taps = direct_dx_taps(s, &g, w, d.wb, DMR);
  const size_t op = direct_round16(s->O), OHW_op = OHW * op;
  if (dw)
    for (size_t i = 0; i < (size_t)ckk * op; i++) d.dwT[i] = 0.0;
  double *db_acc = xcalloc((size_t)s->O, sizeof *db_acc);
  /* at stride 1 dy pads like x: one table */
  uint32_t *xchunk = direct_pad_chunks(&g.x, VL), *dychunk = g.s == 1 ? xchunk : direct_pad_chunks(&g.dy, VL);
  tile_lanes_t *table = dx ? direct_tile_lanes(&g, VL) : NULL;
  const int round = host_products_bf16(); /* the products' operands rounded (dy after its bias sums) */
  for (int b0 = 0; b0 < B; b0 += nb) {
    const int n = B - b0 < nb ? B - b0 : nb;
    for (int j = 0; j < n; j++) {
      const float *dyj = dy + (size_t)(b0 + j) * out_n, *yj = relu_y ? relu_y + (size_t)(b0 + j) * out_n : NULL;
      pad_planes(&g.dy, dychunk, s->O, dyj, yj, d.dyp + (size_t)j * dystride, db ? db_acc : NULL, round);
      if (dw) {
        transpose_dy(&g.dy, s->O, d.dyp + (size_t)j * dystride, d.dyT + (size_t)j * OHW_op);
        pad_planes(&g.x, xchunk, s->C, x + (size_t)(b0 + j) * in_n, NULL, d.xp + (size_t)j * xstride, NULL, round);
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
}

#undef VL
#undef DMR
#undef DNR
#undef WG_RMAX
#undef WG_SEGMENTS
