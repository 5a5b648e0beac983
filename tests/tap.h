/* Minimal TAP producer for C tests: every check is one "ok"/"not ok" line that automake's TAP
 * driver counts. The test exits non-zero if any check failed. */
#ifndef SURGE_TAP_H
#define SURGE_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n = 0, tap_failed = 0;

static inline int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tap_ok(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (!cond) tap_failed++;
  return cond;
}

/* A diagnostic line (ignored by the driver, shown in the test's .log). */
static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("# ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* One skipped check, with the reason (counted as SKIP by the driver). */
static inline void tap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("ok %d # SKIP ", ++tap_n);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* Skip the whole test (counted as SKIP by the driver). */
static inline int tap_skip_all(const char *why) {
  printf("1..0 # SKIP %s\n", why);
  return 0;
}

/* Print the plan and return the exit code for main. */
static inline int tap_done(void) {
  printf("1..%d\n", tap_n);
  return tap_failed ? 1 : 0;
}

#endif
