/* A polite wait's pace: how a thread that waits for something (an MPI request, a ring's steps, a
 * device event) polls it while leaving its core to whatever else runs there (a multiplexed
 * background, doc/multiplexing.md "A polite foreground").
 *
 * Poll without sleeping for the first PACE_SPIN_US (or the longest sleep, if that is shorter), so
 * short waits cost nothing; then sleep between polls for a fraction of the time waited so far
 * ([multiplex] poll_fraction, 1/16 by default; at least 1 us, at most the longest sleep), so the
 * end of a wait is noticed within that fraction of its length plus a wake-up; at 1/16 a 1 ms wait
 * wakes 38 times after its spin. The fraction trades the foreground's speed for its background's:
 * every wake-up takes the core back. Sleeps that doubled each time (before 2026-12-04; 10 wake-ups
 * in 1 ms) overslept by up to the whole wait so far: a 2-rank burst foreground of 1.4 ms steps ran
 * 1.20-1.33x slower with them and nothing beside it, 1.07-1.14x at 1/16 (doc/multiplexing.md).
 *
 * The thread's timer slack is set to 1 us before its first sleep (Linux's default, 50 us, would be
 * added to every wake-up).
 *
 * A sleep only helps where something else may run meanwhile: a multiplexed foreground's waits sleep
 * only where its background's gate opens or the background is inside a piece (pace_set_sleep_rule,
 * mux/foreground.c); a short wait or a collective beside a background at its gate, or any wait of a
 * foreground whose background is not attached, polls without sleeping. A 2-rank burst foreground
 * of 1.5 ms steps with no partner then ran a median 1.00x its time alone, against 1.09x when every
 * wait slept (doc/multiplexing.md, "Waits that lend the core").
 *
 * Not done: sleeping toward the end a wait is expected to have (the foreground's learnt duration
 * of its state at that site). Waking at a fraction f of an expectation learnt from the states'
 * own durations settles at tail / (1 - f), the tail being the wake-up and whatever the state does
 * after the wait, however short the wait itself: measured, the same foreground ran 1.5 to 2.6 ms
 * a step from one run to the next at f = 7/8. */
#ifndef SURGE_PACE_H
#define SURGE_PACE_H

#define PACE_SPIN_US 100.0
#define PACE_FRACTION 16.0 /* the default fraction's inverse */

typedef struct pace {
  double start;    /* when the wait began (surge_now) */
  double spin_s;   /* poll without sleeping until start + spin_s */
  double max_s;    /* the longest sleep */
  double fraction; /* each sleep: this fraction of the time waited so far */
} pace_t;

/* A wait that begins now, sleeping at most max_us at a time, each sleep `fraction` of the time
 * waited so far (<= 0: 1/PACE_FRACTION); one that the calling thread's sleep rule refuses polls
 * without sleeping all along. */
pace_t pace_start(double max_us, double fraction);
/* The calling thread's rule, asked as each wait begins: whether sleeping in it frees the core for
 * anyone (a multiplexed foreground: whether its background may run now, mux/foreground.c). NULL: every
 * wait sleeps after its spin. */
void pace_set_sleep_rule(int (*may_sleep)(void));
/* How long to sleep before the next poll at time now (seconds; 0: poll again at once). */
double pace_sleep_s(const pace_t *p, double now);
/* Between two polls: sleeps pace_sleep_s (nothing while spinning). */
void pace_next(pace_t *p);

#endif
