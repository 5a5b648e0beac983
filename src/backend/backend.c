/* The registry of compiled-in backends, looked up by name (decks and command lines name them), and
 * the convolution workspace that suits all of them. */
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

size_t conv_workspace_floats(const conv_shape_t *s) {
  size_t most = 0;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    size_t n = backends[i]->conv_workspace(s);
    if (n > most) most = n;
  }
  return most;
}
