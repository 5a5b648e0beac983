#include "core/exact.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *exact_text(double v, char *buf) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, EXACT_LEN, "%.*g", digits, v);
    if (!isfinite(v) || strtod(buf, NULL) == v) break;
  }
  char plain[EXACT_LEN]; /* a whole number as digits where that is no longer: 20, not 2e+01 (but 1e+12) */
  if (isfinite(v) && v == floor(v) && fabs(v) < 1e15 &&
      (size_t)snprintf(plain, sizeof plain, "%.0f", v) <= strlen(buf))
    memcpy(buf, plain, strlen(plain) + 1);
  return buf;
}
