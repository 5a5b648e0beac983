/* The registry of compiled-in backends, looked up by name (decks and command lines name them),
 * opening one for the process, and the convolution workspace that suits all of them. */
#include "backend/backend_open.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"

static const backend_t *const backends[] = {&backend_cpu, &backend_ref, &backend_cuda};
enum { NBACKENDS = sizeof backends / sizeof backends[0], NAMES_MAX = 256 };

const backend_t *backend_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NBACKENDS; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}

const char *backend_names(void) {
  static _Thread_local char names[NAMES_MAX];
  if (!names[0])
    for (size_t i = 0; i < NBACKENDS; i++) names_append(names, sizeof names, backends[i]->name);
  return names;
}

backend_options_t backend_default_options(void) {
  return (backend_options_t){.device = -1, .precision = BACKEND_FP32, .flush_denormals = 1, .bf16_activations = 1};
}

const backend_t *backend_open(const char *name, const backend_options_t *o, const char *where, MPI_Comm job) {
  const backend_t *be = backend_find(name);
  if (!be) surge_input_error("%s: [backend] name: unknown backend '%s' (accepted: %s)", where, name, backend_names());
  int input_error = 0, rank = 0, size = 1;
  const char *why = be->open(o, &input_error);
  MPI_Comm_rank(job, &rank);
  MPI_Comm_size(job, &size);
  int mine = why ? rank : size, reporter = size;
  MPI_Allreduce(&mine, &reporter, 1, MPI_INT, MPI_MIN, job);
  if (reporter == size) return be;
  if (rank != reporter) { /* the reporter's error ends the job (MPI_Abort): wait for it */
    MPI_Barrier(job);
    surge_runtime_error("backend %s: rank %d could not open it", name, reporter);
  }
  if (input_error) surge_input_error("%s: [backend] the %s backend %s", where, name, why);
  surge_runtime_error("backend %s: %s", name, why);
}

/* The largest of every compiled-in backend's workspace op `op` called with ARGS. */
#define WORKSPACE_MOST(op, ...)                                   \
  do {                                                            \
    size_t most = 0;                                              \
    for (size_t i = 0; i < NBACKENDS; i++) {                      \
      size_t n = backends[i]->op(__VA_ARGS__);                    \
      if (n > most) most = n;                                     \
    }                                                             \
    return most;                                                  \
  } while (0)

size_t linear_workspace_floats(int out, int in) { WORKSPACE_MOST(linear_workspace, out, in); }
size_t attention_workspace_floats(int T, int hs) { WORKSPACE_MOST(attention_workspace, T, hs); }
size_t conv_workspace_floats(const conv_shape_t *s) { WORKSPACE_MOST(conv_workspace, s); }
