/* One process-wide lock in front of HDF5. Parallel HDF5 builds are not thread-safe, and a process
 * may run two trainers at once: a foreground on its main thread and an in-process background in a
 * second one ([multiplex] placement = thread, doc/multiplexing.md). Every public function of the io
 * layer (and burst/profile_h5.c) that calls into HDF5 starts with H5_SERIAL(): the lock is held
 * from there to the function's end (any return), and it is recursive, so one such function may
 * call another.
 *
 * Why this cannot deadlock. The lock is per process; the only waits while holding it are HDF5's
 * own I/O and, for the foreground, the MPI collectives of its job inside a collective HDF5 call
 * (parallel checkpoints, the log's gathers). Suppose foreground rank A holds its lock inside such a
 * collective and waits for foreground rank B, whose thread waits for B's lock. B's lock is then
 * held by B's background thread, whose job is one rank (MPI_COMM_SELF): its HDF5 calls are not
 * collective, and it never waits for its foreground while holding the lock, because its only wait
 * on the foreground is the multiplexing gate, which runs at the engine's events (core/events.h),
 * and no io function raises an event. So B's background finishes its call on its own and releases
 * the lock; B's foreground proceeds and so does A. A waiting foreground sleeps on the mutex, so a
 * background at SCHED_IDLE gets the core to finish (the priority inheritance asked of the mutex
 * helps where the kernel applies it). A background thread that ends by an error while holding the
 * lock releases it on its way out (h5_serial_release_all). */
#ifndef SURGE_H5SERIAL_H
#define SURGE_H5SERIAL_H

/* Take the lock (recursively); returns a token for the cleanup. */
int h5_serial_lock(void);
/* Release one level of the lock (the cleanup of H5_SERIAL's variable). */
void h5_serial_unlock(int *token);
/* Release every level this thread holds: a thread leaving by an error's escape (longjmp). */
void h5_serial_release_all(void);

#define H5_SERIAL() __attribute__((cleanup(h5_serial_unlock))) int h5_serial_token_ = h5_serial_lock()

#endif
