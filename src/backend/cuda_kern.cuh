// Device helpers shared by the CUDA backend's kernel files: launch geometry, grid-stride loops and
// warp reductions. CUDA C++, included only by cuda_kern_*.cu.
#ifndef SURGE_BACKEND_CUDA_KERN_CUH
#define SURGE_BACKEND_CUDA_KERN_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>

#include "backend/cuda_elem.h"
#include "backend/cuda_impl.h"

namespace cuk {

constexpr int kThreads = 256;            // threads per block of elementwise kernels
constexpr int kRowWarps = 8;             // rows (one warp each) per block of row kernels
constexpr unsigned kFull = 0xffffffffu;  // every lane of a warp
constexpr long long kMaxBlocks = 1 << 20;  // grid-stride loops cover the rest

// Blocks for n elements at kThreads each, at most kMaxBlocks (at least 1).
inline unsigned blocks_for(size_t n) {
  long long b = (long long)((n + kThreads - 1) / kThreads);
  if (b < 1) b = 1;
  return (unsigned)(b < kMaxBlocks ? b : kMaxBlocks);
}

// Blocks for one warp per row.
inline unsigned row_blocks(long long rows) {
  long long b = (rows + kRowWarps - 1) / kRowWarps;
  return (unsigned)(b < 1 ? 1 : b);
}

// The first element of this thread and the stride of a grid-stride loop over n elements.
__device__ inline size_t first_index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline size_t grid_stride() { return (size_t)gridDim.x * blockDim.x; }

// This warp's row in a row kernel (kRowWarps warps per block), and this thread's lane.
__device__ inline long long warp_row() { return (long long)blockIdx.x * kRowWarps + (threadIdx.x >> 5); }
__device__ inline int lane() { return threadIdx.x & 31; }

// Sum, max and min over the 32 lanes of a warp; every lane gets the result. The tree is fixed, so
// the same inputs give the same bits.
__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
__device__ inline int warp_min_int(int v) {
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

// An attribute of the calling thread's device, asked once per thread into *cached (-1: not yet; a
// thread's device is fixed from its backend's open on, backend/cuda.c).
inline int device_attribute(cudaDeviceAttr what, int *cached, const char *name) {
  if (*cached < 0) {
    int dev = 0;
    cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
    cuda_check(cudaDeviceGetAttribute(cached, what, dev), name);
  }
  return *cached;
}

// The most dynamic shared memory a block of this thread's device may take (opting in beyond 48 KiB).
inline size_t optin_bytes() {
  static thread_local int optin = -1;
  return (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin,
                                  "cudaDeviceGetAttribute (shared memory per block)");
}

// Let kernel's blocks take up to the device's most: one value whatever the size a launch needs, so
// threads of one process (an in-process background) never lower what another one's launch needs.
// Once per thread and kernel: *done is the caller's flag for that kernel (kernels of one signature
// share a type, so the flag cannot live here).
template <typename K>
inline void allow_most_smem(K kernel, const char *name, bool *done) {
  if (*done) return;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin_bytes()), name);
  *done = true;
}

}  // namespace cuk

// Check a launch right after it: a bad configuration ends the job naming the kernel.
#define CUK_LAUNCHED(name) cuda_check_launch(name)

#endif
