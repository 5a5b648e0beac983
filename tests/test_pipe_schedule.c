/* Pipeline schedules (pipe/schedule.h) for every (PP, M) up to 8 x 16, both kinds, against the
 * definitions written out here: each stage's passes in order (1F1B: W = min(PP-s-1, M) warm-up
 * forwards, M - W forward/backward pairs, W cool-down backwards; GPipe: all forwards, then all
 * backwards), the warm-up count, the micro-batches held at once; the transfers the passes imply
 * pair up between neighbours (every send has its receive, in the same order), and a simulation
 * with non-blocking sends and receives waited for just before their pass finishes (no deadlock).
 * Then the stage partition (pipe/partition.h) against every partition of small cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipe/partition.h"
#include "pipe/schedule.h"
#include "tap.h"

enum { MAX_PP = 8, MAX_M = 16 };

/* The passes of stage s as the definitions say. */
static void expected(pipe_sched_t k, int PP, int M, int s, pipe_op_t *ops) {
  int n = 0;
  if (k == PIPE_GPIPE) {
    for (int f = 0; f < M; f++) ops[n++] = (pipe_op_t){PIPE_FORWARD, f};
    for (int b = 0; b < M; b++) ops[n++] = (pipe_op_t){PIPE_BACKWARD, b};
    return;
  }
  int W = PP - s - 1 < M ? PP - s - 1 : M;
  for (int f = 0; f < W; f++) ops[n++] = (pipe_op_t){PIPE_FORWARD, f};
  for (int i = 0; i < M - W; i++) {
    ops[n++] = (pipe_op_t){PIPE_FORWARD, W + i};
    ops[n++] = (pipe_op_t){PIPE_BACKWARD, i};
  }
  for (int b = M - W; b < M; b++) ops[n++] = (pipe_op_t){PIPE_BACKWARD, b};
}

/* Transfers implied by a stage's passes, in order: kind 0 activation, 1 gradient; dir -1 from/to
 * the previous stage, +1 the next. */
typedef struct xfer {
  int send, kind, dir, mb;
} xfer_t;

/* The receive a pass waits for (-1: none) and the send it issues after. */
static int recv_of(pipe_op_t op, int s, int PP, xfer_t *x) {
  if (op.pass == PIPE_FORWARD && s > 0) return *x = (xfer_t){0, 0, -1, op.mb}, 1;
  if (op.pass == PIPE_BACKWARD && s < PP - 1) return *x = (xfer_t){0, 1, +1, op.mb}, 1;
  return 0;
}
static int send_of(pipe_op_t op, int s, int PP, xfer_t *x) {
  if (op.pass == PIPE_FORWARD && s < PP - 1) return *x = (xfer_t){1, 0, +1, op.mb}, 1;
  if (op.pass == PIPE_BACKWARD && s > 0) return *x = (xfer_t){1, 1, -1, op.mb}, 1;
  return 0;
}

/* Sends of stage s towards dir, of kind, in order, into mb[]; returns how many. */
static int sends(const pipe_op_t *ops, int M, int s, int PP, int kind, int dir, int *mb) {
  int n = 0;
  xfer_t x;
  for (int i = 0; i < 2 * M; i++)
    if (send_of(ops[i], s, PP, &x) && x.kind == kind && x.dir == dir) mb[n++] = x.mb;
  return n;
}
static int recvs(const pipe_op_t *ops, int M, int s, int PP, int kind, int dir, int *mb) {
  int n = 0;
  xfer_t x;
  for (int i = 0; i < 2 * M; i++)
    if (recv_of(ops[i], s, PP, &x) && x.kind == kind && x.dir == dir) mb[n++] = x.mb;
  return n;
}

/* Run all stages: a pass runs once the message it waits for was sent. 1 when every stage finishes. */
static int simulate(pipe_op_t (*ops)[2 * MAX_M], int PP, int M) {
  int pos[MAX_PP] = {0};
  static unsigned char sent[MAX_PP][2][2][MAX_M]; /* [to stage][kind][from the next (1) or previous (0)][mb] */
  memset(sent, 0, sizeof sent);
  for (int progress = 1; progress;) {
    progress = 0;
    for (int s = 0; s < PP; s++)
      while (pos[s] < 2 * M) {
        pipe_op_t op = ops[s][pos[s]];
        xfer_t x;
        if (recv_of(op, s, PP, &x) && !sent[s][x.kind][x.dir > 0][x.mb]) break;
        if (send_of(op, s, PP, &x)) sent[s + x.dir][x.kind][x.dir < 0][x.mb] = 1;
        pos[s]++;
        progress = 1;
      }
  }
  for (int s = 0; s < PP; s++)
    if (pos[s] != 2 * M) return 0;
  return 1;
}

static void check_schedules(pipe_sched_t k) {
  int bad_order = 0, bad_warm = 0, bad_held = 0, bad_pairs = 0, deadlocks = 0, cases = 0;
  char first_bad[160] = "";
  for (int PP = 1; PP <= MAX_PP; PP++)
    for (int M = 1; M <= MAX_M; M++) {
      static pipe_op_t ops[MAX_PP][2 * MAX_M];
      pipe_op_t want[2 * MAX_M];
      cases++;
      for (int s = 0; s < PP; s++) {
        pipe_schedule(k, PP, M, s, ops[s]);
        expected(k, PP, M, s, want);
        int same = 1, held = 0, most = 0, lead = 0;
        for (int i = 0; i < 2 * M; i++) {
          same &= ops[s][i].pass == want[i].pass && ops[s][i].mb == want[i].mb;
          held += ops[s][i].pass == PIPE_FORWARD ? 1 : -1;
          if (held > most) most = held;
        }
        while (lead < 2 * M && ops[s][lead].pass == PIPE_FORWARD) lead++;
        int W = k == PIPE_GPIPE ? M : (PP - s - 1 < M ? PP - s - 1 : M);
        int holds = k == PIPE_GPIPE ? M : (PP - s < M ? PP - s : M);
        bad_order += !same;
        bad_warm += pipe_warmup(k, PP, M, s) != W || lead != (W < M ? W + 1 : M);
        bad_held += most != holds || pipe_in_flight(k, PP, M, s) != holds;
        if (!same && !first_bad[0]) snprintf(first_bad, sizeof first_bad, "PP %d M %d stage %d", PP, M, s);
      }
      for (int s = 0; s + 1 < PP; s++) { /* boundary s | s+1: activations forward, gradients back */
        int a[MAX_M], b[MAX_M];
        int na = sends(ops[s], M, s, PP, 0, +1, a), nb = recvs(ops[s + 1], M, s + 1, PP, 0, -1, b);
        bad_pairs += na != M || na != nb || memcmp(a, b, sizeof(int) * (size_t)na) != 0;
        na = sends(ops[s + 1], M, s + 1, PP, 1, -1, a), nb = recvs(ops[s], M, s, PP, 1, +1, b);
        bad_pairs += na != M || na != nb || memcmp(a, b, sizeof(int) * (size_t)na) != 0;
      }
      deadlocks += !simulate(ops, PP, M);
    }
  const char *name = pipe_sched_name(k);
  tap_ok(bad_order == 0, "%s: every stage's passes in the defined order, %d (PP, M) cases up to %d x %d%s%s", name,
         cases, MAX_PP, MAX_M, first_bad[0] ? "; first wrong: " : "", first_bad);
  tap_ok(bad_warm == 0, "%s: warm-up forwards W_s = %s on every stage (%d wrong)", name,
         k == PIPE_GPIPE ? "M" : "min(PP - s - 1, M)", bad_warm);
  tap_ok(bad_held == 0, "%s: at most %s micro-batches held on stage s, as pipe_in_flight says (%d wrong)", name,
         k == PIPE_GPIPE ? "M" : "min(PP - s, M)", bad_held);
  tap_ok(bad_pairs == 0, "%s: every send has its receive on the neighbour, M each way per boundary, same order (%d "
         "boundaries wrong)", name, bad_pairs);
  tap_ok(deadlocks == 0, "%s: every (PP, M) runs to the end with receives waited for before their pass (%d deadlocked)",
         name, deadlocks);
}

/* The largest stage cost of a partition. */
static double worst(const double *cost, double head, double tail, int PP, const int *count) {
  double w = 0;
  for (int s = 0, b = 0; s < PP; s++) {
    double c = (s == 0 ? head : 0) + (s == PP - 1 ? tail : 0);
    for (int i = 0; i < count[s]; i++) c += cost[b++];
    if (c > w) w = c;
  }
  return w;
}

/* The best largest stage cost over every partition (stages of at least one block), by recursion. */
static double brute(const double *cost, int L, double head, double tail, int PP, int *count, int s, int left) {
  if (s == PP - 1) {
    count[s] = left;
    return worst(cost, head, tail, PP, count);
  }
  double best = INFINITY;
  for (int c = 1; c <= left - (PP - s - 1); c++) {
    count[s] = c;
    double w = brute(cost, L, head, tail, PP, count, s + 1, left - c);
    if (w < best) best = w;
  }
  return best;
}

static void check_partition(void) {
  int count[8], scratch[8], wrong = 0, cases = 0;
  double cost[8];
  unsigned seed = 7;
  for (int L = 1; L <= 8; L++)
    for (int PP = 1; PP <= L; PP++)
      for (int trial = 0; trial < 4; trial++) {
        for (int i = 0; i < L; i++) seed = seed * 1103515245u + 12345u, cost[i] = 1 + (trial ? (seed >> 16) % 7 : 0);
        double head = trial == 3 ? 5 : 0.5, tail = trial == 2 ? 9 : 1;
        pipe_partition(cost, L, head, tail, PP, count);
        int sum = 0, ok = 1;
        for (int s = 0; s < PP; s++) sum += count[s], ok &= count[s] >= 1;
        double got = worst(cost, head, tail, PP, count), best = brute(cost, L, head, tail, PP, scratch, 0, L);
        wrong += !ok || sum != L || fabs(got - best) > 1e-12;
        cases++;
      }
  tap_ok(wrong == 0, "partition: stages of at least one block covering all, with the least largest stage cost, in %d "
         "cases (L <= 8, every PP <= L; %d wrong)", cases, wrong);
  double eight[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  pipe_partition(eight, 8, 0, 0, 4, count);
  tap_ok(count[0] == 2 && count[1] == 2 && count[2] == 2 && count[3] == 2, "partition: 8 equal blocks on 4 stages: "
         "%d,%d,%d,%d", count[0], count[1], count[2], count[3]);
  pipe_partition(eight, 8, 0, 3, 4, count);
  tap_ok(count[3] == 1 && count[0] + count[1] + count[2] == 7, "partition: a heavy last stage (output layer) gets fewer "
         "blocks: %d,%d,%d,%d", count[0], count[1], count[2], count[3]);
}

int main(void) {
  check_schedules(PIPE_1F1B);
  check_schedules(PIPE_GPIPE);
  pipe_op_t a[2], b[2];
  int same = 1;
  for (int PP = 1; PP <= MAX_PP; PP++)
    for (int s = 0; s < PP; s++) {
      pipe_schedule(PIPE_1F1B, PP, 1, s, a);
      pipe_schedule(PIPE_GPIPE, PP, 1, s, b);
      same &= memcmp(a, b, sizeof a) == 0;
    }
  tap_ok(same, "with one micro-batch both schedules are forward then backward on every stage");
  tap_ok(fabs(pipe_bubble_theory(4, 8) - 3.0 / 11.0) < 1e-15 && pipe_bubble_theory(1, 5) == 0,
         "theoretical bubble (PP-1)/(M+PP-1): 3/11 for PP 4, M 8; 0 without a pipeline");
  tap_ok(pipe_sched_of("1f1b") == PIPE_1F1B && pipe_sched_of("gpipe") == PIPE_GPIPE && pipe_sched_of("x") < 0,
         "schedule names");
  check_partition();
  return tap_done();
}
