#include "core/exact.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *exact_text(double v, char *buf) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, EXACT_LEN, "%.*g", digits, v);
    if (!isfinite(v) || strtod(buf, NULL) == v) break;
  }
  return buf;
}
