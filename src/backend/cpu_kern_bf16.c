/* "cpu" backend: the packed GEMM of precision = bf16 in bfloat16 pairs (AVX-512 BF16's VDPBF16PS:
 * Zen 4 and later, Cooper Lake, Sapphire Rapids and later), from the template written once over the
 * width (cpu_gemm_kern.h, GK_PAIRS); cpu_gemm.c runs it where the CPU has the instructions. */
#include "backend/cpu_ops.h"
#if CPU_KERNELS_BUILT
#define SIMD_W 16
#define SIMD_BF16 1
#define GK_PAIRS 1
#include "backend/cpu_gemm_kern.h"
#endif
