/* The part of the cuda backend's fallback rule for cuBLASLt's epilogues (cuda_lt.c; doc/gpu.md
 * "cuBLASLt epilogues") that is settled before cuBLASLt's heuristic is asked: the setting, the
 * shape, pre's leading dimension and the operands' alignment. Plain C on backend.h's types, so
 * tests/test_cuda_lt_rule checks it on the host in every build. */
#ifndef SURGE_BACKEND_CUDA_LT_RULE_H
#define SURGE_BACKEND_CUDA_LT_RULE_H

#include <stdint.h>

#include "backend/backend.h"

#define LT_MIN_ALIGN 16 /* bytes: where every operand of a fused call must start */

/* Why a linear forward runs as GEMM + kernels (LT_TAKEN: it may run fused, the heuristic decides). */
typedef enum lt_refusal {
  LT_TAKEN = 0,
  LT_SETTING,   /* epilogues = off, or bias for the GELU form */
  LT_NO_BIAS,   /* linear_fwd without a bias: nothing for an epilogue to do */
  LT_EMPTY,     /* a dimension of 0 */
  LT_AUX_LD,    /* the GELU form with out % 8 != 0: cuBLASLt's rule for the aux matrix's ld (= out) */
  LT_ALIGNMENT  /* an operand not on a 16-byte boundary */
} lt_refusal_t;

/* The largest power of two up to 256 dividing p's address (NULL: 256, it constrains nothing). */
static inline int lt_alignment(const void *p) {
  uintptr_t a = (uintptr_t)p;
  int al = 256;
  while (p && al > 1 && a % (uintptr_t)al) al /= 2;
  return al;
}

/* The rule for y (rows, out) = x (rows, in) w (out, in)^T + b, with GELU when pre is not NULL (b may
 * then be NULL); align[] gets the operands' alignments in bytes, in the order w, x, y, b, pre. */
static inline lt_refusal_t lt_rule(backend_epilogues_t mode, int rows, int out, int in, const float *x,
                                   const float *w, const float *b, const float *pre, const float *y, int align[5]) {
  const void *p[5] = {w, x, y, b, pre};
  for (int i = 0; i < 5; i++) align[i] = lt_alignment(p[i]);
  if (mode == BACKEND_EPILOGUES_OFF || (pre && mode != BACKEND_EPILOGUES_AUTO)) return LT_SETTING;
  if (!pre && !b) return LT_NO_BIAS;
  if (rows <= 0 || out <= 0 || in <= 0) return LT_EMPTY;
  if (pre && out % 8 != 0) return LT_AUX_LD;
  for (int i = 0; i < 5; i++)
    if (align[i] < LT_MIN_ALIGN) return LT_ALIGNMENT;
  return LT_TAKEN;
}

#endif
