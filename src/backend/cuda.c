/* The CUDA backend "cuda": the opening thread's GPU context (device, stream, cuBLAS and cuBLASLt
 * handles, scratch), device memory, and the op table. The ops' code is in cuda_blas.c (GEMMs),
 * cuda_lt.c (the linear forwards with cuBLASLt epilogues), cuda_conv.c (convolution), cuda_ops.c
 * (the rest), cuda_graph.c (a background's pieces recorded as graphs) and the kernels in cuda_kern_*.cu
 * (doc/gpu.md).
 *
 * The context is the calling thread's: each thread that runs a trainer opens its own (an
 * in-process background, train/inproc.h, beside its foreground's main thread), on the same device,
 * with its own stream, cuBLAS handle and scratch; device memory and the device's memory pool are
 * the process's, as CUDA keeps them. One stream carries all of a thread's work, in order; its
 * priority is the highest the device offers for a foreground (or plain) job and the lowest for a
 * background job, so that on a shared GPU the foreground's kernels go first (and within one
 * process, where both streams share the CUDA context, the device orders their pending blocks by
 * it). Memory copies to the host and synchronize wait for the thread's stream only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_blas_api.h"
#include "backend/cuda_impl.h"
#include "core/error.h"

typedef struct cuda_ctx {
  int open;
  backend_options_t opt;
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;
  void *blas_ws; /* cuBLAS's workspace, fixed: a recorded piece allocates nothing (cuda_graph.c) */
  cublasComputeType_t compute;
  int least_priority, greatest_priority, low;
  void *ws[CUDA_WS_SLOTS];
  size_t ws_bytes[CUDA_WS_SLOTS];
  char name[256];
  char priority_text[160];
  backend_context_t pub;
} cuda_ctx_t;

static _Thread_local cuda_ctx_t ctx; /* the calling thread's */

/* cuBLAS's workspace: NVIDIA's recommendation for Hopper, cuBLAS's own default there. Set once
 * (and again after each cublasSetStream, which resets it), the same for every run, so that a
 * recorded piece's products take no allocation and choose what unrecorded ones do. */
enum { BLAS_WORKSPACE_BYTES = 32 << 20 };

/* The hint for an error of stream capture (900-908: a background's pieces recorded as graphs, cuda_graph.c, met
 * where an op runs, not where the recording ends), else "". */
static const char *capture_hint(cudaError_t e) {
  return e >= cudaErrorStreamCaptureUnsupported && e <= cudaErrorStreamCaptureWrongThread
             ? " (a background's piece was being recorded as a CUDA graph; hint: [multiplex] graphs = off in the "
               "background's deck, and report the run)"
             : "";
}

void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    surge_runtime_error("cuda: %s: %s (%s)%s", what, cudaGetErrorString(e), cudaGetErrorName(e), capture_hint(e));
}

void cuda_check_blas(cublasStatus_t e, const char *what) {
  if (e != CUBLAS_STATUS_SUCCESS) surge_runtime_error("cuda: %s: cuBLAS status %d", what, (int)e);
}

void cuda_check_launch(const char *kernel) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    surge_runtime_error("cuda: kernel %s: %s (%s)%s", kernel, cudaGetErrorString(e), cudaGetErrorName(e),
                        capture_hint(e));
}

static void require_open(const char *op) {
  if (!ctx.open) surge_runtime_error("cuda: %s before the backend was opened (backend_open)", op);
}

cudaStream_t cuda_stream(void) { return ctx.stream; }
cublasHandle_t cuda_blas(void) { return ctx.blas; }
cublasComputeType_t cuda_model_compute(void) { return ctx.compute; }
backend_epilogues_t cuda_epilogues(void) { return ctx.opt.epilogues; }
backend_attention_t cuda_attention_setting(void) { return ctx.opt.attention; }

static const char *attention_name(backend_attention_t a) {
  return a == BACKEND_ATTENTION_WMMA ? "wmma" : a == BACKEND_ATTENTION_WMMA32 ? "wmma32" : "auto";
}

static const char *epilogues_name(backend_epilogues_t e) {
  return e == BACKEND_EPILOGUES_OFF ? "off" : e == BACKEND_EPILOGUES_BIAS ? "bias" : "auto";
}

/* Float blocks of gemm_tn_rows: 1024 rows in float32 (as the cpu backend), longer where the
 * products are rounded to TF32 or bf16 anyway (their rounding, not the sum's, sets the error). */
int cuda_row_block(void) { return ctx.compute == CUBLAS_COMPUTE_32F ? 1024 : 16384; }

void *cuda_workspace(int slot, size_t bytes) {
  if (slot < 0 || slot >= CUDA_WS_SLOTS) surge_runtime_error("cuda: workspace slot %d does not exist", slot);
  if (bytes == 0) bytes = 1;
  if (ctx.ws_bytes[slot] >= bytes) return ctx.ws[slot];
  size_t grown = ctx.ws_bytes[slot] * 2 > bytes ? ctx.ws_bytes[slot] * 2 : bytes;
  cuda_capture_leave(); /* a recorded piece would keep the old block's address */
  // stream-ordered: kernels queued before still read the old block, later ones get the new one
  if (ctx.ws[slot]) cuda_check(cudaFreeAsync(ctx.ws[slot], ctx.stream), "cudaFreeAsync (workspace)");
  ctx.ws[slot] = NULL;
  cuda_check(cudaMallocAsync(&ctx.ws[slot], grown, ctx.stream), "cudaMallocAsync (workspace)");
  ctx.ws_bytes[slot] = grown;
  return ctx.ws[slot];
}

double *cuda_zeroed_acc(size_t n) {
  double *acc = cuda_workspace(CUDA_WS_ACC, n * sizeof(double));
  cuda_check(cudaMemsetAsync(acc, 0, n * sizeof(double), ctx.stream), "cudaMemsetAsync (accumulator)");
  return acc;
}

void cuda_to_host(void *host, const void *dev, size_t bytes) {
  cuda_capture_leave();
  ctx.pub.waits++;
  cuda_check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, ctx.stream), "cudaMemcpyAsync to host");
  cuda_check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
}

/* ---- context */

/* Dense peak of the GPUs whose figures we know (FLOP/s), for model FLOP utilisation; 0 otherwise.
 * Hopper SXM (H100, H200): 989 TFLOP/s bf16, 495 TF32, 67 FP32; A100: 312, 156, 19.5. */
static double peak_flops(const char *name, cublasComputeType_t ct) {
  static const struct {
    const char *tag;
    double bf16, tf32, fp32;
  } table[] = {{"H200", 989.4e12, 494.7e12, 66.9e12}, {"H100", 989.4e12, 494.7e12, 66.9e12},
               {"A100", 312e12, 156e12, 19.5e12}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strstr(name, table[i].tag))
      return ct == CUBLAS_COMPUTE_32F_FAST_16BF   ? table[i].bf16
             : ct == CUBLAS_COMPUTE_32F_FAST_TF32 ? table[i].tf32
                                                  : table[i].fp32;
  return 0;
}

static const char *precision_name(cublasComputeType_t ct) {
  return ct == CUBLAS_COMPUTE_32F_FAST_16BF ? "bf16" : ct == CUBLAS_COMPUTE_32F_FAST_TF32 ? "tf32" : "fp32";
}

/* The stream at the priority of the process's role: the lowest for a background job (low != 0). */
static void make_stream(int low) {
  cuda_capture_leave();
  if (ctx.stream) {
    cuda_check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
    cuda_check(cudaStreamDestroy(ctx.stream), "cudaStreamDestroy");
  }
  int prio = low ? ctx.least_priority : ctx.greatest_priority;
  cuda_check(cudaStreamCreateWithPriority(&ctx.stream, cudaStreamNonBlocking, prio), "cudaStreamCreateWithPriority");
  if (ctx.blas) {
    cuda_check_blas(cublasSetStream(ctx.blas, ctx.stream), "cublasSetStream"); /* (resets the workspace) */
    cuda_check_blas(cublasSetWorkspace(ctx.blas, ctx.blas_ws, BLAS_WORKSPACE_BYTES), "cublasSetWorkspace");
  }
  ctx.low = low;
  ctx.pub.stream = ctx.stream;
}

static _Thread_local char open_error[512];

static const char *cuda_open(const backend_options_t *o, int *input_error) {
  *input_error = 0;
  if (ctx.open) return NULL;
  // a background process asks MPS (where it runs) to schedule it below normal; read at context
  // creation. A thread of another job's process (in_process) leaves the process's setting alone.
  if (o->low_priority && !o->in_process) setenv("CUDA_MPS_CLIENT_PRIORITY", "1", 0);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(open_error, sizeof open_error, "no CUDA GPU usable on this machine (cudaGetDeviceCount: %s) (hint: run "
             "on a node with an NVIDIA GPU and its driver, or choose [backend] name = cpu)",
             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return open_error;
  }
  int dev = o->device >= 0 ? o->device : o->local_rank % count;
  if (dev >= count) {
    *input_error = 1;
    snprintf(open_error, sizeof open_error, "device = %d, but this node has %d GPU%s (hint: device = -1 picks one "
             "by local rank)", dev, count, count == 1 ? "" : "s");
    return open_error;
  }
  char why[512]; /* cuBLAS is loaded now, not at the program's start (cuda_blas_api.h) */
  if (cuda_blas_api_load(why, sizeof why) != 0) {
    snprintf(open_error, sizeof open_error, "cuBLAS is not usable: %.400s (hint: put the CUDA toolkit's lib64 on "
             "LD_LIBRARY_PATH, or choose [backend] name = cpu)", why);
    return open_error;
  }
  ctx.opt = *o;
  ctx.device = dev;
  cuda_check(cudaSetDevice(dev), "cudaSetDevice");
  struct cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  snprintf(ctx.name, sizeof ctx.name, "%s", prop.name);
  cuda_check(cudaDeviceGetStreamPriorityRange(&ctx.least_priority, &ctx.greatest_priority),
             "cudaDeviceGetStreamPriorityRange");
  /* cuBLAS's and cuBLASLt's handles hold device memory of their own, made and freed with them */
  cuda_device_call_begin();
  const cublasStatus_t made = cublasCreate(&ctx.blas);
  e = made == CUBLAS_STATUS_SUCCESS ? cudaMalloc(&ctx.blas_ws, BLAS_WORKSPACE_BYTES) : cudaSuccess;
  const cublasStatus_t lt_made = made == CUBLAS_STATUS_SUCCESS && e == cudaSuccess ? cuda_lt_open() : made;
  cuda_device_call_end();
  cuda_check_blas(made, "cublasCreate");
  cuda_check(e, "cudaMalloc (cuBLAS workspace)");
  cuda_check_blas(lt_made, "cublasLtCreate");
  ctx.compute = o->precision == BACKEND_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                : o->tf32                     ? CUBLAS_COMPUTE_32F_FAST_TF32
                                              : CUBLAS_COMPUTE_32F;
  // float32 without TF32 unless asked: the default math mode never lowers CUBLAS_COMPUTE_32F
  cuda_check_blas(cublasSetMathMode(ctx.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  make_stream(o->low_priority);
  ctx.pub = (backend_context_t){.device = ctx.name, .index = dev, .stream = ctx.stream,
                                .precision = precision_name(ctx.compute), .peak_flops = peak_flops(ctx.name, ctx.compute),
                                .epilogues = epilogues_name(o->epilogues),
                                .attention = attention_name(o->attention)};
  ctx.open = 1;
  return NULL;
}

static void cuda_close(void) {
  if (!ctx.open) return;
  cuda_capture_close();
  cuda_check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
  cuda_marks_close();
  cudaError_t e = cudaSuccess, ei;
  cuda_device_call_begin();
  const cublasStatus_t freed = cublasDestroy(ctx.blas); /* (it synchronizes the device) */
  for (int i = 0; i < CUDA_WS_SLOTS; i++)
    if (ctx.ws[i] && (ei = cudaFree(ctx.ws[i])) != cudaSuccess) e = ei;
  if ((ei = cudaFree(ctx.blas_ws)) != cudaSuccess) e = ei;
  const cublasStatus_t lt_freed = cuda_lt_close();
  cuda_device_call_end();
  cuda_check_blas(freed, "cublasDestroy");
  cuda_check(e, "cudaFree (workspaces)");
  cuda_check_blas(lt_freed, "cublasLtDestroy");
  cuda_check(cudaStreamDestroy(ctx.stream), "cudaStreamDestroy");
  memset(&ctx, 0, sizeof ctx);
}

static void cuda_synchronize(void) {
  require_open("synchronize");
  cuda_capture_leave();
  cuda_check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize");
}

static const backend_context_t *cuda_context(void) {
  require_open("context");
  ctx.pub.epilogue_counts = cuda_lt_counts();
  cuda_capture_counts(&ctx.pub);
  return &ctx.pub;
}

static const char *cuda_set_priority(int low) {
  require_open("set_priority");
  if (low != ctx.low) make_stream(low);
  int mps = 0;
  cuda_check(cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, ctx.device), "cudaDeviceGetAttribute (MPS)");
  snprintf(ctx.priority_text, sizeof ctx.priority_text, "%s-priority stream (%d of %d..%d)%s",
           low ? "low" : "high", low ? ctx.least_priority : ctx.greatest_priority, ctx.greatest_priority,
           ctx.least_priority,
           ctx.opt.in_process ? "; in its foreground's process: one CUDA context, blocks ordered by priority"
           : !mps             ? "; no MPS: other processes' kernels are time-sliced with it"
           : low && getenv("CUDA_MPS_CLIENT_PRIORITY") ? "; MPS client priority below normal"
                                                       : "; under MPS");
  return ctx.priority_text;
}

static void cuda_set_threads(int nthreads) { (void)nthreads; /* the GPU's threads are the kernels' */ }

/* ---- memory */

static float *cuda_alloc(size_t n) {
  require_open("alloc");
  size_t bytes = surge_mul_size(n ? n : 1, sizeof(float), "device allocation");
  void *p = NULL;
  cuda_device_call_begin();
  cudaError_t e = cudaMalloc(&p, bytes);
  cuda_device_call_end();
  if (e != cudaSuccess)
    surge_runtime_error("cuda: out of device memory allocating %zu bytes on GPU %d (%s) (hint: a smaller "
                        "[train] global_batch or model, or more ranks)", bytes, ctx.device, cudaGetErrorString(e));
  cuda_check(cudaMemsetAsync(p, 0, bytes, ctx.stream), "cudaMemsetAsync");
  return p;
}

static void cuda_free(float *p) {
  if (!p) return;
  cuda_capture_leave();
  cuda_check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize"); /* no queued op still uses it */
  cuda_device_call_begin();
  cudaError_t e = cudaFree(p);
  cuda_device_call_end();
  cuda_check(e, "cudaFree");
}

static void cuda_upload(float *dst, const float *host_src, size_t n) {
  if (!n) return;
  cuda_capture_leave();
  ctx.pub.waits++;
  cuda_check(cudaMemcpyAsync(dst, host_src, n * sizeof(float), cudaMemcpyHostToDevice, ctx.stream), "upload");
  cuda_check(cudaStreamSynchronize(ctx.stream), "cudaStreamSynchronize"); /* host_src is the caller's again */
}

static void cuda_download(float *host_dst, const float *src, size_t n) {
  if (n) cuda_to_host(host_dst, src, n * sizeof(float));
}

static void cuda_copy(float *dst, const float *src, size_t n) {
  if (n && dst != src)
    cuda_check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream), "copy");
}

static size_t cuda_device_used(void) {
  require_open("device_used");
  cuda_capture_leave();
  size_t free_b = 0, total_b = 0; /* (a query, not a wait: another thread's recording goes on; once a step) */
  cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return total_b - free_b;
}

/* Every numerical op of backend.h from this backend's function cuda_NAME. */
#define CUDA_OP(ret, name, params) .name = cuda_##name,
const backend_t backend_cuda = {
    .name = "cuda",
    .host_memory = 0,
    .open = cuda_open,
    .close = cuda_close,
    .synchronize = cuda_synchronize,
    .context = cuda_context,
    .set_threads = cuda_set_threads,
    .set_priority = cuda_set_priority,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .device_used = cuda_device_used,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .capture_abandon = cuda_capture_abandon,
    .mark = cuda_mark,
    .mark_passed = cuda_mark_passed,
    .mark_ns = cuda_mark_ns,
    BACKEND_MATH_OPS(CUDA_OP)
};
