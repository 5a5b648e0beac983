#include "sync/node_sum.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/error.h"
#include "core/share.h"

enum { LINE_FLOATS = 16 }; /* a 64-byte line */

/* Rank r's slice starts here (whole lines, the last slice takes the rest). */
static size_t slice_start(size_t n, int r, int R) {
  if (r >= R) return n;
  return (size_t)share_start(n / LINE_FLOATS, (uint64_t)r, (uint64_t)R) * LINE_FLOATS;
}

int node_sum_possible(const comm_t *c, const backend_t *be, char *why, size_t why_len) {
  if (c->size < 2 || c->nodes != 1) return 0;
  if (!be->host_memory)
    snprintf(why, why_len, "node-shared memory holds host memory, and the %s backend's slabs are device memory",
             be->name);
  return be->host_memory;
}

/* Bytes of the node's shared slabs: the parameters once, every rank's gradients and scalars, each
 * segment with its alignment slack (node_shm_alloc). */
static double shared_bytes(int R, size_t n, size_t grad_floats) {
  double slack = 2.0 * NODE_SHM_ALIGN;
  return (double)n * sizeof(float) + slack +
         (double)R * ((double)grad_floats * sizeof(float) + NODE_SUM_SLOTS * sizeof(double) + 2 * slack);
}

int node_sum_fits(comm_t *c, size_t n, size_t grad_floats, char *why, size_t why_len) {
  const char *dir = getenv("OMPI_MCA_osc_sm_backing_directory");
  if (!dir || !dir[0]) dir = "/dev/shm";
  double need = shared_bytes(c->size, n, grad_floats), avail = -1;
  struct statvfs st;
  if (statvfs(dir, &st) == 0) avail = (double)st.f_bavail * (double)st.f_frsize;
  /* the least any rank saw, so that all agree */
  double least = avail < 0 ? 1e300 : avail;
  double v[1] = {-least};
  comm_allreduce_max_double(c, v, 1, TRAFFIC_OTHER);
  least = -v[0];
  if (least >= need) return 1;
  snprintf(why, why_len, "%s has %.1f MiB free, the %d ranks' shared slabs need %.1f MiB (hint: enlarge it, e.g. "
           "docker run --shm-size, or point Open MPI's osc_sm_backing_directory elsewhere)", dir, least / 1048576.0,
           c->size, need / 1048576.0);
  return 0;
}

void node_sum_init(node_sum_t *s, comm_t *c, const backend_t *be, size_t n, size_t grad_floats) {
  memset(s, 0, sizeof *s);
  s->c = c;
  s->be = be;
  s->n = n;
  s->lo = slice_start(n, c->rank, c->size);
  s->hi = slice_start(n, c->rank + 1, c->size);
  size_t pbytes = surge_mul_size(n, sizeof(float), "node-shared parameters");
  node_shm_alloc(c, c->rank == 0 ? pbytes : 0, &s->params);
  node_shm_alloc(c, surge_mul_size(grad_floats, sizeof(float), "node-shared gradients"), &s->grads);
  node_shm_alloc(c, NODE_SUM_SLOTS * sizeof(double), &s->scalars);
}

void node_sum_free(node_sum_t *s) {
  if (!s->c) return;
  node_shm_free(&s->scalars);
  node_shm_free(&s->grads);
  node_shm_free(&s->params);
  memset(s, 0, sizeof *s);
}

float *node_sum_params(const node_sum_t *s) { return (float *)(void *)s->params.seg[0]; }
float *node_sum_grads(const node_sum_t *s) { return (float *)(void *)s->grads.seg[s->c->rank]; }

void node_sum_reduce(node_sum_t *s, const double mine[NODE_SUM_SCALARS], double sum[NODE_SUM_SCALARS]) {
  const int R = s->c->size, me = s->c->rank;
  node_shm_barrier(&s->grads, s->c, TRAFFIC_DP, 0); /* every rank's gradients are final */
  float *own = node_sum_grads(s) + s->lo;
  size_t len = s->hi - s->lo;
  for (int r = 0; r < R; r++)
    if (r != me) s->be->axpy(len, 1.0f, (const float *)(void *)s->grads.seg[r] + s->lo, own);
  double *out = (double *)(void *)s->scalars.seg[me];
  memcpy(out, mine, NODE_SUM_SCALARS * sizeof(double));
  /* the bytes read from the others' slabs, counted here, where the exchange completes */
  node_shm_barrier(&s->scalars, s->c, TRAFFIC_DP, (uint64_t)(R - 1) * len * sizeof(float));
  for (int k = 0; k < NODE_SUM_SCALARS; k++) sum[k] = 0;
  for (int r = 0; r < R; r++)
    for (int k = 0; k < NODE_SUM_SCALARS; k++) sum[k] += ((const double *)(void *)s->scalars.seg[r])[k];
}

double node_sum_total(node_sum_t *s, double part) {
  /* its own slot: the others read it after this barrier, and it is written again only in the next
   * step, after node_sum_reduce's first barrier, which every rank reaches after reading it */
  ((double *)(void *)s->scalars.seg[s->c->rank])[NODE_SUM_NORM] = part;
  node_shm_barrier(&s->scalars, s->c, TRAFFIC_DP, 0);
  double total = 0;
  for (int r = 0; r < s->c->size; r++) total += ((const double *)(void *)s->scalars.seg[r])[NODE_SUM_NORM];
  return total;
}

double node_sum_updated(node_sum_t *s, double sumsq) {
  /* the slot is read by the others after this barrier and written again only after the next
   * step's first barrier, which every rank reaches after reading it */
  ((double *)(void *)s->scalars.seg[s->c->rank])[NODE_SUM_UPDATE_SUMSQ] = sumsq;
  /* every rank reads the whole slab next: (R-1)/R of it written by the others */
  size_t others = s->n - (s->hi - s->lo);
  node_shm_sync(&s->scalars);
  node_shm_barrier(&s->params, s->c, TRAFFIC_DP, (uint64_t)others * sizeof(float));
  node_shm_sync(&s->scalars);
  double total = 0;
  for (int r = 0; r < s->c->size; r++) total += ((const double *)(void *)s->scalars.seg[r])[NODE_SUM_UPDATE_SUMSQ];
  return total;
}

void node_sum_set_slices(node_sum_t *s, const size_t *bounds) {
  if (bounds[0] != 0 || bounds[s->c->size] != s->n)
    surge_runtime_error("node_sum_set_slices: the slices cover [%zu, %zu) of %zu floats (a bug)", bounds[0],
                        bounds[s->c->size], s->n);
  s->bounds = bounds;
  s->lo = bounds[s->c->rank];
  s->hi = bounds[s->c->rank + 1];
}

/* Where rank r's slice starts. */
static size_t start_of(const node_sum_t *s, int r) { return s->bounds ? s->bounds[r] : slice_start(s->n, r, s->c->size); }

void node_sum_gather(node_sum_t *s, float *slab) {
  const int R = s->c->size;
  size_t *off = xcalloc((size_t)R, sizeof *off), *cnt = xcalloc((size_t)R, sizeof *cnt);
  for (int r = 0; r < R; r++) {
    off[r] = start_of(s, r);
    cnt[r] = start_of(s, r + 1) - off[r];
  }
  comm_allgatherv_float(s->c, slab, off, cnt, TRAFFIC_OTHER);
  free(off);
  free(cnt);
}
