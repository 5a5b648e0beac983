/* A background process's session against its foreground's (Linux autogroups). With
 * kernel.sched_autogroup_enabled = 1 (Debian's default) the scheduler puts the processes of each
 * session in one group and weighs the groups against each other as equals; a thread's policy and
 * nice value (SCHED_IDLE, nice 19: priority.c) order it only inside its own group. A background
 * process in a session of its own (its own mpiexec, srun or terminal) then shares a core with its
 * foreground half and half whenever both are runnable: measured on 2 cores, a separately launched
 * background in another session (setsid) took a 0.9 ms-a-step foreground to 1.2-3.9 ms, in its
 * foreground's session to 1.0-1.3 ms (doc/multiplexing.md). A session's group takes a nice value of
 * its own (/proc/self/autogroup): a background whose foreground is in another group sets its
 * group's to 19, and the process that changed it sets it back at exit. The group is the session's:
 * every process of that session (a terminal's shell too, when the background was started from
 * one) runs at that weight until then. Two ranks of one session that pair at the same moment may
 * both find it at its old value: both set it and say so, and each sets it back at its exit.
 *
 * The write goes to /proc/<pid>/autogroup, not /proc/self/autogroup: container profiles (Docker's
 * AppArmor default) refuse writes under /proc/self while allowing them under /proc/<pid>. Without
 * CAP_SYS_ADMIN the kernel takes one such write every 100 ms system-wide and answers EAGAIN
 * in between (two ranks pairing at once): the write is retried for up to a second. Where it is
 * refused all the same the background says so, with the kernel's reason, and runs on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mux/mux_impl.h"

enum { SESSION_NICE = 19 };

static int restore_nice = -100; /* the nice this process found and changed; -100: it changed none */

/* /proc/PID/autogroup ("/autogroup-123 nice 0"): its group's name into name, its nice into *nice;
 * 0 when unreadable (no autogroups in this kernel, or the process is gone). */
static int read_autogroup(const char *path, char *name, size_t n, int *nice) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[128];
  int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  char fmt[32];
  snprintf(fmt, sizeof fmt, "%%%zus nice %%d", n - 1);
  return ok && sscanf(line, fmt, name, nice) == 2;
}

static int autogroups_enabled(void) {
  FILE *f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "r");
  int on = 0;
  if (f) {
    if (fscanf(f, "%d", &on) != 1) on = 0;
    fclose(f);
  }
  return on == 1;
}

/* 0 on success, else the errno of the refused open or write */
static int write_own_nice_once(int nice) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/autogroup", (long)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return errno ? errno : EIO;
  errno = 0;
  int ok = fprintf(f, "%d", nice) > 0;
  int err = errno;
  if (fclose(f) != 0 && !err) err = errno;
  return ok && !err ? 0 : (err ? err : EIO);
}

/* the kernel's rate limit (EAGAIN within 100 ms of any such write) retried for about a second */
static int write_own_nice(int nice) {
  int err = write_own_nice_once(nice);
  for (int tries = 0; err == EAGAIN && tries < 20; tries++) {
    nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
    err = write_own_nice_once(nice);
  }
  return err;
}

static void put_back(void) {
  if (restore_nice != -100) (void)write_own_nice(restore_nice);
}

void mux_lower_session(int64_t partner_pid) {
#ifdef __linux__
  char mine[64], theirs[64], path[64];
  int my_nice = 0, their_nice = 0;
  snprintf(path, sizeof path, "/proc/%lld/autogroup", (long long)partner_pid);
  if (partner_pid <= 0 || !autogroups_enabled() || !read_autogroup("/proc/self/autogroup", mine, sizeof mine, &my_nice))
    return;
  if (!read_autogroup(path, theirs, sizeof theirs, &their_nice)) {
    printf("multiplex: background (pid %ld): its session's autogroup %s stays at nice %d: its foreground's (%s) "
           "cannot be read from here, so whether they share a group is unknown (doc/multiplexing.md)\n",
           (long)getpid(), mine, my_nice, path);
    fflush(stdout);
    return;
  }
  if (strcmp(mine, theirs) == 0 || my_nice >= SESSION_NICE) return;
  int err = write_own_nice(SESSION_NICE);
  if (err) {
    printf("multiplex: background (pid %ld): its session's autogroup %s stays at nice %d, not lowered to %d: the "
           "kernel refused (%s; its foreground, pid %lld, is in %s, which the kernel weighs as an equal; "
           "doc/multiplexing.md)\n",
           (long)getpid(), mine, my_nice, SESSION_NICE, strerror(err), (long long)partner_pid, theirs);
    fflush(stdout);
    return;
  }
  restore_nice = my_nice;
  atexit(put_back);
  printf("multiplex: background (pid %ld): its session's autogroup %s set to nice %d (was %d) until it exits: its "
         "foreground (pid %lld) is in %s, and the kernel weighs sessions as equals whatever their threads' "
         "priority (doc/multiplexing.md)\n",
         (long)getpid(), mine, SESSION_NICE, my_nice, (long long)partner_pid, theirs);
  fflush(stdout);
#else
  (void)partner_pid;
#endif
}
