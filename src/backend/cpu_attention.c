/* "cpu" backend: causal multi-head self-attention as one op each way, blocked so that no T x T
 * matrix is ever held (backend.h: attention_fwd, attention_bwd; FlashAttention-2's algorithm on a
 * CPU). Each sample and head is walked in tiles of ATT_BLOCK query rows x ATT_BLOCK key columns,
 * tiles above the diagonal skipped; the products of a tile are OpenBLAS GEMMs reading q, k and v in
 * place (row stride 3C).
 *
 * Forward, per block of query rows: an online softmax over the key blocks keeps each row's running
 * maximum m and sum l of exp(s - m), rescales the row's output accumulator O by exp(m_old - m_new)
 * when the maximum grows, and adds P V; at the end y = O / l and lse = m + log l. In precision = bf16
 * the probabilities are normalised before they are rounded (as ref does): two passes (head_fwd).
 * Backward, per block of key columns (outer) and the query blocks that see it (inner): P is
 * recomputed from the scores and lse, then dV_j += P^T dY_i, dP = dY_i V_j^T,
 * dS = P (dP - D_i) s with D_i = rowsum(dY_i * Y_i) (in bf16 of dY and Y rounded, backend.h), dQ_i += dS K_j and
 * dK_j += dS^T Q_i; dK_j and dV_j are written (or added) once their column block is done, dQ once the head is.
 *
 * A tile on the diagonal holds pairs above it (a query and a later key), whose probabilities are 0. The GEMMs
 * still multiply them, and 0 x NaN or Inf is NaN: a non-finite value in a later token's q, k, v or dy would reach
 * the outputs of earlier ones that do not depend on it (ref sums over the causal pairs only). So a diagonal tile
 * whose operand rows hold a non-finite value takes its products in loops over the causal pairs alone (tri_rows,
 * tri_cols; a scan of its rows decides, 1/ATT_BLOCK of the products' work), and dS is computed for those pairs only.
 *
 * Workspace for one call, whatever B and H (heads run one after another): forward a tile of scores
 * and a block of accumulators, ATT_BLOCK (ATT_BLOCK + hs + 2) floats; backward two tiles, dK and dV
 * of a key block, the head's dQ and D: 2 ATT_BLOCK^2 + 2 ATT_BLOCK hs + T (hs + 1) floats. At
 * T = 1024, hs = 64: 91 Kfloats, where the naive form holds 2 B H T^2 (2 M floats a head). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "backend/host_mem.h"
#include "core/bf16.h"
#include "core/error.h"

enum { ATT_BLOCK = 64 }; /* query rows and key columns of a tile */

/* One sample and head: q, k, v rows at stride ld (3C), y and dy rows at stride C. */
typedef struct att_head {
  int T, hs, ld, C;
  float s; /* 1/sqrt(hs) */
} att_head_t;

static int min_int(int a, int b) { return a < b ? a : b; }

size_t cpu_attention_workspace(int T, int hs) {
  const size_t b = ATT_BLOCK, fwd = b * (b + (size_t)hs + 2);
  const size_t bwd = 2 * b * b + 2 * b * (size_t)hs + (size_t)T * ((size_t)hs + 1);
  return fwd > bwd ? fwd : bwd;
}

static void check_ws(int T, int hs, size_t ws_n) {
  if (ws_n < cpu_attention_workspace(T, hs))
    surge_runtime_error("attention: a workspace of %zu floats, %zu needed at T = %d, head size %d", ws_n,
                        cpu_attention_workspace(T, hs), T, hs);
}

/* x[j] = exp(x[j] - shift) for j < n, then 0 up to nc: compiled per ISA (CPU_CLONES), so the exponentials run
 * a vector at a time (in the loops they sat in, with a sum or a choice beside them, they ran one by one, and the
 * bf16 forward took 7.1-7.6 ms at the bench gpt's shape against 4.4-4.7 now [AMD EPYC Zen 4, AVX-512, 2 vCPUs]).
 * The same bits at every width (cpu_expf has no reduction). */
static CPU_CLONES void exp_shifted(float *restrict x, int n, int nc, float shift) {
  for (int j = 0; j < n; j++) x[j] = cpu_expf(x[j] - shift);
  for (int j = n; j < nc; j++) x[j] = 0.0f;
}

/* Row r of a tile whose rows start at query i0 and columns at key j0: the keys it may see. */
static int tile_valid(int i0, int r, int j0, int nc) { return min_int(nc, i0 + r - j0 + 1); }

/* The online softmax's step for one row of a score tile (nc scores, valid of them causal): the new
 * maximum and sum in *m, *l, the row turned into exp(s - m) (0 past valid); returns the factor
 * exp(m_old - m_new) by which the row's earlier output must be rescaled. */
static float online_row(float *sr, int valid, int nc, float *m, float *l) {
  float mx = *m, sum = 0.0f;
  for (int j = 0; j < valid; j++) mx = sr[j] > mx ? sr[j] : mx;
  exp_shifted(sr, valid, nc, mx);
  for (int j = 0; j < valid; j++) sum += sr[j]; /* in order, as before the exponentials moved out */
  const float corr = cpu_expf(*m - mx); /* 0 on the first block: m starts at -inf */
  *l = *l * corr + sum;
  *m = mx;
  return corr;
}

/* Whether n rows of hs floats at stride ld are all finite: a float is NaN or Inf when its exponent bits are all
 * ones, the largest exponent field there is (an integer maximum, a vector at a time). */
static CPU_CLONES int rows_finite(const float *x, int n, int hs, int ld) {
  uint32_t top = 0;
  for (int r = 0; r < n; r++)
    for (int c = 0; c < hs; c++) {
      uint32_t bits;
      memcpy(&bits, &x[(size_t)r * ld + c], sizeof bits);
      bits &= 0x7f800000u;
      top = bits > top ? bits : top;
    }
  return top != 0x7f800000u;
}

/* Whether the tile of query block i0 and key block j0 (nc keys) holds pairs above the diagonal. */
static int tile_masked(int i0, int j0, int nc) { return j0 + nc > i0 + 1; }

/* An operand of the products as cpu_gemm takes it: rounded to bfloat16 in precision = bf16. */
static float operand(float v, int rounded) { return rounded ? bf16_round(v) : v; }

/* dst (nr, hs) (rows at stride ldd) += X (nr, nc) src (nc, hs) (stride lds) over the causal pairs only: row r of X
 * reads its tile_valid first columns. */
static void tri_rows(int i0, int j0, int nr, int nc, int hs, const float *X, const float *src, int lds, float *dst,
                     int ldd) {
  const int rounded = host_products_bf16();
  for (int r = 0; r < nr; r++) {
    float *d = dst + (size_t)r * ldd;
    const float *x = X + (size_t)r * ATT_BLOCK;
    for (int j = 0, valid = tile_valid(i0, r, j0, nc); j < valid; j++)
      for (int c = 0; c < hs; c++) d[c] += operand(x[j], rounded) * operand(src[(size_t)j * lds + c], rounded);
  }
}

/* dst (nc, hs) (stride ldd) += X^T (nc, nr) src (nr, hs) (stride lds) over the causal pairs only: column j of X
 * takes the rows that see key j0 + j. */
static void tri_cols(int i0, int j0, int nr, int nc, int hs, const float *X, const float *src, int lds, float *dst,
                     int ldd) {
  const int rounded = host_products_bf16();
  for (int r = 0; r < nr; r++) {
    const float *x = X + (size_t)r * ATT_BLOCK, *s = src + (size_t)r * lds;
    for (int j = 0, valid = tile_valid(i0, r, j0, nc); j < valid; j++)
      for (int c = 0; c < hs; c++) dst[(size_t)j * ldd + c] += operand(x[j], rounded) * operand(s[c], rounded);
  }
}

/* S (nr, nc) = s Q_i (nr, hs) K_j^T for the query block at i0 and the key block at j0 */
static void score_tile(const att_head_t *a, const float *q, const float *k, int i0, int nr, int j0, int nc, float *S) {
  cpu_gemm(0, 1, nr, nc, a->hs, a->s, q + (size_t)i0 * a->ld, a->ld, k + (size_t)j0 * a->ld, a->ld, 0.0f, S, ATT_BLOCK);
}

/* One sample and head. normalised (precision = bf16: the products' operands rounded) rounds the
 * probabilities as ref does, normalised: each block of query rows then takes two passes over its keys,
 * the online softmax's maximum and sum first (the score tiles thrown away, lse known after it), then
 * each tile's P = exp(S - lse) and O += P V, so y = O; the scores are computed twice (the forward's
 * products 1.5 times). Otherwise one pass, O rescaled as the maximum grows and y = O / l. */
static void head_fwd(const att_head_t *a, const float *q, const float *k, const float *v, float *y, float *lse,
                     float *ws, int normalised) {
  const int hs = a->hs, ld = a->ld;
  float *S = ws, *O = S + ATT_BLOCK * ATT_BLOCK, *m = O + ATT_BLOCK * hs, *l = m + ATT_BLOCK;
  for (int i0 = 0; i0 < a->T; i0 += ATT_BLOCK) {
    const int nr = min_int(ATT_BLOCK, a->T - i0);
    for (int r = 0; r < nr; r++) m[r] = -INFINITY, l[r] = 0.0f;
    memset(O, 0, (size_t)nr * hs * sizeof *O);
    for (int j0 = 0; normalised && j0 < i0 + nr; j0 += ATT_BLOCK) { /* the first pass: statistics only */
      const int nc = min_int(ATT_BLOCK, i0 + nr - j0);
      score_tile(a, q, k, i0, nr, j0, nc, S);
      for (int r = 0; r < nr; r++) online_row(S + (size_t)r * ATT_BLOCK, tile_valid(i0, r, j0, nc), nc, &m[r], &l[r]);
    }
    for (int r = 0; normalised && r < nr; r++) lse[i0 + r] = m[r] + logf(l[r]);
    for (int j0 = 0; j0 < i0 + nr; j0 += ATT_BLOCK) { /* key blocks at or left of the diagonal */
      const int nc = min_int(ATT_BLOCK, i0 + nr - j0);
      score_tile(a, q, k, i0, nr, j0, nc, S);
      for (int r = 0; r < nr; r++) {
        float *sr = S + (size_t)r * ATT_BLOCK;
        const int valid = tile_valid(i0, r, j0, nc);
        if (normalised) {
          exp_shifted(sr, valid, nc, lse[i0 + r]);
          continue;
        }
        const float corr = online_row(sr, valid, nc, &m[r], &l[r]);
        if (corr != 1.0f)
          for (int c = 0; c < hs; c++) O[(size_t)r * hs + c] *= corr;
      }
      // O (nr, hs) += P (nr, nc) V_j (nc, hs)
      if (tile_masked(i0, j0, nc) && !rows_finite(v + (size_t)j0 * ld, nc, hs, ld))
        tri_rows(i0, j0, nr, nc, hs, S, v + (size_t)j0 * ld, ld, O, hs);
      else
        cpu_gemm(0, 0, nr, hs, nc, 1.0f, S, ATT_BLOCK, v + (size_t)j0 * ld, ld, 1.0f, O, hs);
    }
    for (int r = 0; r < nr; r++) {
      const float inv = normalised ? 1.0f : 1.0f / l[r];
      for (int c = 0; c < hs; c++) y[(size_t)(i0 + r) * a->C + c] = O[(size_t)r * hs + c] * inv;
      if (!normalised) lse[i0 + r] = m[r] + logf(l[r]);
    }
  }
}

void cpu_attention_fwd(int B, int T, int C, int H, const float *qkv, float *y, float *lse, float *ws, size_t ws_n) {
  const att_head_t a = {T, C / H, 3 * C, C, 1.0f / sqrtf((float)(C / H))};
  check_ws(T, a.hs, ws_n);
  const int normalised = host_products_bf16();
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++) {
      const float *q = qkv + (size_t)b * T * a.ld + (size_t)h * a.hs;
      float *yh = y + (size_t)b * T * C + (size_t)h * a.hs, *lh = lse + ((size_t)b * H + h) * T;
      head_fwd(&a, q, q + C, q + 2 * C, yh, lh, ws, normalised);
    }
}

/* dst (n rows of hs at stride ld) = or += src (n rows of hs, packed). */
static void put_rows(int n, int hs, const float *src, float *dst, int ld, int write) {
  for (int r = 0; r < n; r++) {
    float *d = dst + (size_t)r * ld;
    const float *s = src + (size_t)r * hs;
    if (write) memcpy(d, s, (size_t)hs * sizeof *d);
    else
      for (int c = 0; c < hs; c++) d[c] += s[c];
  }
}

/* The pointers of one head's backward. */
typedef struct att_grads {
  const float *q, *k, *v, *y, *lse, *dy;
  float *dq, *dk, *dv;
} att_grads_t;

/* One query block i0 (nr rows) against key block j0 (nc columns): the tile's contributions to dV_j,
 * dQ_i and dK_j. P and dP are tiles of workspace. */
static void tile_bwd(const att_head_t *a, const att_grads_t *g, int i0, int nr, int j0, int nc, const float *D,
                     float *P, float *dP, float *dQ, float *dK, float *dV) {
  const int hs = a->hs, ld = a->ld, C = a->C;
  const float *qi = g->q + (size_t)i0 * ld, *kj = g->k + (size_t)j0 * ld, *vj = g->v + (size_t)j0 * ld;
  const float *dyi = g->dy + (size_t)i0 * C;
  const int causal_only = tile_masked(i0, j0, nc) && !(rows_finite(qi, nr, hs, ld) && rows_finite(kj, nc, hs, ld) &&
                                                       rows_finite(vj, nc, hs, ld) && rows_finite(dyi, nr, hs, C));
  // P (nr, nc) = exp(s Q_i K_j^T - lse_i), 0 above the diagonal
  score_tile(a, g->q, g->k, i0, nr, j0, nc, P);
  for (int r = 0; r < nr; r++) {
    float *pr = P + (size_t)r * ATT_BLOCK;
    exp_shifted(pr, tile_valid(i0, r, j0, nc), nc, g->lse[i0 + r]);
  }
  // dV_j (nc, hs) += P^T dY_i; dP (nr, nc) = dY_i V_j^T
  if (causal_only) tri_cols(i0, j0, nr, nc, hs, P, dyi, C, dV, hs);
  else cpu_gemm(1, 0, nc, hs, nr, 1.0f, P, ATT_BLOCK, dyi, C, 1.0f, dV, hs);
  cpu_gemm(0, 1, nr, nc, hs, 1.0f, dyi, C, vj, ld, 0.0f, dP, ATT_BLOCK);
  // dS = P (dP - D_i) s over dP, for the causal pairs (0 above the diagonal, whatever dP holds there)
  for (int r = 0; r < nr; r++) {
    float *ds = dP + (size_t)r * ATT_BLOCK;
    const float *p = P + (size_t)r * ATT_BLOCK, d = D[i0 + r];
    const int valid = tile_valid(i0, r, j0, nc);
    for (int j = 0; j < valid; j++) ds[j] = p[j] * (ds[j] - d) * a->s;
    for (int j = valid; j < nc; j++) ds[j] = 0.0f;
  }
  // dQ_i (nr, hs) += dS K_j; dK_j (nc, hs) += dS^T Q_i
  if (causal_only) {
    tri_rows(i0, j0, nr, nc, hs, dP, kj, ld, dQ + (size_t)i0 * hs, hs);
    tri_cols(i0, j0, nr, nc, hs, dP, qi, ld, dK, hs);
    return;
  }
  cpu_gemm(0, 0, nr, hs, nc, 1.0f, dP, ATT_BLOCK, kj, ld, 1.0f, dQ + (size_t)i0 * hs, hs);
  cpu_gemm(1, 0, nc, hs, nr, 1.0f, dP, ATT_BLOCK, qi, ld, 1.0f, dK, hs);
}

static void head_bwd(const att_head_t *a, const att_grads_t *g, int write, float *ws) {
  const int T = a->T, hs = a->hs;
  float *P = ws, *dP = P + ATT_BLOCK * ATT_BLOCK, *dK = dP + ATT_BLOCK * ATT_BLOCK, *dV = dK + ATT_BLOCK * hs;
  float *dQ = dV + ATT_BLOCK * hs, *D = dQ + (size_t)T * hs;
  const int rounded = host_products_bf16(); /* D a product of rounded operands in bf16 (backend.h) */
  for (int i = 0; i < T; i++) { // D_i = dY_i . Y_i
    const float *y = g->y + (size_t)i * a->C, *dy = g->dy + (size_t)i * a->C;
    float d = 0.0f;
    if (rounded)
      for (int c = 0; c < hs; c++) d += bf16_round(dy[c]) * bf16_round(y[c]);
    else
      for (int c = 0; c < hs; c++) d += dy[c] * y[c];
    D[i] = d;
  }
  memset(dQ, 0, (size_t)T * hs * sizeof *dQ);
  for (int j0 = 0; j0 < T; j0 += ATT_BLOCK) {
    const int nc = min_int(ATT_BLOCK, T - j0);
    memset(dK, 0, (size_t)2 * ATT_BLOCK * hs * sizeof *dK); /* dK and dV of the block */
    for (int i0 = j0; i0 < T; i0 += ATT_BLOCK) /* the query blocks at or below the diagonal */
      tile_bwd(a, g, i0, min_int(ATT_BLOCK, T - i0), j0, nc, D, P, dP, dQ, dK, dV);
    put_rows(nc, hs, dK, g->dk + (size_t)j0 * a->ld, a->ld, write);
    put_rows(nc, hs, dV, g->dv + (size_t)j0 * a->ld, a->ld, write);
  }
  put_rows(T, hs, dQ, g->dq, a->ld, write);
}

void cpu_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse, const float *dy,
                       float *dqkv, int dx_write, float *ws, size_t ws_n) {
  const att_head_t a = {T, C / H, 3 * C, C, 1.0f / sqrtf((float)(C / H))};
  check_ws(T, a.hs, ws_n);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++) {
      const size_t at = (size_t)b * T * a.ld + (size_t)h * a.hs, out = (size_t)b * T * C + (size_t)h * a.hs;
      const att_grads_t g = {qkv + at,      qkv + at + C,      qkv + at + 2 * C, y + out, lse + ((size_t)b * H + h) * T,
                             dy + out,      dqkv + at,         dqkv + at + C,    dqkv + at + 2 * C};
      head_bwd(&a, &g, dx_write, ws);
    }
}
