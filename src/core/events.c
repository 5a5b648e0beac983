#include "core/events.h"

#include "core/error.h"

static struct {
  ev_handler_t fn;
  void *ctx;
} subscribers[EV_MAX_SUBSCRIBERS];
static int nsubscribers;

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
