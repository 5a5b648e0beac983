/* Tests of paths that must end the process (surge_input_error, surge_runtime_error): the code runs
 * in a forked child whose exit status and stderr the test then checks. */
#ifndef SURGE_TEST_CHILD_H
#define SURGE_TEST_CHILD_H

#include <stdio.h>
#include <string.h>

#include "tap.h"

typedef struct child_result {
  int status;          /* exit code, or -1 when the child did not exit normally */
  int signal;          /* the signal that ended the child, or 0 */
  int newlines;        /* newline characters in all of stderr (also those past what err holds) */
  int ends_in_newline; /* the last byte of stderr was a newline */
  char err[4096];      /* stderr without its last newline, cut short if longer */
} child_result_t;

/* Run fn(arg) in a forked child with stdout discarded and stderr captured; the child exits 0 when
 * fn returns. */
child_result_t run_in_child(void (*fn)(const void *), const void *arg);

/* Whether the child wrote exactly one newline-terminated line holding each of needles[0..n) (a NULL
 * needle ends the list early). */
int child_wrote_one_line_with(const child_result_t *r, const char *const *needles, int n);

/* One TAP result: fn(arg) exits 2 (an input error) with one line holding every needle. */
static inline int expect_input_error_all(void (*fn)(const void *), const void *arg, const char *what,
                                         const char *const *needles, int n) {
  child_result_t r = run_in_child(fn, arg);
  tap_diag("%s: %s", what, r.err);
  char named[1024] = "";
  for (int i = 0, used = 0; i < n && needles[i] && used < (int)sizeof named; i++)
    used += snprintf(named + used, sizeof named - (size_t)used, "%s'%s'", i ? " and " : "", needles[i]);
  int ok = tap_ok(r.status == 2 && child_wrote_one_line_with(&r, needles, n),
                  "%s: exit 2 (got %d) with one line naming %s", what, r.status, named);
  for (int i = 0; !ok && i < n && needles[i]; i++)
    if (!strstr(r.err, needles[i])) tap_diag("missing: %s", needles[i]);
  return ok;
}

static inline int expect_input_error(void (*fn)(const void *), const void *arg, const char *what,
                                     const char *needle) {
  return expect_input_error_all(fn, arg, what, &needle, 1);
}

#endif
