// Reductions of the CUDA backend: column sums of matrices (bias, weight and position gradients,
// blocks of a long GEMM), row sums, whole-vector sums. Every sum runs in double over a fixed split
// (chunks of rows, then the chunks in order), so its rounding does not grow with the rows and the
// same inputs give the same bits; the result is rounded to float once, when it is added to its
// output (cuk_add_acc).
#include "backend/cuda_kern.cuh"

using namespace cuk;

namespace {

constexpr int kColTile = 32;      // columns per block of a column sum (one per lane: coalesced rows)
constexpr int kColRows = 8;       // threads down the rows of a column-sum block
constexpr long kChunkRows = 256;  // rows per chunk, at least
constexpr long kTargetBlocks = 1024;

// Chunks of a column sum over `rows` rows when `col_blocks` blocks cover the columns.
long col_chunks(long rows, int cols) {
  long col_blocks = (cols + kColTile - 1) / kColTile;
  long most = kTargetBlocks / col_blocks;
  if (most < 1) most = 1;
  long want = (rows + kChunkRows - 1) / kChunkRows;
  long n = want < most ? want : most;
  return n < 1 ? 1 : n;
}

// part[chunk, k*cols + c] for k < nterms: the sums over the chunk's rows of term(k, r, c). One block:
// kColTile columns x one chunk; its kColRows threads per column add their rows, then thread row 0
// adds the kColRows partials in order.
template <int NTERMS, typename Term>
__global__ void k_col_part(long rows, int cols, long rows_per_chunk, Term term, double *part) {
  __shared__ double sh[NTERMS][kColRows][kColTile + 1];
  int c = blockIdx.x * kColTile + threadIdx.x;
  long r0 = (long)blockIdx.y * rows_per_chunk, r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  double acc[NTERMS];
  for (int k = 0; k < NTERMS; k++) acc[k] = 0.0;
  if (c < cols)
    for (long r = r0 + threadIdx.y; r < r1; r += kColRows)
      for (int k = 0; k < NTERMS; k++) acc[k] += term(k, r, c);
  for (int k = 0; k < NTERMS; k++) sh[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < cols)
    for (int k = 0; k < NTERMS; k++) {
      double s = 0.0;
      for (int j = 0; j < kColRows; j++) s += sh[k][j][threadIdx.x];
      part[((long)blockIdx.y * NTERMS + k) * cols + c] = s;
    }
}

constexpr int kMaxTerms = 2;
struct Accumulators {  // passed by value: the kernel's own copy of the output pointers
  double *p[kMaxTerms];
};

// acc.p[k][c] += the chunks' sums in order, for nterms accumulators of cols each.
__global__ void k_col_final(const double *part, long chunks, int nterms, int cols, Accumulators acc) {
  for (size_t i = first_index(); i < (size_t)nterms * cols; i += grid_stride()) {
    int k = (int)(i / (size_t)cols), c = (int)(i % (size_t)cols);
    double s = 0.0;
    for (long j = 0; j < chunks; j++) s += part[(j * nterms + k) * cols + c];
    acc.p[k][c] += s;
  }
}

template <typename T>
struct MatrixTerm {  // x[r*ld + c]
  const T *x;
  long ld;
  __device__ double operator()(int, long r, int c) const { return (double)x[r * ld + c]; }
};

struct LayerNormTerm {  // k = 0: dy xhat; k = 1: dy, row r of (N*rows, C) with its sample's stats
  const float *x, *stats, *dy;
  int rows, C;
  __device__ double operator()(int k, long r, int c) const {
    float g = dy[r * C + c];
    if (k == 1) return (double)g;
    const float *st = stats + (r / rows) * 2 * rows;
    float mean = st[r % rows], rstd = st[rows + r % rows];
    return (double)g * ((double)x[r * C + c] - mean) * rstd;
  }
};

// Column sums of NTERMS terms over rows, added to acc.p[0..NTERMS) (device arrays of cols doubles).
template <int NTERMS, typename Term>
void col_sums(long rows, int cols, Term term, Accumulators acc, cudaStream_t s, const char *what) {
  static_assert(NTERMS <= kMaxTerms, "more terms than accumulators");
  if (rows <= 0 || cols <= 0) return;
  long chunks = col_chunks(rows, cols), per = (rows + chunks - 1) / chunks;
  double *part = (double *)cuda_workspace(CUDA_WS_RED, (size_t)chunks * NTERMS * cols * sizeof(double));
  dim3 grid((unsigned)((cols + kColTile - 1) / kColTile), (unsigned)chunks), block(kColTile, kColRows);
  k_col_part<NTERMS><<<grid, block, 0, s>>>(rows, cols, per, term, part);
  CUK_LAUNCHED(what);
  k_col_final<<<blocks_for((size_t)NTERMS * cols), kThreads, 0, s>>>(part, chunks, NTERMS, cols, acc);
  CUK_LAUNCHED(what);
}

// Block-wide sum of v (blockDim.x a multiple of 32, at most 1024); the result in every thread.
__device__ double block_sum(double v) {
  __shared__ double sh[32];
  __shared__ double total;
  v = warp_sum(v);
  if (lane() == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    int warps = (int)(blockDim.x >> 5);
    double w = (int)threadIdx.x < warps ? sh[threadIdx.x] : 0.0;
    w = warp_sum(w);
    if (threadIdx.x == 0) total = w;
  }
  __syncthreads();
  return total;
}

constexpr int kSumBlocks = 1024;

// part[b] = the sum over block b's share of f(i), i < n: block b takes i = b*T + t + k*blocks*T.
template <typename F>
__global__ void k_sum_part(size_t n, F f, double *part) {
  double acc = 0.0;
  for (size_t i = first_index(); i < n; i += grid_stride()) acc += f(i);
  double s = block_sum(acc);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
__global__ void k_sum_final(const double *part, int nparts, double *out) {
  double acc = 0.0;
  for (int i = (int)threadIdx.x; i < nparts; i += (int)blockDim.x) acc += part[i];
  double s = block_sum(acc);
  if (threadIdx.x == 0) *out = s;
}

template <typename F>
void whole_sum(size_t n, F f, double *out, cudaStream_t s, const char *what) {
  unsigned blocks = blocks_for(n);
  if (blocks > (unsigned)kSumBlocks) blocks = kSumBlocks;
  double *part = (double *)cuda_workspace(CUDA_WS_RED, blocks * sizeof(double));
  k_sum_part<<<blocks, kThreads, 0, s>>>(n, f, part);
  CUK_LAUNCHED(what);
  k_sum_final<<<1, kThreads, 0, s>>>(part, (int)blocks, out);
  CUK_LAUNCHED(what);
}

struct SquareTerm {
  const float *x;
  __device__ double operator()(size_t i) const { return (double)x[i] * x[i]; }
};
struct ProductTerm {
  const float *x, *y;
  __device__ double operator()(size_t i) const { return (double)x[i] * y[i]; }
};
struct DoubleTerm {
  const double *x;
  __device__ double operator()(size_t i) const { return x[i]; }
};

}  // namespace

extern "C" void cuk_colsum_acc(const float *x, long rows, int cols, long ld, double *acc, cudaStream_t s) {
  col_sums<1>(rows, cols, MatrixTerm<float>{x, ld}, Accumulators{{acc, nullptr}}, s, "column sums");
}

extern "C" void cuk_colsum_acc_d(const double *x, long rows, int cols, long ld, double *acc, cudaStream_t s) {
  col_sums<1>(rows, cols, MatrixTerm<double>{x, ld}, Accumulators{{acc, nullptr}}, s, "column sums");
}

extern "C" void cuk_layernorm_param_acc(long nrows, int rows, int C, const float *x, const float *stats,
                                        const float *dy, double *dw_acc, double *db_acc, cudaStream_t s) {
  col_sums<2>(nrows, C, LayerNormTerm{x, stats, dy, rows, C}, Accumulators{{dw_acc, db_acc}}, s,
              "layernorm parameter gradients");
}

// out[r] = sum of row r (len floats), one warp per row
__global__ void k_rowsum(const float *x, long rows, int len, double *out) {
  long r = warp_row();
  if (r >= rows) return;
  double acc = 0.0;
  for (int j = lane(); j < len; j += 32) acc += x[r * len + j];
  acc = warp_sum(acc);
  if (lane() == 0) out[r] = acc;
}

extern "C" void cuk_rowsum(const float *x, long rows, int len, double *out, cudaStream_t s) {
  if (rows <= 0) return;
  k_rowsum<<<row_blocks(rows), kRowWarps * 32, 0, s>>>(x, rows, len, out);
  CUK_LAUNCHED("row sums");
}

__global__ void k_add_acc(const double *acc, size_t n, int cols, float *out, long ld) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    float *o = out + (long)(i / (size_t)cols) * ld + (long)(i % (size_t)cols);
    *o = (float)((double)*o + acc[i]);
  }
}

extern "C" void cuk_add_acc(const double *acc, long rows, int cols, float *out, long ld, cudaStream_t s) {
  size_t n = (size_t)rows * cols;
  if (!n) return;
  k_add_acc<<<blocks_for(n), kThreads, 0, s>>>(acc, n, cols, out, ld);
  CUK_LAUNCHED("add sums");
}

extern "C" void cuk_sum_d(const double *x, long n, double *out, cudaStream_t s) {
  whole_sum((size_t)(n > 0 ? n : 0), DoubleTerm{x}, out, s, "sum");
}

extern "C" void cuk_sumsq(const float *x, size_t n, double *out, cudaStream_t s) {
  whole_sum(n, SquareTerm{x}, out, s, "sumsq");
}

extern "C" void cuk_dot(const float *x, const float *y, size_t n, double *out, cudaStream_t s) {
  whole_sum(n, ProductTerm{x, y}, out, s, "dot");
}

// Modified Gram-Schmidt of one row-major (n, r) matrix per block (backend.h's orthonormalize): the
// matrix is copied to w (doubles, the same layout), its columns made orthonormal there one after
// the other with block-wide double sums, and written back as float.
__global__ void k_orthonormalize(int n, int r, float *P, size_t sP, double *work) {
  float *m = P + blockIdx.x * sP;
  double *w = work + (size_t)blockIdx.x * n * r;
  size_t nr = (size_t)n * r;
  for (size_t i = threadIdx.x; i < nr; i += blockDim.x) w[i] = m[i];
  __syncthreads();
  for (int c = 0; c < r; c++) {
    double ss = 0.0;
    for (int row = threadIdx.x; row < n; row += blockDim.x) ss += w[(size_t)row * r + c] * w[(size_t)row * r + c];
    double inv = 1.0 / (sqrt(block_sum(ss)) + 1e-8);
    for (int row = threadIdx.x; row < n; row += blockDim.x) w[(size_t)row * r + c] *= inv;
    __syncthreads();
    for (int j = c + 1; j < r; j++) {
      double d = 0.0;
      for (int row = threadIdx.x; row < n; row += blockDim.x) d += w[(size_t)row * r + c] * w[(size_t)row * r + j];
      d = block_sum(d);
      for (int row = threadIdx.x; row < n; row += blockDim.x) w[(size_t)row * r + j] -= d * w[(size_t)row * r + c];
      __syncthreads();
    }
  }
  for (size_t i = threadIdx.x; i < nr; i += blockDim.x) m[i] = (float)w[i];
}

extern "C" void cuk_orthonormalize(int batch, int n, int r, float *P, size_t sP, double *work, cudaStream_t s) {
  if (batch <= 0 || n <= 0 || r <= 0) return;
  k_orthonormalize<<<batch, kThreads, 0, s>>>(n, r, P, sP, work);
  CUK_LAUNCHED("orthonormalize");
}

__global__ void k_any_nonfinite(const float *x, size_t n, int *flag) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    if (!isfinite(x[i])) *flag = 1; /* every writer writes 1: the result does not depend on order */
}

extern "C" void cuk_any_nonfinite(const float *x, size_t n, int *flag, cudaStream_t s) {
  if (!n) return;
  k_any_nonfinite<<<blocks_for(n), kThreads, 0, s>>>(x, n, flag);
  CUK_LAUNCHED("all_finite");
}

// One block per row v of the table: each thread owns channels c, tid + k*blockDim, and walks every
// position in order, adding dy where the position's token is lo + v.
__global__ void k_embed_bwd_wte(long bt, int C, const float *idx, int lo, int V, const float *dy, float *dwte) {
  int v = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    double acc = 0.0;
    int used = 0;
    for (long i = 0; i < bt; i++)
      if (ce_embed_row(idx[i], lo, V) == v) acc += dy[i * C + c], used = 1;
    if (used) dwte[(long)v * C + c] = (float)((double)dwte[(long)v * C + c] + acc);
  }
}

extern "C" void cuk_embed_bwd_wte(int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte,
                                  cudaStream_t s) {
  if (V <= 0 || C <= 0 || (long)B * T <= 0) return;
  int threads = C < kThreads ? ((C + 31) / 32) * 32 : kThreads;
  k_embed_bwd_wte<<<(unsigned)V, threads, 0, s>>>((long)B * T, C, idx, lo, V, dy, dwte);
  CUK_LAUNCHED("embed_bwd");
}
