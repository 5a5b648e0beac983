/* A background's pieces recorded as CUDA graphs ([multiplex] graphs, doc/gpu.md): the calling
 * thread's stream is captured from capture_begin to capture_end, the recording becomes a graph kept
 * per key (the piece's place in the step), and the graph is launched whole after the piece's gate.
 *
 * Every step records its pieces again and updates the key's executable graph in place
 * (cudaGraphExecUpdate): the kernels' arguments that change from step to step (the optimizer's
 * learning rate and bias corrections, a new workspace) come with the recording, so a launch always
 * runs what the host asked for this step, and the device gets the piece's kernels back to back
 * instead of one launch at a time. CUDA updates a graph whose kernels are the same functions in the
 * same order, whatever their arguments and grids (another batch size, where cuBLAS keeps its kernels);
 * a recording of another shape (other nodes: a kernel more, a product cuBLAS splits otherwise) cannot
 * be updated, and its graph is built anew.
 *
 * A capture forbids waiting for the stream. Every op of this backend that waits (or is not
 * stream-ordered: allocations, frees, copies with the host) calls cuda_capture_leave first, which
 * ends the recording there as capture_end would (gate, launch) and counts it as cut; the rest of the
 * piece runs as usual, capture_end then finds nothing open, and the multiplexer makes the pass that
 * waited a piece of its own, never recorded (mux/pieces.c). The mode is thread-local: the
 * foreground thread beside an in-process background may allocate or wait while the background
 * records; its own stream's waits do not touch the recording. Its device-wide calls might (CUDA may
 * invalidate a capture on a device that another thread synchronizes as a whole, and cudaFree and
 * cudaMalloc can), so those of every thread of the process wait for an open recording to end
 * (cuda_device_call_begin): the foreground's set-up and teardown beside a background that records
 * on (nothing in its steps: their scratch is stream-ordered, cudaMallocAsync). A
 * recording that CUDA invalidated anyway cannot be run again, and ends the run with an error that
 * names the key to turn graphs off. */
#include <pthread.h>
#include <string.h>

#include "backend/cuda_impl.h"
#include "core/error.h"

enum { GRAPH_KEYS = 256 }; /* places kept; a piece beyond them is built, launched and dropped */

typedef struct graph_slot {
  int key;
  cudaGraphExec_t exec; /* NULL: free */
} graph_slot_t;

static _Thread_local struct {
  int recording, key;
  void (*gate)(void);
  graph_slot_t slot[GRAPH_KEYS];
  long launched, built, updated, cut;
} g;

/* Open recordings hold it shared, device-wide calls exclusively; writers first, so that a thread
 * recording piece after piece cannot hold a free off. */
static pthread_rwlock_t device_calls;
static pthread_once_t device_calls_once = PTHREAD_ONCE_INIT;
static void device_calls_init(void) {
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&device_calls, &a);
  pthread_rwlockattr_destroy(&a);
}

void cuda_device_call_begin(void) {
  cuda_capture_leave();
  pthread_once(&device_calls_once, device_calls_init);
  pthread_rwlock_wrlock(&device_calls);
}

void cuda_device_call_end(void) { pthread_rwlock_unlock(&device_calls); }

void cuda_capture_begin(int key, void (*gate)(void)) {
  cuda_capture_leave();
  pthread_once(&device_calls_once, device_calls_init);
  pthread_rwlock_rdlock(&device_calls);
  cudaError_t e = cudaStreamBeginCapture(cuda_stream(), cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) pthread_rwlock_unlock(&device_calls); /* (an error may end only this thread) */
  cuda_check(e, "cudaStreamBeginCapture");
  g.recording = 1;
  g.key = key;
  g.gate = gate;
}

/* The key's slot, or a free one for it; NULL when every slot is taken by other keys. */
static graph_slot_t *slot_of(int key) {
  graph_slot_t *free_slot = NULL;
  for (int i = 0; i < GRAPH_KEYS; i++) {
    if (g.slot[i].exec && g.slot[i].key == key) return &g.slot[i];
    if (!g.slot[i].exec && !free_slot) free_slot = &g.slot[i];
  }
  return free_slot;
}

/* graph as the key's executable graph in *exec: updated in place when it has the same shape, else
 * built. An update that fails for another reason than the shape (an earlier launch's fault reported
 * here) is that error; so is a failed build. */
static cudaError_t executable(graph_slot_t *s, cudaGraph_t graph, cudaGraphExec_t *exec) {
  if (s && s->exec) {
    cudaGraphExecUpdateResultInfo info;
    const cudaError_t e = cudaGraphExecUpdate(s->exec, graph, &info);
    if (e == cudaSuccess) {
      g.updated++;
      *exec = s->exec;
      return e;
    }
    if (e != cudaErrorGraphExecUpdateFailure) return e;
    (void)cudaGetLastError(); /* the refused update's error is not the next kernel's */
    cuda_check(cudaGraphExecDestroy(s->exec), "cudaGraphExecDestroy");
    s->exec = NULL;
  }
  const cudaError_t e = cudaGraphInstantiate(exec, graph, 0);
  if (e != cudaSuccess) return e;
  g.built++;
  if (s) *s = (graph_slot_t){.key = g.key, .exec = *exec};
  return e;
}

/* The recording as a graph, the gate, the launch. */
static void finish(void) {
  g.recording = 0;
  cudaGraph_t graph;
  cudaError_t e = cudaStreamEndCapture(cuda_stream(), &graph);
  pthread_rwlock_unlock(&device_calls);
  if (e != cudaSuccess)
    surge_runtime_error("cuda: recording a background's piece (place %d) as a graph failed: %s (%s); its work is "
                        "lost (hint: [multiplex] graphs = off in the background's deck, and report the run)", g.key,
                        cudaGetErrorString(e), cudaGetErrorName(e));
  size_t nodes = 0;
  graph_slot_t *s = NULL;
  cudaGraphExec_t exec = NULL;
  e = cudaGraphGetNodes(graph, NULL, &nodes);
  if (e == cudaSuccess && nodes) e = executable(s = slot_of(g.key), graph, &exec);
  (void)cudaGraphDestroy(graph); /* the executable graph is a copy */
  if (e != cudaSuccess)
    surge_runtime_error("cuda: making a background's piece (place %d) an executable graph failed: %s (%s) "
                        "(hint: [multiplex] graphs = off in the background's deck, and report the run)", g.key,
                        cudaGetErrorString(e), cudaGetErrorName(e));
  if (g.gate) g.gate(); /* may synchronize: the recording has ended */
  if (!exec) return;
  cuda_check(cudaGraphLaunch(exec, cuda_stream()), "cudaGraphLaunch");
  g.launched++;
  if (!s) cuda_check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy"); /* freed once it has run */
}

void cuda_capture_end(void) {
  if (g.recording) finish();
}

void cuda_capture_leave(void) {
  if (!g.recording) return;
  g.cut++;
  finish();
}

/* The kept executable graphs destroyed (one still running is freed once it has run); the first
 * error, or success. */
static cudaError_t drop_slots(void) {
  cudaError_t first = cudaSuccess;
  for (int i = 0; i < GRAPH_KEYS; i++)
    if (g.slot[i].exec) {
      const cudaError_t e = cudaGraphExecDestroy(g.slot[i].exec);
      if (first == cudaSuccess) first = e;
      g.slot[i].exec = NULL;
    }
  return first;
}

void cuda_capture_abandon(void) {
  if (g.recording) {
    g.recording = 0;
    cudaGraph_t graph;
    if (cudaStreamEndCapture(cuda_stream(), &graph) == cudaSuccess) cudaGraphDestroy(graph);
    pthread_rwlock_unlock(&device_calls);
  }
  (void)drop_slots(); /* the thread ends: its graphs are not launched again */
  (void)cudaGetLastError();
}

void cuda_capture_counts(backend_context_t *c) {
  c->graphs_launched = g.launched;
  c->graphs_built = g.built;
  c->graphs_updated = g.updated;
  c->graphs_cut = g.cut;
}

void cuda_capture_close(void) {
  cuda_capture_leave();
  cuda_check(drop_slots(), "cudaGraphExecDestroy");
  memset(&g, 0, sizeof g);
}
