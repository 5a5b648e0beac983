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
 * Each side publishes its group's name in the channel at attach, as it reads it from
 * /proc/self/autogroup, and the background compares the two names: not /proc/<partner pid>, since
 * the pid a process knows itself by is its own pid namespace's while /proc may be mounted from
 * another's (a container's), where that number names another process or none. The write goes to
 * /proc/<pid>/autogroup with this process's pid as that /proc numbers it (the /proc/self link's
 * target), not to /proc/self/autogroup: container profiles (Docker's AppArmor default) refuse
 * writes under /proc/self while allowing them under /proc/<pid>. Without CAP_SYS_ADMIN the kernel
 * takes one such write every 100 ms system-wide and answers EAGAIN in between (two ranks pairing
 * at once): the write is retried for up to a second. Where it is refused all the same the
 * background says so, with the kernel's reason, and runs on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "mux/mux_impl.h"

enum { SESSION_NICE = 19 };

static int restore_nice = -100; /* the nice this process found and changed; -100: it changed none */

/* /proc/self/autogroup ("/autogroup-123 nice 0"): its group's name into name, its nice into *nice;
 * 0 when unreadable (no autogroups in this kernel). */
static int read_own_autogroup(char *name, size_t n, int *nice) {
  FILE *f = fopen("/proc/self/autogroup", "r");
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
  char path[64], self[32];
  ssize_t len = readlink("/proc/self", self, sizeof self - 1); /* this process's pid as /proc numbers it */
  if (len > 0) self[len] = '\0';
  else snprintf(self, sizeof self, "%ld", (long)getpid());
  snprintf(path, sizeof path, "/proc/%s/autogroup", self);
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
  restore_nice = -100;
}

void mux_publish_autogroup(mux_side_t *me) {
#ifdef __linux__
  char name[MUX_AUTOGROUP_BYTES];
  int nice = 0;
  if (!autogroups_enabled() || !read_own_autogroup(name, sizeof name, &nice)) return;
  size_t n = strlen(name) + 1;
  memcpy(me->autogroup, name, n);
  atomic_store(&me->autogroup_bytes, (int32_t)n);
#else
  (void)me;
#endif
}

void mux_lower_session(const mux_side_t *partner) {
#ifdef __linux__
  char mine[MUX_AUTOGROUP_BYTES], theirs[MUX_AUTOGROUP_BYTES];
  int my_nice = 0;
  const long long partner_pid = (long long)atomic_load(&partner->pid);
  if (!autogroups_enabled() || !read_own_autogroup(mine, sizeof mine, &my_nice)) return;
  /* the partner's name: its bytes, ending in a NUL, checked in the copy (the segment is shared) */
  int32_t n = atomic_load(&partner->autogroup_bytes);
  if (n > 1 && n <= MUX_AUTOGROUP_BYTES) memcpy(theirs, partner->autogroup, (size_t)n);
  if (n <= 1 || n > MUX_AUTOGROUP_BYTES || theirs[n - 1] != '\0') {
    say("multiplex: background (pid %ld): its session's autogroup %s stays at nice %d: its foreground (pid %lld) "
        "published no autogroup of its own (its /proc/self/autogroup could not be read), so whether they "
        "share a group is unknown (doc/multiplexing.md)\n",
        (long)getpid(), mine, my_nice, partner_pid);
    return;
  }
  if (strcmp(mine, theirs) == 0 || my_nice >= SESSION_NICE) return;
  int err = write_own_nice(SESSION_NICE);
  if (err) {
    say("multiplex: background (pid %ld): its session's autogroup %s stays at nice %d, not lowered to %d: the "
        "kernel refused (%s; its foreground, pid %lld, is in %s, which the kernel weighs as an equal; "
        "doc/multiplexing.md)\n",
        (long)getpid(), mine, my_nice, SESSION_NICE, strerror(err), partner_pid, theirs);
    return;
  }
  restore_nice = my_nice;
  atexit(put_back);
  surge_at_abort(put_back); /* an error's MPI_Abort or _exit runs no exit handler */
  say("multiplex: background (pid %ld): its session's autogroup %s set to nice %d (was %d) until it exits: its "
      "foreground (pid %lld) is in %s, and the kernel weighs sessions as equals whatever their threads' "
      "priority (doc/multiplexing.md)\n",
      (long)getpid(), mine, SESSION_NICE, my_nice, partner_pid, theirs);
#else
  (void)partner;
#endif
}
