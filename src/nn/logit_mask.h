/* Padded vocabularies (llm.c pads GPT-2's 50257 tokens to 50304 for the products): the output
 * layer computes logits for every column, and the columns at or beyond the real vocabulary are
 * kept out of the loss and the gradients by adding -inf to them before the softmax. Their
 * probability is then exactly 0, so their logit gradient (softmax - onehot) is exactly 0, no
 * gradient reaches the padded rows of the tied table, and the argmax never picks them. */
#ifndef SURGE_LOGIT_MASK_H
#define SURGE_LOGIT_MASK_H

#include "backend/backend.h"

/* The mask of logit columns [lo, lo+V) for a vocabulary of `valid` real tokens (valid <= 0: no
 * padding): backend memory (V) of 0 (real) and -inf (padding), or NULL when no column is padding. */
float *logit_mask_new(const backend_t *be, int V, int lo, int valid);
/* logits (rows, V) += mask, by row; nothing when mask is NULL. Applying it twice changes nothing. */
void logit_mask_apply(const backend_t *be, const float *mask, int rows, int V, float *logits);

#endif
