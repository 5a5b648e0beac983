/* The cpu backend's team of threads (cpu_team.h). One job at a time: `held` is taken by the caller
 * for the whole run (a second caller runs its parts alone). The caller writes the job, then publishes
 * it as one word, (generation << 8) | T, under `lock`, and wakes the workers; a worker numbered t < T
 * runs its part and counts `pending` down, the last one waking the caller. A worker numbered t >= T
 * sits the job out and sleeps. Both sides spin a little before they sleep: a team that slept between
 * the products of a generated token (a wake-up through the kernel for each) was no faster than one
 * thread, though its parts split evenly (doc/results.md). */
#include "backend/cpu_team.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <immintrin.h>
static unsigned fp_mode(void) { return _mm_getcsr(); }
static void set_fp_mode(unsigned csr) { _mm_setcsr(csr); }
static void relax(void) { _mm_pause(); }
#else
static unsigned fp_mode(void) { return 0; }
static void set_fp_mode(unsigned csr) { (void)csr; }
static void relax(void) {}
#endif

enum { SPINS = 4096 }; /* pauses before a thread sleeps: 0.10 ms on AMD EPYC Zen 5 (measured) */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER; /* the team's current caller */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* publishing, sleeping and waking */
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static struct { /* the current job: written by the caller before it publishes the word below */
  cpu_team_fn fn;
  void *arg;
  unsigned csr; /* the caller's floating-point mode */
} job;
static _Atomic unsigned long word; /* (jobs published << 8) | the current job's T */
static _Atomic int pending;        /* parts of the current job not yet finished on a worker */
static _Atomic long worker_parts;
static int workers; /* made so far, numbered 1 .. workers (held by the caller) */
static unsigned long born[CPU_TEAM_MAX]; /* the word when worker t was made: its jobs are the later ones */

/* The next word after `seen`: spun for (by a worker that had a part of the last job), then slept for. */
static unsigned long next_word(unsigned long seen, int spin) {
  unsigned long w;
  for (int s = 0; s < (spin ? SPINS : 0); s++)
    if ((w = atomic_load_explicit(&word, memory_order_acquire)) != seen) return w;
    else relax();
  pthread_mutex_lock(&lock);
  while ((w = atomic_load_explicit(&word, memory_order_acquire)) == seen) pthread_cond_wait(&go, &lock);
  pthread_mutex_unlock(&lock);
  return w;
}

static void *worker(void *arg) {
  const int t = (int)(intptr_t)arg;
  unsigned long seen = born[t];
  int T = 0;
  for (;;) {
    seen = next_word(seen, t < T);
    T = (int)(seen & 0xff);
    if (t >= T) continue;
    set_fp_mode(job.csr);
    job.fn(job.arg, t, T);
    atomic_fetch_add_explicit(&worker_parts, 1, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&lock);
      pthread_cond_signal(&done);
      pthread_mutex_unlock(&lock);
    }
  }
  return NULL;
}

/* A child of fork has none of the parent's workers: it starts a team of its own (if it multiplies at all
 * before it execs). */
static void forked(void) {
  workers = 0;
  atomic_store(&pending, 0);
  pthread_mutex_init(&held, NULL);
  pthread_mutex_init(&lock, NULL);
  pthread_cond_init(&go, NULL);
  pthread_cond_init(&done, NULL);
}

/* Workers 1 .. T-1 exist (the caller holds the team); 0, or -1 where the system refused a thread. */
static int enlist(int T) {
  static int registered;
  if (!registered && pthread_atfork(NULL, NULL, forked) == 0) registered = 1;
  while (workers < T - 1) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    born[workers + 1] = atomic_load_explicit(&word, memory_order_relaxed);
    const int rc = pthread_create(&th, &at, worker, (void *)(intptr_t)(workers + 1));
    pthread_attr_destroy(&at);
    if (rc != 0) return -1;
    workers++;
  }
  return 0;
}

static void alone(int T, cpu_team_fn fn, void *arg) {
  for (int t = 0; t < T; t++) fn(arg, t, T);
}

void cpu_team_run(int T, cpu_team_fn fn, void *arg) {
  if (T > CPU_TEAM_MAX) T = CPU_TEAM_MAX;
  if (T <= 1 || pthread_mutex_trylock(&held) != 0) {
    alone(T < 1 ? 1 : T, fn, arg);
    return;
  }
  if (enlist(T) != 0) { /* the parts stay T (the split is the caller's), all run here */
    pthread_mutex_unlock(&held);
    alone(T, fn, arg);
    return;
  }
  job.fn = fn, job.arg = arg, job.csr = fp_mode();
  atomic_store_explicit(&pending, T - 1, memory_order_relaxed);
  pthread_mutex_lock(&lock); /* a worker about to sleep holds it while it checks the word */
  const unsigned long next = ((atomic_load_explicit(&word, memory_order_relaxed) >> 8) + 1) << 8 | (unsigned long)T;
  atomic_store_explicit(&word, next, memory_order_release);
  pthread_cond_broadcast(&go);
  pthread_mutex_unlock(&lock);
  fn(arg, 0, T);
  for (int s = 0; s < SPINS && atomic_load_explicit(&pending, memory_order_acquire) > 0; s++) relax();
  if (atomic_load_explicit(&pending, memory_order_acquire) > 0) {
    pthread_mutex_lock(&lock);
    while (atomic_load_explicit(&pending, memory_order_acquire) > 0) pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
  }
  pthread_mutex_unlock(&held);
}

long cpu_team_worker_parts(void) { return atomic_load_explicit(&worker_parts, memory_order_relaxed); }
