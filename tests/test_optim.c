/* Optimizers, schedules and clipping: one step against the PyTorch reference vectors (float64
 * truth) for SGD+momentum (mlp), SGD+Nesterov+weight decay (cnn) and AdamW (gpt), then small
 * examples worked out by hand, on the "ref" and "cpu" backends. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/error.h"
#include "core/slab.h"
#include "optim/norm.h"
#include "optim/optim.h"
#include "refdata.h"
#include "tap.h"

#define REF_STEP_TOL 1e-5 /* README: parameters after one step, per tensor ||a-b||/||b|| */
#define HAND_TOL 1e-6 /* float32 results of O(1) hand-worked examples */

static float *to_backend(const backend_t *be, const float *host, size_t n) {
  float *x = be->alloc(n);
  be->upload(x, host, n);
  return x;
}

static void from_backend(const backend_t *be, float *host, const float *x, size_t n) {
  be->download(host, x, n);
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

/* ---- reference vectors */

// The optimizer's options from the file's /config attributes (optimizer "SGD" -> "sgd").
static void opts_from_reference(const refdata_t *f, optim_opts_t *o) {
  memset(o, 0, sizeof *o);
  char *opt = refdata_config_string(f, "optimizer");
  for (size_t i = 0; opt[i] && i + 1 < sizeof o->name; i++)
    o->name[i] = (char)tolower((unsigned char)opt[i]);
  free(opt);
  strcpy(o->schedule.kind, "constant");
  o->schedule.steps = 2;
  o->schedule.lr = refdata_config_number(f, "lr");
  if (refdata_config_has(f, "momentum")) o->momentum = refdata_config_number(f, "momentum");
  if (refdata_config_has(f, "nesterov")) o->nesterov = (int)refdata_config_number(f, "nesterov");
  if (refdata_config_has(f, "weight_decay"))
    o->weight_decay = refdata_config_number(f, "weight_decay");
  if (refdata_config_has(f, "beta1")) o->beta1 = refdata_config_number(f, "beta1");
  if (refdata_config_has(f, "beta2")) o->beta2 = refdata_config_number(f, "beta2");
  if (refdata_config_has(f, "eps")) o->eps = refdata_config_number(f, "eps");
}

// Read /<group>/<each tensor of L> into the host slab (L's layout); the dims must match L's.
static void read_group_into_slab(const refdata_t *f, const char *group, const slab_layout_t *L,
                                 float *slab) {
  for (int i = 0; i < L->n; i++) {
    const slab_tensor_t *t = &L->t[i];
    char path[256];
    snprintf(path, sizeof path, "%s/%s", group, t->name);
    size_t n, dims[REFDATA_MAX_DIMS];
    int ndim;
    float *x = refdata_read_float(f, path, &n, dims, &ndim);
    int same = ndim == t->ndim && n == t->n;
    for (int d = 0; same && d < ndim; d++)
      same = dims[d] == (size_t)t->d[d];
    if (!same) {
      tap_ok(0, "%s: %s has the shape of /params/%s", refdata_path(f), path, t->name);
      exit(tap_done());
    }
    memcpy(slab + t->off, x, n * sizeof *x);
    free(x);
  }
}

// The layout of /params: one slab tensor per dataset, in name order.
static void layout_from_params(const refdata_t *f, slab_layout_t *L) {
  char **names;
  int count = refdata_list(f, "/params", &names);
  slab_layout_init(L);
  for (int i = 0; i < count; i++) {
    char path[256];
    snprintf(path, sizeof path, "/params/%s", names[i]);
    size_t dims[REFDATA_MAX_DIMS];
    int ndim, idims[SLAB_MAX_DIMS];
    free(refdata_read(f, path, NULL, dims, &ndim));
    for (int d = 0; d < ndim && d < SLAB_MAX_DIMS; d++)
      idims[d] = (int)dims[d];
    slab_layout_add(L, names[i], ndim, idims, -1);
  }
  refdata_free_names(names, count);
}

// One optimizer step from /params with /grads, compared with /step1 tensor by tensor.
static void check_reference_step(const backend_t *be, const char *file) {
  refdata_t *f = refdata_open_reference(file);
  optim_opts_t opts;
  opts_from_reference(f, &opts);
  slab_layout_t L;
  layout_from_params(f, &L);
  tap_ok(L.n > 0, "%s: %s has %d parameter tensors (%zu floats)", be->name, file, L.n, L.total);

  float *host = slab_alloc(&L);
  read_group_into_slab(f, "/params", &L, host);
  float *params = to_backend(be, host, L.total);
  read_group_into_slab(f, "/grads", &L, host);
  float *grads = to_backend(be, host, L.total);

  optim_t o;
  optim_init(&o, opts, be, L.total);
  optim_step(&o, params, grads, (float)lr_at(&o.schedule, 0));
  tap_ok(o.t == 1, "%s: %s: one step taken (t = %ld)", be->name, file, o.t);
  from_backend(be, host, params, L.total);

  double worst = 0.0;
  for (int i = 0; i < L.n; i++) {
    const slab_tensor_t *t = &L.t[i];
    char path[256];
    snprintf(path, sizeof path, "/step1/%s", t->name);
    size_t n;
    double *want = refdata_read(f, path, &n, NULL, NULL);
    double err = refdata_rel_error(host + t->off, want, n);
    if (err > worst) worst = err;
    tap_ok(err <= REF_STEP_TOL, "%s: %s %s (%s) step 1: rel err %.3g", be->name, file, t->name,
           opts.name, err);
    free(want);
  }
  tap_diag("%s: %s: worst step-1 relative error %.3g over %d tensors", be->name, file, worst, L.n);

  optim_free(&o);
  be->free(params);
  be->free(grads);
  slab_free(host);
  slab_layout_free(&L);
  refdata_close(f);
}

// The reader itself: strings, numbers and absent attributes of /config, scalars, existence.
static void check_refdata_reader(void) {
  refdata_t *f = refdata_open_reference("mlp_tiny.h5");
  char *model = refdata_config_string(f, "model");
  tap_ok(strcmp(model, "mlp") == 0, "refdata: mlp_tiny.h5 /config model = '%s'", model);
  free(model);
  tap_ok(refdata_config_number(f, "batch") == 8.0 && refdata_config_number(f, "lr") == 0.1,
         "refdata: /config batch (int64) = 8, lr (float64) = 0.1");
  tap_ok(!refdata_config_has(f, "beta1") && refdata_config_has(f, "momentum"),
         "refdata: /config has momentum, not beta1");
  double loss = refdata_scalar(f, "/forward/loss");
  tap_ok(loss > 2.0 && loss < 2.6, "refdata: /forward/loss %.6f near ln(10) for an untrained net",
         loss);
  tap_ok(refdata_exists(f, "/params/fc1.weight") && !refdata_exists(f, "/params/nope") &&
             !refdata_exists(f, "/nope/fc1.weight"),
         "refdata: exists for a dataset, a missing name and a missing group");
  size_t n, dims[REFDATA_MAX_DIMS];
  int ndim;
  double *x = refdata_read(f, "/inputs/x", &n, dims, &ndim);
  tap_ok(ndim == 4 && dims[0] == 8 && dims[1] == 1 && dims[2] == 28 && dims[3] == 28 && n == 6272,
         "refdata: /inputs/x is (8,1,28,28)");
  free(x);
  refdata_close(f);
}

/* ---- hand-worked examples */

static void check_schedule(void) {
  lr_schedule_t cfg = {.kind = "constant", .lr = 0.1, .steps = 110, .warmup_steps = 10};
  tap_ok(lr_at(&cfg, 0) == 0.1 && lr_at(&cfg, 109) == 0.1,
         "constant schedule: lr 0.1 at steps 0, 109");

  strcpy(cfg.kind, "cosine");
  cfg.min_lr = 0.01;
  // warm-up: lr*(step+1)/10
  tap_ok(near(lr_at(&cfg, 0), 0.01, 1e-15), "cosine: warm-up start lr(0) = 0.01 (got %.17g)",
         lr_at(&cfg, 0));
  tap_ok(near(lr_at(&cfg, 4), 0.05, 1e-15), "cosine: warm-up lr(4) = 0.05 (got %.17g)",
         lr_at(&cfg, 4));
  tap_ok(near(lr_at(&cfg, 9), 0.1, 1e-15), "cosine: end of warm-up lr(9) = 0.1 (got %.17g)",
         lr_at(&cfg, 9));
  // cosine over steps 10..110: progress = (step-10)/100
  tap_ok(near(lr_at(&cfg, 10), 0.1, 1e-15), "cosine: start of decay lr(10) = 0.1 (got %.17g)",
         lr_at(&cfg, 10));
  // progress 1/4: 0.01 + 0.045*(1 + sqrt(2)/2)
  tap_ok(near(lr_at(&cfg, 35), 0.08681980515339463, 1e-15),
         "cosine: lr(35) = 0.0868198... (got %.17g)", lr_at(&cfg, 35));
  tap_ok(near(lr_at(&cfg, 60), 0.055, 1e-15), "cosine: middle lr(60) = 0.055 (got %.17g)",
         lr_at(&cfg, 60));
  // progress 0.99: 0.01 + 0.045*(1 - cos(0.01 pi))
  tap_ok(near(lr_at(&cfg, 109), 0.010022204783542078, 1e-15),
         "cosine: last step lr(109) = 0.0100222... (got %.17g)", lr_at(&cfg, 109));
  tap_ok(near(lr_at(&cfg, 110), 0.01, 1e-15) && near(lr_at(&cfg, 500), 0.01, 1e-15),
         "cosine: end of decay and beyond lr(110) = lr(500) = min_lr 0.01");
  cfg.warmup_steps = 0;
  tap_ok(near(lr_at(&cfg, 0), 0.1, 1e-15), "cosine without warm-up starts at lr (got %.17g)",
         lr_at(&cfg, 0));
}

static void check_clipping(const backend_t *be) {
  enum { N = 100 };
  float host[N], got[N];
  for (int i = 0; i < N; i++)
    host[i] = (i % 2) ? 1.0f : -1.0f; // norm sqrt(100) = 10
  float *g = to_backend(be, host, N);
  tap_ok(near(grad_global_norm(be, g, N), 10.0, 1e-12), "%s: global norm of 100 x (+-1) = 10",
         be->name);

  double before = clip_by_global_norm(be, g, N, 20.0);
  from_backend(be, got, g, N);
  tap_ok(near(before, 10.0, 1e-12) && memcmp(got, host, sizeof host) == 0,
         "%s: norm 10 below max_norm 20: untouched, returns 10", be->name);
  before = clip_by_global_norm(be, g, N, 0.0);
  from_backend(be, got, g, N);
  tap_ok(near(before, 10.0, 1e-12) && memcmp(got, host, sizeof host) == 0,
         "%s: max_norm 0 disables clipping", be->name);

  before = clip_by_global_norm(be, g, N, 1.0);
  double after = grad_global_norm(be, g, N);
  from_backend(be, got, g, N);
  tap_ok(near(before, 10.0, 1e-12), "%s: clip returns the norm before clipping (%.9g)", be->name,
         before);
  tap_ok(near(after, 1.0, 1e-6), "%s: norm 10 clipped to 1: %.9g", be->name, after);
  tap_ok(near(got[1], 0.1, 1e-7) && near(got[0], -0.1, 1e-7),
         "%s: clipping keeps the direction (%.9g, %.9g)", be->name, got[0], got[1]);

  // a tiny norm shows PyTorch's 1e-6 in the denominator: 1e-6 clipped to 1e-7 gives 1e-7 / 2
  for (int i = 0; i < N; i++) host[i] = 1e-7f;
  be->upload(g, host, N);
  clip_by_global_norm(be, g, N, 1e-7);
  after = grad_global_norm(be, g, N);
  tap_ok(near(after, 5e-8, 1e-12), "%s: norm 1e-6 clipped to 1e-7 with the 1e-6 guard: %.6g = 5e-8",
         be->name, after);

  host[3] = NAN;
  be->upload(g, host, N);
  before = clip_by_global_norm(be, g, N, 1.0);
  from_backend(be, got, g, N);
  tap_ok(isnan(before) && got[0] == host[0],
         "%s: non-finite gradients: NaN norm returned, left as they are", be->name);
  be->free(g);
}

// Run `steps` optimizer steps of opts on a small vector, the gradients of step s at grads[s*n].
static void run_steps(const backend_t *be, const optim_opts_t *opts, int n, float *p, const float *grads,
                      int steps, optim_t *o) {
  float *dp = to_backend(be, p, (size_t)n);
  float *dg = be->alloc((size_t)n);
  optim_init(o, *opts, be, (size_t)n);
  for (int s = 0; s < steps; s++) {
    be->upload(dg, grads + (size_t)s * n, (size_t)n);
    optim_step(o, dp, dg, (float)opts->schedule.lr);
  }
  from_backend(be, p, dp, (size_t)n);
  be->free(dp);
  be->free(dg);
}

static void sgd_config(optim_opts_t *o, double lr, double momentum, int nesterov, double wd) {
  *o = (optim_opts_t){.name = "sgd", .schedule = {.kind = "constant", .lr = lr}};
  o->momentum = momentum;
  o->nesterov = nesterov;
  o->weight_decay = wd;
}

static void check_sgd_plain(const backend_t *be) {
  optim_opts_t cfg;
  sgd_config(&cfg, 0.1, 0.0, 0, 0.0);
  float p[2] = {1.0f, -2.0f};
  const float g[4] = {0.5f, 0.25f, 0.5f, 0.25f};
  optim_t o;
  run_steps(be, &cfg, 2, p, g, 2, &o);
  // p -= 0.1 g twice: 1 - 0.1 = 0.9, -2 - 0.05 = -2.05
  tap_ok(o.m == NULL && near(p[0], 0.9, HAND_TOL) && near(p[1], -2.05, HAND_TOL),
         "%s: SGD without momentum, 2 steps: (%.7g, %.7g) = (0.9, -2.05), no buffer", be->name,
         p[0], p[1]);
  optim_free(&o);

  // L2 weight decay 0.5 added to the gradient: g' = (0.5 + 0.5, 0.25 - 1) = (1, -0.75)
  sgd_config(&cfg, 0.1, 0.0, 0, 0.5);
  p[0] = 1.0f, p[1] = -2.0f;
  run_steps(be, &cfg, 2, p, g, 1, &o);
  tap_ok(near(p[0], 0.9, HAND_TOL) && near(p[1], -1.925, HAND_TOL),
         "%s: SGD weight decay 0.5, 1 step: (%.7g, %.7g) = (0.9, -1.925)", be->name, p[0], p[1]);
  optim_free(&o);
}

static void check_sgd_nesterov(const backend_t *be) {
  // p0 = (1, -1); g1 = (1, 2); g2 = (0.5, -1); lr 0.1, momentum 0.9
  const float g[4] = {1.0f, 2.0f, 0.5f, -1.0f};
  optim_opts_t cfg;
  optim_t o;
  float plain[2] = {1.0f, -1.0f}, nest[2] = {1.0f, -1.0f};
  // plain: buf1 = g1 = (1, 2), p1 = (0.9, -1.2); buf2 = 0.9 buf1 + g2 = (1.4, 0.8), p2 = (0.76,
  // -1.28)
  sgd_config(&cfg, 0.1, 0.9, 0, 0.0);
  run_steps(be, &cfg, 2, plain, g, 2, &o);
  float buf[2];
  from_backend(be, buf, o.m, 2);
  tap_ok(near(plain[0], 0.76, HAND_TOL) && near(plain[1], -1.28, HAND_TOL),
         "%s: SGD momentum, 2 steps: (%.7g, %.7g) = (0.76, -1.28)", be->name, plain[0], plain[1]);
  tap_ok(near(buf[0], 1.4, HAND_TOL) && near(buf[1], 0.8, HAND_TOL),
         "%s: SGD momentum buffer after 2 steps (%.7g, %.7g) = (1.4, 0.8)", be->name, buf[0],
         buf[1]);
  optim_free(&o);
  // Nesterov steps g + 0.9 buf: (1.9, 3.8) -> p1 = (0.81, -1.38); (1.76, -0.28) -> p2 = (0.634,
  // -1.352)
  sgd_config(&cfg, 0.1, 0.9, 1, 0.0);
  run_steps(be, &cfg, 2, nest, g, 2, &o);
  tap_ok(near(nest[0], 0.634, HAND_TOL) && near(nest[1], -1.352, HAND_TOL),
         "%s: SGD Nesterov, 2 steps: (%.7g, %.7g) = (0.634, -1.352)", be->name, nest[0], nest[1]);
  optim_free(&o);
  tap_ok(near(plain[0] - nest[0], 0.126, HAND_TOL) && near(plain[1] - nest[1], 0.072, HAND_TOL),
         "%s: plain - Nesterov after 2 steps = (0.126, 0.072)", be->name);
}

static void check_adamw(const backend_t *be) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const double g1 = 0.5, g2 = -0.25;
  // by hand, in double: decay first, then the bias-corrected moments of step t
  double p = 1.0;
  p *= 1.0 - lr * wd; // 0.999
  double m = (1.0 - b1) * g1; // 0.05
  double v = (1.0 - b2) * g1 * g1; // 0.0125
  p -= lr * (m / (1.0 - b1)) / (sqrt(v / (1.0 - b2)) + eps); // mhat 0.5, sqrt(vhat) 0.5
  const double p1 = p; // 0.98900000002
  p *= 1.0 - lr * wd;
  m = b1 * m + (1.0 - b1) * g2; // 0.02
  v = b2 * v + (1.0 - b2) * g2 * g2; // 0.015
  p -= lr * (m / (1.0 - b1 * b1)) / (sqrt(v / (1.0 - b2 * b2)) + eps); // bc1 0.19, bc2 0.0975
  const double p2 = p;

  optim_opts_t cfg = {.name = "adamw", .schedule = {.kind = "constant", .lr = lr}};
  cfg.beta1 = b1, cfg.beta2 = b2, cfg.eps = eps, cfg.weight_decay = wd;
  const float grads[2] = {(float)g1, (float)g2};
  optim_t o;
  float x = 1.0f;
  run_steps(be, &cfg, 1, &x, grads, 1, &o);
  tap_ok(near(x, p1, HAND_TOL), "%s: AdamW step 1: %.9g, by hand %.9g", be->name, x, p1);
  optim_free(&o);

  x = 1.0f;
  run_steps(be, &cfg, 1, &x, grads, 2, &o);
  float mv[2];
  from_backend(be, &mv[0], o.m, 1);
  from_backend(be, &mv[1], o.v, 1);
  tap_ok(near(x, p2, HAND_TOL),
         "%s: AdamW step 2 (bias corrections 0.19, 0.0975): %.9g, by hand %.9g", be->name, x, p2);
  tap_ok(near(mv[0], m, HAND_TOL) && near(mv[1], v, HAND_TOL) && o.t == 2,
         "%s: AdamW moments after 2 steps m %.9g v %.9g (by hand %.9g %.9g), t = %ld", be->name,
         mv[0], mv[1], m, v, o.t);
  optim_free(&o);
}

/* [train] decay = matrices: weight decay on the tensors of 2 or more dimensions only. A slab of a 2 x 3
 * weight, a bias of 3, a norm weight of 2 (adjoining vectors: one span) and a 2 x 2 weight, every
 * parameter 1 and every gradient 0: one step of each optimizer multiplies the matrices' floats by
 * 1 - lr wd (AdamW's update is 0 there; SGD's L2 gradient is wd p) and leaves the vectors as they
 * are, whole and through a step of a part [4, 13) that cuts both kinds; decay = all decays them all. */
static void check_decay_matrices(const backend_t *be) {
  slab_layout_t L;
  slab_layout_init(&L);
  const int w[2] = {2, 3}, b[1] = {3}, g[1] = {2}, w2[2] = {2, 2};
  slab_layout_add(&L, "w", 2, w, 0);
  slab_layout_add(&L, "b", 1, b, 0);
  slab_layout_add(&L, "ln.weight", 1, g, 0);
  slab_layout_add(&L, "w2", 2, w2, 0);
  const size_t n = L.total;
  const double lr = 0.1, wd = 0.5, kept = 1.0 - lr * wd;
  for (int k = 0; k < 2 * 2 * 2; k++) {
    const int adamw = k & 1, part = (k >> 1) & 1, matrices = k >> 2;
    optim_opts_t cfg = {.name = "sgd", .decay = "all", .schedule = {.kind = "constant", .lr = lr}};
    if (adamw) snprintf(cfg.name, sizeof cfg.name, "adamw"), cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8;
    if (matrices) snprintf(cfg.decay, sizeof cfg.decay, "matrices");
    cfg.weight_decay = wd;
    float host[16], zero[16] = {0};
    for (size_t i = 0; i < n; i++) host[i] = 1.0f;
    float *dp = to_backend(be, host, n), *dg = to_backend(be, zero, n);
    optim_t o;
    optim_init(&o, cfg, be, n);
    optim_exempt_vectors(&o, &L);
    const size_t lo = part ? 4 : 0, hi = part ? 13 : n;
    optim_step_part(&o, dp, dg, (float)lr, NULL, lo, hi);
    from_backend(be, host, dp, n);
    int ok = o.nundecayed == (matrices ? 1 : 0);
    for (size_t i = 0; i < n; i++) {
      const int vector = i >= 6 && i < 11, stepped = i >= lo && i < hi;
      const double want = stepped && !(matrices && vector) ? kept : 1.0;
      ok &= fabs(host[i] - want) <= HAND_TOL;
    }
    tap_ok(ok, "%s: %s, decay = %s, a step of [%zu, %zu): matrices' floats x %.2f, the bias and norm weight %s",
           be->name, cfg.name, cfg.decay, lo, hi, kept, matrices ? "kept" : "decayed too");
    optim_free(&o);
    be->free(dp);
    be->free(dg);
  }
  slab_layout_free(&L);
}

/* One double of backend memory, zero (the trainer's accumulators), and its value on the host as it
 * is freed. */
static double *acc_new(const backend_t *be) { return (double *)(void *)be->alloc(2); }
static double acc_take(const backend_t *be, double *acc) {
  double v;
  be->download((float *)(void *)&v, (const float *)(void *)acc, 2);
  be->free((float *)(void *)acc);
  return v;
}

static double norm_part_value(const backend_t *be, const float *g, size_t lo, size_t hi, const norm_plan_t *p) {
  double *acc = acc_new(be);
  norm_part(be, g, lo, hi, p, acc);
  return acc_take(be, acc);
}

static double update_sumsq_value(optim_t *o, float *p, const float *g, size_t lo, size_t hi, const size_t *ranges,
                                 int nranges) {
  double *acc = acc_new(o->be);
  optim_step_part_sumsq(o, p, g, 0.05f, lo, hi, ranges, nranges, acc);
  return acc_take(o->be, acc);
}

static double ranges_sumsq_value(optim_t *o, float *p, const float *g, float lr, const size_t *upd, int nupd) {
  double *acc = acc_new(o->be);
  optim_step_ranges(o, p, g, lr, NULL, upd, nupd, NULL, 0, acc);
  return acc_take(o->be, acc);
}

/* norm_ranges_merge sorts ranges and merges those that touch or overlap, dropping empty ones;
 * norm_part sums the squares over the ranges within [lo, hi) (or over all of it without ranges), and
 * norm_update gives the same from the update's pass. */
static void check_norm_plan(const backend_t *be) {
  size_t r[] = {50, 60, 10, 20, 20, 30, 5, 5, 55, 70, 80, 90};
  int n = norm_ranges_merge(r, 6);
  tap_ok(n == 3 && r[0] == 10 && r[1] == 30 && r[2] == 50 && r[3] == 70 && r[4] == 80 && r[5] == 90,
         "norm_ranges_merge: 6 ranges (one empty, two touching, two overlapping) to 3: [%zu,%zu) [%zu,%zu) [%zu,%zu)",
         r[0], r[1], r[2], r[3], r[4], r[5]);
  enum { N = 100 };
  float g[N];
  double all = 0, in = 0;
  for (int i = 0; i < N; i++) {
    g[i] = (float)(i % 5) - 1.5f;
    if (i >= 15 && i < 85) all += (double)g[i] * g[i];
    if ((i >= 15 && i < 30) || (i >= 50 && i < 70) || (i >= 80 && i < 85)) in += (double)g[i] * g[i];
  }
  float *dg = to_backend(be, g, N), *dp = to_backend(be, g, N);
  norm_plan_t whole = {0}, ranged = {.ranges = r, .nranges = n};
  double got_all = norm_part_value(be, dg, 15, 85, &whole), got_in = norm_part_value(be, dg, 15, 85, &ranged);
  optim_opts_t cfg;
  sgd_config(&cfg, 0.05, 0, 0, 0);
  optim_t o;
  optim_init(&o, cfg, be, N);
  double *acc = acc_new(be);
  norm_update(&o, dp, dg, 0.05f, 15, 85, &ranged, acc);
  double fused = acc_take(be, acc);
  tap_ok(fabs(got_all - all) <= 1e-12 * all && fabs(got_in - in) <= 1e-12 * in && fabs(fused - in) <= 1e-12 * in,
         "%s: norm_part over [15, 85) %.6g (%.6g), over the ranges clipped to it %.6g (%.6g); from the update %.6g",
         be->name, got_all, all, got_in, in, fused);
  optim_free(&o);
  be->free(dg);
  be->free(dp);
}

/* optim_step_part_sumsq (the update that also gives the gradients' sum of squares, block by block on
 * a host backend) leaves parameters and moments bitwise those of optim_step_part over the same
 * range, two steps of SGD with momentum and of AdamW, and returns the sum of squares of exactly the
 * range's gradients (a range that starts past 0, ends before the slab's end and spans blocks), or of
 * those in a list of ranges (one across a block boundary). */
static void check_update_sumsq(const backend_t *be) {
  enum { N = 10007, LO = 3, HI = 9990 };
  float *p0 = xcalloc(N, sizeof *p0), *g = xcalloc(N, sizeof *g), *pa = xcalloc(N, sizeof *pa),
        *pb = xcalloc(N, sizeof *pb), *ma = xcalloc(N, sizeof *ma), *mb = xcalloc(N, sizeof *mb);
  /* ranges: the first block's start, across a block boundary (blocks of 4096 from LO), the tail */
  const size_t ranges[6] = {LO, 100, 4000, 4200, 9000, HI};
  double want = 0, want_ranges = 0;
  for (int i = 0; i < N; i++) {
    p0[i] = (float)sin(0.37 * i);
    g[i] = (float)cos(1.3 * i) * (i % 7 == 0 ? 100.0f : 1.0f);
    if (i >= LO && i < HI) want += (double)g[i] * (double)g[i];
    for (int r = 0; r < 3; r++)
      if ((size_t)i >= ranges[2 * r] && (size_t)i < ranges[2 * r + 1]) want_ranges += (double)g[i] * (double)g[i];
  }
  for (int kind = 0; kind < 2; kind++) {
    optim_opts_t cfg;
    sgd_config(&cfg, 0.05, 0.9, 0, 0.01);
    if (kind == 1) {
      cfg = (optim_opts_t){.name = "adamw", .schedule = {.kind = "constant", .lr = 0.01}};
      cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weight_decay = 0.1;
    }
    float *dpa = to_backend(be, p0, N), *dpb = to_backend(be, p0, N), *dg = to_backend(be, g, N);
    optim_t a, b;
    optim_init(&a, cfg, be, N);
    optim_init(&b, cfg, be, N);
    double got[2], in_ranges = 0;
    for (int step = 0; step < 2; step++) {
      optim_step_part(&a, dpa, dg, 0.05f, NULL, LO, HI);
      got[step] = update_sumsq_value(&b, dpb, dg, LO, HI, NULL, 0);
    }
    { /* a third step over the ranges only: the same parameters again, the squares of the ranges */
      optim_step_part(&a, dpa, dg, 0.05f, NULL, LO, HI);
      in_ranges = update_sumsq_value(&b, dpb, dg, LO, HI, ranges, 3);
    }
    from_backend(be, pa, dpa, N);
    from_backend(be, pb, dpb, N);
    from_backend(be, ma, a.m, N);
    from_backend(be, mb, b.m, N);
    int same = memcmp(pa, pb, N * sizeof *pa) == 0 && memcmp(ma, mb, N * sizeof *ma) == 0;
    { /* a fourth step over the ranges only (optim_step_ranges): those floats as the whole range's
       * update gives them, the others (parameters and moments) untouched, one step counted */
      double only = ranges_sumsq_value(&b, dpb, dg, 0.05f, ranges, 3);
      double none = ranges_sumsq_value(&b, dpb, dg, 0.0f, ranges, 0);
      optim_step_part(&a, dpa, dg, 0.05f, NULL, LO, HI);
      float *qa = xcalloc(N, sizeof *qa), *qb = xcalloc(N, sizeof *qb), *na = xcalloc(N, sizeof *na),
            *nb = xcalloc(N, sizeof *nb);
      from_backend(be, qa, dpa, N);
      from_backend(be, qb, dpb, N);
      from_backend(be, na, a.m, N);
      from_backend(be, nb, b.m, N);
      int in = 0, out = 0, inside_ok = 1, outside_ok = 1;
      for (int i = 0; i < N; i++) {
        int r = 0;
        while (r < 3 && !((size_t)i >= ranges[2 * r] && (size_t)i < ranges[2 * r + 1])) r++;
        if (r < 3) {
          in++;
          inside_ok &= qa[i] == qb[i] && na[i] == nb[i];
        } else {
          out++;
          outside_ok &= qb[i] == pb[i] && nb[i] == mb[i];
        }
      }
      tap_ok(inside_ok && outside_ok && in > 0 && out > 0 && b.t == 5 && none == 0 &&
                 fabs(only - want_ranges) <= 1e-12 * want_ranges,
             "%s: %s update of 3 ranges only: %d floats as the whole update's, %d untouched, t %ld, sum of squares "
             "%.15g (%.15g)", be->name, cfg.name, in, out, b.t, only, want_ranges);
      free(qa), free(qb), free(na), free(nb);
    }
    tap_ok(same && a.t + 1 == b.t &&
               fabs(got[0] - want) <= 1e-12 * want && got[1] == got[0] &&
               fabs(in_ranges - want_ranges) <= 1e-12 * want_ranges,
           "%s: %s update with the sum of squares: parameters and moments bitwise the plain update's, sum of "
           "squares %.15g (in double %.15g), over 3 ranges %.15g (%.15g)", be->name, cfg.name, got[0], want,
           in_ranges, want_ranges);
    optim_free(&a);
    optim_free(&b);
    be->free(dpa), be->free(dpb), be->free(dg);
  }
  free(p0), free(g), free(pa), free(pb), free(ma), free(mb);
}

/* optim_init_ranges (a sharded optimizer's state over several ranges of the slab, sync/shard.h): the
 * moments of the ranges' floats one after the other; 3 AdamW steps over the ranges leave parameters
 * and moments bitwise a whole-slab optimizer's doing the same, the rest of the slab untouched, and the
 * state's bytes are 2 moments of the ranges' floats alone. */
static void check_state_ranges(const backend_t *be) {
  enum { N = 10007 };
  const size_t ranges[6] = {3, 100, 4000, 4200, 9000, 9990}, floats = 97 + 200 + 990;
  float *p0 = xcalloc(N, sizeof *p0), *g = xcalloc(N, sizeof *g), *pa = xcalloc(N, sizeof *pa),
        *pb = xcalloc(N, sizeof *pb), *ma = xcalloc(N, sizeof *ma), *mb = xcalloc(floats, sizeof *mb),
        *va = xcalloc(N, sizeof *va), *vb = xcalloc(floats, sizeof *vb);
  for (int i = 0; i < N; i++) p0[i] = (float)sin(0.37 * i), g[i] = (float)cos(1.3 * i);
  optim_opts_t cfg = {.name = "adamw", .schedule = {.kind = "constant", .lr = 0.01}};
  cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weight_decay = 0.1;
  float *dpa = to_backend(be, p0, N), *dpb = to_backend(be, p0, N), *dg = to_backend(be, g, N);
  optim_t a, b;
  optim_init(&a, cfg, be, N);
  optim_init_ranges(&b, cfg, be, N, ranges, 3);
  const float half = 0.5f;
  float *gs = to_backend(be, &half, 1); /* a clipping factor, in backend memory */
  for (int step = 0; step < 3; step++) {
    optim_step_ranges(&a, dpa, dg, 0.05f, gs, ranges, 3, NULL, 0, NULL);
    optim_step_ranges(&b, dpb, dg, 0.05f, gs, ranges, 3, NULL, 0, NULL);
  }
  be->free(gs);
  from_backend(be, pa, dpa, N);
  from_backend(be, pb, dpb, N);
  from_backend(be, ma, a.m, N);
  from_backend(be, va, a.v, N);
  from_backend(be, mb, b.m, floats);
  from_backend(be, vb, b.v, floats);
  int ok = memcmp(pa, pb, N * sizeof *pa) == 0 && b.floats == floats &&
           optim_state_bytes(&b) == 2 * sizeof(float) * floats && pb[0] == p0[0] && pb[N - 1] == p0[N - 1];
  for (int r = 0, at = 0; r < 3; r++)
    for (size_t i = ranges[2 * r]; i < ranges[2 * r + 1]; i++, at++) ok &= ma[i] == mb[at] && va[i] == vb[at];
  tap_ok(ok, "%s: adamw state over 3 ranges (%zu floats, %zu bytes): 3 steps bitwise a whole-slab optimizer's "
         "parameters and moments there, the rest untouched", be->name, b.floats, optim_state_bytes(&b));
  optim_free(&a);
  optim_free(&b);
  be->free(dpa), be->free(dpb), be->free(dg);
  free(p0), free(g), free(pa), free(pb), free(ma), free(mb), free(va), free(vb);
}

int main(void) {
  check_refdata_reader();
  check_schedule();
  const char *backends[] = {"ref", "cpu"};
  const char *files[] = {"mlp_tiny.h5", "cnn_tiny.h5", "gpt_tiny.h5"};
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    const backend_t *be = backend_find(backends[b]);
    if (!tap_ok(be != NULL, "backend %s is compiled in", backends[b])) continue;
    check_clipping(be);
    check_sgd_plain(be);
    check_sgd_nesterov(be);
    check_adamw(be);
    check_decay_matrices(be);
    check_update_sumsq(be);
    check_norm_plan(be);
    check_state_ranges(be);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
      check_reference_step(be, files[i]);
  }
  return tap_done();
}
