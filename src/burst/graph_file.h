/* Graphs and profiles from files (doc/burst.md, "Graphs and profiles from files"): the planner's
 * input without a deck. A graph file is text, one line per node:
 *
 *   surge-graph 1
 *   model vgg16
 *   batches 1 2 4 8 16 32 64        per-rank batches of the time columns
 *   interpolate linear              optional: batches between the columns are interpolated
 *   fingerprint 5e0c2b7a11d3f0e4    optional: the model graph's, when exported from a deck's model
 *                                   (so its plan files fit); else computed from the nodes
 *   p2p_alpha_us 40                 optional network constants (plan.h's cost model)
 *   p2p_bytes_per_us 266000
 *   ar_alpha_us 40
 *   ar_bytes_per_us 266000
 *   # name  kind    inputs  out_bytes  param_bytes  us@1 us@2 ...
 *   input   input   -       602112     0
 *   conv1   conv2d  input   12845056   7168         2157 ...
 *   cat     concat  a,b,c   ...
 *   fused   b2                      optional rules: what runs on one rank set (graph_ties.h)
 *   end
 *
 * out_bytes: bytes per sample of the node's output; param_bytes: bytes of its parameters (their
 * gradient is allreduced); times: forward+backward microseconds on one rank at each per-rank batch,
 * '-' where not measured. Nodes may come in any order; inputs are comma-separated names. A file
 * without 'batches' is a structure (no time columns) for the DeepPool importer, where out_bytes
 * and param_bytes may be '-' (taken from the profile).
 *
 * DeepPool's profile format (seojinpark/DeepPool, its profile folder): one line per (layer, per-GPU
 * batch), "type{params as JSON}[batch][input dims]  total_ms  fwd_us  bwd_us", the layers of one
 * batch in model order, groups ended by a "SUM(avg)" or "sum:" line. */
#ifndef SURGE_BURST_GRAPH_FILE_H
#define SURGE_BURST_GRAPH_FILE_H

#include "burst/bgraph.h"
#include "burst/profile.h"

/* A network constant nobody gave yet. */
#define BURST_NET_UNSET NAN

/* Read a graph file into g and its times into p (p->net fields the file does not give are
 * BURST_NET_UNSET). structure: the file may lack times ('-' bytes read as NAN). Every problem is
 * an input error naming file:line: an unknown input, a cycle, a duplicate name, a node line with
 * too few or too many columns, negative or non-finite numbers, more than one input or output node. */
void graph_file_read(const char *path, int structure, bgraph_t *g, burst_profile_t *p);
/* Write g and p in the same format (columns: the union of the profile's batches). */
void graph_file_write(const char *path, const bgraph_t *g, const burst_profile_t *p);

/* What the DeepPool importer did, for the user. */
typedef struct deeppool_report {
  int rows;           /* profile rows per batch (layers) */
  int batches;        /* per-batch groups read */
  int fused;          /* in-place ReLUs folded into their producer (their row holds its backward) */
  int missing;        /* graph nodes with no row: charged 1 us at every batch, as the original planner did */
  char missing_names[512]; /* some of their names */
} deeppool_report_t;

/* Import a DeepPool profile: times per (layer, batch) = forward + backward, bytes from each row's
 * layer type, parameters and input dimensions. Without a structure the layers form a chain in row
 * order (VGG-16, Wide-ResNet-101-2); with one (a structure graph file) its nodes take the rows in
 * file order, a node taking the next row whose layer type is its kind, and nodes without a row
 * (concatenations) cost 1 us. The profile interpolates per-rank batches between its grid's. The
 * network constants are left unset. */
void deeppool_import(const char *prof_path, const char *structure_path, const char *model, bgraph_t *g,
                     burst_profile_t *p, deeppool_report_t *rep);

/* Fill the unset fields of net from `from` (fields of from that are unset are ignored). */
void burst_net_fill(burst_net_t *net, const burst_net_t *from);
/* An input error naming the first unset field and how to give it. */
void burst_net_require(const burst_net_t *net, const char *source);

#endif
