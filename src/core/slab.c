#include "core/slab.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void slab_layout_init(slab_layout_t *L) { memset(L, 0, sizeof *L); }

void slab_layout_free(slab_layout_t *L) {
  free(L->t);
  memset(L, 0, sizeof *L);
}

int slab_layout_add(slab_layout_t *L, const char *name, int ndim, const int *dims, int owner) {
  if (ndim < 1 || ndim > SLAB_MAX_DIMS) surge_runtime_error("tensor %s: %d dims (1..%d allowed)", name, ndim, SLAB_MAX_DIMS);
  if (L->n == L->cap) {
    L->cap = L->cap ? 2 * L->cap : 16;
    L->t = xrealloc(L->t, (size_t)L->cap * sizeof *L->t);
  }
  slab_tensor_t *t = &L->t[L->n];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->ndim = ndim;
  t->n = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] <= 0) surge_input_error("tensor %s: dimension %d is %d (must be positive)", name, i, dims[i]);
    t->d[i] = dims[i];
    t->n = surge_mul_size(t->n, (size_t)dims[i], name);
  }
  t->off = L->total;
  t->owner = owner;
  L->total += t->n;
  return L->n++;
}

int slab_layout_find(const slab_layout_t *L, const char *name) {
  for (int i = 0; i < L->n; i++)
    if (strcmp(L->t[i].name, name) == 0) return i;
  return -1;
}

float *slab_alloc(const slab_layout_t *L) {
  size_t bytes = surge_mul_size(L->total ? L->total : 1, sizeof(float), "slab");
  bytes = (bytes + 63) / 64 * 64;
  float *p = aligned_alloc(64, bytes);
  if (!p) surge_runtime_error("out of memory allocating a slab of %zu bytes", bytes);
  memset(p, 0, bytes);
  return p;
}

void slab_free(float *p) { free(p); }
