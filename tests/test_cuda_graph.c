/* The cuda backend's recorded pieces (src/backend/cuda_graph.c, [multiplex] graphs) on the host:
 * the file as built, over a faked CUDA runtime that records what a stream is asked to run (the
 * graph API's calls the file makes, with their rules: an update fails on another shape and leaves
 * that error for cudaGetLastError). The fake's ops are letters with a parameter; "G" marks the
 * gate. It shows: a recording runs after its gate, as the ops ran; the same place next time updated
 * in place with new parameters, rebuilt at another shape (the failed update's error cleared); a
 * wait cutting a recording (gate, launch what was recorded, the rest as it comes); an empty
 * recording passes its gate and launches nothing; the 257th place built, launched and dropped; close
 * frees every graph; a device-wide call of another thread waits for an open recording to end and
 * not for an abandoned one; a capture CUDA invalidated ends the run naming [multiplex] graphs. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cuda_impl.h"
#include "child.h"
#include "cuda_fake_error.h"
#include "tap.h"

/* ---- the fake runtime: one stream, its capture, graphs as lists of ops */

enum { MAX_OPS = 64 };
typedef struct fake_op {
  char name;
  int param;
} fake_op_t;
struct CUgraph_st {
  int n;
  fake_op_t op[MAX_OPS];
};
struct CUgraphExec_st {
  int n;
  fake_op_t op[MAX_OPS];
};

static char ran[4096];          /* what the device ran, in order, and the gates */
static int capturing, invalidate; /* the stream records; the next end of a capture fails */
static struct CUgraph_st *recording;
static int execs_live;

static void note(const char *fmt, ...) {
  size_t n = strlen(ran);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ran + n, sizeof ran - n, fmt, ap);
  va_end(ap);
}

/* An op of the backend on the stream: recorded while capturing, else run. */
static void op(char name, int param) {
  if (capturing)
    recording->op[recording->n++] = (fake_op_t){name, param};
  else
    note("%c%d ", name, param);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  (void)s, (void)mode;
  capturing = 1;
  recording = calloc(1, sizeof *recording);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  (void)s;
  capturing = 0;
  if (invalidate) {
    free(recording);
    return cudaErrorStreamCaptureInvalidated;
  }
  *g = recording;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n) {
  (void)nodes;
  *n = (size_t)g->n;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
  (void)flags;
  *e = calloc(1, sizeof **e);
  (*e)->n = g->n;
  memcpy((*e)->op, g->op, sizeof g->op);
  execs_live++;
  return cudaSuccess;
}

/* CUDA's rule, as far as the fake's graphs go: the same ops in the same order, new parameters. */
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info) {
  (void)info;
  int same = e->n == g->n;
  for (int i = 0; same && i < g->n; i++) same = e->op[i].name == g->op[i].name;
  if (!same) return fake_cuda_error(cudaErrorGraphExecUpdateFailure);
  memcpy(e->op, g->op, sizeof g->op);
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  (void)s;
  for (int i = 0; i < e->n; i++) note("%c%d ", e->op[i].name, e->op[i].param);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  free(e);
  execs_live--;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  free(g);
  return cudaSuccess;
}


/* ---- what cuda_graph.c takes from the rest of the backend and the library */

cudaStream_t cuda_stream(void) { return (cudaStream_t)(void *)ran; } /* (cuda_check: cuda_host_fakes.c) */

/* ---- the tests */

static int gates;
static void gate(void) {
  gates++;
  note("G ");
}

static backend_context_t counts(void) {
  backend_context_t c;
  memset(&c, 0, sizeof c);
  cuda_capture_counts(&c);
  return c;
}

static int ran_is(const char *want) {
  int ok = strcmp(ran, want) == 0;
  if (!ok) tap_diag("ran '%s', want '%s'", ran, want);
  ran[0] = 0;
  return ok;
}

static void test_record_update_rebuild(void) {
  cuda_capture_begin(7, gate);
  op('a', 1), op('b', 2);
  tap_ok(ran_is(""), "a recording runs nothing while it records");
  cuda_capture_end();
  backend_context_t c = counts();
  tap_ok(ran_is("G a1 b2 ") && c.graphs_built == 1 && c.graphs_launched == 1,
         "its end: the gate, then the ops as recorded (built %ld, launched %ld)", c.graphs_built, c.graphs_launched);
  cuda_capture_begin(7, gate);
  op('a', 3), op('b', 4);
  cuda_capture_end();
  c = counts();
  tap_ok(ran_is("G a3 b4 ") && c.graphs_updated == 1 && c.graphs_built == 1 && execs_live == 1,
         "the same place with new parameters: its graph updated in place, the new parameters run");
  cuda_capture_begin(7, gate);
  op('a', 5);
  cuda_capture_end();
  c = counts();
  tap_ok(ran_is("G a5 ") && c.graphs_built == 2 && execs_live == 1 && cudaGetLastError() == cudaSuccess,
         "other nodes: the update fails, the graph is built anew, the old one freed, the failure's error cleared");
}

static void test_cut(void) {
  cuda_capture_begin(8, gate);
  op('a', 1);
  cuda_capture_leave(); /* what an op that waits for the device calls first */
  op('b', 2);
  cuda_capture_end();
  backend_context_t c = counts();
  tap_ok(ran_is("G a1 b2 ") && c.graphs_cut == 1 && gates == 4,
         "a wait cuts the recording: gate, what was recorded launched, the rest as it comes, one gate (cut %ld)",
         c.graphs_cut);
  long launched = c.graphs_launched;
  cuda_capture_begin(9, gate);
  cuda_capture_end();
  tap_ok(ran_is("G ") && counts().graphs_launched == launched, "an empty recording passes its gate, launches nothing");
}

static void test_places(void) {
  for (int k = 100; k < 100 + 254; k++) { /* 2 places are kept already (7, 8): 256 in all */
    cuda_capture_begin(k, gate);
    op('c', k);
    cuda_capture_end();
  }
  ran[0] = 0;
  tap_ok(execs_live == 256, "256 places keep their graphs (%d)", execs_live);
  cuda_capture_begin(999, gate);
  op('d', 1);
  cuda_capture_end();
  tap_ok(ran_is("G d1 ") && execs_live == 256, "the 257th place: built, launched and dropped (%d kept)", execs_live);
  cuda_capture_close();
  tap_ok(execs_live == 0 && counts().graphs_launched == 0, "close frees every graph and its counts");
}

/* ---- another thread's device-wide call against a recording */

static volatile int ended; /* the recording thread ended its recording */
static pthread_barrier_t started;

static void *record_then_end(void *arg) {
  (void)arg;
  cuda_capture_begin(1, NULL);
  pthread_barrier_wait(&started);
  nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  ended = 1;
  cuda_capture_end();
  return NULL;
}

static void *record_then_abandon(void *arg) {
  (void)arg;
  cuda_capture_begin(2, NULL);
  cuda_capture_abandon();
  pthread_barrier_wait(&started);
  nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_device_calls(void) {
  pthread_t th;
  pthread_barrier_init(&started, NULL, 2);
  pthread_create(&th, NULL, record_then_end, NULL);
  pthread_barrier_wait(&started);
  cuda_device_call_begin();
  int after = ended;
  cuda_device_call_end();
  pthread_join(th, NULL);
  tap_ok(after, "a device-wide call of another thread waits for an open recording to end");
  ran[0] = 0;
  pthread_create(&th, NULL, record_then_abandon, NULL);
  pthread_barrier_wait(&started);
  double t0 = now_s();
  cuda_device_call_begin();
  double waited = now_s() - t0;
  cuda_device_call_end();
  pthread_join(th, NULL);
  tap_ok(waited < 0.2 && ran_is(""), "an abandoned recording: nothing launched, nothing waits for it (%.3f s)",
         waited);
  pthread_barrier_destroy(&started);
}

static void record_invalidated(const void *arg) {
  (void)arg;
  cuda_capture_begin(5, gate);
  op('a', 1);
  invalidate = 1;
  cuda_capture_end();
}

static void test_invalidated(void) {
  child_result_t r = run_in_child(record_invalidated, NULL);
  tap_ok(r.status == 1 && strstr(r.err, "place 5") && strstr(r.err, "[multiplex] graphs = off"),
         "a capture CUDA invalidated ends the run naming the place and [multiplex] graphs = off: %s", r.err);
}

int main(void) {
  test_record_update_rebuild();
  test_cut();
  test_places();
  test_device_calls();
  test_invalidated();
  return tap_done();
}
