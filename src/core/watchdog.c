#include "core/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/timer.h"

static struct {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  _Atomic int running;             /* read by any thread's watchdog_beat and watchdog_stop */
  int stopping;
  pthread_t owner;                 /* the thread watched: another's beats and stop are not its */
  double timeout_s;
  int rank, ranks;
  _Atomic int64_t beat_ns;         /* CLOCK_MONOTONIC of the last beat */
  _Atomic(const char *) doing;
  _Atomic long step;
} dog = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static int64_t now_ns(void) { return (int64_t)(surge_now() * 1e9); }

/* The line, in one write, then the process ends: an exit handler could wait on MPI or HDF5. */
static void bite(double quiet_s) {
  char host[256] = "?", line[1024];
  gethostname(host, sizeof host - 1);
  const char *doing = atomic_load(&dog.doing);
  char rank[48] = "";
  if (dog.ranks > 1) snprintf(rank, sizeof rank, "rank %d: ", dog.rank);
  int n = snprintf(line, sizeof line,
                   "\nsurge: error: %sno progress for %.0f s on %s, in %s (step %ld): a rank or a link it waits on "
                   "may be down (ending this process; [run] stall_timeout_s = %g; earlier checkpoints are intact)\n",
                   rank, quiet_s, host, doing ? doing : "start-up", atomic_load(&dog.step), dog.timeout_s);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  /* no stdio (the stuck thread may hold stdout's lock, writing to a pipe nobody reads), and should
   * even this write block, SIGALRM's default action ends the process 5 s later */
  alarm(5);
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
  _exit(SURGE_EXIT_RUNTIME);
}

static void *watch(void *arg) {
  (void)arg;
  double tick_s = dog.timeout_s / 8 < 1.0 ? dog.timeout_s / 8 : 1.0; /* how late the bite may be: an eighth */
  int64_t tick_ns = (int64_t)(tick_s * 1e9), expected = now_ns() + tick_ns;
  pthread_mutex_lock(&dog.lock);
  while (!dog.stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + (int64_t)(tick_s * 1e9);
    until.tv_sec += (time_t)(ns / 1000000000LL);
    until.tv_nsec = (long)(ns % 1000000000LL);
    pthread_cond_timedwait(&dog.wake, &dog.lock, &until);
    if (dog.stopping) break;
    /* a tick far later than due: the process was suspended (SIGSTOP and SIGCONT, a batch system's
     * suspend), its main thread with it; that time is not the trainer's */
    int64_t now = now_ns(), late = now - expected;
    if (late > 2 * tick_ns + 1000000000LL) atomic_fetch_add(&dog.beat_ns, late);
    expected = now + tick_ns;
    double quiet_s = (double)(now - atomic_load(&dog.beat_ns)) * 1e-9;
    if (quiet_s > dog.timeout_s) bite(quiet_s);
  }
  pthread_mutex_unlock(&dog.lock);
  return NULL;
}

void watchdog_start(double timeout_s, int rank, int ranks) {
  if (timeout_s <= 0 || atomic_load(&dog.running)) return;
  dog.timeout_s = timeout_s;
  dog.rank = rank;
  dog.ranks = ranks;
  dog.stopping = 0;
  atomic_store(&dog.beat_ns, now_ns());
  dog.owner = pthread_self();
  int err = pthread_create(&dog.thread, NULL, watch, NULL);
  if (err) surge_runtime_error("[run] stall_timeout_s: cannot start the watchdog thread: %s", strerror(err));
  atomic_store(&dog.running, 1);
}

void watchdog_beat(const char *doing, long step) {
  if (!atomic_load(&dog.running) || !pthread_equal(pthread_self(), dog.owner)) return;
  atomic_store(&dog.doing, doing);
  atomic_store(&dog.step, step);
  atomic_store(&dog.beat_ns, now_ns());
}

void watchdog_stop(void) {
  if (!atomic_load(&dog.running) || !pthread_equal(pthread_self(), dog.owner)) return;
  pthread_mutex_lock(&dog.lock);
  dog.stopping = 1;
  pthread_cond_signal(&dog.wake);
  pthread_mutex_unlock(&dog.lock);
  pthread_join(dog.thread, NULL);
  atomic_store(&dog.running, 0);
}
