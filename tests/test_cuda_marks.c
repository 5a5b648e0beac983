/* The cuda backend's timing marks (src/backend/cuda_marks.c; backend.h: mark, mark_passed,
 * mark_ns) on the host: the file as built, over a faked CUDA runtime whose events hold the time
 * at which the stream reaches them. It shows: nothing is created before the first mark, and a mark
 * never recorded has passed; the first mark creates the thread's BACKEND_MARKS events; a mark
 * passes once the stream reaches it, without waiting, and a "not ready" leaves no error for the next
 * launch's check; the time between two marks in ns; a mark ends an open recording first; close
 * destroys every event; a mark out of range ends the run naming it. */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_impl.h"
#include "child.h"
#include "cuda_fake_error.h"
#include "tap.h"

/* ---- the fake runtime: events at a time on the stream's clock; the stream has run up to `reached` */

struct CUevent_st {
  double t_ms; /* when the stream reaches it */
};
static double queued_ms, reached_ms; /* the time the stream's queued work ends; how far it has run */
static int events_live, leaves;

cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = calloc(1, sizeof **e);
  events_live++;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  events_live--;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  (void)s;
  e->t_ms = queued_ms;
  return cudaSuccess;
}
/* CUDA's runtime may keep a "not ready" as the last error: the fake does */
cudaError_t cudaEventQuery(cudaEvent_t e) {
  return e->t_ms <= reached_ms ? cudaSuccess : fake_cuda_error(cudaErrorNotReady);
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)(b->t_ms - a->t_ms);
  return cudaSuccess;
}

/* ---- what cuda_marks.c takes from the rest of the backend and the library */

cudaStream_t cuda_stream(void) { return NULL; } /* (cuda_check: cuda_host_fakes.c) */
void cuda_capture_leave(void) { leaves++; }

/* ---- the tests */

static void test_marks(void) {
  tap_ok(cuda_mark_passed(3) && cuda_mark_ns(0, 1) == 0 && events_live == 0,
         "before the first mark: nothing created, a mark has passed, no time");
  queued_ms = 10;
  cuda_mark(0);
  queued_ms = 12.5; /* 2.5 ms of work queued after mark 0 */
  cuda_mark(1);
  tap_ok(events_live == BACKEND_MARKS && leaves == 2, "the first mark creates the thread's %d events (%d); each mark "
         "ends an open recording first (%d calls)", BACKEND_MARKS, events_live, leaves);
  reached_ms = 11;
  int p0 = cuda_mark_passed(0), p1 = cuda_mark_passed(1);
  tap_ok(p0 && !p1 && cudaGetLastError() == cudaSuccess,
         "the stream past mark 0, not mark 1: passed %d and %d, and the 'not ready' left no error behind", p0, p1);
  reached_ms = 13;
  tap_ok(cuda_mark_passed(1) && cuda_mark_ns(0, 1) == 2.5e6, "once reached, mark 1 has passed; %.0f ns from mark 0",
         cuda_mark_ns(0, 1));
  queued_ms = 20;
  cuda_mark(0); /* recorded again */
  tap_ok(cuda_mark_ns(1, 0) == 7.5e6 && events_live == BACKEND_MARKS,
         "a mark recorded again holds its new time (%.0f ns after mark 1), no new event", cuda_mark_ns(1, 0));
  cuda_marks_close();
  tap_ok(events_live == 0 && cuda_mark_passed(0), "close destroys every event (%d live); then nothing is marked",
         events_live);
}

static void mark_past_the_end(const void *arg) {
  (void)arg;
  cuda_mark(BACKEND_MARKS);
}

/* A mark out of range is a bug of the caller: the run ends naming it (exit 1), in a child. */
static void test_out_of_range(void) {
  child_result_t r = run_in_child(mark_past_the_end, NULL);
  tap_ok(r.status == 1 && strstr(r.err, "mark 256"), "mark %d ends the run (exit %d): %s", BACKEND_MARKS, r.status,
         r.err);
}

int main(void) {
  test_marks();
  test_out_of_range();
  return tap_done();
}
