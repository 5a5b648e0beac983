// Batch-norm kernels of the CUDA backend (backend.h: bn_stats .. bn_bwd) over x (N, C, HW): the
// per-channel sums run one block per channel, each thread over a fixed stride of the channel's
// N*HW values in double, then the block's partials added in a fixed tree (the same inputs give the
// same bits); the per-element arithmetic is cuda_elem.h's. And the elementwise product (dropout).
#include "backend/cuda_kern.cuh"

using namespace cuk;

namespace {

// Element j of channel c's N*HW values.
__device__ inline size_t bn_at(int C, int HW, int c, size_t j) {
  return ((j / (size_t)HW) * (size_t)C + (size_t)c) * (size_t)HW + j % (size_t)HW;
}

// The sum of v over the block's kThreads threads, on every thread (sh: kThreads doubles).
__device__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int o = kThreads / 2; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
    __syncthreads();
  }
  double s = sh[0];
  __syncthreads();
  return s;
}

// The gradient the normalisation sees: dy, masked where the fused ReLU's output is 0.
__device__ inline float bn_g(const float *dy, const float *relu_y, size_t k) {
  return relu_y && !(relu_y[k] > 0.0f) ? 0.0f : dy[k];
}

}  // namespace

__global__ void k_bn_stats(int N, int C, int HW, const float *x, float *part) {
  __shared__ double sh[kThreads];
  const int c = blockIdx.x;
  const size_t n = (size_t)N * HW;
  double s = 0.0;
  for (size_t j = threadIdx.x; j < n; j += kThreads) s += x[bn_at(C, HW, c, j)];
  const double mean = block_sum(s, sh) / (double)n;
  double s2 = 0.0;
  for (size_t j = threadIdx.x; j < n; j += kThreads) {
    double d = x[bn_at(C, HW, c, j)] - mean;
    s2 += d * d;
  }
  s2 = block_sum(s2, sh);
  if (threadIdx.x == 0) {
    part[1 + c] = (float)mean;
    part[1 + C + c] = (float)(mean - (double)(float)mean);
    part[1 + 2 * C + c] = (float)s2;
    if (c == 0) part[0] = (float)n;
  }
}

__global__ void k_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running, float *stats) {
  for (size_t c = first_index(); c < (size_t)C; c += grid_stride())
    ce_bn_finish((int)c, C, R, parts, eps, momentum, running, stats);
}

__global__ void k_bn_fwd(size_t n, int C, int HW, const float *x, const float *stats, const float *w, const float *b,
                         int relu, float *y) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    int c = (int)((i / (size_t)HW) % (size_t)C);
    y[i] = ce_bn_y(x[i], stats[c], stats[C + c], w[c], b[c], relu);
  }
}

__global__ void k_bn_bwd_sums(int N, int C, int HW, const float *x, const float *stats, const float *dy,
                              const float *relu_y, float *part) {
  __shared__ double sh[kThreads];
  const int c = blockIdx.x;
  const size_t n = (size_t)N * HW;
  double sg = 0.0, sgx = 0.0;
  for (size_t j = threadIdx.x; j < n; j += kThreads) {
    size_t k = bn_at(C, HW, c, j);
    double g = bn_g(dy, relu_y, k);
    sg += g;
    sgx += g * ((double)x[k] - stats[c]);
  }
  sg = block_sum(sg, sh);
  sgx = block_sum(sgx, sh);
  if (threadIdx.x == 0) {
    part[c] = (float)sg;
    part[C + c] = (float)(sgx * stats[C + c]);
  }
}

__global__ void k_bn_bwd(size_t n, int C, int HW, double M, const float *x, const float *stats, const float *w,
                         const float *dy, const float *relu_y, const float *sums, float *dx, int dx_write) {
  for (size_t i = first_index(); i < n; i += grid_stride()) {
    int c = (int)((i / (size_t)HW) % (size_t)C);
    float rstd = stats[C + c], xhat = (x[i] - stats[c]) * rstd;
    float d = ce_bn_dx(bn_g(dy, relu_y, i), xhat, w[c], rstd, (float)(sums[c] / M), (float)(sums[C + c] / M));
    dx[i] = dx_write ? d : dx[i] + d;
  }
}

__global__ void k_mul(size_t n, const float *a, const float *b, float *y, int acc) {
  for (size_t i = first_index(); i < n; i += grid_stride()) y[i] = acc ? y[i] + a[i] * b[i] : a[i] * b[i];
}

extern "C" void cuk_bn_stats(int N, int C, int HW, const float *x, float *part, cudaStream_t s) {
  if (C <= 0 || (long)N * HW <= 0) return;
  k_bn_stats<<<C, kThreads, 0, s>>>(N, C, HW, x, part);
  CUK_LAUNCHED("bn_stats");
}

extern "C" void cuk_bn_finish(int C, int R, const float *parts, float eps, float momentum, float *running, float *stats,
                              cudaStream_t s) {
  if (C <= 0) return;
  k_bn_finish<<<blocks_for((size_t)C), kThreads, 0, s>>>(C, R, parts, eps, momentum, running, stats);
  CUK_LAUNCHED("bn_finish");
}

extern "C" void cuk_bn_fwd(int N, int C, int HW, const float *x, const float *stats, const float *w, const float *b,
                           int relu, float *y, cudaStream_t s) {
  size_t n = (size_t)N * C * HW;
  if (!n) return;
  k_bn_fwd<<<blocks_for(n), kThreads, 0, s>>>(n, C, HW, x, stats, w, b, relu, y);
  CUK_LAUNCHED("bn_fwd");
}

extern "C" void cuk_bn_bwd_sums(int N, int C, int HW, const float *x, const float *stats, const float *dy,
                                const float *relu_y, float *part, cudaStream_t s) {
  if (C <= 0 || (long)N * HW <= 0) return;
  k_bn_bwd_sums<<<C, kThreads, 0, s>>>(N, C, HW, x, stats, dy, relu_y, part);
  CUK_LAUNCHED("bn_bwd_sums");
}

extern "C" void cuk_bn_bwd(int N, int C, int HW, double M, const float *x, const float *stats, const float *w,
                           const float *dy, const float *relu_y, const float *sums, float *dx, int dx_write,
                           cudaStream_t s) {
  size_t n = (size_t)N * C * HW;
  if (!n) return;
  k_bn_bwd<<<blocks_for(n), kThreads, 0, s>>>(n, C, HW, M, x, stats, w, dy, relu_y, sums, dx, dx_write);
  CUK_LAUNCHED("bn_bwd");
}

extern "C" void cuk_mul(size_t n, const float *a, const float *b, float *y, int acc, cudaStream_t s) {
  if (!n) return;
  k_mul<<<blocks_for(n), kThreads, 0, s>>>(n, a, b, y, acc);
  CUK_LAUNCHED("mul");
}
