/* "cpu" backend: precision = bf16 (backend.h) where the cpu multiplies floats itself rather than in
 * bfloat16 pairs (cpu_gemm_kern.h): the rounding and the products of a few rows. (The direct
 * convolutions round their operands as they pad and pack them, cpu_direct_kern.h.)
 *
 * One row (a token generated at a time) is a matrix-vector product that reads the matrix once:
 * in bfloat16 pairs where the CPU has them and the matrix is stored (N, K) (a linear layer's weight,
 * cpu_kern_bf16.c), rounding each element as it goes elsewhere; the packed GEMM would convert the
 * whole weight for one row (generation ran 10x slower through it). A few rows (several samples
 * generated at once) take the same dot products where the CPU has the pairs, each row of the matrix
 * read once for all of them (up to CPU_BF16_FEW_ROWS, cpu_ops.h). A forward-only model's bfloat16 copy of a
 * weight (linear_fwd's w16) is read in its place there: the same values in half the bytes. */
#include <stdint.h>
#include <string.h>

#include "backend/cpu_ops.h"
#include "backend/cpu_team.h"
#include "core/bf16.h"
#include "core/error.h"

CPU_CLONES void cpu_round_bf16(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = bf16_round(x[i]);
}

CPU_CLONES void cpu_to_bf16(size_t n, const float *x, uint16_t *y) {
  for (size_t i = 0; i < n; i++) y[i] = bf16_bits(x[i]);
}

CPU_CLONES void cpu_from_bf16(size_t n, const uint16_t *x, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = bf16_value(x[i]);
}

/* b[0..m) = b's elements i.. as bfloat16 values: read from its bfloat16 copy bh where given, else bf's rounded
 * (the same values); a loop each, so both vectorise */
static inline void b_rounded(const float *restrict bf, const uint16_t *restrict bh, int i, int m, float *restrict b) {
  if (bh)
    for (int l = 0; l < m; l++) b[l] = bf16_value(bh[i + l]);
  else
    for (int l = 0; l < m; l++) b[l] = bf16_round(bf[i + l]);
}

/* sum over k of a[k] b[k] with b rounded (a already rounded), in float with 16 lanes */
static CPU_CLONES float dot_rounded_b(const float *restrict a, const float *restrict bf, const uint16_t *restrict bh,
                                      int n) {
  float lane[16] = {0}, b[16];
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    b_rounded(bf, bh, i, 16, b);
    for (int l = 0; l < 16; l++) lane[l] += a[i + l] * b[l];
  }
  float s = 0.0f;
  for (int l = 0; l < 16; l++) s += lane[l];
  b_rounded(bf, bh, i, n - i, b);
  for (int l = 0; i + l < n; l++) s += a[i + l] * b[l];
  return s;
}

/* acc[0..n) += a b[0..n) with b rounded as read, or read from its bfloat16 copy bh where given (a loop each) */
static CPU_CLONES void axpy_rounding_b(float a, const float *restrict bf, const uint16_t *restrict bh,
                                       float *restrict acc, int n) {
  if (bh)
    for (int i = 0; i < n; i++) acc[i] += a * bf16_value(bh[i]);
  else
    for (int i = 0; i < n; i++) acc[i] += a * bf16_round(bf[i]);
}

/* acc (M, N) = a (M, K, rounded) op(B): its columns [lo, hi) are part t of T */
typedef struct rows_job {
  int pairs; /* the caller's choice (its kernel width: simd is the opening thread's setting, not a worker's) */
  int tb, M, N, K;
  const float *a, *B;
  const uint16_t *B16;
  int ldb;
  float *acc;
} rows_job_t;

/* Part t of T: the columns of a run of whole blocks of 4 (the dot products' blocks, cpu_kern_bf16.c), each
 * column computed as a single thread computes it. */
static void rows_part(void *arg, int t, int T) {
  const rows_job_t *r = arg;
  const int blocks = (r->N + 3) / 4, lo = 4 * (int)((long)blocks * t / T);
  const int end = 4 * (int)((long)blocks * (t + 1) / T), hi = end < r->N ? end : r->N;
  const int M = r->M, N = r->N, K = r->K, ldb = r->ldb;
  if (lo >= hi) return;
  const float *a = r->a, *B = r->B;
  const uint16_t *B16 = r->B16;
  if (r->pairs) { /* B stored (N, K): dot products in bfloat16 pairs, B read once */
    const size_t at = (size_t)lo * ldb;
    cpu_rows_bf16_dots(M, hi - lo, K, a, K, B16 ? NULL : B + at, B16 ? B16 + at : NULL, ldb, r->acc + lo, N);
    return;
  }
  for (int i = 0; i < M; i++) {
    float *out = r->acc + (size_t)i * N;
    if (r->tb) /* rounding B's elements as they are read, or reading its bfloat16 copy */
      for (int j = lo; j < hi; j++)
        out[j] = dot_rounded_b(a + (size_t)i * K, B16 ? NULL : B + (size_t)j * ldb, B16 ? B16 + (size_t)j * ldb : NULL,
                               K);
    else { /* B stored (K, N): its rows added in k order */
      memset(out + lo, 0, (size_t)(hi - lo) * sizeof *out);
      for (int k = 0; k < K; k++) {
        const size_t at = (size_t)k * ldb + lo;
        axpy_rounding_b(a[(size_t)i * K + k], B16 ? NULL : B + at, B16 ? B16 + at : NULL, out + lo, hi - lo);
      }
    }
  }
}

/* The team for a product: [backend] threads, fewer where a part would read less than CPU_TEAM_MIN_WORK
 * of B's elements (a part must outweigh handing it to a worker and waiting for it), none below. */
enum { CPU_TEAM_MIN_WORK = 1 << 16 };
static int team_for(int N, int K) {
  const double work = (double)N * K;
  const int most = (int)(work / CPU_TEAM_MIN_WORK), T = cpu_threads();
  return most < 1 ? 1 : T < most ? T : most;
}

void cpu_gemm_rows_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        const uint16_t *B16, int ldb, float beta, float *C, int ldc) {
  static _Thread_local void *buf;
  static _Thread_local size_t cap;
  const size_t mk = surge_mul_size((size_t)M, (size_t)K, "bf16 rows");
  const size_t mn = surge_mul_size((size_t)M, (size_t)N, "bf16 rows");
  float *a = cpu_kept_buffer(&buf, &cap, surge_mul_size(mk + mn, sizeof(float), "bf16 rows operand"));
  float *acc = a + mk; /* (M, N): the sums before alpha and beta */
  for (int i = 0; i < M; i++) /* op(A)'s rows (M, K), rounded */
    if (ta)
      for (int k = 0; k < K; k++) a[(size_t)i * K + k] = bf16_round(A[(size_t)k * lda + i]);
    else
      cpu_round_bf16(A + (size_t)i * lda, a + (size_t)i * K, (size_t)K);
  rows_job_t job = {tb && cpu_gemm_bf16_pairs(), tb, M, N, K, a, B, B16, ldb, acc};
  cpu_team_run(team_for(N, K), rows_part, &job);
  for (int i = 0; i < M; i++) /* beta 0: C unread */
    for (int j = 0; j < N; j++) {
      float *c = C + (size_t)i * ldc + j;
      *c = alpha * acc[(size_t)i * N + j] + (beta == 0.0f ? 0.0f : beta * *c);
    }
}
