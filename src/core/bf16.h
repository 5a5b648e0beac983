/* bfloat16 on the host: the top 16 bits of a float32 (sign, the 8 exponent bits, 7 of the 23
 * fraction bits). bf16_bits rounds as CUDA's __float2bfloat16 and x86's VCVTNE2PS2BF16 do: to
 * nearest, ties to even, values past the largest bfloat16 to infinity; a NaN stays a (quiet) NaN.
 * Used by the weight files (io/weights.c), the host backends' bf16 products (backend/ref_fused.h,
 * backend/cpu_bf16.c) and the host form of the GPU attention's conversions (cuda_attention_mma.h). */
#ifndef SURGE_CORE_BF16_H
#define SURGE_CORE_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t bf16_bits(float x) { /* without branches, so loops over it vectorise */
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  const uint32_t nearest = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, nan = (u >> 16) | 0x40u;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : nearest);
}

static inline float bf16_value(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* x rounded to the nearest bfloat16, as a float */
static inline float bf16_round(float x) { return bf16_value(bf16_bits(x)); }

#endif
