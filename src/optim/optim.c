/* SGD and AdamW over the whole parameter slab: state here, arithmetic in the backend. */
#include "optim/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/slab.h"

void optim_init(optim_t *o, optim_opts_t opts, const backend_t *be, size_t n) {
  optim_init_shard(o, opts, be, n, 0, n);
}

void optim_init_shard(optim_t *o, optim_opts_t opts, const backend_t *be, size_t n, size_t lo, size_t hi) {
  size_t r[2] = {lo, hi};
  optim_init_ranges(o, opts, be, n, r, 1);
}

void optim_init_ranges(optim_t *o, optim_opts_t opts, const backend_t *be, size_t n, const size_t *ranges,
                       int nranges) {
  memset(o, 0, sizeof *o);
  static const size_t none[2] = {0, 0};
  if (nranges < 1) ranges = none, nranges = 1; /* a rank with an empty shard */
  for (int i = 0; i < nranges; i++)
    if (ranges[2 * i] > ranges[2 * i + 1] || ranges[2 * i + 1] > n || (i > 0 && ranges[2 * i] < ranges[2 * i - 1]))
      surge_runtime_error("optim_init_ranges: floats [%zu, %zu) of a slab of %zu (range %d of %d)", ranges[2 * i],
                          ranges[2 * i + 1], n, i, nranges);
  o->ranges = xcalloc(2 * (size_t)nranges, sizeof *o->ranges);
  memcpy(o->ranges, ranges, 2 * (size_t)nranges * sizeof *ranges);
  o->nranges = nranges;
  for (int i = 0; i < nranges; i++) o->floats += ranges[2 * i + 1] - ranges[2 * i];
  size_t lo = ranges[0], hi = ranges[2 * nranges - 1];
  if (strcmp(opts.name, "sgd") == 0)
    o->kind = OPTIM_SGD;
  else if (strcmp(opts.name, "adamw") == 0)
    o->kind = OPTIM_ADAMW;
  else
    surge_input_error("unknown optimizer '%s' in [train] optimizer (expected sgd or adamw)", opts.name);
  o->momentum = (float)opts.momentum;
  o->weight_decay = (float)opts.weight_decay;
  o->beta1 = (float)opts.beta1;
  o->beta2 = (float)opts.beta2;
  o->eps = (float)opts.eps;
  o->nesterov = opts.nesterov;
  o->matrices_only = strcmp(opts.decay, "matrices") == 0;
  o->schedule = opts.schedule;
  o->be = be;
  o->n = n;
  o->lo = lo;
  o->hi = hi;
  o->t = 0;
  // sgd without momentum keeps no state; the backend ignores its buffer then (an empty shard: 1 float)
  size_t floats = o->floats ? o->floats : 1;
  if (o->kind == OPTIM_ADAMW || o->momentum != 0.0f) o->m = be->alloc(floats);
  if (o->kind == OPTIM_ADAMW) o->v = be->alloc(floats);
}

size_t optim_state_bytes(const optim_t *o) {
  return sizeof(float) * o->floats * (size_t)((o->m ? 1 : 0) + (o->v ? 1 : 0));
}

void optim_free(optim_t *o) {
  if (o->m) o->be->free(o->m);
  if (o->v) o->be->free(o->v);
  o->m = o->v = NULL;
  free(o->ranges);
  o->ranges = NULL;
  free(o->undecayed);
  o->undecayed = NULL;
  o->nundecayed = 0;
}

void optim_exempt_vectors(optim_t *o, const struct slab_layout *layout) {
  if (!o->matrices_only || o->weight_decay == 0.0f) return;
  free(o->undecayed);
  o->undecayed = xcalloc(2 * (size_t)(layout->n ? layout->n : 1), sizeof *o->undecayed);
  o->nundecayed = 0;
  size_t last_end = 0;
  for (int i = 0; i < layout->n; i++) { /* (a layout's tensors lie in slab order) */
    const slab_tensor_t *t = &layout->t[i];
    if (t->ndim >= 2 || t->n == 0) continue;
    if (t->off < last_end) surge_runtime_error("optim_exempt_vectors: tensor %s out of slab order (a bug)", t->name);
    if (o->nundecayed > 0 && o->undecayed[2 * o->nundecayed - 1] == t->off)
      o->undecayed[2 * o->nundecayed - 1] = t->off + t->n; /* adjoining: one span */
    else
      o->undecayed[2 * o->nundecayed] = t->off, o->undecayed[2 * o->nundecayed + 1] = t->off + t->n, o->nundecayed++;
    last_end = t->off + t->n;
  }
}

/* The state range holding the floats [lo, hi) (lo < hi), or -1. */
static int range_of(const optim_t *o, size_t lo, size_t hi) {
  for (int i = 0; i < o->nranges; i++)
    if (lo >= o->ranges[2 * i] && hi <= o->ranges[2 * i + 1]) return i;
  return -1;
}

size_t optim_state_at(const optim_t *o, size_t i) {
  size_t at = 0;
  for (int k = 0; k < o->nranges; k++) {
    if (i >= o->ranges[2 * k] && i <= o->ranges[2 * k + 1]) return at + (i - o->ranges[2 * k]);
    at += o->ranges[2 * k + 1] - o->ranges[2 * k];
  }
  surge_runtime_error("optim_state_at: slab float %zu lies in none of the state's %d ranges (a bug)", i, o->nranges);
}

void optim_step(optim_t *o, float *params, const float *grads, float lr) {
  optim_step_part(o, params, grads, lr, NULL, 0, o->n);
}

static void check_range(const optim_t *o, size_t lo, size_t hi) {
  if (hi > o->n || lo > hi || (hi > lo && range_of(o, lo, hi) < 0))
    surge_runtime_error("optim_step_part: floats [%zu, %zu) of a slab of %zu whose state covers %d range%s from %zu to "
                        "%zu", lo, hi, o->n, o->nranges, o->nranges == 1 ? "" : "s", o->lo, o->hi);
}

static void update_piece(const optim_t *o, float *params, const float *grads, float lr, const float *gs, size_t lo,
                         size_t hi, float weight_decay);

/* The update of floats [lo, hi) at step t (t not advanced), reading the gradients as gs[0] grads: in pieces at the
 * edges of the undecayed spans (decay = matrices), those without weight decay. */
static void update_range(const optim_t *o, float *params, const float *grads, float lr, const float *gs, size_t lo,
                         size_t hi) {
  for (int k = 0; k < o->nundecayed && lo < hi; k++) {
    const size_t a = o->undecayed[2 * k], b = o->undecayed[2 * k + 1];
    if (b <= lo) continue;
    if (a >= hi) break;
    if (a > lo) update_piece(o, params, grads, lr, gs, lo, a, o->weight_decay);
    const size_t end = b < hi ? b : hi;
    update_piece(o, params, grads, lr, gs, a > lo ? a : lo, end, 0.0f);
    lo = end;
  }
  if (lo < hi) update_piece(o, params, grads, lr, gs, lo, hi, o->weight_decay);
}

static void update_piece(const optim_t *o, float *params, const float *grads, float lr, const float *gs, size_t lo,
                         size_t hi, float weight_decay) {
  const backend_t *be = o->be;
  size_t n = hi - lo;
  if (n == 0) return; /* an empty range may lie outside the state */
  size_t at = optim_state_at(o, lo); /* the ranges' state one after the other */
  float *m = o->m ? o->m + at : NULL, *v = o->v ? o->v + at : NULL;
  if (o->kind == OPTIM_SGD) {
    be->sgd_step(n, params + lo, grads + lo, m, lr, o->momentum, o->nesterov, weight_decay, o->t == 0, gs);
  } else {
    // bias corrections for step number t+1, in double as PyTorch computes them
    double step = (double)(o->t + 1);
    const adamw_coefs_t c = {.lr = lr, .b1 = o->beta1, .b2 = o->beta2, .eps = o->eps, .wd = weight_decay,
                             .bc1 = (float)(1.0 - pow(o->beta1, step)), .bc2 = (float)(1.0 - pow(o->beta2, step))};
    be->adamw_step(n, params + lo, grads + lo, m, v, c, gs);
  }
}

void optim_step_part(optim_t *o, float *params, const float *grads, float lr, const float *gs, size_t lo, size_t hi) {
  check_range(o, lo, hi);
  update_range(o, params, grads, lr, gs, lo, hi);
  o->t++;
}

/* Floats per block: 16 KiB of gradients, in L1 from their squares to their update. */
enum { SUMSQ_BLOCK_FLOATS = 4096 };

/* *acc += the sum of squares of grads over [a, b) within the ranges from *r on (ranges before a are
 * passed over for good: blocks come in order), range by range. */
static void ranges_sumsq(const backend_t *be, const float *grads, size_t a, size_t b, const size_t *ranges,
                         int nranges, int *r, double *acc) {
  if (!ranges) {
    be->sumsq_add(grads + a, b - a, acc);
    return;
  }
  while (*r < nranges && ranges[2 * *r + 1] <= a) ++*r;
  for (int k = *r; k < nranges && ranges[2 * k] < b; k++) {
    size_t from = ranges[2 * k] > a ? ranges[2 * k] : a, to = ranges[2 * k + 1] < b ? ranges[2 * k + 1] : b;
    if (to > from) be->sumsq_add(grads + from, to - from, acc);
  }
}

/* The update of [lo, hi) at step t (t not advanced) with the squares of its gradients in the ranges
 * from *r on added to *acc, block by block. */
static void update_sumsq(const optim_t *o, float *params, const float *grads, float lr, size_t lo, size_t hi,
                         const size_t *ranges, int nranges, int *r, double *acc) {
  check_range(o, lo, hi);
  const size_t block = o->be->host_memory ? SUMSQ_BLOCK_FLOATS : hi - lo; /* a device: one call each */
  for (size_t at = lo; at < hi; at += block) {
    size_t end = hi - at < block ? hi : at + block;
    ranges_sumsq(o->be, grads, at, end, ranges, nranges, r, acc);
    update_range(o, params, grads, lr, NULL, at, end);
  }
}

void optim_step_part_sumsq(optim_t *o, float *params, const float *grads, float lr, size_t lo, size_t hi,
                           const size_t *ranges, int nranges, double *acc) {
  int r = 0;
  update_sumsq(o, params, grads, lr, lo, hi, ranges, nranges, &r, acc);
  o->t++;
}

void optim_step_ranges(optim_t *o, float *params, const float *grads, float lr, const float *gs, const size_t *upd,
                       int nupd, const size_t *ranges, int nranges, double *acc) {
  int r = 0;
  for (int i = 0; i < nupd; i++) {
    if (acc) {
      update_sumsq(o, params, grads, lr, upd[2 * i], upd[2 * i + 1], ranges, nranges, &r, acc);
    } else {
      check_range(o, upd[2 * i], upd[2 * i + 1]);
      update_range(o, params, grads, lr, gs, upd[2 * i], upd[2 * i + 1]);
    }
  }
  o->t++;
}
