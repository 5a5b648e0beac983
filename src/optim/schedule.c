/* Learning-rate schedules: constant, or linear warm-up followed by a cosine decay to min_lr. */
#include "optim/optim.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

// step in [0, steps): warm-up steps climb linearly to lr, the rest follow half a cosine period.
static double cosine_lr(const lr_schedule_t *s, long step) {
  long warmup = s->warmup_steps > 0 ? s->warmup_steps : 0;
  if (step < warmup) return s->lr * (double)(step + 1) / (double)warmup;
  long span = s->steps - warmup;
  double progress = span > 0 ? (double)(step - warmup) / (double)span : 1.0;
  if (progress < 0.0) progress = 0.0;
  if (progress > 1.0) progress = 1.0;
  return s->min_lr + 0.5 * (s->lr - s->min_lr) * (1.0 + cos(M_PI * progress));
}

double lr_at(const lr_schedule_t *s, long step) {
  if (strcmp(s->kind, "constant") == 0) return s->lr;
  if (strcmp(s->kind, "cosine") == 0) return cosine_lr(s, step);
  surge_input_error("unknown schedule '%s' in [train] schedule (expected constant or cosine)", s->kind);
}
