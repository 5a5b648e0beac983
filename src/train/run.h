/* A whole surge-train run: set-up report, resume, the step loop with progress, the HDF5 log,
 * evaluation, checkpoints (every N steps, at the end, and on SIGTERM/SIGUSR1), and the files left
 * in the run's output directory. */
#ifndef SURGE_RUN_H
#define SURGE_RUN_H

#include "comm/comm.h"
#include "io/config.h"
#include "io/deck.h"

/* How a run ended (errors exit through core/error.h instead). */
typedef enum train_outcome {
  TRAIN_FINISHED = 0, /* all steps done, OUT_DIR/model.h5 written */
  TRAIN_STOPPED,      /* SIGTERM/SIGUSR1 stopped it after writing a checkpoint (or before its first
                       * step, its state the one it resumed or began with): resume it */
  TRAIN_ALONE,        /* a background whose foreground ended stopped after a checkpoint
                       * ([multiplex] on_foreground_end = stop): resume it to go on */
} train_outcome_t;

/* Collective over world. resume_cmd is the command printed for resuming after a stop (e.g.
 * "surge-train DECK --resume"). */
train_outcome_t train_run(const config_t *cfg, const deck_t *deck, const char *resume_cmd, comm_t *world);
/* Catch SIGTERM and SIGUSR1 as stops from now on (train_run does; a program calls it first, so that
 * a signal while it starts, before train_run's first step, stops it as cleanly). */
void train_catch_stop_signals(void);

#endif
