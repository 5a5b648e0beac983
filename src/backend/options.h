/* The deck's [backend] section, declared here as this part's rows (core/keys.h); io/options.h
 * turns it into backend_options_t (backend/backend.h) with the rank's place on its node. */
#ifndef SURGE_BACKEND_OPTIONS_H
#define SURGE_BACKEND_OPTIONS_H

#include "core/keys.h"

typedef struct backend_deck {
  char name[16];       /* cpu | ref | cuda */
  int threads;         /* BLAS threads per rank */
  int device;          /* cuda: GPU index, -1: by local rank */
  char precision[8];   /* fp32 | bf16 (matrix products) */
  int tf32;            /* cuda: float32 products may use TF32 */
  int flush_denormals; /* cpu: flush-to-zero and denormals-are-zero on the rank's thread */
  char simd[8];        /* cpu: auto | avx512 | avx2 | none (the kernels' vector width) */
  char gemm[8];        /* cpu: auto | blas (whose SGEMM) */
  char device_comm[8]; /* cuda: auto | nccl | staged */
  char epilogues[8];   /* cuda: auto | bias | off (cuBLASLt epilogues of the linear forwards) */
  char attention_kernels[8]; /* cuda: auto | wmma | wmma32 (the bf16 fused attention's kernels) */
  char activations[12];       /* auto | float32 (bf16: activations held in bfloat16 where every reader rounds them) */
} backend_deck_t;

/* The [backend] rows. */
extern const cfg_part_t backend_deck_options;

/* A parsed configuration's [backend] values. */
static inline const backend_deck_t *backend_deck(const struct config *cfg) {
  return (const backend_deck_t *)cfg_part(cfg, &backend_deck_options);
}

#endif
