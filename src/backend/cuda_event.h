/* Polling a CUDA event, for the code that asks whether one has passed without waiting for it
 * (cuda_marks.c, comm/comm_nccl.c). */
#ifndef SURGE_BACKEND_CUDA_EVENT_H
#define SURGE_BACKEND_CUDA_EVENT_H

#include <cuda_runtime_api.h>

/* cudaSuccess when ev has passed, cudaErrorNotReady when not yet, else the query's error. A query's
 * cudaErrorNotReady stays the thread's last error, which the next kernel launch's check
 * (cudaGetLastError) would report as its own, so it is cleared here (as PyTorch does after its
 * queries). */
static inline cudaError_t cuda_event_poll(cudaEvent_t ev) {
  const cudaError_t e = cudaEventQuery(ev);
  if (e == cudaErrorNotReady) (void)cudaGetLastError();
  return e;
}

#endif
