/* The CUDA backend's column sums (cuda_kern_cols.cu: bias gradients, layer norm's parameter
 * gradients, GELU's backward with its bias gradient in the same pass, the position embedding's
 * gradient, the blocks of a long GEMM) as functions of (block, thread) that compile for the GPU and
 * for the host; tests/test_cuda_cols runs each kernel's whole grid on the host through them.
 *
 * A column sum over `rows` rows of `cols` columns is two kernels:
 *   parts:  grid (column tiles of CE_COL_TILE, chunks of rows), block (CE_COL_TILE, CE_COL_ROWS).
 *           Phase 1: thread (tx, ty) adds, in double, the terms of column tile*CE_COL_TILE + tx over
 *           the chunk's rows ty, ty + CE_COL_ROWS, ...; phase 2 (after the block's barrier): thread
 *           row 0 adds the CE_COL_ROWS sums of its column in order into part (chunks, nterms, cols).
 *   finish: one thread per (term, column) adds the chunks' parts in order and rounds once into its
 *           output: out += (float), or a double accumulator +=.
 * Every sum has a fixed split and order (ce_cols_split depends only on the shape), so the same inputs
 * give the same bits whatever the blocks' timing, and the error does not grow with the rows. Every
 * store goes through CE_STORE (cuda_rows.h). */
#ifndef SURGE_BACKEND_CUDA_COLS_H
#define SURGE_BACKEND_CUDA_COLS_H

#include "backend/cuda_rows.h"

enum {
  CE_COL_TILE = 32,      /* columns per block: one per lane, so a warp reads 32 neighbours of a row */
  CE_COL_ROWS = 8,       /* threads down the rows of a block */
  CE_COL_TERMS = 2,      /* the most terms one sum carries (layer norm: dy xhat, dy) */
  CE_COL_CHUNK = 256,    /* rows per chunk, at least */
  CE_COL_BLOCKS = 1024   /* blocks a parts grid aims at */
};

/* What is summed: term k of row r, column c. */
typedef enum {
  CE_COLS_MATRIX,    /* a[r ld + c] */
  CE_COLS_MATRIX_D,  /* ad[r ld + c] (doubles) */
  CE_COLS_LAYERNORM, /* k = 0: dy xhat, k = 1: dy; dy = a (rows, cols), x = b, stats of samples of `per` rows */
  CE_COLS_GELU       /* dpre = dy gelu'(pre), dy = a, pre = b (rows, cols): stored into `store`, and summed */
} ce_cols_kind_t;

typedef struct ce_cols {
  int kind, nterms, cols, per;
  long long rows, ld;
  const float *a, *b, *stats;
  const double *ad;
  float *store;
  /* the split (ce_cols_split) and the parts (chunks, nterms, cols) */
  long long chunks, rows_per_chunk;
  double *part;
  /* the outputs of term k: acc[k] += the sum (a double accumulator), or, acc[k] NULL,
   * out[k][(c / ocols) ld_out + c % ocols] = (float)(that + the sum) */
  float *out[CE_COL_TERMS];
  double *acc[CE_COL_TERMS];
  int ocols;
  long long ld_out;
} ce_cols_t;

/* Chunks of rows: about CE_COL_BLOCKS blocks over the column tiles, each chunk CE_COL_CHUNK rows at
 * least; fills s->chunks and s->rows_per_chunk from s->rows and s->cols. */
CE_FN void ce_cols_split(ce_cols_t *s) {
  long long tiles = (s->cols + CE_COL_TILE - 1) / CE_COL_TILE, most = CE_COL_BLOCKS / tiles;
  long long want = (s->rows + CE_COL_CHUNK - 1) / CE_COL_CHUNK, n = want < most ? want : most;
  s->chunks = n < 1 ? 1 : n;
  s->rows_per_chunk = (s->rows + s->chunks - 1) / s->chunks;
}

CE_FN long long ce_cols_tiles(const ce_cols_t *s) { return (s->cols + CE_COL_TILE - 1) / CE_COL_TILE; }

/* Term k of row r, column c (the GELU term also stores dpre: call it once per element). */
CE_FN double ce_cols_term(const ce_cols_t *s, int k, long long r, int c) {
  switch (s->kind) {
  case CE_COLS_MATRIX: return (double)s->a[r * s->ld + c];
  case CE_COLS_MATRIX_D: return s->ad[r * s->ld + c];
  case CE_COLS_LAYERNORM: {
    const float g = s->a[r * s->cols + c];
    if (k == 1) return (double)g;
    const float mean = s->stats[ce_stat_at(r, s->per)], rstd = s->stats[ce_stat_at(r, s->per) + s->per];
    return (double)g * ((double)s->b[r * s->cols + c] - mean) * rstd;
  }
  default: { /* CE_COLS_GELU */
    const long long i = r * s->cols + c;
    const float d = s->a[i] * ce_gelu_grad(s->b[i]);
    CE_STORE(s->store, i, d);
    return (double)d;
  }
  }
}

/* The block's shared partials: sh[(k CE_COL_ROWS + ty) (CE_COL_TILE + 1) + tx] (a padded row: no bank
 * conflicts when thread row 0 reads down a column). */
enum { CE_COLS_SHARED = CE_COL_TERMS * CE_COL_ROWS * (CE_COL_TILE + 1) };
CE_FN int ce_cols_sh(int k, int ty, int tx) { return (k * CE_COL_ROWS + ty) * (CE_COL_TILE + 1) + tx; }

/* parts, phase 1: thread (tx, ty) of block (tile, chunk) writes its sums into sh. */
CE_FN void ce_cols_thread_sums(const ce_cols_t *s, long long tile, long long chunk, int tx, int ty, double *sh) {
  const int c = (int)(tile * CE_COL_TILE) + tx;
  const long long r0 = chunk * s->rows_per_chunk, end = r0 + s->rows_per_chunk;
  const long long r1 = end < s->rows ? end : s->rows;
  double acc[CE_COL_TERMS] = {0.0, 0.0};
  if (c < s->cols)
    for (long long r = r0 + ty; r < r1; r += CE_COL_ROWS)
      for (int k = 0; k < s->nterms; k++) acc[k] += ce_cols_term(s, k, r, c);
  for (int k = 0; k < s->nterms; k++) sh[ce_cols_sh(k, ty, tx)] = acc[k];
}

/* parts, phase 2 (thread row 0): the CE_COL_ROWS sums of column tile*CE_COL_TILE + tx in order, into
 * part[chunk, k, c]. */
CE_FN void ce_cols_block_write(const ce_cols_t *s, long long tile, long long chunk, int tx, const double *sh) {
  const int c = (int)(tile * CE_COL_TILE) + tx;
  if (c >= s->cols) return;
  for (int k = 0; k < s->nterms; k++) {
    double sum = 0.0;
    for (int j = 0; j < CE_COL_ROWS; j++) sum += sh[ce_cols_sh(k, j, tx)];
    CE_STORE(s->part, (chunk * s->nterms + k) * s->cols + c, sum);
  }
}

/* finish, element i < nterms cols (term i / cols, column i % cols): the chunks in order, into its
 * output. */
CE_FN void ce_cols_finish(const ce_cols_t *s, long long i) {
  const int k = (int)(i / s->cols), c = (int)(i % s->cols);
  double sum = 0.0;
  for (long long j = 0; j < s->chunks; j++) sum += s->part[(j * s->nterms + k) * s->cols + c];
  if (s->acc[k]) {
    CE_STORE(s->acc[k], c, s->acc[k][c] + sum);
  } else {
    const long long o = (long long)(c / s->ocols) * s->ld_out + c % s->ocols;
    CE_STORE(s->out[k], o, (float)((double)s->out[k][o] + sum));
  }
}

#ifdef __CUDACC__
/* The finish kernel over s's parts (s->chunks of them) on stream st (cuda_kern_cols.cu), for the
 * kernels elsewhere that write their column sums' parts themselves (layer norm's backward). */
void cuk_cols_finish(const ce_cols_t *s, cudaStream_t st);
#endif

#endif
