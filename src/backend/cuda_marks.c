/* Timing the device's work without waiting for it (backend.h: mark, mark_passed, mark_ns): a
 * foreground's slowdown feedback marks each change of state on its stream and reads how long the
 * device took between two marks once both have passed, instead of waiting for its device at every
 * change (mux/foreground.c). A mark is a CUDA event with timing; the calling thread keeps
 * BACKEND_MARKS of them, created at its first mark and destroyed at close. */
#include "backend/cuda_event.h"
#include "backend/cuda_impl.h"
#include "core/error.h"

static _Thread_local struct {
  int made;
  cudaEvent_t ev[BACKEND_MARKS];
} m;

static cudaEvent_t event_of(int i, const char *what) {
  if (i < 0 || i >= BACKEND_MARKS) surge_runtime_error("cuda: %s of mark %d (0..%d)", what, i, BACKEND_MARKS - 1);
  return m.ev[i];
}

void cuda_mark(int i) {
  cuda_capture_leave(); /* an event recorded inside a capture is a node of the graph, not a time */
  if (!m.made) {
    for (int k = 0; k < BACKEND_MARKS; k++) cuda_check(cudaEventCreate(&m.ev[k]), "cudaEventCreate (mark)");
    m.made = 1;
  }
  cuda_check(cudaEventRecord(event_of(i, "record"), cuda_stream()), "cudaEventRecord (mark)");
}

int cuda_mark_passed(int i) {
  if (!m.made) return 1; /* nothing recorded: nothing to wait for */
  const cudaError_t e = cuda_event_poll(event_of(i, "query"));
  if (e == cudaErrorNotReady) return 0;
  cuda_check(e, "cudaEventQuery (mark)");
  return 1;
}

double cuda_mark_ns(int i, int j) {
  float ms = 0;
  if (!m.made) return 0;
  cuda_check(cudaEventElapsedTime(&ms, event_of(i, "time"), event_of(j, "time")), "cudaEventElapsedTime (mark)");
  return (double)ms * 1e6;
}

void cuda_marks_close(void) {
  if (m.made)
    for (int k = 0; k < BACKEND_MARKS; k++) cuda_check(cudaEventDestroy(m.ev[k]), "cudaEventDestroy (mark)");
  m.made = 0;
}
