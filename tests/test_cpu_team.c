/* The cpu backend's team of threads (src/backend/cpu_team.h): every part runs once, part 0 on the
 * caller and the others on workers, in the caller's floating-point mode; a team held by another caller
 * (a part that starts a team of its own) runs the parts alone; T of 1 or less; five thousand jobs of 2
 * to 4 parts in a row, so a lost wake-up or a job run twice would show as a hang (the test's timeout)
 * or a wrong count; a child of fork makes a team of its own; T past the cap last (its 63 workers then
 * sit out). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cpu_team.h"
#include "tap.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

typedef struct record { /* per part: the T it was given, its runs, its thread, its floating-point mode */
  int T[CPU_TEAM_MAX + 1], runs[CPU_TEAM_MAX + 1];
  pthread_t who[CPU_TEAM_MAX + 1];
  unsigned csr[CPU_TEAM_MAX + 1];
} record_t;

static unsigned csr_now(void) {
#if defined(__x86_64__)
  return _mm_getcsr();
#else
  return 0;
#endif
}

static void note(void *arg, int t, int T) {
  record_t *r = arg;
  r->T[t] = T;
  r->runs[t]++;
  r->who[t] = pthread_self();
  r->csr[t] = csr_now();
}

/* a part that runs a team of its own: the team is held, so its parts run on this part's thread */
static record_t inner[2];
static void nests(void *arg, int t, int T) {
  note(arg, t, T);
  cpu_team_run(3, note, &inner[t]);
}

static atomic_long total;
static void add(void *arg, int t, int T) {
  (void)arg;
  atomic_fetch_add(&total, (long)(t + 1) * 1000 + T);
}

int main(void) {
  record_t r;
  memset(&r, 0, sizeof r);
#if defined(__x86_64__)
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u); /* flush to zero and denormals are zero: the workers must take it */
#endif
  const long before = cpu_team_worker_parts();
  cpu_team_run(4, note, &r);
  int once = 1, apart = 1, same_mode = 1;
  for (int t = 0; t < 4; t++) {
    once &= r.runs[t] == 1;
    same_mode &= r.csr[t] == csr_now();
    for (int u = 0; u < t; u++) apart &= !pthread_equal(r.who[t], r.who[u]);
  }
  tap_ok(once && r.T[3] == 4 && pthread_equal(r.who[0], pthread_self()) && apart &&
             cpu_team_worker_parts() - before == 3,
         "4 parts: each once, part 0 on the caller, parts 1-3 on 3 other threads (workers counted: %ld)",
         cpu_team_worker_parts() - before);
  tap_ok(same_mode, "every part in the caller's floating-point mode (MXCSR 0x%x: flush to zero, denormals are zero)",
         csr_now());
#if defined(__x86_64__)
  _mm_setcsr(saved);
#endif

  memset(&r, 0, sizeof r);
  cpu_team_run(2, nests, &r);
  int alone = 1;
  for (int t = 0; t < 2; t++)
    for (int u = 0; u < 3; u++) alone &= inner[t].runs[u] == 1 && pthread_equal(inner[t].who[u], r.who[t]);
  tap_ok(r.runs[0] == 1 && r.runs[1] == 1 && alone,
         "a part that runs a team of its own while the team is held: its 3 parts run once each, on its thread");

  memset(&r, 0, sizeof r);
  cpu_team_run(1, note, &r);
  cpu_team_run(0, note, &r);
  tap_ok(r.runs[0] == 2 && r.runs[1] == 0 && pthread_equal(r.who[0], pthread_self()),
         "T = 1 and T = 0: one part each, on the caller");
  long want = 0;
  enum { JOBS = 5000 };
  for (int j = 0; j < JOBS; j++) {
    const int T = 2 + j % 3;
    cpu_team_run(T, add, NULL);
    for (int t = 0; t < T; t++) want += (long)(t + 1) * 1000 + T;
  }
  tap_ok(atomic_load(&total) == want, "%d jobs of 2, 3 and 4 parts in a row: every part once (sum %ld, want %ld)",
         JOBS, atomic_load(&total), want);

  /* a child of fork has none of the workers: its team starts anew (a hang would be killed by alarm);
   * ThreadSanitizer does not support threads started after a multi-threaded fork */
#if defined(__SANITIZE_THREAD__)
  tap_skip("after fork: ThreadSanitizer does not support threads started in a child of a threaded process");
#else
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    memset(&r, 0, sizeof r);
    cpu_team_run(3, note, &r);
    _exit(r.runs[0] == 1 && r.runs[1] == 1 && r.runs[2] == 1 && !pthread_equal(r.who[1], pthread_self()) ? 0 : 1);
  }
  int status = 0;
  const int waited = pid > 0 && waitpid(pid, &status, 0) == pid;
  tap_ok(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "after fork the child's team of 3 runs each part once, on workers of its own (status 0x%x)", status);
#endif
  memset(&r, 0, sizeof r);
  cpu_team_run(CPU_TEAM_MAX + 5, note, &r);
  int capped = r.runs[CPU_TEAM_MAX] == 0;
  for (int t = 0; t < CPU_TEAM_MAX; t++) capped &= r.runs[t] == 1 && r.T[t] == CPU_TEAM_MAX;
  tap_ok(capped, "T past the cap: %d parts, each once", CPU_TEAM_MAX);

  return tap_done();
}
