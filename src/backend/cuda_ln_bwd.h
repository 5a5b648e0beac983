/* Layer norm's backward in one kernel with its parameter sums (cuda_kern_rows.cu), as functions of
 * (block, thread) that compile for the GPU and for the host (tests/test_cuda_rows runs its grid).
 *
 * Grid: ce_lnb_blocks(nrows) blocks of CE_ROW_WARPS warps; block b takes the groups of CE_ROW_WARPS
 * rows g = b, b + blocks, ... For each group, warp w computes the input gradient of row
 * g CE_ROW_WARPS + w (cuda_rows.h's phases), and thread t adds the group's terms of dw and db
 * (cuda_cols.h's layer-norm terms, rows in order) for its columns c = t, t + CE_LNB_THREADS, ...
 * into acc (2C doubles of the block's shared memory: acc[c] dw's, acc[C + c] db's). Only thread t
 * touches its columns, so the block needs no barrier. At the end each thread stores its columns
 * into the block's part, and cuda_cols.h's finish adds the blocks' parts in order into dw and db:
 * two launches (there were six), the same split whatever the timing. */
#ifndef SURGE_BACKEND_CUDA_LN_BWD_H
#define SURGE_BACKEND_CUDA_LN_BWD_H

#include "backend/cuda_cols.h"

enum {
  CE_LNB_THREADS = CE_ROW_WARPS * CE_WARP,
  CE_LNB_BLOCKS = 512 /* blocks at most: about 4 per SM of an H100/H200 (not yet measured) */
};

CE_FN long long ce_lnb_blocks(long long nrows) {
  long long groups = (nrows + CE_ROW_WARPS - 1) / CE_ROW_WARPS;
  return groups < 1 ? 1 : groups < CE_LNB_BLOCKS ? groups : CE_LNB_BLOCKS;
}

/* The parameter sums of layer norm's backward over nrows rows (samples of `per` rows, stats as
 * layernorm_fwd's) of C columns, parts per block, into dw and db (+=). */
CE_FN ce_cols_t ce_lnb_sums(long long nrows, int per, int C, const float *x, const float *stats, const float *dy,
                            float *dw, float *db, double *part) {
  ce_cols_t s = {0};
  s.kind = CE_COLS_LAYERNORM, s.nterms = 2, s.cols = C, s.per = per, s.rows = nrows;
  s.a = dy, s.b = x, s.stats = stats, s.out[0] = dw, s.out[1] = db, s.ocols = C, s.ld_out = C;
  s.chunks = ce_lnb_blocks(nrows), s.rows_per_chunk = 0, s.part = part;
  return s;
}

CE_FN void ce_lnb_thread_zero(const ce_cols_t *s, int t, double *acc) {
  for (int c = t; c < s->cols; c += CE_LNB_THREADS) acc[c] = 0.0, acc[s->cols + c] = 0.0;
}

/* thread t's terms of the group of rows from r0 */
CE_FN void ce_lnb_thread_add(const ce_cols_t *s, long long r0, int t, double *acc) {
  for (int c = t; c < s->cols; c += CE_LNB_THREADS)
    for (long long r = r0; r < r0 + CE_ROW_WARPS && r < s->rows; r++) {
      acc[c] += ce_cols_term(s, 0, r, c);
      acc[s->cols + c] += ce_cols_term(s, 1, r, c);
    }
}

/* thread t's columns of block b's part: part[b, 0, c] dw's, part[b, 1, c] db's */
CE_FN void ce_lnb_thread_write(const ce_cols_t *s, long long b, int t, const double *acc) {
  for (int c = t; c < s->cols; c += CE_LNB_THREADS) {
    CE_STORE(s->part, (b * 2 + 0) * s->cols + c, acc[c]);
    CE_STORE(s->part, (b * 2 + 1) * s->cols + c, acc[s->cols + c]);
  }
}

#endif
