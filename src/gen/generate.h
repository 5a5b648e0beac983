/* Autoregressive generation of a batch of sequences on one engine: every sequence starts at
 * position 0 and all advance one position per step, so the engine sees one position count for the
 * whole batch; a sequence feeds its prompt's tokens first, then from its last prompt token on the
 * token chosen from each step's logits (gen/pick.h), until it has `tokens` new ones. A sequence
 * whose prompt is shorter than the longest starts choosing earlier; one that is done feeds its
 * last token again, whose logits nobody reads. Sequence b draws from its own stream (seed,
 * stream[b]), so a sample does not depend on the batch it is generated in. */
#ifndef SURGE_GEN_GENERATE_H
#define SURGE_GEN_GENERATE_H

#include <stdint.h>

#include "gen/engine.h"
#include "gen/pick.h"

typedef struct gen_batch {
  int B;
  const int *const *prompt; /* (B) each a prompt of len[b] >= 1 ids below `vocab` */
  const int *len;           /* (B) */
  const uint64_t *stream;   /* (B) the random stream of each sequence */
  int **out;                /* (B) each (len[b] + tokens): the prompt, then the new tokens (written) */
} gen_batch_t;

typedef struct gen_stats {
  long steps;     /* engine steps (positions) */
  long tokens;    /* new tokens chosen (B * tokens) */
  double seconds; /* wall time of all steps, prompts included */
} gen_stats_t;

/* Generate `tokens` new tokens for every sequence of the batch (e->B of them). Every prompt plus
 * its new tokens must fit the engine's model's context (checked by the caller; a bug here). vocab:
 * the ids that may be chosen (the logits past it are padding). */
gen_stats_t gen_run(gen_engine_t *e, const gen_batch_t *b, int tokens, int context, int vocab,
                    const gen_pick_opts_t *o, uint64_t seed);

#endif
