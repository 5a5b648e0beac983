/* One process-wide lock in front of HDF5. Parallel HDF5 builds are not thread-safe, and a process
 * may run two trainers at once: a foreground on its main thread and an in-process background in a
 * second one ([multiplex] placement = thread, doc/multiplexing.md). Every public function of the io
 * layer (and burst/profile_h5.c) that calls into HDF5 starts with H5_SERIAL(): the lock is held
 * from there to the function's end (any return), and it is recursive, so one such function may
 * call another.
 *
 * Why this cannot deadlock. The lock is per process; the only waits while holding it are HDF5's
 * own I/O and the MPI collectives of the holder's job inside a collective io function (parallel
 * checkpoints, the log's gathers: the functions that take the lock with H5_SERIAL_COLLECTIVE).
 * Suppose foreground rank A holds its lock inside such a collective and waits for foreground rank
 * B, whose thread waits for B's lock. B's lock is then held by B's background thread, and either
 *  - its job is one rank (background_ranks = 1): its HDF5 calls are not collective, and it never waits for
 *    its foreground while holding the lock, because its only wait on the foreground is the
 *    multiplexing gate, which runs at the engine's events (core/events.h), and no io function
 *    raises an event; so it finishes its call on its own and releases the lock; or
 *  - its job spans several processes ([multiplex] background_ranks): such a thread yields
 *    (h5_serial_yield): it takes the lock for a collective io function only together with its
 *    job's other ranks, all of them at once or none (h5_serial_lock_collective: a barrier of the
 *    job holding nothing, then try-lock on every rank and agree; a rank that did not get its lock
 *    has every rank release its own and retry after a pause). So it holds the lock across an MPI
 *    wait only when every rank of its job holds its own, and those waits end; inside an agreement
 *    round it waits only for ranks that are past the barrier and never block on a lock.
 * A foreground (and a 1-rank background) takes the lock plainly, blocking. B's background
 * finishes its call and releases the lock (or gives it back after a failed agreement); B's
 * foreground proceeds and so does A. A waiting foreground sleeps on the mutex, so a
 * background at SCHED_IDLE gets the core to finish (the priority inheritance asked of the mutex
 * helps where the kernel applies it). A background thread that ends by an error while holding the
 * lock releases it on its way out (h5_serial_release_all). A yielding thread must not enter a
 * collective io function from inside a plain one (it would wait at the barrier holding the lock):
 * that is refused as an internal error. */
#ifndef SURGE_H5SERIAL_H
#define SURGE_H5SERIAL_H

#include <mpi.h>

/* Take the lock (recursively); returns a token for the cleanup. */
int h5_serial_lock(void);
/* Release one level of the lock (the cleanup of H5_SERIAL's variable). */
void h5_serial_unlock(int *token);
/* Take the lock for an io function whose ranks communicate over job while they hold it: plainly
 * (as h5_serial_lock), or, in a thread that yields, together with every rank of job. Collective
 * over job in a yielding thread. */
int h5_serial_lock_collective(MPI_Comm job);
/* Whether the calling thread yields: a multi-rank in-process background (train/inproc.h). */
void h5_serial_yield(int on);
/* Release every level this thread holds: a thread leaving by an error's escape (longjmp). */
void h5_serial_release_all(void);

#define H5_SERIAL() __attribute__((cleanup(h5_serial_unlock))) int h5_serial_token_ = h5_serial_lock()
#define H5_SERIAL_COLLECTIVE(comm)                                                                          \
  __attribute__((cleanup(h5_serial_unlock))) int h5_serial_token_ = h5_serial_lock_collective((comm)->mpi)

#endif
