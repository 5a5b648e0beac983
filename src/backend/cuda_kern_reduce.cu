// Reductions of the CUDA backend (column sums: cuda_kern_cols.cu): row sums, whole-vector sums.
// Every sum runs in double over a fixed split (blocks, then the blocks in order), so its rounding
// does not grow with the length and the same inputs give the same bits; a double accumulator is
// rounded to float once, when it is added to its output (cuk_add_acc).
#include "backend/cuda_kern.cuh"
#include "backend/orth_rules.h"

using namespace cuk;

namespace {

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
// *out = the parts' sum, or *out + that sum (add: an accumulator kept on the device)
__global__ void k_sum_final(const double *part, int nparts, double *out, int add) {
  double acc = 0.0;
  for (int i = (int)threadIdx.x; i < nparts; i += (int)blockDim.x) acc += part[i];
  double s = block_sum(acc);
  if (threadIdx.x == 0) *out = add ? *out + s : s;
}

template <typename F>
void whole_sum(size_t n, F f, double *out, int add, cudaStream_t s, const char *what) {
  unsigned blocks = blocks_for(n);
  if (blocks > (unsigned)kSumBlocks) blocks = kSumBlocks;
  double *part = (double *)cuda_workspace(CUDA_WS_RED, blocks * sizeof(double));
  k_sum_part<<<blocks, kThreads, 0, s>>>(n, f, part);
  CUK_LAUNCHED(what);
  k_sum_final<<<1, kThreads, 0, s>>>(part, (int)blocks, out, add);
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

extern "C" void cuk_sum_d(const double *x, long n, double *out, int add, cudaStream_t s) {
  whole_sum((size_t)(n > 0 ? n : 0), DoubleTerm{x}, out, add, s, "sum");
}

extern "C" void cuk_sumsq(const float *x, size_t n, double *out, int add, cudaStream_t s) {
  whole_sum(n, SquareTerm{x}, out, add, s, "sumsq");
}

extern "C" void cuk_dot(const float *x, const float *y, size_t n, double *out, cudaStream_t s) {
  whole_sum(n, ProductTerm{x, y}, out, 0, s, "dot");
}

// Modified Gram-Schmidt of one row-major (n, r) matrix per block (backend.h's orthonormalize): the
// matrix is copied to w (doubles, the same layout; then its columns' squared norms as they came in,
// r more), its columns made orthonormal there one after the other with block-wide double sums, and
// written back as float.
__global__ void k_orthonormalize(int n, int r, float *P, size_t sP, double *work) {
  float *m = P + blockIdx.x * sP;
  size_t nr = (size_t)n * r;
  double *w = work + (size_t)blockIdx.x * (nr + r), *in = w + nr;
  for (size_t i = threadIdx.x; i < nr; i += blockDim.x) w[i] = m[i];
  __syncthreads();
  for (int c = 0; c < r; c++) {
    double ss = 0.0;
    for (int row = threadIdx.x; row < n; row += blockDim.x) ss += w[(size_t)row * r + c] * w[(size_t)row * r + c];
    ss = block_sum(ss);
    if (threadIdx.x == 0) in[c] = ss;
  }
  __syncthreads();
  for (int c = 0; c < r; c++) {
    double ss = 0.0;
    for (int row = threadIdx.x; row < n; row += blockDim.x) ss += w[(size_t)row * r + c] * w[(size_t)row * r + c];
    ss = block_sum(ss); // every thread's the same: the branch below is the whole block's
    if (ss <= ORTH_SUSPECT * in[c] && c < n) { // backend/orth_rules.h, run by one thread (rare)
      __shared__ double settled;
      if (threadIdx.x == 0) settled = orth_settle_column(w, n, c, (size_t)r, 1, ss, in[c]);
      __syncthreads();
      ss = settled;
    }
    double inv = 1.0 / (sqrt(ss) + 1e-8);
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
