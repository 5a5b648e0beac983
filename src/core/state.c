#include "core/state.h"

#include <stdio.h>
#include <string.h>

void state_tensor_replicated(state_tensor_t *out, const slab_tensor_t *t, int rank, int ranks) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", t->name);
  out->ndim = t->ndim;
  for (int i = 0; i < t->ndim; i++) out->dims[i] = out->count[i] = (size_t)t->d[i];
  out->replica = rank;
  out->replicas = ranks;
}

void state_box_copy(float *tensor, float *box, int ndim, const size_t *dims, const size_t *start,
                    const size_t *count, int to_box) {
  if (ndim == 1) {
    if (to_box) memcpy(box, tensor + start[0], count[0] * sizeof *box);
    else memcpy(tensor + start[0], box, count[0] * sizeof *box);
    return;
  }
  size_t inner = 1, rows = 1; /* floats per index of dimension 0: in the tensor, in the box */
  for (int k = 1; k < ndim; k++) inner *= dims[k], rows *= count[k];
  for (size_t i = 0; i < count[0]; i++)
    state_box_copy(tensor + (start[0] + i) * inner, box + i * rows, ndim - 1, dims + 1, start + 1, count + 1, to_box);
}

int state_tensor_end(const state_region_t *r, int i) {
  int j = i + 1;
  while (j < r->n && strcmp(r->t[j].name, r->t[i].name) == 0) j++;
  return j;
}

/* splitmix64's finaliser: every input bit changes about half the output bits. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t state_hash_rows(const state_tensor_t *t, size_t row_lo, size_t row_hi) {
  if (t->ndim < 1 || row_hi <= row_lo) return 0;
  int nd = t->ndim;
  size_t stride[SLAB_MAX_DIMS], run = nd == 1 ? row_hi - row_lo : t->count[nd - 1], per_row = 1;
  stride[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; d--) stride[d] = stride[d + 1] * t->dims[d + 1];
  for (int d = 1; d < nd; d++) per_row *= t->count[d];
  if (run == 0 || per_row == 0) return 0;
  uint64_t h = 0;
  size_t idx[SLAB_MAX_DIMS] = {0}; /* position within the hyperslab, last dimension excluded */
  idx[0] = row_lo;
  const float *x = t->data + row_lo * per_row;
  for (;;) {
    size_t base = 0; /* global linear index of the run's first element */
    for (int d = 0; d < nd - 1; d++) base += (t->start[d] + idx[d]) * stride[d];
    base += t->start[nd - 1] + (nd == 1 ? row_lo : 0);
    for (size_t k = 0; k < run; k++) {
      uint32_t bits;
      memcpy(&bits, &x[k], sizeof bits);
      h += mix64(((uint64_t)(base + k) << 32 ^ (uint64_t)(base + k) >> 32) * 0x9e3779b97f4a7c15ull ^ bits);
    }
    x += run;
    int d = nd - 2; /* the next run: odometer over the leading dimensions */
    while (d >= 0 && ++idx[d] == (d == 0 ? row_hi : t->count[d])) {
      if (d == 0) return h;
      idx[d--] = 0;
    }
    if (d < 0) return h; /* a 1-D tensor is a single run */
  }
}
