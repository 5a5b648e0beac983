/* Wall-clock time in seconds (monotonic). */
#ifndef SURGE_TIMER_H
#define SURGE_TIMER_H

#include <time.h>

static inline double surge_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
