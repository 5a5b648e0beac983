#include "compress/cb.h"

#include "compress/powersgd.h"

void cb_sender_init(cb_sender_t *s, const backend_t *be, int rows, int m, int r, int lep, uint64_t seed, uint64_t id) {
  *s = (cb_sender_t){.be = be, .rows = rows, .m = m, .r = r, .lep = lep};
  s->E = be->alloc((size_t)rows * (size_t)m);
  s->Q = be->alloc((size_t)m * (size_t)r);
  psgd_init_q(be, s->Q, 1, m, r, seed, id);
}

void cb_sender_free(cb_sender_t *s) {
  if (s->E) s->be->free(s->E);
  if (s->Q) s->be->free(s->Q);
  s->E = s->Q = NULL;
}

void cb_encode(cb_sender_t *s, const float *G, int n, float *msg) {
  const backend_t *be = s->be;
  size_t nm = (size_t)n * (size_t)s->m;
  float *P = msg, *Qmsg = msg + (size_t)n * (size_t)s->r;
  /* E (n, m) becomes the matrix to compress: G + E (LEP) or G */
  if (s->lep) be->axpy(nm, 1.0f, G, s->E);
  else be->copy(s->E, G, nm);
  psgd_orth(be, 1, s->m, s->r, s->Q); /* warm start, re-orthonormalised as Optimus-CC's CB does */
  psgd_project(be, 1, n, s->m, s->r, s->E, nm, s->Q, P, 1);
  psgd_back(be, 1, n, s->m, s->r, s->E, nm, P, s->Q);
  psgd_expand(be, n, s->m, s->r, -1.0f, P, s->Q, 1.0f, s->E, s->m); /* E = (G + E) - P Q^T */
  be->copy(Qmsg, s->Q, (size_t)s->m * (size_t)s->r);
}

void cb_decode(const backend_t *be, const float *msg, int n, int m, int r, float *G) {
  psgd_expand(be, n, m, r, 1.0f, msg, msg + (size_t)n * (size_t)r, 0.0f, G, m);
}
