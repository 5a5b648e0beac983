/* The deck's [train] keys of the update rule: the optimizer, its learning-rate schedule and
 * gradient clipping (optim/optim.h). */
#include <stdio.h>

#include "optim/optim.h"

#define CFG_OPTS optim_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_ENUM_KEY("train", "optimizer", name, "sgd", CFG_VALUES("sgd", "adamw"), "update rule"),
    CFG_FLOAT_KEY("train", "lr", schedule.lr, "0.05", 0, CFG_CLOSED, 10, CFG_CLOSED, "peak learning rate"),
    CFG_FLOAT_KEY("train", "momentum", momentum, "0.9", 0, CFG_CLOSED, 1, CFG_OPEN,
                  "sgd: momentum (0: plain sgd; at most 0.99999994, float32's largest below 1)"),
    CFG_BOOL_KEY("train", "nesterov", nesterov, "false", "sgd: Nesterov momentum (needs momentum > 0)"),
    CFG_FLOAT_KEY("train", "weight_decay", weight_decay, "0", 0, CFG_CLOSED, 10, CFG_CLOSED,
                  "decoupled weight decay (adamw) or L2 coefficient (sgd), on the parameters [train] decay names"),
    CFG_ENUM_KEY("train", "decay", decay, "all", CFG_VALUES("all", "matrices"),
                 "the parameters weight_decay applies to: all (biases and norms too, as one torch.optim.AdamW group "
                 "does), or matrices (tensors of 2 or more dimensions: linear and convolution weights, embeddings; "
                 "GPT-2's and llm.c's rule, biases and norm parameters undecayed)"),
    CFG_FLOAT_KEY("train", "beta1", beta1, "0.9", 0, CFG_CLOSED, 1, CFG_OPEN,
                  "adamw: first-moment decay (at most 0.99999994, float32's largest below 1)"),
    CFG_FLOAT_KEY("train", "beta2", beta2, "0.95", 0, CFG_CLOSED, 1, CFG_OPEN,
                  "adamw: second-moment decay (at most 0.99999994)"),
    CFG_FLOAT_KEY("train", "eps", eps, "1e-8", 0, CFG_OPEN, 1, CFG_CLOSED,
                  "adamw: denominator epsilon (at least 1.17549435e-38, float32's smallest normal number)"),
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

/* The cosine schedule decays downwards. (The constants' float32 rules, which only a run that trains
 * applies, are io/options.h's optim_check_trainable: a deck stored in an earlier run's log or model
 * file must still read.) */
static int check(const struct config *cfg, cfg_problem_t *p) {
  const lr_schedule_t *s = &optim_opts(cfg)->schedule;
  if (s->min_lr <= s->lr) return 0;
  snprintf(p->key, sizeof p->key, "train.min_lr");
  snprintf(p->or_key, sizeof p->or_key, "train.lr");
  snprintf(p->msg, sizeof p->msg, "min_lr (%g) is above lr (%g) (hint: the cosine schedule decays from lr down to "
           "min_lr)", s->min_lr, s->lr);
  return 1;
}

const cfg_part_t optim_options = {
    .name = "optim", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(optim_opts_t), .check = check};
