/* The tensor-core product of the fused attention's bf16 kernels (cuda_attention_tiles.h, form
 * FA_BF16): one warp's 16 x 16 tile
 *   C (float, row-major at stride ldc) = or += A (16 x k) B (k x 16),
 * A and B bfloat16 in shared memory, each row- or column-major (so the transposes the backward
 * needs, K^T, P^T and dS^T, are a choice of load, not a copy).
 *
 * On the GPU (sm_80 and later) it is WMMA's m16n16k16 bf16 fragments with float accumulation:
 * load_matrix_sync, mma_sync, store_matrix_sync, so the fragments' register layouts never matter
 * to the code. On the host (tests/test_cuda_attention) a loop over the same operands: bfloat16
 * values (rounded where the kernels store them, as __float2bfloat16 rounds: to nearest, ties to
 * even), their products exact in float, sums in float in k order. The tensor cores' order within a
 * step of 16 is theirs, so the GPU's sums may differ from the host's in float's last bits, far
 * inside the bf16 tolerance the tests apply.
 *
 * WMMA's rules (CUDA C++ Programming Guide, "Warp Matrix Functions"): every lane of the warp calls
 * with the same arguments; pointers 256-bit (32-byte) aligned; ldm a multiple of 8 elements for
 * 16-bit types and of 4 for float; k a multiple of 16 here. The host form hands each rule to
 * FA_MMA_CHECK(cond), which the harness defines to count the ones broken (default: nothing). */
#ifndef SURGE_BACKEND_CUDA_ATTENTION_MMA_H
#define SURGE_BACKEND_CUDA_ATTENTION_MMA_H

#include <stdint.h>

#include "backend/cuda_elem.h"

#ifndef FA_MMA_CHECK
#define FA_MMA_CHECK(ok) ((void)0)
#endif

enum { FA_MMA = 16 }; /* a tile's rows, columns and the k of one step */

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <mma.h>

#include <type_traits>
typedef __nv_bfloat16 fa_bf16;
#else
#include "core/bf16.h"
typedef uint16_t fa_bf16; /* the bits of a bfloat16 */

/* x rounded to bfloat16 as __float2bfloat16 does (core/bf16.h) */
static inline uint16_t fa_bf16_round(float x) { return bf16_bits(x); }
#endif

CE_FN fa_bf16 fa_to_bf16(float x) {
#ifdef __CUDACC__
  return __float2bfloat16(x);
#else
  return fa_bf16_round(x);
#endif
}

CE_FN float fa_from_bf16(fa_bf16 h) {
#ifdef __CUDACC__
  return __bfloat162float(h);
#else
  return bf16_value(h);
#endif
}

/* x as the bf16 products read it: rounded to bfloat16, as a float */
CE_FN float fa_bf16_value(float x) { return fa_from_bf16(fa_to_bf16(x)); }

#if defined(__CUDACC__) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
/* The device form, layouts as template arguments (WMMA's fragments are typed by them). */
template <bool ACol, bool BCol>
__device__ inline void fa_wmma(float *c, int ldc, const fa_bf16 *a, int lda, const fa_bf16 *b, int ldb, int k,
                               int add) {
  using namespace nvcuda;
  typedef typename std::conditional<ACol, wmma::col_major, wmma::row_major>::type LayoutA;
  typedef typename std::conditional<BCol, wmma::col_major, wmma::row_major>::type LayoutB;
  wmma::fragment<wmma::accumulator, FA_MMA, FA_MMA, FA_MMA, float> acc;
  if (add) wmma::load_matrix_sync(acc, c, (unsigned)ldc, wmma::mem_row_major);
  else wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += FA_MMA) {
    wmma::fragment<wmma::matrix_a, FA_MMA, FA_MMA, FA_MMA, __nv_bfloat16, LayoutA> fa;
    wmma::fragment<wmma::matrix_b, FA_MMA, FA_MMA, FA_MMA, __nv_bfloat16, LayoutB> fb;
    wmma::load_matrix_sync(fa, a + (ACol ? (long)kk * lda : kk), (unsigned)lda);
    wmma::load_matrix_sync(fb, b + (BCol ? kk : (long)kk * ldb), (unsigned)ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c, acc, (unsigned)ldc, wmma::mem_row_major);
}
#endif

/* C (16 x 16 at c, stride ldc) = (add 0) or += (add 1) A B over k: A(x, i) at a[x lda + i]
 * (a_col: a[i lda + x]), B(i, y) at b[i ldb + y] (b_col: b[y ldb + i]). One warp, every lane. */
CE_FN void fa_mma(float *c, int ldc, const fa_bf16 *a, int lda, int a_col, const fa_bf16 *b, int ldb, int b_col, int k,
                  int add) {
#ifdef __CUDA_ARCH__
#if __CUDA_ARCH__ >= 800
  if (a_col) {
    if (b_col) fa_wmma<true, true>(c, ldc, a, lda, b, ldb, k, add);
    else fa_wmma<true, false>(c, ldc, a, lda, b, ldb, k, add);
  } else {
    if (b_col) fa_wmma<false, true>(c, ldc, a, lda, b, ldb, k, add);
    else fa_wmma<false, false>(c, ldc, a, lda, b, ldb, k, add);
  }
#else
  __trap(); /* bf16 fragments need sm_80: the launcher never runs these kernels below it */
#endif
#else
  FA_MMA_CHECK((uintptr_t)c % 32 == 0 && (uintptr_t)a % 32 == 0 && (uintptr_t)b % 32 == 0);
  FA_MMA_CHECK(ldc % 4 == 0 && lda % 8 == 0 && ldb % 8 == 0 && k % FA_MMA == 0 && k > 0);
  for (int x = 0; x < FA_MMA; x++)
    for (int y = 0; y < FA_MMA; y++) {
      float sum = add ? c[x * ldc + y] : 0.0f;
      for (int i = 0; i < k; i++)
        sum += fa_from_bf16(a_col ? a[i * lda + x] : a[x * lda + i]) *
               fa_from_bf16(b_col ? b[y * ldb + i] : b[i * ldb + y]);
      c[x * ldc + y] = sum;
    }
#endif
}

#endif
