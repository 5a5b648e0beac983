/* The CUDA runtime's last error, faked for the host tests of CUDA code (tests/cuda_fake_error.c):
 * a fake call that fails as CUDA's would records its error here, where cudaGetLastError reads and
 * clears it; cudaGetErrorString and cudaGetErrorName name any error "a fake error". */
#ifndef SURGE_TESTS_CUDA_FAKE_ERROR_H
#define SURGE_TESTS_CUDA_FAKE_ERROR_H

#include <cuda_runtime_api.h>

/* Keep e as the thread's last error (as CUDA's runtime does with a failed call's) and return it. */
cudaError_t fake_cuda_error(cudaError_t e);

#endif
