/* Activation recomputation ([train] recompute): which nodes of a graph drop their activations after
 * the forward pass and have them re-filled just before the backward pass needs them.
 *
 * A segment is a run of nodes [lo, hi]: its interior lo..hi-1 is read only inside the segment (and
 * reads only the segment or nodes before lo, which are kept), its last node hi is kept. The backward
 * of node hi first re-runs the interior's forward from the kept inputs (model.c), so interiors of
 * segments of one form can share one set of buffers (act, dact, aux), of the model's window rows:
 *   block      each GPT transformer block: ln1 .. fcproj re-run, add2 (the block's output) kept
 *   attention  each attention core: its output and log-sum-exp re-run before the backward of the
 *              projection that reads it (proj kept); the qkv input is kept
 * The arithmetic of a re-run forward is the forward's own (a layer norm run in the epilogue of the
 * residual add before the segment is re-run standalone: the backends' fused add_layernorm_fwd is that
 * layer norm on the sum, bit for bit), so parameters after a step are those without recomputation. */
#ifndef SURGE_RECOMPUTE_H
#define SURGE_RECOMPUTE_H

#include <stddef.h>
#include <string.h>

#include "core/keys.h"
#include "nn/graph.h"

typedef enum recompute_mode {
  RECOMPUTE_NONE = 0,
  RECOMPUTE_BLOCK,
  RECOMPUTE_ATTENTION,
} recompute_mode_t;
#define RECOMPUTE_NAMES "none", "block", "attention" /* the modes' names, in the enum's order */

/* The mode called text, or -1 (inline: programs that read decks without the engine, surge-report,
 * use it without linking this part). */
static inline int recompute_mode_named(const char *text) {
  static const char *const names[] = {RECOMPUTE_NAMES};
  for (int m = 0; m < (int)(sizeof names / sizeof names[0]); m++)
    if (strcmp(text, names[m]) == 0) return m;
  return -1;
}

/* The plan of g->recompute over g's nodes, where fused (model_t.fused) and epi (model_t.epi) are the
 * model's fusion plans and allowed(arg, i, j) says nodes i and j run on the same samples (NULL: all
 * do): first[i] = lo for the last node i of a segment [lo, hi] (else 0); share[i] = the node of an
 * earlier segment of the same form whose buffers interior node i uses (else 0). Returns the
 * segments, or -1 with a reason in err (a segment that is not self-contained, holds running state,
 * or spans nodes on different samples). */
int recompute_plan(const graph_t *g, const int *fused, const int *epi, int (*allowed)(void *arg, int i, int j),
                   void *arg, int *first, int *share, char *err, size_t errlen);

/* The mode's name ("none", "block", "attention"). */
const char *recompute_name(int mode);

#endif
