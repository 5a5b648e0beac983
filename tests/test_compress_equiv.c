/* Optimus-CC's techniques against the exact 3d run (run under mpiexec -n 8 by tests/test_compress_run.sh):
 * the gpt on tp 2 x pp 2 x dp 2 with 4 micro-batches, 10 SGD steps (momentum, clipping), each
 * variant against the exact run of the same layout, tensor by tensor on every rank (relative to the
 * rank's part of the tensor, the matrix the compressor sees; the key third of every qkv bias, whose
 * true gradient is zero, within an absolute 0.006 as tests/test_pipe_equiv allows). SGD, because
 * the float error of a matrix compressed at full rank is relative to the whole matrix: AdamW, which
 * scales every element by its own gradient's size, turns it into steps of up to lr where the
 * gradient is tiny (the key rows of qkv: 1e-4 of the matrix), so its parameters measure that, not
 * the gradients.
 *
 *  - every technique off, with all the other [compress] keys away from their defaults: bitwise
 *  - CB (every backward compressed, LEP), FE, SC (both stages), and all three, at ranks no smaller
 *    than the matrices' (cb_rank = a tensor-parallel rank's part of a micro-batch's tokens, 16 of 32,
 *    with scatter-gather, the default; = the width = the tokens, 32, without; dp_rank = the widest
 *    matrix's rank): within 1e-5, and the gradient norm of every step within 1e-6
 *  - FE after one step: the word embedding's gradient equals the two-step sum's on each tensor-parallel
 *    shard (1e-6)
 *  - the same three at low ranks: the parameters move away from the exact run (so the comparisons
 *    can fail) and the loss stays finite */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/error.h"
#include "io/deck.h"
#include "small_gpt.h"
#include "tap.h"
#include "train/train.h"

static const char *const deck_text = SMALL_GPT_DECK
                                     "optimizer = sgd\n"
                                     "lr = 0.05\n"
                                     "momentum = 0.9\n"
                                     "weight_decay = 0.01\n"
                                     "clip_norm = 1.0\n"
                                     "[parallel]\n"
                                     "mode = 3d\n"
                                     "tp = 2\n"
                                     "pp = 2\n"
                                     "dp = 2\n"
                                     "[train]\n"
                                     "micro_batches = 4\n";

enum { STEPS = 10, WIDTH = 32, MAX_OV = 12 };
#define TENSOR_TOL 1e-5
#define NORM_TOL 1e-6
#define GRAD_TOL 1e-6
#define KEY_BIAS_BOUND 0.006

static comm_t world;

typedef struct result {
  float *params, *grads1; /* this rank's local slabs: after the run, and the gradient of step 1 */
  size_t n;
  double norm[STEPS];
  double last_loss;
  state_tensor_t *piece;  /* (local.n) the layout's description */
  slab_layout_t local;    /* a copy of the layout's local table */
} result_t;

static float *download(trainer_t *t, const float *slab) {
  size_t n = t->layout->local->total;
  float *h = xmalloc((n + 1) * sizeof *h);
  t->be->download(h, slab, n);
  return h;
}

/* The run with the -D overrides (NULL-terminated). */
static void run(const char *const *ov, result_t *r) {
  char *o[MAX_OV];
  int n = 0;
  for (; ov[n]; n++) o[n] = (char *)ov[n];
  config_t cfg;
  deck_t *deck;
  deck_parse(deck_text, "test_compress_equiv.deck", n, o, &cfg, &deck);
  trainer_t t;
  trainer_init(&t, &cfg, deck, &world);
  memset(r, 0, sizeof *r);
  for (int s = 0; s < STEPS; s++) {
    train_stats_t st = trainer_step(&t, 0);
    r->norm[s] = st.grad_norm;
    r->last_loss = st.loss;
    if (s == 0) r->grads1 = download(&t, t.layout->m->grads);
  }
  r->params = download(&t, t.layout->m->params);
  const slab_layout_t *L = t.layout->local;
  r->n = L->total;
  r->local = *L;
  r->local.t = xmalloc(((size_t)L->n + 1) * sizeof *r->local.t);
  memcpy(r->local.t, L->t, (size_t)L->n * sizeof *L->t);
  r->piece = xcalloc((size_t)L->n + 1, sizeof *r->piece);
  t.layout->ops->describe(t.layout, r->piece);
  trainer_free(&t);
  deck_free(deck);
}

static void result_free(result_t *r) {
  free(r->params), free(r->grads1), free(r->piece), free(r->local.t);
}

static int is_key_bias(const result_t *r, int i) {
  size_t len = strlen(r->local.t[i].name);
  return len > 9 && strcmp(r->local.t[i].name + len - 9, ".qkv.bias") == 0 && r->piece[i].start[0] >= WIDTH &&
         r->piece[i].start[0] < 2 * WIDTH;
}

/* The worst relative difference, a from b, over the tensors of every rank whose name contains
 * `only` (NULL: all): each rank's part of a tensor (its pieces of one name) is one matrix to the
 * compressor, so the difference is relative to the whole part; the key-bias pieces by their absolute
 * bound. The tensor's name in worst. */
static double compare(const result_t *r, const float *a, const float *b, const char *only, char *worst) {
  double w = 0;
  int at = -1;
  for (int i = 0, end; i < r->local.n; i = end) {
    end = i + 1;
    while (end < r->local.n && strcmp(r->local.t[end].name, r->local.t[i].name) == 0) end++;
    if (only && !strstr(r->local.t[i].name, only)) continue;
    double num = 0, den = 0, key = 0, rel;
    for (int k = i; k < end; k++) {
      const slab_tensor_t *x = &r->local.t[k];
      for (size_t j = 0; j < x->n; j++) {
        double d = (double)a[x->off + j] - b[x->off + j];
        if (is_key_bias(r, k)) key = fmax(key, fabs(d));
        else num += d * d, den += (double)b[x->off + j] * b[x->off + j];
      }
    }
    rel = key > KEY_BIAS_BOUND ? INFINITY : den > 0 ? sqrt(num / den) : sqrt(num);
    if (rel >= w) w = rel, at = i;
  }
  struct {
    double v;
    int rank;
  } in = {w, world.rank}, out;
  MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, world.mpi);
  char mine[SLAB_NAME_MAX] = "";
  if (at >= 0) snprintf(mine, sizeof mine, "%s", r->local.t[at].name);
  MPI_Bcast(mine, SLAB_NAME_MAX, MPI_CHAR, out.rank, world.mpi);
  snprintf(worst, SLAB_NAME_MAX, "%s", mine);
  return out.v;
}

static double norm_diff(const result_t *a, const result_t *b) {
  double w = 0;
  for (int s = 0; s < STEPS; s++) w = fmax(w, fabs(a->norm[s] - b->norm[s]) / b->norm[s]);
  return w;
}

static int bitwise(const result_t *a, const result_t *b) {
  double same = a->n == b->n && memcmp(a->params, b->params, a->n * sizeof(float)) == 0;
  comm_allreduce_sum_double(&world, &same, 1, TRAFFIC_OTHER);
  return same == world.size;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  comm_world(&world);
  if (access("/usr/share/games/fortunes", F_OK) != 0 || world.size != 8) {
    if (world.rank == 0)
      tap_skip_all(world.size != 8 ? "needs 8 ranks" : "the fortunes text (Debian package fortunes) is not installed");
    MPI_Finalize();
    return 0;
  }
  result_t ref, r;
  const char *none[] = {NULL};
  run(none, &ref);
  char worst[SLAB_NAME_MAX];

  const char *off[] = {"compress.cb=false", "compress.cb_rank=4",        "compress.lep=false",
                       "compress.epilogue_only=false", "compress.fe=false", "compress.sc_stages=0",
                       "compress.dp_rank=8", "compress.warmup_fraction=0.5", "compress.min_rate=2", NULL};
  run(off, &r);
  int same = bitwise(&r, &ref);
  if (world.rank == 0) tap_ok(same, "every technique off (the other [compress] keys changed): bitwise the exact run");
  result_free(&r);

  static const struct {
    const char *name;
    const char *ov[6];
  } full[] = {
      {"CB every backward at rank 16, each tp rank its half of the rows (LEP)",
       {"compress.cb=true", "compress.cb_rank=16", "compress.epilogue_only=false"}},
      {"CB epilogue only at rank 16", {"compress.cb=true", "compress.cb_rank=16"}},
      {"CB every backward at rank 32, whole gradients (scatter_gather = false)",
       {"compress.cb=true", "compress.cb_rank=32", "compress.epilogue_only=false", "parallel.scatter_gather=false"}},
      {"FE", {"compress.fe=true"}},
      {"SC on both stages at rank 32", {"compress.sc_stages=2", "compress.dp_rank=32"}},
      {"CB + FE + SC at full ranks",
       {"compress.cb=true", "compress.cb_rank=16", "compress.epilogue_only=false", "compress.fe=true",
        "compress.sc_stages=2", "compress.dp_rank=32"}},
  };
  for (size_t v = 0; v < sizeof full / sizeof full[0]; v++) {
    run(full[v].ov, &r);
    double w = compare(&r, r.params, ref.params, NULL, worst), nw = norm_diff(&r, &ref);
    comm_allreduce_max_double(&world, &nw, 1, TRAFFIC_OTHER);
    if (world.rank == 0)
      tap_ok(w <= TENSOR_TOL && nw <= NORM_TOL, "%s = the exact run after %d steps: worst tensor %s %.2e (<= %.0e), "
             "gradient norm %.2e (<= %.0e)", full[v].name, STEPS, worst, w, TENSOR_TOL, nw, NORM_TOL);
    if (strcmp(full[v].name, "FE") == 0) {
      double g = compare(&r, r.grads1, ref.grads1, "wte.weight", worst);
      if (world.rank == 0)
        tap_ok(g <= GRAD_TOL, "FE: the word embedding's gradient after one step equals the data-parallel sum then "
               "the first/last-stage sum, on each tensor-parallel shard (worst %.2e <= %.0e)", g, GRAD_TOL);
    }
    result_free(&r);
  }

  const char *lossy[] = {"compress.cb=true", "compress.cb_rank=2", "compress.fe=true", "compress.sc_stages=1",
                         "compress.dp_rank=2", NULL};
  run(lossy, &r);
  double w = compare(&r, r.params, ref.params, NULL, worst), nw = norm_diff(&r, &ref);
  if (world.rank == 0)
    tap_ok(w > 10 * TENSOR_TOL && nw > NORM_TOL && isfinite(r.last_loss),
           "CB + FE + SC at rank 2: the parameters move away from the exact run (worst tensor %s %.2e, gradient "
           "norm %.2e) and the loss stays finite (%.4f vs %.4f)", worst, w, nw, r.last_loss, ref.last_loss);
  result_free(&r);
  result_free(&ref);
  int rc = world.rank == 0 ? tap_done() : 0;
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
