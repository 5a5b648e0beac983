/* What a cuda backend file takes from the rest of the library, for its tests on the host over a
 * faked CUDA runtime (tests/test_cuda_graph.c, tests/test_cuda_marks.c): a failed CUDA call ends the
 * run with exit 1 and one line, as the backend's own cuda_check does through surge_fail. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda_impl.h"
#include "core/error.h"

void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) surge_fail(1, "cuda: %s failed", what);
}

_Noreturn void surge_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "surge: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(code);
}
