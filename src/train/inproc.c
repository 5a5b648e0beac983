#include "train/inproc.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/options.h"
#include "core/cli.h"
#include "core/error.h"
#include "core/say.h"
#include "io/deck.h"
#include "io/deck_shared.h"
#include "io/h5serial.h"
#include "io/sweep.h"
#include "mux/mux.h"
#include "mux/options.h"
#include "train/multiplex.h"
#include "train/run.h"

struct train_inproc {
  pthread_t thread;
  config_t cfg;               /* the background's */
  deck_t *deck;
  comm_t world;               /* its job: this rank alone, or the threads of N foreground ranks */
  struct mux_shm *channel;    /* shared with the foreground's configuration */
  char *resume_cmd;
  char label[48];             /* "background of rank R", "background of ranks A-B" */
  int status;                 /* its exit status: 0, or its error's */
};

/* ---- the background thread: an error's escape ends the thread only */

static _Thread_local jmp_buf escape_to;
static _Thread_local int escape_status;

static void escape(int exit_code) {
  escape_status = exit_code;
  longjmp(escape_to, 1);
}

static void *background_main(void *arg) {
  train_inproc_t *b = arg;
  surge_set_job(b->world.mpi, b->label);
  say_set_label(b->label); /* its lines on the stdout it shares with its foreground */
  /* a multi-rank job: its other ranks may wait for this one in a collective, holding their process's
   * HDF5 lock, so an error ends the processes, as it ends a separate job (no escape); its collective
   * io takes the HDF5 locks of all its ranks at once (io/h5serial.h) */
  if (b->world.size > 1) h5_serial_yield(1);
  surge_set_escape(b->world.size > 1 ? NULL : escape);
  if (setjmp(escape_to) == 0) {
    train_run(&b->cfg, b->deck, b->resume_cmd, &b->world); /* finished, stopped or alone: all exit 0 */
    b->status = 0;
  } else {
    /* an error: its line is printed. What it left half done is left (its memory, its open files,
     * which keep what was written); what the foreground could wait for is released: the HDF5
     * lock, a piece it was recording as a graph (the foreground's frees wait for those), and the
     * channel's side, which now reads "ended" */
    h5_serial_release_all();
    const backend_t *be = backend_find(backend_deck(&b->cfg)->name);
    if (be && be->capture_abandon) be->capture_abandon(); /* a piece it was recording ([multiplex] graphs) */
    mux_detach();
    b->status = escape_status;
  }
  surge_set_escape(NULL);
  say_thread_end();
  return NULL;
}

/* ---- the checks on the main thread */

/* What placement = thread cannot run: BLAS threads (one setting per process). */
static void check_backend(const config_t *cfg, const deck_t *deck, const char *whose) {
  const backend_deck_t *bd = backend_deck(cfg);
  if (bd->threads != 1)
    surge_input_error("%s: [backend] threads = %d (%s deck): [multiplex] placement = thread needs 1 (OpenBLAS's "
                      "thread count is one setting of the whole process, which the foreground and its background "
                      "thread share)", deck_where(deck, "backend.threads"), bd->threads, whose);
}

/* A background job of n ranks on the cuda backend: its device buffers between ranks go through
 * host memory. NCCL would give each process a second communicator on the GPU of the first, driven
 * by another thread, and NCCL's operations on two communicators of one device issued in parallel
 * by two threads may hang (NCCL's thread-safety rules); the gate does not order the two jobs'
 * collectives across ranks. A 1-rank background has no device collectives. */
static void check_device_comm(const config_t *cfg, const deck_t *deck, int n) {
  const backend_deck_t *bd = backend_deck(cfg);
  if (n > 1 && strcmp(bd->name, "cuda") == 0 && strcmp(bd->device_comm, "staged") != 0)
    surge_input_error("%s: [backend] device_comm = %s (the background's deck, cuda): an in-process background job "
                      "of %d ranks would run NCCL beside its foreground's in the same processes, from another "
                      "thread, which NCCL does not allow on one GPU (hint: -D bg:backend.device_comm=staged, its "
                      "buffers between ranks through host memory; or [multiplex] background_ranks = 1; or "
                      "placement = process)", deck_where(deck, "backend.device_comm"), bd->device_comm, n);
}

/* rank 0's check of the background's deck before it is shared */
static void check_deck(const char *text, void *arg) {
  const inproc_args_t *a = arg;
  config_t probe;
  sweep_parse_run(text, a->deck, NULL, 1, a->noverrides, a->overrides, &probe, NULL);
}

/* The background's command line as a separate job would run it (its deck, its overrides, its
 * out_dir): what its stop prints as the resume command. */
static char *resume_command(const inproc_args_t *a, const char *out_override) {
  int n = 0;
  char **argv = xcalloc((size_t)(2 + 2 * (a->noverrides + 1)), sizeof *argv);
  argv[n++] = (char *)a->program;
  argv[n++] = (char *)a->deck;
  for (int i = 0; i < a->noverrides; i++) {
    const char *kv = deck_override_body(a->overrides[i]); /* (a job of its own takes no bg: prefix) */
    if (strncmp(kv, "run.out_dir=", 12) == 0 || strcmp(kv, "checkpoint.resume=true") == 0)
      continue; /* its own out_dir follows; --resume is appended */
    argv[n++] = (char *)"-D";
    argv[n++] = (char *)kv;
  }
  argv[n++] = (char *)"-D";
  argv[n++] = (char *)out_override;
  char *cmd = cli_command_line(n, argv, "--resume");
  free(argv);
  return cmd;
}

/* The ranks of each background job, [multiplex] background_ranks (0: all the foreground's): a
 * divisor of the foreground's rank count, so that every rank's thread belongs to one job. */
static int job_ranks(const multiplex_opts_t *mo, const deck_t *fg_deck, const comm_t *world) {
  long n = mo->background_ranks == 0 ? world->size : mo->background_ranks;
  if (n > world->size || world->size % n != 0)
    surge_input_error("%s: [multiplex] background_ranks = %ld: the foreground's %d rank%s cannot host in-process "
                      "background jobs of %ld ranks, one rank in each foreground rank's process (hint: a divisor "
                      "of %d: 1 for a 1-rank background per foreground rank, 0 for one job over all of them; a "
                      "background with more ranks is a job of its own, placement = process)",
                      deck_where(fg_deck, "multiplex.background_ranks"), mo->background_ranks, world->size,
                      world->size == 1 ? "" : "s", n, world->size);
  return (int)n;
}

train_inproc_t *train_inproc_start(const inproc_args_t *a, config_t *fg_cfg, const deck_t *fg_deck, comm_t *world) {
  multiplex_opts_t *fg_mo = cfg_part_rw(fg_cfg, &multiplex_options);
  if (strcmp(fg_mo->placement, "thread") != 0)
    surge_input_error("%s: [multiplex] placement = %s: --background-deck %s runs the background in this "
                      "process, which needs placement = thread (hint: -D multiplex.placement=thread; or start the "
                      "background as a job of its own, surge-train --background, doc/multiplexing.md)",
                      deck_where(fg_deck, "multiplex.placement"), fg_mo->placement, a->deck);
  if (fg_mo->role != MUX_ROLE_NONE)
    surge_input_error("%s: [multiplex] placement = thread: the foreground runs its background itself, with no "
                      "--foreground, --background or MPMD partner (hint: one surge-train FG.deck --background-deck "
                      "BG.deck per launch)", deck_where(fg_deck, "multiplex.placement"));
  if (a->mpi_thread_level < MPI_THREAD_MULTIPLE)
    surge_runtime_error("%s: [multiplex] placement = thread: this MPI provides thread level %d, not "
                        "MPI_THREAD_MULTIPLE (%d), which two trainers in one process need (hint: an MPI built with "
                        "thread support, or placement = process)", deck_where(fg_deck, "multiplex.placement"),
                        a->mpi_thread_level, MPI_THREAD_MULTIPLE);
  check_backend(fg_cfg, fg_deck, "the foreground's");
  int n = job_ranks(fg_mo, fg_deck, world), job = world->rank / n; /* this rank's thread: job's rank rank % n */

  train_inproc_t *b = xcalloc(1, sizeof *b);
  char *text = deck_read_checked(a->deck, world, check_deck, (void *)a);
  config_t probe; /* its out_dir, of which this rank's background job takes bgJ */
  sweep_parse_run(text, a->deck, NULL, 0, a->noverrides, a->overrides, &probe, NULL);
  deck_check_same(&probe, world); /* (before each job's out_dir is made its own) */
  char out[CFG_STR + 32];
  snprintf(out, sizeof out, "run.out_dir=%s/bg%d", probe.out_dir, job);
  char **ov = xcalloc((size_t)a->noverrides + 1, sizeof *ov);
  memcpy(ov, a->overrides, sizeof *ov * (size_t)a->noverrides);
  ov[a->noverrides] = out;
  sweep_parse_run(text, a->deck, NULL, 0, a->noverrides + 1, ov, &b->cfg, &b->deck);
  free(ov);
  free(text);
  check_backend(&b->cfg, b->deck, "the background's");
  check_device_comm(&b->cfg, b->deck, n);
  run_mux_check_graphs(&b->cfg, b->deck, n);

  b->channel = mux_channel_in_process();
  fg_mo->role = MUX_ROLE_FOREGROUND;
  fg_mo->in_process = b->channel;
  multiplex_opts_t *bg_mo = cfg_part_rw(&b->cfg, &multiplex_options);
  bg_mo->role = MUX_ROLE_BACKGROUND;
  bg_mo->in_process = b->channel;
  bg_mo->host_local_rank = comm_local_rank(world); /* the GPU its thread shares with this rank */
  if (n > 1 && strcmp(bg_mo->priority, "idle") == 0) {
    /* A multi-rank job's thread waits for its other ranks inside MPI, where (MPI_THREAD_MULTIPLE) it
     * may be the thread that drives MPI's progress, which its foreground's own collective then waits
     * for: at SCHED_IDLE beside a foreground spinning in that collective it would never run again.
     * At nice 19 it gets a few percent of the core, enough to let go (and its waits poll outside
     * MPI, train/multiplex.c). */
    snprintf(bg_mo->priority, sizeof bg_mo->priority, "nice");
    if (world->rank == 0)
      say("multiplex: the %d-rank in-process background runs at nice 19, not SCHED_IDLE ([multiplex] priority "
          "= idle): a multi-rank job's thread waits inside MPI, which its foreground must not starve\n", n);
  }
  if (n == 1)
    snprintf(b->label, sizeof b->label, "background of rank %d", world->rank);
  else
    snprintf(b->label, sizeof b->label, "background of ranks %d-%d", job * n, job * n + n - 1);
  b->resume_cmd = resume_command(a, out);
  comm_split(world, job, world->rank, &b->world); /* made here, collective over the foreground's ranks */
  surge_side_threads(1);
  if (pthread_create(&b->thread, NULL, background_main, b) != 0)
    surge_runtime_error("[multiplex] placement = thread: cannot start the background's thread");
  return b;
}

int train_inproc_join(train_inproc_t *b, comm_t *world) {
  pthread_join(b->thread, NULL);
  surge_side_threads(-1);
  double *status = xcalloc((size_t)world->size, sizeof *status), mine = b->status;
  comm_gather_double(world, &mine, 1, status, 0, TRAFFIC_OTHER);
  int worst = 0, n = b->world.size;
  if (world->rank == 0) {
    if (n == 1)
      say("in-process backgrounds (one per rank): exit status");
    else
      say("in-process backgrounds (jobs of %d ranks): exit status", n);
    for (int j = 0; j < world->size / n; j++) { /* a job's: its ranks' largest */
      int s = 0;
      for (int r = j * n; r < j * n + n; r++)
        if ((int)status[r] > s) s = (int)status[r];
      say(" %d", s);
      if (s > worst) worst = s;
    }
    say("\n");
  }
  free(status);
  comm_free(&b->world);
  deck_free(b->deck);
  mux_channel_in_process_free(b->channel);
  free(b->resume_cmd);
  free(b);
  return worst;
}
