/* gemm_tn_rows (backend.h) in parts of C's rows, for the backends whose sum over many rows keeps block
 * partial sums in temporaries the size of C (cpu_gemm.c: a float block and a double sum, 12 bytes an element of
 * C; cuda_blas.c: a float per block of rows). One part's temporaries stay within TN_PART_BYTES whatever C's
 * size: a tied classifier's weight gradient at GPT-2's vocabulary (50304 x 768) kept 442 MiB of them on the cpu,
 * 12% of a 124M model's peak (doc/results.md). A part is at least TN_PART_MIN_ROWS rows (or all of C), so it
 * stays a product of many rows and takes the route the whole would (cpu_gemm.c's rules). Parts split the rows
 * evenly: part p of P is rows [M p / P, M (p + 1) / P). */
#ifndef SURGE_BACKEND_TN_PARTS_H
#define SURGE_BACKEND_TN_PARTS_H

#include <stddef.h>

enum { TN_PART_MIN_ROWS = 64 };
#define TN_PART_BYTES ((size_t)16 << 20)

/* Parts of C (M,N) at `per` bytes of temporaries an element of C: 1 where it all fits; never more than make
 * parts of TN_PART_MIN_ROWS rows. M, N >= 1. */
static inline int tn_parts(int M, int N, size_t per) {
  const double need = (double)M * (double)N * (double)per / (double)TN_PART_BYTES;
  const int most = M / TN_PART_MIN_ROWS > 1 ? M / TN_PART_MIN_ROWS : 1;
  if (need <= 1.0) return 1;
  return need >= (double)most ? most : (int)need + (need > (double)(int)need);
}

/* The first row of part p of P over M rows (p = P: M). */
static inline int tn_part_row(int M, int P, int p) { return (int)((long long)M * p / P); }

#endif
