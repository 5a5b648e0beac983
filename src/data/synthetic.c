/* A generated data set for benchmarks and tests: no files, any size, and sample id k of a split is
 * always the same sample, drawn from its own random stream (seed, k), so nothing is stored.
 * For image models: (1,28,28) images of 10 classes, each a class prototype (a blocky 7x7 pattern
 * blown up to 28x28), shifted by up to 2 pixels, plus near-Gaussian noise (the Irwin-Hall sum of
 * four uniforms from one 64-bit draw per pixel: cheap, so benchmarks time the model, not the data
 * generator): learnable, not trivial.
 * For gpt: byte sequences where each token is followed by its fixed successor (a seeded
 * permutation of the vocabulary) 80% of the time and by a uniform token otherwise, so the best
 * possible loss is about 1.6 nats against ln 256 = 5.5 for guessing.
 * The training split has synthetic_samples samples, the test split a sixth of that (rounded up),
 * Fashion-MNIST's proportion. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/dataset_impl.h"

#define SYN_CLASSES 10
#define SYN_SIDE 28
#define SYN_PIXELS (SYN_SIDE * SYN_SIDE)
#define SYN_GRID 7          /* prototype cells per side */
#define SYN_CELL (SYN_SIDE / SYN_GRID)
#define SYN_MAX_SHIFT 2     /* pixels, each direction */
#define SYN_NOISE 0.3f      /* std of the per-pixel noise */
#define SYN_VOCAB 256
#define SYN_FOLLOW 0.8f     /* chance that the next token is the successor */
#define SYN_TEST_DIVISOR 6

/* Stream tags (the b of rng_seed_stream) of the generator's parts. */
enum { STREAM_PROTOTYPE = 0x5e7a, STREAM_SUCCESSOR = 0x5e7b, STREAM_SAMPLE = 0x5e80 /* + split */ };

typedef struct synthetic {
  uint64_t seed;
  int T;                          /* tokens: sequence length; 0 for images */
  float *prototypes;              /* images: (10, 28, 28) in [0,1] */
  uint8_t successor[SYN_VOCAB];   /* tokens: the likely next token after each token */
} synthetic_t;

/* Each cell is background (0) or a brightness in [0.5, 1), half the time each. */
static float *make_prototypes(uint64_t seed) {
  float *protos = xmalloc(sizeof(float) * SYN_CLASSES * SYN_PIXELS); // protos is (10,28,28)
  for (int c = 0; c < SYN_CLASSES; c++) {
    rng_t r;
    rng_seed_stream(&r, seed, (uint64_t)c, STREAM_PROTOTYPE);
    float cell[SYN_GRID][SYN_GRID];
    for (int i = 0; i < SYN_GRID; i++)
      for (int j = 0; j < SYN_GRID; j++) {
        float on = rng_uniform(&r), level = rng_uniform(&r);
        cell[i][j] = on < 0.5f ? 0.0f : 0.5f + 0.5f * level;
      }
    float *p = protos + (size_t)c * SYN_PIXELS;
    for (int h = 0; h < SYN_SIDE; h++)
      for (int w = 0; w < SYN_SIDE; w++) p[h * SYN_SIDE + w] = cell[h / SYN_CELL][w / SYN_CELL];
  }
  return protos;
}

/* Zero-mean, unit-variance noise from one 64-bit draw: its four 16-bit parts summed (variance 4/12),
 * rescaled. */
static inline float cheap_noise(uint64_t u) {
  float sum = (float)(int32_t)(u & 0xffff) + (float)(int32_t)((u >> 16) & 0xffff) +
              (float)(int32_t)((u >> 32) & 0xffff) + (float)(int32_t)(u >> 48);
  return (sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

/* x[i] = clamp(x[i] + SYN_NOISE * noise(u[i]), 0, 1) for i < n. Built per ISA and kept out of the
 * draws' loop so it vectorises: generating the batch was a fifth of a small model's step. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void add_noise(float *x, const uint64_t *u,
                                                                                    int n) {
  for (int i = 0; i < n; i++) {
    float v = x[i] + SYN_NOISE * cheap_noise(u[i]);
    x[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
  }
}

/* The label's prototype shifted by (dh, dw) pixels (zeros shifted in), plus one noise draw per
 * pixel in row-major order. */
static void synthetic_image(const synthetic_t *s, rng_t *r, float *x, float *y) {
  int label = (int)rng_below(r, SYN_CLASSES);
  int dh = (int)rng_below(r, 2 * SYN_MAX_SHIFT + 1) - SYN_MAX_SHIFT;
  int dw = (int)rng_below(r, 2 * SYN_MAX_SHIFT + 1) - SYN_MAX_SHIFT;
  uint64_t u[SYN_PIXELS];
  rng_fill_u64(r, u, SYN_PIXELS);
  const float *p = s->prototypes + (size_t)label * SYN_PIXELS; // p is (28,28)
  int w0 = dw > 0 ? dw : 0, w1 = dw < 0 ? SYN_SIDE + dw : SYN_SIDE; /* columns whose source w - dw is inside */
  for (int h = 0; h < SYN_SIDE; h++) {
    float *row = x + h * SYN_SIDE;
    int sh = h - dh;
    memset(row, 0, sizeof(float) * SYN_SIDE);
    if (sh >= 0 && sh < SYN_SIDE) memcpy(row + w0, p + sh * SYN_SIDE + (w0 - dw), sizeof(float) * (size_t)(w1 - w0));
  }
  add_noise(x, u, SYN_PIXELS);
  y[0] = (float)label;
}

static void synthetic_tokens(const synthetic_t *s, rng_t *r, float *x, float *y) {
  unsigned prev = (unsigned)rng_below(r, SYN_VOCAB);
  for (int t = 0; t < s->T; t++) {
    unsigned next = rng_uniform(r) < SYN_FOLLOW ? s->successor[prev] : (unsigned)rng_below(r, SYN_VOCAB);
    x[t] = (float)prev;
    y[t] = (float)next;
    prev = next;
  }
}

static void synthetic_get(const dataset_t *ds, data_split_t split, uint64_t id, float *x, float *y) {
  const synthetic_t *s = ds->source;
  rng_t r;
  rng_seed_stream(&r, s->seed, id, STREAM_SAMPLE + (uint64_t)split);
  if (s->T)
    synthetic_tokens(s, &r, x, y);
  else
    synthetic_image(s, &r, x, y);
}

static void synthetic_free(void *source) {
  synthetic_t *s = source;
  free(s->prototypes);
  free(s);
}

void synthetic_open(dataset_t *ds, const data_opts_t *o) {
  if (o->synthetic_samples < 1)
    surge_input_error("[data] synthetic_samples = %ld must be at least 1 for the synthetic source",
                      o->synthetic_samples);
  synthetic_t *s = xcalloc(1, sizeof *s);
  s->seed = o->seed;
  if (o->sequences) {
    if (o->context < 1) surge_input_error("[model] gpt_context = %d must be at least 1", o->context);
    s->T = o->context;
    rng_t r;
    rng_seed_stream(&r, o->seed, 0, STREAM_SUCCESSOR);
    uint32_t perm[SYN_VOCAB];
    rng_permutation(&r, perm, SYN_VOCAB);
    for (int v = 0; v < SYN_VOCAB; v++) s->successor[v] = (uint8_t)perm[v];
    ds->sample_shape = shape1(s->T);
    ds->classes = SYN_VOCAB;
    ds->targets_per_sample = s->T;
    ds->is_tokens = 1;
  } else {
    s->prototypes = make_prototypes(o->seed);
    ds->sample_shape = shape3(1, SYN_SIDE, SYN_SIDE);
    ds->classes = SYN_CLASSES;
    ds->targets_per_sample = 1;
    ds->is_tokens = 0;
  }
  uint64_t n = (uint64_t)o->synthetic_samples;
  ds->size[SPLIT_TRAIN] = n;
  /* past 2^24 samples the order is computed, not a table (4 GB at the 10^9 the key allows); below,
   * the table's order, as every run of a smaller set had */
  ds->order_implicit = n > ((uint64_t)1 << 24);
  ds->size[SPLIT_TEST] = (n + SYN_TEST_DIVISOR - 1) / SYN_TEST_DIVISOR;
  snprintf(ds->name, sizeof ds->name, "synthetic");
  ds->test_split = "test";
  ds->get_sample = synthetic_get;
  ds->free_source = synthetic_free;
  ds->source = s;
}
