/* The CUDA row kernels run on the host (issue 32 item 5): softmax (causal, whole rows, with the
 * log-sum-exp), its backward, layer norm and its input gradient (added into and written), and
 * cross-entropy (apart and in place) are cuda_rows.h's phases of (row, lane), which
 * cuda_kern_rows.cu runs between the warp's shuffles. Here every warp of each kernel's grid (blocks
 * of CE_ROW_WARPS warps, as the launchers size it) runs its 32 lanes phase by phase with the host's
 * copies of the warp reductions (the same xor tree), and every store is recorded: none out of
 * bounds, exactly one per output element (rows and widths that are not multiples of the block and
 * the warp: the tails), and the values against ref within 1e-5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"

#include "kernel_harness.h"
#include "backend/cuda_rows.h"

static const backend_t *ref = &backend_ref;

/* The whole grid of a row kernel over nrows rows: blocks of CE_ROW_WARPS warps (the launchers'
 * row_blocks), each warp its row (ce_warp_row) or, past the last row, nothing. */
typedef void (*warp_fn)(long long r, const void *arg);

static void run_grid(long long nrows, warp_fn warp, const void *arg) {
  long long blocks = (nrows + CE_ROW_WARPS - 1) / CE_ROW_WARPS;
  for (long long b = 0; b < (blocks < 1 ? 1 : blocks); b++)
    for (int thread = 0; thread < CE_ROW_WARPS * CE_WARP; thread += CE_WARP) {
      long long r = ce_warp_row(b, thread);
      if (r < nrows) warp(r, arg);
    }
}

/* ---- softmax */

typedef struct sm_arg {
  int n, T;
  float scale;
  const float *s, *dp;
  float *p, *lse, *ds;
} sm_arg_t;

static void softmax_warp(long long r, const void *arg) {
  const sm_arg_t *a = arg;
  const int valid = ce_softmax_valid(r, a->n, a->T);
  const float *sr = a->s + r * a->n;
  float m[CE_WARP];
  double s[CE_WARP];
  for (int l = 0; l < CE_WARP; l++) m[l] = ce_softmax_lane_max(sr, valid, a->scale, l);
  const float mx = ce_host_warp_max(m);
  for (int l = 0; l < CE_WARP; l++) s[l] = ce_softmax_lane_sum(sr, valid, a->scale, mx, l);
  const double sum = ce_host_warp_sum(s);
  for (int l = 0; l < CE_WARP; l++) ce_softmax_lane_write(r, a->n, valid, sr, a->scale, mx, sum, a->p, a->lse, l);
}

static void softmax_bwd_warp(long long r, const void *arg) {
  const sm_arg_t *a = arg;
  const float *pr = a->p + r * a->T, *dpr = a->dp + r * a->T;
  double d[CE_WARP];
  for (int l = 0; l < CE_WARP; l++) d[l] = ce_softmax_bwd_lane_dot(pr, dpr, a->T, l);
  const double dot = ce_host_warp_sum(d);
  for (int l = 0; l < CE_WARP; l++) ce_softmax_bwd_lane_write(r, a->T, pr, dpr, dot, a->scale, a->ds, l);
}

/* rows of n scores; causal: BH blocks of (T, T) (rows = BH T, n = T), else whole rows (T = 0). */
static void test_softmax(int rows, int n, int T) {
  size_t total = (size_t)rows * n;
  float *s = uniform(total, -3, 3), *dp = uniform(total, -1, 1), *p = xmalloc(total * sizeof *p);
  float *lse = xmalloc((size_t)rows * sizeof *lse), *ds = xmalloc(total * sizeof *ds);
  float *want = xmalloc(total * sizeof *want), *want_lse = xmalloc((size_t)rows * sizeof *want_lse);
  sm_arg_t a = {n, T, 0.7f, s, dp, p, lse, ds};
  char what[96];
  snprintf(what, sizeof what, "softmax %s rows=%d n=%d", T ? "causal" : "whole", rows, n);
  track(p, (long long)total);
  track(lse, rows);
  run_grid(rows, softmax_warp, &a);
  check_writes(what);
  if (T) ref->causal_softmax_fwd(rows / T, T, a.scale, s, want);
  else ref->softmax_rows(rows, n, a.scale, s, want);
  agree(p, want, total, what);
  for (int r = 0; r < rows; r++) { /* lse: log of the sum of exp(scale s) over the valid columns, in double */
    const int valid = T ? r % T + 1 : n;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < valid; j++) mx = fmax(mx, (double)a.scale * s[(size_t)r * n + j]);
    for (int j = 0; j < valid; j++) sum += exp((double)a.scale * s[(size_t)r * n + j] - mx);
    want_lse[r] = (float)(mx + log(sum));
  }
  snprintf(what, sizeof what, "softmax %s rows=%d n=%d: lse", T ? "causal" : "whole", rows, n);
  agree(lse, want_lse, (size_t)rows, what);
  if (T) {
    snprintf(what, sizeof what, "causal softmax backward rows=%d T=%d", rows, T);
    track(ds, (long long)total);
    run_grid(rows, softmax_bwd_warp, &a);
    check_writes(what);
    ref->causal_softmax_bwd(rows / T, T, a.scale, p, dp, want);
    agree(ds, want, total, what);
  }
  free(s), free(dp), free(p), free(lse), free(ds), free(want), free(want_lse);
}

/* ---- layer norm */

typedef struct ln_arg {
  int rows, C, wr;
  float eps;
  const float *x, *w, *b, *dy, *stats;
  float *y, *st, *dx;
} ln_arg_t;

static void ln_warp(long long r, const void *arg) {
  const ln_arg_t *a = arg;
  const float *xr = a->x + r * a->C;
  double v[CE_WARP];
  for (int l = 0; l < CE_WARP; l++) v[l] = ce_ln_lane_sum(xr, a->C, l);
  const double m = ce_host_warp_sum(v) / a->C;
  for (int l = 0; l < CE_WARP; l++) v[l] = ce_ln_lane_var(xr, a->C, m, l);
  const double var = ce_host_warp_sum(v) / a->C;
  for (int l = 0; l < CE_WARP; l++)
    ce_ln_lane_write(r, a->rows, a->C, xr, a->w, a->b, (float)m, ce_layernorm_rstd(var, a->eps), a->y, a->st, l);
}

static void ln_bwd_warp(long long r, const void *arg) {
  const ln_arg_t *a = arg;
  const float mean = a->stats[ce_stat_at(r, a->rows)], rstd = a->stats[ce_stat_at(r, a->rows) + a->rows];
  const float *xr = a->x + r * a->C, *dyr = a->dy + r * a->C;
  double md[CE_WARP], mdx[CE_WARP];
  for (int l = 0; l < CE_WARP; l++) ce_ln_bwd_lane_sums(xr, dyr, a->w, a->C, mean, rstd, l, &md[l], &mdx[l]);
  const double smd = ce_host_warp_sum(md) / a->C, smdx = ce_host_warp_sum(mdx) / a->C;
  for (int l = 0; l < CE_WARP; l++) ce_ln_bwd_lane_write(r, a->C, xr, dyr, a->w, mean, rstd, smd, smdx, a->dx, a->wr, l);
}

static void test_layernorm(int N, int rows, int C) {
  size_t n = (size_t)N * rows * C, ns = (size_t)N * 2 * rows;
  float *x = uniform(n, 1, 4), *w = uniform((size_t)C, 0.5f, 1.5f), *b = uniform((size_t)C, -1, 1);
  float *dy = uniform(n, -1, 1), *y = xmalloc(n * sizeof *y), *st = xmalloc(ns * sizeof *st);
  float *wy = xmalloc(n * sizeof *wy), *wst = xmalloc(ns * sizeof *wst), *dx = xmalloc(n * sizeof *dx);
  float *wdx = xmalloc(n * sizeof *wdx), *dw = xcalloc((size_t)C, sizeof *dw), *db = xcalloc((size_t)C, sizeof *db);
  ln_arg_t a = {rows, C, 0, 1e-5f, x, w, b, dy, NULL, y, st, dx};
  char what[96];
  snprintf(what, sizeof what, "layernorm N=%d rows=%d C=%d", N, rows, C);
  track(y, (long long)n);
  track(st, (long long)ns);
  run_grid((long long)N * rows, ln_warp, &a);
  check_writes(what);
  ref->layernorm_fwd(N, rows, C, x, w, b, a.eps, wy, wst);
  agree(y, wy, n, what);
  agree(st, wst, ns, what);
  a.stats = wst;
  for (a.wr = 0; a.wr <= 1; a.wr++) { /* added into a random dx, then written over NaN */
    for (size_t i = 0; i < n; i++) dx[i] = a.wr ? NAN : sinf((float)i), wdx[i] = a.wr ? 0.0f : sinf((float)i);
    snprintf(what, sizeof what, "layernorm backward N=%d rows=%d C=%d: dx %s", N, rows, C, a.wr ? "written" : "added");
    track(dx, (long long)n);
    run_grid((long long)N * rows, ln_bwd_warp, &a);
    check_writes(what);
    ref->layernorm_bwd(N, rows, C, x, w, wst, dy, wdx, 0, dw, db);
    agree(dx, wdx, n, what);
  }
  free(x), free(w), free(b), free(dy), free(y), free(st), free(wy), free(wst), free(dx), free(wdx), free(dw), free(db);
}

/* ---- cross-entropy */

typedef struct xe_arg {
  int V;
  float grad_scale;
  const float *logits, *targets;
  float *dlogits;
  double *loss;
} xe_arg_t;

static void xent_warp(long long r, const void *arg) {
  const xe_arg_t *a = arg;
  const float *lr = a->logits + r * a->V;
  const int t = (int)a->targets[r];
  float m[CE_WARP];
  double s[CE_WARP];
  for (int l = 0; l < CE_WARP; l++) m[l] = ce_xent_lane_max(lr, a->V, l);
  const float mx = ce_host_warp_max(m);
  for (int l = 0; l < CE_WARP; l++) s[l] = ce_xent_lane_sum(lr, a->V, mx, l);
  const double sum = ce_host_warp_sum(s);
  const float target_logit = lr[t]; /* every lane reads it before any writes (the kernel's __syncwarp) */
  for (int l = 0; l < CE_WARP; l++)
    ce_xent_lane_write(r, a->V, lr, t, target_logit, mx, sum, a->grad_scale, a->dlogits, a->loss, l);
}

static void test_xent(int rows, int V, int in_place) {
  size_t n = (size_t)rows * V;
  float *logits = uniform(n, -4, 4), *targets = xmalloc((size_t)rows * sizeof *targets);
  float *dl = xmalloc(n * sizeof *dl), *want = xmalloc(n * sizeof *want);
  double *loss = xmalloc((size_t)rows * sizeof *loss);
  for (int r = 0; r < rows; r++) targets[r] = (float)rng_below(&rng, (uint64_t)V);
  const double want_loss = ref->xent_fwd_bwd(rows, V, logits, targets, 0.5f, want);
  if (in_place) memcpy(dl, logits, n * sizeof *dl);
  xe_arg_t a = {V, 0.5f, in_place ? dl : logits, targets, dl, loss};
  char what[96];
  snprintf(what, sizeof what, "cross-entropy rows=%d V=%d%s", rows, V, in_place ? " in place" : "");
  track(dl, (long long)n);
  track(loss, rows);
  run_grid(rows, xent_warp, &a);
  check_writes(what);
  agree(dl, want, n, what);
  double sum = 0;
  for (int r = 0; r < rows; r++) sum += loss[r];
  tap_ok(fabs(sum - want_loss) <= TOL * fabs(want_loss), "%s: loss %.9g vs ref %.9g", what, sum, want_loss);
  free(logits), free(targets), free(dl), free(want), free(loss);
}

int main(void) {
  rng_seed(&rng, 32);
  test_softmax(3 * 1, 1, 1);   /* T = 1: one valid column */
  test_softmax(2 * 33, 33, 33); /* one lane past a warp */
  test_softmax(3 * 70, 70, 70); /* 210 rows: blocks of 8 warps and a tail of 2 */
  test_softmax(13, 100, 0);     /* whole rows */
  test_layernorm(1, 9, 1);
  test_layernorm(3, 5, 33);
  test_layernorm(2, 7, 64);
  test_layernorm(2, 11, 100);
  test_xent(11, 37, 0);
  test_xent(9, 300, 0);
  test_xent(9, 300, 1);
  return tap_done();
}
