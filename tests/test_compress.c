/* The compression library (src/compress/) on one process, on both backends: the invariants of
 * ../shared/notes/optimus-cc.md section 10 that need no group.
 *  - psgd_rank: min(n, m, R), and the minimum compression rate sends a matrix exact
 *  - psgd_init_q: the same seed and id give the same Q bit for bit (every rank of a group), another
 *    id another Q; Q^T Q = I
 *  - P^T P = I after psgd_project (orthonormalised), for a batch of same-shape matrices at a stride
 *  - a matrix of rank <= r comes back exactly (P Q^T = M), each of a strided batch
 *  - CB with LEP: over a sequence of compressed gradients, sum sent = sum true + e_0 - e_last, and
 *    each sent_i = G_i + e_{i-1} - e_i; without LEP sent_i = G_i - e_i (the residual is dropped)
 *  - CB of a gradient of rank <= r is exact, and the message is (n + m) r floats
 *  - a zero gradient at one step does not leave the warm-started factor zero (CB and SC) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "compress/cb.h"
#include "compress/powersgd.h"
#include "core/error.h"
#include "core/rng.h"
#include "tap.h"

static const backend_t *const backends[2] = {&backend_cpu, &backend_ref};
static rng_t rng;

static float *randn(size_t n) {
  float *x = xmalloc((n + 1) * sizeof *x);
  rng_fill_normal(&rng, x, n, 0.0f, 1.0f);
  return x;
}

/* ||a - b|| / ||b|| in double. */
static double rel(const float *a, const float *b, size_t n) {
  double d = 0, r = 0;
  for (size_t i = 0; i < n; i++) {
    d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    r += (double)b[i] * b[i];
  }
  return sqrt(d) / fmax(sqrt(r), 1e-30);
}

/* max |A^T A - I| of a row-major (n, r) matrix. */
static double orth_error(const float *A, int n, int r) {
  double worst = 0;
  for (int i = 0; i < r; i++)
    for (int j = 0; j < r; j++) {
      double d = 0;
      for (int k = 0; k < n; k++) d += (double)A[(size_t)k * r + i] * A[(size_t)k * r + j];
      worst = fmax(worst, fabs(d - (i == j)));
    }
  return worst;
}

/* A (n, m) matrix of rank k: U (n, k) V^T (V (m, k)). */
static float *low_rank(int n, int m, int k) {
  float *U = randn((size_t)n * k), *V = randn((size_t)m * k), *M = xcalloc((size_t)n * m + 1, sizeof *M);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      double s = 0;
      for (int t = 0; t < k; t++) s += (double)U[(size_t)i * k + t] * V[(size_t)j * k + t];
      M[(size_t)i * m + j] = (float)s;
    }
  free(U);
  free(V);
  return M;
}

static void test_rank_rule(void) {
  tap_ok(psgd_rank(100, 50, 8, 0) == 8 && psgd_rank(5, 50, 8, 0) == 5 && psgd_rank(50, 3, 8, 0) == 3,
         "psgd_rank: min(n, m, R)");
  /* 32 x 32 at r 8: (32 + 32) 8 = 512 floats of 1024: a rate of 2 passes, 2.5 does not */
  tap_ok(psgd_rank(32, 32, 8, 2.0) == 8 && psgd_rank(32, 32, 8, 2.5) == 0 && psgd_rank(32, 32, 8, 0) == 8,
         "psgd_rank: the minimum compression rate (n + m) r rho <= n m sends a matrix exact when not met");
  tap_ok(psgd_rank(128, 1024, 128, 0) == 128 && psgd_rank(128, 1024, 128, 1.0) == 0,
         "psgd_rank: a matrix that would expand ((n+m) r > n m) is compressed only without the rule, as "
         "Optimus-CC does");
}

static void test_init_q(const backend_t *be) {
  int m = 40, r = 6;
  size_t n = (size_t)m * r;
  float *a = be->alloc(n), *b = be->alloc(n), *c = be->alloc(n);
  psgd_init_q(be, a, 1, m, r, 714, 3);
  psgd_init_q(be, b, 1, m, r, 714, 3);
  psgd_init_q(be, c, 1, m, r, 714, 4);
  float *ha = xmalloc(n * sizeof *ha), *hb = xmalloc(n * sizeof *hb), *hc = xmalloc(n * sizeof *hc);
  be->download(ha, a, n);
  be->download(hb, b, n);
  be->download(hc, c, n);
  tap_ok(memcmp(ha, hb, n * sizeof *ha) == 0 && memcmp(ha, hc, n * sizeof *ha) != 0,
         "%s: the same (seed, id) gives the same initial Q bit for bit, another id another", be->name);
  tap_ok(orth_error(ha, m, r) < 1e-6, "%s: the initial Q is orthonormal (|Q^T Q - I| %.1e)", be->name,
         orth_error(ha, m, r));
  be->free(a), be->free(b), be->free(c);
  free(ha), free(hb), free(hc);
}

/* A batch of 3 matrices (n, m) of rank k, `gap` floats apart: P orthonormal, and P Q^T = M. */
static void test_batch(const backend_t *be, int n, int m, int r, int k, int gap) {
  int count = 3;
  size_t nm = (size_t)n * m, sM = nm + (size_t)gap;
  float *host = xcalloc(sM * count + 1, sizeof *host);
  for (int i = 0; i < count; i++) {
    float *one = low_rank(n, m, k);
    memcpy(host + (size_t)i * sM, one, nm * sizeof *one);
    free(one);
  }
  float *M = be->alloc(sM * count), *P = be->alloc((size_t)count * n * r), *Q = be->alloc((size_t)count * m * r);
  float *out = be->alloc(nm);
  be->upload(M, host, sM * count);
  psgd_init_q(be, Q, count, m, r, 1, 2);
  psgd_project(be, count, n, m, r, M, sM, Q, P, 1);
  psgd_back(be, count, n, m, r, M, sM, P, Q);
  float *hp = xmalloc((size_t)count * n * r * sizeof *hp), *ho = xmalloc(nm * sizeof *ho);
  be->download(hp, P, (size_t)count * n * r);
  double orth = 0, worst = 0;
  for (int i = 0; i < count; i++) {
    orth = fmax(orth, orth_error(hp + (size_t)i * n * r, n, r));
    psgd_expand(be, n, m, r, 1.0f, P + (size_t)i * n * r, Q + (size_t)i * m * r, 0.0f, out, m);
    be->download(ho, out, nm);
    worst = fmax(worst, rel(ho, host + (size_t)i * sM, nm));
  }
  tap_ok(orth < 1e-5, "%s: (%d x %d) batch of %d at r %d: P^T P = I after orthonormalisation (|P^T P - I| %.1e)",
         be->name, n, m, count, r, orth);
  tap_ok(worst < 1e-5, "%s: inputs of rank %d <= r %d come back exactly: |P Q^T - M| / |M| %.1e", be->name, k, r,
         worst);
  be->free(M), be->free(P), be->free(Q), be->free(out);
  free(host), free(hp), free(ho);
}

/* CB over a sequence of gradients G_1..G_S (n x m, full rank): what is sent telescopes. */
static void test_lep(const backend_t *be, int lep) {
  int n = 24, m = 16, r = 3, S = 7;
  size_t nm = (size_t)n * m;
  cb_sender_t s;
  cb_sender_init(&s, be, n, m, r, lep, 9, 1);
  float *G = be->alloc(nm), *msg = be->alloc(cb_payload(&s, n)), *sent = be->alloc(nm);
  double *sum_sent = xcalloc(nm, sizeof *sum_sent), *sum_true = xcalloc(nm, sizeof *sum_true);
  float *e0 = xmalloc(nm * sizeof *e0), *e = xmalloc(nm * sizeof *e), *prev = xmalloc(nm * sizeof *prev);
  float *hs = xmalloc(nm * sizeof *hs);
  /* a first compressed gradient so that the sequence starts with a carried error e_0 != 0 */
  float *g = randn(nm);
  be->upload(G, g, nm);
  cb_encode(&s, G, n, msg);
  free(g);
  be->download(e0, s.E, nm);
  memcpy(prev, e0, nm * sizeof *prev);
  double step_worst = 0;
  for (int i = 0; i < S; i++) {
    g = randn(nm);
    be->upload(G, g, nm);
    cb_encode(&s, G, n, msg);
    cb_decode(be, msg, n, m, r, sent);
    be->download(hs, sent, nm);
    be->download(e, s.E, nm);
    double d = 0, ref = 0;
    for (size_t j = 0; j < nm; j++) {
      sum_sent[j] += hs[j];
      sum_true[j] += g[j];
      double want = (double)g[j] + (lep ? prev[j] : 0) - e[j]; /* sent_i = G_i + e_{i-1} - e_i */
      d += (hs[j] - want) * (hs[j] - want);
      ref += want * want;
    }
    step_worst = fmax(step_worst, sqrt(d / ref));
    memcpy(prev, e, nm * sizeof *prev);
    free(g);
  }
  if (lep) {
    double d = 0, ref = 0;
    for (size_t j = 0; j < nm; j++) {
      double want = sum_true[j] + e0[j] - e[j];
      d += (sum_sent[j] - want) * (sum_sent[j] - want);
      ref += want * want;
    }
    tap_ok(sqrt(d / ref) < 1e-5, "%s: LEP telescopes over %d compressed gradients: |sum sent - (sum true + e_0 - "
           "e_last)| / |.| = %.1e", be->name, S, sqrt(d / ref));
  }
  tap_ok(step_worst < 1e-5, "%s: %s: each sent_i = G_i %s- e_i (worst %.1e)", be->name, lep ? "with LEP" : "without LEP",
         lep ? "+ e_{i-1} " : "", step_worst);
  cb_sender_free(&s);
  be->free(G), be->free(msg), be->free(sent);
  free(sum_sent), free(sum_true), free(e0), free(e), free(prev), free(hs);
}

/* A gradient of rank <= r crosses exactly; the message is (n + m) r floats. */
static void test_cb_exact(const backend_t *be) {
  int n = 48, m = 20, r = 5;
  size_t nm = (size_t)n * m;
  cb_sender_t s;
  cb_sender_init(&s, be, 64, m, r, 1, 3, 2);
  float *g = low_rank(n, m, 4), *G = be->alloc(nm), *msg = be->alloc(cb_payload(&s, n)), *out = be->alloc(nm);
  float *h = xmalloc(nm * sizeof *h);
  be->upload(G, g, nm);
  cb_encode(&s, G, n, msg);
  cb_decode(be, msg, n, m, r, out);
  be->download(h, out, nm);
  tap_ok(rel(h, g, nm) < 1e-5 && cb_payload(&s, n) == (size_t)(n + m) * r,
         "%s: CB of a (%d x %d) gradient of rank 4 at r %d is exact (rel %.1e) in %zu floats", be->name, n, m, r,
         rel(h, g, nm), cb_payload(&s, n));
  cb_sender_free(&s);
  be->free(G), be->free(msg), be->free(out);
  free(g), free(h);
}

/* A gradient that is zero at one step (a vocabulary shard no token of the batch fell in) leaves the
 * warm-started factor zero; it must not stay so. CB with LEP: after a zero gradient, each of 5 random
 * ones sends a rank-r part of what it compresses, G + e_prev (|sent - (G + e_prev)| < |G + e_prev|;
 * a zero factor sends nothing: 1), and Q keeps orthonormal columns. SC's sequence (P = orth(M Q),
 * Q = M^T P as its warm start, P Q^T sent): after a zero M, a random M of rank <= r with two rows
 * non-zero (an embedding's) crosses exactly at the second step (the warm start found it again). */
static void test_zero_gradient(const backend_t *be) {
  int n = 24, m = 16, r = 3;
  size_t nm = (size_t)n * m;
  cb_sender_t s;
  cb_sender_init(&s, be, n, m, r, 1, 5, 3);
  float *G = be->alloc(nm), *msg = be->alloc(cb_payload(&s, n)), *out = be->alloc(nm);
  float *h = xmalloc(nm * sizeof *h), *target = xmalloc(nm * sizeof *target), *zero = xcalloc(nm, sizeof *zero);
  float *qo = xmalloc((size_t)m * r * sizeof *qo);
  be->upload(G, zero, nm);
  cb_encode(&s, G, n, msg);
  double worst_rel = 0, worst_orth = 0;
  for (int t = 0; t < 5; t++) {
    float *g = randn(nm);
    be->download(target, s.E, nm); /* e_prev */
    for (size_t j = 0; j < nm; j++) target[j] += g[j];
    be->upload(G, g, nm);
    cb_encode(&s, G, n, msg);
    cb_decode(be, msg, n, m, r, out);
    be->download(h, out, nm);
    psgd_orth(be, 1, m, r, s.Q); /* as the next encode reads it */
    be->download(qo, s.Q, (size_t)m * r);
    worst_rel = fmax(worst_rel, rel(h, target, nm));
    worst_orth = fmax(worst_orth, orth_error(qo, m, r));
    free(g);
  }
  tap_ok(worst_rel < 0.95 && worst_orth < 1e-5,
         "%s: CB after a zero gradient: each send a rank-%d part of G + e_prev (|sent - it| / |it| <= %.2f), Q "
         "orthonormal (%.1e)", be->name, r, worst_rel, worst_orth);
  cb_sender_free(&s);
  /* SC's sequence on one matrix */
  float *M = be->alloc(nm), *Q = be->alloc((size_t)m * r), *P = be->alloc((size_t)n * r);
  psgd_init_q(be, Q, 1, m, r, 5, 4);
  float *low = low_rank(n, m, r), *got = xmalloc(nm * sizeof *got);
  for (int i = 0; i < n; i++) /* an embedding's gradient: rows 5 and 17 only (the tokens of the batch) */
    if (i != 5 && i != 17) memset(low + (size_t)i * m, 0, (size_t)m * sizeof *low);
  double rels[3];
  for (int t = 0; t < 3; t++) {
    be->upload(M, t == 0 ? zero : low, nm);
    psgd_project(be, 1, n, m, r, M, nm, Q, P, 1);
    psgd_back(be, 1, n, m, r, M, nm, P, Q);
    psgd_expand(be, n, m, r, 1.0f, P, Q, 0.0f, out, m);
    be->download(got, out, nm);
    rels[t] = rel(got, t == 0 ? zero : low, nm);
  }
  tap_ok(rels[0] == 0 && rels[2] < 1e-5, "%s: SC after a zero matrix: one of 2 rows crosses exactly at the second "
         "step (rel %.1e, the first %.2f)", be->name, rels[2], rels[1]);
  be->free(G), be->free(msg), be->free(out), be->free(M), be->free(Q), be->free(P);
  free(h), free(target), free(qo), free(zero), free(low), free(got);
}

int main(void) {
  rng_seed(&rng, 20250101);
  test_rank_rule();
  for (int k = 0; k < 2; k++) {
    const backend_t *be = backends[k];
    test_init_q(be);
    test_batch(be, 30, 20, 6, 4, 0);
    test_batch(be, 17, 45, 8, 8, 5);
    test_lep(be, 1);
    test_lep(be, 0);
    test_cb_exact(be);
    test_zero_gradient(be);
  }
  return tap_done();
}
