/* Roles at start-up, before anything else is collective: one mpiexec may start several jobs at
 * once (MPMD: `mpiexec -n 2 surge-train fg.deck : -n 2 surge-train --background bg.deck`), so the
 * world splits into one communicator per block of the command line (MPI_APPNUM), and every process
 * says the role its command line asked for. */
#ifndef SURGE_MUX_LAUNCH_H
#define SURGE_MUX_LAUNCH_H

#include "comm/comm.h"
#include "mux/mux.h"

typedef struct mux_launch {
  mux_role_t role;  /* the role this process runs (a plain rank of an MPMD world is foreground) */
  int mpmd;         /* the world holds a foreground and a background job */
  char channel[MUX_CHANNEL_MAX + 1]; /* MPMD with a background: a channel name all jobs share ("" otherwise) */
  char label[24];   /* MPMD: the job's name in output the jobs share (its role, or "job N"); "" otherwise */
} mux_launch_t;

/* Collective over MPI_COMM_WORLD. asked: MUX_ROLE_NONE (no flag), FOREGROUND or BACKGROUND. job
 * becomes this process's job: the whole world, or its block of an MPMD launch. When some block is
 * --background, the blocks without a flag are foreground; all blocks share one channel name. */
void mux_launch_split(mux_role_t asked, comm_t *job, mux_launch_t *out);

/* Collective over an MPMD launch's world (nothing otherwise): before any process makes the launch's
 * channel, so that a job failing earlier (its deck, data or output directories) leaves no segment
 * behind: its MPI_Abort ends the other job here, before it attached. */
void mux_launch_ready(void);
/* Collective over an MPMD launch's world (nothing otherwise): once every process has attached to
 * its channel, so that no job can end before its partner has seen it. Call it once. */
void mux_launch_rendezvous(void);

#endif
