/* The registry of compiled-in backends, looked up by name (decks and command lines name them), and
 * the workspace contract of the convolution ops that every backend shares. */
#include "backend/backend.h"

#include <string.h>

static const backend_t *const backends[] = {&backend_cpu, &backend_ref};

const backend_t *backend_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}

const char *backend_names(void) { return "cpu, ref"; }

/* A block of nb samples needs: the lowering col (C*KH*KW, nb*OH*OW), the output or gradient block
 * (O, nb*OH*OW), one block's weight gradient (O, C*KH*KW) and its double accumulator (twice that in
 * floats), the bias gradient's double accumulator (2*O floats), and 16 floats of alignment slack
 * for each of those five pieces. */
static size_t conv_ws_for(const conv_shape_t *s, size_t nb) {
  size_t ckk = (size_t)s->C * s->KH * s->KW, cols = nb * (size_t)s->OH * s->OW;
  return (ckk + (size_t)s->O) * cols + 3 * (size_t)s->O * ckk + 2 * (size_t)s->O + 5 * 16;
}

/* Whole samples up to CONV_BLOCK_COLUMNS output positions, at least one. */
static size_t conv_default_block(const conv_shape_t *s) {
  size_t ohow = (size_t)s->OH * s->OW;
  return ohow >= CONV_BLOCK_COLUMNS ? 1 : CONV_BLOCK_COLUMNS / ohow;
}

size_t conv_workspace_floats(const conv_shape_t *s) { return conv_ws_for(s, conv_default_block(s)); }

int conv_block_samples(const conv_shape_t *s, size_t ws_n) {
  size_t fixed = conv_ws_for(s, 0), per = conv_ws_for(s, 1) - fixed;
  if (ws_n < fixed + per) return 0;
  size_t nb = (ws_n - fixed) / per, cap = conv_default_block(s);
  return (int)(nb < cap ? nb : cap);
}
