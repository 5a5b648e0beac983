/* The "cpu" backend's floating-point mode: flush-to-zero (results below FLT_MIN become 0) and
 * denormals-are-zero (such inputs count as 0), set on the thread that opens the backend, the rank's
 * own (OpenBLAS's worker threads, where threads > 1, keep theirs).
 *
 * Why: an SGD momentum or Adam first moment of a unit whose gradient is 0 (a dead ReLU) decays by
 * its beta every step and is a denormal after ~800 steps at 0.9; every multiply and FMA on one then
 * takes a microcode assist: on 2 ranks of mlp the update was 18% of the time of the rank whose
 * slice held them, against 10.5% once flushed (perf). The values lost are below 1.2e-38, far under
 * any tolerance here. The backend's open (which sets it, with the precision and the kernel width) and its
 * context are here too. */
#include "backend/cpu_ops.h"
#include "backend/host_mem.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
enum { MXCSR_DAZ = 1 << 6, MXCSR_FTZ = 1 << 15 };

int cpu_set_flush_denormals(int on) {
  unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? csr | MXCSR_DAZ | MXCSR_FTZ : csr & ~(unsigned)(MXCSR_DAZ | MXCSR_FTZ));
  return 1;
}

int cpu_flush_denormals_on(void) { return (_mm_getcsr() & (MXCSR_DAZ | MXCSR_FTZ)) == (MXCSR_DAZ | MXCSR_FTZ); }

#elif defined(__aarch64__)
enum { FPCR_FZ = 1 << 24 }; /* flush-to-zero, inputs and results alike */

int cpu_set_flush_denormals(int on) {
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = on ? fpcr | FPCR_FZ : fpcr & ~(unsigned long)FPCR_FZ;
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
  return 1;
}

int cpu_flush_denormals_on(void) {
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr & FPCR_FZ) != 0;
}

#else
int cpu_set_flush_denormals(int on) {
  (void)on;
  return 0;
}

int cpu_flush_denormals_on(void) { return 0; }
#endif

const char *cpu_open(const backend_options_t *o, int *input_error) {
  const char *why = host_open(o, input_error);
  if (why) return why;
  if ((why = cpu_simd_use(o->simd))) {
    *input_error = 1;
    return why;
  }
  if (o->precision == BACKEND_BF16 && (!CPU_KERNELS_BUILT || cpu_simd() == BACKEND_SIMD_NONE)) {
    *input_error = 1; /* its bf16 products run on its own kernels (cpu_gemm.c) */
    if (!CPU_KERNELS_BUILT)
      return "cannot run precision = bf16 in this build: its bf16 products run on its own kernels, built for x86-64 "
             "with GCC only (use precision = fp32)";
    return o->simd == BACKEND_SIMD_NONE ? "cannot run precision = bf16 with simd = none: its bf16 products run on its "
                                          "own kernels (use simd = auto, avx512 or avx2, or precision = fp32)"
                                        : "cannot run precision = bf16 on this CPU: its bf16 products need AVX2 and "
                                          "FMA at least (use precision = fp32)";
  }
  cpu_gemm_use(o->gemm);
  cpu_set_flush_denormals(o->flush_denormals);
  return NULL;
}

const backend_context_t *cpu_context(void) {
  static _Thread_local backend_context_t c;
  c = *host_context();
  c.weights16_rows = host_products_bf16() ? cpu_gemm_bf16_rows_max() : 0;
  return &c;
}
