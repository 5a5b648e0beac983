/* Batch normalisation (PyTorch's nn.BatchNorm2d on (C,H,W), nn.BatchNorm1d on (C)): each channel is
 * normalised with the mean and biased variance of its values over the whole batch the node runs on,
 * y = (x - mean) rstd weight + bias, rstd = 1/sqrt(var + eps). Parameters weight (C), init 1, and
 * bias (C), init 0; buffers running_mean (C), init 0, and running_var (C), init 1, updated in
 * training as running = (1 - momentum) running + momentum (mean, unbiased variance) and used
 * instead of the batch's in evaluation.
 *
 * The batch is every rank's: in training, forward sums each rank's (count, mean, M2) over the node's
 * rank set (layer_group_t: one sum of R x (1 + 3C) floats, each rank its own slot, combined by
 * Chan's formula in rank order), and backward sums the two per-channel sums of its input gradient
 * (2C floats), so every layout computes one rank's numbers. Each sum is split in two: forward and
 * backward end by starting it, their finish ops wait for it and do the rest, so a layout may run
 * other nodes while it is in flight (the burst executor's overlap). bn_local keeps each rank to its own
 * samples (DDP's default; the maths then changes with the rank count). keep holds the mean and rstd
 * forward used, (2, C). */
#include <string.h>

#include "nn/layer.h"
#include "nn/layer_common.h"

#define BATCHNORM_DEFAULT_EPS 1e-5f
#define BATCHNORM_DEFAULT_MOMENTUM 0.1f

/* The geometry of one sample: C channels of HW values. */
typedef struct bn_dims {
  int C, HW;
} bn_dims_t;

static bn_dims_t bn_dims(const layer_t *l) {
  shape_t s = l->in_shape[0];
  return (bn_dims_t){s.d[0], s.ndim == 3 ? s.d[1] * s.d[2] : 1};
}

static int batchnorm_infer(layer_t *l, char *err, size_t n) {
  if (layer_check_nin(l, "batchnorm", 1, err, n)) return -1;
  shape_t in = l->in_shape[0];
  if (!((in.ndim == 3 || in.ndim == 1) && shape_size(in) > 0)) {
    char buf[64];
    snprintf(err, n, "batchnorm: input must be an image (C,H,W) or features (C), got %s", shape_str(in, buf, sizeof buf));
    return -1;
  }
  if (l->eps < 0.0f || l->momentum < 0.0f || l->momentum > 1.0f) {
    snprintf(err, n, "batchnorm: eps must not be negative and momentum must be in [0, 1], got %g and %g",
             (double)l->eps, (double)l->momentum);
    return -1;
  }
  if (l->eps == 0.0f) l->eps = BATCHNORM_DEFAULT_EPS; /* unset in the prototype */
  if (l->momentum == 0.0f) l->momentum = BATCHNORM_DEFAULT_MOMENTUM;
  int C = in.d[0];
  l->out = in;
  l->np = 2;
  memset(l->pdesc, 0, sizeof l->pdesc);
  l->pdesc[0] = (layer_param_desc_t){"weight", 1, {C, 0, 0, 0}};
  l->pdesc[1] = (layer_param_desc_t){"bias", 1, {C, 0, 0, 0}};
  l->nb = 2;
  memset(l->bdesc, 0, sizeof l->bdesc);
  l->bdesc[0] = (layer_param_desc_t){"running_mean", 1, {C, 0, 0, 0}};
  l->bdesc[1] = (layer_param_desc_t){"running_var", 1, {C, 0, 0, 0}};
  l->bfill[0] = 0.0f;
  l->bfill[1] = 1.0f;
  l->keep = 2 * (size_t)C;
  l->group_floats = 1 + 3 * (size_t)C;
  l->aux_per_sample = 0;
  l->scratch = 1 + 3 * (size_t)C; /* this rank's part when it runs the node alone */
  l->scratch_per_sample = 0;
  /* per element: two passes of statistics (add; sub, square, add), normalise and affine (sub, 2 mul, add) */
  l->flops_per_sample = 8.0 * (double)shape_size(in);
  return 0;
}

static void batchnorm_init(const layer_t *l, float *const *w, rng_t *rng, init_scheme_t scheme) {
  (void)rng, (void)scheme;
  for (int i = 0; i < l->pdesc[0].d[0]; i++) {
    w[0][i] = 1.0f;
    w[1][i] = 0.0f;
  }
}

/* The node's rank set when its statistics span more than this rank, else NULL. */
static const layer_group_t *bn_group(const layer_t *l, const layer_ctx_t *c) {
  return c->group && c->group->ranks > 1 && !l->bn_local ? c->group : NULL;
}

/* Forward: in evaluation the running estimates, in training the batch's statistics (summed over
 * the node's ranks where it has them: this op starts that sum, batchnorm_forward_finish ends it). */
static void batchnorm_forward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  bn_dims_t d = bn_dims(l);
  const layer_group_t *grp = bn_group(l, c);
  if (!c->train) { /* evaluation: the running estimates */
    be->bn_finish(d.C, 0, NULL, l->eps, l->momentum, c->st[0], c->keep);
  } else if (!grp) {
    be->bn_stats(c->B, d.C, d.HW, c->x[0], c->scratch);
    be->bn_finish(d.C, 1, c->scratch, l->eps, l->momentum, c->st[0], c->keep);
  } else {
    // parts (ranks, 1 + 3C): each rank writes its slot, the others' are zero, so the sum gathers them
    size_t P = l->group_floats;
    be->fill(grp->buf, (size_t)grp->ranks * P, 0.0f);
    be->bn_stats(c->B, d.C, d.HW, c->x[0], grp->buf + (size_t)grp->rank * P);
    grp->start(grp->arg, grp->buf, (size_t)grp->ranks * P);
    return; /* the rest in batchnorm_forward_finish */
  }
  // x, y (B, C, HW); keep (2, C): mean, rstd
  be->bn_fwd(c->B, d.C, d.HW, c->x[0], c->keep, c->w[0], c->w[1], c->fuse_relu, c->y);
}

static void batchnorm_forward_finish(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  bn_dims_t d = bn_dims(l);
  const layer_group_t *grp = bn_group(l, c);
  if (!c->train || !grp) return; /* batchnorm_forward did it all */
  grp->wait(grp->arg);
  be->bn_finish(d.C, grp->ranks, grp->buf, l->eps, l->momentum, c->st[0], c->keep);
  be->bn_fwd(c->B, d.C, d.HW, c->x[0], c->keep, c->w[0], c->w[1], c->fuse_relu, c->y);
}

/* The input gradient from the whole batch's per-channel sums (2, C) of g and g xhat. */
static void batchnorm_input_grad(const layer_t *l, const layer_ctx_t *c, const float *sums) {
  bn_dims_t d = bn_dims(l);
  const layer_group_t *grp = bn_group(l, c);
  const float *relu_y = c->fuse_relu ? c->y : NULL; /* dy is then the fused ReLU output's gradient */
  double M = (double)(grp ? grp->batch : c->B) * d.HW;
  if (c->dx[0])
    c->be->bn_bwd(c->B, d.C, d.HW, M, c->x[0], c->keep, c->w[0], c->dy, relu_y, sums, c->dx[0], c->dx_write[0]);
}

/* Backward: this rank's sums (the weight's and bias's gradients), then, where the node has ranks to
 * sum them over, that sum started (batchnorm_backward_finish ends it and writes the input gradient). */
static void batchnorm_backward(const layer_t *l, const layer_ctx_t *c) {
  const backend_t *be = c->be;
  bn_dims_t d = bn_dims(l);
  const layer_group_t *grp = bn_group(l, c);
  const float *relu_y = c->fuse_relu ? c->y : NULL;
  // part (2, C): sum g, sum g xhat over this rank's samples: the bias's and the weight's gradients
  float *part = grp ? grp->buf : c->scratch;
  be->bn_bwd_sums(c->B, d.C, d.HW, c->x[0], c->keep, c->dy, relu_y, part);
  be->axpy((size_t)d.C, 1.0f, part, c->dw[1]);
  be->axpy((size_t)d.C, 1.0f, part + d.C, c->dw[0]);
  if (grp)
    grp->start(grp->arg, part, 2 * (size_t)d.C); /* the whole batch's sums, for batchnorm_backward_finish */
  else
    batchnorm_input_grad(l, c, part);
}

static void batchnorm_backward_finish(const layer_t *l, const layer_ctx_t *c) {
  const layer_group_t *grp = bn_group(l, c);
  if (!grp) return; /* batchnorm_backward did it all */
  grp->wait(grp->arg);
  batchnorm_input_grad(l, c, grp->buf);
}

const layer_ops_t layer_batchnorm_ops = {"batchnorm",         batchnorm_infer, batchnorm_init,
                                         batchnorm_forward,   batchnorm_backward, 1,
                                         batchnorm_forward_finish, batchnorm_backward_finish, 0, 0, 0, 0};
