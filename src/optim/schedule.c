/* Learning-rate schedules: constant, or linear warm-up followed by a cosine decay to min_lr. */
#include "optim/optim.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

// step in [0, steps): warm-up steps climb linearly to lr, the rest follow half a cosine period.
static double cosine_lr(const config_t *cfg, long step) {
  long warmup = cfg->warmup_steps > 0 ? cfg->warmup_steps : 0;
  if (step < warmup) return cfg->lr * (double)(step + 1) / (double)warmup;
  long span = cfg->steps - warmup;
  double progress = span > 0 ? (double)(step - warmup) / (double)span : 1.0;
  if (progress < 0.0) progress = 0.0;
  if (progress > 1.0) progress = 1.0;
  return cfg->min_lr + 0.5 * (cfg->lr - cfg->min_lr) * (1.0 + cos(M_PI * progress));
}

double lr_at(const config_t *cfg, long step) {
  if (strcmp(cfg->schedule, "constant") == 0) return cfg->lr;
  if (strcmp(cfg->schedule, "cosine") == 0) return cosine_lr(cfg, step);
  surge_input_error("unknown schedule '%s' in [train] schedule (expected constant or cosine)",
                    cfg->schedule);
}
