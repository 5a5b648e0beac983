#include "core/pace.h"

#include <math.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/timer.h"

static _Thread_local int (*sleep_rule)(void);

void pace_set_sleep_rule(int (*may_sleep)(void)) { sleep_rule = may_sleep; }

pace_t pace_start(double max_us, double fraction) {
  double spin_us = max_us < PACE_SPIN_US ? max_us : PACE_SPIN_US;
  if (sleep_rule && !sleep_rule()) spin_us = INFINITY;
  return (pace_t){.start = surge_now(),
                  .spin_s = spin_us * 1e-6,
                  .max_s = max_us * 1e-6,
                  .fraction = fraction > 0 ? fraction : 1.0 / PACE_FRACTION};
}

double pace_sleep_s(const pace_t *p, double now) {
  double waited = now - p->start;
  if (waited < p->spin_s) return 0;
  double s = waited * p->fraction;
  if (s < 1e-6) s = 1e-6;
  return s < p->max_s ? s : p->max_s;
}

void pace_next(pace_t *p) {
  double s = pace_sleep_s(p, surge_now());
  if (s <= 0) return;
#ifdef PR_SET_TIMERSLACK
  static _Thread_local int slack_set;
  if (!slack_set) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    slack_set = 1;
  }
#endif
  long ns = (long)(s * 1e9);
  nanosleep(&(struct timespec){ns / 1000000000L, ns % 1000000000L}, NULL);
}
