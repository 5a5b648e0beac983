/* The foreground's side: publishing what it does, with the duration each state lasted at the same
 * code site in earlier steps, and its throughput for the partner's accounting. */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>

#include "core/events.h"
#include "mux/mux_impl.h"

/* A piece of the foreground's own work (a COMPUTING state) ended after `ns`: it feeds the slowdown
 * feedback; solo when the background neither was inside a piece at its start nor let one through
 * since. Returns whether the published pressure changed. */
static int piece_done(mux_local_t *L, double ns) {
  const mux_side_t *bg = L->partner;
  int solo = !L->bg_busy_at_start && !atomic_load(&bg->busy) && atomic_load(&bg->pieces) == L->bg_pieces_at_start;
  mux_feedback_piece(&L->fb, L->site, ns, solo);
  int64_t p = (int64_t)(mux_feedback_pressure(&L->fb) * 1e3);
  return atomic_exchange(&L->me->pressure_milli, p) != p;
}

void mux_fg_set(mux_state_t s, int site) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return;
  if (mux_device_sync && L->opt.slowdown_limit > 0) {
    /* On a GPU a state ends when its queued work does, so a new state waits for the device, for the
     * slowdown feedback's times (without it, [multiplex] slowdown_feedback = off in the foreground's
     * deck, the host's clock times the states and nothing waits); but pieces of computing that
     * follow one another are one piece there (timed under the first one's site): waiting between
     * them would only starve the GPU's queue, a stall per layer. */
    if (s == MUX_COMPUTING && L->state == MUX_COMPUTING && L->site >= 0) return;
    mux_device_sync();
  }
  int64_t now = mux_now_ns();
  int slot = (int)((unsigned)site % MUX_SITES), changed = 0;
  if (L->site >= 0) { /* the state that ends now teaches its site how long it lasts */
    double last = (double)(now - L->state_start);
    mux_running_average(&L->expected_ns[L->site], last);
    if (L->state == MUX_COMPUTING) changed |= piece_done(L, last);
    if (L->state == MUX_INACTIVE || L->state == MUX_WAITING) L->offered_ns += last;
  }
  L->site = slot;
  L->state = s;
  L->state_start = now;
  L->bg_busy_at_start = atomic_load(&L->partner->busy);
  L->bg_pieces_at_start = atomic_load(&L->partner->pieces);
  mux_side_t *me = L->me;
  int64_t expected = (int64_t)L->expected_ns[slot];
  changed |= atomic_exchange(&me->expected_ns, expected) != expected; /* a longer wait may open the gate */
  changed |= atomic_exchange(&me->state, (int32_t)s) != (int32_t)s;
  if (changed) mux_wake(me);
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
}

void mux_fg_step_done(double job_samples_per_sec, double slowdown) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return;
  atomic_store(&L->me->job_sps_milli, (int64_t)(job_samples_per_sec * 1e3));
  atomic_store(&L->me->slowdown_milli, slowdown > 0 ? (int64_t)(slowdown * 1e3) : 0);
}
