/* A residual add's input gradients in the add's own gradient buffer (issue 32 item 1: the residual
 * stream's gradient shared along the block instead of copied). An add's backward gives each input the
 * gradient of its output unchanged; where the add writes an input's gradient whole (model_t.writer)
 * that gradient can be the add's own buffer, so the add copies nothing. In a gpt the residual stream's
 * gradient then lives in one buffer from the logits' layer norm down to the embedding, and each
 * block's projections read theirs from it too. */
#ifndef SURGE_GRAD_ALIAS_H
#define SURGE_GRAD_ALIAS_H

#include "nn/model.h"

/* For grad_pool_plan: first[j], last[j] the phases of node j in the layout's backward pass (-1: none), lo[b], hi[b]
 * the span of node b's gradient (lo[b] < 0: not pooled). Sets group[b] = the node whose buffer b's gradient takes
 * (b itself where it takes its own) and widens each such node's span over those of the gradients that take its
 * buffer (model_t.nadd_shared counts them once the buffers are given). An add i that is not fused with a ReLU passes
 * its buffer on to an input s when both are pooled and i writes s's gradient (model_t.writer), and no node that adds
 * into s's gradient later does so while a gradient already in the buffer is still to be read. Both inputs take
 * it only where one of them (the branch) has the add as its only consumer and nothing adds into the buffer before
 * the branch's backward has read it; the branch passes the buffer on no further. */
void grad_alias_plan(const model_t *m, const int *first, const int *last, int *lo, int *hi, int *group);

#endif
