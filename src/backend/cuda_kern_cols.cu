// Column sums of the CUDA backend (bias gradients, layer norm's parameter gradients, GELU's
// backward with its bias gradient, the position embedding's gradient, the blocks of a long GEMM):
// cuda_cols.h's two kernels, a pass over the rows into double parts per chunk of rows, then the
// chunks added in order and rounded once into the output (no zeroed accumulator, no separate add:
// two launches where there were four).
#include "backend/cuda_kern.cuh"
#include "backend/cuda_cols.h"

using namespace cuk;

namespace {

static_assert(CE_COL_TILE == 32, "a column tile is one warp's lanes");

__global__ void k_cols_parts(ce_cols_t s) {
  __shared__ double sh[CE_COLS_SHARED];
  ce_cols_thread_sums(&s, blockIdx.x, blockIdx.y, (int)threadIdx.x, (int)threadIdx.y, sh);
  __syncthreads();
  if (threadIdx.y == 0) ce_cols_block_write(&s, blockIdx.x, blockIdx.y, (int)threadIdx.x, sh);
}

__global__ void k_cols_finish(ce_cols_t s) {
  for (size_t i = first_index(); i < (size_t)s.nterms * s.cols; i += grid_stride()) ce_cols_finish(&s, (long long)i);
}

// The sums s describes (its kind, terms, shape and outputs set), both kernels on the stream.
void cols_run(ce_cols_t s, cudaStream_t st, const char *what) {
  if (s.rows <= 0 || s.cols <= 0) return;
  ce_cols_split(&s);
  s.part = (double *)cuda_workspace(CUDA_WS_RED, (size_t)s.chunks * s.nterms * s.cols * sizeof(double));
  dim3 grid((unsigned)ce_cols_tiles(&s), (unsigned)s.chunks), block(CE_COL_TILE, CE_COL_ROWS);
  k_cols_parts<<<grid, block, 0, st>>>(s);
  CUK_LAUNCHED(what);
  cuk_cols_finish(&s, st);
}

// A one-term sum of a matrix (rows, cols), row r at r ld, into out (rows of ocols, ld_out apart) or acc.
ce_cols_t matrix_sum(int kind, long rows, int cols, long ld, float *out, int ocols, long ld_out, double *acc) {
  ce_cols_t s = {};
  s.kind = kind, s.nterms = 1, s.rows = rows, s.cols = cols, s.ld = ld;
  s.out[0] = out, s.acc[0] = acc, s.ocols = ocols, s.ld_out = ld_out;
  return s;
}

}  // namespace

void cuk_cols_finish(const ce_cols_t *s, cudaStream_t st) {
  k_cols_finish<<<blocks_for((size_t)s->nterms * s->cols), kThreads, 0, st>>>(*s);
  CUK_LAUNCHED("column sums (finish)");
}

extern "C" void cuk_colsum_acc(const float *x, long rows, int cols, long ld, double *acc, cudaStream_t st) {
  ce_cols_t s = matrix_sum(CE_COLS_MATRIX, rows, cols, ld, nullptr, cols, cols, acc);
  s.a = x;
  cols_run(s, st, "column sums");
}

extern "C" void cuk_colsum_add(const float *x, long rows, int cols, long ld, float *out, int ocols, long ld_out,
                               cudaStream_t st) {
  ce_cols_t s = matrix_sum(CE_COLS_MATRIX, rows, cols, ld, out, ocols, ld_out, nullptr);
  s.a = x;
  cols_run(s, st, "column sums");
}

extern "C" void cuk_colsum_add_d(const double *x, long rows, int cols, long ld, float *out, cudaStream_t st) {
  ce_cols_t s = matrix_sum(CE_COLS_MATRIX_D, rows, cols, ld, out, cols, cols, nullptr);
  s.ad = x;
  cols_run(s, st, "column sums");
}

extern "C" void cuk_layernorm_params(long nrows, int rows, int C, const float *x, const float *stats, const float *dy,
                                     float *dw, float *db, cudaStream_t st) {
  ce_cols_t s = {};
  s.kind = CE_COLS_LAYERNORM, s.nterms = 2, s.rows = nrows, s.cols = C, s.per = rows;
  s.a = dy, s.b = x, s.stats = stats, s.out[0] = dw, s.out[1] = db, s.ocols = C, s.ld_out = C;
  cols_run(s, st, "layernorm parameter gradients");
}

extern "C" void cuk_gelu_bias_bwd(int rows, int cols, const float *pre, const float *dy, float *dpre, float *db,
                                  cudaStream_t st) {
  ce_cols_t s = {};
  s.kind = CE_COLS_GELU, s.nterms = 1, s.rows = rows, s.cols = cols;
  s.a = dy, s.b = pre, s.store = dpre, s.out[0] = db, s.ocols = cols, s.ld_out = cols;
  cols_run(s, st, "gelu_bias_bwd");
}
