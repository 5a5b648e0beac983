/* The operating system's layer of priority: a background asks the kernel to run it only when
 * nothing else wants the core. Linux schedules threads: the policy and the nice value are set for
 * the calling thread, named by its tid, so an in-process background's thread runs at SCHED_IDLE
 * while its foreground, the other thread of the process, keeps its priority (for a background
 * process the caller is its main thread, whose tid is the pid, and threads it starts later inherit). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "core/error.h"
#include "mux/mux.h"

/* The calling thread's id for the scheduler calls (0, the calling process, where threads have none). */
static pid_t this_thread(void) {
#ifdef __linux__
  return (pid_t)syscall(SYS_gettid);
#else
  return 0;
#endif
}

static int nice_19(void) {
  errno = 0;
  return setpriority(PRIO_PROCESS, (id_t)this_thread(), 19) == 0;
}

const char *mux_lower_priority(const char *policy) {
  if (strcmp(policy, "none") == 0) return "none";
  if (strcmp(policy, "idle") == 0) {
#ifdef SCHED_IDLE
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    if (sched_setscheduler(this_thread(), SCHED_IDLE, &sp) == 0) {
      nice_19(); /* also nice 19: the weight a kernel without SCHED_IDLE semantics would use */
      return "SCHED_IDLE";
    }
#endif
    return nice_19() ? "nice 19" : "none";
  }
  if (strcmp(policy, "nice") == 0) return nice_19() ? "nice 19" : "none";
  surge_runtime_error("mux_lower_priority: unknown policy '%s' (idle, nice, none)", policy);
}
