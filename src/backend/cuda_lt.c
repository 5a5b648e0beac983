/* The linear forwards through cuBLASLt, the bias (and a following GELU) applied in the product's
 * epilogue instead of by kernels that read and write the whole output again (doc/gpu.md, "cuBLASLt
 * epilogues"). Written from cuBLASLt's documentation (cublasLt.h of CUDA 13); run on an H200 by
 * tests/gpu/ops.gpu and epilogues.gpu.
 *
 * Row-major y (rows, out) = x (rows, in) w (out, in)^T + b is the column-major D (out, rows) =
 * op(A) B with A = w read as the column-major (in, out) matrix, ld in, transposed; B = x read as the
 * column-major (in, rows) matrix, ld in; D = y, ld out (m = out, n = rows, k = in: the order
 * cuda_blas.c's cuBLAS calls use). The bias then runs along D's rows: cuBLASLt's BIAS epilogue wants
 * a vector of D's row count (m = out), added to every column, which is b as it is. GELU_AUX(_BIAS)
 * writes the epilogue's input (the product plus bias) into the aux matrix, here pre, laid out as D
 * (column-major (out, rows), ld out: row-major pre (rows, out)); cuBLASLt asks its ld to be a
 * multiple of 8 and at least D's row count, so out % 8 == 0. Its GELU is the tanh approximation
 * (PyTorch's _addmm_activation documents its cuBLASLt path as GELU's tanh form, llm.c trains with
 * it against a tanh backward), backend.h's GELU; NVIDIA's reference does not give the formula, and
 * its tanh may be a faster approximation than tanhf: tests/gpu/ops.gpu holds it to ref within
 * 1e-4, and `epilogues = bias` keeps the bias epilogue with GELU as a kernel.
 *
 * Whether a call runs here is decided per call, the same way every time for a shape and the
 * operands' alignment: the setting (backend.epilogues), every operand 16-byte aligned, pre's ld
 * rule (cuda_lt_rule.h, checked on the host), and then cuBLASLt's heuristic, asked once per
 * (shape, epilogue, compute type, alignments) and its answer kept, found or not. Only algorithms
 * without split-K (reduction scheme NONE, one K split; a candidate that splits is run with one
 * split where cuBLASLt accepts that) are taken, with a workspace of fixed size: the same algorithm
 * and the same bits for a shape on every call and every run (cuBLAS's reproducibility rule: one
 * stream, a workspace of our own). Where none is found, or the rules above say no, the caller runs
 * cuBLAS's GEMM and the kernels. */
#include <stdint.h>
#include <string.h>


#include "backend/cuda_blas_api.h"
#include "backend/cuda_impl.h"
#include "backend/cuda_lt_rule.h"
#include "core/error.h"

/* cuBLASLt's workspace: NVIDIA's recommendation for Hopper (cuBLAS's own default there) */
#define LT_WORKSPACE_BYTES ((size_t)32 << 20)
#define LT_HEURISTICS 16 /* candidates asked for, the first without split-K taken */
#define LT_PLANS 64     /* remembered answers (a model has a handful of linear shapes) */

typedef struct lt_key {
  int m, n, k, epilogue, compute;
  int align[5]; /* bytes, up to 256: w, x, y, b, pre */
} lt_key_t;

typedef struct lt_plan {
  lt_key_t key;
  int found;
  cublasLtMatmulAlgo_t algo;
} lt_plan_t;

/* The calling thread's, as the rest of the backend's context (cuda.c): an in-process background's
 * thread opens its own handle and remembers its own answers. */
static _Thread_local struct {
  cublasLtHandle_t handle;
  lt_plan_t plans[LT_PLANS];
  int nplans;
  backend_epilogue_counts_t n;
} lt;

cublasStatus_t cuda_lt_open(void) {
  memset(&lt, 0, sizeof lt);
  return cublasLtCreate(&lt.handle);
}

cublasStatus_t cuda_lt_close(void) {
  const cublasStatus_t e = lt.handle ? cublasLtDestroy(lt.handle) : CUBLAS_STATUS_SUCCESS;
  memset(&lt, 0, sizeof lt);
  return e;
}

backend_epilogue_counts_t cuda_lt_counts(void) { return lt.n; }

static void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void *v, size_t n) {
  cuda_check_blas(cublasLtMatmulDescSetAttribute(d, attr, v, n), "cublasLtMatmulDescSetAttribute");
}

/* Whether algo computes each output in one pass over K: no split-K, whose partial sums another step
 * reduces (an order that may differ between algorithms; 0 also when the config cannot be read). */
static int one_pass(const cublasLtMatmulAlgo_t *algo) {
  uint32_t scheme = 1;
  int32_t splits = 2;
  size_t got = 0;
  return cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme,
                                              &got) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits, &got) ==
             CUBLAS_STATUS_SUCCESS &&
         scheme == CUBLASLT_REDUCTION_SCHEME_NONE && splits <= 1;
}

/* The first candidate that runs in one pass over K and fits the workspace; else the first candidate
 * turned into one pass (split-K set to 1, no reduction) that cuBLASLt accepts for this call (on a
 * small output, rows = 128 out = 2304 in float32 say, every candidate the heuristic offers on an
 * H200 splits K to fill the GPU); 0 when there is none. */
static int pick_algo(const cublasLtMatmulHeuristicResult_t *r, int n, cublasLtMatmulDesc_t desc,
                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d,
                     cublasLtMatmulAlgo_t *algo) {
  for (int i = 0; i < n; i++)
    if (r[i].state == CUBLAS_STATUS_SUCCESS && r[i].workspaceSize <= LT_WORKSPACE_BYTES && one_pass(&r[i].algo)) {
      *algo = r[i].algo;
      return 1;
    }
  for (int i = 0; i < n; i++) {
    if (r[i].state != CUBLAS_STATUS_SUCCESS) continue;
    cublasLtMatmulAlgo_t one = r[i].algo;
    const int32_t splits = 1;
    const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
    cublasLtMatmulHeuristicResult_t check;
    if (cublasLtMatmulAlgoConfigSetAttribute(&one, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoConfigSetAttribute(&one, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoCheck(lt.handle, desc, a, b, d, d, &one, &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > LT_WORKSPACE_BYTES || !one_pass(&one))
      continue;
    *algo = one;
    return 1;
  }
  return 0;
}

/* The remembered answer for key, asking the heuristic (with the descriptors of this call) the first
 * time; NULL when no algorithm qualifies. */
static const lt_plan_t *plan_for(const lt_key_t *key, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                 cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d) {
  for (int i = 0; i < lt.nplans; i++)
    if (memcmp(&lt.plans[i].key, key, sizeof *key) == 0) return lt.plans[i].found ? &lt.plans[i] : NULL;
  static _Thread_local lt_plan_t spare; /* the answer when the table is full: asked again next time, the same */
  lt_plan_t *p = lt.nplans < LT_PLANS ? &lt.plans[lt.nplans++] : &spare;
  memset(p, 0, sizeof *p);
  p->key = *key;
  cublasLtMatmulPreferenceOpaque_t pref_mem;
  cublasLtMatmulPreference_t pref = &pref_mem;
  cuda_check_blas(cublasLtMatmulPreferenceInit(pref), "cublasLtMatmulPreferenceInit");
  const uint64_t ws = LT_WORKSPACE_BYTES;
  const uint32_t al[4] = {(uint32_t)key->align[0], (uint32_t)key->align[1], (uint32_t)key->align[2],
                          (uint32_t)key->align[2]}; /* A = w, B = x, C = D = y */
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cuda_check_blas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                  "cublasLtMatmulPreferenceSetAttribute");
  for (int i = 0; i < 4; i++)
    cuda_check_blas(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof al[i]),
                    "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t r[LT_HEURISTICS];
  int n = 0;
  // NOT_SUPPORTED (no heuristic for this configuration) and an empty answer both mean: not here
  if (cublasLtMatmulAlgoGetHeuristic(lt.handle, desc, a, b, d, d, pref, LT_HEURISTICS, r, &n) == CUBLAS_STATUS_SUCCESS)
    p->found = pick_algo(r, n, desc, a, b, d, &p->algo);
  return p->found ? p : NULL;
}

/* Whether the setting, the shape and the operands' alignment let the call run here (cuda_lt_rule.h);
 * key filled. */
static int eligible(int rows, int out, int in, const float *x, const float *w, const float *b, const float *pre,
                    const float *y, lt_key_t *key) {
  int align[5];
  if (lt_rule(cuda_epilogues(), rows, out, in, x, w, b, pre, y, align) != LT_TAKEN) return 0;
  *key = (lt_key_t){.m = out, .n = rows, .k = in, .compute = (int)cuda_model_compute(),
                    .epilogue = pre ? (b ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                                    : CUBLASLT_EPILOGUE_BIAS};
  memcpy(key->align, align, sizeof align);
  return 1;
}

/* The product with its epilogue queued; 0 (nothing queued) when no algorithm qualifies. */
static int run_fused(int rows, int out, int in, const float *x, const float *w, const float *b, float *pre, float *y,
                     const lt_key_t *key) {
  cublasLtMatmulDescOpaque_t desc_mem;
  cublasLtMatmulDesc_t desc = &desc_mem;
  cuda_check_blas(cublasLtMatmulDescInit(desc, cuda_model_compute(), CUDA_R_32F), "cublasLtMatmulDescInit");
  const int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const uint32_t epilogue = (uint32_t)key->epilogue;
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  if (b) {
    const int32_t bias_type = CUDA_R_32F;
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b);
  }
  if (pre) {
    const int64_t aux_ld = out;
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &pre, sizeof pre);
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld);
  }
  cublasLtMatrixLayoutOpaque_t a_mem, b_mem, d_mem;
  cublasLtMatrixLayout_t la = &a_mem, lb = &b_mem, ld = &d_mem;
  cuda_check_blas(cublasLtMatrixLayoutInit(la, CUDA_R_32F, (uint64_t)in, (uint64_t)out, in), "cublasLtMatrixLayoutInit");
  cuda_check_blas(cublasLtMatrixLayoutInit(lb, CUDA_R_32F, (uint64_t)in, (uint64_t)rows, in),
                  "cublasLtMatrixLayoutInit");
  cuda_check_blas(cublasLtMatrixLayoutInit(ld, CUDA_R_32F, (uint64_t)out, (uint64_t)rows, out),
                  "cublasLtMatrixLayoutInit");
  const lt_plan_t *plan = plan_for(key, desc, la, lb, ld);
  if (!plan) return 0;
  const float alpha = 1.0f, beta = 0.0f; /* beta 0: y's old contents are not read */
  void *ws = cuda_workspace(CUDA_WS_LT, LT_WORKSPACE_BYTES);
  cuda_check_blas(cublasLtMatmul(lt.handle, desc, &alpha, w, la, x, lb, &beta, y, ld, y, ld, &plan->algo, ws,
                                 LT_WORKSPACE_BYTES, cuda_stream()),
                  "cublasLtMatmul");
  return 1;
}

int cuda_lt_linear(int rows, int out, int in, const float *x, const float *w, const float *b, float *pre, float *y) {
  lt_key_t key;
  int done = eligible(rows, out, in, x, w, b, pre, y, &key) && run_fused(rows, out, in, x, w, b, pre, y, &key);
  if (pre) lt.n.gelu_all++, lt.n.gelu += done;
  else lt.n.bias_all++, lt.n.bias += done;
  return done;
}
