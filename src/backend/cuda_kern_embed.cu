// The embedding gradient of the CUDA backend by positions sorted by token (cuda_embed.h): the keys
// (row, position) sorted by a bitonic network (a shared-memory launch per stage's short steps, a
// global launch per long step), then one block per sorted position, the first of each token's run
// adding the run's rows of dy into its row of dwte in position order: ref's sums, bit for bit,
// with work in proportion to the positions instead of positions x vocabulary.
#include "backend/cuda_kern.cuh"
#include "backend/cuda_embed.h"

using namespace cuk;

namespace {

__global__ void k_sort_local(ce_sort_plan_t p, const float *idx, long long n, int lo, int V, unsigned long long *key) {
  __shared__ unsigned long long sh[CE_SORT_LOCAL];
  const long long b = blockIdx.x;
  const int t = (int)threadIdx.x;
  ce_sort_local_load(&p, b, t, key, idx, n, lo, V, sh);
  __syncthreads();
  for (long long k = p.k_first; k <= p.k; k <<= 1)
    for (long long j = ce_sort_local_first_j(&p, k); j > 0; j >>= 1) {
      ce_sort_local_step(&p, b, t, k, j, sh);
      __syncthreads();
    }
  ce_sort_local_store(&p, b, t, sh, key);
}

__global__ void k_sort_global(long long pairs, long long k, long long j, unsigned long long *key) {
  for (size_t t = first_index(); t < (size_t)pairs; t += grid_stride()) ce_sort_global_step(key, (long long)t, k, j);
}

__global__ void k_embed_runs(const unsigned long long *key, long long n, int C, const float *dy, float *dwte) {
  const long long b = blockIdx.x;
  if (ce_embed_run_starts(key, b)) ce_embed_run_add(key, b, n, C, dy, dwte, (int)threadIdx.x, (int)blockDim.x);
}

}  // namespace

extern "C" void cuk_embed_bwd_wte(int B, int T, int C, const float *idx, int lo, int V, const float *dy, float *dwte,
                                  cudaStream_t s) {
  const long long n = (long long)B * T;
  if (V <= 0 || C <= 0 || n <= 0) return;
  if (n > 0x7fffffffLL) cuda_check(cudaErrorInvalidValue, "embed_bwd: more positions than a grid of blocks holds");
  ce_sort_plan_t p = ce_sort_plan(n);
  unsigned long long *key =
      (unsigned long long *)cuda_workspace(CUDA_WS_PART, (size_t)p.n2 * sizeof(unsigned long long));
  while (ce_sort_plan_next(&p)) {
    if (p.j) {
      k_sort_global<<<blocks_for((size_t)p.n2 / 2), kThreads, 0, s>>>(p.n2 / 2, p.k, p.j, key);
    } else {
      k_sort_local<<<(unsigned)(p.n2 / p.L), (unsigned)(p.L / 2), 0, s>>>(p, idx, n, lo, V, key);
    }
    CUK_LAUNCHED("embed_bwd (sort)");
  }
  const int threads = C < kThreads ? ((C + 31) / 32) * 32 : kThreads;
  k_embed_runs<<<(unsigned)n, threads, 0, s>>>(key, n, C, dy, dwte);
  CUK_LAUNCHED("embed_bwd");
}
