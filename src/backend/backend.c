/* The registry of compiled-in backends, looked up by name (decks and command lines name them), and
 * the convolution workspace that suits all of them. */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

#include "core/names.h"

static const backend_t *const backends[] = {&backend_cpu, &backend_ref};
enum { NBACKENDS = sizeof backends / sizeof backends[0], NAMES_MAX = 256 };

const backend_t *backend_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NBACKENDS; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}

const char *backend_names(void) {
  static char names[NAMES_MAX];
  if (!names[0])
    for (size_t i = 0; i < NBACKENDS; i++) names_append(names, sizeof names, backends[i]->name);
  return names;
}

size_t conv_workspace_floats(const conv_shape_t *s) {
  size_t most = 0;
  for (size_t i = 0; i < NBACKENDS; i++) {
    size_t n = backends[i]->conv_workspace(s);
    if (n > most) most = n;
  }
  return most;
}
