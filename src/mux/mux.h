/* Multiplexing (DeepPool): a background training job runs on the cores (later the GPUs) of a
 * foreground job and uses only the time the foreground leaves idle.
 *
 * Partners. Foreground rank i of a node pairs with background rank i of the same node (i is the
 * rank's index among its own job's ranks on that node). They share one small POSIX shared-memory
 * segment, /dev/shm/surge-mux-CHANNEL-i, in which each side publishes its state; neither ever waits
 * for the other through MPI, so two separate jobs (two mpiexec runs, or two srun steps with
 * --overlap) pair as well as the two halves of one MPMD MPI job.
 *
 * Priority, in layers:
 *   1. the OS: a background process runs under SCHED_IDLE (nice 19 where that is refused), so the
 *      kernel gives the core to the foreground the moment it is runnable;
 *   2. cooperative gating: the foreground publishes what it is doing (computing, inactive for a
 *      layer range, waiting on a receive, in an allreduce) with the duration it expects from the
 *      previous steps; the background runs one piece of its own step at a time (its passes, each
 *      node's forward or backward, the data fetch, the optimizer, grouped into pieces of about
 *      piece_ms from its own profile) only while its partner is inactive or blocked on a wait
 *      expected to last at least min_wait_us, and never during the partner's allreduce;
 *   3. a polite foreground: its receives and barriers poll and sleep (comm_t.poll_us, core/pace.h)
 *      instead of spinning, so the core is free while it waits, in the waits its background's gate
 *      opens for or while the background is inside a piece (others poll without sleeping: nothing
 *      would use the core);
 *   4. devices: backend_t.set_priority gives the background low-priority streams on a GPU backend,
 *      where its kernels can still overlap the foreground's; so the foreground also times its own
 *      pieces of work (each state's span on the device, between marks on its stream) against
 *      their time with the background idle, publishes the ratio over its recent pieces, and the
 *      background holds back while that ratio is above its slowdown_limit (DeepPool's slowdown
 *      feedback). With a device, the background's gate also waits for its previous piece's device
 *      work, so at most one of its pieces is queued at a time.
 *
 * One trainer has at most one channel (its role is fixed for the run), so the hooks below are free
 * functions that do nothing when the calling thread's trainer is not multiplexed. A trainer is a
 * process, or a thread: with [multiplex] placement = thread a foreground process runs its
 * background in a second thread, on a channel in ordinary process memory (mux_channel_in_process),
 * and every hook acts for the calling thread's side. */
#ifndef SURGE_MUX_H
#define SURGE_MUX_H

#include <stdint.h>

enum { MUX_CHANNEL_MAX = 64 }; /* channel names: 1..64 of [A-Za-z0-9._-] */

typedef enum mux_role { MUX_ROLE_NONE = 0, MUX_ROLE_FOREGROUND, MUX_ROLE_BACKGROUND } mux_role_t;

/* What the foreground is doing, as its partner sees it. */
typedef enum mux_state {
  MUX_COMPUTING = 0, /* its own compute (and data, optimizer, logging): background waits */
  MUX_INACTIVE,      /* no work of its own in this layer range: background may run */
  MUX_WAITING,       /* blocked on a receive or barrier: background may run if it is long */
  MUX_ALLREDUCE,     /* in a gradient allreduce: background never runs */
  MUX_STATE_COUNT
} mux_state_t;

const char *mux_role_name(mux_role_t r);   /* "none", "foreground", "background" */

typedef struct mux_options {
  char channel[MUX_CHANNEL_MAX + 1];
  int index;             /* this rank's index among its job's ranks on this node */
  double min_wait_us;    /* background: a WAITING partner counts as idle if it expects >= this */
  double partner_wait_s; /* background: give up (exit 1) when no foreground attached in this time */
  int follow_affinity;   /* background: take the partner's CPU set when it attaches */
  int lower_session;     /* background process: lower its session's autogroup when its partner's is
                          * another (session.c) */
  double piece_ms;       /* background: group its passes into pieces of about this many ms (0: a piece per pass) */
  int device_timed;      /* background on a GPU backend: its passes are its kernels, timed once per site in wall
                          * time with its device work drained at both ends (pieces.c) */
  double slowdown_limit; /* background: hold back while the foreground's recent pieces take more than this
                          * many times their time alone (0: no slowdown feedback) */
  struct mux_shm *in_process; /* NULL: the /dev/shm segment of channel and index; else this channel in
                               * process memory, whose two sides are two threads of this process */
  /* background on a GPU backend, [multiplex] graphs = on: its backend's capture_begin and capture_end
   * (backend.h), which record each piece after the first step and launch it whole after its gate
   * (background.c); NULL: its work is launched as it comes */
  void (*graph_begin)(int key, void (*gate)(void));
  void (*graph_end)(void);
} mux_options_t;

/* A channel in ordinary process memory for a foreground thread and an in-process background thread
 * (nothing in /dev/shm); free it once both sides have detached. */
struct mux_shm *mux_channel_in_process(void);
void mux_channel_in_process_free(struct mux_shm *c);

/* A device backend's synchronize (backend_t), or NULL for host backends: with it, a background's
 * gate first waits for the device work of its previous piece, and its device-timed passes wait for
 * theirs. Set before mux_attach. */
void mux_set_device_sync(void (*sync)(void));

/* A device backend's timing marks (backend_t.mark, mark_passed, mark_ns: at least MUX_MARKS of them),
 * or NULL for host backends: with them, a foreground with the slowdown feedback times each state on
 * the device, between marks recorded on its stream at the changes of state, and never waits for its
 * device to do so. Set before mux_attach (the calling thread's; copied). */
enum { MUX_MARKS = 256 };
typedef struct mux_marks {
  void (*mark)(int i);
  int (*passed)(int i);
  double (*ns)(int i, int j);
} mux_marks_t;
void mux_set_device_marks(const mux_marks_t *m);

/* Whether name is a valid channel name (the segment name is built from it; nothing else). */
int mux_channel_name_ok(const char *name);

/* Attach the calling thread's trainer to its partner slot as role (foreground or background): create or open the
 * segment, check it, and claim the role's side (an error when a live process holds it). */
void mux_attach(mux_role_t role, const mux_options_t *o);
/* Mark this side ended (cleanly) and detach; the side that leaves last removes the segment. */
void mux_detach(void);
/* Once every partner has attached and none can come later (one MPMD launch), remove the segment's
 * name: the mappings stay, and a job that dies leaves nothing behind in /dev/shm. */
void mux_forget_name(void);
mux_role_t mux_role(void);

/* ---- foreground ---- */

/* Publish state s. site names the place in the step (any int that recurs there every step): the
 * expected duration published with it is the running average of how long the state lasted at that
 * site in earlier steps. An attached foreground publishes from the engine's events by itself
 * (core/events.h: the activity gives the state, the phase and place the site), so no executor
 * calls this; tests do. */
void mux_fg_set(mux_state_t s, int site);
/* Seconds this foreground published as inactive or waiting since it attached: the time offered to
 * its partner (0 when the process is not a foreground). */
double mux_fg_offered_s(void);
/* Per step: the job's samples/s (from the slowest rank) and its slowdown so far (NaN: not known),
 * for the partner's accounting. */
void mux_fg_step_done(double job_samples_per_sec, double slowdown);

/* ---- background ---- */

/* Block (sleeping, no spinning) until this rank may run its next piece of work: the partner is
 * inactive, or waiting on something expected to last at least min_wait_us. Returns at once when
 * the process is not a background, and from the moment its partner has ended (mux_partner_ended).
 * No foreground attached within partner_wait_s is a runtime error. */
void mux_bg_gate(void);
/* Whether the foreground this background paired with has ended (cleanly or killed). */
int mux_partner_ended(void);
/* Per step: this rank's share of the step's samples, for the partner's accounting. */
void mux_bg_step_done(double samples);

/* ---- the operating system's share ---- */

/* Lower the calling thread's CPU priority (a background process: its main thread, which threads it
 * starts later inherit): policy "idle" (SCHED_IDLE, falling back to nice 19 when the kernel
 * refuses), "nice" (nice 19) or "none". Returns what was applied, for the log: "SCHED_IDLE",
 * "nice 19" or "none". */
const char *mux_lower_priority(const char *policy);

/* ---- accounting, both sides (cumulative since attach) ---- */
typedef struct mux_counters {
  double bg_work_s;      /* background: CPU seconds its process has used (the kernel's clock) */
  double bg_paused_s;    /* background: seconds blocked in mux_bg_gate */
  double bg_pieces;      /* background: pieces of work its gate let through (all, once the partner is gone) */
  double bg_samples;     /* background: samples of this rank's share of finished steps */
  double fg_samples_per_sec; /* foreground: the job's samples/s at its last step (0 before) */
  double fg_slowdown;    /* foreground: its slowdown as it last published it (NaN: not known) */
  double fg_pressure;    /* foreground: its recent pieces' time over their time alone (0: not known yet) */
  int bg_busy;           /* background: inside a piece of work (between its gate and the next) */
  int live;              /* that side holds a live process */
} mux_counters_t;
/* The partner slot's counters (the background's when this is the foreground and vice versa),
 * plus this side's; zeros when not multiplexed. */
void mux_read(mux_counters_t *bg_side, mux_counters_t *fg_side);

#endif
