/* A whole surge-train run: set-up report, resume, the step loop with progress, the HDF5 log,
 * evaluation, checkpoints (every N steps, at the end, and on SIGTERM/SIGUSR1), and the files left
 * in the run's output directory. */
#ifndef SURGE_RUN_H
#define SURGE_RUN_H

#include "comm/comm.h"
#include "io/config.h"
#include "io/deck.h"

/* Collective over world. Returns the process exit code (0, also when stopped by a signal after
 * writing a checkpoint). Errors exit through core/error.h. deck_path is named in messages. */
int train_run(const config_t *cfg, const deck_t *deck, const char *deck_path, comm_t *world);

#endif
