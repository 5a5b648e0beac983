/* Host memory ops shared by the CPU backends ("cpu" and "ref"): backend memory is host memory,
 * so alloc is a zeroed 64-byte aligned block and upload/download/copy are memcpy. */
#ifndef SURGE_BACKEND_HOST_MEM_H
#define SURGE_BACKEND_HOST_MEM_H

#include <stddef.h>

float *host_mem_alloc(size_t n);
void host_mem_free(float *p);
/* dst = src, n floats; serves as upload, download and copy. */
void host_mem_copy(float *dst, const float *src, size_t n);
/* set_priority of host backends: the work runs on the process's own threads, whose priority is
 * the OS's (mux/priority.c); nothing to change here. */
const char *host_set_priority(int low);

#endif
