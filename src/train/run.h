/* A whole surge-train run: set-up report, the step loop with progress and evaluation, and the
 * files left in the run's output directory. */
#ifndef SURGE_RUN_H
#define SURGE_RUN_H

#include "io/config.h"
#include "io/deck.h"

/* Returns the process exit code (0). Errors exit through core/error.h. */
int train_run(const config_t *cfg, const deck_t *deck);

#endif
