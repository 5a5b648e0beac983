/* The deck's [train] recompute (nn/recompute.h has the modes; the key is declared here, above the
 * engine, since its check reads [model] zoo). */
#ifndef SURGE_TRAIN_RECOMPUTE_OPTIONS_H
#define SURGE_TRAIN_RECOMPUTE_OPTIONS_H

#include "core/keys.h"
#include "nn/recompute.h"

typedef struct recompute_opts {
  char mode[16]; /* none | block | attention */
} recompute_opts_t;

extern const cfg_part_t recompute_options;

/* The mode a parsed configuration asks for. */
recompute_mode_t recompute_mode_of(const struct config *cfg);

#endif
