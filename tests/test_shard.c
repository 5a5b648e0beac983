/* The sharded optimizer's pieces (sync/shard.h, sync/shard_gather.h, the reduce-scatter reducer) on any
 * rank count: shard bounds on row boundaries that tile the slab near-evenly; the gradient sync's
 * buckets reduce-scattered to the shards (every rank's shard the exact sum); with the PowerSGD
 * reducer, every rank's shard bitwise the unsharded PowerSGD sum, step after step; and the all-gather of
 * the parameters, where each node's buckets hold every rank's values as soon as the wait before
 * that node's forward pass returns (nothing else runs in between: a wait that is missing fails). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "core/error.h"
#include "sync/gradsync.h"
#include "sync/shard.h"
#include "sync/shard_gather.h"
#include "tap.h"

static comm_t world;

/* Whether every rank says ok. */
static int all_ok(int ok) {
  double bad = !ok;
  comm_allreduce_sum_double(&world, &bad, 1, TRAFFIC_OTHER);
  return bad == 0;
}

/* A slab of tensors of various row sizes; tensor t is owned by node t + 1. */
static void make_layout(slab_layout_t *L, int scale) {
  slab_layout_init(L);
  int d0[] = {50 * scale, 13}, d1[] = {7}, d2[] = {33 * scale, 4, 3, 3}, d3[] = {5}, d4[] = {10 * scale, 200}, d5[] = {1};
  slab_layout_add(L, "a", 2, d0, 1);
  slab_layout_add(L, "b", 1, d1, 2);
  slab_layout_add(L, "c", 4, d2, 3);
  slab_layout_add(L, "d", 1, d3, 4);
  slab_layout_add(L, "e", 2, d4, 5);
  slab_layout_add(L, "f", 1, d5, 6);
}

static size_t row_of(const slab_tensor_t *t) { return t->n / (size_t)t->d[0]; }

static void check_bounds(const slab_layout_t *L) {
  size_t most_row = 0;
  for (int t = 0; t < L->n; t++) most_row = row_of(&L->t[t]) > most_row ? row_of(&L->t[t]) : most_row;
  int ok = 1, worst_r = 0;
  for (int R = 1; R <= 9; R++) {
    size_t b[10];
    shard_bounds(L, R, b);
    ok &= b[0] == 0 && b[R] == L->total;
    for (int r = 1; r <= R; r++) {
      ok &= b[r] >= b[r - 1];
      double ideal = (double)L->total * r / R;
      ok &= fabs((double)b[r] - ideal) <= (double)most_row; /* each shard within a row of n / R */
      for (int t = 0; t < L->n && r < R; t++) /* on a row boundary of the tensor it falls in */
        if (b[r] > L->t[t].off && b[r] < L->t[t].off + L->t[t].n) ok &= (b[r] - L->t[t].off) % row_of(&L->t[t]) == 0;
    }
    size_t po[9], pc[9], at = 0; /* a range's parts: consecutive, the shards within it */
    size_t off = L->t[1].off, n = L->t[4].off + L->t[4].n - off;
    shard_parts(b, R, off, n, po, pc);
    for (int r = 0; r < R; r++) {
      size_t lo = b[r] > off ? b[r] : off, hi = b[r + 1] < off + n ? b[r + 1] : off + n;
      ok &= po[r] == at && pc[r] == (hi > lo ? hi - lo : 0);
      at += pc[r];
    }
    ok &= at == n;
    if (!ok && !worst_r) worst_r = R;
  }
  if (world.rank == 0)
    tap_ok(ok, "shard_bounds on 1..9 ranks: tile the slab, on row boundaries, each within a row of n/R; shard_parts "
           "consecutive (first failure at R = %d)", worst_r);
}

/* The value rank r puts at float i (exact small integers: any summation order gives the same sum). */
static float value(int r, size_t i) { return (float)((int)((i * 5 + (size_t)r * 11) % 17) - 8); }

static void check_sync_and_gather(const slab_layout_t *L) {
  size_t *b = xcalloc((size_t)world.size + 1, sizeof *b);
  shard_bounds(L, world.size, b);
  size_t lo = b[world.rank], hi = b[world.rank + 1];
  int *group = xcalloc((size_t)L->n, sizeof *group), *ready = xcalloc((size_t)L->n, sizeof *ready);
  for (int t = 0; t < L->n; t++) ready[t] = L->t[t].owner;
  float *grads = xcalloc(L->total, sizeof *grads), *params = xcalloc(L->total, sizeof *params);
  for (size_t i = 0; i < L->total; i++) grads[i] = value(world.rank, i);
  gradsync_t s;
  gradsync_opts_t o = {.bucket_bytes = 4096 * sizeof(float), .overlap = 1, .reducer = "exact", .side = 3,
                       .shard = 1};
  gradsync_init(&s, L, group, ready, &world, &world, grads, &o);
  gradsync_begin(&s);
  for (int node = L->n; node >= 1; node--) gradsync_node_done(&s, node);
  gradsync_finish(&s);
  int ok = s.side == 0 && s.nbuckets > 2 && s.shard->nranges <= 1 && s.shard->floats == hi - lo;
  for (int r = 0; r <= world.size; r++) ok &= s.shard->bounds[0][r] == b[r]; /* one group: the slab's bounds */
  for (size_t i = lo; i < hi; i++) {
    double sum = 0;
    for (int r = 0; r < world.size; r++) sum += value(r, i);
    ok &= (double)grads[i] == sum;
  }
  ok = all_ok(ok);
  if (world.rank == 0)
    tap_ok(ok, "%d buckets reduce-scattered during the backward pass: every rank's shard holds the exact sum, no side "
           "slots ride", s.nbuckets);

  /* the all-gather: each rank's shard holds its values, the rest NaN until gathered */
  for (size_t i = 0; i < L->total; i++) params[i] = NAN;
  for (int r = 0; r < world.size; r++)
    if (r == world.rank)
      for (size_t i = lo; i < hi; i++) params[i] = value(r, i) * 3;
  shard_gather_t g;
  shard_gather_init(&g, &s, L, params);
  shard_gather_start(&g);
  int before_ok = 1;
  for (int node = 1; node <= L->n; node++) {
    shard_gather_before(&g, node);
    for (int t = 0; t < L->n; t++) {
      if (L->t[t].owner > node) continue;
      for (size_t i = L->t[t].off; i < L->t[t].off + L->t[t].n; i++) {
        int r = 0;
        while (i >= b[r + 1]) r++;
        before_ok &= params[i] == value(r, i) * 3;
      }
    }
  }
  shard_gather_finish(&g);
  int end_ok = 1;
  for (size_t i = 0; i < L->total; i++) {
    int r = 0;
    while (i >= b[r + 1]) r++;
    end_ok &= params[i] == value(r, i) * 3;
  }
  before_ok = all_ok(before_ok);
  end_ok = all_ok(end_ok);
  if (world.rank == 0) {
    tap_ok(before_ok, "all-gather in %d buckets: before each node's forward pass, every tensor it reads holds every "
           "rank's shard", g.nbuckets);
    tap_ok(end_ok, "all-gather: after shard_gather_finish the whole slab is every rank's values");
  }
  shard_gather_free(&g);
  gradsync_free(&s);
  free(grads);
  free(params);
  free(group);
  free(ready);
  free(b);
}

/* One PowerSGD gradient sync (rank 2, its error feedback and warm factors carried over 3 steps), sharded
 * or not, over the same buckets: the gradients of step k are value(rank, i) + k. */
static float *psgd_steps(const slab_layout_t *L, int shard, double *raw_bytes, int *regions) {
  int *group = xcalloc((size_t)L->n, sizeof *group), *ready = xcalloc((size_t)L->n, sizeof *ready);
  for (int t = 0; t < L->n; t++) ready[t] = L->t[t].owner;
  float *grads = backend_cpu.alloc(L->total);
  gradsync_t s;
  gradsync_opts_t o = {.bucket_bytes = 2048 * sizeof(float), .overlap = 1, .reducer = "powersgd", .be = &backend_cpu,
                       .job = &world, .psgd = {.rank = 2, .seed = 91}, .shard = shard};
  gradsync_init(&s, L, group, ready, &world, &world, grads, &o);
  *raw_bytes = 0;
  for (int k = 0; k < 3; k++) {
    for (size_t i = 0; i < L->total; i++) grads[i] = value(world.rank, i) + (float)k;
    gradsync_begin(&s);
    for (int node = L->n; node >= 1; node--) gradsync_node_done(&s, node);
    gradsync_finish(&s);
    *raw_bytes += s.reducer->raw_bytes;
  }
  state_region_t r[4];
  *regions = s.reducer->ops->state ? s.reducer->ops->state(s.reducer, r, 4) : 0;
  float *out = xcalloc(L->total, sizeof *out);
  memcpy(out, grads, L->total * sizeof *out);
  gradsync_free(&s);
  backend_cpu.free(grads);
  free(group);
  free(ready);
  return out;
}

static void check_compressed(const slab_layout_t *L) {
  size_t *b = xcalloc((size_t)world.size + 1, sizeof *b);
  shard_bounds(L, world.size, b);
  double raw_whole, raw_shard;
  int regions_whole, regions_shard;
  float *whole = psgd_steps(L, 0, &raw_whole, &regions_whole), *mine = psgd_steps(L, 1, &raw_shard, &regions_shard);
  int ok = regions_shard == 1 && regions_whole == 1 && raw_shard == raw_whole && (world.size < 2 || raw_shard > 0);
  for (size_t i = b[world.rank]; i < b[world.rank + 1]; i++) ok &= memcmp(&whole[i], &mine[i], sizeof *mine) == 0;
  ok = all_ok(ok);
  if (world.rank == 0)
    tap_ok(ok, "PowerSGD sharded: after 3 steps every rank's shard is bitwise the unsharded PowerSGD sum, the same "
           "bytes compressed (%.0f a rank), one checkpoint region", raw_shard);
  free(whole);
  free(mine);
  free(b);
}

/* A plan over two groups (sync/shard.h), as a burst plan or the 3d layout has them: tensors a, c, e
 * summed over every rank, b, d, f over the even ranks (none of them on an odd rank); c must not be
 * cut. The ranks' shards tile every tensor exactly once, c lies whole in one rank's shard (on 3 and 4
 * ranks a bound would cut it otherwise), and each rank's ranges (its floats counted) cut every tensor
 * on row boundaries. */
static void check_plan(const slab_layout_t *L) {
  comm_t groups[2];
  groups[0] = world;
  comm_split(&world, world.rank % 2 == 0 ? 0 : -1, world.rank, &groups[1]);
  int group[6] = {0, 1, 0, 1, 0, 1};
  unsigned char atomic[6] = {0, 0, 1, 0, 0, 0};
  shard_plan_t p;
  shard_plan_init(&p, L, group, groups, 2, atomic);
  float *count = xcalloc(L->total, sizeof *count);
  size_t floats = 0;
  int aligned = 1, c_whole = 1;
  const slab_tensor_t *c = &L->t[2];
  for (int i = 0; i < p.nranges; i++) {
    size_t lo = p.ranges[2 * i], hi = p.ranges[2 * i + 1];
    for (size_t x = lo; x < hi; x++) count[x] += 1.0f;
    floats += hi - lo;
    for (int t = 0; t < L->n; t++) {
      size_t row = row_of(&L->t[t]), a = L->t[t].off, b = a + L->t[t].n;
      if (lo > a && lo < b) aligned &= (lo - a) % row == 0;
      if (hi > a && hi < b) aligned &= (hi - a) % row == 0;
    }
    size_t in_lo = lo > c->off ? lo : c->off, in_hi = hi < c->off + c->n ? hi : c->off + c->n;
    if (in_hi > in_lo) c_whole &= in_lo == c->off && in_hi == c->off + c->n;
  }
  comm_allreduce_sum(&world, count, L->total, TRAFFIC_OTHER);
  int tiled = 1;
  for (size_t x = 0; x < L->total; x++) tiled &= count[x] == 1.0f;
  int ok = all_ok(aligned && c_whole && floats == p.floats) && tiled;
  if (world.rank == 0)
    tap_ok(ok, "a plan over two groups (all ranks, the even ones) with an uncut tensor: the shards tile every tensor "
           "once, on row boundaries, the uncut one whole on one rank (rank 0: %d ranges, %zu floats)", p.nranges,
           p.floats);
  shard_plan_free(&p);
  free(count);
  comm_free(&groups[1]);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  comm_world(&world);
  slab_layout_t L;
  make_layout(&L, 1);
  check_bounds(&L);
  check_plan(&L);
  slab_layout_free(&L);
  make_layout(&L, 40); /* large enough that the all-gathers take several rounds */
  check_sync_and_gather(&L);
  slab_layout_free(&L);
  make_layout(&L, 1);
  check_compressed(&L);
  slab_layout_free(&L);
  int rank = world.rank;
  comm_free(&world);
  MPI_Finalize();
  return rank == 0 ? tap_done() : 0;
}
