/* The multiplexer's partner channel (src/mux): the background's gate opens exactly in the states
 * DeepPool allows (inactive; waiting with a long expected duration) and stays shut while its
 * foreground computes or sits in an allreduce; a foreground that ends or is killed releases it; a
 * missing foreground is a clear error; a slot holds one live process per side; the accounting
 * counters travel both ways; SCHED_IDLE is applied; segments are removed after both leave; a
 * background's passes group into pieces of about piece_ms from their earlier times alone.
 * Foreground and background are two forked processes talking through the real shared segment. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "core/events.h"
#include "core/pace.h"
#include "mux/mux_impl.h"
#include "tap.h"

static char channel[MUX_CHANNEL_MAX + 1];

static mux_options_t options(double partner_wait_s) {
  mux_options_t o = {.index = 0, .min_wait_us = 1000, .partner_wait_s = partner_wait_s};
  snprintf(o.channel, sizeof o.channel, "%s", channel);
  return o;
}

/* Whether a byte arrives on fd within ms milliseconds (it is read into *c). */
static int byte_within(int fd, int ms, char *c) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, ms) != 1) return 0;
  return read(fd, c, 1) == 1;
}

/* The background child: gate, report 'G', wait for the parent's go-ahead, repeat; once its
 * partner has ended it reports 'E' and exits. */
static void background_child(int report, int go) {
  mux_options_t o = options(10);
  mux_attach(MUX_ROLE_BACKGROUND, &o);
  char c;
  for (;;) {
    mux_bg_gate();
    if (mux_partner_ended()) {
      c = 'E';
      if (write(report, &c, 1) != 1) _exit(3);
      mux_detach();
      _exit(0);
    }
    mux_bg_step_done(16);
    c = 'G';
    if (write(report, &c, 1) != 1 || read(go, &c, 1) != 1) _exit(3);
  }
}

/* Whether a polite wait beginning now would sleep (core/pace.h): one second into it, a wait that may
 * sleep sleeps; one that its thread's rule refuses still polls without sleeping. */
static int wait_sleeps(void) {
  pace_t p = pace_start(1000, 0);
  return pace_sleep_s(&p, p.start + 1.0) > 0;
}

/* This process attached as the foreground beside a background_child (the pipes made here): its pid. */
static pid_t beside_background_child(int report[2], int go[2]) {
  if (pipe(report) != 0 || pipe(go) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) background_child(report[1], go[0]);
  mux_options_t o = options(10);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
  return pid;
}

static void test_gate(void) {
  int report[2], go[2];
  pid_t pid = beside_background_child(report, go);
  char c = 0, token = 'x';
  int sleeps[7]; /* whether the foreground's waits would sleep: computing, allreduce, short wait, inactive,
                  * long wait, after its end, computing while the background is inside its piece */
  mux_fg_set(MUX_COMPUTING, 1);
  tap_ok(!byte_within(report[0], 300, &c), "gate shut while the foreground computes");
  sleeps[0] = wait_sleeps();
  mux_fg_set(MUX_ALLREDUCE, 2);
  tap_ok(!byte_within(report[0], 300, &c), "gate shut during the foreground's allreduce");
  sleeps[1] = wait_sleeps();
  mux_fg_set(MUX_WAITING, 3); /* a site never seen: expected duration unknown (0 < min_wait_us) */
  tap_ok(!byte_within(report[0], 300, &c), "gate shut during a wait with no expected duration");
  sleeps[2] = wait_sleeps();
  mux_fg_set(MUX_INACTIVE, 4);
  tap_ok(byte_within(report[0], 5000, &c) && c == 'G', "gate opens when the foreground is inactive");
  sleeps[3] = wait_sleeps();
  mux_fg_set(MUX_COMPUTING, 1);
  sleeps[6] = wait_sleeps(); /* the background is inside the piece its gate let through */
  if (write(go[1], &token, 1) != 1) abort();
  tap_ok(!byte_within(report[0], 300, &c), "and shuts again when it computes");
  mux_fg_set(MUX_WAITING, 5); /* teach site 5 a 3 ms wait: the running average starts at it */
  usleep(3000);
  mux_fg_set(MUX_COMPUTING, 1);
  tap_ok(!byte_within(report[0], 100, &c), "shut again while it computes");
  mux_fg_set(MUX_WAITING, 5);
  tap_ok(byte_within(report[0], 5000, &c) && c == 'G', "gate opens for a wait expected to last >= min_wait_us");
  sleeps[4] = wait_sleeps();
  mux_fg_set(MUX_COMPUTING, 1);
  mux_fg_step_done(512.5, 1.25);
  mux_counters_t bg, fg;
  mux_read(&bg, &fg);
  tap_ok(bg.bg_samples == 32 && bg.live && fg.fg_samples_per_sec == 512.5 && fg.fg_slowdown == 1.25,
         "accounting: the foreground reads 2 x 16 background samples (%.1f), its own 512.5 samples/s and slowdown "
         "1.25", bg.bg_samples);
  if (write(go[1], &token, 1) != 1) abort();
  mux_detach();
  sleeps[5] = wait_sleeps();
  tap_ok(!sleeps[0] && !sleeps[1] && !sleeps[2] && sleeps[3] && sleeps[4] && sleeps[5] && sleeps[6],
         "the foreground's waits sleep only where the gate opens or the background is inside a piece (computing "
         "%d, allreduce %d, short wait %d: no; inactive %d, long wait %d, computing beside a piece %d: yes), and "
         "after its end as any thread's (%d)", sleeps[0], sleeps[1], sleeps[2], sleeps[3], sleeps[4], sleeps[6],
         sleeps[5]);
  tap_ok(byte_within(report[0], 5000, &c) && c == 'E', "a foreground that ends releases its background");
  int status = 0;
  waitpid(pid, &status, 0);
  tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the background exits normally");
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/surge-mux-%s-0", channel);
  tap_ok(access(path, F_OK) != 0, "the segment is removed once both sides left");
  close(report[0]), close(report[1]), close(go[0]), close(go[1]);
}

/* DeepPool's slowdown feedback, the arithmetic: pieces at their solo time give a pressure of 1;
 * pieces run beside a busy background raise it; solo pieces bring it back; a site never seen alone
 * does not count. */
static void test_feedback_arithmetic(void) {
  static mux_feedback_t f; /* 240 KiB: not on the stack */
  memset(&f, 0, sizeof f);
  tap_ok(mux_feedback_pressure(&f) == 0, "feedback: no pieces, no pressure");
  mux_feedback_piece(&f, 7, 3e6, 0);
  tap_ok(mux_feedback_pressure(&f) == 0, "feedback: a piece at a site never seen alone does not count");
  for (int i = 0; i < 4; i++) mux_feedback_piece(&f, 1, 1e6, 1), mux_feedback_piece(&f, 2, 1e7, 1);
  double p1 = mux_feedback_pressure(&f);
  tap_ok(fabs(p1 - 1.0) < 1e-9, "feedback: solo pieces at two sites: pressure 1 (%.6f)", p1);
  for (int i = 0; i < 6; i++) mux_feedback_piece(&f, 2, 2e7, 0);
  double p2 = mux_feedback_pressure(&f);
  tap_ok(p2 > 1.4 && p2 < 2.0, "feedback: 6 pieces at twice their solo time beside a background: pressure %.3f", p2);
  for (int i = 0; i < 40; i++) mux_feedback_piece(&f, 2, 1e7, 1);
  double p3 = mux_feedback_pressure(&f);
  tap_ok(p3 < 1.01 && p3 >= 1.0, "feedback: 40 solo pieces later: pressure %.4f", p3);
  mux_feedback_piece(&f, 2, 0, 1);
  mux_feedback_piece(&f, MUX_SITES, 5e7, 1);
  tap_ok(mux_feedback_pressure(&f) == p3, "feedback: empty pieces and sites out of range are ignored");
}

/* One step of n passes (sites 0..n-1) of ms[i] milliseconds each on a made-up CPU clock: the
 * passes that start a piece, as a string of 0/1. */
static const char *pieces_step(mux_pieces_t *p, const double *ms, int n, int64_t *clock) {
  static char starts[64];
  for (int i = 0; i < n; i++) {
    mux_pieces_end(p, *clock);
    starts[i] = mux_pieces_begin(p, i) ? '1' : '0';
    mux_pieces_clock(p, *clock);
    *clock += (int64_t)(ms[i] * 1e6);
  }
  mux_pieces_end(p, *clock);
  starts[n] = 0;
  return starts;
}

/* [multiplex] piece_ms: which passes start a piece, from the passes' earlier times only. */
static void test_pieces_rule(void) {
  static mux_pieces_t p; /* 32 KiB: not on the stack */
  int64_t clock = 0;
  const double ms[] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 2.0, 0.3, 0.3, 0.3};
  int n = (int)(sizeof ms / sizeof ms[0]);
  mux_pieces_init(&p, 0.5, 0);
  const char *s1 = pieces_step(&p, ms, n, &clock);
  tap_ok(strcmp(s1, "11111111111") == 0, "pieces: the first step, its passes not yet timed, gates every pass (%s)", s1);
  const char *s2 = pieces_step(&p, ms, n, &clock);
  tap_ok(strcmp(s2, "10000101101") == 0,
         "pieces of about 0.5 ms: five passes of 0.1 ms, two more, 2 ms alone, 0.3 + 0.3, 0.3 (%s)", s2);
  const char *s3 = pieces_step(&p, ms, n, &clock);
  tap_ok(strcmp(s3, "00100001101") == 0,
         "pieces run on across steps: the last 0.3 ms + 0.1 + 0.1, then five of 0.1, 2 ms, 0.3 + 0.3, 0.3 (%s)", s3);
  mux_pieces_init(&p, 0, 0);
  pieces_step(&p, ms, n, &clock);
  const char *s4 = pieces_step(&p, ms, n, &clock);
  tap_ok(strcmp(s4, "11111111111") == 0, "piece_ms = 0: every pass is a piece (%s)", s4);
  mux_pieces_init(&p, 1000, 0);
  pieces_step(&p, ms, n, &clock);
  char s5[64];
  snprintf(s5, sizeof s5, "%s", pieces_step(&p, ms, n, &clock));
  const char *s6 = pieces_step(&p, ms, n, &clock);
  tap_ok(strcmp(s5, "10000000000") == 0 && strcmp(s6, "00000000000") == 0,
         "piece_ms = 1000: one piece from the first timed pass on (%s, %s)", s5, s6);
  /* device-timed (once): the first step's times are kept; a pass is timed only while its site is
   * new, so later clocks (a pass inside a piece sees only its launch) change nothing */
  mux_pieces_init(&p, 0.5, 1);
  tap_ok(!mux_pieces_timing(&p), "pieces, once: nothing is timed before a pass begins");
  mux_pieces_begin(&p, 0);
  tap_ok(mux_pieces_timing(&p), "pieces, once: a pass at a new site is timed");
  const double launch[] = {0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01};
  int kept[2] = {1, 1};
  for (int once = 0; once < 2; once++) {
    mux_pieces_init(&p, 0.5, once);
    pieces_step(&p, ms, n, &clock);
    pieces_step(&p, launch, n, &clock); /* what a pass inside a piece sees on a device: its launch */
    for (int i = 0; i < n; i++) kept[once] &= p.pass_ns[i] == (double)(int64_t)(ms[i] * 1e6);
  }
  mux_pieces_begin(&p, 3);
  tap_ok(kept[1] && !kept[0] && !mux_pieces_timing(&p),
         "pieces, once: the first step's times are kept through a step of launch-only clocks (a running "
         "average is not), and a known site's pass is not timed");
}

static int device_syncs;
static void count_sync(void) { device_syncs++; }

/* A device's timing marks, faked. Host marks: each mark holds the host's clock when recorded and has
 * passed at once (a device that keeps up). Deferred marks: each holds the device time `fake_queued`
 * at which the work before it ends, and passes once the device's clock `fake_done` reaches it. */
static int marks_recorded, marks_deferred;
static double mark_t[MUX_MARKS], fake_queued, fake_done;
static void fake_mark(int i) {
  marks_recorded++;
  mark_t[i] = marks_deferred ? fake_queued : (double)mux_now_ns();
}
static int fake_passed(int i) { return !marks_deferred || mark_t[i] <= fake_done; }
static double fake_ns(int i, int j) { return mark_t[j] - mark_t[i]; }
static const mux_marks_t fake_marks = {fake_mark, fake_passed, fake_ns};

/* The background child of the feedback test: its gate holds back above a slowdown of 2. */
static void feedback_child(int report, int go) {
  mux_options_t o = options(10);
  o.slowdown_limit = 2.0;
  mux_attach(MUX_ROLE_BACKGROUND, &o);
  char c;
  for (;;) {
    mux_bg_gate();
    c = mux_partner_ended() ? 'E' : 'G';
    if (write(report, &c, 1) != 1) _exit(3);
    if (c == 'E') {
      mux_detach();
      _exit(0);
    }
    if (read(go, &c, 1) != 1) _exit(3);
  }
}

/* `n` pieces of the foreground's own work at site 1, each `us` long, each ended by a short wait at
 * site 3 (timed on a device, computing states in a row are one piece). */
static void pieces(int n, int us) {
  for (int i = 0; i < n; i++) {
    mux_fg_set(MUX_COMPUTING, 1);
    usleep((useconds_t)us);
    mux_fg_set(MUX_WAITING, 3);
  }
}

/* The feedback between two processes: a background busy beside pieces that run 5x their solo time
 * is held back while the foreground is inactive, and let in again once solo pieces brought the
 * pressure down; the foreground times its states by marks on its device (faked: host marks), one at
 * every state change but between computing states (one piece on a device), and never waits for its
 * device. Pieces of 20 ms keep the host's scheduling noise (a few ms on a loaded machine) well inside
 * the limit of 2. */
static void test_feedback(void) {
  int report[2], go[2];
  if (pipe(report) != 0 || pipe(go) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) feedback_child(report[1], go[0]);
  mux_options_t o = options(10);
  o.slowdown_limit = 2.0; /* the foreground's deck asks for the feedback too: it marks its device */
  device_syncs = marks_recorded = marks_deferred = 0;
  mux_set_device_sync(count_sync);
  mux_set_device_marks(&fake_marks);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
  char c = 0, token = 'x';
  mux_counters_t bg, fg;
  for (int i = 0; i < 500; i++) { /* the background attached and waits at its gate */
    mux_read(&bg, &fg);
    if (bg.live) break;
    usleep(10000);
  }
  pieces(10, 20000);
  mux_read(&bg, &fg);
  tap_ok(fg.fg_pressure > 0.7 && fg.fg_pressure < 1.5, "feedback: 10 solo pieces of 20 ms: pressure %.2f",
         fg.fg_pressure);
  tap_ok(marks_recorded == 20 && device_syncs == 0,
         "feedback: a mark on the device at each of the 20 state changes (%d), no wait for it (%d)", marks_recorded,
         device_syncs);
  for (int site = 4; site < 7; site++) mux_fg_set(MUX_COMPUTING, site);
  int for_three = marks_recorded - 20;
  mux_fg_set(MUX_WAITING, 3);
  tap_ok(for_three == 1 && marks_recorded == 22, "feedback: 3 computing states in a row are one piece: one mark for "
         "them (%d), and one when the wait began", for_three);
  mux_fg_set(MUX_INACTIVE, 2);
  tap_ok(byte_within(report[0], 5000, &c) && c == 'G', "feedback: the gate opens for an inactive foreground");
  pieces(6, 100000); /* the background is inside its piece (busy) all along */
  mux_read(&bg, &fg);
  tap_ok(bg.bg_busy && fg.fg_pressure > 2.0, "feedback: 6 pieces of 100 ms beside a busy background: pressure %.2f",
         fg.fg_pressure);
  if (write(go[1], &token, 1) != 1) abort();
  mux_fg_set(MUX_INACTIVE, 2);
  int shut = !byte_within(report[0], 300, &c);
  for (int i = 0; i < 500 && (mux_read(&bg, &fg), bg.bg_busy); i++) usleep(10000); /* at its gate by now */
  tap_ok(shut && !bg.bg_busy && !wait_sleeps(),
         "feedback: held back while the pressure is above the limit of 2 (and the foreground's waits do not sleep)");
  pieces(40, 20000); /* alone: the background waits at its gate */
  mux_read(&bg, &fg);
  double p = fg.fg_pressure;
  mux_fg_set(MUX_INACTIVE, 2);
  tap_ok(p < 2.0 && byte_within(report[0], 5000, &c) && c == 'G' && wait_sleeps(),
         "feedback: 40 solo pieces later (pressure %.2f) the gate opens again (and the waits sleep)", p);
  mux_fg_set(MUX_COMPUTING, 1); /* the gate stays shut until the foreground ends */
  if (write(go[1], &token, 1) != 1) abort();
  mux_detach();
  mux_set_device_sync(NULL);
  mux_set_device_marks(NULL);
  tap_ok(byte_within(report[0], 5000, &c) && c == 'E', "feedback: the background is released at the end");
  int status = 0;
  for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++) usleep(10000);
  if (waitpid(pid, &status, WNOHANG) == 0) { /* a failure above left it waiting: do not hang */
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  close(report[0]), close(report[1]), close(go[0]), close(go[1]);
}

/* A foreground whose own deck turns the feedback off (slowdown_limit 0: [multiplex] slowdown_feedback
 * = off, or device on a host backend) times its states by the host's clock: it neither waits for its
 * device nor marks it, partner or not. */
static void test_feedback_off(void) {
  mux_options_t o = options(10);
  device_syncs = marks_recorded = marks_deferred = 0;
  mux_set_device_sync(count_sync);
  mux_set_device_marks(&fake_marks);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
  pieces(5, 1000);
  mux_fg_set(MUX_INACTIVE, 2);
  tap_ok(!wait_sleeps(), "no partner: an inactive foreground's waits do not sleep (nobody would use the core)");
  mux_detach();
  mux_set_device_sync(NULL);
  mux_set_device_marks(NULL);
  tap_ok(device_syncs == 0 && marks_recorded == 0,
         "feedback off in the foreground's deck: no wait for the device (%d) and no mark (%d) at its 11 state changes",
         device_syncs, marks_recorded);
}

/* On a device the foreground learns each state's time from the device's marks, and only once they
 * have passed: the host queues 3 steps of work (a piece of 5 ms at site 1, a wait of 1 ms at site 3)
 * in no time and learns nothing while the device is behind; once the device has run them, the
 * sites' expected times are the device's (5 and 1 ms), published with the next wait. A host a
 * whole ring of marks ahead drops the oldest spans unlearnt and never waits. */
static void test_feedback_marks(void) {
  mux_options_t o = options(10);
  o.slowdown_limit = 2.0;
  device_syncs = marks_recorded = 0;
  marks_deferred = 1;
  fake_queued = fake_done = 0;
  mux_set_device_sync(count_sync);
  mux_set_device_marks(&fake_marks);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
  mux_local_t *L = mux_self;
  for (int step = 0; step < 3; step++) {
    mux_fg_set(MUX_COMPUTING, 1);
    fake_queued += 5e6;
    mux_fg_set(MUX_WAITING, 3);
    fake_queued += 1e6;
  }
  tap_ok(L->expected_ns[1] == 0 && L->expected_ns[3] == 0 && L->mark_tail == 0,
         "feedback marks: nothing learnt while the device is behind (site 1: %.0f ns, site 3: %.0f ns)",
         L->expected_ns[1], L->expected_ns[3]);
  fake_done = fake_queued; /* the device caught up, and keeps up with the next piece */
  mux_fg_set(MUX_COMPUTING, 1);
  fake_queued += 5e6;
  fake_done = fake_queued;
  mux_fg_set(MUX_WAITING, 3);
  const int64_t published_ns = mux_word_expected_ns(atomic_load(&L->me->state));
  tap_ok(L->expected_ns[1] == 5e6 && L->expected_ns[3] == 1e6 && published_ns == 1000000,
         "feedback marks: the device's times once it caught up: site 1 %.3f ms, site 3 %.3f ms (published %.3f ms)",
         L->expected_ns[1] / 1e6, L->expected_ns[3] / 1e6, (double)published_ns / 1e6);
  fake_done = fake_queued; /* the host runs far ahead: 300 state changes, a device that has run none */
  for (int i = 0; i < 150; i++) {
    mux_fg_set(MUX_COMPUTING, 1);
    fake_queued += 7e6;
    mux_fg_set(MUX_WAITING, 3);
    fake_queued += 1e6;
  }
  uint64_t queued = L->mark_head - L->mark_tail;
  fake_done = fake_queued;
  mux_fg_set(MUX_INACTIVE, 2);
  tap_ok(queued == MUX_MARKS && L->mark_head - L->mark_tail == 1 && L->expected_ns[1] > 6.9e6 &&
             L->expected_ns[1] <= 7e6 && device_syncs == 0,
         "feedback marks: %d state changes ahead of the device keep a ring of %llu marks (%d), learnt once passed "
         "(site 1 now %.3f ms), no wait (%d)", 300, (unsigned long long)queued, MUX_MARKS, L->expected_ns[1] / 1e6,
         device_syncs);
  mux_detach();
  mux_set_device_sync(NULL);
  mux_set_device_marks(NULL);
  marks_deferred = 0;
}

/* A background SIGKILLed inside its piece stays marked attached (it never detached): the foreground's
 * waits stop sleeping for it once /proc shows it gone (looked up every 100 ms), where they slept on. */
static void test_killed_background_wait(void) {
  int report[2], go[2];
  pid_t pid = beside_background_child(report, go);
  char c = 0;
  mux_fg_set(MUX_INACTIVE, 4);
  int opened = byte_within(report[0], 5000, &c) && c == 'G';
  mux_fg_set(MUX_COMPUTING, 1); /* the background is inside the piece its gate let through */
  int before = wait_sleeps();
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  usleep(150000);
  tap_ok(opened && before && !wait_sleeps(), "a background killed inside its piece: the foreground's waits slept "
         "beside it (%d) and poll once it is gone", before);
  mux_detach();
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/surge-mux-%s-0", channel);
  unlink(path); /* (the killed side never detached; mux_detach removes it, this is for a failure) */
  close(report[0]), close(report[1]), close(go[0]), close(go[1]);
}

/* A killed foreground (SIGKILL: no detach) releases the background too, zombie or reaped (and in
 * between, exiting: PF_EXITING in /proc/PID/stat's flags, which a running process never has). */
static void test_killed_foreground(int reap) {
  if (reap) tap_ok(mux_pid_alive(getpid()), "a running process is alive (its state and flags as /proc reads them)");
  pid_t pid = fork();
  if (pid == 0) {
    mux_options_t o = options(10);
    mux_attach(MUX_ROLE_FOREGROUND, &o);
    mux_fg_set(MUX_COMPUTING, 1);
    for (;;) pause();
  }
  mux_options_t o = options(10);
  mux_attach(MUX_ROLE_BACKGROUND, &o);
  mux_counters_t bg, fg = {0};
  for (int i = 0; i < 500 && !fg.live; i++) {
    usleep(10000);
    mux_read(&bg, &fg);
  }
  tap_ok(fg.live && !mux_partner_ended(), "the background sees its foreground attached");
  kill(pid, SIGKILL);
  if (reap) waitpid(pid, NULL, 0);
  mux_bg_gate(); /* returns once the partner is seen gone */
  tap_ok(mux_partner_ended(), "a SIGKILLed foreground (%s) releases the background", reap ? "reaped" : "a zombie");
  mux_detach();
  if (!reap) waitpid(pid, NULL, 0);
}

/* /proc/PID/stat as mux_stat_gone reads it: a zombie (Z) or dead (X) process, or one exiting (the 9th
 * field, flags, with PF_EXITING 0x4), is gone; a running, sleeping or stopped one is not; a command
 * name holding ") Z " or digits does not mislead it (the last ')' ends the name). The kernel holds a
 * process in its exit for seconds only under load, so the lines are written here. */
static void test_stat_gone(void) {
  static const struct {
    const char *line;
    int gone;
  } cases[] = {
      {"123 (surge-train) R 1 123 123 0 -1 4194560 5 0 0 0 1 0 0 0 20 0 1 0", 0},
      {"123 (surge-train) S 1 123 123 0 -1 4194560 5 0 0 0 1 0 0 0 20 0 1 0", 0},
      {"123 (surge-train) t 1 123 123 0 -1 4194376 5 0 0 0 1 0 0 0 20 0 1 0", 0},
      {"123 (surge-train) Z 1 123 123 0 -1 4227084 5 0 0 0 1 0 0 0 20 0 1 0", 1},
      {"123 (surge-train) X 1 123 123 0 -1 4194560 5 0 0 0 1 0 0 0 20 0 1 0", 1},
      {"123 (surge-train) R 1 123 123 0 -1 4194564 5 0 0 0 1 0 0 0 20 0 1 0", 1}, /* 0x400104: PF_EXITING */
      {"123 (a) Z 1 2 3) S 1 123 123 0 -1 4194560 5 0 0 0 1 0 0 0 20 0 1 0", 0},
      {"123 (x) R 1 2 3 4 5 (6) D 1 123 123 0 -1 4 5 0", 1},
      {"123 (no closing parenthesis", 0},
  };
  int ok = 1;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    if (mux_stat_gone(cases[k].line) != cases[k].gone) {
      ok = 0;
      tap_diag("'%s': gone %d, expected %d", cases[k].line, mux_stat_gone(cases[k].line), cases[k].gone);
    }
  tap_ok(ok, "/proc/PID/stat: zombie, dead or exiting (PF_EXITING) is gone; running, sleeping, stopped alive; a "
             "name with ') Z ' in it read to its last ')' (%zu lines)", sizeof cases / sizeof cases[0]);
}

/* The gate reads the foreground's state and its expected duration as one word: a foreground thread
 * alternates two states that each keep the gate shut (WAITING at a site expected to take 0.1 ms,
 * below the background's 1 ms; COMPUTING at a site expected to take 10 ms) while this thread asks
 * the gate for 0.5 s; it never opens. As two words it opened about 1 time in 8 transitions on 2 cores
 * (the WAITING of one read with the computing's 10 ms). */
static atomic_int torn_run;
static void *alternating_foreground(void *shm) {
  mux_options_t o = options(1e9);
  o.in_process = shm;
  mux_attach(MUX_ROLE_FOREGROUND, &o);
  for (long n = 0; atomic_load(&torn_run); n++) {
    mux_self->expected_ns[1] = 1e5, mux_self->expected_ns[2] = 1e7; /* as learnt (no feedback learns here) */
    mux_fg_set(n % 2 ? MUX_COMPUTING : MUX_WAITING, n % 2 ? 2 : 1);
  }
  mux_detach();
  return NULL;
}

static void test_gate_one_word(void) {
  struct mux_shm *shm = mux_channel_in_process();
  atomic_store(&shm->side[SIDE_BG].min_wait_ns, 1000000);
  atomic_store(&torn_run, 1);
  pthread_t t;
  if (pthread_create(&t, NULL, alternating_foreground, shm) != 0) abort();
  long checks = 0, opened = 0, waiting = 0, computing = 0;
  for (int64_t end = mux_now_ns() + 500000000; mux_now_ns() < end;)
    for (int i = 0; i < 10000; i++, checks++) {
      opened += mux_gate_open(&shm->side[SIDE_FG], &shm->side[SIDE_BG]);
      mux_state_t s = mux_word_state(atomic_load(&shm->side[SIDE_FG].state));
      waiting += s == MUX_WAITING, computing += s == MUX_COMPUTING;
    }
  atomic_store(&torn_run, 0);
  pthread_join(t, NULL);
  mux_channel_in_process_free(shm);
  tap_ok(opened == 0 && waiting > 0 && computing > 0,
         "the gate never opens between two states that keep it shut: %ld of %ld looks (%ld saw waiting, %ld computing)",
         opened, checks, waiting, computing);
}

/* A foreground that attaches after the background and ends before the background's first look
 * was its partner all the same: the background is released, not left waiting for another. */
static void test_short_foreground(void) {
  mux_options_t o = options(10);
  int go[2];
  if (pipe(go) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) { /* the foreground: attach once the background has, then end at once */
    char c;
    if (read(go[0], &c, 1) != 1) _exit(3);
    mux_attach(MUX_ROLE_FOREGROUND, &o);
    mux_detach();
    _exit(0);
  }
  mux_attach(MUX_ROLE_BACKGROUND, &o);
  char c = 'g';
  if (write(go[1], &c, 1) != 1) abort();
  waitpid(pid, NULL, 0);
  close(go[0]), close(go[1]);
  mux_bg_gate();
  tap_ok(mux_partner_ended(), "a foreground that came and went before the background looked releases it");
  mux_detach();
}

/* A device that records pieces, faked: what the background asked of it, as a string. "rK": a
 * recording of the piece starting at site K began; "L": a recording ended, its gate passed, launched;
 * "W": a wait inside a recording ended it the same way before the rest of its piece ran. */
static char graph_log[256];
static int graph_recording;
static void (*graph_gate)(void);
static void fake_capture_begin(int key, void (*gate)(void)) {
  graph_recording = 1;
  graph_gate = gate;
  size_t n = strlen(graph_log);
  snprintf(graph_log + n, sizeof graph_log - n, "r%d", key);
}
/* End an open recording: its gate, then its launch ("L"), or, cut by a wait, "W". */
static void fake_end_as(const char *what) {
  if (!graph_recording) return;
  graph_recording = 0;
  graph_gate();
  size_t n = strlen(graph_log);
  snprintf(graph_log + n, sizeof graph_log - n, "%s", what);
}
static void fake_capture_end(void) { fake_end_as("L"); }
static void fake_wait(void) { fake_end_as("W"); } /* the backend's cuda_capture_leave */

/* [multiplex] graphs, a device background at piece_ms = 1000 (one piece from its second step on):
 * its first step times its passes, nothing recorded; from the second, the piece is recorded across
 * the step's end; a wait in pass 2 cuts it (gate, launch); from then on pass 2 is a piece of its own,
 * run as it comes, and pass 3 starts the recorded piece [3 4 5 0 1], which ends where pass 2 begins;
 * the last recording ends when the background detaches. Its foreground came and went before
 * (as in test_short_foreground), so every gate is open; each piece passes one. */
static void test_graph_recording(void) {
  mux_options_t o = options(10);
  o.device_timed = 1;
  o.piece_ms = 1000;
  o.graph_begin = fake_capture_begin;
  o.graph_end = fake_capture_end;
  int go[2];
  if (pipe(go) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(3);
    mux_options_t f = options(10);
    mux_attach(MUX_ROLE_FOREGROUND, &f);
    mux_detach();
    _exit(0);
  }
  mux_set_device_sync(fake_wait); /* a synchronize ends a recording as a wait does */
  mux_attach(MUX_ROLE_BACKGROUND, &o);
  char c = 'g';
  if (write(go[1], &c, 1) != 1) abort();
  waitpid(pid, NULL, 0);
  close(go[0]), close(go[1]);
  int recorded_in_step1 = 0;
  for (int step = 1; step <= 4; step++)
    for (int pass = 0; pass < 6; pass++) {
      ev_raise(EV_WORK, EV_FORWARD, pass);
      recorded_in_step1 |= step == 1 && graph_recording;
      if (pass == 2) fake_wait(); /* say, a copy to the host: a cut where a recording is open */
    }
  mux_counters_t me, fg;
  mux_read(&me, &fg);
  mux_detach();
  mux_set_device_sync(NULL);
  tap_ok(!recorded_in_step1, "graphs: nothing is recorded in the first step (its passes are timed)");
  int k0 = 0 * EV_PHASES + EV_FORWARD, k3 = 3 * EV_PHASES + EV_FORWARD; /* passes 0 and 3's sites (ev_site) */
  char want[64];
  snprintf(want, sizeof want, "r%dW" "r%dL" "r%dL", k0, k3, k3);
  tap_ok(strcmp(graph_log, want) == 0, "graphs: recorded from step 2; cut by pass 2's wait, which then runs alone; "
         "the pieces from pass 3 recorded across steps: %s (want %s)", graph_log, want);
  /* step 1: 6; step 2: the cut; step 3: pass 2; step 4: the piece from step 3, pass 2 */
  tap_ok(me.bg_pieces == 10, "graphs: each piece passed one gate (%.0f of 10; the 11th at the detach's launch)",
         me.bg_pieces);
}

static void no_partner(const void *arg) {
  (void)arg;
  mux_options_t o = options(0.2);
  mux_attach(MUX_ROLE_BACKGROUND, &o);
  mux_bg_gate();
}

static void second_foreground(const void *arg) {
  (void)arg;
  mux_options_t o = options(10);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
}

static void bad_name(const void *arg) {
  mux_options_t o = options(10);
  snprintf(o.channel, sizeof o.channel, "%s", (const char *)arg);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
}

static void test_errors(void) {
  child_result_t r = run_in_child(no_partner, NULL);
  tap_ok(r.status == 1 && strstr(r.err, "no foreground attached within 0.2 s") && strstr(r.err, "--foreground"),
         "no foreground within partner_wait_s: exit 1 naming the wait and the hint (%d: %s)", r.status, r.err);
  int ready[2];
  if (pipe(ready) != 0) abort();
  pid_t first = fork();
  if (first == 0) { /* the first foreground holds the slot */
    char c = 'r';
    second_foreground(NULL);
    if (write(ready[1], &c, 1) != 1) _exit(3);
    for (;;) pause();
  }
  char c;
  if (byte_within(ready[0], 5000, &c))
    expect_input_error(second_foreground, NULL, "a second live foreground on the same slot",
                       "already has a live foreground");
  else
    tap_ok(0, "the first foreground attached");
  kill(first, SIGKILL);
  waitpid(first, NULL, 0);
  close(ready[0]), close(ready[1]);
  expect_input_error(bad_name, "../etc", "a channel name with a slash", "expected 1..64 characters");
  tap_ok(mux_channel_name_ok("slurm-1234") && mux_channel_name_ok("a.b_c-9") && !mux_channel_name_ok("") &&
             !mux_channel_name_ok(".hidden") && !mux_channel_name_ok("a b") && !mux_channel_name_ok("a/b"),
         "channel names: letters, digits, . _ - only, not empty, not starting with '.'");
}

/* A slot left by a dead foreground is stale: a new background waits for a live one instead of
 * taking the dead one for its partner that ended. */
static void test_stale_slot(void) {
  pid_t pid = fork();
  if (pid == 0) {
    mux_options_t o = options(10);
    mux_attach(MUX_ROLE_FOREGROUND, &o);
    _exit(0); /* no detach: the slot still says attached */
  }
  waitpid(pid, NULL, 0);
  child_result_t r = run_in_child(no_partner, NULL);
  tap_ok(r.status == 1 && strstr(r.err, "no foreground attached"),
         "a dead foreground's slot is not a partner: the background waits and gives up (%d)", r.status);
  mux_options_t o = options(10);
  mux_attach(MUX_ROLE_FOREGROUND, &o);
  tap_ok(mux_role() == MUX_ROLE_FOREGROUND, "a new foreground takes the stale slot");
  mux_detach();
}

/* Foregrounds started at the same instant on one slot: exactly one holds it, the others are refused
 * (the slot is claimed by a compare-and-swap, not a check then a store). Run on a slot of its own. */
static void test_attach_race(void) {
  enum { RIVALS = 6 };
  int go[2], report[2];
  if (pipe(go) != 0 || pipe(report) != 0) abort();
  pid_t pid[RIVALS];
  for (int i = 0; i < RIVALS; i++) {
    pid[i] = fork();
    if (pid[i] == 0) {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 0) _exit(3); /* all released together: the parent closes go */
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 2); /* the refusals' lines */
      mux_options_t o = options(10);
      o.index = 1;
      mux_attach(MUX_ROLE_FOREGROUND, &o);
      c = 'A';
      if (write(report[1], &c, 1) != 1) _exit(3);
      for (;;) pause();
    }
  }
  close(go[0]), close(go[1]);
  int refused = 0, reported = 0, ended[RIVALS] = {0};
  char c;
  for (int ms = 0; ms < 5000 && refused + reported < RIVALS; ms += 10) { /* the refused exit; the holder stays */
    while (byte_within(report[0], 0, &c)) reported++;
    for (int i = 0; i < RIVALS; i++) {
      int status;
      if (!ended[i] && waitpid(pid[i], &status, WNOHANG) == pid[i]) {
        ended[i] = 1;
        refused += WIFEXITED(status) && WEXITSTATUS(status) == 2;
      }
    }
    usleep(10000);
  }
  int holders = 0;
  for (int i = 0; i < RIVALS; i++)
    if (!ended[i]) {
      holders++;
      kill(pid[i], SIGKILL);
      waitpid(pid[i], NULL, 0);
    }
  close(report[0]), close(report[1]);
  tap_ok(holders == 1 && reported == 1 && refused == RIVALS - 1,
         "%d foregrounds released at once onto one slot: one holds it (%d, %d attached), %d refused", RIVALS,
         holders, reported, refused);
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/surge-mux-%s-1", channel);
  unlink(path);
}

static void lower_priority(const void *arg) {
  (void)arg;
  const char *got = mux_lower_priority("idle");
  int ok = (strcmp(got, "SCHED_IDLE") == 0 && sched_getscheduler(0) == SCHED_IDLE) ||
           (strcmp(got, "nice 19") == 0 && getpriority(PRIO_PROCESS, 0) == 19);
  exit(ok ? 0 : 1);
}

int main(void) {
  snprintf(channel, sizeof channel, "test-%ld", (long)getpid());
  test_gate();
  test_feedback_arithmetic();
  test_pieces_rule();
  test_feedback();
  test_feedback_off();
  test_feedback_marks();
  test_killed_background_wait();
  test_killed_foreground(1);
  test_killed_foreground(0);
  test_stat_gone();
  test_gate_one_word();
  test_short_foreground();
  test_graph_recording();
  test_errors();
  test_stale_slot();
  test_attach_race();
  child_result_t r = run_in_child(lower_priority, NULL);
  tap_ok(r.status == 0, "a background's CPU priority: SCHED_IDLE (or nice 19 where refused)");
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/surge-mux-%s-0", channel);
  unlink(path);
  return tap_done();
}
