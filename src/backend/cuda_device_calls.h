/* The rules of the cuda backend's recorded pieces (cuda_graph.c: a background records its pieces as
 * CUDA graphs, in a thread of its foreground's process) for every caller of CUDA in the process, the
 * backend's own files and the comm layer's device side (comm/comm_nccl.c) alike. */
#ifndef SURGE_BACKEND_CUDA_DEVICE_CALLS_H
#define SURGE_BACKEND_CUDA_DEVICE_CALLS_H

/* Before anything that waits for the stream or is not stream-ordered (a copy with the host, an
 * allocation or free, synchronize): end the calling thread's recording, if any, as capture_end would. */
void cuda_capture_leave(void);
/* Around a device-wide call (cudaMalloc, cudaFree, a library's set-up and teardown that make them) of
 * any thread: ends the calling thread's recording, then waits until no other thread of the process is
 * recording. Nothing between the two may end the thread (check the call's error after the end). */
void cuda_device_call_begin(void);
void cuda_device_call_end(void);

#endif
