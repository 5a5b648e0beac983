/* bench_gpu_attention: the cuda backend's fused causal attention, forward and backward, at the GPT
 * decks' shapes, under each [backend] attention_kernels setting in bf16 (auto: the tiles in
 * registers; wmma: WMMA in 64-row tiles; wmma32: WMMA in 32-row tiles, the form measured on
 * 2026-12-04) and in fp32 (its own kernels). Prints one line per shape and setting: milliseconds a
 * call and TFLOP/s each way (the causal products' FLOPs: the forward 2 products, the backward 5, of
 * 2 hs multiply-adds for each of the T (T + 1) / 2 visible pairs of each sample and head), and the
 * forward + backward's speed against wmma32's. Exits 77 without a GPU. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "core/timer.h"

typedef struct att_shape {
  const char *what;
  int B, T, C, H;
} att_shape_t;

/* gpt-3d.deck at 1 rank (batch 32, context 256, width 512, 8 heads); GPT-2 124M (context 1024, 12
 * heads of 64; 8 samples a call); a head of 128 at context 1024. */
static const att_shape_t shapes[] = {
    {"gpt-3d", 32, 256, 512, 8}, {"gpt2-124m", 8, 1024, 768, 12}, {"hs128", 8, 1024, 1024, 8}};

typedef struct setting {
  const char *name;
  backend_precision_t precision;
  backend_attention_t attention;
} setting_t;

static const setting_t settings[] = {{"bf16 wmma32", BACKEND_BF16, BACKEND_ATTENTION_WMMA32},
                                     {"bf16 wmma", BACKEND_BF16, BACKEND_ATTENTION_WMMA},
                                     {"bf16 auto", BACKEND_BF16, BACKEND_ATTENTION_AUTO},
                                     {"fp32", BACKEND_FP32, BACKEND_ATTENTION_AUTO}};

typedef struct buffers {
  float *qkv, *y, *lse, *dy, *dqkv;
} buffers_t;

/* Seconds per call of the forward (bwd 0) or backward: 2 warm-up calls, then repetitions until
 * 0.2 s have passed (at least 3). */
static double time_call(const att_shape_t *s, const buffers_t *b, int bwd) {
  const backend_t *be = &backend_cuda;
  int n = 0;
  double t0 = 0, t = 0;
  for (int i = -2; n < 3 || t < 0.2; i++) {
    if (i == 0) be->synchronize(), t0 = surge_now();
    if (bwd) be->attention_bwd(s->B, s->T, s->C, s->H, b->qkv, b->y, b->lse, b->dy, b->dqkv, 1, NULL, 0);
    else be->attention_fwd(s->B, s->T, s->C, s->H, b->qkv, b->y, b->lse, NULL, 0);
    if (i >= 0 && ++n % 3 == 0) be->synchronize(), t = surge_now() - t0;
  }
  return t / n;
}

int main(void) {
  const backend_t *be = &backend_cuda;
  double wmma32_ms[sizeof shapes / sizeof shapes[0]] = {0};
  int header = 0;
  for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
    backend_options_t o = backend_default_options();
    o.precision = settings[k].precision;
    o.attention = settings[k].attention;
    int input_error = 0;
    const char *why = be->open(&o, &input_error);
    if (why) {
      printf("bench_gpu_attention: skipped, no GPU: %s\n", why);
      return 77;
    }
    if (!header) {
      printf("# %s\n", be->context()->device);
      printf("%-10s %-12s %8s %8s %10s %10s %10s %10s %9s\n", "shape", "kernels", "fwd ms", "bwd ms", "fwd TF/s",
             "bwd TF/s", "all TF/s", "all ms", "/wmma32");
      header = 1;
    }
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      const att_shape_t *s = &shapes[i];
      const size_t nqkv = (size_t)s->B * s->T * 3 * s->C, ny = (size_t)s->B * s->T * s->C;
      buffers_t b = {be->alloc(nqkv), be->alloc(ny), be->alloc((size_t)s->B * s->H * s->T), be->alloc(ny),
                     be->alloc(nqkv)};
      be->fill(b.qkv, nqkv, 0.05f);
      be->fill(b.dy, ny, 0.01f);
      const double hs = (double)s->C / s->H, pairs = (double)s->B * s->H * s->T * (s->T + 1) / 2.0;
      const double fwd_flop = 2 * 2 * hs * pairs, bwd_flop = 5 * 2 * hs * pairs;
      const double tf = time_call(s, &b, 0), tb = time_call(s, &b, 1), ms = (tf + tb) * 1e3;
      if (k == 0) wmma32_ms[i] = ms;
      printf("%-10s %-12s %8.3f %8.3f %10.2f %10.2f %10.2f %10.3f %9.2f\n", s->what, settings[k].name, tf * 1e3,
             tb * 1e3, fwd_flop / tf * 1e-12, bwd_flop / tb * 1e-12, (fwd_flop + bwd_flop) / (tf + tb) * 1e-12, ms,
             wmma32_ms[i] / ms);
      be->free(b.qkv), be->free(b.y), be->free(b.lse), be->free(b.dy), be->free(b.dqkv);
    }
    be->close();
  }
  return 0;
}
