/* One decision for all ranks: a step of a checkpoint that fails on one rank fails on all, so no
 * rank goes on into a collective HDF5 call the others have left.
 *
 * HDF5 itself is not so careful: when a write fails on one rank only (a full disk), that rank can
 * leave a collective call early while the others wait inside it for good. So a rank that failed
 * waits for the agreement only CKPT_AGREE_TIMEOUT_S seconds; past that, the others are taken to be
 * stuck, and it cleans up alone and reports (its MPI_Abort ends them). The agreement is an
 * MPI_Iallreduce on the communicator of `world`, polled: the comm layer has no timed collective. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "core/error.h"
#include "core/timer.h"
#include "io/checkpoint_impl.h"

#define CKPT_AGREE_TIMEOUT_S 5.0

void ckpt_status_init(ckpt_status_t *st, comm_t *world) {
  st->world = world;
  st->failed = 0;
  st->reporter = -1;
  st->alone = 0;
  st->msg[0] = '\0';
}

void ckpt_fail(ckpt_status_t *st, const char *fmt, ...) {
  if (st->failed) return;
  st->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
}

/* Wait for a request; a rank that failed gives up after the timeout. Returns 1 when completed. */
static int wait_agreement(ckpt_status_t *st, MPI_Request *req) {
  if (!st->failed) { // a healthy rank waits as long as it takes (or until an abort ends it)
    if (MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      surge_runtime_error("MPI_Wait failed while the ranks agreed on a checkpoint");
    return 1;
  }
  double give_up = surge_now() + CKPT_AGREE_TIMEOUT_S;
  for (;;) {
    int done = 0;
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      surge_runtime_error("MPI_Test failed while the ranks agreed on a checkpoint: %s", st->msg);
    if (done) return 1;
    if (surge_now() > give_up) return 0;
    nanosleep(&(struct timespec){0, 200000}, NULL); // 0.2 ms
  }
}

int ckpt_any_failed(ckpt_status_t *st) {
  // the maximum of (size - rank) over failing ranks names the lowest failing rank
  double mark = st->failed ? (double)(st->world->size - st->world->rank) : 0.0, worst = 0.0;
  MPI_Request req;
  if (MPI_Iallreduce(&mark, &worst, 1, MPI_DOUBLE, MPI_MAX, st->world->mpi, &req) != MPI_SUCCESS)
    surge_runtime_error("MPI_Iallreduce failed while the ranks agreed on a checkpoint");
  if (!wait_agreement(st, &req)) {
    st->alone = 1;
    st->reporter = st->world->rank;
    return 1;
  }
  st->reporter = worst > 0 ? st->world->size - (int)worst : -1;
  return st->reporter >= 0;
}

_Noreturn void ckpt_report(ckpt_status_t *st, int exit_code) {
  if (st->world->rank != st->reporter) comm_barrier(st->world); // the reporter's abort ends the job
  surge_fail(exit_code, "%s", st->failed ? st->msg : "checkpoint failed on another rank");
}
