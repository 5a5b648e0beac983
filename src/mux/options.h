/* The deck's [multiplex] section (doc/multiplexing.md), declared here as this part's rows
 * (core/keys.h), and what surge-train's command line and launch add to it (the job's role). The
 * trainer's multiplexing (train/multiplex.c) turns them into the mux library's options (mux/mux.h). */
#ifndef SURGE_MUX_OPTIONS_H
#define SURGE_MUX_OPTIONS_H

#include "core/keys.h"

enum { MUX_PATH_MAX = 256 }; /* channel and baseline keys: text of at most 255 characters */

struct mux_shm; /* mux/mux.h */

typedef struct multiplex_opts {
  char channel[MUX_PATH_MAX];   /* partner channel name; "" = automatic (MPMD, or Slurm's job id) */
  char placement[8];            /* foreground: process | thread (its background in this process) */
  long background_ranks;        /* foreground, placement = thread: ranks of each background job (0: all) */
  char on_fg_end[16];           /* background: stop | continue when the foreground ends */
  double min_wait_us;           /* background: a waiting foreground counts as idle from this expected wait */
  double piece_ms;              /* background: pieces of about this many ms of its passes (0: a piece per pass) */
  char graphs[4];               /* background on a GPU: on | off (its pieces recorded as CUDA graphs) */
  double poll_us;               /* foreground: longest sleep between polls while waiting (0: spin in MPI) */
  double poll_fraction;         /* foreground: a sleep between polls, as a fraction of the time waited */
  double partner_wait_s;        /* background: how long to wait for a foreground to attach */
  char priority[16];            /* background: idle | nice | none (OS priority) */
  int follow_affinity;          /* background: run on its partner's CPU set */
  double slowdown_limit;        /* background: hold back while the foreground runs over this x its solo time */
  char slowdown_feedback[8];    /* device | always | off (background: holds back; foreground: times its device) */
  long partner_offset;          /* partner slot = this rank's index on its node + offset */
  char baseline[MUX_PATH_MAX];  /* foreground: the log of a foreground-only run ("" = none) */
  /* set by surge-train's command line and launch (mux/launch.h), not by deck keys */
  int role;                     /* mux_role_t: --foreground, --background, or MPMD partner */
  char auto_channel[72];        /* MPMD with a background: the channel all its jobs agreed on */
  struct mux_shm *in_process;   /* placement = thread: the channel between this rank's two threads */
  int host_local_rank;          /* placement = thread, background: its foreground rank's index on its node,
                                 * which picks the GPU both threads share ([backend] device = -1) */
} multiplex_opts_t;

/* The [multiplex] rows. */
extern const cfg_part_t multiplex_options;

/* A parsed configuration's [multiplex] values and launch role. */
static inline const multiplex_opts_t *multiplex_opts(const struct config *cfg) {
  return (const multiplex_opts_t *)cfg_part(cfg, &multiplex_options);
}

#endif
