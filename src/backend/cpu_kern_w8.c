/* "cpu" backend: the hand-written kernels at 8 floats (AVX2 + FMA), from the templates written once over the
 * width (cpu_simd.h); cpu_simd.c picks the width at start-up. */
#include "backend/cpu_ops.h"
#if CPU_KERNELS_BUILT
#define SIMD_W 8
#include "backend/cpu_direct_kern.h"
#include "backend/cpu_gemm_kern.h"
#include "backend/cpu_linear_kern.h"
#include "backend/cpu_pool_kern.h"
#include "backend/cpu_rows_kern.h"
#endif
