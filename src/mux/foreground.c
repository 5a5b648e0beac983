/* The foreground's side: publishing what it does, with the duration each state lasted at the same
 * code site in earlier steps (on a device with the slowdown feedback, the device's time between
 * marks on its stream, learnt once the device has passed them), and its throughput for the
 * partner's accounting. */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>

#include "core/events.h"
#include "core/pace.h"
#include "mux/mux_impl.h"

_Thread_local mux_marks_t mux_device_marks;

void mux_set_device_marks(const mux_marks_t *m) {
  mux_device_marks = m ? *m : (mux_marks_t){0};
}

/* A piece of the foreground's own work (a COMPUTING span) took `ns`: it feeds the slowdown feedback;
 * solo when the background neither was inside a piece at its start nor is now, nor let one through
 * since (on a device "now" may come a while after the span's end: a piece the background began
 * meanwhile makes it count as shared, never the other way). Returns whether the published pressure
 * changed. */
static int piece_done(mux_local_t *L, const mux_span_t *sp, double ns) {
  const mux_side_t *bg = L->partner;
  int solo = !sp->bg_busy && !atomic_load(&bg->busy) && atomic_load(&bg->pieces) == sp->bg_pieces;
  mux_feedback_piece(&L->fb, sp->site, ns, solo);
  int64_t p = (int64_t)(mux_feedback_pressure(&L->fb) * 1e3);
  return atomic_exchange(&L->me->pressure_milli, p) != p;
}

/* The span sp lasted ns: its site learns how long that state lasts there, a piece of computing feeds
 * the slowdown feedback, an idle or waiting span was offered to the partner. Returns whether the
 * published pressure changed. */
static int span_done(mux_local_t *L, const mux_span_t *sp, double ns) {
  mux_running_average(&L->expected_ns[sp->site], ns);
  if (sp->state == MUX_INACTIVE || sp->state == MUX_WAITING) L->offered_ns += ns;
  return sp->state == MUX_COMPUTING && piece_done(L, sp, ns);
}

/* Whether this foreground times its states on its device: it has the device's marks and the slowdown
 * feedback wants device times. */
static int device_timed(const mux_local_t *L) { return mux_device_marks.mark && L->opt.slowdown_limit > 0; }

/* On a device: sp begins now, at a new mark on the stream; the spans whose end mark has passed learn
 * the device's time between their marks, oldest first, and none is waited for. When the device is a
 * whole ring of marks behind the host, the oldest span is dropped unlearnt. */
static int device_span_begins(mux_local_t *L, const mux_span_t *sp) {
  if (L->mark_head - L->mark_tail == MUX_MARKS) L->mark_tail++;
  int k = (int)(L->mark_head % MUX_MARKS);
  mux_device_marks.mark(k);
  L->spans[k] = *sp;
  L->mark_head++;
  int changed = 0;
  while (L->mark_tail + 1 < L->mark_head) {
    int a = (int)(L->mark_tail % MUX_MARKS), b = (int)((L->mark_tail + 1) % MUX_MARKS);
    if (!mux_device_marks.passed(b)) break;
    changed |= span_done(L, &L->spans[a], mux_device_marks.ns(a, b));
    L->mark_tail++;
  }
  return changed;
}

void mux_fg_set(mux_state_t s, int site) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return;
  int on_device = device_timed(L);
  /* On a device, pieces of computing that follow one another are one piece (timed under the first
   * one's site): the layers of one stretch of work, which the background may not enter anyway. */
  if (on_device && s == MUX_COMPUTING && L->state == MUX_COMPUTING && L->site >= 0) return;
  int64_t now = mux_now_ns();
  int slot = (int)((unsigned)site % MUX_SITES), changed = 0;
  mux_span_t begins = {.site = slot, .state = s, .bg_busy = atomic_load(&L->partner->busy),
                       .bg_pieces = atomic_load(&L->partner->pieces)};
  if (on_device)
    changed |= device_span_begins(L, &begins);
  else if (L->site >= 0) /* the state that ends now, by the host's clock */
    changed |= span_done(L, &L->now, (double)(now - L->state_start));
  L->site = slot;
  L->state = s;
  L->state_start = now;
  L->now = begins;
  mux_side_t *me = L->me;
  const uint64_t word = mux_state_word(s, (int64_t)L->expected_ns[slot]);
  changed |= atomic_exchange(&me->state, word) != word; /* (a longer wait may open the gate) */
  if (changed) mux_wake(me);
}

/* Whether the background marked attached is a process that has ended (killed: it never detached),
 * looked up in /proc at most every 100 ms for one process; another that attaches is looked up at once. */
static int partner_gone(mux_local_t *L, const mux_side_t *bg) {
  enum { CHECK_EVERY_NS = 100000000 };
  int64_t now = mux_now_ns(), pid = atomic_load(&bg->pid);
  if (pid == L->partner_checked_pid && now - L->partner_checked_ns < CHECK_EVERY_NS) return L->partner_dead;
  L->partner_checked_ns = now;
  L->partner_checked_pid = pid;
  L->partner_dead = !mux_pid_alive(pid);
  return L->partner_dead;
}

/* The foreground's waits (core/pace.h) sleep only where that frees the core for its background: the
 * partner is attached, and inside a piece of its work (which runs to its end whatever the foreground
 * does), or its gate opens for the state just published (the engine raises a wait's event before
 * the wait). In any other wait (a short one, a collective, no partner or one that has ended) the
 * background would not run, and the wait polls without sleeping. */
static int wait_lends_core(void) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return 1;
  const mux_side_t *bg = L->partner;
  if (atomic_load(&bg->attached) != ATTACH_LIVE) return 0;
  if (partner_gone(L, bg)) return 0;
  return atomic_load(&bg->busy) || mux_gate_open(L->me, bg);
}

double mux_fg_offered_s(void) {
  const mux_local_t *L = mux_self;
  return L && L->role == MUX_ROLE_FOREGROUND ? L->offered_ns / 1e9 : 0;
}

/* ---- the engine's events (core/events.h) publish the states: what the rank does becomes the state,
 * the place in the step (phase, where) the site whose earlier durations the partner is told */

static mux_state_t state_of(ev_activity_t a) {
  switch (a) {
  case EV_IDLE: return MUX_INACTIVE;
  case EV_WAIT: return MUX_WAITING;
  case EV_COLLECTIVE: return MUX_ALLREDUCE;
  case EV_WORK:
  case EV_ACTIVITIES: break;
  }
  return MUX_COMPUTING;
}

static void on_event(void *ctx, const ev_t *e) {
  (void)ctx;
  mux_fg_set(state_of(e->activity), ev_site(e));
}

void mux_fg_listen(int on) {
  if (on)
    ev_subscribe(on_event, NULL);
  else
    ev_unsubscribe(on_event, NULL);
  pace_set_sleep_rule(on ? wait_lends_core : NULL);
}

void mux_fg_step_done(double job_samples_per_sec, double slowdown) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return;
  atomic_store(&L->me->job_sps_milli, (int64_t)(job_samples_per_sec * 1e3));
  atomic_store(&L->me->slowdown_milli, slowdown > 0 ? (int64_t)(slowdown * 1e3) : 0);
}
