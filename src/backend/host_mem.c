/* Host memory for the CPU backends. */
#include "backend/host_mem.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

enum { HOST_MEM_ALIGN = 64 };

float *host_mem_alloc(size_t n) {
  size_t bytes = surge_mul_size(n, sizeof(float), "backend allocation");
  // aligned_alloc needs a size that is a positive multiple of the alignment
  size_t rounded = (bytes + HOST_MEM_ALIGN - 1) / HOST_MEM_ALIGN * HOST_MEM_ALIGN;
  if (rounded == 0) rounded = HOST_MEM_ALIGN;
  if (rounded < bytes) surge_runtime_error("backend allocation of %zu floats overflows", n);
  float *p = aligned_alloc(HOST_MEM_ALIGN, rounded);
  if (!p) surge_runtime_error("out of memory allocating %zu bytes of backend memory", rounded);
  memset(p, 0, rounded);
  return p;
}

void host_mem_free(float *p) { free(p); }

static _Thread_local long host_waits; /* backend_context_t.waits of the calling thread */

void host_mem_waited(void) { host_waits++; }

void host_mem_copy(float *dst, const float *src, size_t n) {
  if (n && dst != src) memcpy(dst, src, n * sizeof(float));
}

void host_mem_upload(float *dst, const float *src, size_t n) {
  if (n) host_waits++;
  host_mem_copy(dst, src, n);
}

void host_mem_download(float *dst, const float *src, size_t n) {
  if (n) host_waits++;
  host_mem_copy(dst, src, n);
}

size_t host_mem_device_used(void) { return 0; }

const char *host_set_priority(int low) {
  (void)low;
  return "host threads: the OS priority applies";
}

/* per thread, as the backend is opened per thread (an in-process background's deck has its own) */
_Thread_local int host_bf16;
static _Thread_local int host_act16;

const char *host_open(const backend_options_t *o, int *input_error) {
  *input_error = 0;
  host_bf16 = o->precision == BACKEND_BF16;
  host_act16 = host_bf16 && o->bf16_activations;
  return NULL;
}

void host_close(void) { host_bf16 = host_act16 = 0; }

void host_synchronize(void) {}

const backend_context_t *host_context(void) {
  static _Thread_local backend_context_t host = {
      .device = "host", .index = -1, .epilogues = "none", .attention = "none"};
  host.precision = host_bf16 ? "bf16" : "fp32";
  host.kv16 = host_bf16;
  host.act16 = host_act16;
  host.waits = host_waits;
  return &host;
}
