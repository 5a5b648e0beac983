/* Host memory and the trivial context shared by the CPU backends ("cpu" and "ref"): backend memory
 * is host memory, so alloc is a zeroed 64-byte aligned block and upload/download/copy are memcpy;
 * their ops run on the calling thread, so there is nothing to wait for. */
#ifndef SURGE_BACKEND_HOST_MEM_H
#define SURGE_BACKEND_HOST_MEM_H

#include <stddef.h>

#include "backend/backend.h"

float *host_mem_alloc(size_t n);
void host_mem_free(float *p);
/* dst = src, n floats; serves as copy, and (counted as a wait, backend_context_t.waits) as upload
 * and download. */
void host_mem_copy(float *dst, const float *src, size_t n);
void host_mem_upload(float *dst, const float *src, size_t n);
void host_mem_download(float *dst, const float *src, size_t n);
/* Count a wait of the calling thread: a host backend's op that returns a value (what would wait for
 * its stream on a device). */
void host_mem_waited(void);
/* device_used of host backends: no device, 0. */
size_t host_mem_device_used(void);
/* set_priority of host backends: the work runs on the process's own threads, whose priority is
 * the OS's (mux/priority.c); nothing to change here. */
const char *host_set_priority(int low);

/* The context of host backends. open takes the precision of the thread's matrix products (tf32 is
 * moot on a CPU): float32, or bf16 (operands rounded to bfloat16, sums in float32 or wider). The host
 * backends share it: a thread's last open decides; host_products_bf16 says which. */
const char *host_open(const backend_options_t *o, int *input_error);
extern _Thread_local int host_bf16;
static inline int host_products_bf16(void) { return host_bf16; }
void host_close(void);
void host_synchronize(void);
const backend_context_t *host_context(void);

/* The slots of a backend_t that every host backend fills alike (memory, priority); the backend adds its
 * name, open, context (host_context, or its own from it), set_threads and its ops. */
#define HOST_BACKEND_SLOTS                                                                                  \
  .host_memory = 1, .close = host_close, .synchronize = host_synchronize,                                  \
  .set_priority = host_set_priority, .alloc = host_mem_alloc, .free = host_mem_free, .upload = host_mem_upload, \
  .download = host_mem_download, .copy = host_mem_copy, .device_used = host_mem_device_used

#endif
