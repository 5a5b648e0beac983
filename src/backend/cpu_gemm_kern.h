/* The cpu backend's own SGEMM, written once over the vector width SIMD_W of cpu_simd.h and included
 * once per width (cpu_kern_w16.c, cpu_kern_w8.c); cpu_gemm.c decides when it runs instead of
 * OpenBLAS. Row-major C (M,N) = alpha op(A) op(B) + beta C, op(A) (M,K), op(B) (K,N).
 *
 * BLIS's loops: columns in blocks of GK_NC, the sum over K in blocks of GK_KC, rows in blocks of
 * GK_MC. B's block (KC x NC, kept in L2/L3) is packed into strips of GK_NR columns, strip s holding
 * op(B)(k, s NR + j) at [s KC NR + k NR + j]; A's block (MC x KC, L2) into strips of GK_MR rows,
 * op(A)(s MR + r, k) at [s KC MR + k MR + r]; both zero past the matrix's edge. A micro-tile is
 * GK_MR rows x 2 vectors of columns in accumulators (AVX-512: 12 x 32, 24 zmm; AVX2: 6 x 16, 12 ymm):
 * per k it loads 2 vectors of the B strip (L1) and broadcasts GK_MR values of the A strip.
 *
 * Each element of C is summed in one fixed order, k ascending within a K block, the blocks added to
 * C in turn (C = beta C + alpha P_0, then C += alpha P_1, ...): the result depends on the shape
 * alone, never on alignment or on what ran before. */
#include <stdlib.h>

#include "backend/cpu_ops.h"
#include "backend/cpu_simd.h"
#include "core/error.h"

#if SIMD_W == 16
#define GK_MR 12
#else
#define GK_MR 6
#endif
#define GK_NR (2 * SIMD_W)
#define GK_KC 256
#define GK_MC (GK_MR * 20)
#define GK_NC 2048

/* The packed blocks of this thread (64-byte aligned; kept until exit, as OpenBLAS keeps its own). */
static float *SIMD_NAME(gk_buffer)(int which) {
  static _Thread_local float *buf[2];
  static const size_t floats[2] = {(size_t)GK_MC * GK_KC, (size_t)GK_KC * GK_NC};
  if (!buf[which] && !(buf[which] = aligned_alloc(64, floats[which] * sizeof(float))))
    surge_runtime_error("out of memory for the GEMM's packed blocks");
  return buf[which];
}

/* Strips of S along x (A's rows, S = MR; B's columns, S = NR) from elements (x, k), x0 <= x < x0 + nx,
 * k0 <= k < k0 + kc, of a matrix stored x-major (X[x ld + k]: A untransposed, B transposed) or
 * k-major (X[k ld + x]); strip t holds (x0 + t S + r, k0 + k) at p[t S kc + k S + r], zeros past nx.
 * k-major strips are copied a vector of x at a time (masked past nx and S); x-major ones as W x W
 * blocks of (x, k) loaded by rows and transposed, the last kc % W values of k one at a time. */
SIMD_INLINE void gk_pack(const float *X, int ld, int k_major, int x0, int nx, int k0, int kc, float *p, const int S) {
  if (k_major) { /* row by row of X, each read once from end to end */
    for (int k = 0; k < kc; k++) {
      const float *x = X + (size_t)(k0 + k) * ld + x0;
      for (int t = 0; t < nx; t += S) {
        const int n = nx - t < S ? nx - t : S;
        float *q = p + (size_t)t * kc + (size_t)k * S;
#pragma GCC unroll 4
        for (int r0 = 0; r0 < S; r0 += SIMD_W) {
          const int w = S - r0 < SIMD_W ? S - r0 : SIMD_W, m = n - r0 < 0 ? 0 : n - r0 < w ? n - r0 : w;
          const vf v = m == SIMD_W ? vf_loadu(x + t + r0) : vf_loadu_n(x + t + r0, m);
          if (w == SIMD_W) vf_storeu(q + r0, v);
          else vf_storeu_n(q + r0, w, v);
        }
      }
    }
    return;
  }
  for (int t = 0; t < nx; t += S) {
    const int n = nx - t < S ? nx - t : S;
    float *restrict q = p + (size_t)t * kc;
    int k = 0;
    for (; k + SIMD_W <= kc; k += SIMD_W)
#pragma GCC unroll 4
      for (int r0 = 0; r0 < S; r0 += SIMD_W) {
        vf v[SIMD_W];
#pragma GCC unroll 16
        for (int i = 0; i < SIMD_W; i++)
          v[i] = r0 + i < n ? vf_loadu(X + (size_t)(x0 + t + r0 + i) * ld + k0 + k) : vf_zero();
        vf_transpose(v);
        const int w = S - r0 < SIMD_W ? S - r0 : SIMD_W;
#pragma GCC unroll 16
        for (int i = 0; i < SIMD_W; i++) {
          if (w == SIMD_W) vf_storeu(q + (size_t)(k + i) * S + r0, v[i]);
          else vf_storeu_n(q + (size_t)(k + i) * S + r0, w, v[i]);
        }
      }
    for (; k < kc; k++)
      for (int r = 0; r < S; r++) q[(size_t)k * S + r] = r < n ? X[(size_t)(x0 + t + r) * ld + k0 + k] : 0.0f;
  }
}

/* op(A)'s rows i0.. (mc) and k0.. (kc) into MR-row strips; op(B)'s k0.. (kc) and columns j0.. (nc) into
 * NR-column strips. */
SIMD_TARGET static void gk_pack_a(int ta, const float *A, int lda, int i0, int mc, int k0, int kc, float *ap) {
  gk_pack(A, lda, ta, i0, mc, k0, kc, ap, GK_MR);
}
SIMD_TARGET static void gk_pack_b(int tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *bp) {
  gk_pack(B, ldb, !tb, j0, nc, k0, kc, bp, GK_NR);
}

/* C's tile (mr <= MR rows, nr <= NR columns) = beta C + alpha (the strips' product over kc); beta == 0
 * does not read C. `full` (a constant where inlined): mr == MR and nr == NR, stored straight from
 * the registers; otherwise through a tile in memory. */
SIMD_INLINE void gk_tile(int kc, const float *restrict ap, const float *restrict bp, float *restrict c, int ldc,
                         float alpha, float beta, int mr, int nr, const int full) {
  vf acc[GK_MR][2];
#pragma GCC unroll 16
  for (int r = 0; r < GK_MR; r++) acc[r][0] = acc[r][1] = vf_zero();
  for (int k = 0; k < kc; k++) {
    const vf b0 = vf_load(bp), b1 = vf_load(bp + SIMD_W);
#pragma GCC unroll 16
    for (int r = 0; r < GK_MR; r++) {
      const vf a = vf_set1(ap[r]);
      acc[r][0] = vf_fmadd(a, b0, acc[r][0]);
      acc[r][1] = vf_fmadd(a, b1, acc[r][1]);
    }
    ap += GK_MR;
    bp += GK_NR;
  }
  const vf va = vf_set1(alpha), vb = vf_set1(beta);
  if (full) {
#pragma GCC unroll 16
    for (int r = 0; r < GK_MR; r++) {
      float *cr = c + (size_t)r * ldc;
      vf x0 = vf_mul(va, acc[r][0]), x1 = vf_mul(va, acc[r][1]);
      if (beta != 0.0f) {
        x0 = vf_fmadd(vb, vf_loadu(cr), x0);
        x1 = vf_fmadd(vb, vf_loadu(cr + SIMD_W), x1);
      }
      vf_storeu(cr, x0);
      vf_storeu(cr + SIMD_W, x1);
    }
    return;
  }
  float T[GK_MR][GK_NR] __attribute__((aligned(64)));
#pragma GCC unroll 16
  for (int r = 0; r < GK_MR; r++) {
    vf_store(T[r], vf_mul(va, acc[r][0]));
    vf_store(T[r] + SIMD_W, vf_mul(va, acc[r][1]));
  }
  for (int r = 0; r < mr; r++) {
    float *cr = c + (size_t)r * ldc;
    for (int v = 0; v * SIMD_W < nr; v++) {
      const int n = nr - v * SIMD_W < SIMD_W ? nr - v * SIMD_W : SIMD_W;
      vf x = vf_load(T[r] + v * SIMD_W);
      if (beta != 0.0f) x = vf_fmadd(vb, vf_loadu_n(cr + v * SIMD_W, n), x);
      vf_storeu_n(cr + v * SIMD_W, n, x);
    }
  }
}

SIMD_TARGET static void gk_tile_full(int kc, const float *ap, const float *bp, float *c, int ldc, float alpha,
                                     float beta) {
  gk_tile(kc, ap, bp, c, ldc, alpha, beta, GK_MR, GK_NR, 1);
}
SIMD_TARGET static void gk_tile_edge(int kc, const float *ap, const float *bp, float *c, int ldc, float alpha,
                                     float beta, int mr, int nr) {
  gk_tile(kc, ap, bp, c, ldc, alpha, beta, mr, nr, 0);
}

/* C (M,N) = alpha op(A) op(B) + beta C for M, N, K >= 1 (what cpu_gemm.c hands it). */
SIMD_TARGET void SIMD_NAME(cpu_sgemm)(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                                      const float *B, int ldb, float beta, float *C, int ldc) {
  float *ap = SIMD_NAME(gk_buffer)(0), *bp = SIMD_NAME(gk_buffer)(1);
  for (int j0 = 0; j0 < N; j0 += GK_NC) {
    const int nc = N - j0 < GK_NC ? N - j0 : GK_NC;
    for (int k0 = 0; k0 < K; k0 += GK_KC) {
      const int kc = K - k0 < GK_KC ? K - k0 : GK_KC;
      const float b_eff = k0 == 0 ? beta : 1.0f;
      gk_pack_b(tb, B, ldb, k0, kc, j0, nc, bp);
      for (int i0 = 0; i0 < M; i0 += GK_MC) {
        const int mc = M - i0 < GK_MC ? M - i0 : GK_MC;
        gk_pack_a(ta, A, lda, i0, mc, k0, kc, ap);
        for (int jr = 0; jr < nc; jr += GK_NR)
          for (int ir = 0; ir < mc; ir += GK_MR) {
            const int mr = mc - ir < GK_MR ? mc - ir : GK_MR, nr = nc - jr < GK_NR ? nc - jr : GK_NR;
            float *c = C + (size_t)(i0 + ir) * ldc + j0 + jr;
            const float *a = ap + (size_t)ir * kc, *b = bp + (size_t)jr * kc;
            if (mr == GK_MR && nr == GK_NR) gk_tile_full(kc, a, b, c, ldc, alpha, b_eff);
            else gk_tile_edge(kc, a, b, c, ldc, alpha, b_eff, mr, nr);
          }
      }
    }
  }
}

#undef GK_MR
#undef GK_NR
#undef GK_KC
#undef GK_MC
#undef GK_NC
