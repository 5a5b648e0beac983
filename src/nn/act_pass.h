/* Activations that live only through the forward pass (a training model): an output that no backward reads
 * (its own layer's never does, layer_ops_t.output_unread, and each reader's never reads that input,
 * layer_ops_t.inputs_unread: a gpt's attention and feed-forward projections, read by the residual adds) is
 * dead once its readers' forwards ran, so such outputs take turns in one buffer (model_t.act_pass) where their
 * lives do not overlap. The buffer says whose rows it holds; a reader finds them there or the run stops (a bug). */
#ifndef SURGE_ACT_PASS_H
#define SURGE_ACT_PASS_H

#include "nn/model.h"

/* Which nodes of a training model being planned (fusion, epilogues, recomputed segments and held activations
 * known: held[i], act16.h) pass their output through the shared buffer, into pass[i] (g->n entries); returns how
 * many. None without allowed() (the layout's: every reader runs on the node's samples). A node passes where it is
 * neither the input nor the output, fused with a ReLU, run in another's epilogue or running one, held, nor in a
 * recomputed segment's shared buffers; its layer's forward ends without a sum over ranks (no forward_finish);
 * no backward reads its output (above); and no other passing node runs between it and its last reader in the
 * forward's node order (every layout runs a pass's nodes in that order). */
int act_pass_plan(const model_t *m, int (*allowed)(void *arg, int node, int next), void *arg, const int *held,
                  int *pass);

/* Node j's forward writes rows [off, off + B) of its output: the buffer holds them from now (a passing node). */
void act_pass_wrote(model_t *m, int j, int off, int B);
/* Node i reads rows [off, off + B) of node src's output: where src passes, they must be the buffer's. */
void act_pass_check(const model_t *m, int i, int src, int off, int B);

#endif
