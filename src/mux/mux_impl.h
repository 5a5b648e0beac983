/* Inside the multiplexer: the shared segment's layout and this process's end of it. Each side
 * writes only its own mux_side_t; the other side only reads it (atomics, no locks). */
#ifndef SURGE_MUX_IMPL_H
#define SURGE_MUX_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

#include "mux/mux.h"

#define MUX_MAGIC 0x58554d4547525553ULL /* "SURGEMUX" little-endian */
enum { MUX_VERSION = 7, MUX_CPUSET_BYTES = 128, MUX_AUTOGROUP_BYTES = 64, MUX_SITES = 4096 };
enum { SIDE_FG = 0, SIDE_BG = 1 };
enum { ATTACH_NONE = 0, ATTACH_LIVE = 1, ATTACH_ENDED = 2 };

/* A side's state and the duration expected of it (ns, 0 unknown; at most 2^56) as one word: the
 * state in the low 8 bits. Published and read whole, so the gate never pairs one state with
 * another's duration (as two words, a WAITING read before a change to COMPUTING and the computing's
 * duration read after it opened the gate). */
static inline uint64_t mux_state_word(mux_state_t s, int64_t expected_ns) {
  const int64_t top = ((int64_t)1 << 56) - 1;
  return (uint64_t)(expected_ns < 0 ? 0 : expected_ns > top ? top : expected_ns) << 8 | (uint8_t)s;
}
static inline mux_state_t mux_word_state(uint64_t w) { return (mux_state_t)(w & 0xffu); }
static inline int64_t mux_word_expected_ns(uint64_t w) { return (int64_t)(w >> 8); }

typedef struct mux_side {
  _Atomic uint32_t seq;          /* futex word: bumped at every state change and at detach */
  _Atomic uint32_t sleepers;     /* the other side sleeps on seq: wake it */
  _Atomic uint64_t state;        /* mux_state_word: the state and its expected duration in one word */
  _Atomic int32_t attached;      /* ATTACH_* */
  _Atomic int64_t pid;
  _Atomic int64_t claim;         /* the pid holding this side (0: free), taken by compare-and-swap */
  _Atomic uint64_t generation;   /* +1 at every attach of this side */
  _Atomic uint64_t paused_ns;    /* background: time paused at the gate */
  _Atomic uint64_t pieces;       /* background: pieces of work let through the gate */
  _Atomic uint64_t samples_milli; /* background: samples of its share, x 1000 */
  _Atomic int64_t job_sps_milli; /* foreground: the job's samples/s, x 1000 */
  _Atomic int64_t slowdown_milli; /* foreground: its slowdown so far, x 1000 (0: not known) */
  _Atomic int64_t pressure_milli; /* foreground: recent pieces' time over their time alone, x 1000 (0: not known) */
  _Atomic int32_t busy;          /* background: 1 between its gate letting a piece through and the next gate */
  _Atomic int64_t min_wait_ns;   /* background: its gate opens for a partner waiting at least this long */
  _Atomic int64_t limit_milli;   /* background: it holds back above this pressure, x 1000 (0: no feedback) */
  _Atomic int32_t cpuset_bytes;  /* valid bytes of cpuset (0: not published) */
  _Atomic int32_t thread_clock_set; /* an in-process side: thread_clock is its thread's CPU clock */
  _Atomic int64_t thread_clock;  /* clockid_t of that thread (readable by any thread of the process) */
  unsigned char cpuset[MUX_CPUSET_BYTES];
  _Atomic int32_t autogroup_bytes; /* valid bytes of autogroup (0: not published) */
  char autogroup[MUX_AUTOGROUP_BYTES]; /* its session's autogroup ("/autogroup-123"), as it read it */
} mux_side_t;

typedef struct mux_shm {
  _Atomic uint64_t magic;
  uint32_t version;        /* MUX_VERSION (the segment's size is checked too) */
  mux_side_t side[2];      /* [SIDE_FG], [SIDE_BG] */
} mux_shm_t;

/* DeepPool's slowdown feedback, kept by the foreground (feedback.c): how long its pieces of work
 * (COMPUTING states, per site) take while the background is idle, and over recent pieces how long
 * they took against that. */
enum { MUX_SOLO_KEEP = 5 }; /* solo pieces kept per site */
typedef struct mux_feedback {
  double solo_ns[MUX_SITES];       /* per site: its time alone, the median of solo_kept (0: none yet) */
  double solo_kept[MUX_SITES][MUX_SOLO_KEEP]; /* per site: its last pieces with the background idle */
  unsigned solo_count[MUX_SITES];  /* per site: solo pieces seen */
  double recent_ns, recent_solo_ns; /* running averages over recent pieces of their time, of their solo time */
} mux_feedback_t;
/* One piece of `ns` at site slot; solo: the background did no work during it. */
void mux_feedback_piece(mux_feedback_t *f, int slot, double ns, int solo);
/* The recent pieces' time over their time alone; 0 while no piece with a known solo time was seen. */
double mux_feedback_pressure(const mux_feedback_t *f);
extern _Thread_local void (*mux_device_sync)(void); /* mux_set_device_sync (the calling thread's) */
extern _Thread_local mux_marks_t mux_device_marks;  /* mux_set_device_marks (the calling thread's; NULLs: none) */

/* A state of the foreground as it began: where, what, and what its background was doing then. */
typedef struct mux_span {
  int site;                /* its site's slot */
  mux_state_t state;
  int bg_busy;             /* the partner was inside a piece when it began */
  uint64_t bg_pieces;      /* the partner's pieces counter when it began */
} mux_span_t;

/* A background's pieces (pieces.c, [multiplex] piece_ms): its passes grouped from their profile. */
typedef struct mux_pieces {
  double piece_ns;             /* the pieces' target length (0: every pass is a piece) */
  int once;                    /* a site's time is learnt once and kept (device-timed passes) */
  double pass_ns[MUX_SITES];   /* per site: its pass's time, a running average (once: the first pass's; 0: not seen) */
  double since_gate_ns;        /* expected time of the passes since the last gate (INFINITY: a piece is due) */
  unsigned char alone[MUX_SITES]; /* per site: its pass waits for the device, a piece of its own (never recorded) */
  int open_site;               /* site of the pass running now (-1: none) */
  int64_t open_t0;             /* its start on the passes' clock (the thread's CPU time; on a device, wall time) */
} mux_pieces_t;
/* once: each site's time is learnt from its first pass and kept (else a running average). */
void mux_pieces_init(mux_pieces_t *p, double piece_ms, int once);
/* Whether the pass running now is being timed: on a device its kernels must be done before the
 * clock is read at its end (mux_pieces_end). */
int mux_pieces_timing(const mux_pieces_t *p);
/* A pass at site begins: whether it starts a piece (the caller gates first, then mux_pieces_clock). */
int mux_pieces_begin(mux_pieces_t *p, int site);
/* The pass running now waited for the device inside a recorded piece ([multiplex] graphs): from now
 * on its site is a piece of its own, and the pass after it starts one. No effect between passes. */
void mux_pieces_waited(mux_pieces_t *p);
/* Whether the pass running now is a piece of its own because it waits for the device. */
int mux_pieces_alone(const mux_pieces_t *p);
/* The pass begun last starts running at now_ns (the passes' clock, background.c's pass_now). */
void mux_pieces_clock(mux_pieces_t *p, int64_t now_ns);
/* The running pass, if any, ended at now_ns: its site learns how long it took. */
void mux_pieces_end(mux_pieces_t *p, int64_t now_ns);
/* Nanoseconds of the calling thread's CPU clock. */
int64_t mux_thread_cpu_ns(void);

/* A running average of durations: the first value as it is, then 25% of each new one's difference. */
static inline void mux_running_average(double *avg, double last) {
  *avg = *avg == 0 ? last : *avg + (last - *avg) * 0.25;
}

/* This thread's end (one per trainer: a process's, or an in-process background's and the foreground
 * thread beside it each their own). */
typedef struct mux_local {
  mux_role_t role;
  mux_options_t opt;
  char name[MUX_CHANNEL_MAX + 32]; /* shm name "/surge-mux-CHANNEL-I"; "" for an in-process channel */
  mux_shm_t *shm;
  mux_side_t *me, *partner;
  /* foreground */
  int site;                      /* site of the current state (-1: none yet) */
  int64_t state_start;
  double expected_ns[MUX_SITES]; /* running average per site (0: not seen) */
  mux_state_t state;             /* the current state */
  mux_span_t now;                /* the current state as it began (timed by the host's clock) */
  /* timed on the device (mux_device_marks): span k began at mark k (slot k % MUX_MARKS) and ended at
   * mark k + 1; spans from mark_tail on wait for their end to pass, mark_head marks were recorded */
  mux_span_t spans[MUX_MARKS];
  uint64_t mark_head, mark_tail;
  mux_feedback_t fb;
  double offered_ns;             /* time published as inactive or waiting, since attach */
  int64_t partner_checked_ns;    /* when the background's process was last looked up (0: never) */
  int64_t partner_checked_pid;   /* the process looked up then */
  int partner_dead;              /* it was found gone (SIGKILL leaves its side marked attached) */
  /* background */
  int64_t attached_ns;
  uint64_t partner_gen;          /* generation of the foreground it paired with, 0: none yet */
  uint64_t gen_at_attach;        /* the foreground slot's generation when this background attached */
  int partner_ended, released, affinity_done;
  mux_pieces_t pieces;           /* which passes start a piece (gate) */
  int recording;                 /* opt.graph_begin: a piece is being recorded */
} mux_local_t;

extern _Thread_local mux_local_t *mux_self; /* NULL when the calling thread's trainer is not multiplexed */

int64_t mux_now_ns(void);
/* Whether pid is a running process (not gone, not a zombie, not exiting). */
int mux_pid_alive(int64_t pid);
/* Whether a /proc/PID/stat line says the process is gone: a zombie (Z), dead (X), or exiting
 * (PF_EXITING in its flags); the state read after the line's last ')'. */
int mux_stat_gone(const char *stat);
/* The partner slot holds a live process (attached, not ended, pid alive). */
int mux_side_live(const mux_side_t *s);
/* Wake sleepers on s->seq after a change; sleep on partner->seq while it equals seen (timeout_ns). */
void mux_wake(mux_side_t *s);
void mux_sleep(mux_side_t *partner, uint32_t seen, int64_t timeout_ns);
/* The background's gate, as either side reads it (what bg published at its attach): open while the
 * foreground's state (fg) lets the background run (inactive, or waiting on something expected to last
 * at least bg's min_wait_ns; never while it computes or reduces) and its slowdown feedback does not
 * hold the background back (fg's pressure above bg's limit). */
static inline int mux_gate_open(const mux_side_t *fg, const mux_side_t *bg) {
  int64_t limit = atomic_load(&bg->limit_milli);
  if (limit > 0 && atomic_load(&fg->pressure_milli) > limit) return 0;
  uint64_t w = atomic_load(&fg->state);
  mux_state_t s = mux_word_state(w);
  return s == MUX_INACTIVE || (s == MUX_WAITING && mux_word_expected_ns(w) >= atomic_load(&bg->min_wait_ns));
}

/* Background: pair with the foreground in the slot if it is live and none was paired yet. */
void mux_bg_try_pair(mux_local_t *L);
/* Foreground: publish the states from the engine's events (on), or stop (off). */
void mux_fg_listen(int on);
/* Background: gate every piece of its own work (the engine's EV_WORK events) (on), or stop (off). */
void mux_bg_listen(int on);
/* Give this process the CPU set the partner published (background: follow_affinity). */
void mux_follow_partner_cpus(const mux_side_t *partner);
/* This process's session autogroup into me->autogroup, read from /proc/self (session.c). */
void mux_publish_autogroup(mux_side_t *me);
/* A background process whose foreground partner is in another session's autogroup (as each
 * published it): its own session's autogroup to nice 19 until it exits, and a line saying so
 * (session.c). */
void mux_lower_session(const mux_side_t *partner);

#endif
