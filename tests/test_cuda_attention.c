/* The fused causal attention's CUDA kernels run on the host (issue 32 items 4 and 5): the forward,
 * the backward's dQ kernel and its dK, dV kernel are cuda_attention_tiles.h's phases of (block,
 * thread) or, for the bf16 form's tensor-core products, of (block, warp), which
 * cuda_kern_attention.cu runs between __syncthreads and the warp's shuffles. Here every block of
 * each kernel's grid runs in a poisoned (NaN) shared memory of the size the launcher gives it,
 * phase by phase, each phase's FA_THREADS threads (or FA_WARPS warps) one after another, the
 * softmax's warps lane by lane with the host's copies of the warp reductions (the same xor tree),
 * the tensor-core products as cuda_attention_mma.h's host form (operands rounded to bf16 as
 * __float2bfloat16 rounds). Both forms, FA_FP32 and FA_BF16, checked:
 *  - every store to global memory in bounds, exactly one per element of y, lse, dqkv (its q, k and
 *    v columns by two kernels) and D, at T within a tile, across tiles with a tail, T = 1, head
 *    sizes 4 to 128 (fp32; 40: not a multiple of the warp) and 16 to 128 (bf16: WMMA in tiles of 64
 *    rows and of 32, and the kernels with their tiles in registers, cuda_attention_rf.h, whose
 *    lanes' pieces run lane by lane and whose collectives, mma.sync and the quads' reductions, over
 *    the warp's 32 lanes by the PTX ISA's fragment layouts), batch x heads > 1;
 *  - y, lse and dqkv (added into and written) against ref within 1e-5 (relative) in fp32 and
 *    BF16_TOL in bf16, and D (1e-5: in bf16 of dY and Y rounded, as the products read dY); the bf16 form's y farther
 *    from ref than float rounding (its operands are rounded);
 *  - bf16: every tensor-core product keeps WMMA's rules (pointers 32-byte aligned, ldm a multiple
 *    of 8 bf16 or 4 floats, k a multiple of 16), so the shared-memory layout is one the GPU takes;
 *  - causal masking exact: with the keys and values from position p on replaced by others, y, lse
 *    and dQ of the rows before p keep their bits;
 *  - the threads of a phase (and the blocks of a grid) run in the reverse order give the same bits:
 *    no thread reads, within a phase, what another writes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"

#include "cuda_harness.h"

/* WMMA's rules as the bf16 products see them: the ones broken, the products checked */
static long mma_broken, mma_checks;
#define FA_MMA_CHECK(ok) (mma_checks++, mma_broken += !(ok))
#include "backend/cuda_attention_rf.h"

#define TOL 1e-5 /* relative, against ref: fp32 */
/* bf16: operands rounded to 8 significant bits (relative 2^-9 = 2e-3 each), the probabilities and
 * dS too; the products' rounding errors add over hs and a tile's keys, so y is about 3e-3 from ref
 * (norm-wise) and dqkv about 5e-3 (they grow at most with sqrt(hs)): 2e-2 leaves room for the GPU's
 * own order of float sums and no room for a wrong tile or mask (those give 1e-1 and up). */
#define BF16_TOL 2e-2

static fa_form_t form; /* the form under test */
static int tile;       /* and its tiles' rows */
static int rf;         /* 1: the register kernels (cuda_attention_rf.h): the forward, and the backward at hs <= 64 */

static const backend_t *ref = &backend_ref;

/* Threads of a phase, lanes of a warp and blocks of a grid run in this order or its reverse. */
static int reverse;
static int nth(int i, int n) { return reverse ? n - 1 - i : i; }
#define EACH_THREAD(t) for (int t##_i = 0, t; t##_i < FA_THREADS && (t = nth(t##_i, FA_THREADS), 1); t##_i++)
#define EACH_WARP(w) for (int w##_i = 0, w; w##_i < FA_WARPS && (w = nth(w##_i, FA_WARPS), 1); w##_i++)
#define EACH_RF_THREAD(t)                                                                                              \
  for (int t##_i = 0, t; t##_i < FA_RF_THREADS && (t = nth(t##_i, FA_RF_THREADS), 1); t##_i++)
#define EACH_RF_WARP(w) for (int w##_i = 0, w; w##_i < FA_RF_WARPS && (w = nth(w##_i, FA_RF_WARPS), 1); w##_i++)

/* One call of the kernels: inputs, and the outputs they store to. */
typedef struct att_call {
  fa_geom_t g;
  const float *qkv, *y_in, *lse_in, *dy;
  float *y, *lse, *dqkv, *dd;
  int write;
} att_call_t;

typedef void (*block_fn)(const att_call_t *a, long long block, const fa_smem_t *s);

/* Every block of a kernel's grid (fa_blocks), each in shared memory of fa_smem_bytes bytes
 * filled with NaN (all bits set: a NaN as float and as bf16), 128-byte aligned as the kernels'. */
static void run_grid(const att_call_t *a, fa_kernel_t kind, block_fn run) {
  const size_t n = (size_t)fa_smem_bytes(a->g.hs, kind, form, a->g.tile), aligned = (n + 127) / 128 * 128;
  unsigned char *smem = aligned_alloc(128, aligned);
  if (!smem) surge_runtime_error("out of memory (%zu bytes of shared memory)", aligned);
  const long long blocks = fa_blocks(&a->g);
  for (long long i = 0; i < blocks; i++) {
    memset(smem, 0xff, n);
    const fa_smem_t s = fa_smem(smem, a->g.hs, kind, form, a->g.tile);
    run(a, reverse ? blocks - 1 - i : i, &s);
  }
  free(smem);
}

/* ---- the kernels, phase by phase in k_attention_fwd's, k_attention_bwd_dq's and
 * k_attention_bwd_dkv's order */

static void softmax_rows(const fa_smem_t *s) {
  for (int w = 0; w < FA_WARPS; w++)
    for (int k = 0; k < fa_rows_per_warp(s); k++) {
      const int r = fa_row_of(w * CE_WARP, k);
      float v[CE_WARP];
      double e[CE_WARP];
      for (int i = 0; i < CE_WARP; i++) v[nth(i, CE_WARP)] = fa_lane_score(s, r, nth(i, CE_WARP));
      const float mx = fmaxf(s->m[r], ce_host_warp_max(v));
      for (int i = 0; i < CE_WARP; i++) e[nth(i, CE_WARP)] = fa_lane_exp(s, r, nth(i, CE_WARP), mx);
      fa_row_update(s, r, mx, ce_host_warp_sum(e));
    }
}

static void fwd_block(const att_call_t *a, long long block, const fa_smem_t *s) {
  const fa_geom_t *g = &a->g;
  EACH_THREAD(t) fa_fwd_begin(g, a->qkv, block, s, t);
  for (int jt = 0; jt <= fa_block_query_tile(g, block); jt++) {
    EACH_THREAD(t) fa_load_kv(g, a->qkv, fa_block_bh(g, block), jt, s, t);
    if (form == FA_FP32) {
      EACH_THREAD(t) fa_fwd_scores(g, block, jt, s, t);
    } else {
      EACH_WARP(w) fa_tc_fwd_scores(s, g->hs, w);
      EACH_THREAD(t) fa_tc_fwd_mask(g, block, jt, s, t);
    }
    softmax_rows(s);
    if (form == FA_FP32) {
      EACH_THREAD(t) fa_fwd_accumulate(s, g->hs, t);
    } else {
      EACH_THREAD(t) fa_tc_fwd_rescale(s, g->hs, t);
      EACH_WARP(w) fa_tc_fwd_accumulate(s, g->hs, w);
    }
  }
  EACH_THREAD(t) fa_fwd_end(g, block, s, a->y, a->lse, t);
}

/* P and dS of query tile it against key tile jt: bwd_tile's phases between the loads and the
 * products */
static void bwd_scores(const fa_geom_t *g, int it, int jt, const fa_smem_t *s) {
  if (form == FA_FP32) {
    EACH_THREAD(t) fa_bwd_scores(g, it, jt, s, t);
  } else {
    EACH_WARP(w) fa_tc_bwd_scores(s, g->hs, w);
    EACH_THREAD(t) fa_tc_bwd_probs(g, it, jt, s, t);
  }
}

static void dq_block(const att_call_t *a, long long block, const fa_smem_t *s) {
  const fa_geom_t *g = &a->g;
  const int it = fa_block_query_tile(g, block);
  EACH_THREAD(t) fa_dq_begin(g, a->qkv, a->dy, a->lse_in, block, s, t);
  for (int w = 0; w < FA_WARPS; w++)
    for (int k = 0; k < fa_rows_per_warp(s); k++) {
      const int r = fa_row_of(w * CE_WARP, k);
      double d[CE_WARP];
      for (int i = 0; i < CE_WARP; i++)
        d[nth(i, CE_WARP)] = fa_lane_d(g, a->y_in, a->dy, block, r, nth(i, CE_WARP), form == FA_BF16);
      fa_row_d(g, block, s, r, ce_host_warp_sum(d), a->dd);
    }
  for (int jt = 0; jt <= it; jt++) {
    EACH_THREAD(t) fa_load_kv(g, a->qkv, fa_block_bh(g, block), jt, s, t);
    bwd_scores(g, it, jt, s);
    if (form == FA_FP32) EACH_THREAD(t) fa_dq_accumulate(s, g->hs, t);
    else EACH_WARP(w) fa_tc_dq_accumulate(s, g->hs, w);
  }
  EACH_THREAD(t) fa_dq_end(g, block, s, a->dqkv, a->write, t);
}

static void dkv_block(const att_call_t *a, long long block, const fa_smem_t *s) {
  const fa_geom_t *g = &a->g;
  const int jt = fa_block_key_tile(g, block);
  EACH_THREAD(t) fa_dkv_begin(g, a->qkv, block, s, t);
  for (int it = jt; it < g->tiles; it++) {
    EACH_THREAD(t) fa_load_q_dy(g, a->qkv, a->dy, a->lse_in, a->dd, fa_block_bh(g, block), it, s, t);
    bwd_scores(g, it, jt, s);
    if (form == FA_FP32) EACH_THREAD(t) fa_dkv_accumulate(s, g->hs, t);
    else EACH_WARP(w) fa_tc_dkv_accumulate(s, g->hs, w);
  }
  EACH_THREAD(t) fa_dkv_end(g, block, s, a->dqkv, a->write, t);
}

/* ---- the register-fragment forward (k_attention_fwd_rf): a block's warps one after another, the
 * lanes' own pieces lane by lane, the collectives (mma, the quads' reductions) over the warp */

/* Pointers to field f of the warp's lanes' registers, for fa_rf_mma_warp. */
#define LANE_PTRS(ptrs, lanes, f) \
  for (int l_ = 0; l_ < CE_WARP; l_++) (ptrs)[l_] = (lanes)[l_].f

static void rf_warp_tile(const fa_geom_t *g, int i0, int jt, const fa_bf16 *k, const fa_bf16 *v, fa_rf_lane_t *x) {
  const int ld = fa_rf_ld(g->hs);
  float *d[CE_WARP];
  uint32_t *ap[CE_WARP], *bp[CE_WARP], b[CE_WARP][2], a[CE_WARP][4];
  for (int l = 0; l < CE_WARP; l++) bp[l] = b[l], ap[l] = a[l];
  for (int j = 0; j < FA_RF_KT; j++) { /* S = Q K^T */
    for (int l = 0; l < CE_WARP; l++) memset(x[l].s[j], 0, sizeof x[l].s[j]);
    if (!fa_rf_seen(i0, jt * FA_RF_TILE + j * 8)) continue;
    for (int kk = 0; kk < g->hs / 16; kk++) {
      for (int i = 0; i < CE_WARP; i++) fa_rf_b_kt(k, ld, j, kk, nth(i, CE_WARP), b[nth(i, CE_WARP)]);
      uint32_t *q[CE_WARP];
      LANE_PTRS(d, x, s[j]);
      LANE_PTRS(q, x, q[kk]);
      fa_rf_mma_warp(d, q, bp);
    }
  }
  for (int i = 0; i < CE_WARP; i++) fa_rf_mask(g, i0, jt, &x[nth(i, CE_WARP)], nth(i, CE_WARP));
  fa_rf_quad_max_warp(x);
  for (int i = 0; i < CE_WARP; i++) fa_rf_softmax(&x[nth(i, CE_WARP)], g->hs);
  for (int kk = 0; kk < FA_RF_TILE / 16; kk++) { /* O += P V */
    if (!fa_rf_seen(i0, jt * FA_RF_TILE + kk * 16)) continue;
    for (int i = 0; i < CE_WARP; i++) fa_rf_a_p(&x[nth(i, CE_WARP)], kk, a[nth(i, CE_WARP)]);
    for (int n = 0; n < g->hs / 8; n++) {
      for (int i = 0; i < CE_WARP; i++) fa_rf_b_v(v, ld, kk, n, nth(i, CE_WARP), b[nth(i, CE_WARP)]);
      LANE_PTRS(d, x, o[n]);
      fa_rf_mma_warp(d, ap, bp);
    }
  }
}

static void rf_block(const att_call_t *a, long long block, fa_bf16 *k, fa_bf16 *v) {
  const fa_geom_t *g = &a->g;
  const int bh = fa_block_bh(g, block), it = fa_block_query_tile(g, block);
  static fa_rf_lane_t x[FA_RF_WARPS][CE_WARP];
  memset(x, 0xff, sizeof x); /* registers start as NaN: what the pieces read they must have set */
  EACH_RF_WARP(w) for (int i = 0; i < CE_WARP; i++)
    fa_rf_begin(g, a->qkv, bh, it * FA_RF_TILE + w * FA_RF_ROWS, &x[w][nth(i, CE_WARP)], nth(i, CE_WARP));
  for (int jt = 0; jt <= it; jt++) {
    EACH_RF_THREAD(t) fa_rf_load_kv(g, a->qkv, bh, jt, k, v, t);
    EACH_RF_WARP(w) rf_warp_tile(g, it * FA_RF_TILE + w * FA_RF_ROWS, jt, k, v, x[w]);
  }
  EACH_RF_WARP(w) {
    fa_rf_quad_sum_warp(x[w]);
    for (int i = 0; i < CE_WARP; i++)
      fa_rf_end(g, bh, it * FA_RF_TILE + w * FA_RF_ROWS, &x[w][nth(i, CE_WARP)], a->y, a->lse, nth(i, CE_WARP));
  }
}

/* Every block of the forward's grid in shared memory of fa_rf_smem_bytes, poisoned (NaN). */
static void run_grid_rf(const att_call_t *a) {
  const size_t n = (size_t)fa_rf_smem_bytes(a->g.hs), aligned = (n + 127) / 128 * 128;
  unsigned char *smem = aligned_alloc(128, aligned);
  if (!smem) surge_runtime_error("out of memory (%zu bytes of shared memory)", aligned);
  fa_bf16 *k = (fa_bf16 *)smem, *v = k + FA_RF_TILE * fa_rf_ld(a->g.hs);
  const long long blocks = fa_blocks(&a->g);
  for (long long i = 0; i < blocks; i++) {
    memset(smem, 0xff, n);
    rf_block(a, reverse ? blocks - 1 - i : i, k, v);
  }
  free(smem);
}

/* The backward with its tiles in registers: a k16 step's S and dP (s, dp = A B, A2 B2 over hs, B
 * from rows 16 kk .. of tiles t1, t2), and acc += A (the step's columns of c) B (rows 16 kk .. of t),
 * over a warp's lanes as rf_scores and rf_accumulate in cuda_kern_attention.cu. */
static void rf_bwd_scores(const fa_geom_t *g, fa_rf_bwd_lane_t *x, const fa_bf16 *t1, const fa_bf16 *t2, int kk) {
  const int ld = fa_rf_ld(g->hs);
  float *d[CE_WARP];
  uint32_t *ap[CE_WARP], *bp[CE_WARP], b[CE_WARP][2];
  for (int l = 0; l < CE_WARP; l++) bp[l] = b[l];
  for (int jj = 0; jj < 2; jj++) {
    for (int l = 0; l < CE_WARP; l++) {
      memset(x[l].s[jj], 0, sizeof x[l].s[jj]);
      memset(x[l].dp[jj], 0, sizeof x[l].dp[jj]);
    }
    for (int ks = 0; ks < g->hs / 16; ks++) {
      for (int i = 0; i < CE_WARP; i++) fa_rf_b_kt(t1, ld, 2 * kk + jj, ks, nth(i, CE_WARP), b[nth(i, CE_WARP)]);
      LANE_PTRS(d, x, s[jj]);
      LANE_PTRS(ap, x, a[ks]);
      fa_rf_mma_warp(d, ap, bp);
      for (int i = 0; i < CE_WARP; i++) fa_rf_b_kt(t2, ld, 2 * kk + jj, ks, nth(i, CE_WARP), b[nth(i, CE_WARP)]);
      LANE_PTRS(d, x, dp[jj]);
      LANE_PTRS(ap, x, a2[ks]);
      fa_rf_mma_warp(d, ap, bp);
    }
  }
}

static void rf_bwd_accumulate(const fa_geom_t *g, fa_rf_bwd_lane_t *x, int acc2, int from_dp, const fa_bf16 *t,
                              int kk) {
  float *d[CE_WARP];
  uint32_t *ap[CE_WARP], *bp[CE_WARP], a[CE_WARP][4], b[CE_WARP][2];
  for (int l = 0; l < CE_WARP; l++) ap[l] = a[l], bp[l] = b[l];
  for (int i = 0; i < CE_WARP; i++) {
    const fa_rf_bwd_lane_t *xl = &x[nth(i, CE_WARP)];
    fa_rf_a_of(from_dp ? xl->dp[0] : xl->s[0], from_dp ? xl->dp[1] : xl->s[1], a[nth(i, CE_WARP)]);
  }
  for (int n = 0; n < g->hs / 8; n++) {
    for (int i = 0; i < CE_WARP; i++) fa_rf_b_v(t, fa_rf_ld(g->hs), kk, n, nth(i, CE_WARP), b[nth(i, CE_WARP)]);
    if (acc2) LANE_PTRS(d, x, acc2[n]);
    else LANE_PTRS(d, x, acc[n]);
    fa_rf_mma_warp(d, ap, bp);
  }
}

static fa_rf_bwd_lane_t rf_x[FA_RF_WARPS][CE_WARP]; /* a block's warps' registers */

static void rf_dq_block(const att_call_t *a, long long block, unsigned char *smem) {
  const fa_geom_t *g = &a->g;
  const int bh = fa_block_bh(g, block), it = fa_block_query_tile(g, block);
  fa_bf16 *k = (fa_bf16 *)smem, *v = k + FA_RF_TILE * fa_rf_ld(g->hs);
  memset(rf_x, 0xff, sizeof rf_x);
  EACH_RF_WARP(w) {
    const int i0 = it * FA_RF_TILE + w * FA_RF_ROWS;
    for (int i = 0; i < CE_WARP; i++)
      fa_rf_dq_begin(g, a->qkv, a->y_in, a->lse_in, a->dy, bh, i0, &rf_x[w][nth(i, CE_WARP)], nth(i, CE_WARP));
    fa_rf_quad_dsum_warp(rf_x[w]);
    for (int i = 0; i < CE_WARP; i++) fa_rf_dq_d(g, bh, i0, &rf_x[w][nth(i, CE_WARP)], a->dd, nth(i, CE_WARP));
  }
  for (int jt = 0; jt <= it; jt++) {
    EACH_RF_THREAD(t) fa_rf_load_kv(g, a->qkv, bh, jt, k, v, t);
    EACH_RF_WARP(w) for (int kk = 0; kk < FA_RF_TILE / 16; kk++) {
      if (!fa_rf_seen(it * FA_RF_TILE + w * FA_RF_ROWS, jt * FA_RF_TILE + kk * 16)) continue;
      rf_bwd_scores(g, rf_x[w], k, v, kk);
      for (int i = 0; i < CE_WARP; i++)
        fa_rf_dq_ds(g, it * FA_RF_TILE + w * FA_RF_ROWS, jt, kk, &rf_x[w][nth(i, CE_WARP)], nth(i, CE_WARP));
      rf_bwd_accumulate(g, rf_x[w], 0, 0, k, kk);
    }
  }
  EACH_RF_WARP(w) for (int i = 0; i < CE_WARP; i++)
    fa_rf_put(g, a->dqkv, fa_qkv_row(g, bh, 0), 3LL * g->C, it * FA_RF_TILE + w * FA_RF_ROWS,
              rf_x[w][nth(i, CE_WARP)].acc, a->write, nth(i, CE_WARP));
}

static void rf_dkv_block(const att_call_t *a, long long block, unsigned char *smem) {
  const fa_geom_t *g = &a->g;
  const int bh = fa_block_bh(g, block), jt = fa_block_key_tile(g, block);
  fa_bf16 *q = (fa_bf16 *)smem, *dyt = q + FA_RF_TILE * fa_rf_ld(g->hs);
  float *ls = (float *)(dyt + FA_RF_TILE * fa_rf_ld(g->hs)), *ds = ls + FA_RF_TILE;
  memset(rf_x, 0xff, sizeof rf_x);
  EACH_RF_WARP(w) for (int i = 0; i < CE_WARP; i++)
    fa_rf_dkv_begin(g, a->qkv, bh, jt * FA_RF_TILE + w * FA_RF_ROWS, &rf_x[w][nth(i, CE_WARP)], nth(i, CE_WARP));
  for (int it = jt; it < g->tiles; it++) {
    EACH_RF_THREAD(t) fa_rf_load_q_dy(g, a->qkv, a->dy, a->lse_in, a->dd, bh, it, q, dyt, ls, ds, t);
    EACH_RF_WARP(w) for (int kk = 0; kk < FA_RF_TILE / 16; kk++) {
      if (!fa_rf_seen(it * FA_RF_TILE + kk * 16, jt * FA_RF_TILE + w * FA_RF_ROWS)) continue;
      rf_bwd_scores(g, rf_x[w], q, dyt, kk);
      for (int i = 0; i < CE_WARP; i++)
        fa_rf_dkv_ds(g, jt * FA_RF_TILE + w * FA_RF_ROWS, it, kk, ls, ds, &rf_x[w][nth(i, CE_WARP)], nth(i, CE_WARP));
      rf_bwd_accumulate(g, rf_x[w], 1, 0, dyt, kk); /* dV += P^T dY */
      rf_bwd_accumulate(g, rf_x[w], 0, 1, q, kk);   /* dK += dS^T Q */
    }
  }
  const long long dk = fa_qkv_row(g, bh, 0) + g->C;
  EACH_RF_WARP(w) for (int i = 0; i < CE_WARP; i++) {
    const fa_rf_bwd_lane_t *xl = &rf_x[w][nth(i, CE_WARP)];
    fa_rf_put(g, a->dqkv, dk, 3LL * g->C, jt * FA_RF_TILE + w * FA_RF_ROWS, xl->acc, a->write, nth(i, CE_WARP));
    fa_rf_put(g, a->dqkv, dk + g->C, 3LL * g->C, jt * FA_RF_TILE + w * FA_RF_ROWS, xl->acc2, a->write,
              nth(i, CE_WARP));
  }
}

/* Every block of an rf backward grid in shared memory of `bytes`, poisoned (NaN). */
typedef void (*rf_block_fn)(const att_call_t *a, long long block, unsigned char *smem);

static void run_grid_rf_bwd(const att_call_t *a, long bytes, rf_block_fn run) {
  const size_t aligned = ((size_t)bytes + 127) / 128 * 128;
  unsigned char *smem = aligned_alloc(128, aligned);
  if (!smem) surge_runtime_error("out of memory (%zu bytes of shared memory)", aligned);
  const long long blocks = fa_blocks(&a->g);
  for (long long i = 0; i < blocks; i++) {
    memset(smem, 0xff, (size_t)bytes);
    run(a, reverse ? blocks - 1 - i : i, smem);
  }
  free(smem);
}

/* The rf backward runs where the GPU's dispatch takes it (cuda_kern_attention.cu: hs 16, 32, 64). */
static int rf_bwd(const fa_geom_t *g) { return rf && g->hs <= 64; }

/* Where the grids just run were WMMA's (wmma 1): its rules held in every tensor-core product
 * (the register-fragment forward's operands are registers: no such rules). */
static void check_mma(const char *what, int wmma) {
  if (wmma)
    tap_ok(mma_checks > 0 && mma_broken == 0, "%s: WMMA's alignment and ldm rules hold (%ld of %ld checks broken)",
           what, mma_broken, mma_checks);
  mma_checks = mma_broken = 0;
}

/* The forward's grid, its stores recorded: y (B, T, C), lse (B, H, T). */
static void run_fwd(const att_call_t *a, const char *what) {
  const fa_geom_t *g = &a->g;
  track(a->y, (long long)g->B * g->T * g->C);
  track(a->lse, (long long)g->B * g->H * g->T);
  if (rf) run_grid_rf(a);
  else run_grid(a, FA_FWD, fwd_block);
  check_writes(what);
  check_mma(what, form == FA_BF16 && !rf);
}

/* The backward's two grids, their stores recorded: dqkv (B, T, 3C) whole, D (B, H, T). */
static void run_bwd(const att_call_t *a, const char *what) {
  const fa_geom_t *g = &a->g;
  track(a->dqkv, (long long)g->B * g->T * 3 * g->C);
  track(a->dd, (long long)g->B * g->H * g->T);
  if (rf_bwd(g)) {
    run_grid_rf_bwd(a, fa_rf_smem_bytes(g->hs), rf_dq_block);
    run_grid_rf_bwd(a, fa_rf_bwd_smem_bytes(g->hs), rf_dkv_block);
  } else {
    run_grid(a, FA_BWD_DQ, dq_block);
    run_grid(a, FA_BWD_DKV, dkv_block);
  }
  check_writes(what);
  check_mma(what, form == FA_BF16 && !rf_bwd(g));
}

/* dqkv's start: something to add to (write 0), or NaN that writing must not read (write 1). */
static void fill_dqkv(float *d, size_t n, int write) {
  for (size_t i = 0; i < n; i++) d[i] = write ? NAN : sinf((float)i);
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

/* Rows before p of every (sample, head) of x (B, T, width), columns [c0, c0 + cols): the same bits. */
static int same_rows_before(const float *a, const float *b, int B, int T, long long width, int c0, int cols, int p) {
  for (int s = 0; s < B; s++)
    for (int i = 0; i < p; i++)
      if (!same_bits(a + ((long long)s * T + i) * width + c0, b + ((long long)s * T + i) * width + c0, (size_t)cols))
        return 0;
  return 1;
}

static void test_shape(int B, int T, int C, int H) {
  const size_t nqkv = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, nl = (size_t)B * H * T;
  float *qkv = uniform(nqkv, -2, 2), *dy = uniform(ny, -1, 1);
  float *y = xmalloc(ny * sizeof *y), *lse = xmalloc(nl * sizeof *lse), *wy = xmalloc(ny * sizeof *wy);
  float *wlse = xmalloc(nl * sizeof *wlse), *dqkv = xmalloc(nqkv * sizeof *dqkv), *wd = xmalloc(nqkv * sizeof *wd);
  float *dd = xmalloc(nl * sizeof *dd), *wdd = xmalloc(nl * sizeof *wdd);
  float *y2 = xmalloc(ny * sizeof *y2), *lse2 = xmalloc(nl * sizeof *lse2), *d2 = xmalloc(nqkv * sizeof *d2);
  att_call_t a = {fa_geom(B, T, C, H, tile), qkv, wy, wlse, dy, y, lse, dqkv, dd, 0};
  const int hs = a.g.hs;
  const char *fm = form == FA_FP32       ? "fp32"
                   : rf && hs <= 64       ? "bf16 (tiles in registers)"
                   : rf                   ? "bf16 (forward in registers, backward in 64-row tiles)"
                   : tile == FA_TILE      ? "bf16 (32-row tiles)"
                                          : "bf16 (64-row tiles)";
  const double tol = form == FA_BF16 ? BF16_TOL : TOL;
  char what[160];

  snprintf(what, sizeof what, "attention %s forward B=%d T=%d C=%d H=%d (hs %d)", fm, B, T, C, H, hs);
  reverse = 0;
  run_fwd(&a, what);
  ref->attention_fwd(B, T, C, H, qkv, wy, wlse, NULL, 0);
  agree(y, wy, ny, tol, what);
  if (form == FA_BF16)
    tap_ok(rel_diff(y, wy, ny) > 1e-4, "%s: y %.1e from ref, beyond float rounding: the operands are bf16", what,
           rel_diff(y, wy, ny));
  snprintf(what, sizeof what, "attention %s forward B=%d T=%d C=%d H=%d (hs %d): lse", fm, B, T, C, H, hs);
  agree(lse, wlse, nl, tol, what);
  snprintf(what, sizeof what, "attention %s forward B=%d T=%d C=%d H=%d (hs %d)", fm, B, T, C, H, hs);
  a.y = y2, a.lse = lse2, reverse = 1;
  run_fwd(&a, "  in reverse order");
  tap_ok(same_bits(y, y2, ny) && same_bits(lse, lse2, nl), "%s: threads and blocks in reverse order, the same bits",
         what);

  for (int i = 0; i < B * H * T; i++) { /* D = dY . Y of each row, from ref's y, in double; in bf16 of both rounded */
    const long long at = fa_out_row(&a.g, i / T, i % T);
    double d = 0.0;
    for (int c = 0; c < hs; c++)
      d += form == FA_BF16 ? (double)bf16_round(dy[at + c]) * bf16_round(wy[at + c]) : (double)dy[at + c] * wy[at + c];
    wdd[i] = (float)d;
  }
  for (a.write = 0; a.write <= 1; a.write++) {
    snprintf(what, sizeof what, "attention %s backward B=%d T=%d C=%d H=%d (hs %d): dqkv %s", fm, B, T, C, H, hs,
             a.write ? "written" : "added");
    fill_dqkv(dqkv, nqkv, a.write);
    fill_dqkv(wd, nqkv, a.write);
    a.dqkv = dqkv, reverse = 0;
    run_bwd(&a, what);
    ref->attention_bwd(B, T, C, H, qkv, wy, wlse, dy, wd, a.write, NULL, 0);
    agree(dqkv, wd, nqkv, tol, what);
    agree(dd, wdd, nl, TOL, "  and D = rowsum(dY Y)");
    fill_dqkv(d2, nqkv, a.write);
    a.dqkv = d2, reverse = 1;
    run_bwd(&a, "  in reverse order");
    tap_ok(same_bits(dqkv, d2, nqkv), "%s: threads and blocks in reverse order, the same bits", what);
  }

  /* causal masking: keys and values from position p on replaced (by others 50 times as large);
   * rows before p keep their bits */
  const int p = T / 2;
  float *masked = uniform(nqkv, -100, 100);
  for (int s = 0; s < B; s++)
    for (int i = 0; i < T; i++)
      for (int c = 0; c < 3 * C; c++)
        if (i < p || c < C) masked[((size_t)s * T + i) * 3 * C + c] = qkv[((size_t)s * T + i) * 3 * C + c];
  a.qkv = masked, a.y = y2, a.lse = lse2, a.dqkv = d2, a.write = 1, reverse = 0;
  run_fwd(&a, "  with other keys and values from the middle on");
  int same = same_rows_before(y, y2, B, T, C, 0, C, p);
  for (int bh = 0; bh < B * H; bh++) same = same && same_bits(lse + (size_t)bh * T, lse2 + (size_t)bh * T, (size_t)p);
  fill_dqkv(d2, nqkv, 1);
  run_bwd(&a, "  with other keys and values from the middle on");
  same = same && same_rows_before(dqkv, d2, B, T, 3LL * C, 0, C, p);
  snprintf(what, sizeof what, "attention %s B=%d T=%d C=%d H=%d (hs %d)", fm, B, T, C, H, hs);
  tap_ok(same, "%s: keys and values from position %d on replaced: y, lse and dQ of the %d rows before keep their bits",
         what, p, p);

  free(qkv), free(dy), free(y), free(lse), free(wy), free(wlse), free(dqkv), free(wd), free(dd), free(wdd);
  free(y2), free(lse2), free(d2), free(masked);
}

/* The shared memory the launchers give each kernel at the zoo's head sizes: what fa_smem carves
 * fits in it, and the largest (dK, dV at hs = 128) fits an H100's or H200's 227 KiB per block;
 * the tiles each form takes there (cuda_attention.c: wider heads the T x T form, and heads the
 * bf16 form refuses the fp32 kernels). */
static void test_smem_sizes(void) {
  const long h100 = 227 * 1024;
  tap_ok(fa_tile_for(290, h100, FA_FP32) == FA_TILE && !fa_tile_for(291, h100, FA_FP32) &&
             fa_tile_for(1, h100, FA_FP32) == FA_TILE && !fa_tile_for(0, h100, FA_FP32),
         "the fp32 kernels take head sizes 1 to 290 in an H100's or H200's 227 KiB a block, in 32-row tiles");
  tap_ok(fa_tile_for(16, h100, FA_BF16) == FA_TILE_WIDE && fa_tile_for(64, h100, FA_BF16) == FA_TILE_WIDE &&
             fa_tile_for(160, h100, FA_BF16) == FA_TILE_WIDE && fa_tile_for(176, h100, FA_BF16) == FA_TILE &&
             fa_tile_for(416, h100, FA_BF16) == FA_TILE && !fa_tile_for(432, h100, FA_BF16) &&
             !fa_tile_for(40, h100, FA_BF16) && !fa_tile_for(8, h100, FA_BF16),
         "the bf16 kernels take head sizes 16, 32, .. 160 there in 64-row tiles, 176 .. 416 in 32-row ones, not 40 "
         "or 8 (not a multiple of 16)");
  const long rf_most = fa_rf_bwd_smem_bytes(FA_RF_MAX_HS);
  tap_ok(rf_most <= 48 * 1024 && fa_rf_smem_bytes(FA_RF_MAX_HS) <= rf_most,
         "the register kernels' shared memory, at most %ld bytes (hs = %d), needs no opt-in beyond 48 KiB", rf_most,
         FA_RF_MAX_HS);
  const fa_kernel_t kinds[] = {FA_FWD, FA_BWD_DQ, FA_BWD_DKV};
  const struct {
    fa_form_t form;
    int tile, hs0;
  } forms[] = {{FA_FP32, FA_TILE, 32}, {FA_BF16, FA_TILE, 16}, {FA_BF16, FA_TILE_WIDE, 16}};
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
    for (int hs = forms[f].hs0; hs <= 128; hs *= 2)
      for (int k = 0; k < 3; k++) {
        const long n = fa_smem_bytes(hs, kinds[k], forms[f].form, forms[f].tile);
        unsigned char *base = aligned_alloc(128, (size_t)(n + 127) / 128 * 128);
        const fa_smem_t s = fa_smem(base, hs, kinds[k], forms[f].form, forms[f].tile);
        tap_ok((unsigned char *)(s.dd + forms[f].tile) == base + n && n <= h100,
               "shared memory of %s kernel %d at hs = %d, %d-row tiles: %ld bytes (%.1f KiB), all carved",
               forms[f].form == FA_BF16 ? "bf16" : "fp32", k, hs, forms[f].tile, n, n / 1024.0);
        free(base);
      }
}

/* fa_bf16_round: __float2bfloat16's rounding (to nearest, ties to even) on the host. */
static void test_bf16_round(void) {
  const float in[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -2.5f, 3.4e38f, 1e-40f};
  const uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc020, 0x7f80, 0x0001};
  int ok = 1;
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) ok = ok && fa_bf16_round(in[i]) == want[i];
  tap_ok(ok, "bf16 rounding: ties to even (1 + 2^-8 -> 1, 1 + 3 2^-8 -> 1 + 2^-6), above a tie up, overflow to "
             "infinity, denormals kept");
  const float back = fa_from_bf16(fa_bf16_round(NAN));
  tap_ok(back != back && fa_from_bf16(0x3fc0) == 1.5f, "bf16: NaN stays NaN; 0x3fc0 reads back as 1.5");
}

int main(void) {
  harness_seed(3204);
  test_bf16_round();
  test_smem_sizes();
  form = FA_FP32, tile = FA_TILE;
  test_shape(2, 1, 8, 2);     /* one token, hs 4 */
  test_shape(1, 33, 96, 3);   /* one row past a tile, hs 32 */
  test_shape(2, 70, 128, 2);  /* three tiles, a tail of 6, hs 64 */
  test_shape(1, 64, 256, 2);  /* two whole tiles, hs 128 */
  test_shape(1, 100, 120, 3); /* hs 40: rows of a tile straddle the warps */
  test_shape(1, 257, 128, 2); /* nine tiles, a tail of 1 */
  form = FA_BF16, tile = FA_TILE;
  test_shape(2, 1, 32, 2);    /* one token, hs 16 */
  test_shape(2, 45, 64, 4);   /* hs 16: fewer output tiles than warps; a tail of 13; 8 heads x samples */
  test_shape(1, 33, 96, 3);   /* one row past a tile, hs 32 */
  test_shape(2, 70, 128, 2);  /* three tiles, a tail of 6, hs 64 */
  test_shape(1, 64, 256, 2);  /* two whole tiles, hs 128: two output tiles a warp */
  test_shape(1, 257, 128, 2); /* nine tiles, a tail of 1 */
  tile = FA_TILE_WIDE;
  test_shape(2, 1, 32, 2);    /* one token, hs 16 */
  test_shape(2, 45, 64, 4);   /* hs 16: one tile with a tail of 19; 8 heads x samples */
  test_shape(1, 65, 96, 3);   /* one row past a tile, hs 32 */
  test_shape(2, 140, 128, 2); /* three tiles, a tail of 12, hs 64: two score tiles a warp */
  test_shape(1, 128, 256, 2); /* two whole tiles, hs 128: four output tiles a warp */
  test_shape(1, 257, 128, 2); /* five tiles, a tail of 1 */
  rf = 1; /* the tiles in registers: hs 16, 32, 64; at 128 the forward, the backward in 64-row tiles */
  test_shape(2, 1, 32, 2);    /* one token, hs 16 */
  test_shape(2, 45, 64, 4);   /* hs 16: one tile with a tail of 19; 8 heads x samples */
  test_shape(1, 65, 64, 2);   /* one row past a tile, hs 32 */
  test_shape(2, 140, 128, 2); /* three tiles, a tail of 12, hs 64 */
  test_shape(1, 128, 256, 2); /* two whole tiles, hs 128 */
  test_shape(1, 257, 128, 2); /* five tiles, a tail of 1 */
  return tap_done();
}
