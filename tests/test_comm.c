/* The comm layer (src/comm/comm.h) on however many ranks mpiexec starts; tests/test_comm.sh runs it
 * on 1, 2, 3, 4 and 8. Every rank takes part; results travel to rank 0 over plain MPI on
 * MPI_COMM_WORLD (not through the layer under test) and rank 0 alone prints TAP.
 *
 *   test_comm                       all checks; prints "# digest <hex>" of an order-sensitive sum
 *   test_comm --fail MODE           provoke one error (bad-root, zero-bucket, empty-group); the
 *                                   shell test expects exit 1 and a one-line message */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/node_shm.h"
#include "core/error.h"
#include "tap_mpi.h"

static int world_rank, world_size;

/* MPI profiling interface: count the MPI_Allreduce calls the comm layer makes, and their sizes, so
 * the bucketing itself is observable. */
static int allreduce_calls, allreduce_max_count;
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  allreduce_calls++;
  if (count > allreduce_max_count) allreduce_max_count = count;
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* Collective: every rank's `bytes` bytes, concatenated in rank order on rank 0 (NULL elsewhere). */
static void *gather_to_root(const void *x, size_t bytes) {
  char *all = world_rank == 0 ? xmalloc(surge_mul_size(bytes, (size_t)world_size, "gather")) : NULL;
  MPI_Gather(x, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  return all;
}

/* Small integers: every float sum of them is exact, in any order. */
static float exact_input(int rank, size_t i) { return (float)((int)((i * 7 + (size_t)rank * 13) % 23) - 11); }

/* Values of mixed magnitude whose float sum depends on the order of the additions. */
static float rounding_input(int rank, size_t i) {
  uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)rank * 0xBF58476D1CE4E5B9ull + 1;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  double unit = (double)(h >> 11) / 9007199254740992.0;  // [0, 1)
  return (float)((unit - 0.5) * ldexp(1.0, (int)(h % 13)));
}

static int bucket_count(size_t n, size_t bucket_bytes) {
  size_t per = bucket_bytes / sizeof(float);
  return (int)((n + per - 1) / per);
}

/* Allreduce of n exact inputs in buckets of bucket_bytes: the sum of the gathered inputs in double,
 * identical bits on every rank, and the number and size of the MPI_Allreduce calls. */
static void check_allreduce_exact(comm_t *c, size_t n, size_t bucket_bytes, const char *what) {
  c->bucket_bytes = bucket_bytes;
  float *x = xmalloc(n * sizeof(float));  // x is (n,)
  for (size_t i = 0; i < n; i++) x[i] = exact_input(c->rank, i);
  float *inputs = gather_to_root(x, n * sizeof(float));  // inputs is (size, n) on rank 0
  allreduce_calls = allreduce_max_count = 0;
  comm_allreduce_sum(c, x, n, TRAFFIC_DP);
  int calls = allreduce_calls, max_count = allreduce_max_count;
  float *results = gather_to_root(x, n * sizeof(float));  // results is (size, n) on rank 0
  int exact = 1, identical = 1;
  size_t wrong = 0;
  if (world_rank == 0) {
    for (size_t i = 0; i < n; i++) {
      double sum = 0;
      for (int r = 0; r < world_size; r++) sum += inputs[(size_t)r * n + i];
      if ((double)results[i] != sum) wrong++;
    }
    exact = wrong == 0;
    for (int r = 1; r < world_size; r++) identical &= memcmp(results + (size_t)r * n, results, n * sizeof(float)) == 0;
  }
  tap_all(exact, "allreduce sum of %zu floats, %s: equals the double sum of the gathered inputs (%zu wrong)", n, what,
          wrong);
  tap_all(identical, "allreduce sum of %zu floats, %s: bitwise identical on every rank", n, what);
  int want_calls = bucket_count(n, bucket_bytes);
  int want_max = n == 0 ? 0 : (int)(n < bucket_bytes / sizeof(float) ? n : bucket_bytes / sizeof(float));
  tap_all(calls == want_calls && max_count == want_max,
          "allreduce sum of %zu floats, %s: %d MPI_Allreduce calls of at most %d floats (want %d of at most %d)", n,
          what, calls, max_count, want_calls, want_max);
  c->bucket_bytes = 4 << 20;
  free(x);
  free(inputs);
  free(results);
}

/* Rank 0: whether every rank's results (size, n) are the same bits, and within size*eps*sum|x| of
 * the double sum of the inputs (size, n). */
static void compare_sums(const float *inputs, const float *results, size_t n, int *identical, int *close) {
  for (int r = 1; r < world_size; r++) *identical &= memcmp(results + (size_t)r * n, results, n * sizeof(float)) == 0;
  for (size_t i = 0; i < n; i++) {
    double sum = 0, magnitude = 0;
    for (int r = 0; r < world_size; r++) {
      sum += inputs[(size_t)r * n + i];
      magnitude += fabs(inputs[(size_t)r * n + i]);
    }
    if (fabs(results[i] - sum) > world_size * 0x1p-23 * magnitude) *close = 0;
  }
}

/* Order-sensitive sums: identical on every rank, repeatable within the run, close to the double
 * sum; the digest printed lets the shell test compare two runs. */
static void check_allreduce_rounding(comm_t *c) {
  const size_t n = 10007;
  c->bucket_bytes = 4096;
  float *x = xmalloc(n * sizeof(float)), *again = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = again[i] = rounding_input(c->rank, i);
  float *inputs = gather_to_root(x, n * sizeof(float));
  comm_allreduce_sum(c, x, n, TRAFFIC_DP);
  comm_allreduce_sum(c, again, n, TRAFFIC_DP);
  int repeatable = memcmp(x, again, n * sizeof(float)) == 0;
  float *results = gather_to_root(x, n * sizeof(float));
  int identical = 1, close = 1;
  uint64_t digest = 1469598103934665603ull;  // FNV-1a over the result bytes
  if (world_rank == 0) {
    compare_sums(inputs, results, n, &identical, &close);
    const unsigned char *bytes = (const unsigned char *)results;
    for (size_t i = 0; i < n * sizeof(float); i++) digest = (digest ^ bytes[i]) * 1099511628211ull;
    tap_diag("digest %016llx", (unsigned long long)digest);
  }
  tap_all(identical, "order-sensitive allreduce of %zu floats in 4 KiB buckets: bitwise identical on every rank", n);
  tap_all(repeatable, "order-sensitive allreduce repeated: the same bits both times");
  tap_all(close, "order-sensitive allreduce: within size*eps*sum|x| of the double sum");
  c->bucket_bytes = 4 << 20;
  free(x);
  free(again);
  free(inputs);
  free(results);
}

/* Non-blocking sums: two in flight at once, progressed by tests until both complete; identical on
 * every rank (replicas stay equal), close to the double sum, metered in their category and traced. */
static void check_iallreduce(comm_t *c) {
  const size_t n = 10007, m = 300;
  float *x = xmalloc(n * sizeof(float)), *y = xmalloc(m * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = rounding_input(c->rank, i);
  for (size_t i = 0; i < m; i++) y[i] = exact_input(c->rank, i);
  float *inputs = gather_to_root(x, n * sizeof(float));
  comm_meter_t before = c->meter;
  comm_trace_begin(4);
  comm_op_t a, b;
  comm_iallreduce_sum(c, x, n, TRAFFIC_DP, &a);
  comm_iallreduce_sum(c, y, m, TRAFFIC_ACT, &b);
  int polls = 0;
  while (!(comm_op_test(&a) & comm_op_test(&b))) polls++;
  comm_op_wait(&a); /* a completed operation needs no more waiting */
  const comm_event_t *ev;
  int nev = comm_trace_events(&ev);
  int traced = nev == 2 && ev[0].t == TRAFFIC_DP && ev[0].bytes == n * sizeof(float) && ev[1].t == TRAFFIC_ACT &&
               ev[0].end >= ev[0].start && ev[1].end >= ev[1].start && ev[0].start <= ev[1].start;
  comm_trace_end();
  float *results = gather_to_root(x, n * sizeof(float));
  int identical = 1, close = 1, exact = 1;
  for (size_t i = 0; i < m; i++) {
    double sum = 0;
    for (int r = 0; r < world_size; r++) sum += exact_input(r, i);
    exact &= (double)y[i] == sum;
  }
  if (world_rank == 0) compare_sums(inputs, results, n, &identical, &close);
  tap_all(identical && close && exact, "iallreduce: two sums in flight (%d polls): bitwise identical on every rank, "
          "close to the double sum, exact on integers", polls);
  tap_all(c->meter.bytes[TRAFFIC_DP] - before.bytes[TRAFFIC_DP] == n * sizeof(float) &&
            c->meter.calls[TRAFFIC_DP] - before.calls[TRAFFIC_DP] == 1 &&
            c->meter.bytes[TRAFFIC_ACT] - before.bytes[TRAFFIC_ACT] == m * sizeof(float),
          "iallreduce: bytes and one call counted at the start, in each operation's category");
  tap_all(traced, "iallreduce: the trace holds both operations in start order with their categories, bytes and an "
          "end after the start (%d events)", nev);
  uint64_t u[2] = {0xfffffffffffffff0ull + (uint64_t)c->rank, (uint64_t)c->rank};
  comm_allreduce_sum_u64(c, u, 2, TRAFFIC_OTHER);
  uint64_t want0 = 0, want1 = 0;
  for (int r = 0; r < world_size; r++) {
    want0 += 0xfffffffffffffff0ull + (uint64_t)r;
    want1 += (uint64_t)r;
  }
  tap_all(u[0] == want0 && u[1] == want1, "allreduce of unsigned 64-bit integers wraps modulo 2^64 exactly");
  free(x);
  free(y);
  free(inputs);
  free(results);
}

static void check_doubles(comm_t *c) {
  double s = world_size, r = c->rank;
  double sum[3] = {r + 0.5, -r, c->rank == 0 ? 1e300 : 0};
  double max[3] = {r, -r, c->rank == c->size - 1 ? 7.25 : -1};
  comm_allreduce_sum_double(c, sum, 3, TRAFFIC_OTHER);
  comm_allreduce_max_double(c, max, 3, TRAFFIC_OTHER);
  double *sums = gather_to_root(sum, sizeof sum), *maxes = gather_to_root(max, sizeof max);
  int sum_ok = 1, max_ok = 1;
  if (world_rank == 0)
    for (int q = 0; q < world_size; q++) {
      const double *a = sums + 3 * q, *b = maxes + 3 * q;
      sum_ok &= a[0] == s * (s - 1) / 2 + 0.5 * s && a[1] == -s * (s - 1) / 2 && a[2] == 1e300;
      max_ok &= b[0] == s - 1 && b[1] == 0 && b[2] == 7.25;
    }
  tap_all(sum_ok, "allreduce sum of 3 doubles: sum of ranks + size/2, minus that, 1e300 from rank 0, on every rank");
  tap_all(max_ok, "allreduce max of 3 doubles: size-1, 0, 7.25 from the last rank, on every rank");
  free(sums);
  free(maxes);
}

/* Element-wise max and min of floats (the tensor-parallel cross-entropy's row statistics). */
static void check_float_max_min(comm_t *c) {
  float r = (float)c->rank, s = (float)world_size;
  float mx[3] = {r, -r, c->rank == c->size - 1 ? 3.5f : -1.0f}, mn[3] = {r, -r, c->rank == 0 ? -2.5f : 9.0f};
  comm_allreduce_max(c, mx, 3, TRAFFIC_TP);
  comm_allreduce_min(c, mn, 3, TRAFFIC_TP);
  float *maxes = gather_to_root(mx, sizeof mx), *mins = gather_to_root(mn, sizeof mn);
  int ok = 1;
  for (int q = 0; world_rank == 0 && q < world_size; q++) {
    const float *a = maxes + 3 * q, *b = mins + 3 * q;
    ok &= a[0] == s - 1 && a[1] == 0 && a[2] == 3.5f && b[0] == 0 && b[1] == 1 - s && b[2] == -2.5f;
  }
  tap_all(ok, "allreduce max and min of 3 floats, on every rank");
  free(maxes);
  free(mins);
}

/* Ranks on one machine share CLOCK_MONOTONIC: the measured offset to rank 0 is (about) 0. */
static void check_clock_offset(comm_t *c) {
  double off = comm_clock_offset(c, 5), worst = fabs(off);
  comm_allreduce_max_double(c, &worst, 1, TRAFFIC_OTHER);
  tap_all(worst < 0.05 && (c->rank != 0 || off == 0),
          "clock offset to rank 0 on one machine: at most %.2g s over the ranks (< 0.05), 0 on rank 0", worst);
}

static void check_bcast(comm_t *c) {
  enum { N = 1001 };
  unsigned char buf[N];
  int root = c->size - 1;
  for (int i = 0; i < N; i++) buf[i] = c->rank == root ? (unsigned char)(i * 31 + 7) : 0xEE;
  comm_bcast(c, buf, N, root, TRAFFIC_OTHER);
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += buf[i] != (unsigned char)(i * 31 + 7);
  int *wrongs = gather_to_root(&wrong, sizeof wrong), total = 0;
  for (int q = 0; world_rank == 0 && q < world_size; q++) total += wrongs[q];
  tap_all(total == 0, "bcast of %d bytes from root %d (the last rank): %d wrong bytes over all ranks", N, root, total);
  comm_bcast(c, buf, 0, 0, TRAFFIC_OTHER);
  tap_all(1, "bcast of 0 bytes returns on every rank");
  free(wrongs);
}

static void check_gather(comm_t *c) {
  for (int pass = 0; pass < 2; pass++) {
    int root = pass == 0 ? 0 : c->size - 1;
    double in[3], *out = c->rank == root ? xmalloc(sizeof in * (size_t)c->size) : NULL;
    for (int j = 0; j < 3; j++) in[j] = c->rank * 10 + j + 0.25;
    comm_gather_double(c, in, 3, out, root, TRAFFIC_OTHER);
    int ok = 1;
    for (int q = 0; out && q < c->size; q++)
      for (int j = 0; j < 3; j++) ok &= out[3 * q + j] == q * 10 + j + 0.25;
    tap_all(ok, "gather of 3 doubles to root %d: every rank's values in rank order", root);
    free(out);
  }
  // bytes of uneven sizes (rank r gives 3r + 1, rank 1 none), one after another on the last rank
  const int root = c->size - 1;
  size_t mine = c->rank == 1 ? 0 : 3 * (size_t)c->rank + 1, total = 0;
  size_t *n = c->rank == root ? xcalloc((size_t)c->size, sizeof *n) : NULL;
  for (int q = 0; q < c->size; q++) {
    size_t nq = q == 1 ? 0 : 3 * (size_t)q + 1;
    total += nq;
    if (n) n[q] = nq;
  }
  unsigned char in[64], *out = n ? xcalloc(total + 1, 1) : NULL;
  for (size_t i = 0; i < mine; i++) in[i] = (unsigned char)(c->rank * 16 + i);
  uint64_t before = c->meter.bytes[TRAFFIC_OTHER];
  comm_gatherv_bytes(c, in, mine, out, n, root, TRAFFIC_OTHER);
  int ok = c->meter.bytes[TRAFFIC_OTHER] - before == mine;
  for (int q = 0, at = 0; out && q < c->size; q++)
    for (size_t i = 0; i < n[q]; i++) ok &= out[at++] == (unsigned char)(q * 16 + i);
  tap_all(ok, "gatherv of 3r + 1 bytes from rank r (rank 1 none) to rank %d: in rank order, each rank's part metered",
          root);
  free(n);
  free(out);
}

/* Each rank sends n floats to its right neighbour and n to its left at once, tags unique per
 * sender and direction, then checks both messages it received. */
static void check_ring(comm_t *c) {
  enum { N = 6 };
  int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
  float to_right[N], to_left[N], from_left[N], from_right[N];
  for (int i = 0; i < N; i++) {
    to_right[i] = c->rank * 100 + i + 0.5f;
    to_left[i] = -(float)(c->rank * 100 + i);
  }
  comm_request_t req[4];
  comm_irecv(c, from_left, N, left, 1000 + left, TRAFFIC_ACT, &req[0]);
  comm_irecv(c, from_right, N, right, 2000 + right, TRAFFIC_ACT_GRAD, &req[1]);
  comm_isend(c, to_right, N, right, 1000 + c->rank, TRAFFIC_ACT, &req[2]);
  comm_isend(c, to_left, N, left, 2000 + c->rank, TRAFFIC_ACT_GRAD, &req[3]);
  comm_waitall(c, req, 4, TRAFFIC_ACT);
  int ok = 1;
  for (int i = 0; i < N; i++)
    ok &= from_left[i] == left * 100 + i + 0.5f && from_right[i] == -(float)(right * 100 + i);
  tap_all(ok, "isend/irecv ring: %d floats from each neighbour, both directions in flight at once", N);
}

static void check_split_parity(comm_t *world) {
  comm_t half, reversed;
  comm_meter_t world_before = world->meter;
  comm_split(world, world->rank % 2, world->rank, &half);
  comm_split(world, 0, -world->rank, &reversed);
  double ranks_sum = world->rank;
  comm_allreduce_sum_double(&half, &ranks_sum, 1, TRAFFIC_OTHER);
  int mine[4] = {half.rank, half.size, (int)ranks_sum, reversed.rank};
  int *all = gather_to_root(mine, sizeof mine);
  int layout_ok = 1, sum_ok = 1, order_ok = 1;
  for (int r = 0; world_rank == 0 && r < world_size; r++) {
    const int *m = all + 4 * r;
    int parity_size = r % 2 ? world_size / 2 : (world_size + 1) / 2, parity_sum = 0;
    for (int q = r % 2; q < world_size; q += 2) parity_sum += q;
    layout_ok &= m[0] == r / 2 && m[1] == parity_size;
    sum_ok &= m[2] == parity_sum;
    order_ok &= m[3] == world_size - 1 - r;
  }
  tap_all(layout_ok, "split even/odd: child rank = rank/2, child size = ranks of that parity");
  tap_all(sum_ok, "split even/odd: allreduce in the child sums only the ranks of its parity");
  tap_all(order_ok, "split with key = -rank: child ranks in reverse order");
  tap_all(half.mpi != world->mpi && half.bucket_bytes == 4 << 20 && half.meter.calls[TRAFFIC_OTHER] == 1 &&
            half.meter.bytes[TRAFFIC_OTHER] == 8 && half.root_meter == NULL &&
            memcmp(&world->meter, &world_before, sizeof world_before) == 0,
          "split child: its own communicator, default 4 MiB buckets, its own meter (the parent's unchanged)");
  half.root_meter = &world->meter;
  comm_allreduce_sum_double(&half, &ranks_sum, 1, TRAFFIC_DP);
  tap_all(half.meter.bytes[TRAFFIC_DP] == 8 && world->meter.bytes[TRAFFIC_DP] == world_before.bytes[TRAFFIC_DP] + 8 &&
            world->meter.calls[TRAFFIC_DP] == world_before.calls[TRAFFIC_DP] + 1,
          "split child with root_meter: its calls are counted in its own meter and the root meter");
  comm_free(&half);
  comm_free(&reversed);
  tap_all(half.mpi == MPI_COMM_NULL && half.size == 0, "comm_free: the communicator is null, size 0");
  free(all);
}

/* Ranks 1, 4, 7, ... are left out (color -1); the others split by parity. */
static void check_split_excluded(comm_t *world) {
  int excluded = world->rank % 3 == 1, color = excluded ? -1 : world->rank % 2;
  comm_t child, grandchild;
  comm_split(world, color, world->rank, &child);
  comm_split(&child, 0, 0, &grandchild);  // collective over child only; empty stays empty
  double members = 1;
  if (!excluded) comm_allreduce_sum_double(&child, &members, 1, TRAFFIC_OTHER);
  int mine[5] = {child.mpi == MPI_COMM_NULL, child.size, child.rank, (int)members, grandchild.size};
  int *all = gather_to_root(mine, sizeof mine);
  int empty_ok = 1, member_ok = 1;
  for (int r = 0; world_rank == 0 && r < world_size; r++) {
    const int *m = all + 5 * r;
    if (r % 3 == 1) {
      empty_ok &= m[0] == 1 && m[1] == 0 && m[2] == -1 && m[4] == 0;
      continue;
    }
    int size = 0, rank = 0;  // of r in its child: members of its color, and those before it
    for (int q = 0; q < world_size; q++) {
      if (q % 3 == 1 || q % 2 != r % 2) continue;
      size++;
      if (q < r) rank++;
    }
    member_ok &= m[0] == 0 && m[1] == size && m[2] == rank && m[3] == size && m[4] == size;
  }
  tap_all(empty_ok, "split with color -1: excluded ranks get a null communicator, size 0 (and so does a split of it)");
  tap_all(member_ok, "split with some ranks excluded: members' sizes, ranks and allreduce count only members");
  comm_free(&child);
  comm_free(&grandchild);
}

/* A known sequence of calls on a fresh communicator: bytes and calls per category exactly. */
static void check_meters(void) {
  comm_t m;
  comm_world(&m);
  comm_meter_t zero;
  memset(&zero, 0, sizeof zero);
  tap_all(memcmp(&m.meter, &zero, sizeof zero) == 0, "a new communicator's meter is zero");
  float f[7] = {0};
  double d[3] = {0}, g[3] = {0};
  unsigned char b[100] = {0};
  comm_allreduce_sum(&m, f, 7, TRAFFIC_DP);  // dp: 28 bytes
  comm_allreduce_sum(&m, f, 0, TRAFFIC_DP);  // dp: 0 bytes, still a call
  m.bucket_bytes = 4;
  comm_allreduce_sum(&m, f, 3, TRAFFIC_DP);  // dp: 12 bytes in 3 buckets, one call
  comm_allreduce_sum_double(&m, d, 3, TRAFFIC_ACT);       // activation: 24
  comm_allreduce_max_double(&m, d, 2, TRAFFIC_ACT);       // activation: 16
  comm_bcast(&m, b, sizeof b, m.size - 1, TRAFFIC_EMBED);  // embedding: 100 on every rank
  double *gathered = m.rank == 0 ? xmalloc(sizeof g * (size_t)m.size) : NULL;
  comm_gather_double(&m, g, 3, gathered, 0, TRAFFIC_OTHER);  // other: 24 on every rank
  comm_barrier(&m);                                          // other: 0 bytes
  comm_allreduce_max(&m, f, 3, TRAFFIC_TP);                  // tp: 12
  comm_allreduce_min(&m, f, 2, TRAFFIC_TP);                  // tp: 8
  size_t n_self = (size_t)m.rank + 1;                        // activation_grad: 4*(rank+1) sent
  float *self_out = xcalloc(n_self, sizeof(float)), *self_in = xmalloc(n_self * sizeof(float));
  comm_request_t req[2];
  comm_isend(&m, self_out, n_self, m.rank, 7, TRAFFIC_ACT_GRAD, &req[0]);
  comm_irecv(&m, self_in, n_self, m.rank, 7, TRAFFIC_ACT_GRAD, &req[1]);
  comm_waitall(&m, req, 2, TRAFFIC_ACT_GRAD);
  free(gathered);
  free(self_out);
  free(self_in);

  const uint64_t want_bytes[TRAFFIC_COUNT] = {[TRAFFIC_DP] = 40, [TRAFFIC_ACT] = 40, [TRAFFIC_ACT_GRAD] = 4 * n_self,
                                             [TRAFFIC_EMBED] = 100, [TRAFFIC_TP] = 20, [TRAFFIC_OTHER] = 24};
  const uint64_t want_calls[TRAFFIC_COUNT] = {[TRAFFIC_DP] = 3, [TRAFFIC_ACT] = 2, [TRAFFIC_ACT_GRAD] = 3,
                                             [TRAFFIC_EMBED] = 1, [TRAFFIC_TP] = 2, [TRAFFIC_OTHER] = 2};
  int bytes_ok = 1, calls_ok = 1, seconds_ok = 1;
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    bytes_ok &= m.meter.bytes[t] == want_bytes[t];
    calls_ok &= m.meter.calls[t] == want_calls[t];
    seconds_ok &= m.meter.seconds[t] >= 0 && m.meter.seconds[t] < 60;
  }
  tap_all(bytes_ok, "meter bytes: dp 40, activation 40, activation_grad 4*(rank+1), embedding 100, tp 20, other 24");
  tap_all(calls_ok, "meter calls: dp 3, activation 2, activation_grad 3, embedding 1, tp 2, other 2");
  tap_all(seconds_ok, "meter seconds: each category in [0, 60)");

  comm_meter_t before = m.meter, total, aliased = m.meter;
  comm_meter_total(&m, &m.meter, &total);
  comm_meter_total(&m, &aliased, &aliased);
  tap_all(memcmp(&before, &m.meter, sizeof before) == 0, "comm_meter_total does not meter itself");
  tap_all(memcmp(&total, &aliased, sizeof total) == 0, "comm_meter_total with the output aliasing the input");
  double *seconds = gather_to_root(m.meter.seconds, sizeof m.meter.seconds);
  comm_meter_t *totals = gather_to_root(&total, sizeof total);
  uint64_t s = (uint64_t)world_size;
  int total_ok = 1, seconds_total_ok = 1, same_everywhere = 1;
  for (int t = 0; world_rank == 0 && t < TRAFFIC_COUNT; t++) {
    uint64_t bytes = t == TRAFFIC_ACT_GRAD ? 4 * s * (s + 1) / 2 : s * want_bytes[t];
    total_ok &= total.bytes[t] == bytes && total.calls[t] == s * want_calls[t];
    double sum = 0;
    for (int r = 0; r < world_size; r++) sum += seconds[r * TRAFFIC_COUNT + t];
    seconds_total_ok &= fabs(total.seconds[t] - sum) <= 1e-12 * (1 + sum);
    for (int r = 1; r < world_size; r++) same_everywhere &= memcmp(&totals[r], &totals[0], sizeof total) == 0;
  }
  tap_all(total_ok, "comm_meter_total: bytes (activation_grad 2*size*(size+1)) and calls summed over ranks");
  tap_all(seconds_total_ok, "comm_meter_total: seconds equal the sum of every rank's seconds");
  tap_all(same_everywhere, "comm_meter_total: the same totals on every rank");
  free(seconds);
  free(totals);

  comm_meter_reset(&m);
  tap_all(memcmp(&m.meter, &zero, sizeof zero) == 0, "comm_meter_reset zeroes bytes, seconds and calls");
  comm_free(&m);
}

/* Node-shared memory (comm/node_shm.h): segments of odd sizes (rank r's 4r + 3 bytes), each 64-byte
 * aligned; what each rank writes into its own is
 * what every rank reads after the barrier; and comm_allgatherv_float gathers uneven parts in place.
 * Every rank of this test is on one node (checked above). */
static void check_node_shm(comm_t *w) {
  node_shm_t s;
  const size_t mine = 4 * (size_t)w->rank + 3;
  node_shm_alloc(w, mine, &s);
  int aligned = 1, sizes = 1;
  for (int r = 0; r < w->size; r++) {
    aligned &= (uintptr_t)s.seg[r] % NODE_SHM_ALIGN == 0;
    sizes &= s.bytes[r] >= 4 * (size_t)r + 3;
  }
  tap_all(aligned && sizes,
          "node_shm_alloc: every rank's segment (4r + 3 bytes asked) 64-byte aligned, at least as large");
  for (size_t i = 0; i < mine; i++) s.seg[w->rank][i] = (char)(w->rank * 7 + (int)i);
  node_shm_barrier(&s, w, TRAFFIC_OTHER, 0);
  int seen = 1;
  for (int r = 0; r < w->size; r++)
    for (size_t i = 0; i < 4 * (size_t)r + 3; i++) seen &= s.seg[r][i] == (char)(r * 7 + (int)i);
  tap_all(seen, "node_shm_barrier: every rank reads what each wrote into its own segment");
  node_shm_free(&s);

  /* rank r's part: r + 1 floats after the parts of the lower ranks */
  size_t *off = xcalloc((size_t)w->size, sizeof *off), *n = xcalloc((size_t)w->size, sizeof *n), total = 0;
  for (int r = 0; r < w->size; r++) off[r] = total, n[r] = (size_t)r + 1, total += n[r];
  float *buf = xcalloc(total, sizeof *buf);
  for (size_t i = 0; i < n[w->rank]; i++) buf[off[w->rank] + i] = (float)(100 * w->rank + (int)i);
  comm_allgatherv_float(w, buf, off, n, TRAFFIC_OTHER);
  int whole = 1;
  for (int r = 0; r < w->size; r++)
    for (size_t i = 0; i < n[r]; i++) whole &= buf[off[r] + i] == (float)(100 * r + (int)i);
  tap_all(whole, "comm_allgatherv_float: every rank's uneven part (r + 1 floats) on every rank, in place");
  free(buf), free(off), free(n);
}

/* One error the comm layer must report as "surge: error: ..." with exit 1. */
static void provoke_failure(const char *mode) {
  comm_t c;
  comm_world(&c);
  float f[4] = {0};
  if (strcmp(mode, "bad-root") == 0) {
    comm_bcast(&c, f, sizeof f, c.size, TRAFFIC_OTHER);
  } else if (strcmp(mode, "zero-bucket") == 0) {
    c.bucket_bytes = 2;
    comm_allreduce_sum(&c, f, 4, TRAFFIC_DP);
  } else if (strcmp(mode, "empty-group") == 0) {
    comm_t empty;
    comm_split(&c, -1, 0, &empty);
    comm_allreduce_sum(&empty, f, 4, TRAFFIC_DP);
  } else if (strcmp(mode, "shm-address-space") == 0) {
    /* the last rank's address space 32 MiB past what it uses, rank 0's segment 256 MiB: node-shared memory
     * cannot be mapped there (every rank maps every segment) */
    if (c.rank == c.size - 1) {
      unsigned long pages = 0;
      FILE *f = fopen("/proc/self/statm", "r");
      if (!f || fscanf(f, "%lu", &pages) != 1) abort();
      fclose(f);
      struct rlimit lim = {.rlim_cur = pages * (rlim_t)sysconf(_SC_PAGESIZE) + (32u << 20), .rlim_max = RLIM_INFINITY};
      if (setrlimit(RLIMIT_AS, &lim) != 0) abort();
    }
    node_shm_t s;
    node_shm_alloc(&c, c.rank == 0 ? (size_t)256 << 20 : 0, &s);
  } else {
    surge_input_error("test_comm: unknown failure mode '%s' (bad-root, zero-bucket, empty-group, "
                      "shm-address-space)", mode);
  }
  comm_free(&c);
}

/* comm_ireduce_scatter_sum: parts of uneven sizes (rank 0's empty where there are 2+ ranks, the last the
 * largest), each rank's part the exact sum at its own position, metered as n floats of TRAFFIC_DP_SCATTER. */
static void check_reduce_scatter(comm_t *c, size_t n) {
  size_t *off = xcalloc((size_t)c->size, sizeof *off), *cnt = xcalloc((size_t)c->size, sizeof *cnt), at = 0;
  for (int r = 0; r < c->size; r++) {
    off[r] = at;
    cnt[r] = r == c->size - 1 ? n - at : c->size > 1 && r == 0 ? 0 : n / (size_t)(2 * c->size);
    at += cnt[r];
  }
  float *x = xmalloc((n ? n : 1) * sizeof(float));  // x is (n,)
  for (size_t i = 0; i < n; i++) x[i] = exact_input(c->rank, i);
  uint64_t before = c->meter.bytes[TRAFFIC_DP_SCATTER];
  comm_op_t op;
  comm_ireduce_scatter_sum(c, x, n, off, cnt, TRAFFIC_DP_SCATTER, &op);
  while (!comm_op_test(&op)) {
  }
  size_t wrong = 0;
  for (size_t i = off[c->rank]; i < off[c->rank] + cnt[c->rank]; i++) {
    double sum = 0;
    for (int r = 0; r < c->size; r++) sum += exact_input(r, i);
    wrong += (double)x[i] != sum;
  }
  double bad = (double)wrong + (c->meter.bytes[TRAFFIC_DP_SCATTER] - before != n * sizeof(float));
  comm_allreduce_sum_double(c, &bad, 1, TRAFFIC_OTHER);
  tap_all(bad == 0, "reduce-scatter of %zu floats in uneven parts: every rank's part is the exact sum in place, "
          "metered as dp_scatter (%g wrong)", n, bad);
  /* the parts all-gathered back, non-blocking: every rank holds every sum (an allreduce in two halves) */
  before = c->meter.bytes[TRAFFIC_DP_GATHER];
  comm_iallgatherv_float(c, x, off, cnt, TRAFFIC_DP_GATHER, &op);
  comm_op_wait(&op);
  wrong = 0;
  for (size_t i = 0; i < n; i++) {
    double sum = 0;
    for (int r = 0; r < c->size; r++) sum += exact_input(r, i);
    wrong += (double)x[i] != sum;
  }
  bad = (double)wrong + (c->meter.bytes[TRAFFIC_DP_GATHER] - before != cnt[c->rank] * sizeof(float));
  comm_allreduce_sum_double(c, &bad, 1, TRAFFIC_OTHER);
  tap_all(bad == 0, "non-blocking all-gather of those %zu floats: every rank holds every sum, metered as its part in "
          "dp_gather (%g wrong)", n, bad);
  free(x);
  free(off);
  free(cnt);
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (argc == 3 && strcmp(argv[1], "--fail") == 0) {
    provoke_failure(argv[2]);
    MPI_Finalize();
    return 0;  // the shell test expects exit 1: returning means the error went unreported
  }

  comm_t w;
  comm_world(&w);
  int compare = MPI_UNEQUAL;
  MPI_Comm_compare(w.mpi, MPI_COMM_WORLD, &compare);
  tap_all(compare == MPI_CONGRUENT && w.rank == world_rank && w.size == world_size && w.bucket_bytes == 4 << 20,
          "comm_world: a duplicate of MPI_COMM_WORLD (same ranks), 4 MiB buckets");
  int one_node = w.nodes == 1;
  for (int r = 0; r < w.size; r++) one_node &= w.node[r] == 0;
  tap_all(one_node, "comm_world: every rank on node 0 of 1 (one machine; tests/test_cluster.sh checks several)");
  const char *want_names[TRAFFIC_COUNT] = {"dp", "activation", "activation_grad", "embedding", "tp", "dp_compressed",
                                           "activation_grad_compressed", "batchnorm", "dp_scatter", "dp_gather",
                                           "other"};
  int names_ok = 1;
  for (int t = 0; t < TRAFFIC_COUNT; t++) names_ok &= strcmp(traffic_name((traffic_t)t), want_names[t]) == 0;
  tap_all(names_ok, "traffic_name: dp, activation, activation_grad, embedding, tp, dp_compressed, "
                  "activation_grad_compressed, batchnorm, dp_scatter, dp_gather, other");

  const size_t one_bucket = (4 << 20) / sizeof(float);
  check_allreduce_exact(&w, 0, 4 << 20, "default buckets");
  check_allreduce_exact(&w, 1, 4 << 20, "default buckets");
  check_allreduce_exact(&w, 7, 4 << 20, "default buckets");
  check_allreduce_exact(&w, one_bucket, 4 << 20, "exactly one 4 MiB bucket");
  check_allreduce_exact(&w, one_bucket + 1, 4 << 20, "one 4 MiB bucket and one float");
  check_reduce_scatter(&w, 1000);
  check_reduce_scatter(&w, 3);
  check_allreduce_exact(&w, 37, 16, "16-byte buckets, the last short");
  check_allreduce_exact(&w, 8, 16, "16-byte buckets, two exactly");
  check_allreduce_exact(&w, 5, 6, "6-byte buckets (one float each)");
  check_allreduce_rounding(&w);
  check_iallreduce(&w);
  check_doubles(&w);
  check_float_max_min(&w);
  check_clock_offset(&w);
  check_bcast(&w);
  check_gather(&w);
  check_ring(&w);
  check_split_parity(&w);
  check_split_excluded(&w);
  check_meters();
  check_node_shm(&w);
  comm_free(&w);

  int rc = world_rank == 0 ? tap_done() : 0;
  MPI_Finalize();
  return rc;
}
