/* The CUDA runtime's last error, faked (tests/cuda_fake_error.h). */
#include "cuda_fake_error.h"

static _Thread_local cudaError_t last_error = cudaSuccess;

cudaError_t fake_cuda_error(cudaError_t e) { return last_error = e; }

cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "a fake error"; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorFake"; }
