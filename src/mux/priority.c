/* The operating system's layer of priority: a background process asks the kernel to run it only
 * when nothing else wants the core. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>

#include "core/error.h"
#include "mux/mux.h"

static int nice_19(void) {
  errno = 0;
  return setpriority(PRIO_PROCESS, 0, 19) == 0;
}

const char *mux_lower_priority(const char *policy) {
  if (strcmp(policy, "none") == 0) return "none";
  if (strcmp(policy, "idle") == 0) {
#ifdef SCHED_IDLE
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    if (sched_setscheduler(0, SCHED_IDLE, &sp) == 0) {
      nice_19(); /* also nice 19: the weight a kernel without SCHED_IDLE semantics would use */
      return "SCHED_IDLE";
    }
#endif
    return nice_19() ? "nice 19" : "none";
  }
  if (strcmp(policy, "nice") == 0) return nice_19() ? "nice 19" : "none";
  surge_runtime_error("mux_lower_priority: unknown policy '%s' (idle, nice, none)", policy);
}
