/* An in-process background ([multiplex] placement = thread, doc/multiplexing.md "In-process
 * backgrounds"): each foreground rank runs a background training job of its own deck in a second
 * thread of its process, at the lowest CPU priority, behind the same gate a background process
 * passes (mux/mux.h), on a channel in process memory. The threads of each [multiplex]
 * background_ranks = N consecutive foreground ranks (1 by default, 0: all) form one N-rank job, on a
 * communicator the main threads split from the foreground's world; job J (foreground ranks J*N ..
 * J*N+N-1) writes what a separate N-rank background job writes (log, checkpoints, model file) to
 * `[run] out_dir`/bgJ of the background's deck, with the same stop and resume rules. An error in
 * a 1-rank background's thread ends that thread only (its error line names it, its exit status is
 * reported); one in a multi-rank background, or in the foreground, ends the process.
 *
 * Process-global state on the trainer's path, and how two trainers share a process:
 *   per thread   the engine's event subscribers (core/events.c), the multiplexer's side and device
 *                sync (mux/), the error state: job, label, hook, partial line, escape
 *                (core/error.c), the CPU backend's SIMD width, GEMM choice and scratch (backend/cpu_*),
 *                the cuda backend's context: stream (the background's at the device's lowest
 *                priority, the foreground's at its highest), cuBLAS handle, scratch (backend/cuda.c),
 *                the open NCCL group (comm/comm_nccl.c), the comm trace (comm/comm.c), the name lists
 *                built for error messages;
 *   serialised   every HDF5 call (io/h5serial.h; a multi-rank background's collective io takes the
 *                lock of all its processes at once);
 *   shared       the stop-signal flag (train/run.c: SIGTERM stops and checkpoints both), the deck
 *                schema (built by a constructor before main), the const tables (backends, layers,
 *                log formats), OpenBLAS (one thread: placement = thread refuses [backend] threads
 *                other than 1, its own buffers are locked inside it), MPI (MPI_THREAD_MULTIPLE);
 *   per trainer  the RNG streams, timers, data loaders and optimizer state (all in trainer_t);
 *   shared (GPU) the CUDA context of the device and its memory pool (both threads open the device of
 *                the foreground rank, [backend] device = -1 by its local rank), a kernel's shared
 *                memory limit (raised to the device's most, the same value from every thread);
 *   refused      NCCL for a multi-rank background on cuda (a second communicator per GPU driven by
 *                another thread, which NCCL does not allow): its device buffers go through host
 *                memory ([backend] device_comm = staged) or it is refused. */
#ifndef SURGE_TRAIN_INPROC_H
#define SURGE_TRAIN_INPROC_H

#include "comm/comm.h"
#include "io/config.h"
#include "io/deck.h"

typedef struct train_inproc train_inproc_t;

/* The launch the foreground's command line asked for. */
typedef struct inproc_args {
  const char *deck;       /* the background's deck (surge-train --background-deck) */
  int noverrides;         /* its overrides (-D bg:section.key=value, the prefix kept: io/deck.h) */
  char *const *overrides;
  const char *program;    /* argv[0], for the background's resume command */
  int mpi_thread_level;   /* what MPI_Init_thread provided */
} inproc_args_t;

/* Collective over the foreground's world, on its main thread, after its deck is parsed into
 * fg_cfg and before train_run: check that the combination is supported (errors name the key:
 * [multiplex] placement, background_ranks, [backend] threads and device_comm), read and check the
 * background's deck, make its job's communicator, give both configurations the channel, and start
 * this rank's background thread. */
train_inproc_t *train_inproc_start(const inproc_args_t *a, config_t *fg_cfg, const deck_t *fg_deck, comm_t *world);

/* Collective over the foreground's world once its train_run has returned: wait for this rank's
 * background to end (a background that goes on after its foreground, [multiplex] on_foreground_end
 * = continue, ends its steps first), print every background job's exit status on rank 0, and free
 * it all. Returns the largest exit status of the backgrounds. */
int train_inproc_join(train_inproc_t *b, comm_t *world);

#endif
