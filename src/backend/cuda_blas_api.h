/* cuBLAS and cuBLASLt reached through a table that cuda_blas_api_load fills with dlopen and dlsym
 * when the cuda backend opens, not linked into the programs: loading libcublasLt costs a process
 * about 150 MiB of resident memory (its relocations), which every rank of a run on the host
 * backends paid for nothing. CUDA's runtime and NCCL stay linked (a few MiB).
 *
 * The C files that call cuBLAS include this header (after which cublasGemmEx(...) and the rest go
 * through the table, call sites unchanged); cuda_blas_api.c defines SURGE_CUDA_BLAS_LOADER to see
 * the libraries' own declarations. Not a public header. */
#ifndef SURGE_BACKEND_CUDA_BLAS_API_H
#define SURGE_BACKEND_CUDA_BLAS_API_H

#include <stddef.h>

#include <cublasLt.h>
#include <cublas_v2.h>

/* X(field, the library's symbol): every entry point Surge calls */
#define CUDA_BLAS_ENTRIES(X)                                                                             \
  X(Create, cublasCreate_v2) X(Destroy, cublasDestroy_v2) X(SetStream, cublasSetStream_v2)               \
  X(SetWorkspace, cublasSetWorkspace_v2) X(SetMathMode, cublasSetMathMode) X(GemmEx, cublasGemmEx)       \
  X(GemmBatchedEx, cublasGemmBatchedEx) X(GemmStridedBatchedEx, cublasGemmStridedBatchedEx)
#define CUDA_BLASLT_ENTRIES(X)                                                                           \
  X(LtCreate, cublasLtCreate) X(LtDestroy, cublasLtDestroy) X(LtMatmul, cublasLtMatmul)                  \
  X(LtMatmulAlgoCheck, cublasLtMatmulAlgoCheck)                                                          \
  X(LtMatmulAlgoConfigGetAttribute, cublasLtMatmulAlgoConfigGetAttribute)                                \
  X(LtMatmulAlgoConfigSetAttribute, cublasLtMatmulAlgoConfigSetAttribute)                                \
  X(LtMatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic)                                          \
  X(LtMatmulDescInit, cublasLtMatmulDescInit_internal)                                                   \
  X(LtMatmulDescSetAttribute, cublasLtMatmulDescSetAttribute)                                            \
  X(LtMatmulPreferenceInit, cublasLtMatmulPreferenceInit_internal)                                       \
  X(LtMatmulPreferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute)                                \
  X(LtMatrixLayoutInit, cublasLtMatrixLayoutInit_internal)

#define CUDA_BLAS_FIELD(field, symbol) __typeof__(symbol) *field;
typedef struct cuda_blas_api {
  CUDA_BLAS_ENTRIES(CUDA_BLAS_FIELD)
  CUDA_BLASLT_ENTRIES(CUDA_BLAS_FIELD)
} cuda_blas_api_t;
#undef CUDA_BLAS_FIELD

#ifdef __cplusplus
extern "C" {
#endif

extern cuda_blas_api_t cuda_blas_api; /* filled by cuda_blas_api_load */

/* Load libcublas and libcublasLt of the toolkit Surge was built with (their sonames, found as the
 * dynamic loader finds libraries: the programs' run path, LD_LIBRARY_PATH, the system's; then the
 * configured toolkit's lib64) and every entry point, once per process (later calls return at once).
 * 0, or -1 with the reason in err (err_n bytes). */
int cuda_blas_api_load(char *err, size_t err_n);
/* What it does, from the sonames blas and lt (then under dir, unless NULL) into api, every time: 0, or -1
 * with api zeroed and the reason in err (a library the loader cannot find; the first entry point one
 * lacks). The load's failures are tested through it (tests/test_cuda_blas_api). */
int cuda_blas_api_load_from(const char *blas, const char *lt, const char *dir, cuda_blas_api_t *api, char *err,
                            size_t err_n);

#ifdef __cplusplus
}
#endif

#ifndef SURGE_CUDA_BLAS_LOADER
/* the callers' names, through the table (cublas_v2.h maps some to their _v2 symbols first) */
#undef cublasCreate
#undef cublasDestroy
#undef cublasSetStream
#undef cublasSetWorkspace
#define cublasCreate (*cuda_blas_api.Create)
#define cublasDestroy (*cuda_blas_api.Destroy)
#define cublasSetStream (*cuda_blas_api.SetStream)
#define cublasSetWorkspace (*cuda_blas_api.SetWorkspace)
#define cublasSetMathMode (*cuda_blas_api.SetMathMode)
#define cublasGemmEx (*cuda_blas_api.GemmEx)
#define cublasGemmBatchedEx (*cuda_blas_api.GemmBatchedEx)
#define cublasGemmStridedBatchedEx (*cuda_blas_api.GemmStridedBatchedEx)
#define cublasLtCreate (*cuda_blas_api.LtCreate)
#define cublasLtDestroy (*cuda_blas_api.LtDestroy)
#define cublasLtMatmul (*cuda_blas_api.LtMatmul)
#define cublasLtMatmulAlgoCheck (*cuda_blas_api.LtMatmulAlgoCheck)
#define cublasLtMatmulAlgoConfigGetAttribute (*cuda_blas_api.LtMatmulAlgoConfigGetAttribute)
#define cublasLtMatmulAlgoConfigSetAttribute (*cuda_blas_api.LtMatmulAlgoConfigSetAttribute)
#define cublasLtMatmulAlgoGetHeuristic (*cuda_blas_api.LtMatmulAlgoGetHeuristic)
#define cublasLtMatmulDescSetAttribute (*cuda_blas_api.LtMatmulDescSetAttribute)
#define cublasLtMatmulPreferenceSetAttribute (*cuda_blas_api.LtMatmulPreferenceSetAttribute)
/* cublasLt.h's inline initialisers call exported _internal functions with the descriptor's size */
#define cublasLtMatmulDescInit(d, compute, scale) (*cuda_blas_api.LtMatmulDescInit)(d, sizeof *(d), compute, scale)
#define cublasLtMatmulPreferenceInit(p) (*cuda_blas_api.LtMatmulPreferenceInit)(p, sizeof *(p))
#define cublasLtMatrixLayoutInit(l, type, rows, cols, ld) \
  (*cuda_blas_api.LtMatrixLayoutInit)(l, sizeof *(l), type, rows, cols, ld)
#endif

#endif
