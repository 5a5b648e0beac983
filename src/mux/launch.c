#include "mux/launch.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

static comm_t mpmd_world = {.mpi = MPI_COMM_NULL}; /* every process of an MPMD launch */

void mux_launch_split(mux_role_t asked, comm_t *job, mux_launch_t *out) {
  memset(out, 0, sizeof *out);
  comm_t world;
  comm_world(&world);
  /* MPI_APPNUM: which "-n N prog args" block of the mpiexec line started this process */
  int *appnum = NULL, found = 0, app = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &found);
  if (found && appnum && *appnum > 0) app = *appnum;
  double background = asked == MUX_ROLE_BACKGROUND ? 1 : 0, v[3] = {background, 1 - background, app};
  comm_allreduce_sum_double(&world, v, 2, TRAFFIC_OTHER);
  comm_allreduce_max_double(&world, v + 2, 1, TRAFFIC_OTHER);
  out->mpmd = v[2] > 0 || (v[0] > 0 && v[1] > 0);
  out->role = asked;
  if (!out->mpmd) {
    *job = world;
    return;
  }
  int multiplexed = v[0] > 0;
  if (multiplexed) out->role = asked == MUX_ROLE_BACKGROUND ? MUX_ROLE_BACKGROUND : MUX_ROLE_FOREGROUND;
  if (out->role != MUX_ROLE_NONE)
    snprintf(out->label, sizeof out->label, "%s", mux_role_name(out->role));
  else
    snprintf(out->label, sizeof out->label, "job %d", app);
  /* a channel name unique to this launch and node: this node's host name, world rank 0's pid and
   * start time. The node's own name keeps nodes apart that share /dev/shm (tools/cluster-local-up.sh's
   * emulated nodes are namespaces of one machine). */
  char token[48] = "", name[MUX_CHANNEL_MAX + 1] = "";
  if (world.rank == 0 && multiplexed) snprintf(token, sizeof token, "%ld-%ld", (long)getpid(), (long)time(NULL));
  comm_bcast(&world, token, sizeof token, 0, TRAFFIC_OTHER);
  if (multiplexed) {
    char host[32] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    for (char *p = host; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-')) *p = '_';
    snprintf(name, sizeof name, "mpmd-%s-%s", host, token);
  }
  memcpy(out->channel, name, sizeof name);
  /* one job per block of the command line; without MPI_APPNUM, one per role */
  int color = found && appnum ? app : out->role == MUX_ROLE_BACKGROUND ? 1 : 0;
  comm_split(&world, color, world.rank, job);
  if (multiplexed)
    mpmd_world = world; /* for mux_launch_rendezvous */
  else
    comm_free(&world);
}

void mux_launch_ready(void) {
  if (mpmd_world.mpi != MPI_COMM_NULL) comm_barrier(&mpmd_world);
}

void mux_launch_rendezvous(void) {
  if (mpmd_world.mpi == MPI_COMM_NULL) return;
  comm_barrier(&mpmd_world);
  comm_free(&mpmd_world);
}
