/* What the backends' orthonormalize does with a column that Gram-Schmidt finds in the span of the
 * columns before it (orth_settle_column), written once for the host and the GPU's kernel (nvcc:
 * __host__ __device__). */
#ifndef SURGE_BACKEND_ORTH_RULES_H
#define SURGE_BACKEND_ORTH_RULES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ORTH_RULE_FN static inline __host__ __device__
#else
#define ORTH_RULE_FN static inline
#endif

/* A column that keeps at most this share of its squared norm once the earlier columns are taken out
 * (1% of its length) is examined (orth_settle_column); the others are left to Gram-Schmidt as is. */
#define ORTH_SUSPECT 1e-4

/* A fixed value in [-1, 1) for (row, column): splitmix64 of the pair, its top 24 bits. */
ORTH_RULE_FN double orth_fill_value(int row, int col) {
  uint64_t z = ((uint64_t)(uint32_t)row << 32 | (uint32_t)col) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 40) / (double)(1 << 23) - 1.0;
}

/* v (column c, element row at v[row * rs]) less its projections on the orthonormal columns 0..c-1
 * (element (row, j) at a[row * rs + j * cs]); returns its squared norm after. */
ORTH_RULE_FN double orth_project_out(const double *a, double *v, int n, int c, size_t rs, size_t cs) {
  for (int j = 0; j < c; j++) {
    double d = 0.0;
    for (int row = 0; row < n; row++) d += a[row * rs + j * cs] * v[row * rs];
    for (int row = 0; row < n; row++) v[row * rs] -= d * a[row * rs + j * cs];
  }
  double ss = 0.0;
  for (int row = 0; row < n; row++) ss += v[row * rs] * v[row * rs];
  return ss;
}

/* Column c of an (n, >c) matrix of doubles, element (row, col) at a[row * rs + col * cs], whose
 * columns 0..c-1 are orthonormal: it becomes a fixed dense vector (orth_fill_value) less its
 * projections on them (twice), normalised; where that leaves too little (a vector nearly in their
 * span), the unit basis vector e_k with the least of their weight instead. Dense, not e_k first:
 * M^T e_k of one of an embedding gradient's zero rows is zero again. Needs c < n. */
ORTH_RULE_FN void orth_revive_column(double *a, int n, int c, size_t rs, size_t cs) {
  double *v = a + c * cs, before = 0.0;
  for (int row = 0; row < n; row++) v[row * rs] = orth_fill_value(row, c), before += v[row * rs] * v[row * rs];
  orth_project_out(a, v, n, c, rs, cs);
  double ss = orth_project_out(a, v, n, c, rs, cs);
  if (ss < 1e-6 * before) { /* e_k - sum_j a[k, j] a[:, j], k the row least in the span */
    int k = 0;
    double least = 2.0; /* a row's weight in the span: sum_j a[row, j]^2 <= 1 */
    for (int row = 0; row < n; row++) {
      double in = 0.0;
      for (int j = 0; j < c; j++) in += a[row * rs + j * cs] * a[row * rs + j * cs];
      if (in < least) least = in, k = row;
    }
    for (int row = 0; row < n; row++) v[row * rs] = row == k ? 1.0 : 0.0;
    ss = orth_project_out(a, v, n, c, rs, cs); /* 1 - least >= 1 - c / n > 0 */
  }
  double inv = 1.0 / sqrt(ss);
  for (int row = 0; row < n; row++) v[row * rs] *= inv;
}

/* Column c (as orth_revive_column has it) after Gram-Schmidt took out its projections on columns
 * 0..c-1: ss its squared norm now, in as it came in. Returns the squared norm to divide it by. A
 * column in their span is replaced (orth_revive_column; 1 returned): all zero, or one that lost most
 * of its length (ss <= ORTH_SUSPECT in) and whose direction keeps less than half its length outside
 * the span once the projections are taken out again (Kahan and Parlett's "twice is enough" test).
 * Such a column would stay zero, or normalised be rounding noise blown up: a zero gradient at one
 * step leaves PowerSGD's warm-started factor zero, so the matrix sent nothing ever after while its
 * error grew (PyTorch's hook and the originals keep the zeros); and M of lower rank than r gives
 * columns of M Q that are rounding noise, which where M is zero but in a few rows (an embedding's
 * gradient) lies in the span too, so P was not orthonormal and P Q^T missed M by tens of percent.
 * A direction of M outside the span, however small, is kept. */
ORTH_RULE_FN double orth_settle_column(double *a, int n, int c, size_t rs, size_t cs, double ss, double in) {
  if (c >= n || ss > ORTH_SUSPECT * in) return ss;
  double *v = a + c * cs;
  if (ss > 0.0) {
    double inv = 1.0 / sqrt(ss);
    for (int row = 0; row < n; row++) v[row * rs] *= inv;
    double left = orth_project_out(a, v, n, c, rs, cs);
    if (left >= 0.5) return left;
  }
  orth_revive_column(a, n, c, rs, cs);
  return 1.0;
}

#endif
