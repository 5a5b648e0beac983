/* A background's pieces ([multiplex] piece_ms): its node passes grouped into pieces of about
 * piece_ms, from its own profile, so that it passes its gate at the start of each piece only.
 *
 * The profile: per site (the pass's phase and place in the step, which recurs every step), a
 * running average of the pass's time on the calling thread's CPU clock, from its event to the
 * background's next event. CPU time, not wall time: a background at SCHED_IDLE is preempted
 * whenever its foreground runs, and that wait is not the pass's length.
 *
 * On a GPU backend the CPU clock sees a pass's launches, not its kernels: there a site's time is
 * the wall time of its first pass, with the device drained at both ends (the gate before it does
 * that, background.c syncs again at its end), and is kept (`once`): a later pass inside a piece has
 * its kernels still queued at its end, and its clock would see only their launch. (A pass whose
 * site is not known yet always starts a piece, so its start is drained.) The first step then runs
 * a piece per pass, as on a host, and the later ones in pieces of about piece_ms of device time.
 *
 * The rule, a function of that profile only: a pass whose site has no time yet starts a piece, and
 * so does the pass after it (the first step is gated at every pass, as with piece_ms = 0); a known
 * pass of expected length e starts a piece when the passes since the last gate, s, are expected to
 * end nearer piece_ms without it than with it (s + e/2 > piece_ms); otherwise it joins the piece.
 * A pass longer than piece_ms is a piece of its own. So is a pass that waited for the device inside
 * a recorded piece ([multiplex] graphs: a copy with the host, which a recording cannot hold): it
 * and the pass after it start pieces, and the pieces between such passes are recorded whole. */
#include <math.h>
#include <time.h>

#include "mux/mux_impl.h"

int64_t mux_thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void mux_pieces_init(mux_pieces_t *p, double piece_ms, int once) {
  for (int s = 0; s < MUX_SITES; s++) p->pass_ns[s] = 0, p->alone[s] = 0;
  p->piece_ns = piece_ms > 0 ? piece_ms * 1e6 : 0;
  p->once = once;
  p->since_gate_ns = INFINITY; /* the first pass starts a piece */
  p->open_site = -1;
  p->open_t0 = 0;
}

int mux_pieces_begin(mux_pieces_t *p, int site) {
  int slot = (int)((unsigned)site % MUX_SITES), start = 1;
  double e = p->pass_ns[slot];
  if (p->piece_ns > 0 && e > 0 && !p->alone[slot]) {
    start = p->since_gate_ns + e / 2 > p->piece_ns;
    p->since_gate_ns = start ? e : p->since_gate_ns + e;
  } else {
    p->since_gate_ns = INFINITY; /* unknown, alone (or no grouping): the next pass starts a piece too */
  }
  p->open_site = slot;
  return start;
}

void mux_pieces_clock(mux_pieces_t *p, int64_t now_ns) { p->open_t0 = now_ns; }

void mux_pieces_waited(mux_pieces_t *p) {
  if (p->open_site >= 0) p->alone[p->open_site] = 1;
}

int mux_pieces_alone(const mux_pieces_t *p) { return p->open_site >= 0 && p->alone[p->open_site]; }

int mux_pieces_timing(const mux_pieces_t *p) {
  return p->open_site >= 0 && !(p->once && p->pass_ns[p->open_site] > 0);
}

void mux_pieces_end(mux_pieces_t *p, int64_t now_ns) {
  if (!mux_pieces_timing(p)) {
    p->open_site = -1;
    return;
  }
  /* at least 1 ns: a pass the clock saw take no time is known (0 means not seen) */
  mux_running_average(&p->pass_ns[p->open_site], fmax(1, (double)(now_ns - p->open_t0)));
  p->open_site = -1;
}
