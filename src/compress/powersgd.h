/* PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019) building blocks, as Optimus-CC uses them for
 * data-parallel gradients and for pipeline activation gradients: one power iteration with a warm
 * start approximates a row-major n x m matrix M by P Q^T of rank r,
 *   P = orth(M Q)      (n, r), orthonormal columns (modified Gram-Schmidt, psgd_orth)
 *   Q = M^T P          (m, r), kept for the next call (the warm start)
 *   M ~ P Q^T
 * which sends (n + m) r floats instead of n m. When rank(M) <= r (and Q is generic) P P^T M = M:
 * the approximation is exact.
 *
 * Matrices of one shape go through the backend's strided GEMM as one batch: `count` matrices, matrix
 * k at M + k sM, its factors at P + k n r and Q + k m r. Every GEMM and elementwise op runs through
 * backend_t, so the arrays are backend memory and a GPU backend runs the whole compressor. */
#ifndef SURGE_COMPRESS_POWERSGD_H
#define SURGE_COMPRESS_POWERSGD_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* The rank used for an n x m matrix at the requested rank R: min(n, m, R), or 0 (send it exact) when
 * the minimum compression rate rho > 0 is not met: (n + m) r * rho > n m. rho <= 0: no such rule
 * (Optimus-CC's default). */
int psgd_rank(int n, int m, int R, double rho);

/* Floats sent for one n x m matrix at rank r: (n + m) r. */
static inline size_t psgd_payload(int n, int m, int r) { return ((size_t)n + (size_t)m) * (size_t)r; }

/* Orthonormalise the columns of `count` row-major (n, r) matrices P + k n r: modified Gram-Schmidt
 * (backend orthonormalize: col /= (||col|| + 1e-8), later columns -= their part along it), run twice.
 * One pass leaves a column at norm/(norm + 1e-8) instead of 1, so a later column that is almost in
 * the span of the earlier ones (a matrix of rank below r: MQ has r - rank columns of rounding noise)
 * keeps ~1e-8/norm of them, which normalising the noise blows up to a few percent; the second pass
 * ("twice is enough") removes it, and exact reconstruction holds for every rank <= r. */
void psgd_orth(const backend_t *be, int count, int n, int r, float *P);

/* Q of `count` matrices (count, m, r): standard normal values from the stream (seed, id, k) for
 * matrix k, then orthonormalised. Every rank that passes the same seed and id gets the same Q. */
void psgd_init_q(const backend_t *be, float *Q, int count, int m, int r, uint64_t seed, uint64_t id);

/* P (count, n, r) = M Q, orthonormalised (psgd_orth) when orth != 0 (the data-parallel reducer sums
 * P over its group first, then orthonormalises). */
void psgd_project(const backend_t *be, int count, int n, int m, int r, const float *M, size_t sM, const float *Q,
                  float *P, int orth);
/* Q (count, m, r) = M^T P. */
void psgd_back(const backend_t *be, int count, int n, int m, int r, const float *M, size_t sM, const float *P,
               float *Q);
/* Out (n, m; rows ldo apart) = alpha P Q^T + beta Out, one matrix. */
void psgd_expand(const backend_t *be, int n, int m, int r, float alpha, const float *P, const float *Q, float beta,
                 float *out, int ldo);

#endif
