/* The comm layer's device side (src/comm/comm_nccl.c, as a GPU build has it) on the host, over the
 * fakes of tests/comm_dev_fakes.h: every call of comm.h that takes device buffers, staged through
 * host memory and through NCCL, against the same call on host buffers (same values, same metered
 * bytes, summed over the calls). tests/test_comm_dev.sh runs it on 1 to 4 ranks. Rank 0 prints TAP.
 *
 *   test_comm_dev auto|nccl|staged      the checks, [backend] device_comm as given; auto expects NCCL
 *                                       unless SURGE_FAKE_SHARED_GPU is set (then staging)
 *   test_comm_dev MODE --fail host-only a host-only call (comm_allgatherv_float) given a device
 *                                       buffer: the fakes end the run (exit 3) naming the address
 *
 * Values are small integers, so every sum is exact in any order and host and device results must be
 * equal bit for bit. */
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "comm/comm.h"
#include "comm_dev_fakes.h"
#include "core/error.h"
#include "tap_mpi.h"

static int world_rank, world_size;

/* A rank's values: small integers, different per rank and salt. */
static void values(float *x, size_t n, int rank, int salt) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((int)((i * 7 + (size_t)rank * 13 + (size_t)salt) % 17) - 8);
}

/* A device buffer and its host twin, both holding `values` of this rank. */
typedef struct twin {
  float *dev, *host, *got; /* got: the device buffer read back */
  size_t n;
} twin_t;

static twin_t twin(size_t n, int rank, int salt) {
  twin_t t = {fake_dev_floats(n), xcalloc(n ? n : 1, sizeof(float)), xcalloc(n ? n : 1, sizeof(float)), n};
  values(t.host, n, rank, salt);
  fake_dev_put(t.dev, t.host, n);
  return t;
}

/* Whether the device buffer now equals the host twin, bit for bit. */
static int same(twin_t *t) {
  fake_dev_get(t->got, t->dev, t->n);
  return memcmp(t->got, t->host, t->n * sizeof(float)) == 0;
}

static void twin_free(twin_t *t) {
  fake_dev_free(t->dev);
  free(t->host);
  free(t->got);
}

static uint64_t bytes_of(const comm_t *c, traffic_t t) { return c->meter.bytes[t]; }

/* The bytes c's meter counted, every category. */
static uint64_t metered(const comm_t *c) {
  uint64_t sum = 0;
  for (int t = 0; t < TRAFFIC_COUNT; t++) sum += c->meter.bytes[t];
  return sum;
}
/* Run a call on host buffers (HOST) or device ones (DEVICE), adding what the meter counted to the side's total. */
#define HOST(call) do { uint64_t m_ = metered(c); call; host_metered += metered(c) - m_; } while (0)
#define DEVICE(call) do { uint64_t m_ = metered(c); call; device_metered += metered(c) - m_; } while (0)

/* The parts of an all-gather: rank 1's empty (with 3 or more ranks), two floats of gap between parts
 * that the gather must leave alone. Returns the buffer's floats (the parts' extent and a tail of 3). */
static size_t gather_parts(int size, size_t *off, size_t *n) {
  size_t at = 0;
  for (int r = 0; r < size; r++) {
    n[r] = size >= 3 && r == 1 ? 0 : 5 + 3 * (size_t)r;
    off[r] = at;
    at += n[r] + 2;
  }
  return at + 3;
}

/* The consecutive parts of a reduce-scatter of n floats: uneven, rank 1's empty (3 or more ranks). */
static void scatter_parts(int size, size_t n, size_t *off, size_t *cnt) {
  size_t at = 0;
  for (int r = 0; r < size; r++) {
    cnt[r] = r == size - 1 ? n - at : size >= 3 && r == 1 ? 0 : n / (size_t)size + (size_t)r;
    off[r] = at;
    at += cnt[r];
  }
}

/* The checks on group c (a device side attached or inherited); `nccl`: the group's device buffers go
 * through NCCL. label names the group in the TAP lines. */
static void checks(comm_t *c, int nccl, const char *label) {
  const int me = c->rank, size = c->size;
  fake_counts_t before = fake_counts();
  uint64_t host_metered = 0, device_metered = 0;

  // blocking sums in buckets of 256 floats (the staged copy bucketed as a host buffer is)
  c->bucket_bytes = 1024;
  twin_t s = twin(1000, me, 1);
  uint64_t b0 = bytes_of(c, TRAFFIC_DP);
  comm_allreduce_sum(c, s.host, s.n, TRAFFIC_DP);
  uint64_t host_bytes = bytes_of(c, TRAFFIC_DP) - b0;
  comm_allreduce_sum(c, s.dev, s.n, TRAFFIC_DP);
  uint64_t dev_bytes = bytes_of(c, TRAFFIC_DP) - b0 - host_bytes;
  float expect = 0;
  for (int r = 0; r < size; r++) {
    float x;
    values(&x, 1, r, 1 + 999 * 7); /* value 999 of rank r: i = 999 */
    expect += x;
  }
  tap_all(same(&s) && s.host[999] == expect && dev_bytes == host_bytes,
          "%s: comm_allreduce_sum of 1000 device floats = the host sum (element 999: %g), %llu bytes metered", label,
          (double)s.host[999], (unsigned long long)dev_bytes);
  twin_free(&s);

  twin_t mx = twin(37, me, 2), mn = twin(37, me, 3);
  HOST(comm_allreduce_max(c, mx.host, mx.n, TRAFFIC_TP));
  DEVICE(comm_allreduce_max(c, mx.dev, mx.n, TRAFFIC_TP));
  HOST(comm_allreduce_min(c, mn.host, mn.n, TRAFFIC_TP));
  DEVICE(comm_allreduce_min(c, mn.dev, mn.n, TRAFFIC_TP));
  tap_all(same(&mx) && same(&mn), "%s: comm_allreduce_max and _min of device floats = the host results", label);
  twin_free(&mx);
  twin_free(&mn);

  // a broadcast from the last rank, as bytes
  twin_t bc = twin(37, me, 4);
  HOST(comm_bcast(c, bc.host, bc.n * sizeof(float), size - 1, TRAFFIC_OTHER));
  DEVICE(comm_bcast(c, bc.dev, bc.n * sizeof(float), size - 1, TRAFFIC_OTHER));
  float from_last[37];
  values(from_last, 37, size - 1, 4);
  tap_all(same(&bc) && memcmp(bc.host, from_last, sizeof from_last) == 0,
          "%s: comm_bcast of device bytes from rank %d = the root's bytes", label, size - 1);
  twin_free(&bc);

  // a non-blocking sum, completed by tests; then one completed by a polite wait
  twin_t ia = twin(300, me, 5);
  comm_op_t op;
  HOST(comm_iallreduce_sum(c, ia.host, ia.n, TRAFFIC_DP, &op));
  comm_op_wait(&op);
  DEVICE(comm_iallreduce_sum(c, ia.dev, ia.n, TRAFFIC_DP, &op));
  int tests = 1;
  while (!comm_op_test(&op)) tests++;
  int ok = same(&ia);
  c->poll_us = 20;
  HOST(comm_iallreduce_sum(c, ia.host, ia.n, TRAFFIC_DP, &op));
  comm_op_wait(&op);
  DEVICE(comm_iallreduce_sum(c, ia.dev, ia.n, TRAFFIC_DP, &op));
  comm_op_wait(&op);
  c->poll_us = 0;
  tap_all(ok && same(&ia), "%s: comm_iallreduce_sum of device floats = the host sum (completed by %d tests, then by "
          "a paced wait)", label, tests);
  twin_free(&ia);

  // the all-gather of uneven parts with gaps, and an empty part
  size_t off[8], n[8], cnt[8];
  size_t total = gather_parts(size, off, n);
  twin_t g = twin(total, me, 6);
  HOST(comm_iallgatherv_float(c, g.host, off, n, TRAFFIC_TP, &op));
  comm_op_wait(&op);
  DEVICE(comm_iallgatherv_float(c, g.dev, off, n, TRAFFIC_TP, &op));
  comm_op_wait(&op);
  float mine[64];
  values(mine, total, me, 6);
  ok = 1;
  for (int r = 0; r < size; r++) { /* each part its owner's values, the gaps and the tail this rank's own */
    float owner[64];
    values(owner, total, r, 6);
    ok &= memcmp(g.host + off[r], owner + off[r], n[r] * sizeof(float)) == 0;
    ok &= memcmp(g.host + off[r] + n[r], mine + off[r] + n[r], 2 * sizeof(float)) == 0;
  }
  ok &= memcmp(g.host + total - 3, mine + total - 3, 3 * sizeof(float)) == 0;
  tap_all(ok && same(&g), "%s: comm_iallgatherv_float of %d device parts (an empty one where 3 or more) = the host "
          "gather; the gaps and the tail untouched", label, size);
  twin_free(&g);

  // the reduce-scatter: this rank's part is the sum
  scatter_parts(size, 61, off, cnt);
  twin_t rs = twin(61, me, 7);
  HOST(comm_ireduce_scatter_sum(c, rs.host, rs.n, off, cnt, TRAFFIC_DP_SCATTER, &op));
  comm_op_wait(&op);
  DEVICE(comm_ireduce_scatter_sum(c, rs.dev, rs.n, off, cnt, TRAFFIC_DP_SCATTER, &op));
  comm_op_wait(&op);
  fake_dev_get(rs.got, rs.dev, rs.n);
  ok = memcmp(rs.got + off[me], rs.host + off[me], cnt[me] * sizeof(float)) == 0;
  for (size_t i = 0; i < cnt[me]; i++) { /* the host's own part is the exact sum */
    float sum = 0, x[61];
    for (int r = 0; r < size; r++) values(x, 61, r, 7), sum += x[off[me] + i];
    ok &= rs.host[off[me] + i] == sum;
  }
  tap_all(ok, "%s: comm_ireduce_scatter_sum of 61 device floats: this rank's part (%zu floats) = the sum", label,
          cnt[me]);
  twin_free(&rs);

  tap_all(host_metered == device_metered,
          "%s: every call metered the same bytes on device buffers as on host ones (%llu, %llu)", label,
          (unsigned long long)device_metered, (unsigned long long)host_metered);
  fake_counts_t after = fake_counts();
  int ops = after.ops - before.ops, staged = after.copies_out - before.copies_out;
  if (size == 1)
    tap_all(ops == 0 && staged == 0, "%s: one rank: nothing to move, no NCCL operation (%d), no copy to the host (%d)",
            label, ops, staged);
  else if (nccl)
    tap_all(ops > 0 && staged == 0 && after.not_ready > before.not_ready,
            "%s: the collectives through NCCL: %d operations, %d copies to the host, %d event polls found one not yet "
            "passed", label, ops, staged, after.not_ready - before.not_ready);
  else
    tap_all(ops == 0 && staged > 0, "%s: the collectives staged: %d copies to the host, %d NCCL operations", label,
            staged, ops);

  // point to point around the ring: staged (no group), then in a group (NCCL where the group has it), where
  // some group has two ranks or more (rank 0's, the largest: its line describes it); a rank alone in its group
  // has nothing to send and passes its part of the world's check
  int most = size;
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const int next = (me + 1) % size, prev = (me + size - 1) % size;
  for (int grouped = 0; grouped <= 1 && most > 1; grouped++) {
    if (size == 1) {
      tap_all(1, "(only rank 0's line is read)");
      continue;
    }
    {
      twin_t out = twin(45, me, 8), in = twin(45, me, 9);
      fake_counts_t was = fake_counts();
      comm_request_t req[2];
      if (grouped) comm_group_begin(c);
      comm_isend(c, out.dev, out.n, next, 5, TRAFFIC_ACT, &req[0]);
      comm_irecv(c, in.dev, in.n, prev, 5, TRAFFIC_ACT, &req[1]);
      comm_waitall(c, req, 2, TRAFFIC_ACT);
      values(in.host, in.n, prev, 8);
      int ran = fake_counts().ops - was.ops;
      int want = grouped && nccl ? 2 : 0;
      tap_all(same(&in) && ran == want && req[0].host == NULL && req[1].host == NULL,
              "%s: comm_isend/comm_irecv of device floats around the ring, %s: the previous rank's values, %d NCCL "
              "operations (want %d), host copies freed", label, grouped ? "in a group" : "no group", ran, want);
      twin_free(&out);
      twin_free(&in);
    }
  }
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const char *mode = argc > 1 ? argv[1] : "auto";
  const int shared = getenv("SURGE_FAKE_SHARED_GPU") != NULL;
  comm_device_mode_t m = !strcmp(mode, "nccl") ? COMM_DEVICE_NCCL : !strcmp(mode, "staged") ? COMM_DEVICE_STAGED
                                                                                             : COMM_DEVICE_AUTO;
  const int nccl = m == COMM_DEVICE_NCCL || (m == COMM_DEVICE_AUTO && !shared);

  cudaStream_t stream;
  cudaStreamCreateWithPriority(&stream, 0, -1);
  comm_t w;
  comm_world(&w);
  const char *chose = comm_use_device(&w, m, stream);

  if (argc > 3 && !strcmp(argv[2], "--fail") && !strcmp(argv[3], "host-only")) {
    size_t off[8], n[8];
    size_t total = gather_parts(w.size, off, n);
    float *dev = fake_dev_floats(total);
    comm_allgatherv_float(&w, dev, off, n, TRAFFIC_OTHER); /* host memory only: the fakes end the run */
    return 0;
  }

  tap_all(!strncmp(chose, nccl ? "nccl " : "staged through host memory", nccl ? 5 : 26),
          "%s, %d ranks%s: the world chose \"%s\"", mode, world_size, shared ? ", one GPU" : "", chose);
  checks(&w, nccl, "world");

  if (!nccl && world_size > 1) { /* an in-process background's staged sums, started while it records a piece */
    twin_t x = twin(100, world_rank, 10);
    fake_counts_t was = fake_counts();
    fake_record();
    comm_allreduce_sum(&w, x.dev, x.n, TRAFFIC_DP);
    fake_record();
    comm_op_t op;
    comm_iallreduce_sum(&w, x.dev, x.n, TRAFFIC_DP, &op);
    comm_op_wait(&op);
    fake_counts_t now = fake_counts();
    tap_all(now.cuts - was.cuts == 2 && now.misuse == 0,
            "staged sums started while the thread records a piece end the recording first (%d of 2 cut, %d misuse)",
            now.cuts - was.cuts, now.misuse);
    twin_free(&x);
  }

  // a split group inherits the device side and makes its NCCL communicator at its first collective
  comm_t half;
  comm_split(&w, world_rank % 2, world_rank, &half);
  checks(&half, nccl, "half");
  comm_free(&half);
  comm_free(&w);
  cudaStreamDestroy(stream);

  fake_counts_t f = fake_counts();
  tap_all(f.events == 0 && f.streams == 0 && f.nccl_comms == 0 && f.misuse == 0,
          "after comm_free: %d events, %d streams, %d NCCL communicators left; %d calls the real libraries would "
          "refuse or Surge must not make%s%s", f.events, f.streams, f.nccl_comms, f.misuse,
          f.misuse ? ", the first: " : "", fake_misuse());
  MPI_Finalize();
  return world_rank == 0 ? tap_done() : 0;
}
