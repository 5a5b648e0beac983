/* The partner channel: the shared segment, claiming a side, liveness, sleeping and waking. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "core/error.h"
#include "mux/mux_impl.h"

_Thread_local mux_local_t *mux_self = NULL;

const char *mux_role_name(mux_role_t r) {
  return r == MUX_ROLE_FOREGROUND ? "foreground" : r == MUX_ROLE_BACKGROUND ? "background" : "none";
}

mux_role_t mux_role(void) { return mux_self ? mux_self->role : MUX_ROLE_NONE; }

int mux_channel_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > MUX_CHANNEL_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return 0;
  }
  return name[0] != '.';
}

int64_t mux_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int mux_stat_gone(const char *stat) {
  const char *paren = strrchr(stat, ')'); /* "pid (comm) S ppid pgrp session tty tpgid flags ...": comm may hold ')' */
  if (!paren || !paren[1] || !paren[2]) return 0;
  if (paren[2] == 'Z' || paren[2] == 'X') return 1;
  unsigned long flags = 0;
  enum { PF_EXITING_FLAG = 0x4 }; /* the kernel's PF_EXITING */
  return sscanf(paren + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & PF_EXITING_FLAG);
}

int mux_pid_alive(int64_t pid) {
  if (pid <= 0) return 0;
  if (kill((pid_t)pid, 0) != 0 && errno != EPERM) return 0;
#ifdef __linux__
  /* a killed rank stays a zombie until its launcher reaps it: /proc/PID/stat's state is Z or X; before
   * that it is exiting for a while (seconds, for an idle-priority rank on a busy core): its flags
   * (the 9th field) hold PF_EXITING */
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
  FILE *f = fopen(path, "r");
  if (!f) return errno != ENOENT;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  if (mux_stat_gone(buf)) return 0;
#endif
  return 1;
}

int mux_side_live(const mux_side_t *s) {
  return atomic_load(&s->attached) == ATTACH_LIVE && mux_pid_alive(atomic_load(&s->pid));
}

void mux_wake(mux_side_t *s) {
  atomic_fetch_add(&s->seq, 1);
#ifdef __linux__
  if (atomic_load(&s->sleepers)) syscall(SYS_futex, (uint32_t *)&s->seq, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
#endif
}

void mux_sleep(mux_side_t *partner, uint32_t seen, int64_t timeout_ns) {
  struct timespec ts = {(time_t)(timeout_ns / 1000000000LL), (long)(timeout_ns % 1000000000LL)};
#ifdef __linux__
  atomic_fetch_add(&partner->sleepers, 1);
  syscall(SYS_futex, (uint32_t *)&partner->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
  atomic_fetch_sub(&partner->sleepers, 1);
#else
  (void)partner;
  (void)seen;
  if (ts.tv_sec == 0 && ts.tv_nsec > 200000) ts.tv_nsec = 200000; /* poll without a futex */
  nanosleep(&ts, NULL);
#endif
}

void mux_follow_partner_cpus(const mux_side_t *partner) {
#ifdef __linux__
  int n = atomic_load(&partner->cpuset_bytes);
  if (n <= 0 || n > MUX_CPUSET_BYTES) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  memcpy(&set, partner->cpuset, (size_t)n < sizeof set ? (size_t)n : sizeof set);
  if (CPU_COUNT(&set) > 0) sched_setaffinity(0, sizeof set, &set); /* best effort: a refusal keeps ours */
#else
  (void)partner;
#endif
}

static void publish_cpus(mux_side_t *me) {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  size_t n = sizeof set < MUX_CPUSET_BYTES ? sizeof set : MUX_CPUSET_BYTES;
  memcpy(me->cpuset, &set, n);
  atomic_store(&me->cpuset_bytes, (int32_t)n);
#else
  (void)me;
#endif
}

/* Map /dev/shm's segment `name`, creating it zero-filled (a valid "nobody attached" state). */
static mux_shm_t *map_segment(const char *name, const char *channel) {
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0)
    surge_runtime_error("multiplex channel '%s': cannot open shared memory %s: %s (hint: is /dev/shm "
                        "mounted and writable?)", channel, name, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) surge_runtime_error("multiplex channel '%s': fstat %s: %s", channel, name, strerror(errno));
  if (st.st_size == 0 && ftruncate(fd, sizeof(mux_shm_t)) != 0)
    surge_runtime_error("multiplex channel '%s': cannot size %s: %s", channel, name, strerror(errno));
  if (st.st_size != 0 && st.st_size != (off_t)sizeof(mux_shm_t))
    surge_input_error("multiplex channel '%s': /dev/shm%s has %lld bytes, not the %zu of this Surge version "
                      "(hint: another program or version uses this name; pick another [multiplex] channel, or "
                      "remove /dev/shm%s when no job uses it)", channel, name, (long long)st.st_size,
                      sizeof(mux_shm_t), name);
  void *p = mmap(NULL, sizeof(mux_shm_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) surge_runtime_error("multiplex channel '%s': mmap %s: %s", channel, name, strerror(errno));
  mux_shm_t *shm = p;
  uint64_t zero = 0;
  if (atomic_compare_exchange_strong(&shm->magic, &zero, MUX_MAGIC)) {
    shm->version = MUX_VERSION;
  } else if (zero == MUX_MAGIC && shm->version != 0 && shm->version != MUX_VERSION) {
    surge_input_error("multiplex channel '%s': /dev/shm%s is a version %u channel, this Surge uses version %d "
                      "(hint: partners must run the same Surge; remove /dev/shm%s when no job uses it)", channel,
                      name, shm->version, MUX_VERSION, name);
  } else if (zero != MUX_MAGIC) {
    surge_input_error("multiplex channel '%s': /dev/shm%s is not a Surge channel (hint: pick another "
                      "[multiplex] channel)", channel, name);
  }
  return shm;
}

struct mux_shm *mux_channel_in_process(void) {
  mux_shm_t *shm = xcalloc(1, sizeof *shm); /* zero: nobody attached */
  atomic_store(&shm->magic, MUX_MAGIC);
  shm->version = MUX_VERSION;
  return shm;
}

void mux_channel_in_process_free(struct mux_shm *c) { free(c); }

/* An in-process side publishes its thread's CPU clock: the process's would count both sides. */
static void publish_thread_clock(mux_side_t *me) {
  clockid_t clock;
  atomic_store(&me->thread_clock_set, 0);
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return;
  atomic_store(&me->thread_clock, (int64_t)clock);
  atomic_store(&me->thread_clock_set, 1);
}

/* Take side s for this process, or an input error naming the live process that holds it: a
 * compare-and-swap, so of rivals attaching at once one wins. A dead holder's claim is taken over. */
static void claim_side(mux_side_t *s, const mux_options_t *o, mux_role_t role) {
  int64_t self = (int64_t)getpid(), holder = atomic_load(&s->claim);
  for (;;) {
    if (holder != 0 && mux_pid_alive(holder))
      surge_input_error("multiplex channel '%s' slot %d already has a live %s (pid %lld) (hint: one %s rank per "
                        "partner slot: give the second pair another [multiplex] channel)", o->channel, o->index,
                        mux_role_name(role), (long long)holder, mux_role_name(role));
    if (atomic_compare_exchange_strong(&s->claim, &holder, self)) return;
  }
}

void mux_attach(mux_role_t role, const mux_options_t *o) {
  if (mux_self) surge_runtime_error("mux_attach: this process is already attached as %s", mux_role_name(mux_self->role));
  if (role != MUX_ROLE_FOREGROUND && role != MUX_ROLE_BACKGROUND) surge_runtime_error("mux_attach: no role");
  if (!mux_channel_name_ok(o->channel))
    surge_input_error("[multiplex] channel '%s': expected 1..%d characters of A-Z a-z 0-9 . _ - (not starting "
                      "with '.')", o->channel, MUX_CHANNEL_MAX);
  if (o->index < 0) surge_runtime_error("mux_attach: negative partner index %d", o->index);
  mux_local_t *L = xcalloc(1, sizeof *L);
  L->role = role;
  L->opt = *o;
  L->site = -1;
  mux_pieces_init(&L->pieces, o->piece_ms, o->device_timed);
  if (o->in_process) {
    L->shm = o->in_process;
  } else {
    snprintf(L->name, sizeof L->name, "/surge-mux-%s-%d", o->channel, o->index);
    L->shm = map_segment(L->name, o->channel);
  }
  int mine = role == MUX_ROLE_FOREGROUND ? SIDE_FG : SIDE_BG;
  L->me = &L->shm->side[mine];
  L->partner = &L->shm->side[1 - mine];
  claim_side(L->me, o, role);
  mux_side_t *me = L->me;
  atomic_store(&me->attached, ATTACH_NONE);
  atomic_store(&me->state, mux_state_word(MUX_COMPUTING, 0));
  atomic_store(&me->paused_ns, 0);
  atomic_store(&me->pieces, 0);
  atomic_store(&me->samples_milli, 0);
  atomic_store(&me->job_sps_milli, 0);
  atomic_store(&me->slowdown_milli, 0);
  atomic_store(&me->pressure_milli, 0);
  atomic_store(&me->busy, 0);
  atomic_store(&me->min_wait_ns, (int64_t)(o->min_wait_us * 1e3));
  atomic_store(&me->limit_milli, o->slowdown_limit > 0 ? (int64_t)(o->slowdown_limit * 1e3) : 0);
  atomic_store(&me->cpuset_bytes, 0);
  publish_cpus(me);
  atomic_store(&me->autogroup_bytes, 0);
  mux_publish_autogroup(me);
  if (o->in_process)
    publish_thread_clock(me);
  else
    atomic_store(&me->thread_clock_set, 0);
  atomic_store(&me->pid, (int64_t)getpid());
  atomic_fetch_add(&me->generation, 1);
  atomic_store(&me->attached, ATTACH_LIVE);
  mux_wake(me);
  if (role == MUX_ROLE_FOREGROUND) mux_fg_listen(1);
  else mux_bg_listen(1);
  L->attached_ns = mux_now_ns();
  L->gen_at_attach = atomic_load(&L->partner->generation);
  if (role == MUX_ROLE_BACKGROUND) mux_bg_try_pair(L);
  mux_self = L;
}

void mux_forget_name(void) {
  if (mux_self && mux_self->name[0]) shm_unlink(mux_self->name); /* both sides may call it: the second finds no name */
}

void mux_detach(void) {
  mux_local_t *L = mux_self;
  if (!L) return;
  if (L->role == MUX_ROLE_FOREGROUND) mux_fg_listen(0);
  else mux_bg_listen(0);
  atomic_store(&L->me->attached, ATTACH_ENDED);
  atomic_store(&L->me->claim, 0);
  mux_wake(L->me);
  if (L->name[0]) { /* an in-process channel belongs to whoever made it (mux_channel_in_process_free) */
    if (!mux_side_live(L->partner)) shm_unlink(L->name); /* the partner, if any, keeps its mapping */
    munmap(L->shm, sizeof(mux_shm_t));
  }
  free(L);
  mux_self = NULL;
}

/* CPU seconds of a CPU clock (a process's or a thread's), or 0 when unreadable. */
static double cpu_seconds_of_clock(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return 0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds process pid has used so far (its own and its threads'), or 0 when unreadable. */
static double cpu_seconds_of(int64_t pid) {
  clockid_t clock;
  if (pid <= 0 || clock_getcpuclockid((pid_t)pid, &clock) != 0) return 0;
  return cpu_seconds_of_clock(clock);
}

static void counters_of(const mux_side_t *s, int side, mux_counters_t *c) {
  memset(c, 0, sizeof *c);
  if (side == SIDE_BG && atomic_load(&s->thread_clock_set))
    c->bg_work_s = cpu_seconds_of_clock((clockid_t)atomic_load(&s->thread_clock));
  else if (side == SIDE_BG)
    c->bg_work_s = cpu_seconds_of(atomic_load(&s->pid));
  c->bg_paused_s = (double)atomic_load(&s->paused_ns) * 1e-9;
  c->bg_pieces = (double)atomic_load(&s->pieces);
  c->bg_samples = (double)atomic_load(&s->samples_milli) * 1e-3;
  c->fg_samples_per_sec = (double)atomic_load(&s->job_sps_milli) * 1e-3;
  int64_t slow = atomic_load(&s->slowdown_milli);
  c->fg_slowdown = slow > 0 ? (double)slow * 1e-3 : NAN;
  c->fg_pressure = (double)atomic_load(&s->pressure_milli) * 1e-3;
  c->bg_busy = atomic_load(&s->busy);
  c->live = mux_side_live(s);
}

void mux_read(mux_counters_t *bg_side, mux_counters_t *fg_side) {
  memset(bg_side, 0, sizeof *bg_side);
  memset(fg_side, 0, sizeof *fg_side);
  if (!mux_self) return;
  counters_of(&mux_self->shm->side[SIDE_BG], SIDE_BG, bg_side);
  counters_of(&mux_self->shm->side[SIDE_FG], SIDE_FG, fg_side);
}
