/* The planner's view of a model: a DAG of named nodes with the bytes the cost model needs, and no
 * layer arithmetic. It comes from a model graph (graph_t, the one training builds), from a graph
 * file (graph_file.c, doc/burst.md "Graphs and profiles from files") or from a DeepPool profile
 * (deeppool.c). Node 0 is the input; nodes are in topological order; a node may have any number
 * of inputs (Inception's concatenations have four). */
#ifndef SURGE_BURST_BGRAPH_H
#define SURGE_BURST_BGRAPH_H

#include <stdint.h>

#include "nn/graph.h"

#define BGRAPH_NAME_MAX 64
#define BGRAPH_KIND_MAX 24
#define BGRAPH_MAX_NODES 1000000 /* bound on untrusted files */
#define BGRAPH_MAX_IN 256
#define BGRAPH_MAX_BYTES 1e18 /* bytes per sample of an output, bytes of parameters */

typedef struct bgraph_node {
  char name[BGRAPH_NAME_MAX]; /* one word, no '#' */
  char kind[BGRAPH_KIND_MAX]; /* "input" for node 0; otherwise a label (conv2d, linear, concat, ...) */
  int nin;
  int *in;                    /* [nin] earlier nodes */
  double act_bytes;           /* bytes per sample of the output (moved by re-shards) */
  double grad_bytes;          /* gradient bytes of the node's own parameters (allreduced) */
  int line;                   /* line of the file that defined it (0: not from a file) */
  int rule_line;              /* line of the first rule of the file that joined it into a set (0: none) */
  int tied;                   /* runs on its one input's ranks: a ReLU or GELU the executor fuses into
                               * that node (model_fusion_plan: a ReLU, or a linear's epilogue), whose
                               * profile holds the pair's cost */
  int with;                   /* 0, or the earlier node whose rank set this one must run on: tied's
                               * input, and the first node of a recomputed segment for the others
                               * (their backward re-runs it on one set); always a node whose own
                               * with is 0 */
  int recompute_from;         /* the last node of a recomputed segment: its first node (its backward
                               * re-runs the forward of nodes recompute_from .. this - 1); else 0 */
  int weight_of;              /* 0, or the earlier node whose weight this one uses (a tied output
                               * layer: its embedding's); both run on the same ranks (the executor
                               * does not sum a tied weight's gradient across two sets) */
  double bn_channels;         /* a batch norm with the batch's statistics (kind "batchnorm", its
                               * parameters a weight and a bias of C floats each): C, the channels
                               * whose statistics it sums over its ranks each pass (burst_ctx_bn_us);
                               * 0: no sums (another kind, or [model] batchnorm = local) */
} bgraph_node_t;

typedef struct bgraph {
  int n;
  bgraph_node_t *v;
  char model[64];        /* model name (plan files check it) */
  char source[256];      /* where it came from, for messages: a file name, "model graph" */
  uint64_t fingerprint;  /* structure hash that plan files record */
} bgraph_t;

/* The planner graph of a model graph: activations and gradients in fp32, fingerprint
 * burst_graph_fingerprint(g) (so plan files of zoo models keep theirs); what runs on one rank set
 * (tied, with, weight_of) and what is re-run (recompute_from: g->recompute's segments) as a model of
 * g plans them where every node runs on every rank (model_fusion_plan), which is what surge-profile
 * measured. */
void bgraph_from_graph(const graph_t *g, const char *model, bgraph_t *bg);
/* Start an empty graph (nodes are appended with bgraph_add). */
void bgraph_init(bgraph_t *bg, const char *model, const char *source);
/* Append a node; returns its index. Inputs must be earlier nodes (callers check and report). */
int bgraph_add(bgraph_t *bg, const char *name, const char *kind, int nin, const int *in, double act_bytes,
               double grad_bytes, int line);
/* The fingerprint of a graph that did not come from a graph_t: names, kinds, inputs, bytes and the
 * rules of what shares a rank set (with, weight_of, recompute_from; a node without adds nothing). */
uint64_t bgraph_fingerprint(const bgraph_t *bg);
void bgraph_free(bgraph_t *bg);
/* The gradient bytes of all nodes: the parameters a training step zeroes, sums and updates. */
double bgraph_grad_total(const bgraph_t *bg);
/* Building bgraph_node_t.with from rules that join nodes into one rank set (a union-find whose
 * roots are the sets' first nodes; ranges join in time linear in the nodes, however they overlap). */
typedef struct bgraph_sets {
  int n;
  int *parent; /* [n] */
  int *next;   /* [n + 1] the first node at or after i not yet joined to the node before it */
} bgraph_sets_t;

void bgraph_sets_init(bgraph_sets_t *s, int n);
/* Nodes a and b on one rank set. */
void bgraph_sets_join(bgraph_sets_t *s, int a, int b);
/* Nodes lo .. hi on one rank set. */
void bgraph_sets_join_range(bgraph_sets_t *s, int lo, int hi);
/* The first node of v's set. */
int bgraph_sets_root(bgraph_sets_t *s, int v);
/* Every node's with: its set's first node (0 for that node itself); frees s. */
void bgraph_sets_apply(bgraph_sets_t *s, bgraph_t *g);
void bgraph_sets_free(bgraph_sets_t *s);

/* Each node's limit group into group[g->n]: its set's first node, the sets of a tied weight's users
 * joined (what the amplification limit judges as one choice of rank count: doc/burst.md). */
void bgraph_limit_groups(const bgraph_t *g, int *group);

/* The node whose rank set node v runs on: v's with, else v. */
static inline int bgraph_set_of(const bgraph_t *bg, int v) { return bg->v[v].with ? bg->v[v].with : v; }
/* "file:line: " for a node defined in a file, "" otherwise (into buf). */
const char *bgraph_where(const bgraph_t *bg, int node, char *buf, int len);

#endif
