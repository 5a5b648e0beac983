/* The "cuda" backend of a build without the CUDA toolkit: the name exists (decks are the same for
 * every build), and opening it says why it cannot run. */
#include "backend/backend.h"
#include "backend/host_mem.h"

static const char *absent_open(const backend_options_t *o, int *input_error) {
  (void)o;
  *input_error = 0;
  return "this build has no CUDA backend: configure found no usable CUDA toolkit with cuBLAS and NCCL "
         "(hint: install it, or point ../configure --with-cuda=DIR at it, and rebuild)";
}

static size_t absent_conv_workspace(const conv_shape_t *s) {
  (void)s;
  return 0;
}

static size_t absent_linear_workspace(int out, int in) {
  (void)out, (void)in;
  return 0;
}

static size_t absent_attention_workspace(int T, int hs) {
  (void)T, (void)hs;
  return 0;
}

const backend_t backend_cuda = {
    .name = "cuda",
    .host_memory = 0,
    .open = absent_open,
    .close = host_close,
    .synchronize = host_synchronize,
    .context = host_context,
    .conv_workspace = absent_conv_workspace,
    .linear_workspace = absent_linear_workspace,
    .attention_workspace = absent_attention_workspace,
};
