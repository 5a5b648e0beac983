/* The background's side: the gate in front of every piece of its work (pieces.c groups its passes
 * into pieces), the partner's end, and its accounting (time paused, samples; the CPU time it used
 * is its process's own clock). */
#include <stdatomic.h>

#include "core/error.h"
#include "core/events.h"
#include "mux/mux_impl.h"

enum { POLL_NS = 50 * 1000 * 1000 }; /* re-check liveness at least this often while paused */

/* The partner this background paired with is gone: it ended, died, or a new foreground took the
 * slot. Before the first pairing, a foreground that attached after this background did and is gone
 * already was its partner (a short one); a slot dead or ended from before is stale: wait. An
 * in-process channel (no name) is new with its process, so an ended foreground there is this
 * process's own, which may finish before its background thread gets to attach. */
static int partner_gone(mux_local_t *L) {
  mux_side_t *p = L->partner;
  if (!L->partner_gen) {
    mux_bg_try_pair(L);
    uint64_t gen = atomic_load(&p->generation);
    if (!L->name[0] && !L->partner_gen && gen > 0 && atomic_load(&p->attached) == ATTACH_ENDED) {
      L->partner_gen = gen;
      return 1;
    }
    if (L->partner_gen || gen == L->gen_at_attach) return 0;
    int32_t state = atomic_load(&p->attached); /* NONE: it is attaching right now */
    if (state != ATTACH_ENDED && !(state == ATTACH_LIVE && !mux_pid_alive(atomic_load(&p->pid)))) return 0;
    L->partner_gen = gen; /* came and went between two looks */
    return 1;
  }
  return !mux_side_live(p) || atomic_load(&p->generation) != L->partner_gen;
}

/* The partner is the live foreground of the generation read before the look, if the side is still
 * LIVE in that generation after it. A foreground that attaches makes its side NONE, stores its pid,
 * counts the generation up, then makes it LIVE (mux_attach): a look that read a crashed holder's
 * LIVE but the new pid (alive) is caught by the side's NONE or the new generation afterwards, and
 * the next look pairs. Without the second read it paired with the old generation, and the live
 * foreground then counted as ended (mux_partner_ended). */
void mux_bg_try_pair(mux_local_t *L) {
  mux_side_t *p = L->partner;
  uint64_t gen = atomic_load(&p->generation);
  if (L->partner_gen || !mux_side_live(p)) return;
  if (atomic_load(&p->attached) != ATTACH_LIVE || atomic_load(&p->generation) != gen) return;
  L->partner_gen = gen;
  if (L->opt.follow_affinity) mux_follow_partner_cpus(p);
  if (L->opt.lower_session && !L->opt.in_process) mux_lower_session(p);
}

/* The passes' clock (pieces.c): the thread's CPU time on a host, the wall clock on a device. */
static int64_t pass_now(const mux_local_t *L) { return L->opt.device_timed ? mux_now_ns() : mux_thread_cpu_ns(); }

/* The end of the pass running now on that clock: on a device, after draining the device where the
 * pass is being timed (its kernels are its length). */
static int64_t pass_end(mux_local_t *L) {
  if (L->opt.device_timed && mux_device_sync && mux_pieces_timing(&L->pieces)) mux_device_sync();
  return pass_now(L);
}

/* The gate of a recorded piece, which the backend calls where the recording ends: at the piece's end
 * (end_recording), or earlier, where an op of the pass running now waits for the device (a cut: the
 * work recorded so far is launched after this gate, the rest of the piece runs as it comes). A pass
 * that cut a recording is a piece of its own from then on (pieces.c), never recorded. */
static void recording_gate(void) {
  mux_local_t *L = mux_self;
  if (L && L->recording) { /* the backend cut it */
    L->recording = 0;
    mux_pieces_waited(&L->pieces);
  }
  mux_bg_gate();
}

/* The piece being recorded, if any, goes to the device: its graph made, its gate passed, launched. */
static void end_recording(mux_local_t *L) {
  if (!L->recording) return;
  L->recording = 0;
  L->opt.graph_end();
}

/* A piece begins: the one recorded before it goes to the device; this one is recorded where the
 * backend records pieces, unless it is being timed (a timed pass drains the device) or is a pass
 * that waits for the device; its gate comes when it ends. Any other piece passes the gate now and
 * runs as it comes. */
static void piece_begins(mux_local_t *L, int site) {
  end_recording(L);
  if (L->opt.graph_begin && !mux_pieces_timing(&L->pieces) && !mux_pieces_alone(&L->pieces)) {
    L->recording = 1;
    L->opt.graph_begin(site, recording_gate);
  } else {
    mux_bg_gate(); /* on a device, also drains the last piece's work */
  }
}

/* The engine's events (core/events.h): every event ends the pass before it; a pass of the
 * background's own work (EV_WORK) that starts a piece (pieces.c) begins it (its gate, or its
 * recording). */
static void on_event(void *ctx, const ev_t *e) {
  (void)ctx;
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_BACKGROUND) return;
  int64_t now = pass_end(L);
  mux_pieces_end(&L->pieces, now);
  if (e->activity != EV_WORK) return;
  if (mux_pieces_begin(&L->pieces, ev_site(e))) {
    piece_begins(L, ev_site(e));
    now = pass_now(L); /* the gate's own time is not the pass's */
  }
  mux_pieces_clock(&L->pieces, now); /* (on a device a pass joining a piece is not timed) */
}

void mux_bg_listen(int on) {
  if (on) {
    ev_subscribe(on_event, NULL);
  } else {
    ev_unsubscribe(on_event, NULL);
    if (mux_self) end_recording(mux_self); /* its gate and launch, before the channel goes */
  }
}

void mux_bg_gate(void) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_BACKGROUND) return;
  if (L->released) { /* the partner is gone: every piece passes, and is counted as one */
    atomic_fetch_add(&L->me->pieces, 1);
    return;
  }
  if (mux_device_sync) mux_device_sync(); /* the previous piece's device work is done: one piece queued at most */
  atomic_store(&L->me->busy, 0);
  int64_t t0 = mux_now_ns();
  for (;;) {
    uint32_t seen = atomic_load(&L->partner->seq);
    if (partner_gone(L)) {
      L->partner_ended = 1;
      L->released = 1; /* finish the step ungated; run.c stops or carries on ([multiplex] on_foreground_end) */
      break;
    }
    if (L->partner_gen && mux_gate_open(L->partner, L->me)) break;
    int64_t now = mux_now_ns();
    if (!L->partner_gen && (double)(now - L->attached_ns) > L->opt.partner_wait_s * 1e9) {
      mux_options_t o = L->opt;
      mux_detach(); /* nobody else uses the segment: leave nothing behind */
      surge_runtime_error("multiplex channel '%s' slot %d: no foreground attached within %g s (hint: start the "
                          "foreground with --foreground and the same [multiplex] channel, on the same node, with a "
                          "rank for every background rank there (a slot is a rank's place on its node plus "
                          "[multiplex] partner_offset), or raise [multiplex] partner_wait_s)", o.channel, o.index,
                          o.partner_wait_s);
    }
    mux_sleep(L->partner, seen, POLL_NS);
  }
  atomic_fetch_add(&L->me->paused_ns, (uint64_t)(mux_now_ns() - t0));
  atomic_store(&L->me->busy, 1);
  atomic_fetch_add(&L->me->pieces, 1);
}

int mux_partner_ended(void) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_BACKGROUND) return 0;
  if (!L->partner_ended && partner_gone(L)) L->partner_ended = L->released = 1;
  return L->partner_ended;
}

void mux_bg_step_done(double samples) {
  mux_local_t *L = mux_self;
  if (!L || L->role != MUX_ROLE_BACKGROUND) return;
  atomic_fetch_add(&L->me->samples_milli, (uint64_t)(samples * 1e3));
}
