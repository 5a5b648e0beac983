/* What must share a rank set, in a graph file (doc/burst.md, "Graphs and profiles from files"):
 * lines after the node lines, one per node that has such a rule (bgraph_node_t.tied, with,
 * weight_of, recompute_from), so that a model exported from a deck plans from its file as it plans
 * from the deck:
 *
 *   fused b2                       b2 (one input) runs fused into its input, on its ranks, and is
 *                                  judged with it by the amplification limit (a ReLU, a GELU)
 *   same_ranks l0.qkv l0.ln1       l0.qkv runs on the ranks of l0.ln1, an earlier node
 *   shares_weight lm_head embed    lm_head uses the weight of embed, an earlier node: both on the
 *                                  same ranks (the planner keeps such pairs on the top series)
 *   recompute l0.add2 l0.ln1       the backward of l0.add2 first re-runs the forward of l0.ln1 up to
 *                                  the node before l0.add2 ([train] recompute), all on one rank set
 *
 * Each names nodes the file defines, other than the input; a node takes each rule at most once, and
 * fused or same_ranks not both; a node has at most one node fused into it; recomputed segments do not
 * overlap. Every problem is an input error naming file:line. */
#ifndef SURGE_BURST_GRAPH_TIES_H
#define SURGE_BURST_GRAPH_TIES_H

#include <stdio.h>

#include "burst/bgraph.h"
#include "burst/textio.h"

typedef struct graph_tie {
  int kind;                      /* graph_tie_kind_t (graph_ties.c) */
  char node[BGRAPH_NAME_MAX];    /* the node the rule is about */
  char other[BGRAPH_NAME_MAX];   /* the earlier node it names ("" for fused) */
  int line;
} graph_tie_t;

typedef struct graph_ties {
  int n, cap;
  graph_tie_t *v;
} graph_ties_t;

/* Whether the current line is a rule (its words checked, kept in ties): 1, else 0. */
int graph_ties_line(tin_t *t, graph_ties_t *ties);
/* The rules onto g, whose nodes are in their final (topological) order; path names the file. */
void graph_ties_apply(const graph_ties_t *ties, bgraph_t *g, const char *path);
void graph_ties_free(graph_ties_t *ties);
/* g's rules as lines (none when it has none). */
void graph_ties_write(FILE *f, const bgraph_t *g);

#endif
