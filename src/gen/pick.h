/* Choosing the next token from a row of logits: greedy (the first maximum) or sampled from
 * softmax(logits / temperature), restricted to the top_k most likely tokens (0: all) and then to the
 * smallest set of the most likely whose probabilities add up to top_p of the rest (1: all), with one
 * uniform draw per token from the sequence's own stream. Ties in likelihood rank by token id. */
#ifndef SURGE_GEN_PICK_H
#define SURGE_GEN_PICK_H

#include "core/rng.h"

typedef struct gen_pick_opts {
  double temperature; /* 0: greedy; > 0: sampled */
  int top_k;          /* 0: off */
  double top_p;       /* in (0, 1]; 1: off */
} gen_pick_opts_t;

/* Scratch for gen_pick over rows of V logits. */
typedef struct gen_pick_work {
  int V;
  struct gen_ranked { float logit; int id; } *ranked; /* (V) */
} gen_pick_work_t;
void gen_pick_work_init(gen_pick_work_t *w, int V);
void gen_pick_work_free(gen_pick_work_t *w);

/* The token for logits[0..V) (V <= w->V; the columns past the vocabulary already left out). */
int gen_pick(const float *logits, int V, const gen_pick_opts_t *o, rng_t *r, gen_pick_work_t *w);

#endif
