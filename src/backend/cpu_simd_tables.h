/* Internal to the "cpu" backend: the lane tables that AVX2's expanding loads and compresses are
 * made of (cpu_simd.h), one row of 8 lane indices per 8-bit lane mask; filled at load time by
 * cpu_simd.c. expand8[bits][l]: for a lane l set in bits, how many set lanes are below it (the
 * packed value it takes); compress8[bits][j]: the j-th set lane (0 past the last). */
#ifndef SURGE_BACKEND_CPU_SIMD_TABLES_H
#define SURGE_BACKEND_CPU_SIMD_TABLES_H

#include <stdint.h>

extern int32_t cpu_simd_expand8[256][8];
extern int32_t cpu_simd_compress8[256][8];

#endif
