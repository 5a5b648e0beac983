/* The ring reduce-scatter behind comm_ireduce_scatter_sum (src/comm/ring.h), on 8 ranks: groups of
 * the first R ranks for R = 1 .. 8, each reduce-scattering four buckets at once (uneven parts, empty
 * parts, an empty bucket, a bucket of fewer floats than ranks, a part that travels in several
 * pieces), progressed by comm_op_test in turn and waited for in bucket order on even ranks and the
 * reverse order on odd ones. Each rank's part must be the sum in the ring's fixed order bit for bit
 * (and a plain double sum within 1e-6), the meter must count each bucket's bytes once in
 * dp_scatter, and each rank must send exactly the floats of the parts it does not own and receive
 * those of the parts its left neighbour does not own ((R-1)/R of the bucket in equal parts), counted
 * through the MPI profiling interface. Then the same with a polite wait (poll_us > 0), and two groups
 * started and waited for in opposite orders on even and odd ranks, which must not hang. Run by
 * tests/test_ring.sh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "core/error.h"
#include "tap_mpi.h"

enum { NBUCKETS = 4, MOST = 8 };
enum { PIECES_AND_SOME = 2 * (1 << 18) + 12345 }; /* a part of more than two of the ring's 1 MiB pieces */

/* Floats this process hands to MPI_Isend and MPI_Irecv (the ring's messages are the only ones here). */
static uint64_t sent_floats, received_floats;
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  if (type == MPI_FLOAT) sent_floats += (uint64_t)count;
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Request *req) {
  if (type == MPI_FLOAT) received_floats += (uint64_t)count;
  return PMPI_Irecv(buf, count, type, src, tag, comm, req);
}

static comm_t world;

/* Rank r's float i: fractions of many digits, so that the order of a sum shows in its bits. */
static float input(int r, size_t i) { return (float)((i * 2654435761u + (size_t)r * 40503u) % 100003u) / 997.0f - 50.0f; }

/* Bucket b's parts over R ranks: off[r], cnt[r] (R at most MOST); returns its floats. */
static size_t parts(int b, int R, size_t *off, size_t *cnt) {
  size_t at = 0;
  for (int r = 0; r < R; r++) {
    switch (b) {
    case 0: cnt[r] = R > 2 && r == 1 ? 0 : 50 + (size_t)((r * 37) % 11) * 13; break; /* uneven, one empty */
    case 1: cnt[r] = r < 5 ? 1 : 0; break;                                          /* 5 floats: some empty */
    case 2: cnt[r] = 0; break;                                                      /* an empty bucket */
    default: cnt[r] = r == R / 2 ? PIECES_AND_SOME : 25001 + (size_t)(r % 2); break; /* large, one larger */
    }
    off[r] = at;
    at += cnt[r];
  }
  return at;
}

typedef struct outcome {
  size_t wrong_bits, wrong_sum;
  int meter_ok, sent_ok;
} outcome_t;

/* The group's four buckets reduce-scattered at once; what came out against what should. */
static outcome_t reduce_buckets(comm_t *g) {
  int R = g->size, me = g->rank;
  size_t off[NBUCKETS][MOST], cnt[NBUCKETS][MOST], n[NBUCKETS];
  float *x[NBUCKETS];  // x[b] is (n[b],)
  uint64_t want_sent = 0, want_received = 0, want_bytes = 0;
  for (int b = 0; b < NBUCKETS; b++) {
    n[b] = parts(b, R, off[b], cnt[b]);
    x[b] = xmalloc((n[b] ? n[b] : 1) * sizeof(float));
    for (size_t i = 0; i < n[b]; i++) x[b][i] = input(me, i);
    want_sent += R > 1 ? n[b] - cnt[b][me] : 0;
    want_received += R > 1 ? n[b] - cnt[b][(me + R - 1) % R] : 0;
    want_bytes += n[b] * sizeof(float);
  }
  comm_meter_t before = g->meter;
  sent_floats = received_floats = 0;
  comm_op_t op[NBUCKETS];
  for (int b = 0; b < NBUCKETS; b++) comm_ireduce_scatter_sum(g, x[b], n[b], off[b], cnt[b], TRAFFIC_DP_SCATTER, &op[b]);
  for (int k = 0; k < 3 * NBUCKETS; k++) comm_op_test(&op[k % NBUCKETS]);
  for (int k = 0; k < NBUCKETS; k++) comm_op_wait(&op[me % 2 ? NBUCKETS - 1 - k : k]);
  outcome_t o = {.meter_ok = g->meter.bytes[TRAFFIC_DP_SCATTER] - before.bytes[TRAFFIC_DP_SCATTER] == want_bytes &&
                             g->meter.calls[TRAFFIC_DP_SCATTER] - before.calls[TRAFFIC_DP_SCATTER] == NBUCKETS,
                 .sent_ok = sent_floats == want_sent && received_floats == want_received};
  for (int b = 0; b < NBUCKETS; b++) {
    for (size_t i = off[b][me]; i < off[b][me] + cnt[b][me]; i++) {
      float ring = input((me + 1) % R, i); /* x[me+1] + x[me+2] + ... + x[me] */
      double plain = 0;
      for (int k = 2; k <= R; k++) ring += input((me + k) % R, i);
      for (int r = 0; r < R; r++) plain += input(r, i);
      o.wrong_bits += memcmp(&ring, &x[b][i], sizeof ring) != 0;
      o.wrong_sum += fabs(x[b][i] - plain) > 1e-6 * (fabs(plain) + 50.0 * R);
    }
    free(x[b]);
  }
  return o;
}

/* Two fresh groups of the same 8 ranks (one in reverse order), each reduce-scattering one bucket:
 * even ranks start and wait for the first group's before the second's, odd ranks the other way round.
 * A rank blocked on one group must keep advancing the other, and nothing may block at a group's
 * first ring; else this hangs (tests/test_ring.sh's timeout fails it). Returns the wrong floats. */
static size_t crossed_groups(void) {
  enum { N = 4099 };
  comm_t g[2];
  comm_split(&world, 0, world.rank, &g[0]);
  comm_split(&world, 0, -world.rank, &g[1]);
  size_t off[2][MOST], cnt[2][MOST];
  float *x[2];
  comm_op_t op[2];
  for (int k = 0; k < 2; k++) {
    x[k] = xmalloc(N * sizeof(float));
    for (size_t i = 0; i < N; i++) x[k][i] = input(g[k].rank, i);
    for (int r = 0, at = 0; r < g[k].size; r++) {
      cnt[k][r] = r == g[k].size - 1 ? N - (size_t)at : N / (size_t)g[k].size;
      off[k][r] = (size_t)at;
      at += (int)cnt[k][r];
    }
  }
  int first = world.rank % 2;
  for (int k = 0; k < 2; k++) {
    int j = k ^ first;
    comm_ireduce_scatter_sum(&g[j], x[j], N, off[j], cnt[j], TRAFFIC_DP_SCATTER, &op[j]);
  }
  for (int k = 0; k < 2; k++) comm_op_wait(&op[k ^ first]);
  size_t wrong = 0;
  for (int k = 0; k < 2; k++) {
    int R = g[k].size, me = g[k].rank;
    for (size_t i = off[k][me]; i < off[k][me] + cnt[k][me]; i++) {
      float ring = input((me + 1) % R, i);
      for (int j = 2; j <= R; j++) ring += input((me + j) % R, i);
      wrong += memcmp(&ring, &x[k][i], sizeof ring) != 0;
    }
    free(x[k]);
    comm_free(&g[k]);
  }
  return wrong;
}

int main(int argc, char **argv) {
  tap_mpi_world(&argc, &argv, &world, 8, "test_ring");
  for (int polite = 0; polite < 2; polite++)
    for (int R = 1; R <= MOST; R++) {
      comm_t g;
      comm_split(&world, world.rank < R ? 0 : -1, world.rank, &g);
      outcome_t o = {.meter_ok = 1, .sent_ok = 1};
      if (g.size > 0) {
        g.poll_us = polite ? 50 : 0;
        o = reduce_buckets(&g);
        o = reduce_buckets(&g); /* again on the same group: its ring communicator made once, the tags go on */
      }
      comm_free(&g);
      const char *wait = polite ? "a polite wait (poll_us 50)" : "MPI's wait";
      tap_all(o.wrong_bits == 0, "R=%d, %s: 4 buckets at once, each part the ring-order sum bit for bit (%zu wrong)",
              R, wait, o.wrong_bits);
      tap_all(o.wrong_sum == 0, "R=%d, %s: each part the plain sum within 1e-6 (%zu off)", R, wait, o.wrong_sum);
      tap_all(o.meter_ok, "R=%d, %s: dp_scatter counts each bucket's bytes, one call each", R, wait);
      tap_all(o.sent_ok, "R=%d, %s: each rank sends the parts it does not own, receives its left neighbour's others", R,
              wait);
    }
  size_t wrong = crossed_groups();
  tap_all(wrong == 0, "two groups of 8 ranks, started and waited for in opposite orders on even and odd ranks: no "
          "hang, each part the ring-order sum (%zu wrong)", wrong);
  int rc = world.rank == 0 ? tap_done() : 0;
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
