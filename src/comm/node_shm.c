#include "comm/node_shm.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"

/* Collective, before MPI is asked for the window: every rank maps every rank's segment, so each
 * tries an anonymous mapping of them all (plus 1 MiB for MPI's own; PROT_NONE: it counts against the
 * address space, ulimit -v, but is never charged as committed memory, which MPI's shared mapping is
 * not either) and the ranks agree on the result. A rank whose address space is short (ulimit -v)
 * ends the job naming the size. Asked directly, Open MPI 4.1's shared-memory component fails on
 * that rank but returns success with a broken window (MPI_Win_shared_query then jumped into the
 * heap: exit 139), while the other ranks may wait in the window's creation. */
static void check_room(comm_t *c, size_t ask) {
  enum { MPI_OWN = 1 << 20 };
  uint64_t total = ask;
  comm_allreduce_sum_u64(c, &total, 1, TRAFFIC_OTHER);
  const size_t want = total + MPI_OWN < SIZE_MAX ? (size_t)(total + MPI_OWN) : SIZE_MAX;
  void *p = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  const int mapped = p != MAP_FAILED;
  const int err = errno;
  if (mapped) munmap(p, want);
  double failed = !mapped;
  comm_allreduce_max_double(c, &failed, 1, TRAFFIC_OTHER);
  if (!failed) return;
  if (mapped) {
    comm_barrier(c); /* a rank that could not map them ends the job */
    surge_runtime_error("node-shared memory: another rank could not map it");
  }
  surge_runtime_error("node-shared memory of %zu bytes (all ranks' segments, which every rank maps) does not fit in "
                      "this rank's address space: %s (hint: more memory for the rank (ulimit -v), or [parallel] "
                      "node_shared = false to sum through MPI instead)", want, strerror(err));
}

void node_shm_alloc(comm_t *c, size_t bytes, node_shm_t *s) {
  memset(s, 0, sizeof *s);
  if (c->nodes != 1)
    surge_runtime_error("node_shm_alloc: the group's %d ranks are on %d nodes; node-shared memory needs one", c->size,
                        c->nodes);
  /* MPI aligns a segment to 8 bytes at least: each asks for an alignment's worth more and starts at
   * the first aligned address in it */
  size_t rounded = (bytes + NODE_SHM_ALIGN - 1) / NODE_SHM_ALIGN * NODE_SHM_ALIGN;
  size_t ask = rounded ? rounded + NODE_SHM_ALIGN : 0;
  if (rounded < bytes || ask > (size_t)INT64_MAX) surge_runtime_error("node_shm_alloc: %zu bytes overflow", bytes);
  check_room(c, ask);
  char *raw = NULL;
  comm_check_mpi(MPI_Win_allocate_shared((MPI_Aint)ask, 1, MPI_INFO_NULL, c->mpi, &raw, &s->win),
                 "MPI_Win_allocate_shared",
                 "node_shm_alloc (hint: Open MPI backs node-shared memory with files in /dev/shm, or its "
                 "osc_sm_backing_directory: is there room?)");
  s->size = c->size;
  s->seg = xcalloc((size_t)c->size, sizeof *s->seg);
  s->bytes = xcalloc((size_t)c->size, sizeof *s->bytes);
  for (int r = 0; r < c->size; r++) {
    MPI_Aint size = 0;
    int unit = 0;
    char *base = NULL;
    comm_check_mpi(MPI_Win_shared_query(s->win, r, &size, &unit, &base), "MPI_Win_shared_query", "node_shm_alloc");
    s->bytes[r] = size > NODE_SHM_ALIGN ? (size_t)size - NODE_SHM_ALIGN : 0;
    s->seg[r] = s->bytes[r] ? base + (NODE_SHM_ALIGN - (uintptr_t)base % NODE_SHM_ALIGN) % NODE_SHM_ALIGN : base;
  }
  char *mine = s->seg[c->rank];
  if (rounded) memset(mine, 0, rounded);
  /* one passive-target epoch for the window's life, in which node_shm_barrier's MPI_Win_sync acts */
  comm_check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win), "MPI_Win_lock_all", "node_shm_alloc");
  node_shm_barrier(s, c, TRAFFIC_OTHER, 0);
}

void node_shm_free(node_shm_t *s) {
  if (!s->seg) return;
  comm_check_mpi(MPI_Win_unlock_all(s->win), "MPI_Win_unlock_all", "node_shm_free");
  comm_check_mpi(MPI_Win_free(&s->win), "MPI_Win_free", "node_shm_free");
  free(s->seg);
  free(s->bytes);
  memset(s, 0, sizeof *s);
}

void node_shm_sync(node_shm_t *s) { comm_check_mpi(MPI_Win_sync(s->win), "MPI_Win_sync", "node_shm_sync"); }

void node_shm_barrier(node_shm_t *s, comm_t *c, traffic_t t, uint64_t bytes) {
  comm_check_mpi(MPI_Win_sync(s->win), "MPI_Win_sync", "node_shm_barrier");
  comm_barrier_as(c, t, bytes);
  comm_check_mpi(MPI_Win_sync(s->win), "MPI_Win_sync", "node_shm_barrier");
}
