/* Activations held in bfloat16 (act16.h). */
#include "nn/act16.h"

#include <stdlib.h>

#include "core/error.h"

/* Whether a recomputed segment's buffers involve node i: it borrows another's, or lends its own. */
static int segment_shared(const model_t *m, int i) {
  if (m->shares[i]) return 1;
  for (int j = 1; j < m->g->n; j++)
    if (m->shares[j] == i) return 1;
  return 0;
}

static int holdable(const model_t *m, int i, int (*allowed)(void *arg, int node, int next), void *arg) {
  const graph_t *g = m->g;
  if (i == 0 || i == graph_output(g) || m->fused[i] != 0 || m->epi[i] > 0 ||
      !layer_ops_of(g->l[i].kind)->output_unread || segment_shared(m, i))
    return 0;
  int readers = 0;
  for (int j = i + 1; j < g->n; j++)
    for (int k = 0; k < g->l[j].nin; k++) {
      if (g->l[j].in[k] != i) continue;
      if (k != 0 || !layer_ops_of(g->l[j].kind)->rounds_input || m->fused[j] != 0 || !allowed(arg, i, j)) return 0;
      readers++;
    }
  return readers > 0;
}

int act16_plan(const model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, int *held) {
  const graph_t *g = m->g;
  const int on = allowed && m->be->context()->act16;
  int n = 0;
  size_t saved = 0, most = 0; /* floats: what holding saves, the largest held activation */
  for (int i = 0; i < g->n; i++) {
    held[i] = on && holdable(m, i, allowed, arg);
    if (!held[i]) continue;
    const size_t floats = (size_t)m->B_cap * shape_size(g->l[i].out);
    saved += floats - (floats / 2 + 1);
    most = floats > most ? floats : most;
    n++;
  }
  if (saved > 2 * most) return n;
  for (int i = 0; i < g->n; i++) held[i] = 0; /* the two buffers of floats would cost more than it saves */
  return 0;
}

/* The float buffer that holds rows [off, off + B) of held node j, or -1. */
static int holding(const model_t *m, int j, int off, int B) {
  for (int b = 0; b < 2; b++)
    if (m->act_f32_of[b][0] == j && m->act_f32_of[b][1] == off && m->act_f32_of[b][2] == B) return b;
  return -1;
}

/* Buffer b now holds rows [off, off + B) of held node j (the other no longer any of j's: they change), and is the
 * last used. */
static float *take(model_t *m, int b, int j, int off, int B) {
  if (m->act_f32_of[1 - b][0] == j) m->act_f32_of[1 - b][0] = 0;
  m->act_f32_of[b][0] = j, m->act_f32_of[b][1] = off, m->act_f32_of[b][2] = B;
  m->act_f32_last = b;
  return m->act_f32[b];
}

float *act16_input(model_t *m, int i, int k, int off, int B) {
  const int src = m->g->l[i].in[k];
  const size_t sz = shape_size(m->g->l[src].out);
  if (!model_held16(m, src)) return m->in[i][k] + (size_t)off * sz;
  if (m->in[i][k])
    surge_runtime_error("node %d reads node %d from a buffer of its layout's, but that activation is held in bfloat16 "
                        "(a bug: act16_plan holds only activations whose readers run on the same samples)", i, src);
  int b = holding(m, src, off, B);
  if (b >= 0) {
    m->act_f32_last = b;
    return m->act_f32[b];
  }
  b = 1 - m->act_f32_last;
  m->be->from_bf16((size_t)B * sz, m->act16[src] + (size_t)off * sz, m->act_f32[b]);
  return take(m, b, src, off, B);
}

float *act16_output(model_t *m, int j, int off, int B) {
  if (!model_held16(m, j)) return m->act[j] + (size_t)off * shape_size(m->g->l[j].out);
  return take(m, 1 - m->act_f32_last, j, off, B);
}

void act16_store(model_t *m, int j, int off, int B) {
  if (!model_held16(m, j)) return;
  const int b = holding(m, j, off, B);
  if (b < 0) surge_runtime_error("node %d's output is not in a float buffer to be rounded (a bug)", j);
  const size_t sz = shape_size(m->g->l[j].out);
  m->be->to_bf16((size_t)B * sz, m->act_f32[b], m->act16[j] + (size_t)off * sz);
}
