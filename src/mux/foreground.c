/* The foreground's side: publishing what it does, with the duration each state lasted at the same
 * code site in earlier steps, and its throughput for the partner's accounting. */
#include <math.h>
#include <stdatomic.h>

#include "mux/mux_impl.h"

enum { EXPECTED_WEIGHT_PERCENT = 25 }; /* running average: new = old + 25% of (last - old) */

void mux_fg_set(mux_state_t s, int site) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return;
  int64_t now = mux_now_ns();
  int slot = (int)((unsigned)site % MUX_SITES);
  if (L->site >= 0) { /* the state that ends now teaches its site how long it lasts */
    double last = (double)(now - L->state_start), *e = &L->expected_ns[L->site];
    *e = *e == 0 ? last : *e + (last - *e) * EXPECTED_WEIGHT_PERCENT / 100.0;
  }
  L->site = slot;
  L->state_start = now;
  mux_side_t *me = L->me;
  int64_t expected = (int64_t)L->expected_ns[slot];
  int changed = atomic_exchange(&me->expected_ns, expected) != expected; /* a longer wait may open the gate */
  changed |= atomic_exchange(&me->state, (int32_t)s) != (int32_t)s;
  if (changed) mux_wake(me);
}

void mux_fg_step_done(double job_samples_per_sec, double slowdown) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_FOREGROUND) return;
  atomic_store(&L->me->job_sps_milli, (int64_t)(job_samples_per_sec * 1e3));
  atomic_store(&L->me->slowdown_milli, slowdown > 0 ? (int64_t)(slowdown * 1e3) : 0);
}
