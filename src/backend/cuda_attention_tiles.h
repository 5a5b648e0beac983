/* The CUDA backend's fused causal attention (cuda_kern_attention.cu; backend.h: attention_fwd,
 * attention_bwd): FlashAttention-2's algorithm as functions of (block, thread) that compile for the
 * GPU and for the host, the way cuda_rows.h writes the row kernels. No T x T matrix is ever in
 * memory: a block holds tiles of FA_TILE query rows and FA_TILE key rows of one sample and head in
 * shared memory, and tiles above the diagonal are never visited.
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
 * Shared memory, floats, at head size hs (tiles padded to rows of hs + 1 so that rows read across a
 * warp's lanes fall in different banks): forward 4 tiles of FA_TILE (hs + 1), one FA_TILE^2 score
 * tile and 5 FA_TILE row values; dQ 5 tiles and two score tiles; dK, dV 6 tiles and two score
 * tiles (at hs = 128: 69, 89 and 105 KiB: the launchers opt in beyond 48 KiB). */
#ifndef SURGE_BACKEND_CUDA_ATTENTION_TILES_H
#define SURGE_BACKEND_CUDA_ATTENTION_TILES_H

#include "backend/cuda_rows.h"

/* Query and key rows of a tile (one key column per lane), threads of a block, and the query rows
 * of a score tile each warp owns (r = warp + FA_WARPS k, k < FA_ROWS_PER_WARP). */
enum { FA_TILE = CE_WARP, FA_THREADS = 256, FA_WARPS = FA_THREADS / CE_WARP, FA_ROWS_PER_WARP = FA_TILE / FA_WARPS };

/* The kernels: which tiles each keeps in shared memory. */
typedef enum fa_kernel { FA_FWD, FA_BWD_DQ, FA_BWD_DKV } fa_kernel_t;

/* One call's geometry: B samples of T tokens, width C in H heads of hs = C / H; `tiles` tiles of
 * FA_TILE rows per sequence; scale = 1 / sqrt(hs). */
typedef struct fa_geom {
  int B, T, C, H, hs, tiles;
  float scale;
} fa_geom_t;

CE_FN fa_geom_t fa_geom(int B, int T, int C, int H) {
  fa_geom_t g;
  g.B = B, g.T = T, g.C = C, g.H = H, g.hs = C / H, g.tiles = (T + FA_TILE - 1) / FA_TILE;
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

/* ---- shared memory: tiles of FA_TILE rows at stride ld = hs + 1, score tiles FA_TILE x FA_TILE,
 * row values of FA_TILE */
typedef struct fa_smem {
  int ld;
  float *q, *k, *v, *dy; /* operand tiles (dy: backward only) */
  float *acc, *acc2;     /* accumulators: forward O; dQ kernel dQ; dK, dV kernel dK and (acc2) dV */
  float *p, *ds;         /* probabilities and (backward) their gradients dS */
  float *m, *l, *corr;   /* forward: each row's running maximum, sum, and this key tile's rescale */
  float *lse, *dd;       /* backward: each row's log-sum-exp and D */
} fa_smem_t;

CE_FN int fa_tiles_of(fa_kernel_t kind) { return kind == FA_FWD ? 4 : kind == FA_BWD_DQ ? 5 : 6; }
CE_FN int fa_squares_of(fa_kernel_t kind) { return kind == FA_FWD ? 1 : 2; }
enum { FA_ROW_VALUES = 5 }; /* m, l, corr, lse, dd */

/* Floats of shared memory a block of `kind` needs at head size hs. */
CE_FN long fa_smem_floats(int hs, fa_kernel_t kind) {
  return (long)fa_tiles_of(kind) * FA_TILE * (hs + 1) + (long)fa_squares_of(kind) * FA_TILE * FA_TILE +
         FA_ROW_VALUES * FA_TILE;
}

/* The three kernels' blocks at head size hs fit `optin` bytes of shared memory (the dK, dV
 * kernel's is the largest). */
CE_FN int fa_fits(int hs, long optin) {
  return hs > 0 && fa_smem_floats(hs, FA_BWD_DKV) * (long)sizeof(float) <= optin;
}

/* The tiles of `kind`, carved from base (fa_smem_floats(hs, kind) floats); absent ones NULL. */
CE_FN fa_smem_t fa_smem(float *base, int hs, fa_kernel_t kind) {
  fa_smem_t s;
  const long tile = (long)FA_TILE * (hs + 1), square = FA_TILE * FA_TILE;
  float *at = base;
  s.ld = hs + 1;
  s.q = at, at += tile;
  s.k = at, at += tile;
  s.v = at, at += tile;
  s.acc = at, at += tile;
  s.dy = s.acc2 = s.ds = NULL;
  if (kind != FA_FWD) s.dy = at, at += tile;
  if (kind == FA_BWD_DKV) s.acc2 = at, at += tile;
  s.p = at, at += square;
  if (kind != FA_FWD) s.ds = at, at += square;
  s.m = at, s.l = at + FA_TILE, s.corr = at + 2 * FA_TILE, s.lse = at + 3 * FA_TILE, s.dd = at + 4 * FA_TILE;
  return s;
}

/* ---- loads and fills, thread t's elements t, t + FA_THREADS, .. of a tile (consecutive threads
 * on consecutive columns: coalesced) */

/* dst (FA_TILE rows, stride ld) = FA_TILE rows of hs from src at stride src_ld, rows from `valid` on 0. */
CE_FN void fa_load_rows(const float *src, long long src_ld, int valid, int hs, int ld, float *dst, int t) {
  for (int e = t; e < FA_TILE * hs; e += FA_THREADS) {
    const int r = e / hs, c = e % hs;
    dst[r * ld + c] = r < valid ? src[r * src_ld + c] : 0.0f;
  }
}

CE_FN void fa_zero_tile(float *dst, int hs, int ld, int t) {
  for (int e = t; e < FA_TILE * hs; e += FA_THREADS) dst[(e / hs) * ld + e % hs] = 0.0f;
}

/* dst[r] = src[r] for r < valid, else 0 (threads below FA_TILE) */
CE_FN void fa_load_values(const float *src, int valid, float *dst, int t) {
  if (t < FA_TILE) dst[t] = t < valid ? src[t] : 0.0f;
}

CE_FN int fa_rows_from(const fa_geom_t *g, int tile) {
  const int left = g->T - tile * FA_TILE;
  return left < FA_TILE ? left : FA_TILE;
}

/* Key tile jt's K and V (its rows of qkv's second and third blocks of C). */
CE_FN void fa_load_kv(const fa_geom_t *g, const float *qkv, int bh, int jt, const fa_smem_t *s, int t) {
  const float *k = qkv + fa_qkv_row(g, bh, jt * FA_TILE) + g->C;
  fa_load_rows(k, 3LL * g->C, fa_rows_from(g, jt), g->hs, s->ld, s->k, t);
  fa_load_rows(k + g->C, 3LL * g->C, fa_rows_from(g, jt), g->hs, s->ld, s->v, t);
}

/* Query tile it's Q and dY, and its rows' lse and (dd not NULL) D. */
CE_FN void fa_load_q_dy(const fa_geom_t *g, const float *qkv, const float *dy, const float *lse, const float *dd,
                        int bh, int it, const fa_smem_t *s, int t) {
  const int i0 = it * FA_TILE, valid = fa_rows_from(g, it);
  fa_load_rows(qkv + fa_qkv_row(g, bh, i0), 3LL * g->C, valid, g->hs, s->ld, s->q, t);
  fa_load_rows(dy + fa_out_row(g, bh, i0), g->C, valid, g->hs, s->ld, s->dy, t);
  fa_load_values(lse + (long long)bh * g->T + i0, valid, s->lse, t);
  if (dd) fa_load_values(dd + (long long)bh * g->T + i0, valid, s->dd, t);
}

/* ---- the score tile: thread t's entries are column c = its lane and the rows r of its warp;
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
  fa_load_rows(qkv + fa_qkv_row(g, fa_block_bh(g, block), it * FA_TILE), 3LL * g->C, fa_rows_from(g, it), g->hs,
               s->ld, s->q, t);
  fa_zero_tile(s->acc, g->hs, s->ld, t);
  if (t < FA_TILE) s->m[t] = -INFINITY, s->l[t] = 0.0f;
}

/* phase 1 of key tile jt: fa_load_kv. Phase 2: the scaled scores, -inf where not visible. */
CE_FN void fa_fwd_scores(const fa_geom_t *g, long long block, int jt, const fa_smem_t *s, int t) {
  const int i0 = fa_block_query_tile(g, block) * FA_TILE, c = t % CE_WARP;
  float dot[FA_ROWS_PER_WARP];
  fa_dots(s->q, s->k, g->hs, s->ld, t, dot);
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int r = fa_row_of(t, k);
    s->p[r * FA_TILE + c] = fa_visible(i0 + r, jt * FA_TILE + c, g->T) ? dot[k] * g->scale : -INFINITY;
  }
}

/* phase 3, for each row r = fa_row_of(thread, k) of the warp: lane c's score; then, with the
 * warp's maximum mx of those and the row's old maximum, its exp(s - mx) left in p and returned for
 * the warp's sum; then (after __syncwarp: every lane has read m) lane 0's update of m, l and corr. */
CE_FN float fa_lane_score(const fa_smem_t *s, int r, int c) { return s->p[r * FA_TILE + c]; }
CE_FN double fa_lane_exp(const fa_smem_t *s, int r, int c, float mx) {
  float *x = &s->p[r * FA_TILE + c];
  *x = *x == -INFINITY ? 0.0f : expf(*x - mx);
  return *x;
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
  for (int e = t; e < FA_TILE * g->hs; e += FA_THREADS) {
    const int r = e / g->hs, d = e % g->hs;
    if (r < valid) CE_STORE(y, fa_out_row(g, bh, it * FA_TILE + r) + d, s->acc[r * s->ld + d] / s->l[r]);
  }
  if (t < valid) CE_STORE(lse, (long long)bh * g->T + it * FA_TILE + t, s->m[t] + logf(s->l[t]));
}

/* ---- backward */

/* The score tile of query tile it against key tile jt (Q, dY, lse, D, K and V loaded): thread t's
 * P = exp(s q.k - lse) and dS = P (dy.v - D) s, both 0 where not visible. */
CE_FN void fa_bwd_scores(const fa_geom_t *g, int it, int jt, const fa_smem_t *s, int t) {
  const int c = t % CE_WARP;
  float qk[FA_ROWS_PER_WARP], dp[FA_ROWS_PER_WARP];
  fa_dots(s->q, s->k, g->hs, s->ld, t, qk);
  fa_dots(s->dy, s->v, g->hs, s->ld, t, dp);
  for (int k = 0; k < FA_ROWS_PER_WARP; k++) {
    const int r = fa_row_of(t, k), at = r * FA_TILE + c;
    const float p = fa_visible(it * FA_TILE + r, jt * FA_TILE + c, g->T) ? expf(qk[k] * g->scale - s->lse[r]) : 0.0f;
    s->p[at] = p;
    s->ds[at] = p * (dp[k] - s->dd[r]) * g->scale;
  }
}

/* dst (n rows of hs at stride dst_ld) = (write) or += the first n rows of tile src */
CE_FN void fa_put_rows(const float *src, int ld, int n, int hs, float *base, long long at, long long dst_ld, int write,
                       int t) {
  for (int e = t; e < FA_TILE * hs; e += FA_THREADS) {
    const int r = e / hs, d = e % hs;
    const long long i = at + r * dst_ld + d;
    if (r < n) CE_STORE(base, i, (write ? 0.0f : base[i]) + src[r * ld + d]);
  }
}

/* dQ kernel, phase 0: the block's Q, dY and lse; dQ = 0 */
CE_FN void fa_dq_begin(const fa_geom_t *g, const float *qkv, const float *dy, const float *lse, long long block,
                       const fa_smem_t *s, int t) {
  fa_load_q_dy(g, qkv, dy, lse, NULL, fa_block_bh(g, block), fa_block_query_tile(g, block), s, t);
  fa_zero_tile(s->acc, g->hs, s->ld, t);
}

/* dQ kernel, phase 1, for each row r = fa_row_of(thread, k) of the warp: lane's part of
 * D_r = dY_r . Y_r (columns lane, lane + 32, ..); after the warp's sum, lane 0 keeps it in dd and,
 * for a real row, stores it to dd_out (B, H, T) for the dK, dV kernel. */
CE_FN double fa_lane_d(const fa_geom_t *g, const float *y, long long block, const fa_smem_t *s, int r, int lane) {
  const int it = fa_block_query_tile(g, block);
  double sum = 0.0;
  if (r >= fa_rows_from(g, it)) return sum;
  const float *yr = y + fa_out_row(g, fa_block_bh(g, block), it * FA_TILE + r);
  for (int d = lane; d < g->hs; d += CE_WARP) sum += (double)s->dy[r * s->ld + d] * yr[d];
  return sum;
}
CE_FN void fa_row_d(const fa_geom_t *g, long long block, const fa_smem_t *s, int r, double sum, float *dd_out) {
  const int it = fa_block_query_tile(g, block);
  s->dd[r] = (float)sum;
  if (r < fa_rows_from(g, it)) CE_STORE(dd_out, (long long)fa_block_bh(g, block) * g->T + it * FA_TILE + r, (float)sum);
}

/* dQ kernel, per key tile jt <= its own: fa_load_kv, fa_bwd_scores, then dQ += dS K */
CE_FN void fa_dq_accumulate(const fa_smem_t *s, int hs, int t) {
  fa_tile_product(s->acc, NULL, s->ds, FA_TILE, 1, s->k, hs, s->ld, t);
}

/* dQ kernel, last phase: dq (q's columns of dqkv) = or += dQ */
CE_FN void fa_dq_end(const fa_geom_t *g, long long block, const fa_smem_t *s, float *dqkv, int write, int t) {
  const int it = fa_block_query_tile(g, block);
  fa_put_rows(s->acc, s->ld, fa_rows_from(g, it), g->hs, dqkv, fa_qkv_row(g, fa_block_bh(g, block), it * FA_TILE),
              3LL * g->C, write, t);
}

/* dK, dV kernel, phase 0: the block's K and V; dK = dV = 0 */
CE_FN void fa_dkv_begin(const fa_geom_t *g, const float *qkv, long long block, const fa_smem_t *s, int t) {
  fa_load_kv(g, qkv, fa_block_bh(g, block), fa_block_key_tile(g, block), s, t);
  fa_zero_tile(s->acc, g->hs, s->ld, t);
  fa_zero_tile(s->acc2, g->hs, s->ld, t);
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
  const long long at = fa_qkv_row(g, fa_block_bh(g, block), jt * FA_TILE) + g->C;
  fa_put_rows(s->acc, s->ld, fa_rows_from(g, jt), g->hs, dqkv, at, 3LL * g->C, write, t);
  fa_put_rows(s->acc2, s->ld, fa_rows_from(g, jt), g->hs, dqkv, at + g->C, 3LL * g->C, write, t);
}

#endif
