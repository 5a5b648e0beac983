/* The fused attention's kernels with their tiles in registers (FlashAttention-2 as its authors run
 * it; the bf16 default, [backend] attention_kernels = auto; cuda_kern_attention.cu's
 * k_attention_*_rf). The forward (the backward's two kernels: their section below): a block of
 * FA_RF_WARPS warps takes FA_RF_TILE query rows of one (sample, head), each warp 16 of them; the
 * block loads each key
 * tile (FA_RF_TILE keys: K and V rounded to bf16) into shared memory, and each warp then computes,
 * all in registers with the tensor cores' mma.sync.m16n8k16 (bf16 operands, float sums):
 *   S (16 x 64) = Q K^T, masked and scaled; the online softmax's row maximum m and sum l (each
 *   lane's part, summed over its quad at the end); O = O corr + P V (P rounded to bf16 from S's
 *   registers, which are already in the layout of the product's A operand).
 * Two __syncthreads a key tile (K and V loaded; every warp done with them), where the WMMA form of
 * cuda_attention_tiles.h stores S, P and O in shared memory between six.
 *
 * Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"; lane l,
 * g = l / 4 its group, t = l % 4 its place in the group):
 *   A (16 x 16, row-major), 4 registers of two bf16 each (the lower column in the low half):
 *     a0 (g, 2t..2t+1), a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..);
 *   B (16 x 8, column-major), 2 registers: b0 (rows 2t..2t+1, column g), b1 (rows 2t + 8.., g);
 *   C, D (16 x 8 float): c0, c1 (g, 2t..2t+1), c2, c3 (g + 8, 2t..2t+1).
 * So a lane holds, of each row pair (g, g + 8) of the warp's rows, two columns of every 8, and
 * row reductions are the lane's own values and then its quad's (shuffles xor 1 and 2).
 *
 * Each piece is a function of (lane) on its own registers (fa_rf_lane_t) or, for the collective
 * parts (the mma and the quad's reductions), of the warp: on the GPU every lane calls them with its
 * own registers; on the host (tests/test_cuda_attention) fa_rf_mma_warp and fa_rf_quad_* take all
 * 32 lanes' registers and compute what the instruction does by the layouts above (products exact
 * in float, sums in float in k order; the tensor cores' order within a step is theirs). */
#ifndef SURGE_BACKEND_CUDA_ATTENTION_RF_H
#define SURGE_BACKEND_CUDA_ATTENTION_RF_H

#include <stdint.h>

#include "backend/cuda_attention_tiles.h"

/* Loops over a lane's fragments unrolled in the device code, so the fragments' indices are
 * constants and they stay in registers (the kernel's head size is a template constant). */
#ifdef __CUDA_ARCH__
#define FA_UNROLL _Pragma("unroll")
#else
#define FA_UNROLL
#endif

/* rows of a warp; warps and threads of a block; query rows of a block and keys of a key tile;
 * 8-key column tiles of a score row; the head sizes it takes (multiples of 16 up to FA_RF_MAX_HS) */
enum {
  FA_RF_ROWS = 16,
  FA_RF_WARPS = 4,
  FA_RF_THREADS = FA_RF_WARPS * CE_WARP,
  FA_RF_TILE = FA_RF_WARPS * FA_RF_ROWS,
  FA_RF_KT = FA_RF_TILE / 8,
  FA_RF_MAX_HS = 128
};

/* One lane's registers. */
typedef struct fa_rf_lane {
  uint32_t q[FA_RF_MAX_HS / 16][4]; /* Q's A fragments, one a k16 step of hs */
  float s[FA_RF_KT][4];             /* the score tile's C fragments: 16 rows x FA_RF_TILE keys */
  float o[FA_RF_MAX_HS / 8][4];     /* O's: 16 rows x hs */
  float m[2], l[2];                 /* rows g and g + 8: running maximum, this lane's part of the sum */
  float mx[2], sum[2];              /* (the quad's reductions: in, then out) */
} fa_rf_lane_t;

/* The block's shared memory: the key tile's K and V, bf16, FA_RF_TILE rows at stride hs + 8. */
CE_FN int fa_rf_ld(int hs) { return hs + 8; }
CE_FN long fa_rf_smem_bytes(int hs) { return 2L * 2 * FA_RF_TILE * fa_rf_ld(hs); }

/* Two floats as the bf16 pair of a fragment register (lo in the low half). */
CE_FN uint32_t fa_rf_pair(fa_bf16 lo, fa_bf16 hi) {
#ifdef __CUDACC__
  return (uint32_t)__bfloat16_as_ushort(lo) | (uint32_t)__bfloat16_as_ushort(hi) << 16;
#else
  return (uint32_t)lo | (uint32_t)hi << 16;
#endif
}
CE_FN uint32_t fa_rf_pack(float lo, float hi) { return fa_rf_pair(fa_to_bf16(lo), fa_to_bf16(hi)); }

/* ---- the block's loads (thread t of FA_RF_THREADS). A head's matrix (Q, K, V of qkv, Y or dY)
 * is given by its row 0 and its rows' stride: row i, column c at base[i ld + c]. */

/* Tile `tile` (FA_RF_TILE rows) of the matrix at base rounded to bf16 into dst (stride hs + 8), rows
 * past T 0. */
CE_FN void fa_rf_load_tile(const fa_geom_t *g, const float *base, long long ld, int tile, fa_bf16 *dst, int t) {
  const int valid = fa_rows_from(g, tile), dld = fa_rf_ld(g->hs);
  const float *src = base + (long long)tile * FA_RF_TILE * ld;
  for (int e = t; e < FA_RF_TILE * g->hs; e += FA_RF_THREADS) {
    const int r = e / g->hs, c = e % g->hs;
    dst[r * dld + c] = fa_to_bf16(r < valid ? src[r * ld + c] : 0.0f);
  }
}

/* K and V of key tile jt. */
CE_FN void fa_rf_load_kv(const fa_geom_t *g, const float *qkv, int bh, int jt, fa_bf16 *k, fa_bf16 *v, int t) {
  const float *q = qkv + fa_qkv_row(g, bh, 0);
  fa_rf_load_tile(g, q + g->C, 3LL * g->C, jt, k, t);
  fa_rf_load_tile(g, q + 2 * g->C, 3LL * g->C, jt, v, t);
}

/* ---- a lane's pieces. The warp's first query row i0 = tile it's first + 16 warp. */

/* Lane's rows of the warp: g and g + 8 (the fragments' rows of r = 0, 1). */
CE_FN int fa_rf_row(int lane, int r) { return lane / 4 + 8 * r; }

/* Some query of the 16 from q0 sees some key from k0 (causal: the first key is at most the last
 * query). A block of the score tile where none does is all masked: its products are skipped (the
 * same for every lane of the warp), its scores left for the mask, its P and dS 0. */
CE_FN int fa_rf_seen(int q0, int k0) { return k0 <= q0 + FA_RF_ROWS - 1; }

/* The A fragments of rows i0 .. i0 + 15 of the matrix at base (rows past T 0), a k16 step of hs
 * each: a0 (g, 2t..), a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..). */
CE_FN void fa_rf_load_a(const fa_geom_t *g, const float *base, long long ld, int i0, uint32_t a[][4], int lane) {
  FA_UNROLL
  for (int kk = 0; kk < g->hs / 16; kk++)
    FA_UNROLL
    for (int r = 0; r < 4; r++) {
      const int i = i0 + fa_rf_row(lane, r % 2), c = kk * 16 + 2 * (lane % 4) + 8 * (r / 2);
      const float *x = base + (i < g->T ? i : 0) * ld + c;
      a[kk][r] = i < g->T ? fa_rf_pack(x[0], x[1]) : 0u;
    }
}

/* The start of a block: Q's fragments, O = 0, m = -inf, l = 0. */
CE_FN void fa_rf_begin(const fa_geom_t *g, const float *qkv, int bh, int i0, fa_rf_lane_t *x, int lane) {
  fa_rf_load_a(g, qkv + fa_qkv_row(g, bh, 0), 3LL * g->C, i0, x->q, lane);
  FA_UNROLL
  for (int n = 0; n < g->hs / 8; n++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) x->o[n][c] = 0.0f;
  FA_UNROLL
  for (int r = 0; r < 2; r++) x->m[r] = -INFINITY, x->l[r] = 0.0f;
}

/* B of S = Q K^T for 8-key tile j, k16 step kk: K^T (hs x keys) is K (keys x hs) read down a row,
 * so b0 is K[j 8 + g][kk 16 + 2t ..], two adjacent bf16. */
CE_FN void fa_rf_b_kt(const fa_bf16 *k, int ld, int j, int kk, int lane, uint32_t b[2]) {
  const fa_bf16 *row = k + (j * 8 + lane / 4) * ld + kk * 16 + 2 * (lane % 4);
  b[0] = fa_rf_pair(row[0], row[1]), b[1] = fa_rf_pair(row[8], row[9]);
}

/* B of O += P V for k16 step kk (keys) and 8-column tile n of hs: V[kk 16 + 2t ..][n 8 + g]. */
CE_FN void fa_rf_b_v(const fa_bf16 *v, int ld, int kk, int n, int lane, uint32_t b[2]) {
  const fa_bf16 *col = v + (kk * 16 + 2 * (lane % 4)) * ld + n * 8 + lane / 4;
  b[0] = fa_rf_pair(col[0], col[ld]), b[1] = fa_rf_pair(col[8 * ld], col[9 * ld]);
}

/* The A fragment of 16 columns held as two C fragments of 8, lo then hi (C's (g, 2t..) is A's
 * (g, 2t..), the next tile's is A's (g, 2t + 8..)), rounded to bf16. */
CE_FN void fa_rf_a_of(const float lo[4], const float hi[4], uint32_t a[4]) {
  a[0] = fa_rf_pack(lo[0], lo[1]), a[1] = fa_rf_pack(lo[2], lo[3]);
  a[2] = fa_rf_pack(hi[0], hi[1]), a[3] = fa_rf_pack(hi[2], hi[3]);
}

/* A of O += P V for k16 step kk: P's 16 keys kk 16 .. in the score tiles 2 kk and 2 kk + 1. */
CE_FN void fa_rf_a_p(const fa_rf_lane_t *x, int kk, uint32_t a[4]) { fa_rf_a_of(x->s[2 * kk], x->s[2 * kk + 1], a); }

/* After S = Q K^T for key tile jt: the scores scaled, -inf where not visible, and the lane's
 * largest of each row into mx (for the quad's maximum). */
CE_FN void fa_rf_mask(const fa_geom_t *g, int i0, int jt, fa_rf_lane_t *x, int lane) {
  FA_UNROLL
  for (int r = 0; r < 2; r++) x->mx[r] = -INFINITY;
  FA_UNROLL
  for (int j = 0; j < FA_RF_KT; j++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) {
      const int r = c / 2, i = i0 + fa_rf_row(lane, r), key = jt * FA_RF_TILE + j * 8 + 2 * (lane % 4) + c % 2;
      x->s[j][c] = fa_visible(i, key, g->T) ? x->s[j][c] * g->scale : -INFINITY;
      x->mx[r] = fmaxf(x->mx[r], x->s[j][c]);
    }
}

/* With the quad's maximum in mx: the new maximum, P = exp(s - m) in s (0 where masked), O and the
 * lane's part of l rescaled by exp(m_old - m) and l += the lane's P. */
CE_FN void fa_rf_softmax(fa_rf_lane_t *x, int hs) {
  float corr[2];
  FA_UNROLL
  for (int r = 0; r < 2; r++) {
    const float mnew = fmaxf(x->m[r], x->mx[r]);
    corr[r] = x->m[r] == -INFINITY ? 0.0f : expf(x->m[r] - mnew); /* 0: nothing seen before */
    x->m[r] = mnew;
    x->l[r] *= corr[r];
  }
  FA_UNROLL
  for (int j = 0; j < FA_RF_KT; j++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) {
      float *p = &x->s[j][c];
      *p = *p == -INFINITY ? 0.0f : expf(*p - x->m[c / 2]);
      x->l[c / 2] += *p;
    }
  FA_UNROLL
  for (int n = 0; n < hs / 8; n++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) x->o[n][c] *= corr[c / 2];
}

/* The end, with l summed over the quad into sum: y = O / l and lse = m + log l of the real rows
 * (lse by the quad's first lane). */
CE_FN void fa_rf_end(const fa_geom_t *g, int bh, int i0, const fa_rf_lane_t *x, float *y, float *lse, int lane) {
  FA_UNROLL
  for (int r = 0; r < 2; r++) {
    const int i = i0 + fa_rf_row(lane, r);
    if (i >= g->T) continue;
    const long long at = fa_out_row(g, bh, i);
    FA_UNROLL
    for (int n = 0; n < g->hs / 8; n++)
      FA_UNROLL
      for (int c = 0; c < 2; c++) CE_STORE(y, at + n * 8 + 2 * (lane % 4) + c, x->o[n][2 * r + c] / x->sum[r]);
    if (lane % 4 == 0) CE_STORE(lse, (long long)bh * g->T + i, x->m[r] + logf(x->sum[r]));
  }
}

/* ---- the backward (k_attention_bwd_dq_rf, k_attention_bwd_dkv_rf): FlashAttention-2's two
 * passes as cuda_attention_tiles.h's kernels (every gradient element one owner and one store), each
 * warp 16 rows in registers, a k16 step (16 columns of the score tile) at a time:
 *   dQ kernel, a warp's 16 query rows, per key tile jt <= its own (K, V in shared memory):
 *     S = Q K^T, dP = dY V^T; P = exp(s S - lse), dS = P (dP - D) s; dQ += dS K.
 *     First, D = rowsum(dY Y) of its rows, kept in dd for the other kernel.
 *   dK, dV kernel, a warp's 16 key rows, per query tile from its own on (Q, dY, lse, D in shared
 *     memory): S^T = K Q^T, dP^T = V dY^T; P^T, dS^T as above by columns; dV += P^T dY,
 *     dK += dS^T Q.
 * Each transposed product is computed as such (K Q^T where the WMMA kernels load Q K^T
 * column-major), so its C fragments are again the next product's A operand. */

typedef struct fa_rf_bwd_lane {
  uint32_t a[FA_RF_MAX_HS / 16][4], a2[FA_RF_MAX_HS / 16][4]; /* dQ kernel: Q and dY; dK, dV kernel: K and V */
  float s[2][4], dp[2][4]; /* a k16 step's S and dP; then P or dS (dQ kernel: dS in s; the other: P^T, dS^T) */
  float acc[FA_RF_MAX_HS / 8][4], acc2[FA_RF_MAX_HS / 8][4]; /* dQ; or dK and dV */
  float lse[2], d[2];                                        /* dQ kernel: rows g and g + 8 */
  double dsum[2];                                            /* D's quad reduction */
} fa_rf_bwd_lane_t;

/* The dK, dV kernel's shared memory: Q and dY tiles as the forward's K and V, then lse and D of the
 * query tile's rows. */
CE_FN long fa_rf_bwd_smem_bytes(int hs) { return fa_rf_smem_bytes(hs) + 2L * 4 * FA_RF_TILE; }

CE_FN void fa_rf_zero(float acc[][4], int hs) {
  FA_UNROLL
  for (int n = 0; n < hs / 8; n++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) acc[n][c] = 0.0f;
}

/* dQ kernel, start (rows i0..): Q's and dY's fragments, dQ = 0, each row's lse, and the lane's part
 * of D = dY . Y over its columns (of dY and Y rounded to bfloat16, as the products read dY: backend.h; in double,
 * for the quad's sum). */
CE_FN void fa_rf_dq_begin(const fa_geom_t *g, const float *qkv, const float *y, const float *lse, const float *dy,
                          int bh, int i0, fa_rf_bwd_lane_t *x, int lane) {
  fa_rf_load_a(g, qkv + fa_qkv_row(g, bh, 0), 3LL * g->C, i0, x->a, lane);
  fa_rf_load_a(g, dy + fa_out_row(g, bh, 0), g->C, i0, x->a2, lane);
  fa_rf_zero(x->acc, g->hs);
  FA_UNROLL
  for (int r = 0; r < 2; r++) {
    const int i = i0 + fa_rf_row(lane, r);
    double sum = 0.0;
    x->lse[r] = i < g->T ? lse[(long long)bh * g->T + i] : 0.0f;
    if (i < g->T) {
      const long long at = fa_out_row(g, bh, i) + 2 * (lane % 4);
      FA_UNROLL
      for (int n = 0; n < g->hs / 8; n++)
        FA_UNROLL
        for (int e = 0; e < 2; e++) sum += (double)fa_bf16_value(dy[at + n * 8 + e]) * fa_bf16_value(y[at + n * 8 + e]);
    }
    x->dsum[r] = sum;
  }
}

/* With D summed over the quad in dsum: each row's D, stored to dd (B, H, T) by the quad's first
 * lane for the dK, dV kernel. */
CE_FN void fa_rf_dq_d(const fa_geom_t *g, int bh, int i0, fa_rf_bwd_lane_t *x, float *dd, int lane) {
  FA_UNROLL
  for (int r = 0; r < 2; r++) {
    const int i = i0 + fa_rf_row(lane, r);
    x->d[r] = (float)x->dsum[r];
    if (lane % 4 == 0 && i < g->T) CE_STORE(dd, (long long)bh * g->T + i, x->d[r]);
  }
}

/* dQ kernel, k16 step kk of key tile jt, after S and dP: dS = P (dP - D) s into s. */
CE_FN void fa_rf_dq_ds(const fa_geom_t *g, int i0, int jt, int kk, fa_rf_bwd_lane_t *x, int lane) {
  FA_UNROLL
  for (int jj = 0; jj < 2; jj++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) {
      const int r = c / 2, key = jt * FA_RF_TILE + (2 * kk + jj) * 8 + 2 * (lane % 4) + c % 2;
      const float p = fa_bwd_p(g, i0 + fa_rf_row(lane, r), key, x->s[jj][c], x->lse[r]);
      x->s[jj][c] = fa_bwd_ds(g, p, x->dp[jj][c], x->d[r]);
    }
}

/* dK, dV kernel, the block's load of query tile it (thread t): Q and dY rounded to bf16 (q, dyt),
 * lse and D of its rows (ls, ds; rows past T 0). */
CE_FN void fa_rf_load_q_dy(const fa_geom_t *g, const float *qkv, const float *dy, const float *lse, const float *dd,
                           int bh, int it, fa_bf16 *q, fa_bf16 *dyt, float *ls, float *ds, int t) {
  fa_rf_load_tile(g, qkv + fa_qkv_row(g, bh, 0), 3LL * g->C, it, q, t);
  fa_rf_load_tile(g, dy + fa_out_row(g, bh, 0), g->C, it, dyt, t);
  if (t < FA_RF_TILE) {
    const int i = it * FA_RF_TILE + t;
    ls[t] = i < g->T ? lse[(long long)bh * g->T + i] : 0.0f;
    ds[t] = i < g->T ? dd[(long long)bh * g->T + i] : 0.0f;
  }
}

/* dK, dV kernel, start (key rows j0..): K's and V's fragments, dK = dV = 0. */
CE_FN void fa_rf_dkv_begin(const fa_geom_t *g, const float *qkv, int bh, int j0, fa_rf_bwd_lane_t *x, int lane) {
  const float *q = qkv + fa_qkv_row(g, bh, 0);
  fa_rf_load_a(g, q + g->C, 3LL * g->C, j0, x->a, lane);
  fa_rf_load_a(g, q + 2 * g->C, 3LL * g->C, j0, x->a2, lane);
  fa_rf_zero(x->acc, g->hs);
  fa_rf_zero(x->acc2, g->hs);
}

/* dK, dV kernel, k16 step kk of query tile it, after S^T and dP^T: P^T into s, dS^T into dp (the
 * query columns' lse and D from the tile's ls, ds). */
CE_FN void fa_rf_dkv_ds(const fa_geom_t *g, int j0, int it, int kk, const float *ls, const float *ds,
                        fa_rf_bwd_lane_t *x, int lane) {
  FA_UNROLL
  for (int jj = 0; jj < 2; jj++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) {
      const int col = (2 * kk + jj) * 8 + 2 * (lane % 4) + c % 2, key = j0 + fa_rf_row(lane, c / 2);
      const float p = fa_bwd_p(g, it * FA_RF_TILE + col, key, x->s[jj][c], ls[col]);
      x->s[jj][c] = p;
      x->dp[jj][c] = fa_bwd_ds(g, p, x->dp[jj][c], ds[col]);
    }
}

/* The end: rows row0.. (below T) of the matrix at base + at0 (row i at at0 + i ld) = (write) or
 * += acc (stores indexed from base, the output's start). */
CE_FN void fa_rf_put(const fa_geom_t *g, float *base, long long at0, long long ld, int row0, const float acc[][4],
                     int write, int lane) {
  FA_UNROLL
  for (int r = 0; r < 2; r++) {
    const int i = row0 + fa_rf_row(lane, r);
    if (i >= g->T) continue;
    FA_UNROLL
    for (int n = 0; n < g->hs / 8; n++)
      FA_UNROLL
      for (int e = 0; e < 2; e++) {
        const long long at = at0 + (long long)i * ld + n * 8 + 2 * (lane % 4) + e;
        CE_STORE(base, at, (write ? 0.0f : base[at]) + acc[n][2 * r + e]);
      }
  }
}

/* ---- the warp's collectives */

#ifdef __CUDACC__
/* d (C fragment) += A B: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (sm_80 on). */
__device__ inline void fa_rf_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap(); /* the launcher never runs these kernels below sm_80 */
#endif
}

/* mx = the quad's maximum of mx, sum = the quad's sum of l (shuffles xor 1, 2). */
__device__ inline void fa_rf_quad_max(fa_rf_lane_t *x) {
  for (int r = 0; r < 2; r++)
    for (int o = 1; o < 4; o <<= 1) x->mx[r] = fmaxf(x->mx[r], __shfl_xor_sync(0xffffffffu, x->mx[r], o));
}
__device__ inline void fa_rf_quad_dsum(fa_rf_bwd_lane_t *x) {
  for (int r = 0; r < 2; r++)
    for (int o = 1; o < 4; o <<= 1) x->dsum[r] += __shfl_xor_sync(0xffffffffu, x->dsum[r], o);
}
__device__ inline void fa_rf_quad_sum(fa_rf_lane_t *x) {
  for (int r = 0; r < 2; r++) {
    x->sum[r] = x->l[r];
    for (int o = 1; o < 4; o <<= 1) x->sum[r] += __shfl_xor_sync(0xffffffffu, x->sum[r], o);
  }
}
#else
/* The host's forms over the warp's 32 lanes (x[lane]). */

static inline float fa_rf_half(uint32_t w, int hi) { return fa_from_bf16((fa_bf16)(hi ? w >> 16 : w & 0xffffu)); }

/* d[lane] += A B, A from a[lane] and B from b[lane] by the fragments' layouts (module comment). */
static inline void fa_rf_mma_warp(float *d[CE_WARP], uint32_t *const a[CE_WARP], uint32_t *const b[CE_WARP]) {
  float A[16][16], B[16][8], D[16][8];
  for (int l = 0; l < CE_WARP; l++) {
    const int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; r++)
      for (int h = 0; h < 2; h++) A[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + h] = fa_rf_half(a[l][r], h);
    for (int r = 0; r < 2; r++)
      for (int h = 0; h < 2; h++) B[2 * t + 8 * r + h][g] = fa_rf_half(b[l][r], h);
    for (int c = 0; c < 4; c++) D[g + 8 * (c / 2)][2 * t + c % 2] = d[l][c];
  }
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) {
      float sum = D[i][j];
      for (int k = 0; k < 16; k++) sum += A[i][k] * B[k][j];
      D[i][j] = sum;
    }
  for (int l = 0; l < CE_WARP; l++)
    for (int c = 0; c < 4; c++) d[l][c] = D[l / 4 + 8 * (c / 2)][2 * (l % 4) + c % 2];
}

/* The quads' reductions as the shuffles' xor tree leaves them in every lane of a quad:
 * (v0 . v1) . (v2 . v3) (the same in each lane: the operations commute). The float at lane 0's
 * `first`, and at the same place in each of the warp's lane structures `size` bytes apart. */
static inline void fa_rf_quad_tree(float *first, size_t size, int max) {
  for (int q = 0; q < CE_WARP; q += 4) {
    float *v[4];
    for (int i = 0; i < 4; i++) v[i] = (float *)((char *)first + (size_t)(q + i) * size);
    const float a = max ? fmaxf(*v[0], *v[1]) : *v[0] + *v[1], b = max ? fmaxf(*v[2], *v[3]) : *v[2] + *v[3];
    for (int i = 0; i < 4; i++) *v[i] = max ? fmaxf(a, b) : a + b;
  }
}
static inline void fa_rf_quad_max_warp(fa_rf_lane_t *x) {
  for (int r = 0; r < 2; r++) fa_rf_quad_tree(&x[0].mx[r], sizeof *x, 1);
}
static inline void fa_rf_quad_sum_warp(fa_rf_lane_t *x) {
  for (int l = 0; l < CE_WARP; l++)
    for (int r = 0; r < 2; r++) x[l].sum[r] = x[l].l[r];
  for (int r = 0; r < 2; r++) fa_rf_quad_tree(&x[0].sum[r], sizeof *x, 0);
}
static inline void fa_rf_quad_dsum_warp(fa_rf_bwd_lane_t *x) {
  for (int q = 0; q < CE_WARP; q += 4)
    for (int r = 0; r < 2; r++) {
      const double sum = (x[q].dsum[r] + x[q + 1].dsum[r]) + (x[q + 2].dsum[r] + x[q + 3].dsum[r]);
      for (int i = 0; i < 4; i++) x[q + i].dsum[r] = sum;
    }
}
#endif

#endif
