/* Activations held in bfloat16 (act16.h). */
#include "nn/act16.h"

#include <stdlib.h>

#include "core/error.h"

/* Whether node i's backward reads its output only rounded: itself (layer_ops_t.output_rounded: attention), never
 * (output_unread), or, where it runs a node's forward in its epilogue (a linear its GELU), only as that node's input,
 * which that node rounds. */
static int output_read_rounded(const model_t *m, int i) {
  const graph_t *g = m->g;
  if (layer_ops_of(g->l[i].kind)->output_rounded) return 1;
  if (!layer_ops_of(g->l[i].kind)->output_unread) return 0;
  return m->epi[i] <= 0 || layer_ops_of(g->l[m->epi[i]].kind)->rounds_input;
}

static int holdable(const model_t *m, int i, int (*allowed)(void *arg, int node, int next), void *arg) {
  const graph_t *g = m->g;
  if (i == 0 || i == graph_output(g) || m->fused[i] != 0 || !output_read_rounded(m, i) || model_segment_shared(m, i))
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

/* The float buffers a call needs at most: its held inputs, its held output, and that of the node its epilogue runs
 * (the backward needs no more: a held input, and its own output where its epilogue's derivative reads it). */
static int buffers_needed(const model_t *m, const int *held) {
  const graph_t *g = m->g;
  int most = 0;
  for (int i = 1; i < g->n; i++) {
    int n = held[i] + (m->epi[i] > 0 && held[m->epi[i]]);
    for (int k = 0; k < g->l[i].nin; k++) n += held[g->l[i].in[k]];
    most = n > most ? n : most;
  }
  if (most > MODEL_ACT_F32_MAX)
    surge_runtime_error("a call would need %d float buffers for its activations held in bfloat16, %d exist (a bug: "
                        "act16_plan holds an input 0 of each reader only)", most, MODEL_ACT_F32_MAX);
  return most;
}

int act16_plan(const model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, int *held, int *nbufs) {
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
  *nbufs = n ? buffers_needed(m, held) : 0;
  if (saved > (size_t)*nbufs * most) return n;
  for (int i = 0; i < g->n; i++) held[i] = 0; /* the buffers of floats would cost more than it saves */
  *nbufs = 0;
  return 0;
}

/* The buffer that holds rows [off, off + B) of held node j, or -1. */
static int holding(const model_t *m, int j, int off, int B) {
  for (int b = 0; b < m->nact_f32; b++)
    if (m->act_f32_of[b].node == j && m->act_f32_of[b].off == off && m->act_f32_of[b].B == B) return b;
  return -1;
}

/* The buffer given out least recently that this call has not been given. */
static int pick(const model_t *m) {
  int best = -1;
  for (int b = 0; b < m->nact_f32; b++)
    if (!(m->act_f32_busy >> b & 1u) && (best < 0 || m->act_f32_used[b] < m->act_f32_used[best])) best = b;
  if (best < 0)
    surge_runtime_error("a call asks for more than the %d float buffers of its activations held in bfloat16 (a bug: "
                        "act16_plan counts them)", m->nact_f32);
  return best;
}

static float *give(model_t *m, int b) {
  m->act_f32_busy |= 1u << b;
  m->act_f32_used[b] = ++m->act_f32_clock;
  return m->act_f32[b];
}

/* Buffer b now holds rows [off, off + B) of held node j; fresh (its forward writes them), the others lose any of
 * j's rows (they change). */
static void tag(model_t *m, int b, int j, int off, int B, int fresh) {
  for (int o = 0; fresh && o < m->nact_f32; o++)
    if (o != b && m->act_f32_of[o].node == j) m->act_f32_of[o].node = 0;
  m->act_f32_of[b] = (model_rows_t){j, off, B};
}

void act16_call(model_t *m) { m->act_f32_busy = 0; }

/* Held node j's rows [off, off + B) as floats for the call being built: a buffer that still holds them, else widened
 * into one. */
static float *held_rows(model_t *m, int j, int off, int B) {
  int b = holding(m, j, off, B);
  if (b >= 0) return give(m, b);
  b = pick(m);
  const size_t sz = shape_size(m->g->l[j].out);
  m->be->from_bf16((size_t)B * sz, m->act16[j] + (size_t)off * sz, m->act_f32[b]);
  tag(m, b, j, off, B, 0);
  return give(m, b);
}

float *act16_input(model_t *m, int i, int k, int off, int B) {
  const int src = m->g->l[i].in[k];
  const size_t sz = shape_size(m->g->l[src].out);
  if (!model_held16(m, src)) return m->in[i][k] + (size_t)off * sz;
  if (m->in[i][k])
    surge_runtime_error("node %d reads node %d from a buffer of its layout's, but that activation is held in bfloat16 "
                        "(a bug: act16_plan holds only activations whose readers run on the same samples)", i, src);
  return held_rows(m, src, off, B);
}

float *act16_own(model_t *m, int i, int off, int B) {
  if (!model_held16(m, i)) return m->act[i] + (size_t)off * shape_size(m->g->l[i].out);
  /* held, so any read is rounded (output_read_rounded): by its own backward, or as its epilogue's input */
  const int reads = !layer_ops_of(m->g->l[i].kind)->output_unread || m->epi[i] > 0;
  return reads ? held_rows(m, i, off, B) : NULL;
}

float *act16_output(model_t *m, int j, int off, int B) {
  if (!model_held16(m, j)) return m->act[j] + (size_t)off * shape_size(m->g->l[j].out);
  const int b = pick(m);
  tag(m, b, j, off, B, 1);
  return give(m, b);
}

void act16_store(model_t *m, int j, int off, int B) {
  if (!model_held16(m, j)) return;
  const int b = holding(m, j, off, B);
  if (b < 0) surge_runtime_error("node %d's output is not in a float buffer to be rounded (a bug)", j);
  const size_t sz = shape_size(m->g->l[j].out);
  m->be->to_bf16((size_t)B * sz, m->act_f32[b], m->act16[j] + (size_t)off * sz);
}
