/* Internal to the "cpu" backend's direct convolution (cpu_conv_direct.c): its geometry, workspace
 * and tap tables, computed once per call in plain C, and the per-width kernels that run over them
 * (cpu_direct_kern.h, compiled for each vector width W by cpu_kern_w16.c and cpu_kern_w8.c). */
#ifndef SURGE_BACKEND_CPU_DIRECT_H
#define SURGE_BACKEND_CPU_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* A tile's grid positions: at most DIRECT_NV vectors; DIRECT_SLACK floats past a plane's grid
 * cover the widest tile's over-reads (48 positions of 16-float vectors). */
enum { DIRECT_NV = 3, DIRECT_SLACK = 64 };

/* An (H, W) image in padded-width planes: H + 2p rows of Wp = W + p, `plane` floats apart (slack
 * for the tiles' over-reads included, a multiple of 16). */
typedef struct padded {
  int H, W, p, Wp;
  size_t plane;
} padded_t;

/* Geometry of one direct convolution (both directions). */
typedef struct dgeom {
  int s, k, p, OH, OW;
  padded_t x;  /* the input as the weight gradient reads it, and the forward at stride 1 */
  padded_t dy; /* the output gradient as the input gradient reads it: OH + 2p rows of OW + p */
  int ph;      /* the forward reads ph*ph planes per input channel: 1, or stride 2's phases (2; 1 for k = 1) */
  int Wq;      /* their width, OW + p; the grid of both directions: OH rows of Wq positions */
  size_t qplane;
} dgeom_t;

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

/* Which lanes of a tile's vectors are pixels: vector v's valid lanes, mask[v] (columns < OW of
 * positions < Q), are compressed to the front (count[v] of them) and written at off[v] of each
 * row's plane, since consecutive valid positions are consecutive pixels. */
typedef struct tile_lanes {
  unsigned mask[DIRECT_NV];
  int count[DIRECT_NV], off[DIRECT_NV];
} tile_lanes_t;

/* The input gradient's taps by parity of dx pixel (stride^2 parities, one at stride 1): their
 * offsets in the padded dy; their packed weights are in the workspace's wb, parity after parity. */
typedef struct dx_taps {
  int parities, n[4];
  size_t *off;
} dx_taps_t;

static inline size_t direct_round8(int n) { return (size_t)(n + 7) / 8 * 8; }
static inline size_t direct_round16(int n) { return (size_t)(n + 15) / 16 * 16; }

/* cpu_conv_direct.c: what the kernels share, all plain C. */
dgeom_t direct_geom(const conv_shape_t *s);
dws_t direct_ws_split(const conv_shape_t *s, const dgeom_t *g, int nb, float *ws);
size_t direct_x_floats(const conv_shape_t *s, const dgeom_t *g); /* a sample's input planes */
/* wp[panel][tap][row] = w[row * rstride + widx[tap]] (widx NULL: the tap), panels of mr rows; rounded to
 * bfloat16 values in precision = bf16 (host_products_bf16), as the padded planes are */
void direct_pack_weights(int rows, int ntaps, const size_t *widx, size_t rstride, const float *w, float *wp, int mr);
size_t *direct_forward_taps(const conv_shape_t *s, const dgeom_t *g); /* C*k*k offsets (free them) */
dx_taps_t direct_dx_taps(const conv_shape_t *s, const dgeom_t *g, const float *w, float *wb, int mr);
/* vl-lane chunks of a padded plane: lane bits, and above bit 16 the pixels they take */
uint32_t *direct_pad_chunks(const padded_t *g, int vl);
/* the lanes of every tile (vectors of vl positions, DIRECT_NV of them per tile) of the grid */
tile_lanes_t *direct_tile_lanes(const dgeom_t *g, int vl);

/* The kernels at each width (cpu_direct_kern.h): the public ops' work once the width is chosen. */
#define DIRECT_KERNELS(W)                                                                                        \
  void direct_fwd_w##W(const conv_shape_t *s, int B, const float *x, const float *w, const float *bias, int relu, \
                       float *y, float *ws, size_t ws_n);                                                        \
  void direct_bwd_w##W(const conv_shape_t *s, int B, const float *x, const float *w, const float *dy,           \
                       const float *relu_y, float *dx, int dx_write, float *dw, float *db, float *ws, size_t ws_n);
DIRECT_KERNELS(16)
DIRECT_KERNELS(8)
#undef DIRECT_KERNELS

#endif
