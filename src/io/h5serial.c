#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "io/h5serial.h"

#include <pthread.h>
#include <time.h>

#include "core/error.h"

static pthread_mutex_t lock;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Thread_local int depth;     /* levels this thread holds */
static _Thread_local int yielding;  /* a multi-rank in-process background (h5_serial_yield) */
static _Thread_local int agreed;    /* its outermost level was taken with its job's other ranks */

static void make_lock(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT); /* best effort: not every system has it */
  if (pthread_mutex_init(&lock, &a) != 0) {
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_NONE);
    if (pthread_mutex_init(&lock, &a) != 0) surge_runtime_error("h5_serial: cannot create the HDF5 lock");
  }
  pthread_mutexattr_destroy(&a);
}

int h5_serial_lock(void) {
  pthread_once(&once, make_lock);
  pthread_mutex_lock(&lock);
  depth++;
  return 1;
}

void h5_serial_unlock(int *token) {
  (void)token;
  if (--depth == 0) agreed = 0;
  pthread_mutex_unlock(&lock);
}

void h5_serial_release_all(void) {
  for (; depth > 0; depth--) pthread_mutex_unlock(&lock);
  agreed = 0;
}

void h5_serial_yield(int on) { yielding = on; }

static void mpi_ok(int rc, const char *call) {
  if (rc != MPI_SUCCESS) surge_runtime_error("h5_serial: %s failed (MPI error %d)", call, rc);
}

int h5_serial_lock_collective(MPI_Comm job) {
  if (!yielding || agreed) return h5_serial_lock(); /* not yielding, or inside its job's agreed level */
  if (depth > 0)
    surge_runtime_error("h5_serial: internal error: a collective io function inside a plain one, in a thread "
                        "that yields the HDF5 lock (io/h5serial.h)");
  pthread_once(&once, make_lock);
  mpi_ok(MPI_Barrier(job), "MPI_Barrier"); /* every rank is here and holds nothing */
  for (long pause_ns = 20000;; pause_ns = pause_ns < 1000000 ? 2 * pause_ns : pause_ns) {
    int got = pthread_mutex_trylock(&lock) == 0, all = 0;
    mpi_ok(MPI_Allreduce(&got, &all, 1, MPI_INT, MPI_MIN, job), "MPI_Allreduce");
    if (all) break;
    if (got) pthread_mutex_unlock(&lock); /* some rank's foreground holds its lock: all give theirs back */
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL);
  }
  depth++;
  agreed = 1;
  return 1;
}
