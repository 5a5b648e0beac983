/* The relative difference the backend tests compare arrays by: ||a - b|| / max(||b||, tiny), in
 * double. */
#ifndef SURGE_TESTS_REL_DIFF_H
#define SURGE_TESTS_REL_DIFF_H

#include <math.h>
#include <stddef.h>

static inline double rel_diff(const float *a, const float *b, size_t n) {
  double d2 = 0.0, b2 = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)a[i] - b[i];
    d2 += d * d;
    b2 += (double)b[i] * b[i];
  }
  return sqrt(d2) / fmax(sqrt(b2), 1e-30);
}

#endif
