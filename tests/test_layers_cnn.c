/* CNN-family layers (linear, conv2d (square and per-axis kernels and padding), maxpool2d (padded too),
 * avgpool, avgpool2d, flatten, relu, gelu, add, concat):
 *  1. finite-difference gradient checks on the "ref" backend over several configurations;
 *  2. mutant backwards (wrong sign, transposed dW, missing bias / input / sample terms, overwrite
 *     instead of +=) that the same check must reject, so a pass above means something;
 *  3. "cpu" agrees with "ref" on forward outputs and on gradients;
 *  4. infer rejects bad hyperparameters and shapes with a message, and sets shapes, parameter
 *     layouts and FLOP counts to hand-computed values; init respects the Kaiming bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "gradcheck.h"
#include "nn/layer.h"
#include "tap.h"

/* ---------------------------------------------------------------- layer prototypes */


static layer_t linear_proto(shape_t in, int out_features, int bias) {
  layer_t l = gradcheck_proto(LAYER_LINEAR, in);
  l.out_features = out_features;
  l.bias = bias;
  return l;
}

/* a kh x kw kernel padded ph rows and pw columns each side */
static layer_t conv_rect_proto(int C, int H, int W, int O, int kh, int kw, int s, int ph, int pw, int bias) {
  layer_t l = gradcheck_proto(LAYER_CONV2D, shape3(C, H, W));
  l.out_channels = O;
  l.kernel = kh;
  l.kernel_w = kw;
  l.stride = s;
  l.pad = ph;
  l.pad_w = pw;
  l.bias = bias;
  return l;
}

static layer_t conv_proto(int C, int H, int W, int O, int k, int s, int p, int bias) {
  return conv_rect_proto(C, H, W, O, k, k, s, p, p, bias);
}

/* a k x k pool (max or windowed average) with stride s and padding p */
static layer_t pool_proto(layer_kind_t kind, shape_t in, int k, int s, int p) {
  layer_t l = gradcheck_proto(kind, in);
  l.kernel = k;
  l.stride = s;
  l.pad = p;
  return l;
}

static layer_t maxpool_proto(shape_t in, int k, int s) { return pool_proto(LAYER_MAXPOOL2D, in, k, s, 0); }

static layer_t two_input_proto(layer_kind_t kind, shape_t a, shape_t b) {
  layer_t l = gradcheck_proto(kind, a);
  l.nin = 2;
  l.in_shape[1] = b;
  return l;
}

static layer_t add_proto(shape_t a, shape_t b) { return two_input_proto(LAYER_ADD, a, b); }
static layer_t concat_proto(shape_t a, shape_t b) { return two_input_proto(LAYER_CONCAT, a, b); }

static const char *describe(const layer_t *l, char *buf, size_t n) {
  char s[64];
  shape_str(l->in_shape[0], s, sizeof s);
  switch (l->kind) {
  case LAYER_LINEAR:
    snprintf(buf, n, "linear %s -> %d%s", s, l->out_features, l->bias ? "" : " no bias");
    break;
  case LAYER_CONV2D:
    snprintf(buf, n, "conv2d %s -> %d k%dx%d s%d p%d,%d%s", s, l->out_channels, l->kernel, l->kernel_w,
             l->stride, l->pad, l->pad_w, l->bias ? "" : " no bias");
    break;
  case LAYER_MAXPOOL2D:
  case LAYER_AVGPOOL2D:
    snprintf(buf, n, "%s %s k%d s%d p%d", layer_kind_name(l->kind), s, l->kernel, l->stride, l->pad);
    break;
  case LAYER_CONCAT: {
    char b[64];
    snprintf(buf, n, "concat %.40s %.40s", s, shape_str(l->in_shape[1], b, sizeof b));
    break;
  }
  default:
    snprintf(buf, n, "%s %s", layer_kind_name(l->kind), s);
  }
  return buf;
}

/* The configurations checked on every backend (at most MAX_CONFIGS). */
#define MAX_CONFIGS 48
typedef struct config {
  layer_t l;
  int B;
} config_t;

static int make_configs(config_t *cf) {
  int n = 0;
  cf[n++] = (config_t){linear_proto(shape1(7), 5, 1), 3};
  cf[n++] = (config_t){linear_proto(shape1(6), 4, 0), 3};
  cf[n++] = (config_t){linear_proto(shape2(4, 6), 3, 1), 2}; /* (T,C) sequence */
  cf[n++] = (config_t){linear_proto(shape2(3, 5), 5, 0), 2};
  cf[n++] = (config_t){conv_proto(2, 5, 5, 3, 3, 1, 1, 1), 2};
  cf[n++] = (config_t){conv_proto(3, 6, 6, 2, 3, 2, 0, 1), 2};
  cf[n++] = (config_t){conv_proto(2, 7, 6, 3, 3, 2, 1, 1), 2};
  cf[n++] = (config_t){conv_proto(4, 5, 4, 3, 1, 1, 0, 1), 2}; /* pointwise: no im2col */
  cf[n++] = (config_t){conv_proto(3, 5, 5, 2, 1, 2, 0, 1), 2}; /* 1x1 stride 2: im2col path */
  cf[n++] = (config_t){conv_proto(1, 4, 5, 4, 3, 1, 0, 0), 2};
  cf[n++] = (config_t){conv_proto(2, 4, 4, 2, 3, 1, 1, 0), 2};
  /* per-axis kernels and padding (Inception-v3's 1x7 (0,3), 7x1 (3,0), 1x3 (0,1); a strided 3x1) */
  cf[n++] = (config_t){conv_rect_proto(2, 5, 8, 3, 1, 7, 1, 0, 3, 0), 2};
  cf[n++] = (config_t){conv_rect_proto(2, 8, 5, 3, 7, 1, 1, 3, 0, 1), 2};
  cf[n++] = (config_t){conv_rect_proto(3, 4, 5, 2, 1, 3, 1, 0, 1, 0), 2};
  cf[n++] = (config_t){conv_rect_proto(2, 7, 6, 2, 3, 1, 2, 1, 0, 1), 2};
  cf[n++] = (config_t){maxpool_proto(shape3(2, 6, 6), 2, 2), 2};
  cf[n++] = (config_t){maxpool_proto(shape3(2, 5, 5), 2, 2), 2};
  cf[n++] = (config_t){maxpool_proto(shape3(3, 7, 7), 3, 2), 2};
  cf[n++] = (config_t){maxpool_proto(shape3(2, 6, 5), 3, 2), 2};
  cf[n++] = (config_t){maxpool_proto(shape3(1, 5, 5), 2, 1), 2};
  cf[n++] = (config_t){pool_proto(LAYER_MAXPOOL2D, shape3(2, 7, 7), 3, 2, 1), 2}; /* ResNet's stem pool */
  cf[n++] = (config_t){pool_proto(LAYER_MAXPOOL2D, shape3(2, 4, 5), 3, 1, 1), 2};
  cf[n++] = (config_t){pool_proto(LAYER_AVGPOOL2D, shape3(2, 5, 5), 3, 1, 1), 2}; /* Inception's branch pool */
  cf[n++] = (config_t){pool_proto(LAYER_AVGPOOL2D, shape3(2, 6, 7), 3, 2, 1), 2};
  cf[n++] = (config_t){pool_proto(LAYER_AVGPOOL2D, shape3(3, 4, 4), 2, 2, 0), 2};
  cf[n++] = (config_t){concat_proto(shape3(2, 3, 3), shape3(3, 3, 3)), 2};
  cf[n++] = (config_t){concat_proto(shape3(1, 2, 4), shape3(1, 2, 4)), 3};
  cf[n++] = (config_t){gradcheck_proto(LAYER_AVGPOOL, shape3(3, 4, 5)), 2};
  cf[n++] = (config_t){gradcheck_proto(LAYER_AVGPOOL, shape3(2, 1, 1)), 3};
  cf[n++] = (config_t){gradcheck_proto(LAYER_FLATTEN, shape3(2, 3, 4)), 2};
  cf[n++] = (config_t){gradcheck_proto(LAYER_RELU, shape3(2, 3, 4)), 2};
  cf[n++] = (config_t){gradcheck_proto(LAYER_RELU, shape1(10)), 3};
  cf[n++] = (config_t){gradcheck_proto(LAYER_GELU, shape3(2, 3, 4)), 2};
  cf[n++] = (config_t){gradcheck_proto(LAYER_GELU, shape2(4, 6)), 2};
  cf[n++] = (config_t){add_proto(shape3(2, 3, 3), shape3(2, 3, 3)), 2};
  cf[n++] = (config_t){add_proto(shape2(4, 5), shape2(4, 5)), 2};
  cf[n++] = (config_t){gradcheck_proto(LAYER_BATCHNORM, shape3(3, 4, 5)), 3}; /* statistics over B x H x W */
  cf[n++] = (config_t){gradcheck_proto(LAYER_BATCHNORM, shape1(6)), 5};       /* the 1-D form */
  layer_t drop = gradcheck_proto(LAYER_DROPOUT, shape3(2, 3, 4));
  drop.p = 0.3f;
  cf[n++] = (config_t){drop, 3};
  return n;
}

/* ---------------------------------------------------------------- sizes of a layer's tensors */

static size_t param_size(const layer_t *l, int k) {
  size_t n = 1;
  for (int d = 0; d < l->pdesc[k].ndim; d++)
    n *= (size_t)l->pdesc[k].d[d];
  return n;
}

static size_t input_size(const layer_t *l, int k, int B) {
  return (size_t)B * shape_size(l->in_shape[k]);
}

/* ---------------------------------------------------------------- 1. gradient checks */

/* Tensors a gradient check should compare: every input and every parameter. */
static int tensors_of(layer_t l) {
  char err[200];
  if (layer_ops_of(l.kind)->infer(&l, err, sizeof err) != 0)
    return -1;
  return l.nin + l.np;
}

static void check_gradients(const config_t *cf, int n, const backend_t *ref) {
  for (int i = 0; i < n; i++) {
    char d[128];
    gradcheck_result_t r =
        gradcheck_layer(layer_ops_of(cf[i].l.kind), cf[i].l, cf[i].B, ref, 1000 + (uint64_t)i);
    tap_ok(r.max_rel_err < GRADCHECK_TOL && r.tensors_checked == tensors_of(cf[i].l),
           "gradcheck %s B=%d: max_rel_err %.2e (worst %s, %d tensors)",
           describe(&cf[i].l, d, sizeof d), cf[i].B, r.max_rel_err, r.worst, r.tensors_checked);
  }
}

/* ---------------------------------------------------------------- 2. mutants */

typedef enum mutation {
  MUT_DW_SIGN,       /* dW with the wrong sign */
  MUT_DW_TRANSPOSED, /* dW laid out as its transpose (operands of the GEMM swapped) */
  MUT_DW_OVERWRITE,  /* dW = g instead of dW += g */
  MUT_DB_MISSING,    /* bias gradient dropped */
  MUT_DX_MISSING,    /* input gradient dropped */
  MUT_DX_SIGN,       /* input gradient with the wrong sign */
  MUT_LAST_SAMPLE,   /* the last sample of the batch skipped (loop bound off by one) */
} mutation_t;

static const char *const mutation_names[] = {
    "dW wrong sign", "dW transposed", "dW overwritten (=, not +=)", "bias gradient missing",
    "dx missing",    "dx wrong sign", "last sample skipped",
};

static const layer_ops_t *mutant_base; /* the real ops the mutant wraps */
static mutation_t mutant_kind;

/* (rows, cols) matrix g rewritten in place as the row-major data of g^T, i.e. (cols, rows). */
static void transpose_in_place(const backend_t *be, float *g, int rows, int cols) {
  float *t = be->alloc((size_t)rows * cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      t[(size_t)c * rows + r] = g[(size_t)r * cols + c];
  memcpy(g, t, (size_t)rows * cols * sizeof *g);
  be->free(t);
}

/* Backward that runs the real one into zeroed buffers, corrupts those gradients as mutant_kind
 * says and accumulates them into the caller's (host memory: the ref backend). */
static void mutant_backward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  layer_ctx_t t = *c;
  size_t nx[LAYER_MAX_IN] = {0}, nw[LAYER_MAX_PARAMS] = {0};
  for (int k = 0; k < l->nin; k++)
    if (c->dx[k])
      t.dx[k] = be->alloc(nx[k] = input_size(l, k, c->B));
  for (int k = 0; k < l->np; k++)
    if (c->dw[k])
      t.dw[k] = be->alloc(nw[k] = param_size(l, k));
  if (mutant_kind == MUT_LAST_SAMPLE)
    t.B = c->B - 1;
  mutant_base->backward(l, &t);

  switch (mutant_kind) {
  case MUT_DW_SIGN:
    be->scale(t.dw[0], nw[0], -1.0f);
    break;
  case MUT_DW_TRANSPOSED:
    transpose_in_place(be, t.dw[0], l->pdesc[0].d[0], (int)(nw[0] / (size_t)l->pdesc[0].d[0]));
    break;
  case MUT_DB_MISSING:
    be->fill(t.dw[1], nw[1], 0.0f);
    break;
  case MUT_DX_MISSING:
    be->fill(t.dx[0], nx[0], 0.0f);
    break;
  case MUT_DX_SIGN:
    be->scale(t.dx[0], nx[0], -1.0f);
    break;
  case MUT_DW_OVERWRITE:
    be->fill(c->dw[0], nw[0], 0.0f); /* the += below becomes = */
    break;
  case MUT_LAST_SAMPLE:
    break;
  }
  for (int k = 0; k < l->nin; k++)
    if (c->dx[k]) {
      be->axpy(nx[k], 1.0f, t.dx[k], c->dx[k]);
      be->free(t.dx[k]);
    }
  for (int k = 0; k < l->np; k++)
    if (c->dw[k]) {
      be->axpy(nw[k], 1.0f, t.dw[k], c->dw[k]);
      be->free(t.dw[k]);
    }
}

static void check_mutant(layer_t l, int B, mutation_t m, const backend_t *ref) {
  layer_ops_t mutant = *layer_ops_of(l.kind);
  mutant_base = layer_ops_of(l.kind);
  mutant_kind = m;
  mutant.backward = mutant_backward;
  gradcheck_result_t r = gradcheck_layer(&mutant, l, B, ref, 77);
  char d[128];
  tap_ok(r.max_rel_err > GRADCHECK_TOL,
         "mutant %s [%s] rejected: max_rel_err %.2e (worst %s) > %.0e", describe(&l, d, sizeof d),
         mutation_names[m], r.max_rel_err, r.worst, GRADCHECK_TOL);
}

static void check_mutants(const backend_t *ref) {
  const mutation_t weighted[] = {MUT_DW_SIGN,    MUT_DW_TRANSPOSED, MUT_DW_OVERWRITE,
                                 MUT_DB_MISSING, MUT_DX_MISSING,    MUT_DX_SIGN,
                                 MUT_LAST_SAMPLE};
  const layer_t with_weights[] = {
      linear_proto(shape1(7), 5, 1),      linear_proto(shape2(4, 6), 3, 1),
      conv_proto(2, 5, 5, 3, 3, 1, 1, 1), conv_proto(3, 6, 6, 2, 3, 2, 0, 1),
      conv_proto(4, 5, 4, 3, 1, 1, 0, 1), conv_rect_proto(2, 5, 8, 3, 1, 7, 1, 0, 3, 1),
      conv_rect_proto(2, 8, 5, 3, 7, 1, 1, 3, 0, 1),
  };
  for (size_t i = 0; i < sizeof with_weights / sizeof with_weights[0]; i++)
    for (size_t m = 0; m < sizeof weighted / sizeof weighted[0]; m++)
      check_mutant(with_weights[i], 3, weighted[m], ref);
  const layer_t without_weights[] = {
      maxpool_proto(shape3(2, 5, 5), 2, 2),  gradcheck_proto(LAYER_AVGPOOL, shape3(2, 3, 3)),
      gradcheck_proto(LAYER_FLATTEN, shape3(2, 2, 3)), gradcheck_proto(LAYER_RELU, shape1(12)),
      gradcheck_proto(LAYER_GELU, shape2(3, 4)),       add_proto(shape2(3, 4), shape2(3, 4)),
      pool_proto(LAYER_MAXPOOL2D, shape3(2, 5, 5), 3, 2, 1), pool_proto(LAYER_AVGPOOL2D, shape3(2, 5, 5), 3, 1, 1),
      concat_proto(shape3(2, 3, 3), shape3(1, 3, 3)),
  };
  for (size_t i = 0; i < sizeof without_weights / sizeof without_weights[0]; i++) {
    check_mutant(without_weights[i], 3, MUT_DX_SIGN, ref);
    check_mutant(without_weights[i], 3, MUT_LAST_SAMPLE, ref);
  }
}

/* ---------------------------------------------------------------- 3. cpu against ref */

/* One forward + backward of a layer on backend be from host data; results downloaded to host. */
typedef struct run_io {
  float *x[LAYER_MAX_IN], *w[LAYER_MAX_PARAMS], *dy;  /* host inputs */
  float *y, *dx[LAYER_MAX_IN], *dw[LAYER_MAX_PARAMS]; /* host outputs */
} run_io_t;

static void run_layer(const layer_t *l, int B, const backend_t *be, run_io_t *io) {
  const layer_ops_t *ops = layer_ops_of(l->kind);
  size_t ny = (size_t)B * shape_size(l->out);
  layer_ctx_t c;
  memset(&c, 0, sizeof c);
  c.be = be;
  c.B = B;
  for (int k = 0; k < l->nin; k++) {
    size_t n = input_size(l, k, B);
    float *x = be->alloc(n);
    be->upload(x, io->x[k], n);
    c.x[k] = x;
    c.dx[k] = be->alloc(n);
  }
  for (int k = 0; k < l->np; k++) {
    size_t n = param_size(l, k);
    float *w = be->alloc(n);
    be->upload(w, io->w[k], n);
    c.w[k] = w;
    c.dw[k] = be->alloc(n);
  }
  c.y = be->alloc(ny);
  float *dy = be->alloc(ny);
  be->upload(dy, io->dy, ny);
  c.dy = dy;
  c.aux = be->alloc((size_t)B * l->aux_per_sample + 1);
  c.scratch = be->alloc(layer_scratch_floats(l, c.B) + 1);
  gradcheck_state_alloc(l, be, &c);
  ops->forward(l, &c);
  ops->backward(l, &c);
  gradcheck_state_free(l, be, &c);
  be->download(io->y, c.y, ny);
  for (int k = 0; k < l->nin; k++) {
    be->download(io->dx[k], c.dx[k], input_size(l, k, B));
    be->free((float *)c.x[k]);
    be->free(c.dx[k]);
  }
  for (int k = 0; k < l->np; k++) {
    be->download(io->dw[k], c.dw[k], param_size(l, k));
    be->free((float *)c.w[k]);
    be->free(c.dw[k]);
  }
  be->free(c.y);
  be->free(dy);
  be->free(c.aux);
  be->free(c.scratch);
}

/* max |a - b| / max |b| (b is the reference). */
static double rel_diff(const float *a, const float *b, size_t n) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < n; i++) {
    diff = fmax(diff, fabs((double)a[i] - (double)b[i]));
    scale = fmax(scale, fabs((double)b[i]));
  }
  return diff / fmax(scale, 1e-30);
}

static float *normal_host(rng_t *rng, size_t n, float std) {
  float *v = malloc(n * sizeof *v + sizeof *v);
  rng_fill_normal(rng, v, n, 0.0f, std);
  return v;
}

static void alloc_outputs(const layer_t *l, int B, run_io_t *io) {
  io->y = malloc((size_t)B * shape_size(l->out) * sizeof(float) + sizeof(float));
  for (int k = 0; k < l->nin; k++)
    io->dx[k] = malloc(input_size(l, k, B) * sizeof(float));
  for (int k = 0; k < l->np; k++)
    io->dw[k] = malloc(param_size(l, k) * sizeof(float));
}

static void free_io(const layer_t *l, run_io_t *io, int inputs_too) {
  free(io->y);
  for (int k = 0; k < l->nin; k++) {
    free(io->dx[k]);
    if (inputs_too)
      free(io->x[k]);
  }
  for (int k = 0; k < l->np; k++) {
    free(io->dw[k]);
    if (inputs_too)
      free(io->w[k]);
  }
  if (inputs_too)
    free(io->dy);
}

static void compare_backends(const config_t *cf, int n, const backend_t *cpu,
                             const backend_t *ref) {
  rng_t rng;
  rng_seed(&rng, 4242);
  for (int i = 0; i < n; i++) {
    layer_t l = cf[i].l;
    int B = cf[i].B + 2;
    char err[200], d[128];
    if (layer_ops_of(l.kind)->infer(&l, err, sizeof err) != 0) {
      tap_ok(0, "infer %s: %s", describe(&l, d, sizeof d), err);
      continue;
    }
    run_io_t a, b;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < l.nin; k++)
      a.x[k] = normal_host(&rng, input_size(&l, k, B), 1.0f);
    for (int k = 0; k < l.np; k++)
      a.w[k] = normal_host(&rng, param_size(&l, k), 0.5f);
    a.dy = normal_host(&rng, (size_t)B * shape_size(l.out), 1.0f);
    b = a;
    alloc_outputs(&l, B, &a);
    alloc_outputs(&l, B, &b);
    run_layer(&l, B, cpu, &a);
    run_layer(&l, B, ref, &b);
    double ey = rel_diff(a.y, b.y, (size_t)B * shape_size(l.out)), eg = 0;
    for (int k = 0; k < l.nin; k++)
      eg = fmax(eg, rel_diff(a.dx[k], b.dx[k], input_size(&l, k, B)));
    for (int k = 0; k < l.np; k++)
      eg = fmax(eg, rel_diff(a.dw[k], b.dw[k], param_size(&l, k)));
    tap_ok(ey <= 1e-5, "cpu vs ref forward %s B=%d: rel diff %.2e", describe(&l, d, sizeof d), B,
           ey);
    tap_ok(eg <= 1e-5, "cpu vs ref gradients %s B=%d: rel diff %.2e", d, B, eg);
    free_io(&l, &b, 0);
    free_io(&l, &a, 1);
  }
}

/* ---------------------------------------------------------------- 4. infer, flops, init */

static void expect_reject(layer_t l, const char *fragment) {
  char err[200] = "", d[128];
  describe(&l, d, sizeof d);
  int rc = layer_ops_of(l.kind)->infer(&l, err, sizeof err);
  tap_ok(rc == -1 && strstr(err, fragment) != NULL, "infer rejects %s: \"%s\"", d, err);
}

static void check_rejections(void) {
  expect_reject(conv_proto(1, 3, 3, 2, 5, 1, 0, 1),
                "conv2d: kernel 5x5 larger than padded input 3x3");
  expect_reject(conv_proto(1, 3, 8, 2, 7, 1, 1, 1), "kernel 7x7 larger than padded input 5x10");
  expect_reject(conv_proto(1, 8, 8, 2, 3, 0, 0, 1), "conv2d: stride must be positive, got 0");
  expect_reject(conv_proto(1, 8, 8, 0, 3, 1, 0, 1), "conv2d: out_channels must be positive");
  expect_reject(conv_proto(1, 8, 8, 2, 3, 1, -1, 1), "conv2d: row padding must be at least 0, got -1");
  expect_reject(conv_rect_proto(1, 8, 8, 2, 1, 7, 1, 0, -1, 1), "conv2d: column padding must be at least 0, got -1");
  expect_reject(conv_rect_proto(1, 8, 8, 2, 1, 0, 1, 0, 0, 1), "conv2d: kernel width must be positive, got 0");
  expect_reject(conv_rect_proto(1, 8, 4, 2, 1, 7, 1, 0, 1, 1),
                "conv2d: kernel 1x7 larger than padded input 8x6 (input 8x4, padding 0,1)");
  expect_reject(pool_proto(LAYER_MAXPOOL2D, shape3(2, 8, 8), 3, 2, 2),
                "maxpool2d: pad 2 more than half the kernel 3 (a window would hold only padding)");
  expect_reject(pool_proto(LAYER_AVGPOOL2D, shape3(2, 8, 8), 3, 1, -1), "avgpool2d: pad must be at least 0, got -1");
  expect_reject(pool_proto(LAYER_AVGPOOL2D, shape3(2, 1, 1), 5, 1, 1),
                "avgpool2d: kernel 5 larger than padded input 3x3 (input 1x1, pad 1)");
  expect_reject(concat_proto(shape3(2, 8, 8), shape3(3, 8, 7)),
                "concat: inputs (2,8,8) and (3,8,7) are not images of one height and width");
  expect_reject(concat_proto(shape1(4), shape1(4)), "concat: input must be an image (C,H,W), got (4)");
  layer_t flat_conv = conv_proto(1, 8, 8, 2, 3, 1, 0, 1);
  flat_conv.in_shape[0] = shape1(64);
  expect_reject(flat_conv, "conv2d: input must be an image (C,H,W), got (64)");
  expect_reject(add_proto(shape3(4, 8, 8), shape3(8, 8, 8)),
                "add: input shapes (4,8,8) and (8,8,8) differ");
  expect_reject(add_proto(shape2(4, 8), shape1(32)), "add: input shapes (4,8) and (32) differ");
  layer_t one_input_add = add_proto(shape1(3), shape1(3));
  one_input_add.nin = 1;
  expect_reject(one_input_add, "add: needs 2 inputs, got 1");
  expect_reject(maxpool_proto(shape3(2, 2, 2), 3, 2), "maxpool2d: kernel 3 larger than padded input 2x2");
  expect_reject(maxpool_proto(shape3(2, 4, 2), 3, 1), "kernel 3 larger than padded input 4x2");
  expect_reject(maxpool_proto(shape2(4, 4), 2, 2), "maxpool2d: input must be an image");
  expect_reject(maxpool_proto(shape3(2, 4, 4), 2, 0), "maxpool2d: stride must be positive");
  expect_reject(gradcheck_proto(LAYER_AVGPOOL, shape1(8)), "avgpool: input must be an image");
  expect_reject(linear_proto(shape1(8), 0, 1), "linear: out_features must be positive");
  expect_reject(linear_proto(shape1(0), 4, 1), "linear: input needs a positive last dim");
}

static void expect_infer(layer_t l, shape_t out, double flops, const char *why) {
  char err[200] = "", d[128], s[64], want[64];
  describe(&l, d, sizeof d);
  int rc = layer_ops_of(l.kind)->infer(&l, err, sizeof err);
  int same = rc == 0 && l.out.ndim == out.ndim;
  for (int i = 0; same && i < out.ndim; i++)
    same = l.out.d[i] == out.d[i];
  tap_ok(same && l.flops_per_sample == flops,
         "infer %s: out %s (want %s), flops %.0f (want %.0f = %s)", d,
         shape_str(l.out, s, sizeof s), shape_str(out, want, sizeof want), l.flops_per_sample,
         flops, why);
}

static int pdesc_is(const layer_param_desc_t *p, const char *suffix, int ndim, int d0, int d1,
                    int d2, int d3) {
  const int want[4] = {d0, d1, d2, d3};
  if (strcmp(p->suffix, suffix) != 0 || p->ndim != ndim)
    return 0;
  for (int i = 0; i < ndim; i++)
    if (p->d[i] != want[i])
      return 0;
  return 1;
}

static void check_infer_values(void) {
  /* linear counts 2*in*out per row for the product plus out per row for the bias add */
  expect_infer(linear_proto(shape1(7), 5, 1), shape1(5), 75, "2*7*5 + 5");
  expect_infer(linear_proto(shape1(7), 5, 0), shape1(5), 70, "2*7*5");
  expect_infer(linear_proto(shape2(4, 6), 3, 1), shape2(4, 3), 156, "4 rows * (2*6*3 + 3)");
  /* conv2d counts 2*C*k*k per output plus one per output for the bias */
  expect_infer(conv_proto(3, 8, 8, 4, 3, 1, 1, 1), shape3(4, 8, 8), 14080, "4*8*8 * (2*3*3*3 + 1)");
  expect_infer(conv_proto(3, 7, 7, 2, 3, 2, 0, 1), shape3(2, 3, 3), 990, "2*3*3 * (2*27 + 1)");
  expect_infer(conv_proto(2, 7, 6, 3, 3, 2, 1, 0), shape3(3, 4, 3), 1296, "3*4*3 * 2*18");
  expect_infer(conv_proto(1, 28, 28, 8, 5, 1, 2, 1), shape3(8, 28, 28), 319872,
               "8*28*28 * (2*25 + 1)");
  expect_infer(maxpool_proto(shape3(3, 7, 7), 3, 2), shape3(3, 3, 3), 243, "27 outputs * 9");
  expect_infer(maxpool_proto(shape3(2, 5, 5), 2, 2), shape3(2, 2, 2), 32, "8 outputs * 4");
  expect_infer(pool_proto(LAYER_MAXPOOL2D, shape3(64, 112, 112), 3, 2, 1), shape3(64, 56, 56), 64 * 56 * 56 * 9.0,
               "ResNet's stem pool: 56x56 outputs * 9");
  expect_infer(pool_proto(LAYER_AVGPOOL2D, shape3(3, 35, 35), 3, 1, 1), shape3(3, 35, 35), 3 * 35 * 35 * 9.0,
               "Inception's branch pool keeps the size: 9 adds per output");
  /* Inception's 1x7 (0,3) and 7x1 (3,0) keep 17x17: 2*C*7 per output */
  expect_infer(conv_rect_proto(8, 17, 17, 4, 1, 7, 1, 0, 3, 0), shape3(4, 17, 17), 4 * 289 * 112.0, "4*289 * 2*8*7");
  expect_infer(conv_rect_proto(8, 17, 17, 4, 7, 1, 1, 3, 0, 0), shape3(4, 17, 17), 4 * 289 * 112.0, "4*289 * 2*8*7");
  expect_infer(conv_rect_proto(2, 9, 8, 3, 3, 1, 2, 1, 0, 1), shape3(3, 5, 4), 3 * 20 * 13.0, "3*5*4 * (2*2*3 + 1)");
  expect_infer(concat_proto(shape3(64, 35, 35), shape3(96, 35, 35)), shape3(160, 35, 35), 0, "a copy");
  expect_infer(gradcheck_proto(LAYER_AVGPOOL, shape3(3, 4, 5)), shape1(3), 60, "one add per input");
  expect_infer(gradcheck_proto(LAYER_FLATTEN, shape3(2, 3, 4)), shape1(24), 0, "a copy");
  expect_infer(gradcheck_proto(LAYER_RELU, shape3(2, 3, 4)), shape3(2, 3, 4), 24, "1 per element");
  expect_infer(gradcheck_proto(LAYER_GELU, shape2(4, 6)), shape2(4, 6), 240, "10 per element");
  expect_infer(add_proto(shape2(4, 5), shape2(4, 5)), shape2(4, 5), 20, "1 per element");

  char err[200];
  layer_t lin = linear_proto(shape2(4, 6), 3, 1), conv = conv_proto(3, 7, 7, 4, 5, 2, 2, 1),
          mp = maxpool_proto(shape3(3, 7, 7), 3, 2), pw = conv_proto(4, 5, 5, 2, 1, 1, 0, 0);
  layer_ops_of(LAYER_LINEAR)->infer(&lin, err, sizeof err);
  layer_ops_of(LAYER_CONV2D)->infer(&conv, err, sizeof err);
  layer_ops_of(LAYER_MAXPOOL2D)->infer(&mp, err, sizeof err);
  layer_ops_of(LAYER_CONV2D)->infer(&pw, err, sizeof err);
  tap_ok(lin.np == 2 && pdesc_is(&lin.pdesc[0], "weight", 2, 3, 6, 0, 0) &&
             pdesc_is(&lin.pdesc[1], "bias", 1, 3, 0, 0, 0) && lin.scratch == 0 &&
             lin.aux_per_sample == 0,
         "linear params: weight (3,6), bias (3), no aux, no scratch");
  /* the conv workspace (odd input sizes at stride 2: lowered on every CPU): blocks of 32 samples of
   * 4x4 outputs (512 columns): col (75, 512), block (4, 512), weight gradient block and its double
   * sum 3*(4*75), bias sum 2*4, alignment 5*16 */
  tap_ok(conv.np == 2 && pdesc_is(&conv.pdesc[0], "weight", 4, 4, 3, 5, 5) &&
             pdesc_is(&conv.pdesc[1], "bias", 1, 4, 0, 0, 0) &&
             conv.scratch == (size_t)(75 + 4) * 512 + 3 * 4 * 75 + 2 * 4 + 80,
         "conv2d params: weight (4,3,5,5), bias (4); scratch %zu = (75+4)*512 + 3*300 + 8 + 80",
         conv.scratch);
  /* pointwise 5x5 outputs: at least the lowering of blocks of 20 samples (500 columns); a CPU with
   * the direct path may want more (padded images), and the scratch is what the backends want */
  conv_shape_t pws = conv_shape_make(4, 5, 5, 2, 1, 1, 1, 0, 0);
  tap_ok(pw.np == 1 && pdesc_is(&pw.pdesc[0], "weight", 4, 2, 4, 1, 1) &&
             pw.scratch == conv_workspace_floats(&pws) && pw.scratch >= (size_t)(4 + 2) * 500 + 3 * 2 * 4 + 2 * 2 + 80,
         "pointwise conv2d without bias: weight (2,4,1,1) only; scratch %zu >= (4+2)*500 + 24 + 4 + 80", pw.scratch);
  tap_ok(mp.np == 0 && mp.aux_per_sample == 27, "maxpool2d saves one argmax per output (aux %zu)",
         mp.aux_per_sample);
}

/* Kaiming-uniform init stays inside +-1/sqrt(fan_in) and spreads over it; N(0,0.02) zeroes biases. */
static void check_init(void) {
  char err[200];
  layer_t lin = linear_proto(shape1(16), 32, 1), conv = conv_proto(2, 6, 6, 8, 3, 1, 1, 1);
  layer_ops_of(LAYER_LINEAR)->infer(&lin, err, sizeof err);
  layer_ops_of(LAYER_CONV2D)->infer(&conv, err, sizeof err);
  const layer_t *ls[2] = {&lin, &conv};
  const int fan_in[2] = {16, 18};
  for (int i = 0; i < 2; i++) {
    const layer_t *l = ls[i];
    float *w[2] = {calloc(param_size(l, 0), sizeof(float)),
                   calloc(param_size(l, 1), sizeof(float))};
    rng_t rng;
    rng_seed(&rng, 5);
    layer_ops_of(l->kind)->init(l, w, &rng, INIT_KAIMING_UNIFORM);
    double bound = 1.0 / sqrt((double)fan_in[i]), wmax = 0, bmax = 0;
    for (size_t j = 0; j < param_size(l, 0); j++)
      wmax = fmax(wmax, fabs(w[0][j]));
    for (size_t j = 0; j < param_size(l, 1); j++)
      bmax = fmax(bmax, fabs(w[1][j]));
    tap_ok(wmax <= bound && wmax > 0.8 * bound && bmax <= bound && bmax > 0.5 * bound,
           "%s kaiming init: max|w| %.4f, max|b| %.4f within bound 1/sqrt(%d) = %.4f",
           layer_kind_name(l->kind), wmax, bmax, fan_in[i], bound);
    layer_ops_of(l->kind)->init(l, w, &rng, INIT_NORMAL_002);
    double s2 = 0;
    for (size_t j = 0; j < param_size(l, 0); j++)
      s2 += (double)w[0][j] * w[0][j];
    double std = sqrt(s2 / (double)param_size(l, 0));
    bmax = 0;
    for (size_t j = 0; j < param_size(l, 1); j++)
      bmax = fmax(bmax, fabs(w[1][j]));
    tap_ok(fabs(std - 0.02) < 0.005 && bmax == 0.0,
           "%s normal(0.02) init: weight std %.4f, bias zero", layer_kind_name(l->kind), std);
    free(w[0]);
    free(w[1]);
  }
}

/* Dropout's forward on samples with global ids ids[0..B) at step `step` (cpu backend, host memory). */
static void dropout_run(const layer_t *l, const uint64_t *ids, int B, uint64_t step, int train, const float *x,
                        float *y) {
  const backend_t *be = backend_find("cpu");
  layer_ctx_t c;
  memset(&c, 0, sizeof c);
  c.be = be;
  c.B = B;
  c.x[0] = x;
  c.y = y;
  c.aux = be->alloc((size_t)B * l->aux_per_sample + 1);
  c.ids = ids;
  c.seed = 7;
  c.step = step;
  c.node = 5;
  c.train = train;
  layer_ops_of(l->kind)->forward(l, &c);
  be->free(c.aux);
}

/* The mask is a function of (seed, node, step, sample id, element): a sample's row is the same bit
 * for bit whatever else is in the call (a rank's share of the batch), another step draws another,
 * p of the elements are zeroed and the rest scaled by 1/(1 - p); evaluation passes x through. */
static void check_dropout_masks(void) {
  layer_t l = gradcheck_proto(LAYER_DROPOUT, shape1(256));
  l.p = 0.25f;
  char err[128];
  if (layer_ops_of(l.kind)->infer(&l, err, sizeof err)) surge_runtime_error("dropout: %s", err);
  enum { B = 8, N = 256 };
  uint64_t ids[B];
  float *x = xmalloc(B * N * sizeof *x), *y = xmalloc(B * N * sizeof *y), *part = xmalloc(B * N * sizeof *part);
  for (int i = 0; i < B * N; i++) x[i] = 1.0f + (float)(i % 97) / 97.0f; /* never 0 */
  for (int b = 0; b < B; b++) ids[b] = 1000 + 37 * (uint64_t)b;
  dropout_run(&l, ids, B, 3, 1, x, y);
  dropout_run(&l, ids + 3, 3, 3, 1, x + 3 * N, part); /* samples 3..5 alone, as a rank's share */
  tap_ok(memcmp(part, y + 3 * N, 3 * N * sizeof *y) == 0, "dropout: samples 3..5 run alone draw their masks of the "
         "whole batch bit for bit");
  long zeros = 0, scaled = 0;
  for (int i = 0; i < B * N; i++) {
    zeros += y[i] == 0.0f;
    scaled += y[i] == x[i] * (1.0f / 0.75f);
  }
  tap_ok(zeros + scaled == B * N && labs(zeros - B * N / 4) <= 4 * 28,
         "dropout p 0.25: %ld of %d zeroed (within 4 sigma of a quarter), the rest x / 0.75", zeros, B * N);
  dropout_run(&l, ids + 3, 3, 4, 1, x + 3 * N, part);
  tap_ok(memcmp(part, y + 3 * N, 3 * N * sizeof *y) != 0, "dropout: another step draws other masks");
  dropout_run(&l, ids, B, 3, 0, x, y);
  tap_ok(memcmp(x, y, B * N * sizeof *y) == 0, "dropout: evaluation passes x through unchanged");
  free(x), free(y), free(part);
}

int main(void) {
  const backend_t *ref = backend_find("ref"), *cpu = backend_find("cpu");
  if (!tap_ok(ref != NULL, "ref backend is compiled in"))
    return tap_done();
  config_t cf[MAX_CONFIGS];
  int n = make_configs(cf);
  check_gradients(cf, n, ref);
  check_mutants(ref);
  if (tap_ok(cpu != NULL, "cpu backend is compiled in"))
    compare_backends(cf, n, cpu, ref);
  check_rejections();
  check_infer_values();
  check_init();
  check_dropout_masks();
  return tap_done();
}
