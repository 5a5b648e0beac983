/* One decision for all ranks: a step of a checkpoint that fails on one rank fails on all, so no
 * rank goes on into a collective HDF5 call the others have left.
 *
 * HDF5 itself is not so careful: when a write fails on one rank only (a full disk), that rank can
 * leave a collective call early while the others wait inside it for good. So a rank that failed
 * waits for the agreement only CKPT_AGREE_TIMEOUT_S seconds; past that, the others are taken to be
 * stuck, and it cleans up alone and reports (its MPI_Abort ends them). The agreement is an
 * allreduce through the comm layer that a failed rank waits for at most that long. */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"
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

int ckpt_any_failed(ckpt_status_t *st) {
  // the maximum of (size - rank) over failing ranks names the lowest failing rank
  // a healthy rank waits as long as it takes (or until an abort ends it); a failed one gives up
  double worst = st->failed ? (double)(st->world->size - st->world->rank) : 0.0;
  if (!comm_allreduce_max_double_within(st->world, &worst, 1, st->failed ? CKPT_AGREE_TIMEOUT_S : -1.0,
                                        TRAFFIC_OTHER)) {
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

_Noreturn void ckpt_abandon(ckpt_status_t *st, int exit_code) {
  if (st->world->rank != st->reporter) comm_barrier(st->world);
  surge_abandon(exit_code, "%s", st->failed ? st->msg : "checkpoint failed on another rank");
}
