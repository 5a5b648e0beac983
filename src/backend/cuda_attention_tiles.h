/* The CUDA backend's fused causal attention (cuda_kern_attention.cu; backend.h: attention_fwd,
 * attention_bwd): FlashAttention-2's algorithm as functions of (block, thread) that compile for the
 * GPU and for the host, the way cuda_rows.h writes the row kernels. No T x T matrix is ever in
 * memory: a block holds tiles of `tile` query rows and as many key rows of one sample and head in
 * shared memory (32 rows in FA_FP32, 64 in FA_BF16 where they fit: fa_tile_for), and tiles above
 * the diagonal are never visited.
 *
 * Three kernels, each one block per tile of one (sample, head), FA_THREADS threads:
 *   forward (a query tile): over the key tiles 0 .. its own, an online softmax keeps each row's
 *     running maximum m and sum l of exp(s - m), rescales the row's output O by exp(m_old - m_new)
 *     and adds P V; at the end y = O / l and lse = m + log l.
 *   backward dQ (a query tile): D = rowsum(dY * Y) of its rows (kept in dd (B, H, T) for the next
 *     kernel), then over the key tiles 0 .. its own: P = exp(s Q K^T - lse) recomputed,
 *     dS = P (dY V^T - D) s, dQ += dS K; dQ written (or added) once.
 *   backward dK, dV (a key tile): over the query tiles from its own to the last: P and dS again,
 *     dV += P^T dY, dK += dS^T Q; each written (or added) once.
 * So every gradient element has one owner block and one store: no atomics, the same bits each run.
 *
 * A kernel is phases separated by __syncthreads (and, within the softmax phase, the warp's
 * reductions); each phase is a function of (block, thread) here, and the state between phases lives
 * in shared memory (fa_smem_t), so tests/test_cuda_attention runs every block of a grid on the host
 * phase by phase, thread by thread, with cuda_rows.h's host copies of the warp reductions. Every
 * store to global memory goes through CE_STORE. Sums are float (the tiles' products, in a fixed
 * order) but for the softmax's row sum and D (double, the warp's fixed tree).
 *
 * Two forms (fa_form_t): FA_FP32, every product in float on the CUDA cores, and FA_BF16, the tiles'
 * products on the tensor cores (cuda_attention_mma.h: bf16 operands, float sums) as phases of
 * (block, warp), with element-wise phases between them; the softmax, D and the accumulators are
 * float in both, and every phase but the products is shared.
 *
 * Shared memory at head size hs (fa_smem): FA_FP32's tiles padded to rows of hs + 1 floats so
 * that rows read across a warp's lanes fall in different banks: forward 4 tiles of 32 rows, one
 * 32^2 score tile and 5 x 32 row values; dQ 5 tiles and two score tiles; dK, dV 6 tiles and two
 * score tiles (at hs = 128: 69, 89 and 105 KiB: the launchers opt in beyond 48 KiB). FA_BF16's
 * operand tiles are bf16 and its strides WMMA's (64-row tiles at hs = 64: 71, 97 and 123 KiB; at
 * hs = 128: 111, 145 and 187 KiB; 64 rows fit an H100's or H200's 227 KiB up to hs = 160, 32 rows
 * up to hs = 416). */
#ifndef SURGE_BACKEND_CUDA_ATTENTION_TILES_H
#define SURGE_BACKEND_CUDA_ATTENTION_TILES_H

#include "backend/cuda_attention_mma.h"
#include "backend/cuda_rows.h"

/* Query and key rows of a tile: FA_TILE in FA_FP32 (one key column per lane), FA_TILE_WIDE in
 * FA_BF16 where its tiles fit the device's shared memory (FA_TILE where only those fit: fa_tile_for);
 * threads of a block; and the query rows of a score tile each warp owns (r = warp + FA_WARPS k,
 * k < rows / FA_WARPS: FA_ROWS_PER_WARP in FA_FP32). A wider tile gives each of the block's
 * __syncthreads four times the tensor cores' work (and all 8 warps a share of the score tile),
 * and halves the K and V tiles each head reads. */
enum {
  FA_TILE = CE_WARP,
  FA_TILE_WIDE = 2 * CE_WARP,
  FA_THREADS = 256,
  FA_WARPS = FA_THREADS / CE_WARP,
  FA_ROWS_PER_WARP = FA_TILE / FA_WARPS
};

/* The kernels: which tiles each keeps in shared memory. */
typedef enum fa_kernel { FA_FWD, FA_BWD_DQ, FA_BWD_DKV } fa_kernel_t;

/* One call's geometry: B samples of T tokens, width C in H heads of hs = C / H; `tiles` tiles of
 * `tile` rows (FA_TILE or FA_TILE_WIDE) per sequence; scale = 1 / sqrt(hs). */
typedef struct fa_geom {
  int B, T, C, H, hs, tile, tiles;
  float scale;
} fa_geom_t;

CE_FN fa_geom_t fa_geom(int B, int T, int C, int H, int tile) {
  fa_geom_t g;
  g.B = B, g.T = T, g.C = C, g.H = H, g.hs = C / H, g.tile = tile, g.tiles = (T + tile - 1) / tile;
  g.scale = 1.0f / sqrtf((float)g.hs);
  return g;
}

/* Blocks of each kernel's grid: one per tile of each (sample, head). */
CE_FN long long fa_blocks(const fa_geom_t *g) { return (long long)g->B * g->H * g->tiles; }

/* Block `block`'s (sample, head) index b H + h, and its tile: the query tiles of the forward and
 * dQ kernels last first, the key tiles of the dK, dV kernel first first (the longest loops start
 * first). */
CE_FN int fa_block_bh(const fa_geom_t *g, long long block) { return (int)(block / g->tiles); }
CE_FN int fa_block_query_tile(const fa_geom_t *g, long long block) { return g->tiles - 1 - (int)(block % g->tiles); }
CE_FN int fa_block_key_tile(const fa_geom_t *g, long long block) { return (int)(block % g->tiles); }

/* The offsets of row i of (sample, head) bh: in qkv (B, T, 3C) (q; k at + C, v at + 2C) and in y,
 * dy (B, T, C); lse and D (B, H, T) are at bh T + i. */
CE_FN long long fa_qkv_row(const fa_geom_t *g, int bh, int i) {
  return ((long long)(bh / g->H) * g->T + i) * 3 * g->C + (long long)(bh % g->H) * g->hs;
}
CE_FN long long fa_out_row(const fa_geom_t *g, int bh, int i) {
  return ((long long)(bh / g->H) * g->T + i) * g->C + (long long)(bh % g->H) * g->hs;
}

/* Query i sees key j: causal, and only real queries (rows past T of a tail tile see nothing). */
CE_FN int fa_visible(int i, int j, int T) { return j <= i && i < T; }

/* The two forms of the kernels: FA_FP32, every product in float on the CUDA cores; FA_BF16, the
 * tiles' products on the tensor cores (cuda_attention_mma.h: bf16 x bf16, float sums), operands
 * rounded to bfloat16 as they are stored in shared memory, the softmax and the row sums as FA_FP32's. */
typedef enum fa_form { FA_FP32, FA_BF16 } fa_form_t;

/* ---- shared memory, tiles of `tile` rows. FA_FP32: float tiles at stride ld = hs + 1 (rows read
 * across a warp's lanes fall in different banks). FA_BF16: the operand tiles in bfloat16 at stride
 * ldh = hs + 8 and the accumulators in float at ld = hs + 4, P and dS again in bfloat16 at stride
 * ldp = tile + 8 (WMMA: ldm a multiple of 8 bf16 or 4 floats; every region a multiple of 32 bytes,
 * so from a 32-byte aligned base every fragment's pointer is 32-byte aligned). Both: score tiles
 * tile x tile floats at stride lds (FA_FP32 tile, FA_BF16 tile + 4: rows a fragment stores fall in
 * different banks) and `tile` row values each. */
typedef struct fa_smem {
  fa_form_t form;              /* (a constant in each kernel: its branches fold) */
  int tile;                    /* rows of every tile */
  int ld, ldh, lds, ldp;       /* strides: float tiles, (FA_BF16) bf16 tiles, score tiles, bf16 P and dS */
  float *q, *k, *v, *dy;       /* FA_FP32's operand tiles (dy: backward only), NULL in FA_BF16 */
  fa_bf16 *qh, *kh, *vh, *dyh; /* FA_BF16's, NULL in FA_FP32 */
  float *acc, *acc2;           /* accumulators: forward O; dQ kernel dQ; dK, dV kernel dK and (acc2) dV */
  float *p, *ds;               /* scores, probabilities and (backward) their gradients dS (FA_BF16: dY V^T) */
  fa_bf16 *ph, *dsh;           /* FA_BF16: P (forward, dK dV kernel) and dS (backward) as product operands */
  float *m, *l, *corr;         /* forward: each row's running maximum, sum, and this key tile's rescale */
  float *lse, *dd;             /* backward: each row's log-sum-exp and D */
} fa_smem_t;

CE_FN int fa_operands_of(fa_kernel_t kind) { return kind == FA_FWD ? 3 : 4; }
CE_FN int fa_accs_of(fa_kernel_t kind) { return kind == FA_BWD_DKV ? 2 : 1; }
CE_FN int fa_squares_of(fa_kernel_t kind) { return kind == FA_FWD ? 1 : 2; }
CE_FN int fa_bf16_squares_of(fa_kernel_t kind) { return kind == FA_BWD_DKV ? 2 : 1; }
enum { FA_ROW_VALUES = 5 }; /* m, l, corr, lse, dd */

CE_FN int fa_ld_of(int hs, fa_form_t form) { return form == FA_BF16 ? hs + 4 : hs + 1; }
CE_FN int fa_ldh_of(int hs, fa_form_t form) { return form == FA_BF16 ? hs + 8 : 0; }
CE_FN int fa_lds_of(int tile, fa_form_t form) { return form == FA_BF16 ? tile + 4 : tile; }
CE_FN int fa_ldp_of(int tile) { return tile + 8; }

/* Bytes of shared memory a block of `kind` needs at head size hs with tiles of `tile` rows. */
CE_FN long fa_smem_bytes(int hs, fa_kernel_t kind, fa_form_t form, int tile) {
  const long ftile = 4L * tile * fa_ld_of(hs, form), htile = 2L * tile * fa_ldh_of(hs, form);
  const long operands = fa_operands_of(kind) * (form == FA_BF16 ? htile : ftile);
  const long bf16_squares = form == FA_BF16 ? fa_bf16_squares_of(kind) * 2L * tile * fa_ldp_of(tile) : 0;
  return operands + fa_accs_of(kind) * ftile + fa_squares_of(kind) * 4L * tile * fa_lds_of(tile, form) +
         bf16_squares + 4L * FA_ROW_VALUES * tile;
}

/* The rows of the tiles `form`'s kernels take at head size hs within `optin` bytes of shared memory
 * a block (the dK, dV kernel's is the largest): FA_FP32 FA_TILE; FA_BF16 FA_TILE_WIDE, or FA_TILE
 * where only those fit, and hs a multiple of the tensor cores' 16; 0 where none fit. */
CE_FN int fa_tile_for(int hs, long optin, fa_form_t form) {
  if (hs <= 0 || (form == FA_BF16 && hs % FA_MMA != 0)) return 0;
  if (form == FA_BF16 && fa_smem_bytes(hs, FA_BWD_DKV, form, FA_TILE_WIDE) <= optin) return FA_TILE_WIDE;
  return fa_smem_bytes(hs, FA_BWD_DKV, form, FA_TILE) <= optin ? FA_TILE : 0;
}

/* The next `bytes` of the region at *at. */
CE_FN void *fa_carve(char **at, long bytes) {
  void *p = *at;
  *at += bytes;
  return p;
}

/* The tiles of `kind` in `form`, `tile` rows each, carved from base (fa_smem_bytes(hs, kind, form,
 * tile) bytes, 32-byte aligned); absent ones NULL. */
CE_FN fa_smem_t fa_smem(void *base, int hs, fa_kernel_t kind, fa_form_t form, int tile) {
  fa_smem_t s;
  char *at = (char *)base;
  const int bf = form == FA_BF16, bwd = kind != FA_FWD;
  s.form = form, s.tile = tile, s.ld = fa_ld_of(hs, form), s.ldh = fa_ldh_of(hs, form);
  s.lds = fa_lds_of(tile, form), s.ldp = fa_ldp_of(tile);
  const long ftile = 4L * tile * s.ld, htile = 2L * tile * s.ldh, square = 4L * tile * s.lds,
             hsquare = 2L * tile * s.ldp;
  s.q = s.k = s.v = s.dy = NULL;
  s.qh = s.kh = s.vh = s.dyh = NULL;
  if (bf) {
    s.qh = (fa_bf16 *)fa_carve(&at, htile), s.kh = (fa_bf16 *)fa_carve(&at, htile);
    s.vh = (fa_bf16 *)fa_carve(&at, htile);
    if (bwd) s.dyh = (fa_bf16 *)fa_carve(&at, htile);
  } else {
    s.q = (float *)fa_carve(&at, ftile), s.k = (float *)fa_carve(&at, ftile), s.v = (float *)fa_carve(&at, ftile);
    if (bwd) s.dy = (float *)fa_carve(&at, ftile);
  }
  s.acc = (float *)fa_carve(&at, ftile);
  s.acc2 = kind == FA_BWD_DKV ? (float *)fa_carve(&at, ftile) : NULL;
  s.p = (float *)fa_carve(&at, square);
  s.ds = bwd ? (float *)fa_carve(&at, square) : NULL;
  s.ph = bf && kind != FA_BWD_DQ ? (fa_bf16 *)fa_carve(&at, hsquare) : NULL;
  s.dsh = bf && bwd ? (fa_bf16 *)fa_carve(&at, hsquare) : NULL;
  s.m = (float *)fa_carve(&at, 4L * FA_ROW_VALUES * tile);
  s.l = s.m + tile, s.corr = s.m + 2 * tile, s.lse = s.m + 3 * tile, s.dd = s.m + 4 * tile;
  return s;
}

/* ---- loads and fills, thread t's elements t, t + FA_THREADS, .. of a tile (consecutive threads
 * on consecutive columns: coalesced) */

/* An operand tile of s (s->tile rows of hs) = that many rows from src at stride src_ld, rows from
 * `valid` on 0: in FA_FP32 into its float tile f (stride ld), in FA_BF16 rounded into its bf16
 * tile h (stride ldh). */
CE_FN void fa_load_operand(const float *src, long long src_ld, int valid, int hs, const fa_smem_t *s, float *f,
                           fa_bf16 *h, int t) {
  for (int e = t; e < s->tile * hs; e += FA_THREADS) {
    const int r = e / hs, c = e % hs;
    const float x = r < valid ? src[r * src_ld + c] : 0.0f;
    if (s->form == FA_FP32) f[r * s->ld + c] = x;
    else h[r * s->ldh + c] = fa_to_bf16(x);
  }
}

/* A float tile of s (s->tile rows of hs at stride ld) = 0 */
CE_FN void fa_zero_tile(const fa_smem_t *s, float *dst, int hs, int t) {
  for (int e = t; e < s->tile * hs; e += FA_THREADS) dst[(e / hs) * s->ld + e % hs] = 0.0f;
}

/* dst[r] = src[r] for r < valid, else 0, r < s->tile (threads below it; a tile has at most
 * FA_THREADS rows) */
CE_FN void fa_load_values(const fa_smem_t *s, const float *src, int valid, float *dst, int t) {
  if (t < s->tile) dst[t] = t < valid ? src[t] : 0.0f;
}

/* The real rows (below T) of tile `tile` of a sequence */
CE_FN int fa_rows_from(const fa_geom_t *g, int tile) {
  const int left = g->T - tile * g->tile;
  return left < g->tile ? left : g->tile;
}

/* Key tile jt's K and V (its rows of qkv's second and third blocks of C). */
CE_FN void fa_load_kv(const fa_geom_t *g, const float *qkv, int bh, int jt, const fa_smem_t *s, int t) {
  const float *k = qkv + fa_qkv_row(g, bh, jt * g->tile) + g->C;
  fa_load_operand(k, 3LL * g->C, fa_rows_from(g, jt), g->hs, s, s->k, s->kh, t);
  fa_load_operand(k + g->C, 3LL * g->C, fa_rows_from(g, jt), g->hs, s, s->v, s->vh, t);
}

/* Query tile it's Q and dY, and its rows' lse and (dd not NULL) D. */
CE_FN void fa_load_q_dy(const fa_geom_t *g, const float *qkv, const float *dy, const float *lse, const float *dd,
                        int bh, int it, const fa_smem_t *s, int t) {
  const int i0 = it * g->tile, valid = fa_rows_from(g, it);
  fa_load_operand(qkv + fa_qkv_row(g, bh, i0), 3LL * g->C, valid, g->hs, s, s->q, s->qh, t);
  fa_load_operand(dy + fa_out_row(g, bh, i0), g->C, valid, g->hs, s, s->dy, s->dyh, t);
  fa_load_values(s, lse + (long long)bh * g->T + i0, valid, s->lse, t);
  if (dd) fa_load_values(s, dd + (long long)bh * g->T + i0, valid, s->dd, t);
}

/* ---- FA_FP32's products, its tiles FA_TILE rows (one key column a lane, s->lds = FA_TILE).
 * The score tile: thread t's entries are column c = its lane and the rows r of its warp;
 * out[k] = a_r . b_c over hs for each k (a's rows broadcast across the warp, b's rows one a lane) */
CE_FN void fa_dots(const float *a, const float *b, int hs, int ld, int t, float *out) {
  const int c = t % CE_WARP, w = t / CE_WARP;
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) out[k] = 0.0f;
  for (int d = 0; d < hs; d++) {
    const float bc = b[c * ld + d];
    for (int k = 0; k < FA_ROWS_PER_WARP; k++) out[k] += a[(w + FA_WARPS * k) * ld + d] * bc;
  }
}

CE_FN int fa_row_of(int t, int k) { return t / CE_WARP + FA_WARPS * k; }

/* ---- the tiles' products: out (FA_TILE rows of hs at stride ld) = out (x) rescale[x] (NULL: 1)
 * + sum_i A(x, i) B(i, :), A (FA_TILE x FA_TILE) at a[x sx + i si] (sx = FA_TILE, si = 1: A;
 * sx = 1, si = FA_TILE: a tile transposed), B FA_TILE rows of hs at stride ld. Thread t's elements
 * are the rows x = fa_row_of(t, k) of its warp (A's values broadcast across the warp) and the
 * columns lane + 32 j (B's rows read one a lane), FA_COL_GROUPS groups of 32 columns at a time:
 * FA_ROWS_PER_WARP x FA_COL_GROUPS sums in registers, (rows + groups) / (rows x groups) loads of
 * shared memory a multiply-add. */
enum { FA_COL_GROUPS = 4 };

/* The columns from base + lane, ng (<= FA_COL_GROUPS) groups of 32 (a constant where it is called:
 * the compiler keeps only the sums used). */
CE_FN void fa_tile_chunk(float *out, const float *rescale, const float *a, int sx, int si, const float *b, int hs,
                         int ld, int base, int ng, int t) {
  const int d0 = base + t % CE_WARP;
  float acc[FA_ROWS_PER_WARP][FA_COL_GROUPS];
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int x = fa_row_of(t, k);
    for (int j = 0; j < ng; j++) {
      const int d = d0 + CE_WARP * j;
      acc[k][j] = d < hs ? out[x * ld + d] * (rescale ? rescale[x] : 1.0f) : 0.0f;
    }
  }
  for (int i = 0; i < FA_TILE; i++) {
    float bi[FA_COL_GROUPS];
    for (int j = 0; j < ng; j++) bi[j] = d0 + CE_WARP * j < hs ? b[i * ld + d0 + CE_WARP * j] : 0.0f;
    for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
      const float ai = a[fa_row_of(t, k) * sx + i * si];
      for (int j = 0; j < ng; j++) acc[k][j] += ai * bi[j];
    }
  }
  for (int k = 0; k < FA_ROWS_PER_WARP; k++)
    for (int j = 0; j < ng; j++)
      if (d0 + CE_WARP * j < hs) out[fa_row_of(t, k) * ld + d0 + CE_WARP * j] = acc[k][j];
}

CE_FN void fa_tile_product(float *out, const float *rescale, const float *a, int sx, int si, const float *b, int hs,
                           int ld, int t) {
  for (int base = 0; base < hs; base += CE_WARP * FA_COL_GROUPS) {
    const int groups = (hs - base + CE_WARP - 1) / CE_WARP; /* hs = 64: 2, not 4 of which 2 idle */
    switch (groups) {
    case 1: fa_tile_chunk(out, rescale, a, sx, si, b, hs, ld, base, 1, t); break;
    case 2: fa_tile_chunk(out, rescale, a, sx, si, b, hs, ld, base, 2, t); break;
    case 3: fa_tile_chunk(out, rescale, a, sx, si, b, hs, ld, base, 3, t); break;
    default: fa_tile_chunk(out, rescale, a, sx, si, b, hs, ld, base, FA_COL_GROUPS, t);
    }
  }
}

/* ---- forward */

/* phase 0: the block's query tile; O = 0, m = -inf, l = 0 */
CE_FN void fa_fwd_begin(const fa_geom_t *g, const float *qkv, long long block, const fa_smem_t *s, int t) {
  const int it = fa_block_query_tile(g, block);
  fa_load_operand(qkv + fa_qkv_row(g, fa_block_bh(g, block), it * g->tile), 3LL * g->C, fa_rows_from(g, it), g->hs,
                  s, s->q, s->qh, t);
  fa_zero_tile(s, s->acc, g->hs, t);
  if (t < s->tile) s->m[t] = -INFINITY, s->l[t] = 0.0f;
}

/* The scaled score of query i and key j from their dot product, -inf where not visible. */
CE_FN float fa_fwd_score(const fa_geom_t *g, int i, int j, float dot) {
  return fa_visible(i, j, g->T) ? dot * g->scale : -INFINITY;
}

/* phase 1 of key tile jt: fa_load_kv. Phase 2: the scaled scores, -inf where not visible. */
CE_FN void fa_fwd_scores(const fa_geom_t *g, long long block, int jt, const fa_smem_t *s, int t) {
  const int i0 = fa_block_query_tile(g, block) * FA_TILE, c = t % CE_WARP;
  float dot[FA_ROWS_PER_WARP];
  fa_dots(s->q, s->k, g->hs, s->ld, t, dot);
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int r = fa_row_of(t, k);
    s->p[r * FA_TILE + c] = fa_fwd_score(g, i0 + r, jt * FA_TILE + c, dot[k]);
  }
}

/* phase 3, for each row r = fa_row_of(thread, k), k < fa_rows_per_warp, of the warp: the largest of
 * the lane's scores (columns lane, lane + 32, .. of the tile); then, with the warp's maximum mx of
 * those and the row's old maximum, each of its exp(s - mx) left in p and their sum returned for the
 * warp's; then (after __syncwarp: every lane has read m) lane 0's update of m, l and corr. */
CE_FN int fa_rows_per_warp(const fa_smem_t *s) { return s->tile / FA_WARPS; }
CE_FN float fa_lane_score(const fa_smem_t *s, int r, int lane) {
  float mx = -INFINITY;
  for (int c = lane; c < s->tile; c += CE_WARP) mx = fmaxf(mx, s->p[r * s->lds + c]);
  return mx;
}
CE_FN double fa_lane_exp(const fa_smem_t *s, int r, int lane, float mx) {
  double sum = 0.0;
  for (int c = lane; c < s->tile; c += CE_WARP) {
    float *x = &s->p[r * s->lds + c];
    *x = *x == -INFINITY ? 0.0f : expf(*x - mx);
    sum += *x;
  }
  return sum;
}
CE_FN void fa_row_update(const fa_smem_t *s, int r, float mx, double sum) {
  const float corr = s->m[r] == -INFINITY ? 0.0f : expf(s->m[r] - mx); /* 0: nothing seen before */
  s->corr[r] = corr;
  s->l[r] = s->l[r] * corr + (float)sum;
  s->m[r] = mx;
}

/* phase 4: O (FA_TILE, hs) = O corr + P V (thread t's elements of O) */
CE_FN void fa_fwd_accumulate(const fa_smem_t *s, int hs, int t) {
  fa_tile_product(s->acc, s->corr, s->p, FA_TILE, 1, s->v, hs, s->ld, t);
}

/* last phase: y = O / l and lse = m + log l of the block's real rows */
CE_FN void fa_fwd_end(const fa_geom_t *g, long long block, const fa_smem_t *s, float *y, float *lse, int t) {
  const int bh = fa_block_bh(g, block), it = fa_block_query_tile(g, block), valid = fa_rows_from(g, it);
  for (int e = t; e < s->tile * g->hs; e += FA_THREADS) {
    const int r = e / g->hs, d = e % g->hs;
    if (r < valid) CE_STORE(y, fa_out_row(g, bh, it * g->tile + r) + d, s->acc[r * s->ld + d] / s->l[r]);
  }
  if (t < valid) CE_STORE(lse, (long long)bh * g->T + it * g->tile + t, s->m[t] + logf(s->l[t]));
}

/* ---- backward */

/* Query i's probability of key j from q.k and the row's lse, 0 where not visible; and its dS from
 * dp = dy.v and the row's D. */
CE_FN float fa_bwd_p(const fa_geom_t *g, int i, int j, float qk, float lse) {
  return fa_visible(i, j, g->T) ? expf(qk * g->scale - lse) : 0.0f;
}
CE_FN float fa_bwd_ds(const fa_geom_t *g, float p, float dp, float d) { return p * (dp - d) * g->scale; }

/* The score tile of query tile it against key tile jt (Q, dY, lse, D, K and V loaded): thread t's
 * P = exp(s q.k - lse) and dS = P (dy.v - D) s, both 0 where not visible. */
CE_FN void fa_bwd_scores(const fa_geom_t *g, int it, int jt, const fa_smem_t *s, int t) {
  const int c = t % CE_WARP;
  float qk[FA_ROWS_PER_WARP], dp[FA_ROWS_PER_WARP];
  fa_dots(s->q, s->k, g->hs, s->ld, t, qk);
  fa_dots(s->dy, s->v, g->hs, s->ld, t, dp);
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int r = fa_row_of(t, k), at = r * FA_TILE + c;
    const float p = fa_bwd_p(g, it * FA_TILE + r, jt * FA_TILE + c, qk[k], s->lse[r]);
    s->p[at] = p;
    s->ds[at] = fa_bwd_ds(g, p, dp[k], s->dd[r]);
  }
}

/* dst (n rows of hs at stride dst_ld) = (write) or += the first n rows of float tile src of s */
CE_FN void fa_put_rows(const fa_smem_t *s, const float *src, int n, int hs, float *base, long long at,
                       long long dst_ld, int write, int t) {
  const int ld = s->ld;
  for (int e = t; e < s->tile * hs; e += FA_THREADS) {
    const int r = e / hs, d = e % hs;
    const long long i = at + r * dst_ld + d;
    if (r < n) CE_STORE(base, i, (write ? 0.0f : base[i]) + src[r * ld + d]);
  }
}

/* dQ kernel, phase 0: the block's Q, dY and lse; dQ = 0 */
CE_FN void fa_dq_begin(const fa_geom_t *g, const float *qkv, const float *dy, const float *lse, long long block,
                       const fa_smem_t *s, int t) {
  fa_load_q_dy(g, qkv, dy, lse, NULL, fa_block_bh(g, block), fa_block_query_tile(g, block), s, t);
  fa_zero_tile(s, s->acc, g->hs, t);
}

/* dQ kernel, phase 1, for each row r = fa_row_of(thread, k) of the warp: lane's part of
 * D_r = dY_r . Y_r (columns lane, lane + 32, ..; both from global memory, as floats in fp32 and, `rounded`, in bf16
 * rounded to bfloat16 as the products read dY: backend.h); after the warp's sum, lane 0 keeps it in dd and, for a
 * real row, stores it to dd_out (B, H, T) for the dK, dV kernel. */
CE_FN double fa_lane_d(const fa_geom_t *g, const float *y, const float *dy, long long block, int r, int lane,
                       int rounded) {
  const int it = fa_block_query_tile(g, block);
  double sum = 0.0;
  if (r >= fa_rows_from(g, it)) return sum;
  const long long at = fa_out_row(g, fa_block_bh(g, block), it * g->tile + r);
  for (int d = lane; d < g->hs; d += CE_WARP)
    sum += rounded ? (double)fa_bf16_value(dy[at + d]) * fa_bf16_value(y[at + d]) : (double)dy[at + d] * y[at + d];
  return sum;
}
CE_FN void fa_row_d(const fa_geom_t *g, long long block, const fa_smem_t *s, int r, double sum, float *dd_out) {
  const int it = fa_block_query_tile(g, block);
  s->dd[r] = (float)sum;
  if (r < fa_rows_from(g, it)) CE_STORE(dd_out, (long long)fa_block_bh(g, block) * g->T + it * g->tile + r, (float)sum);
}

/* dQ kernel, per key tile jt <= its own: fa_load_kv, fa_bwd_scores, then dQ += dS K */
CE_FN void fa_dq_accumulate(const fa_smem_t *s, int hs, int t) {
  fa_tile_product(s->acc, NULL, s->ds, FA_TILE, 1, s->k, hs, s->ld, t);
}

/* dQ kernel, last phase: dq (q's columns of dqkv) = or += dQ */
CE_FN void fa_dq_end(const fa_geom_t *g, long long block, const fa_smem_t *s, float *dqkv, int write, int t) {
  const int it = fa_block_query_tile(g, block);
  fa_put_rows(s, s->acc, fa_rows_from(g, it), g->hs, dqkv, fa_qkv_row(g, fa_block_bh(g, block), it * g->tile),
              3LL * g->C, write, t);
}

/* dK, dV kernel, phase 0: the block's K and V; dK = dV = 0 */
CE_FN void fa_dkv_begin(const fa_geom_t *g, const float *qkv, long long block, const fa_smem_t *s, int t) {
  fa_load_kv(g, qkv, fa_block_bh(g, block), fa_block_key_tile(g, block), s, t);
  fa_zero_tile(s, s->acc, g->hs, t);
  fa_zero_tile(s, s->acc2, g->hs, t);
}

/* dK, dV kernel, per query tile it >= its own: fa_load_q_dy (with D), fa_bwd_scores, then
 * dV += P^T dY and dK += dS^T Q */
CE_FN void fa_dkv_accumulate(const fa_smem_t *s, int hs, int t) {
  fa_tile_product(s->acc2, NULL, s->p, 1, FA_TILE, s->dy, hs, s->ld, t);
  fa_tile_product(s->acc, NULL, s->ds, 1, FA_TILE, s->q, hs, s->ld, t);
}

/* dK, dV kernel, last phase: dk and dv (dqkv's second and third blocks of C) = or += dK, dV */
CE_FN void fa_dkv_end(const fa_geom_t *g, long long block, const fa_smem_t *s, float *dqkv, int write, int t) {
  const int jt = fa_block_key_tile(g, block);
  const long long at = fa_qkv_row(g, fa_block_bh(g, block), jt * g->tile) + g->C;
  fa_put_rows(s, s->acc, fa_rows_from(g, jt), g->hs, dqkv, at, 3LL * g->C, write, t);
  fa_put_rows(s, s->acc2, fa_rows_from(g, jt), g->hs, dqkv, at + g->C, 3LL * g->C, write, t);
}

/* ---- FA_BF16: the tiles' products on the tensor cores, warp w of the block taking its share of
 * 16 x 16 output tiles (fa_mma); the phases between them element-wise, thread t's elements t,
 * t + FA_THREADS, .. as above. */

/* One product of the block: C (m x n floats at stride ldc) = (add 0) or += A B, A (m x k) and
 * B (k x n) bf16 tiles, each row-major or (a_col, b_col) column-major, as fa_mma; m, n and k
 * multiples of 16 (m a tile's rows). */
typedef struct fa_product {
  float *c;
  int ldc;
  const fa_bf16 *a;
  int lda, a_col;
  const fa_bf16 *b;
  int ldb, b_col, m, n, k, add;
} fa_product_t;

CE_FN int fa_product_tiles(const fa_product_t *p) { return (p->m / FA_MMA) * (p->n / FA_MMA); }

/* Warp w's tiles of p: those numbered f (row tile by row tile) with first + f = w modulo FA_WARPS. */
CE_FN void fa_product_share(const fa_product_t *p, int first, int w) {
  const int cols = p->n / FA_MMA;
  for (int f = ((w - first) % FA_WARPS + FA_WARPS) % FA_WARPS; f < fa_product_tiles(p); f += FA_WARPS) {
    const int x = f / cols * FA_MMA, y = f % cols * FA_MMA;
    fa_mma(p->c + x * p->ldc + y, p->ldc, p->a + (p->a_col ? x : x * p->lda), p->lda, p->a_col,
           p->b + (p->b_col ? y * p->ldb : y), p->ldb, p->b_col, p->k, p->add);
  }
}

/* The tiles of p0 and then p1 (or NULL), dealt round the warps. */
CE_FN void fa_products(const fa_product_t *p0, const fa_product_t *p1, int w) {
  fa_product_share(p0, 0, w);
  if (p1) fa_product_share(p1, fa_product_tiles(p0), w);
}

/* The products of the block's query tile with key tile's K (tile x tile scores, raw dots):
 * S = Q K^T into p; the backward's dY V^T into ds too. */
CE_FN fa_product_t fa_tc_qk(const fa_smem_t *s, int hs) {
  const fa_product_t p = {s->p, s->lds, s->qh, s->ldh, 0, s->kh, s->ldh, 1, s->tile, s->tile, hs, 0};
  return p;
}

/* forward, after fa_load_kv, warp w: S = Q K^T. Then fa_tc_fwd_mask, thread t: the scaled scores,
 * -inf where not visible (fa_fwd_scores' values from the tensor cores' dots); then the softmax's
 * phase as FA_FP32's. */
CE_FN void fa_tc_fwd_scores(const fa_smem_t *s, int hs, int w) {
  const fa_product_t qk = fa_tc_qk(s, hs);
  fa_products(&qk, NULL, w);
}
CE_FN void fa_tc_fwd_mask(const fa_geom_t *g, long long block, int jt, const fa_smem_t *s, int t) {
  const int n = s->tile, i0 = fa_block_query_tile(g, block) * n;
  for (int e = t; e < n * n; e += FA_THREADS) {
    float *x = &s->p[(e / n) * s->lds + e % n];
    *x = fa_fwd_score(g, i0 + e / n, jt * n + e % n, *x);
  }
}

/* forward, after the softmax, thread t: O = O corr and P rounded to bf16; then, warp w, O += P V */
CE_FN void fa_tc_fwd_rescale(const fa_smem_t *s, int hs, int t) {
  const int n = s->tile;
  for (int e = t; e < n * hs; e += FA_THREADS) s->acc[(e / hs) * s->ld + e % hs] *= s->corr[e / hs];
  for (int e = t; e < n * n; e += FA_THREADS)
    s->ph[(e / n) * s->ldp + e % n] = fa_to_bf16(s->p[(e / n) * s->lds + e % n]);
}
CE_FN void fa_tc_fwd_accumulate(const fa_smem_t *s, int hs, int w) {
  const fa_product_t pv = {s->acc, s->ld, s->ph, s->ldp, 0, s->vh, s->ldh, 0, s->tile, hs, s->tile, 1};
  fa_products(&pv, NULL, w);
}

/* backward, after the loads, warp w: S = Q K^T into p and dP = dY V^T into ds. Then
 * fa_tc_bwd_probs, thread t: P and dS of query tile it against key tile jt (fa_bwd_scores'
 * values), rounded to bf16 into ph (the dK, dV kernel's; the dQ kernel has none) and dsh. */
CE_FN void fa_tc_bwd_scores(const fa_smem_t *s, int hs, int w) {
  const fa_product_t qk = fa_tc_qk(s, hs),
                     dpv = {s->ds, s->lds, s->dyh, s->ldh, 0, s->vh, s->ldh, 1, s->tile, s->tile, hs, 0};
  fa_products(&qk, &dpv, w);
}
CE_FN void fa_tc_bwd_probs(const fa_geom_t *g, int it, int jt, const fa_smem_t *s, int t) {
  const int n = s->tile;
  for (int e = t; e < n * n; e += FA_THREADS) {
    const int r = e / n, c = e % n, at = r * s->lds + c;
    const float p = fa_bwd_p(g, it * n + r, jt * n + c, s->p[at], s->lse[r]);
    if (s->ph) s->ph[r * s->ldp + c] = fa_to_bf16(p); /* (a kernel's constant) */
    s->dsh[r * s->ldp + c] = fa_to_bf16(fa_bwd_ds(g, p, s->ds[at], s->dd[r]));
  }
}

/* dQ kernel, warp w: dQ += dS K */
CE_FN void fa_tc_dq_accumulate(const fa_smem_t *s, int hs, int w) {
  const fa_product_t dsk = {s->acc, s->ld, s->dsh, s->ldp, 0, s->kh, s->ldh, 0, s->tile, hs, s->tile, 1};
  fa_products(&dsk, NULL, w);
}

/* dK, dV kernel, warp w: dV += P^T dY and dK += dS^T Q (P and dS loaded column-major) */
CE_FN void fa_tc_dkv_accumulate(const fa_smem_t *s, int hs, int w) {
  const fa_product_t pdy = {s->acc2, s->ld, s->ph, s->ldp, 1, s->dyh, s->ldh, 0, s->tile, hs, s->tile, 1},
                     dsq = {s->acc, s->ld, s->dsh, s->ldp, 1, s->qh, s->ldh, 0, s->tile, hs, s->tile, 1};
  fa_products(&pdy, &dsq, w);
}

#endif
