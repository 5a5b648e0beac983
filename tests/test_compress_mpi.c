/* Compression over real groups (run under mpiexec -n 4 by tests/test_compress_run.sh):
 *
 * The PowerSGD reducer (sync/reducer_powersgd.c) through gradsync on W ranks, every rank's gradients
 * regenerated on every rank from seeds so each computes the expected result alone:
 *  - each compressed matrix comes out as P P^T sum_w M_w, P = orth(sum_w M_w Q0) from the seeded Q0
 *    (the data-parallel output P P^T mean(M), times W: reducers return sums); 1-D tensors and a matrix
 *    the minimum compression rate leaves exact come out as the exact reducer's sum
 *  - error feedback: the errors of the group add up to what the approximation missed
 *    (sum_w E_w = sum_w M_w - out), and over steps the outputs telescope:
 *    sum_t out_t + sum_w E_w = sum_t sum_w g_t,w
 *  - warm-up steps, and a rank of 0 (the stages selective compression leaves exact), are bitwise the
 *    exact reducer
 * Compressed back-propagation (pipe/p2p_cb.h) on a pipeline of W stages running the 1F1B transfers
 * of M micro-batches of unequal sizes:
 *  - stage s sends PP - s compressed gradients and stage s - 1 receives the same PP - s (epilogue
 *    only), every one of M with epilogue_only off; the rest go exact, bit for bit
 *  - a gradient of rank <= r arrives as sent (P Q^T), and only the compressed messages count as
 *    activation_grad_compressed traffic, (n + m) r floats each */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "compress/powersgd.h"
#include "core/error.h"
#include "core/rng.h"
#include "pipe/p2p_cb.h"
#include "pipe/schedule.h"
#include "sync/gradsync.h"
#include "tap.h"

static comm_t world;
static const backend_t *be = &backend_cpu;

/* A check every rank makes: it passes when it passes on all; rank 0 reports it. */
#define CHECK(cond, ...)                                                                                     \
  do {                                                                                                     \
    double bad_ = (cond) ? 0 : 1;                                                                          \
    comm_allreduce_max_double(&world, &bad_, 1, TRAFFIC_OTHER);                                            \
    if (world.rank == 0) tap_ok(bad_ == 0, __VA_ARGS__);                                                   \
  } while (0)

/* ---- the reducer */

typedef struct setup {
  slab_layout_t L;
  int W;
} setup_t;

/* Tensors: a, b (6, 10) same shape; c (10) 1-D; d (4, 5, 3) seen as (4, 15); e (40, 2), whose
 * factors at rank 2 (84 floats) are not smaller than it (80): exact under min_rate 1. */
static void make_layout(slab_layout_t *L, int with_all) {
  slab_layout_init(L);
  int a[] = {6, 10}, c[] = {10}, d[] = {4, 5, 3}, e[] = {40, 2};
  slab_layout_add(L, "a", 2, a, 0);
  slab_layout_add(L, "c", 1, c, 0);
  if (!with_all) return;
  slab_layout_add(L, "b", 2, a, 0);
  slab_layout_add(L, "d", 3, d, 0);
  slab_layout_add(L, "e", 2, e, 0);
}

/* Rank w's gradient of step t (the whole slab), the same on every rank that asks. */
static void gradient(const slab_layout_t *L, int w, int t, float *g) {
  rng_t r;
  rng_seed_stream(&r, 77, (uint64_t)w, (uint64_t)t);
  rng_fill_normal(&r, g, L->total, 0.0f, 1.0f);
}

typedef struct run {
  gradsync_t gs;
  float *grads;
  int *group, *ready;
} run_t;

static void run_init(run_t *x, const slab_layout_t *L, const char *reducer, int rank, double min_rate, long warmup) {
  x->grads = be->alloc(L->total);
  x->group = xcalloc((size_t)L->n, sizeof *x->group);
  x->ready = xcalloc((size_t)L->n, sizeof *x->ready);
  gradsync_opts_t o = {.bucket_bytes = 1 << 20, .overlap = 0, .reducer = reducer, .be = be, .job = &world,
                       .psgd = {.rank = rank, .min_rate = min_rate, .warmup_steps = warmup, .seed = 714}};
  gradsync_init(&x->gs, L, x->group, x->ready, &world, &world, x->grads, &o);
}

static void run_step(run_t *x, const slab_layout_t *L, int t) {
  gradient(L, world.rank, t, x->grads);
  gradsync_begin(&x->gs);
  gradsync_finish(&x->gs);
}

static void run_free(run_t *x) {
  gradsync_free(&x->gs);
  be->free(x->grads);
  free(x->group);
  free(x->ready);
}

/* sum_w of rank w's step-t gradient (double). */
static double *sum_of(const slab_layout_t *L, int W, int t) {
  double *s = xcalloc(L->total, sizeof *s);
  float *g = xmalloc(L->total * sizeof *g);
  for (int w = 0; w < W; w++) {
    gradient(L, w, t, g);
    for (size_t i = 0; i < L->total; i++) s[i] += g[i];
  }
  free(g);
  return s;
}

/* The expected output of tensor x: P P^T S with P = orth(S Q0) (S = the group's sum of M), computed
 * here with the library on the ref backend. */
static void expected(const slab_tensor_t *x, int t_index, const double *S, int R, float *out) {
  const backend_t *ref = &backend_ref;
  int n = x->d[0], m = (int)(x->n / (size_t)n), r = psgd_rank(n, m, R, 0);
  float *s = xmalloc(x->n * sizeof *s), *Q = xmalloc((size_t)m * r * sizeof *Q), *P = xmalloc((size_t)n * r * sizeof *P);
  for (size_t i = 0; i < x->n; i++) s[i] = (float)S[x->off + i];
  psgd_init_q(ref, Q, 1, m, r, 714, (uint64_t)t_index);
  psgd_project(ref, 1, n, m, r, s, x->n, Q, P, 1);
  psgd_back(ref, 1, n, m, r, s, x->n, P, Q);
  psgd_expand(ref, n, m, r, 1.0f, P, Q, 0.0f, out, m);
  free(s), free(Q), free(P);
}

static void test_dp_output(void) {
  slab_layout_t L;
  make_layout(&L, 1);
  int W = world.size, R = 2;
  run_t p, x;
  run_init(&p, &L, "powersgd", R, 1.0, 0);
  run_init(&x, &L, "exact", 0, 0, 0);
  run_step(&p, &L, 0);
  run_step(&x, &L, 0);
  double *S = sum_of(&L, W, 0), worst = 0;
  float *want = xmalloc(L.total * sizeof *want);
  const char *compressed[] = {"a", "b", "d"};
  for (int i = 0; i < 3; i++) {
    int t = slab_layout_find(&L, compressed[i]);
    const slab_tensor_t *ts = &L.t[t];
    expected(ts, t, S, R, want);
    double e = 0, r = 0;
    for (size_t j = 0; j < ts->n; j++)
      e += (p.grads[ts->off + j] - want[j]) * (p.grads[ts->off + j] - want[j]), r += want[j] * want[j];
    worst = fmax(worst, sqrt(e / r));
  }
  CHECK(worst < 1e-5, "W=%d: every compressed matrix (two of one shape, a 3-D tensor as (4, 15)) is P P^T sum_w M_w "
         "with P = orth(sum_w M_w Q0): rel %.1e", W, worst);
  int same = 1;
  const char *exact[] = {"c", "e"};
  for (int i = 0; i < 2; i++) {
    const slab_tensor_t *ts = &L.t[slab_layout_find(&L, exact[i])];
    same &= memcmp(p.grads + ts->off, x.grads + ts->off, ts->n * sizeof(float)) == 0;
  }
  CHECK(same, "the 1-D tensor and the matrix the minimum compression rate leaves exact are the exact sum, bit for bit");
  CHECK(p.gs.reducer->raw_bytes == 4.0 * (60 + 60 + 60) && x.gs.reducer->raw_bytes == 0,
         "raw bytes of the step: the compressed matrices' %g bytes", p.gs.reducer->raw_bytes);
  double low = 0;
  for (size_t j = 0; j < L.total; j++) low += fabs(p.grads[j] - S[j]);
  CHECK(low > 1e-2, "at rank %d the matrices are approximated, not exact (|out - sum| %.2g)", R, low);
  run_free(&p);
  run_free(&x);
  free(S), free(want);
  slab_layout_free(&L);
}

/* Error feedback on one compressed matrix (a) over 3 steps. */
static void test_dp_error_feedback(void) {
  slab_layout_t L;
  make_layout(&L, 0);
  const slab_tensor_t *a = &L.t[0];
  run_t p;
  run_init(&p, &L, "powersgd", 2, 0, 0);
  double *out_sum = xcalloc(a->n, sizeof *out_sum), *true_sum = xcalloc(a->n, sizeof *true_sum);
  double first_gap = 0;
  for (int t = 0; t < 3; t++) {
    run_step(&p, &L, t);
    double *S = sum_of(&L, world.size, t);
    for (size_t j = 0; j < a->n; j++) out_sum[j] += p.grads[j], true_sum[j] += S[j];
    free(S);
    /* sum_w E_w from the reducer's checkpoint region (E of matrix a is this rank's whole "error") */
    state_region_t reg;
    p.gs.reducer->ops->state(p.gs.reducer, &reg, 1);
    const state_tensor_t *err = &reg.t[0];
    double *E = xcalloc(a->n, sizeof *E);
    for (size_t j = 0; j < a->n; j++) E[j] = err->data[j];
    comm_allreduce_sum_double(&world, E, (int)a->n, TRAFFIC_OTHER);
    double d = 0, r = 0;
    for (size_t j = 0; j < a->n; j++) {
      double want = true_sum[j] - out_sum[j];
      d += (E[j] - want) * (E[j] - want), r += want * want;
    }
    if (t == 0) first_gap = sqrt(d / r);
    if (t == 2)
      CHECK(sqrt(d / r) < 1e-5 && first_gap < 1e-5 && strcmp(err->name, "error") == 0,
             "error feedback: sum_w E_w = sum_t (sum_w g_t,w - out_t) after 1 step (rel %.1e) and 3 steps (rel %.1e)",
             first_gap, sqrt(d / r));
    free(E);
  }
  run_free(&p);
  free(out_sum), free(true_sum);
  slab_layout_free(&L);
}

/* Warm-up steps and rank 0 are the exact reducer, bit for bit. */
static void test_dp_exact_cases(void) {
  slab_layout_t L;
  make_layout(&L, 1);
  run_t w, z, x;
  run_init(&w, &L, "powersgd", 2, 0, 2);
  run_init(&z, &L, "powersgd", 0, 0, 0);
  run_init(&x, &L, "exact", 0, 0, 0);
  int warm_same = 1, zero_same = 1;
  for (int t = 0; t < 3; t++) {
    run_step(&w, &L, t);
    run_step(&z, &L, t);
    run_step(&x, &L, t);
    int same = memcmp(w.grads, x.grads, L.total * sizeof(float)) == 0;
    if (t < 2) warm_same &= same;
    if (t == 2) warm_same &= !same;
    zero_same &= memcmp(z.grads, x.grads, L.total * sizeof(float)) == 0;
  }
  CHECK(warm_same, "warm-up: the first 2 steps are the exact sum bit for bit, the third is compressed");
  CHECK(zero_same, "rank 0 (a stage selective compression leaves exact): the exact sum bit for bit, 3 steps");
  run_free(&w), run_free(&z), run_free(&x);
  slab_layout_free(&L);
}

/* ---- compressed back-propagation on a pipeline */

enum { M = 6, T = 4, WIDTH = 10, RANK = 3 };

static int rows_of(int k) { return T * (2 + k % 2); }

/* Stage s's gradient of micro-batch k: rank 2 (<= RANK), the same wherever regenerated. */
static void grad_of(int s, int k, float *g) {
  rng_t r;
  rng_seed_stream(&r, 5, (uint64_t)s, (uint64_t)k);
  int n = rows_of(k);
  float u[2 * 12], v[2 * WIDTH];
  rng_fill_normal(&r, u, (size_t)2 * n, 0.0f, 1.0f);
  rng_fill_normal(&r, v, 2 * WIDTH, 0.0f, 1.0f);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < WIDTH; j++) g[i * WIDTH + j] = u[2 * i] * v[2 * j] + u[2 * i + 1] * v[2 * j + 1];
}

static void test_cb(int epilogue_only) {
  int PP = world.size, s = world.rank;
  pipe_p2p_t p;
  pipe_p2p_init(&p, &world, M);
  int rows[M];
  for (int k = 0; k < M; k++) rows[k] = rows_of(k);
  size_t cap = (size_t)12 * WIDTH;
  float *inputs = be->alloc((size_t)M * cap), *send = be->alloc((size_t)M * cap), *recv = be->alloc((size_t)M * cap);
  pipe_cb_opts_t o = {.be = be, .sched = PIPE_1F1B, .width = WIDTH, .rank = RANK, .lep = 1,
                      .epilogue_only = epilogue_only, .rows = rows, .ring = M, .slots = M, .inputs = inputs,
                      .slot_floats = cap, .seed = 1, .job = &world};
  pipe_cb_install(&p, &o);
  pipe_op_t ops[2 * M];
  pipe_schedule(PIPE_1F1B, PP, M, s, ops);
  comm_meter_t before = world.meter;
  double worst = 0;
  int exact_ok = 1, exact_n = 0;
  for (int i = 0; i < 2 * M; i++) {
    int k = ops[i].mb;
    size_t n = (size_t)rows[k] * WIDTH;
    if (ops[i].pass == PIPE_FORWARD) {
      if (s + 1 < PP) p.grad->post_recv(&p, k, recv + (size_t)k * cap, n);
      continue;
    }
    if (s + 1 < PP) { /* the gradient of k's output, from stage s + 1 */
      p.grad->wait_recv(&p, k);
      float want[12 * WIDTH];
      grad_of(s + 1, k, want);
      const float *got = recv + (size_t)k * cap;
      if (pipe_cb_compressed(&p, s + 1, k)) {
        double d = 0, r = 0;
        for (size_t j = 0; j < n; j++) d += (got[j] - want[j]) * (got[j] - want[j]), r += (double)want[j] * want[j];
        worst = fmax(worst, sqrt(d / r));
      } else {
        exact_ok &= memcmp(got, want, n * sizeof(float)) == 0;
        exact_n++;
      }
    }
    if (s > 0) {
      grad_of(s, k, send + (size_t)k * cap);
      p.grad->send(&p, k, send + (size_t)k * cap, n);
    }
  }
  p2p_wait_sends(&p);
  pipe_cb_stats_t st;
  pipe_cb_take_stats(&p, &st);
  long want_send = s == 0 ? 0 : epilogue_only ? PP - s : M, want_recv = s + 1 == PP ? 0 : epilogue_only ? PP - s - 1 : M;
  double payload = 0;
  for (int k = 0; k < M; k++)
    if (s > 0 && pipe_cb_compressed(&p, s, k)) payload += 4.0 * (double)(rows[k] + WIDTH) * RANK;
  uint64_t sent = world.meter.bytes[TRAFFIC_ACT_GRAD_COMPRESSED] - before.bytes[TRAFFIC_ACT_GRAD_COMPRESSED];
  int counts = st.sends == want_send && st.recvs == want_recv && (double)sent == payload;
  double all[3] = {worst, counts ? 0 : 1, exact_ok ? 0 : 1};
  comm_allreduce_max_double(&world, all, 3, TRAFFIC_OTHER);
  double tot[2] = {(double)st.sends, (double)st.recvs};
  comm_allreduce_sum_double(&world, tot, 2, TRAFFIC_OTHER);
  const char *what = epilogue_only ? "epilogue only" : "every backward";
  CHECK(all[1] == 0, "CB %s, PP %d, M %d: stage s sends %s compressed and stage s-1 receives as many "
         "(%.0f sends, %.0f receives in all; %s), each (n + m) r floats of activation_grad_compressed", what, PP, M,
         epilogue_only ? "PP - s" : "all M", tot[0], tot[1],
         epilogue_only ? "PP (PP - 1) / 2" : "(PP - 1) M");
  CHECK(all[0] < 1e-5, "CB %s: a gradient of rank 2 <= r %d arrives as sent (worst rel %.1e)", what, RANK, all[0]);
  CHECK(all[2] == 0, "CB %s: the uncompressed gradients arrive bit for bit (%d here)", what, exact_n);
  pipe_cb_remove(&p);
  pipe_p2p_free(&p);
  be->free(inputs), be->free(send), be->free(recv);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  comm_world(&world);
  if (world.size < 2) {
    if (world.rank == 0) tap_skip_all("needs 2 or more ranks");
    MPI_Finalize();
    return 0;
  }
  test_dp_output();
  test_dp_error_feedback();
  test_dp_exact_cases();
  test_cb(1);
  test_cb(0);
  int rc = world.rank == 0 ? tap_done() : 0;
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
