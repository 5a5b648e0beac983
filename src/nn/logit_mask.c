/* The padded columns' mask (nn/logit_mask.h). */
#include "nn/logit_mask.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"

float *logit_mask_new(const backend_t *be, int V, int lo, int valid) {
  if (valid <= 0 || lo + V <= valid) return NULL;
  float *host = xmalloc((size_t)V * sizeof *host);
  for (int c = 0; c < V; c++) host[c] = lo + c < valid ? 0.0f : -INFINITY;
  float *mask = be->alloc((size_t)V);
  be->upload(mask, host, (size_t)V);
  free(host);
  return mask;
}

void logit_mask_apply(const backend_t *be, const float *mask, int rows, int V, float *logits) {
  if (mask) be->bias_add_rows(rows, V, mask, logits);
}
