/* The transformer-family layers (layernorm, embed, attention, tied_linear): finite-difference
 * gradient checks on the "ref" backend, mutants that the check must catch, hand-computed values,
 * cpu-vs-ref agreement, causality of attention, shape errors, and the embedding's tensor names. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "gradcheck.h"
#include "nn/graph.h"
#include "nn/layer.h"
#include "tap.h"

/* ---- layer prototypes (in_shape and hyperparameters set, as graph_add would) */


static layer_t layernorm_proto(shape_t in) { return gradcheck_proto(LAYER_LAYERNORM, in); }

static layer_t embed_proto(int T, int vocab, int context, int C) {
  layer_t l = gradcheck_proto(LAYER_EMBED, shape1(T));
  l.vocab = vocab;
  l.context = context;
  l.out_features = C;
  return l;
}

static layer_t attention_proto(int T, int C, int heads) {
  layer_t l = gradcheck_proto(LAYER_ATTENTION, shape2(T, 3 * C));
  l.heads = heads;
  return l;
}

static layer_t tied_proto(shape_t in, int vocab, int C) {
  layer_t l = gradcheck_proto(LAYER_TIED_LINEAR, in);
  l.vocab = vocab;
  l.out_features = C;
  return l;
}

static const char *desc(const layer_t *l, char *buf, size_t n) {
  char s[64];
  shape_str(l->in_shape[0], s, sizeof s);
  switch (l->kind) {
  case LAYER_EMBED: snprintf(buf, n, "embed T=%d V=%d context=%d C=%d", l->in_shape[0].d[0], l->vocab,
                             l->context, l->out_features); break;
  case LAYER_ATTENTION: snprintf(buf, n, "attention in %s H=%d", s, l->heads); break;
  case LAYER_TIED_LINEAR: snprintf(buf, n, "tied_linear in %s V=%d", s, l->vocab); break;
  default: snprintf(buf, n, "%s in %s", layer_kind_name(l->kind), s); break;
  }
  return buf;
}

/* ---- gradient checks */

static void check_gradients(layer_t l, int B, uint64_t seed) {
  char d[128];
  gradcheck_result_t r = gradcheck_layer(layer_ops_of(l.kind), l, B, &backend_ref, seed);
  tap_ok(r.tensors_checked > 0 && r.max_rel_err < GRADCHECK_TOL,
         "gradcheck %s B=%d: max_rel_err %.2e (worst %s, %d tensors)", desc(&l, d, sizeof d), B,
         r.max_rel_err, r.worst, r.tensors_checked);
}

/* ---- mutants: a backward that runs the real one, then corrupts something. The check must fail. */

static backend_t mutant_be;

/* Calls the real backward with the mutant backend. */
static void backward_on_mutant_backend(const layer_t *l, const layer_ctx_t *c) {
  layer_ctx_t m = *c;
  m.be = &mutant_be;
  layer_ops_of(l->kind)->backward(l, &m);
}

/* dS without the subtraction term: scale * p * dp. */
static void softmax_bwd_missing_term(int BH, int T, float scale, const float *p, const float *dp, float *ds) {
  backend_ref.causal_softmax_bwd(BH, T, scale, p, dp, ds);
  for (size_t row = 0; row < (size_t)BH * T; row++) {
    double dot = 0;
    for (int k = 0; k < T; k++) dot += (double)p[row * T + k] * dp[row * T + k];
    for (int j = 0; j < T; j++) ds[row * T + j] += (float)(scale * p[row * T + j] * dot);
  }
}

/* dS transposed in each (T,T) block: dQ and dK take the wrong (anti-causal) path. */
static void softmax_bwd_transposed(int BH, int T, float scale, const float *p, const float *dp, float *ds) {
  backend_ref.causal_softmax_bwd(BH, T, scale, p, dp, ds);
  for (int bh = 0; bh < BH; bh++) {
    float *s = ds + (size_t)bh * T * T;
    for (int i = 0; i < T; i++)
      for (int j = i + 1; j < T; j++) {
        float t = s[i * T + j];
        s[i * T + j] = s[j * T + i];
        s[j * T + i] = t;
      }
  }
}

/* dS without the 1/sqrt(hs) factor. */
static void softmax_bwd_unscaled(int BH, int T, float scale, const float *p, const float *dp, float *ds) {
  (void)scale;
  backend_ref.causal_softmax_bwd(BH, T, 1.0f, p, dp, ds);
}

static float saved[64]; /* a layernorm mutant's gradient before backward (C <= 64) */

/* Layernorm whose weight gradient has the wrong sign: dw = before - contribution. */
static void layernorm_bwd_flipped_dw(const layer_t *l, const layer_ctx_t *c) {
  size_t C = (size_t)l->pdesc[0].d[0];
  memcpy(saved, c->dw[0], C * sizeof *saved);
  layer_layernorm_ops.backward(l, c);
  c->be->scale(c->dw[0], C, -1.0f);
  c->be->axpy(C, 2.0f, saved, c->dw[0]);
}

/* Layernorm that forgets the bias gradient. */
static void layernorm_bwd_no_db(const layer_t *l, const layer_ctx_t *c) {
  size_t C = (size_t)l->pdesc[0].d[0];
  memcpy(saved, c->dw[1], C * sizeof *saved);
  layer_layernorm_ops.backward(l, c);
  memcpy(c->dw[1], saved, C * sizeof *saved);
}

typedef void (*backward_fn)(const layer_t *, const layer_ctx_t *);

static void check_mutant(const char *what, layer_t l, backward_fn backward) {
  layer_ops_t ops = *layer_ops_of(l.kind);
  ops.backward = backward;
  gradcheck_result_t r = gradcheck_layer(&ops, l, 2, &backend_ref, 99);
  tap_ok(r.max_rel_err > GRADCHECK_TOL, "mutant %s caught: max_rel_err %.2e (worst %s)", what,
         r.max_rel_err, r.worst);
}

/* The attention backward composed from the mutant backend's ops, the T x T way (its causal softmax
 * backward is the mutant's): S = Q K^T, P = causal softmax, dP = dY V^T, dV += P^T dY, dS,
 * dQ += dS K, dK += dS^T Q. With ref's own softmax backward it passes the gradient check. */
static void composed_attention_bwd(int B, int T, int C, int H, const float *qkv, const float *y, const float *lse,
                                   const float *dy, float *dqkv, int dx_write, float *ws, size_t ws_n) {
  (void)y, (void)lse, (void)ws, (void)ws_n, (void)dx_write; /* the gradient check adds into dqkv */
  const backend_t *be = &mutant_be;
  const int hs = C / H, ld = 3 * C;
  const size_t tt = (size_t)T * T, probs = (size_t)H * tt, qkv_n = (size_t)T * ld, out = (size_t)T * C;
  float *S = calloc(3 * (size_t)B * probs, sizeof *S), *P = S + (size_t)B * probs, *dP = P + (size_t)B * probs;
  gemm_grid_t g = {{B, H}, {qkv_n, (size_t)hs}, {qkv_n, (size_t)hs}, {probs, tt}};
  be->gemm_grid(0, 1, T, T, hs, 1.0f, qkv, ld, qkv + C, ld, 0.0f, S, T, &g);
  be->causal_softmax_fwd(B * H, T, 1.0f / sqrtf((float)hs), S, P);
  g = (gemm_grid_t){{B, H}, {out, (size_t)hs}, {qkv_n, (size_t)hs}, {probs, tt}};
  be->gemm_grid(0, 1, T, T, hs, 1.0f, dy, C, qkv + 2 * C, ld, 0.0f, dP, T, &g);
  g = (gemm_grid_t){{B, H}, {probs, tt}, {out, (size_t)hs}, {qkv_n, (size_t)hs}};
  be->gemm_grid(1, 0, T, hs, T, 1.0f, P, T, dy, C, 1.0f, dqkv + 2 * C, ld, &g);
  be->causal_softmax_bwd(B * H, T, 1.0f / sqrtf((float)hs), P, dP, S);
  g = (gemm_grid_t){{B, H}, {probs, tt}, {qkv_n, (size_t)hs}, {qkv_n, (size_t)hs}};
  be->gemm_grid(0, 0, T, hs, T, 1.0f, S, T, qkv + C, ld, 1.0f, dqkv, ld, &g);
  be->gemm_grid(1, 0, T, hs, T, 1.0f, S, T, qkv, ld, 1.0f, dqkv + C, ld, &g);
  free(S);
}

static void check_attention_mutant(const char *what,
                                   void (*bwd)(int, int, float, const float *, const float *, float *)) {
  mutant_be = backend_ref;
  mutant_be.causal_softmax_bwd = bwd;
  mutant_be.attention_bwd = composed_attention_bwd;
  check_mutant(what, attention_proto(6, 8, 2), backward_on_mutant_backend);
}

/* The composition itself, with ref's softmax backward, passes: a caught mutant is its mutation. */
static void check_attention_composed(void) {
  layer_t l = attention_proto(6, 8, 2);
  layer_ops_t ops = *layer_ops_of(l.kind);
  ops.backward = backward_on_mutant_backend;
  mutant_be = backend_ref;
  mutant_be.attention_bwd = composed_attention_bwd;
  gradcheck_result_t r = gradcheck_layer(&ops, l, 2, &backend_ref, 99);
  tap_ok(r.max_rel_err <= GRADCHECK_TOL, "attention backward composed of ref's T x T ops (the mutants' base) passes: "
         "max_rel_err %.2e", r.max_rel_err);
}

/* ---- running a layer on a backend with host data */

typedef struct run_io {
  int B;
  size_t nx, ny, nw[LAYER_MAX_PARAMS];
  int nw_count;
  float *x, *w[LAYER_MAX_PARAMS], *dy;                  /* inputs (host) */
  float *y, *dx, *dw[LAYER_MAX_PARAMS];                 /* outputs (host) */
} run_io_t;

static void io_init(run_io_t *io, layer_t *l, int B, uint64_t seed) {
  char err[200];
  if (layer_ops_of(l->kind)->infer(l, err, sizeof err)) {
    fprintf(stderr, "infer failed: %s\n", err);
    exit(1);
  }
  memset(io, 0, sizeof *io);
  rng_t rng;
  rng_seed(&rng, seed);
  io->B = B;
  io->nx = (size_t)B * shape_size(l->in_shape[0]);
  io->ny = (size_t)B * shape_size(l->out);
  io->x = calloc(io->nx, sizeof(float));
  if (l->kind == LAYER_EMBED)
    for (size_t i = 0; i < io->nx; i++) io->x[i] = (float)rng_below(&rng, (uint64_t)l->vocab);
  else
    rng_fill_normal(&rng, io->x, io->nx, 0.0f, 1.0f);
  io->nw_count = l->kind == LAYER_TIED_LINEAR ? 1 : l->np;
  for (int k = 0; k < io->nw_count; k++) {
    if (l->kind == LAYER_TIED_LINEAR) {
      io->nw[k] = (size_t)l->vocab * l->out_features;
    } else {
      io->nw[k] = 1;
      for (int i = 0; i < l->pdesc[k].ndim; i++) io->nw[k] *= (size_t)l->pdesc[k].d[i];
    }
    io->w[k] = calloc(io->nw[k], sizeof(float));
    rng_fill_normal(&rng, io->w[k], io->nw[k], 0.0f, 0.5f);
    io->dw[k] = calloc(io->nw[k], sizeof(float));
  }
  io->dy = calloc(io->ny, sizeof(float));
  rng_fill_normal(&rng, io->dy, io->ny, 0.0f, 1.0f);
  io->y = calloc(io->ny, sizeof(float));
  io->dx = calloc(io->nx, sizeof(float));
}

static void io_free(run_io_t *io) {
  free(io->x), free(io->dy), free(io->y), free(io->dx);
  for (int k = 0; k < io->nw_count; k++) free(io->w[k]), free(io->dw[k]);
}

static float *to_backend(const backend_t *be, const float *host, size_t n) {
  float *p = be->alloc(n + 1);
  be->upload(p, host, n);
  return p;
}

/* How run_layer calls backward. */
typedef enum run_mode {
  RUN_FORWARD,  /* forward only */
  RUN_BACKWARD, /* forward and backward on the whole batch */
  RUN_SPLIT,    /* forward on the whole batch, backward on samples [0,1) then [1,B) */
  RUN_NO_DX,    /* backward with dx[0] = NULL (only parameter gradients) */
} run_mode_t;

/* Forward (and backward, per `mode`) of `l` on `be`: io->y, io->dx, io->dw are written (gradients
 * start from zero). */
static void run_layer(const backend_t *be, const layer_t *l, run_io_t *io, run_mode_t mode) {
  const layer_ops_t *ops = layer_ops_of(l->kind);
  layer_ctx_t c;
  memset(&c, 0, sizeof c);
  c.be = be;
  c.B = io->B;
  c.x[0] = to_backend(be, io->x, io->nx);
  for (int k = 0; k < io->nw_count; k++) c.w[k] = to_backend(be, io->w[k], io->nw[k]);
  c.y = be->alloc(io->ny);
  c.aux = be->alloc((size_t)io->B * l->aux_per_sample + 1);
  c.scratch = be->alloc(layer_scratch_floats(l, c.B) + 1);
  ops->forward(l, &c);
  be->download(io->y, c.y, io->ny);
  if (mode != RUN_FORWARD) {
    c.dy = to_backend(be, io->dy, io->ny);
    float *dx = be->alloc(io->nx);
    if (l->kind != LAYER_EMBED && mode != RUN_NO_DX) c.dx[0] = dx;
    for (int k = 0; k < io->nw_count; k++) c.dw[k] = be->alloc(io->nw[k]);
    if (mode == RUN_SPLIT) {
      /* samples [0,1) then [1,B): every per-sample pointer moves by one sample */
      size_t in1 = shape_size(l->in_shape[0]), out1 = shape_size(l->out);
      layer_ctx_t rest = c;
      c.B = 1;
      ops->backward(l, &c);
      rest.B = io->B - 1;
      rest.x[0] += in1;
      rest.y += out1;
      rest.dy += out1;
      rest.aux += l->aux_per_sample;
      if (rest.dx[0]) rest.dx[0] += in1;
      ops->backward(l, &rest);
    } else {
      ops->backward(l, &c);
    }
    be->download(io->dx, dx, io->nx);
    for (int k = 0; k < io->nw_count; k++) {
      be->download(io->dw[k], c.dw[k], io->nw[k]);
      be->free(c.dw[k]);
    }
    be->free((float *)c.dy);
    be->free(dx);
  }
  be->free((float *)c.x[0]);
  for (int k = 0; k < io->nw_count; k++) be->free((float *)c.w[k]);
  be->free(c.y), be->free(c.aux), be->free(c.scratch);
}

/* max |a - b| / max |b| */
static double rel_diff(const float *a, const float *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num = fmax(num, fabs((double)a[i] - b[i]));
    den = fmax(den, fabs((double)b[i]));
  }
  return num / fmax(den, 1e-30);
}

static void check_cpu_vs_ref(const backend_t *cpu, layer_t l, int B) {
  char d[128];
  run_io_t ref, got;
  io_init(&ref, &l, B, 7);
  io_init(&got, &l, B, 7);
  run_layer(&backend_ref, &l, &ref, RUN_BACKWARD);
  run_layer(cpu, &l, &got, RUN_BACKWARD);
  double ey = rel_diff(got.y, ref.y, ref.ny);
  double eg = l.kind == LAYER_EMBED ? 0 : rel_diff(got.dx, ref.dx, ref.nx);
  for (int k = 0; k < ref.nw_count; k++) eg = fmax(eg, rel_diff(got.dw[k], ref.dw[k], ref.nw[k]));
  tap_ok(ey <= 1e-5, "cpu vs ref forward %s: rel diff %.2e", desc(&l, d, sizeof d), ey);
  tap_ok(eg <= 1e-5, "cpu vs ref backward %s: rel diff %.2e", d, eg);
  io_free(&ref);
  io_free(&got);
}

/* Backward over two sample ranges, and without an input gradient, gives the gradients of one
 * whole-batch backward (aux is laid out per sample). */
static double grad_diff(const run_io_t *a, const run_io_t *b, int with_dx) {
  double e = with_dx ? rel_diff(a->dx, b->dx, a->nx) : 0;
  for (int k = 0; k < a->nw_count; k++) e = fmax(e, rel_diff(a->dw[k], b->dw[k], a->nw[k]));
  return e;
}

static void check_sample_ranges(layer_t l, int B) {
  char d[128];
  run_io_t whole, split, no_dx;
  io_init(&whole, &l, B, 13);
  io_init(&split, &l, B, 13);
  io_init(&no_dx, &l, B, 13);
  run_layer(&backend_ref, &l, &whole, RUN_BACKWARD);
  run_layer(&backend_ref, &l, &split, RUN_SPLIT);
  run_layer(&backend_ref, &l, &no_dx, RUN_NO_DX);
  double es = grad_diff(&split, &whole, l.kind != LAYER_EMBED);
  tap_ok(es <= 1e-6, "%s: backward on samples [0,1) + [1,%d) = whole batch (rel diff %.1e)",
         desc(&l, d, sizeof d), B, es);
  if (whole.nw_count > 0) {
    double en = grad_diff(&no_dx, &whole, 0);
    tap_ok(en <= 1e-6, "%s: parameter gradients without dx = with dx (rel diff %.1e)", d, en);
  }
  io_free(&whole);
  io_free(&split);
  io_free(&no_dx);
}

/* ---- values worked out by hand */

static void check_known_values(void) {
  /* layernorm of [1,2,3,4] with weight 1, bias 0: mean 2.5, var 1.25 */
  layer_t ln = layernorm_proto(shape1(4));
  run_io_t io;
  io_init(&io, &ln, 1, 1);
  tap_ok(fabsf(ln.eps - 1e-5f) < 1e-12f, "layernorm eps defaults to 1e-5 (got %g)", (double)ln.eps);
  float *w1 = io.w[0], *b1 = io.w[1];
  layer_layernorm_ops.init(&ln, (float *[]){w1, b1}, NULL, INIT_NORMAL_002);
  tap_ok(w1[0] == 1.0f && w1[3] == 1.0f && b1[0] == 0.0f && b1[3] == 0.0f,
         "layernorm init: weight 1, bias 0");
  for (int i = 0; i < 4; i++) io.x[i] = (float)(i + 1);
  run_layer(&backend_ref, &ln, &io, RUN_FORWARD);
  double worst = 0;
  for (int i = 0; i < 4; i++) worst = fmax(worst, fabs(io.y[i] - (i + 1 - 2.5) / sqrt(1.25 + 1e-5)));
  tap_ok(worst < 1e-6, "layernorm [1,2,3,4] = (x-2.5)/sqrt(1.25+eps): max err %.1e", worst);
  io_free(&io);

  /* attention with T = 1: the softmax is [1], so y = v for every head */
  layer_t at = attention_proto(1, 8, 4);
  io_init(&io, &at, 3, 2);
  run_layer(&backend_ref, &at, &io, RUN_FORWARD);
  int same = 1;
  for (int b = 0; b < 3; b++)
    for (int j = 0; j < 8; j++) same &= io.y[b * 8 + j] == io.x[b * 24 + 16 + j];
  tap_ok(same, "attention T=1: output equals the v block");
  io_free(&io);

  /* attention T=2, H=1, hs=1: row 1 is a softmax-weighted mix of v0, v1 */
  at = attention_proto(2, 1, 1);
  io_init(&io, &at, 1, 3);
  float qkv[6] = {0.3f, 0.7f, -1.0f, 0.5f, 2.0f, 4.0f}; /* (q,k,v) of t=0 then t=1 */
  memcpy(io.x, qkv, sizeof qkv);
  run_layer(&backend_ref, &at, &io, RUN_FORWARD);
  double s0 = 0.5 * 0.7, s1 = 0.5 * 2.0, p0 = exp(s0) / (exp(s0) + exp(s1));
  double want1 = p0 * -1.0 + (1 - p0) * 4.0;
  tap_ok(io.y[0] == -1.0f && fabs(io.y[1] - want1) < 1e-6,
         "attention T=2 by hand: y = (%.6f, %.6f), want (-1, %.6f)", io.y[0], io.y[1], want1);
  io_free(&io);

  /* embed: y[t] = wte[id[t]] + wpe[t] exactly */
  layer_t em = embed_proto(5, 7, 6, 3);
  io_init(&io, &em, 2, 4);
  run_layer(&backend_ref, &em, &io, RUN_FORWARD);
  same = 1;
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < 5; t++)
      for (int c = 0; c < 3; c++) {
        int id = (int)io.x[b * 5 + t];
        same &= io.y[(b * 5 + t) * 3 + c] == io.w[0][id * 3 + c] + io.w[1][t * 3 + c];
      }
  tap_ok(same, "embed: y[t] = wte[id[t]] + wpe[t]");
  io_free(&io);

  /* embed init: N(0, 0.02) under both schemes */
  for (int scheme = INIT_KAIMING_UNIFORM; scheme <= INIT_NORMAL_002; scheme++) {
    em = embed_proto(4, 50, 40, 16);
    io_init(&io, &em, 1, 5);
    rng_t rng;
    rng_seed(&rng, 11);
    layer_embed_ops.init(&em, io.w, &rng, (init_scheme_t)scheme);
    double s2 = 0, m = 0;
    size_t n = io.nw[0] + io.nw[1];
    for (size_t i = 0; i < io.nw[0]; i++) s2 += (double)io.w[0][i] * io.w[0][i], m += io.w[0][i];
    for (size_t i = 0; i < io.nw[1]; i++) s2 += (double)io.w[1][i] * io.w[1][i], m += io.w[1][i];
    double sd = sqrt(s2 / (double)n);
    m /= (double)n;
    tap_ok(sd > 0.019 && sd < 0.021 && fabs(m) < 0.002,
           "embed init scheme %d: std %.4f mean %.4f, want N(0,0.02)", scheme, sd, m);
    io_free(&io);
  }

  /* tied linear: logits[r,v] = sum_c x[r,c] wte[v,c] */
  layer_t tl = tied_proto(shape2(3, 4), 5, 4);
  io_init(&io, &tl, 2, 6);
  run_layer(&backend_ref, &tl, &io, RUN_FORWARD);
  worst = 0;
  for (int r = 0; r < 6; r++)
    for (int v = 0; v < 5; v++) {
      double want = 0;
      for (int c = 0; c < 4; c++) want += (double)io.x[r * 4 + c] * io.w[0][v * 4 + c];
      worst = fmax(worst, fabs(io.y[r * 5 + v] - want));
    }
  tap_ok(worst < 1e-5, "tied_linear logits = x wte^T: max err %.1e", worst);
  io_free(&io);
}

/* ---- causality: output row t depends on input rows <= t only */

static void check_causal(const backend_t *be) {
  const int T = 6, C = 8;
  layer_t l = attention_proto(T, C, 2);
  run_io_t base, moved;
  io_init(&base, &l, 1, 8);
  io_init(&moved, &l, 1, 8);
  run_layer(be, &l, &base, RUN_FORWARD);
  int earlier_same = 1, row_changed = 1;
  for (int k = 1; k < T; k++) {
    memcpy(moved.x, base.x, base.nx * sizeof(float));
    for (int j = 0; j < 3 * C; j++) moved.x[k * 3 * C + j] += 1.0f; /* change token k's q, k, v */
    run_layer(be, &l, &moved, RUN_FORWARD);
    earlier_same &= memcmp(moved.y, base.y, (size_t)k * C * sizeof(float)) == 0;
    row_changed &= memcmp(moved.y + k * C, base.y + k * C, (size_t)C * sizeof(float)) != 0;
  }
  tap_ok(earlier_same, "attention on %s is causal: changing token k leaves output rows < k (row 0 included) "
         "bitwise unchanged", be->name);
  tap_ok(row_changed, "attention on %s: changing token k changes output row k", be->name);
  io_free(&base);
  io_free(&moved);
}

/* ---- shape errors */

static void expect_rejected(layer_t l, const char *what) {
  char err[200] = "";
  int rc = layer_ops_of(l.kind)->infer(&l, err, sizeof err);
  tap_ok(rc == -1 && err[0] != '\0', "infer rejects %s: \"%s\"", what, err);
}

static void check_shape_errors(void) {
  expect_rejected(attention_proto(4, 10, 4), "attention width 10 with 4 heads");
  layer_t l = gradcheck_proto(LAYER_ATTENTION, shape2(4, 20));
  l.heads = 2;
  expect_rejected(l, "attention input (4,20), not (T,3C)");
  l = gradcheck_proto(LAYER_ATTENTION, shape1(24));
  l.heads = 2;
  expect_rejected(l, "attention flat input (24)");
  expect_rejected(attention_proto(4, 8, 0), "attention with 0 heads");
  expect_rejected(embed_proto(9, 10, 8, 4), "embed T=9 > context 8");
  expect_rejected(embed_proto(4, 0, 8, 4), "embed vocab 0");
  l = embed_proto(4, 10, 8, 4);
  l.in_shape[0] = shape2(4, 2);
  expect_rejected(l, "embed input (4,2), not token ids (T)");
  expect_rejected(tied_proto(shape2(4, 6), 10, 8), "tied_linear input width 6 vs embedding width 8");
  expect_rejected(tied_proto(shape2(4, 8), 0, 8), "tied_linear vocab 0");
  l = layernorm_proto(shape2(3, 4));
  l.eps = -1.0f;
  expect_rejected(l, "layernorm eps -1");
}

/* ---- names through the graph: the embedding's tensors and the tied weight */

static void check_graph_names(void) {
  graph_t g;
  graph_init(&g, shape1(6), INIT_NORMAL_002);
  int e = nn_embed(&g, 0, 11, 8, 4, "wte");
  int ln = nn_layernorm(&g, e, 1e-5f, "ln_f");
  int lm = nn_tied_linear(&g, ln, e, "lm_head");
  tap_ok(e > 0 && lm > 0 && g.params.n == 4,
         "graph embed -> layernorm -> tied_linear builds (%d tensors): %s", g.params.n, g.err);
  if (lm > 0) {
    tap_ok(strcmp(g.params.t[g.l[e].param[0]].name, "wte.weight") == 0 &&
               strcmp(g.params.t[g.l[e].param[1]].name, "wte.pos") == 0,
           "embedding tensors are \"%s\" (V,C) and \"%s\" (context,C)", g.params.t[g.l[e].param[0]].name,
           g.params.t[g.l[e].param[1]].name);
    tap_ok(g.l[lm].tied_param == g.l[e].param[0] && g.l[lm].np == 0,
           "tied_linear uses the embedding's wte (tensor %d) and owns no parameters", g.l[lm].tied_param);
  }
  graph_free(&g);

  graph_init(&g, shape1(6), INIT_NORMAL_002);
  e = nn_embed(&g, 0, 11, 8, 4, "wte");
  int fc = nn_linear(&g, e, 5, 1, "fc");
  lm = nn_tied_linear(&g, fc, e, "lm_head");
  tap_ok(lm == -1 && strstr(g.err, "lm_head") != NULL, "graph rejects a tied head on width 5: %s", g.err);
  graph_free(&g);
}

int main(void) {
  /* gradient checks on the reference backend */
  check_gradients(layernorm_proto(shape2(5, 8)), 2, 1);
  check_gradients(layernorm_proto(shape1(7)), 3, 2);
  check_gradients(layernorm_proto(shape3(2, 3, 6)), 2, 3);
  check_gradients(embed_proto(5, 11, 8, 6), 2, 4);
  check_gradients(embed_proto(8, 11, 8, 6), 2, 5);
  check_gradients(attention_proto(5, 8, 1), 2, 6);
  check_gradients(attention_proto(6, 12, 2), 2, 7);
  check_gradients(attention_proto(8, 16, 4), 2, 8);
  check_gradients(attention_proto(7, 8, 4), 2, 9);
  check_gradients(attention_proto(1, 8, 2), 3, 10);
  check_gradients(tied_proto(shape2(4, 6), 10, 6), 2, 11);
  check_gradients(tied_proto(shape1(6), 9, 6), 3, 12);

  /* the check catches bugs */
  check_attention_composed();
  check_attention_mutant("attention: softmax backward without the subtraction term",
                         softmax_bwd_missing_term);
  check_attention_mutant("attention: transposed dS (anti-causal path)", softmax_bwd_transposed);
  check_attention_mutant("attention: softmax backward without the 1/sqrt(hs) scale", softmax_bwd_unscaled);
  check_mutant("layernorm: weight gradient with flipped sign", layernorm_proto(shape2(5, 8)),
               layernorm_bwd_flipped_dw);
  check_mutant("layernorm: bias gradient dropped", layernorm_proto(shape2(5, 8)), layernorm_bwd_no_db);

  check_sample_ranges(layernorm_proto(shape2(5, 8)), 3);
  check_sample_ranges(embed_proto(6, 11, 8, 4), 3);
  check_sample_ranges(attention_proto(6, 12, 2), 3);
  { /* GPT-2's attention (T = 1024, 12 heads of 64): it keeps each row's log-sum-exp, not the T x T
     * probabilities, and its scratch is one size for any batch, O(T hs) (issue 32 item 4) */
    layer_t at = attention_proto(1024, 768, 12);
    char err[200];
    const int ok = layer_ops_of(at.kind)->infer(&at, err, sizeof err) == 0;
    const size_t scratch = layer_scratch_floats(&at, 64);
    tap_ok(ok && at.aux_per_sample == 12 * 1024 && at.scratch_per_sample == 0 && scratch == layer_scratch_floats(&at, 1) &&
               scratch <= 2 * 1024 * 65 + 4 * 64 * 64,
           "attention T=1024 H=12: keeps %zu floats a sample (H T; the naive form kept H T^2 = %d), scratch %zu floats "
           "for 1 or 64 samples", at.aux_per_sample, 12 * 1024 * 1024, scratch);
  }
  check_sample_ranges(tied_proto(shape2(4, 6), 10, 6), 3);
  check_known_values();
  check_causal(&backend_ref);
  check_shape_errors();
  check_graph_names();

  const backend_t *cpu = backend_find("cpu");
  if (tap_ok(cpu != NULL, "cpu backend is available")) {
    check_causal(cpu);
    check_cpu_vs_ref(cpu, layernorm_proto(shape2(16, 32)), 3);
    check_cpu_vs_ref(cpu, layernorm_proto(shape1(33)), 4);
    check_cpu_vs_ref(cpu, embed_proto(16, 50, 16, 32), 3);
    check_cpu_vs_ref(cpu, embed_proto(9, 50, 16, 32), 3);
    check_cpu_vs_ref(cpu, attention_proto(16, 32, 4), 3);
    check_cpu_vs_ref(cpu, attention_proto(7, 24, 3), 2);
    check_cpu_vs_ref(cpu, attention_proto(1, 16, 2), 2);
    check_cpu_vs_ref(cpu, tied_proto(shape2(16, 32), 50, 32), 3);
  }
  return tap_done();
}
