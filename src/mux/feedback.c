/* DeepPool's slowdown feedback, the foreground's bookkeeping: each piece of its own work (a
 * COMPUTING state at a site) is compared with the same site's time alone: the median of its last
 * MUX_SOLO_KEEP pieces that ran while the background was idle (a median, so that an odd short or
 * long piece, a first-call warm-up or a scheduling hiccup, moves it little). The ratio over recent
 * pieces (running averages of both times, so long pieces weigh more) is what the foreground
 * publishes; its background holds back while it exceeds the limit, so the next pieces run alone
 * and bring the ratio down again. */
#include <string.h>

#include "mux/mux_impl.h"

enum { RECENT_WEIGHT_PERCENT = 12 }; /* running averages over recent pieces: new = old + 12% (x - old) */

_Thread_local void (*mux_device_sync)(void);

void mux_set_device_sync(void (*sync)(void)) { mux_device_sync = sync; }

static void running_average(double *avg, double x, int percent) {
  *avg = *avg == 0 ? x : *avg + (x - *avg) * percent / 100.0;
}

/* The median of the site's kept solo times (the lower middle of an even count). */
static double solo_median(const mux_feedback_t *f, int slot) {
  int n = f->solo_count[slot] < MUX_SOLO_KEEP ? f->solo_count[slot] : MUX_SOLO_KEEP;
  double v[MUX_SOLO_KEEP];
  memcpy(v, f->solo_kept[slot], sizeof v);
  for (int i = 1; i < n; i++) /* insertion sort of at most MUX_SOLO_KEEP values */
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1], v[j - 1] = t;
    }
  return v[(n - 1) / 2];
}

void mux_feedback_piece(mux_feedback_t *f, int slot, double ns, int solo) {
  if (slot < 0 || slot >= MUX_SITES || !(ns > 0)) return;
  if (solo) {
    f->solo_kept[slot][f->solo_count[slot] % MUX_SOLO_KEEP] = ns;
    f->solo_count[slot]++;
    f->solo_ns[slot] = solo_median(f, slot);
  }
  if (f->solo_ns[slot] == 0) return; /* nothing to compare with yet */
  running_average(&f->recent_ns, ns, RECENT_WEIGHT_PERCENT);
  running_average(&f->recent_solo_ns, f->solo_ns[slot], RECENT_WEIGHT_PERCENT);
}

double mux_feedback_pressure(const mux_feedback_t *f) {
  return f->recent_solo_ns > 0 ? f->recent_ns / f->recent_solo_ns : 0;
}
