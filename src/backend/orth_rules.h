/* What the backends' orthonormalize does with a column that comes out of Gram-Schmidt all zero,
 * written once for the host and the GPU's kernel (nvcc: __host__ __device__). */
#ifndef SURGE_BACKEND_ORTH_RULES_H
#define SURGE_BACKEND_ORTH_RULES_H

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define ORTH_RULE_FN static inline __host__ __device__
#else
#define ORTH_RULE_FN static inline
#endif

/* Column c of an (n, >c) matrix of doubles, element (row, col) at a[row * rs + col * cs], whose
 * columns 0..c-1 are orthonormal and which is all zero after their projections were taken out (a zero
 * column in, as PowerSGD's factors of a gradient that was zero at one step are): it becomes the unit
 * basis vector e_k outside those columns' span, k the first row with the least of their weight, less
 * its projections on them, normalised. A zero column would stay zero: PowerSGD's warm-started factor
 * then sends nothing for that matrix ever after, its error growing (Surge's own fix; PyTorch's hook
 * keeps the zeros). Needs c < n (a rank of at most min(n, m)). */
ORTH_RULE_FN void orth_revive_column(double *a, int n, int c, size_t rs, size_t cs) {
  int k = 0;
  double least = 2.0; /* a row's weight in the span: sum_j a[row, j]^2 <= 1 */
  for (int row = 0; row < n; row++) {
    double in = 0.0;
    for (int j = 0; j < c; j++) in += a[row * rs + j * cs] * a[row * rs + j * cs];
    if (in < least) least = in, k = row;
  }
  for (int row = 0; row < n; row++) { /* e_k - sum_j a[k, j] a[:, j] */
    double v = row == k ? 1.0 : 0.0;
    for (int j = 0; j < c; j++) v -= a[k * rs + j * cs] * a[row * rs + j * cs];
    a[row * rs + c * cs] = v;
  }
  double ss = 0.0;
  for (int row = 0; row < n; row++) ss += a[row * rs + c * cs] * a[row * rs + c * cs];
  double inv = 1.0 / sqrt(ss); /* ss = 1 - least >= 1 - c / n > 0 */
  for (int row = 0; row < n; row++) a[row * rs + c * cs] *= inv;
}

#endif
