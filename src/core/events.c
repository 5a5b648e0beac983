#include "core/events.h"

#include "core/error.h"

/* Per thread: an in-process background's trainer raises its events in its own thread, to its own
 * subscribers (its gate), never to the foreground's beside it. */
static _Thread_local struct {
  ev_handler_t fn;
  void *ctx;
} subscribers[EV_MAX_SUBSCRIBERS];
static _Thread_local int nsubscribers;

void ev_subscribe(ev_handler_t fn, void *ctx) {
  if (nsubscribers == EV_MAX_SUBSCRIBERS)
    surge_runtime_error("events: more than %d subscribers at once", EV_MAX_SUBSCRIBERS);
  subscribers[nsubscribers].fn = fn;
  subscribers[nsubscribers].ctx = ctx;
  nsubscribers++;
}

void ev_unsubscribe(ev_handler_t fn, void *ctx) {
  for (int i = 0; i < nsubscribers; i++)
    if (subscribers[i].fn == fn && subscribers[i].ctx == ctx) {
      for (int j = i + 1; j < nsubscribers; j++) subscribers[j - 1] = subscribers[j];
      nsubscribers--;
      return;
    }
}

void ev_raise(ev_activity_t activity, ev_phase_t phase, int where) {
  if (nsubscribers == 0) return;
  ev_t e = {activity, phase, where};
  for (int i = 0; i < nsubscribers; i++) subscribers[i].fn(subscribers[i].ctx, &e);
}
