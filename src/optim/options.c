/* The deck's [train] keys of the update rule: the optimizer, its learning-rate schedule and
 * gradient clipping (optim/optim.h). */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "optim/optim.h"

#define CFG_OPTS optim_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_ENUM_KEY("train", "optimizer", name, "sgd", CFG_VALUES("sgd", "adamw"), "update rule"),
    CFG_FLOAT_KEY("train", "lr", schedule.lr, "0.05", 0, CFG_CLOSED, 10, CFG_CLOSED, "peak learning rate"),
    CFG_FLOAT_KEY("train", "momentum", momentum, "0.9", 0, CFG_CLOSED, 1, CFG_OPEN, "sgd: momentum (0: plain sgd)"),
    CFG_BOOL_KEY("train", "nesterov", nesterov, "false", "sgd: Nesterov momentum"),
    CFG_FLOAT_KEY("train", "weight_decay", weight_decay, "0", 0, CFG_CLOSED, 10, CFG_CLOSED,
                  "decoupled weight decay (adamw) or L2 coefficient (sgd), on the parameters [train] decay names"),
    CFG_ENUM_KEY("train", "decay", decay, "all", CFG_VALUES("all", "matrices"),
                 "the parameters weight_decay applies to: all (biases and norms too, as one torch.optim.AdamW group "
                 "does), or matrices (tensors of 2 or more dimensions: linear and convolution weights, embeddings; "
                 "GPT-2's and llm.c's rule, biases and norm parameters undecayed)"),
    CFG_FLOAT_KEY("train", "beta1", beta1, "0.9", 0, CFG_CLOSED, 1, CFG_OPEN, "adamw: first-moment decay"),
    CFG_FLOAT_KEY("train", "beta2", beta2, "0.95", 0, CFG_CLOSED, 1, CFG_OPEN, "adamw: second-moment decay"),
    CFG_FLOAT_KEY("train", "eps", eps, "1e-8", 0, CFG_OPEN, 1, CFG_CLOSED, "adamw: denominator epsilon"),
    CFG_ENUM_KEY("train", "schedule", schedule.kind, "constant", CFG_VALUES("constant", "cosine"),
                 "constant: lr at every step; cosine: step s (0-based) of a warmup W climbs to lr as lr (s+1)/W, then "
                 "min_lr + (lr - min_lr)(1 + cos(pi (s-W)/(steps-W)))/2: min_lr falls one step past the last "
                 "(llm.c's rule; the last step takes a little more)"),
    CFG_INT_KEY("train", "warmup_steps", schedule.warmup_steps, "0", 0, CFG_MAX_COUNT,
                "cosine: linear warmup to lr over the first N steps"),
    CFG_FLOAT_KEY("train", "min_lr", schedule.min_lr, "0", 0, CFG_CLOSED, 10, CFG_CLOSED,
                  "cosine: the rate the decay ends at, one step past the last (at most lr)"),
    CFG_FLOAT_KEY("train", "clip_norm", clip_norm, "0", 0, CFG_CLOSED, 1e6, CFG_CLOSED,
                  "clip the global gradient norm to this (0: no clipping)"),
};
// clang-format on

/* A problem at key (beside or_key, or ""), its message from fmt. Returns 1. */
static int problem(cfg_problem_t *p, const char *key, const char *or_key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int problem(cfg_problem_t *p, const char *key, const char *or_key, const char *fmt, ...) {
  snprintf(p->key, sizeof p->key, "%s", key);
  snprintf(p->or_key, sizeof p->or_key, "%s", or_key);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->msg, sizeof p->msg, fmt, ap);
  va_end(ap);
  return 1;
}

/* A decay the range admits that the update's float32 arithmetic rounds to 1 (above 1 - 2^-25). */
static int rounds_to_one(double decay) { return (float)decay >= 1.0f; }

/* The cosine schedule decays downwards; the update rule's constants are what they say in float32, the
 * arithmetic the update runs in (a beta of 0.99999999 was 1, and AdamW divided by 1 - 1^t = 0; an eps
 * of 1e-40 was flushed to 0 and divided 0 by 0: every parameter NaN); Nesterov needs momentum, as in
 * PyTorch. */
static int check(const struct config *cfg, cfg_problem_t *p) {
  const optim_opts_t *o = optim_opts(cfg);
  const lr_schedule_t *s = &o->schedule;
  if (s->min_lr > s->lr)
    return problem(p, "train.min_lr", "train.lr", "min_lr (%g) is above lr (%g) (hint: the cosine schedule decays "
                   "from lr down to min_lr)", s->min_lr, s->lr);
  const int adamw = strcmp(o->name, "adamw") == 0;
  if (adamw && rounds_to_one(o->beta1))
    return problem(p, "train.beta1", "", "%.10g is 1 in float32, where AdamW divides by 1 - beta1^t = 0 (hint: at "
                   "most 0.99999994)", o->beta1);
  if (adamw && rounds_to_one(o->beta2))
    return problem(p, "train.beta2", "", "%.10g is 1 in float32, where AdamW divides by 1 - beta2^t = 0 (hint: at "
                   "most 0.99999994)", o->beta2);
  if (adamw && o->eps < FLT_MIN)
    return problem(p, "train.eps", "", "%g is below float32's smallest normal number %g: it is 0 or a denormal that "
                   "[backend] flush_denormals makes 0, and 0/0 would make parameters NaN (hint: eps >= 1.2e-38)",
                   o->eps, (double)FLT_MIN);
  if (!adamw && rounds_to_one(o->momentum))
    return problem(p, "train.momentum", "", "%.10g is 1 in float32: the momentum buffer would never decay (hint: "
                   "at most 0.99999994)", o->momentum);
  if (!adamw && o->nesterov && o->momentum == 0)
    return problem(p, "train.nesterov", "train.momentum", "nesterov = true needs momentum > 0 (PyTorch refuses it "
                   "too; hint: set momentum, or nesterov = false)");
  return 0;
}

const cfg_part_t optim_options = {
    .name = "optim", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(optim_opts_t), .check = check};
