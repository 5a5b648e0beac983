/* A polite wait's pace (core/pace.h): how long a waiting thread sleeps between polls, as a function
 * of the time it has waited. Arithmetic only, no timing: the sleeps at chosen moments of a wait. */
#include <math.h>

#include "core/pace.h"
#include "tap.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-12 + 1e-9 * fabs(b); }

/* A pace whose wait began at time 0, so a moment into the wait is exact: with the clock's start,
 * start + 100 us - start may round below 100 us, and a loop stepping by the sleep there (0, still
 * spinning) would never end. */
static pace_t pace_at_zero(double max_us, double fraction) {
  pace_t p = pace_start(max_us, fraction);
  p.start = 0;
  return p;
}

/* The sleep at `at` seconds into a wait of pace p. */
static double sleep_at(const pace_t *p, double at) { return pace_sleep_s(p, p->start + at); }

static void check_sleeps(void) {
  pace_t p = pace_at_zero(1000, 0);
  tap_ok(near(p.spin_s, 100e-6) && near(p.max_s, 1e-3), "a wait of at most 1 ms sleeps: spin 100 us");
  tap_ok(sleep_at(&p, 0) == 0 && sleep_at(&p, 99e-6) == 0, "the first 100 us spin (no sleep)");
  tap_ok(near(sleep_at(&p, 160e-6), 10e-6) && near(sleep_at(&p, 8e-3), 0.5e-3),
         "then 1/16 of the time waited: 10 us at 160 us, 0.5 ms at 8 ms");
  tap_ok(near(sleep_at(&p, 1.0), 1e-3), "at most the longest sleep (1 ms at 1 s)");
  /* a wait ending just after a poll is seen at the next one: at most 1/16 later (the doubling sleeps
   * this replaced could sleep as long as the whole wait so far) */
  double worst = 0;
  for (double t = p.spin_s; t < 20e-3; t += sleep_at(&p, t)) {
    double over = sleep_at(&p, t) / t;
    if (over > worst) worst = over;
  }
  tap_ok(worst <= (1.0 / 16) * (1 + 1e-6), "a wait's end is noticed within 1/16 of its length (worst %.4f)", worst);
  int polls = 0;
  for (double t = p.spin_s; t < 1e-3; t += sleep_at(&p, t)) polls++;
  tap_ok(polls == 38, "a 1 ms wait wakes 38 times after its spin (%d)", polls);
  pace_t s = pace_at_zero(10, 0);
  tap_ok(near(s.spin_s, 10e-6) && near(sleep_at(&s, 12e-6), 1e-6) && near(sleep_at(&s, 1e-3), 10e-6),
         "a longest sleep under 100 us (10 us): spins that long, then sleeps at least 1 us, at most 10 us");
}

static void check_fraction(void) {
  pace_t p = pace_at_zero(1000, 0.25);
  tap_ok(near(sleep_at(&p, 400e-6), 100e-6) && near(sleep_at(&p, 8e-3), 1e-3) && sleep_at(&p, 50e-6) == 0,
         "poll_fraction 0.25: a quarter of the time waited (100 us at 400 us), the same spin and cap");
  int polls = 0;
  for (double t = p.spin_s; t < 1e-3; t += sleep_at(&p, t)) polls++;
  tap_ok(polls == 11, "poll_fraction 0.25: a 1 ms wait wakes 11 times after its spin (%d)", polls);
  pace_t d = pace_at_zero(1000, -1);
  tap_ok(near(d.fraction, 1.0 / 16), "a fraction <= 0 is the default, 1/16");
}

static int lends;
static int rule(void) { return lends; }

/* The thread's sleep rule, asked as a wait begins: a wait it refuses polls without sleeping however
 * long it lasts; one it allows, or any wait without a rule, paces as above. */
static void check_sleep_rule(void) {
  pace_set_sleep_rule(rule);
  lends = 0;
  pace_t no = pace_at_zero(1000, 0);
  lends = 1;
  pace_t yes = pace_at_zero(1000, 0);
  pace_set_sleep_rule(NULL);
  pace_t none = pace_at_zero(1000, 0);
  tap_ok(sleep_at(&no, 1.0) == 0 && sleep_at(&no, 1e3) == 0 && near(sleep_at(&yes, 1.0), 1e-3) &&
             near(sleep_at(&none, 1.0), 1e-3),
         "a wait its thread's rule refuses never sleeps (1 s, 1000 s in); allowed or without a rule it does");
}

int main(void) {
  check_sleeps();
  check_fraction();
  check_sleep_rule();
  return tap_done();
}
