/* The CUDA column sums run on the host (issue 32 items 2 and 5): the bias gradient (rows of a
 * matrix, of doubles for the plane form, with a leading dimension, into a strided output as
 * gemm_tn_rows's blocks, or into a double accumulator as the convolution's chunks), layer norm's
 * parameter gradients, and GELU's backward with its bias gradient in one pass are cuda_cols.h's two
 * kernels; here each kernel's whole grid runs block by block (phase 1 for every thread of a block,
 * then phase 2: the barrier), every store recorded: none out of bounds, exactly one per output
 * element (tails of rows, column tiles and chunks), the values against ref, and the same bits when
 * the blocks run in the opposite order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cuda_harness.h" /* before the kernels: its CE_STORE records every store */
#include "backend/cuda_cols.h"

#define TOL 1e-6

static const backend_t *ref = &backend_ref;

/* Both kernels of s over their whole grids (blocks and the finish's elements in reverse order when
 * reverse), the parts in a tracked buffer of their own; the caller tracks the outputs. */
static void run_cols(ce_cols_t *s, int reverse) {
  ce_cols_split(s);
  const long long tiles = ce_cols_tiles(s), nparts = s->chunks * s->nterms * s->cols;
  s->part = xmalloc((size_t)nparts * sizeof *s->part);
  track(s->part, nparts);
  for (long long n = 0; n < tiles * s->chunks; n++) {
    const long long b = reverse ? tiles * s->chunks - 1 - n : n, tile = b % tiles, chunk = b / tiles;
    double sh[CE_COLS_SHARED];
    for (int ty = 0; ty < CE_COL_ROWS; ty++)
      for (int tx = 0; tx < CE_COL_TILE; tx++) ce_cols_thread_sums(s, tile, chunk, tx, ty, sh);
    for (int tx = 0; tx < CE_COL_TILE; tx++) ce_cols_block_write(s, tile, chunk, tx, sh);
  }
  const long long n = (long long)s->nterms * s->cols;
  for (long long i = 0; i < n; i++) ce_cols_finish(s, reverse ? n - 1 - i : i);
}

static void same_bits(const void *a, const void *b, size_t bytes, const char *what) {
  tap_ok(memcmp(a, b, bytes) == 0, "%s: the same bits with the blocks in the opposite order", what);
}

/* db (cols) += the column sums of dy (rows, cols), as bias_grad_rows. */
static void test_bias(int rows, int cols) {
  float *dy = uniform((size_t)rows * cols, -1, 1), *db = uniform((size_t)cols, -1, 1);
  float *want = xmalloc((size_t)cols * sizeof *want), *again = xmalloc((size_t)cols * sizeof *again);
  memcpy(want, db, (size_t)cols * sizeof *db);
  memcpy(again, db, (size_t)cols * sizeof *db);
  ref->bias_grad_rows(rows, cols, dy, want);
  char what[96];
  snprintf(what, sizeof what, "bias gradient rows=%d cols=%d", rows, cols);
  for (int reverse = 0; reverse <= 1; reverse++) {
    ce_cols_t s = {.kind = CE_COLS_MATRIX, .nterms = 1, .cols = cols, .rows = rows, .ld = cols, .a = dy};
    s.out[0] = reverse ? again : db, s.ocols = cols, s.ld_out = cols;
    track(s.out[0], cols);
    run_cols(&s, reverse);
    check_writes(what);
    free(s.part);
  }
  agree(db, want, (size_t)cols, TOL, what);
  same_bits(db, again, (size_t)cols * sizeof *db, what);
  free(dy), free(db), free(want), free(again);
}

/* The blocks of a long GEMM (gemm_tn_rows): x (rows, ld > M N), column c = i N + j of the sums into
 * out (M, ldo > N) at i ldo + j; and the same sums added to a double accumulator (conv's chunks). */
static void test_strided(int rows, int M, int N) {
  const int cols = M * N, ld = cols + 5, ldo = N + 2;
  float *x = uniform((size_t)rows * ld, -1, 1), *out = uniform((size_t)M * ldo, -1, 1);
  float *want = xmalloc((size_t)M * ldo * sizeof *want);
  double *acc = xmalloc((size_t)cols * sizeof *acc), *acc0 = xmalloc((size_t)cols * sizeof *acc0);
  memcpy(want, out, (size_t)M * ldo * sizeof *out);
  double worst = 0.0;
  for (int c = 0; c < cols; c++) {
    double sum = 0.0;
    for (int r = 0; r < rows; r++) sum += x[(size_t)r * ld + c];
    float *w = &want[(size_t)(c / N) * ldo + c % N];
    *w = (float)((double)*w + sum);
    acc[c] = acc0[c] = sin(c);
  }
  char what[96];
  snprintf(what, sizeof what, "column sums rows=%d of (%d, %d), ld %d, into (%d, %d) ld %d", rows, M, N, ld, M, N, ldo);
  ce_cols_t s = {.kind = CE_COLS_MATRIX, .nterms = 1, .cols = cols, .rows = rows, .ld = ld, .a = x};
  s.out[0] = out, s.ocols = N, s.ld_out = ldo;
  track_rows(out, M, N, ldo);
  run_cols(&s, 0);
  check_writes(what);
  free(s.part);
  agree(out, want, (size_t)M * ldo, TOL, what);
  s.out[0] = NULL, s.acc[0] = acc;
  track(acc, cols);
  run_cols(&s, 0);
  snprintf(what, sizeof what, "column sums rows=%d cols=%d ld %d into double accumulators", rows, cols, ld);
  check_writes(what);
  free(s.part);
  for (int c = 0; c < cols; c++) {
    double sum = 0.0;
    for (int r = 0; r < rows; r++) sum += x[(size_t)r * ld + c];
    worst = fmax(worst, fabs(acc[c] - acc0[c] - sum) / fmax(fabs(sum), 1.0));
  }
  tap_ok(worst <= 1e-12, "%s: each within %.1e of the double sum", what, worst);
  free(x), free(out), free(want), free(acc), free(acc0);
}

/* The plane form's second sum: db (C) += the column sums of the per-plane sums (N, C), doubles. */
static void test_doubles(int N, int C) {
  double *planes = xmalloc((size_t)N * C * sizeof *planes);
  float *db = uniform((size_t)C, -1, 1), *want = xmalloc((size_t)C * sizeof *want);
  for (size_t i = 0; i < (size_t)N * C; i++) planes[i] = 1e-3 * cos((double)i) + 1e-9 * (double)i;
  for (int c = 0; c < C; c++) {
    double sum = 0.0;
    for (int n = 0; n < N; n++) sum += planes[(size_t)n * C + c];
    want[c] = (float)((double)db[c] + sum);
  }
  char what[96];
  snprintf(what, sizeof what, "column sums of doubles N=%d C=%d", N, C);
  ce_cols_t s = {.kind = CE_COLS_MATRIX_D, .nterms = 1, .cols = C, .rows = N, .ld = C, .ad = planes};
  s.out[0] = db, s.ocols = C, s.ld_out = C;
  track(db, C);
  run_cols(&s, 0);
  check_writes(what);
  free(s.part);
  agree(db, want, (size_t)C, TOL, what);
  free(planes), free(db), free(want);
}

/* layer norm's dw, db += over N samples of (rows, C), against ref's layernorm_bwd. */
static void test_layernorm_params(int N, int rows, int C) {
  const size_t n = (size_t)N * rows * C, ns = (size_t)N * 2 * rows;
  float *x = uniform(n, 1, 4), *w = uniform((size_t)C, 0.5f, 1.5f), *b = uniform((size_t)C, -1, 1);
  float *dy = uniform(n, -1, 1), *y = xmalloc(n * sizeof *y), *st = xmalloc(ns * sizeof *st);
  float *dx = xmalloc(n * sizeof *dx), *dw = uniform((size_t)C, -1, 1), *db = uniform((size_t)C, -1, 1);
  float *wdw = xmalloc((size_t)C * sizeof *wdw), *wdb = xmalloc((size_t)C * sizeof *wdb);
  memcpy(wdw, dw, (size_t)C * sizeof *dw);
  memcpy(wdb, db, (size_t)C * sizeof *db);
  ref->layernorm_fwd(N, rows, C, x, w, b, 1e-5f, y, st);
  ref->layernorm_bwd(N, rows, C, x, w, st, dy, dx, 1, wdw, wdb);
  char what[96];
  snprintf(what, sizeof what, "layernorm parameter gradients N=%d rows=%d C=%d", N, rows, C);
  ce_cols_t s = {.kind = CE_COLS_LAYERNORM, .nterms = 2, .cols = C, .per = rows, .rows = (long long)N * rows};
  s.a = dy, s.b = x, s.stats = st, s.out[0] = dw, s.out[1] = db, s.ocols = C, s.ld_out = C;
  track(dw, C);
  track(db, C);
  run_cols(&s, 0);
  check_writes(what);
  free(s.part);
  agree(dw, wdw, (size_t)C, TOL, what);
  agree(db, wdb, (size_t)C, TOL, what);
  free(x), free(w), free(b), free(dy), free(y), free(st), free(dx), free(dw), free(db), free(wdw), free(wdb);
}

/* gelu_bias_bwd: dpre (rows, cols) written and db += its column sums, in one pass. */
static void test_gelu_bias(int rows, int cols) {
  const size_t n = (size_t)rows * cols;
  float *pre = uniform(n, -3, 3), *dy = uniform(n, -1, 1), *dpre = xmalloc(n * sizeof *dpre);
  float *db = uniform((size_t)cols, -1, 1), *wdpre = xmalloc(n * sizeof *wdpre);
  float *wdb = xmalloc((size_t)cols * sizeof *wdb);
  memcpy(wdb, db, (size_t)cols * sizeof *db);
  ref->gelu_bias_bwd(rows, cols, pre, dy, wdpre, wdb);
  for (size_t i = 0; i < n; i++) dpre[i] = NAN; /* written, never read */
  char what[96];
  snprintf(what, sizeof what, "gelu_bias_bwd rows=%d cols=%d", rows, cols);
  ce_cols_t s = {.kind = CE_COLS_GELU, .nterms = 1, .cols = cols, .rows = rows, .a = dy, .b = pre, .store = dpre};
  s.out[0] = db, s.ocols = cols, s.ld_out = cols;
  track(dpre, (long long)n);
  track(db, cols);
  run_cols(&s, 0);
  check_writes(what);
  free(s.part);
  agree(dpre, wdpre, n, 1e-5, what);
  agree(db, wdb, (size_t)cols, 1e-5, what);
  free(pre), free(dy), free(dpre), free(db), free(wdpre), free(wdb);
}

int main(void) {
  harness_seed(32);
  test_bias(1, 1);
  test_bias(37, 33);   /* a column tile and one column past it; fewer rows than a chunk */
  test_bias(1000, 70); /* 4 chunks (the last short), 3 tiles (the last of 6 columns) */
  test_bias(5000, 3);  /* 20 chunks of 250 rows: rows per thread not a multiple of CE_COL_ROWS */
  test_strided(700, 3, 11);
  test_doubles(9, 40);
  test_layernorm_params(1, 9, 1);
  test_layernorm_params(3, 5, 33);
  test_layernorm_params(4, 300, 100);
  test_gelu_bias(1, 1);
  test_gelu_bias(300, 45);
  return tap_done();
}
