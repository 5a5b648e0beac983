/* "cpu" backend: which vector width its hand-written kernels (direct convolutions, the 2x2
 * max-pool, the unpacked linear forward) run at, chosen once when the backend opens: the widest
 * this CPU executes (simd = auto), or the one the deck forces; "none" leaves those ops to the
 * general loops and OpenBLAS. Loops the compiler vectorises itself (CPU_CLONES, cpu_ops.h) are
 * not affected: their results do not depend on the width. */
#include <stdio.h>

#include "backend/cpu_ops.h"
#include "backend/cpu_simd_tables.h"

int32_t cpu_simd_expand8[256][8] __attribute__((aligned(32)));
int32_t cpu_simd_compress8[256][8] __attribute__((aligned(32)));

__attribute__((constructor)) static void simd_tables(void) {
  for (int bits = 0; bits < 256; bits++) {
    int n = 0;
    for (int l = 0; l < 8; l++) {
      cpu_simd_expand8[bits][l] = (bits >> l & 1) ? n : 0;
      cpu_simd_compress8[bits][l] = 0;
      if (bits >> l & 1) n++;
    }
    n = 0;
    for (int l = 0; l < 8; l++)
      if (bits >> l & 1) cpu_simd_compress8[bits][n++] = l;
  }
}

/* per thread: an in-process background's trainer opens its own backend with its own deck's simd */
static _Thread_local backend_simd_t in_use = BACKEND_SIMD_AUTO; /* AUTO: not chosen yet, the best on first use */

backend_simd_t cpu_simd_best(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return BACKEND_SIMD_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return BACKEND_SIMD_AVX2;
#endif
  return BACKEND_SIMD_NONE;
}

const char *cpu_simd_name(backend_simd_t w) {
  switch (w) {
  case BACKEND_SIMD_AUTO: return "auto";
  case BACKEND_SIMD_NONE: return "none";
  case BACKEND_SIMD_AVX2: return "avx2";
  case BACKEND_SIMD_AVX512: return "avx512";
  }
  return "?";
}

const char *cpu_simd_use(backend_simd_t want) {
  const backend_simd_t best = cpu_simd_best();
  if (want == BACKEND_SIMD_AUTO) want = best;
  if (want > best) {
    static _Thread_local char why[160];
    snprintf(why, sizeof why, "simd = %s, but this CPU runs at most %s (%s)", cpu_simd_name(want),
             cpu_simd_name(best),
             want == BACKEND_SIMD_AVX512 ? "no AVX-512F in its flags" : "no AVX2 and FMA in its flags");
    return why;
  }
  in_use = want;
  return NULL;
}

backend_simd_t cpu_simd(void) {
  if (in_use == BACKEND_SIMD_AUTO) in_use = cpu_simd_best();
  return in_use;
}
