/* Per-sample shapes: an activation buffer for a batch is (B, d[0], ..., d[ndim-1]) in row-major order,
 * so the samples of a batch are contiguous and any sample range is one slice. Images are (C, H, W),
 * sequences (T, C), token inputs (T), flat features (N). */
#ifndef SURGE_SHAPE_H
#define SURGE_SHAPE_H

#include <stddef.h>
#include <stdio.h>

#define SHAPE_MAX_DIMS 3

typedef struct shape {
  int ndim;
  int d[SHAPE_MAX_DIMS];
} shape_t;

static inline shape_t shape1(int a) { return (shape_t){1, {a, 1, 1}}; }
static inline shape_t shape2(int a, int b) { return (shape_t){2, {a, b, 1}}; }
static inline shape_t shape3(int a, int b, int c) { return (shape_t){3, {a, b, c}}; }

/* Number of floats per sample. */
static inline size_t shape_size(shape_t s) {
  size_t n = 1;
  for (int i = 0; i < s.ndim; i++) n *= (size_t)s.d[i];
  return n;
}

/* "(C,H,W)"-style text for messages. */
static inline const char *shape_str(shape_t s, char *buf, size_t n) {
  int k = snprintf(buf, n, "(");
  for (int i = 0; i < s.ndim && k > 0 && (size_t)k < n; i++)
    k += snprintf(buf + k, n - (size_t)k, i ? ",%d" : "%d", s.d[i]);
  if (k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, ")");
  return buf;
}

#endif
