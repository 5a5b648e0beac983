/* Compressed back-propagation (Optimus-CC's CB) over one pipeline stage boundary: the sending stage
 * turns the gradient of its input, an n x m matrix G (n = tokens of the micro-batch, m = the model
 * width), into one packed message [P (n, r) | Q (m, r)] of (n + m) r floats; the receiving stage
 * rebuilds P Q^T. Only the sender keeps state: its warm-started Q and the error E.
 *
 * Lazy error propagation (LEP): the residual of a compressed gradient, E = (G + E) - P Q^T, is added
 * to the next compressed gradient sent over the same boundary, across micro-batches and steps. Over
 * any sequence of compressed sends the sum of what was sent equals the sum of the true gradients
 * plus the error carried in minus the error carried out (sent_i = G_i + e_{i-1} - e_i), so the
 * accumulated weight gradient keeps only those boundary terms and terms in the difference of
 * consecutive activations (doc/compression.md, "The techniques"). Without LEP the residual is
 * dropped. All arithmetic is float32 on the backend, on both sides. */
#ifndef SURGE_COMPRESS_CB_H
#define SURGE_COMPRESS_CB_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

typedef struct cb_sender {
  const backend_t *be;
  int rows, m, r;  /* most rows (tokens of the largest micro-batch), width, rank */
  int lep;         /* carry the error into the next compressed gradient */
  float *E;        /* backend (rows, m): the error (rows of a smaller micro-batch use its first rows) */
  float *Q;        /* backend (m, r): the warm start */
} cb_sender_t;

/* Q from the stream (seed, id) (psgd_init_q), E zero. */
void cb_sender_init(cb_sender_t *s, const backend_t *be, int rows, int m, int r, int lep, uint64_t seed, uint64_t id);
void cb_sender_free(cb_sender_t *s);

/* Floats of the message of an n-row gradient. */
static inline size_t cb_payload(const cb_sender_t *s, int n) { return ((size_t)n + (size_t)s->m) * (size_t)s->r; }

/* Encode G (n, m), n <= rows, into msg (cb_payload floats): with LEP, G + E is compressed and E
 * becomes the new residual; without, G alone (E holds its residual, never used again). */
void cb_encode(cb_sender_t *s, const float *G, int n, float *msg);

/* The receiver: G (n, m) = P Q^T of msg (written, not accumulated). */
void cb_decode(const backend_t *be, const float *msg, int n, int m, int r, float *G);

#endif
