/* The 2x2 stride-2 max-pool (the zoo's pools), written once over the vector width SIMD_W of
 * cpu_simd.h and included once per width (cpu_kern_w16.c, cpu_kern_w8.c): W outputs at a time,
 * each row pair's even and odd columns split by permutes, then the same scan order and strict
 * comparisons as the general loop in cpu_conv.c (a later element wins only when strictly larger;
 * NaN never wins), as blends. The general loop's branches mispredict on real data and it ran at
 * about 4 GB/s. */
#include "backend/cpu_ops.h"
#include "backend/cpu_simd.h"

SIMD_TARGET void SIMD_NAME(cpu_maxpool_2x2)(int P, int H, int W, const float *restrict x, float *restrict y,
                                            float *restrict argmax) {
  const int OH = H / 2, OW = W / 2;
  const vi even = vi_even_lanes(), one = vi_set1(1), down = vi_set1(W), diag = vi_set1(W + 1), none = vi_set1(0);
  for (int p = 0; p < P; p++) {
    const float *plane = x + (size_t)p * H * W;
    for (int oh = 0; oh < OH; oh++, y += OW, argmax += OW) {
      const float *r0 = plane + (size_t)2 * oh * W, *r1 = r0 + W;
      for (int ow = 0; ow < OW; ow += SIMD_W) {
        const int n = OW - ow < SIMD_W ? OW - ow : SIMD_W, lo = 2 * n < SIMD_W ? 2 * n : SIMD_W, hi = 2 * n - lo;
        const vf t0 = vf_loadu_n(r0 + 2 * ow, lo), t1 = vf_loadu_n(r0 + 2 * ow + SIMD_W, hi);
        const vf u0 = vf_loadu_n(r1 + 2 * ow, lo), u1 = vf_loadu_n(r1 + 2 * ow + SIMD_W, hi);
        const vf a = vf_even(t0, t1), b = vf_odd(t0, t1), c = vf_even(u0, u1), d = vf_odd(u0, u1);
        vm g = vf_gt(b, a);
        vf best = vf_pick(g, a, b);
        vi off = vi_pick(g, none, one);
        g = vf_gt(c, best);
        best = vf_pick(g, best, c);
        off = vi_pick(g, off, down);
        g = vf_gt(d, best);
        best = vf_pick(g, best, d);
        off = vi_pick(g, off, diag);
        const vi at = vi_add(vi_add(vi_set1(2 * oh * W + 2 * ow), even), off);
        vf_storeu_n(y + ow, n, best);
        vf_storeu_n(argmax + ow, n, vf_of_vi(at));
      }
    }
  }
}
