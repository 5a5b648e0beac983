/* gpu_probe [fp32|bf16]: whether the cuda backend can open a GPU here. Prints one line, "<dense
 * peak FLOP/s in that precision> <device name>" and exits 0; or the reason there is none and exits
 * 77 (the skip status of tests/gpu/ and tests/gpu/device-check.sh). Every build has it: without
 * CUDA the backend's open says the build has none. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"

int main(int argc, char **argv) {
  backend_options_t o = backend_default_options();
  if (argc > 1 && strcmp(argv[1], "bf16") == 0) o.precision = BACKEND_BF16;
  int input_error = 0;
  const char *why = backend_cuda.open(&o, &input_error);
  if (why) {
    printf("no GPU: %s\n", why);
    return 77;
  }
  const backend_context_t *c = backend_cuda.context();
  printf("%.6g %s\n", c->peak_flops, c->device);
  backend_cuda.close();
  return 0;
}
