#include "compress/powersgd.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/rng.h"

int psgd_rank(int n, int m, int R, double rho) {
  int r = R;
  if (n < r) r = n;
  if (m < r) r = m;
  if (r < 1) return 0;
  if (rho > 0 && (double)psgd_payload(n, m, r) * rho > (double)n * (double)m) return 0;
  return r;
}

void psgd_orth(const backend_t *be, int count, int n, int r, float *P) {
  size_t stride = (size_t)n * (size_t)r;
  be->orthonormalize(count, n, r, P, stride);
  be->orthonormalize(count, n, r, P, stride);
}

void psgd_init_q(const backend_t *be, float *Q, int count, int m, int r, uint64_t seed, uint64_t id) {
  size_t each = (size_t)m * (size_t)r;
  float *host = xmalloc((each * (size_t)count + 1) * sizeof *host);
  for (int k = 0; k < count; k++) {
    rng_t g;
    rng_seed_stream(&g, seed, id, (uint64_t)k);
    rng_fill_normal(&g, host + (size_t)k * each, each, 0.0f, 1.0f);
  }
  be->upload(Q, host, each * (size_t)count);
  free(host);
  psgd_orth(be, count, m, r, Q);
}

void psgd_project(const backend_t *be, int count, int n, int m, int r, const float *M, size_t sM, const float *Q,
                  float *P, int orth) {
  size_t sP = (size_t)n * (size_t)r, sQ = (size_t)m * (size_t)r;
  /* P (n, r) = M (n, m) Q (m, r) */
  be->gemm_strided(0, 0, n, r, m, 1.0f, M, m, sM, Q, r, sQ, 0.0f, P, r, sP, count);
  if (orth) psgd_orth(be, count, n, r, P);
}

void psgd_back(const backend_t *be, int count, int n, int m, int r, const float *M, size_t sM, const float *P,
               float *Q) {
  size_t sP = (size_t)n * (size_t)r, sQ = (size_t)m * (size_t)r;
  /* Q (m, r) = M^T (M stored (n, m)) P (n, r) */
  be->gemm_strided(1, 0, m, r, n, 1.0f, M, m, sM, P, r, sP, 0.0f, Q, r, sQ, count);
}

void psgd_expand(const backend_t *be, int n, int m, int r, float alpha, const float *P, const float *Q, float beta,
                 float *out, int ldo) {
  /* Out (n, m) = alpha P (n, r) Q^T (Q stored (m, r)) + beta Out */
  be->gemm(0, 1, n, m, r, alpha, P, r, Q, r, beta, out, ldo);
}
