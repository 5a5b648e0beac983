/* "cpu" backend: precision = bf16's products in bfloat16 pairs (AVX-512 BF16's VDPBF16PS: Zen 4 and
 * later, Cooper Lake, Sapphire Rapids and later): the packed GEMM, from the template written once over
 * the width (cpu_gemm_kern.h, GK_PAIRS), and the one-row product's dot products; cpu_gemm.c and
 * cpu_bf16.c run them where the CPU has the instructions. */
#include "backend/cpu_ops.h"
#if CPU_KERNELS_BUILT
#define SIMD_W 16
#define SIMD_BF16 1
#define GK_PAIRS 1
#include "backend/cpu_gemm_kern.h"

/* out[j] = sum over k of a[k] B[j ldb + k], j < N, k < K: one row times a matrix stored (N, K), in
 * bfloat16 pairs (cpu_bf16.c's one-row product where the CPU has them). Both sides converted in
 * natural order, 32 values a vector (VCVTNE2PS2BF16 puts its second operand's 16 in the low half), so
 * VDPBF16PS pairs k and k + 1 of each; the tail masked to zeros; 16 lanes added at the end. */
SIMD_TARGET void cpu_gemv_bf16_dots(int N, int K, const float *a, const float *B, int ldb, float *out) {
  static _Thread_local void *buf;
  static _Thread_local size_t cap;
  const int nv = (K + 31) / 32;
  __m512i *av = cpu_kept_buffer(&buf, &cap, (size_t)nv * sizeof *av); /* 16-byte aligned: unaligned moves */
  for (int v = 0; v < nv; v++) {
    const int n = K - 32 * v, lo = n < 16 ? n : 16, hi = n < 16 ? 0 : n - 16 < 16 ? n - 16 : 16;
    _mm512_storeu_si512(av + v, (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(simd_prefix(hi), a + 32 * v + 16),
                                                             _mm512_maskz_loadu_ps(simd_prefix(lo), a + 32 * v)));
  }
  const int full = K / 32, rest = K - 32 * full, lo = rest < 16 ? rest : 16, hi = rest < 16 ? 0 : rest - 16;
  for (int j = 0; j < N; j++) {
    const float *b = B + (size_t)j * ldb;
    vf acc = vf_zero();
    for (int v = 0; v < full; v++)
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(av + v),
                             _mm512_cvtne2ps_pbh(vf_loadu(b + 32 * v + 16), vf_loadu(b + 32 * v)));
    if (rest)
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(av + full),
                             _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(simd_prefix(hi), b + 32 * full + 16),
                                                 _mm512_maskz_loadu_ps(simd_prefix(lo), b + 32 * full)));
    out[j] = _mm512_reduce_add_ps(acc);
  }
}
#endif
