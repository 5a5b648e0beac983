/* The planner's input for the programs that take it from files (surge-plan, surge-sim): a graph
 * file, or a DeepPool profile (with a structure file for branchy models), and the network constants
 * from the file, a deck, a preset or the command line, in that order of precedence (later wins). */
#ifndef SURGE_BURST_PLAN_INPUT_H
#define SURGE_BURST_PLAN_INPUT_H

#include <stdio.h>

#include "burst/graph_file.h"
#include "burst/plan.h"
#include "core/cli.h"
#include "io/config.h"

/* The command-line options of this module, for a program's flag table. */
#define PLAN_INPUT_FLAGS                                                                                     \
  "--graph FILE", "--deeppool FILE", "--structure FILE", "--network PRESET", "--p2p-latency US",         \
      "--p2p-bandwidth BPU", "--allreduce-latency US", "--allreduce-bandwidth BPU"

#define PLAN_INPUT_USAGE                                                                                     \
  "  --graph FILE          a graph file: nodes, bytes and times (doc/burst.md, \"Graphs and profiles\n"        \
  "                        from files\")\n"                                                                   \
  "  --deeppool FILE       a DeepPool profile (.prof): a chain in row order, or the nodes of\n"               \
  "  --structure FILE      a structure graph file taking the rows in order (branchy models)\n"               \
  "  --network PRESET      network constants: a100 (DeepPool's A100 planner: 40 us and 266000\n"         \
  "                        bytes/us point-to-point, 266000 bytes/us and no latency for allreduce)\n"     \
  "  --p2p-latency US, --p2p-bandwidth BYTES_PER_US, --allreduce-latency US,\n"                             \
  "  --allreduce-bandwidth BYTES_PER_US   one constant (over the file, the deck and the preset)\n"

typedef struct plan_input {
  bgraph_t g;
  burst_profile_t p;
  int imported;            /* from a DeepPool profile */
  deeppool_report_t report;
} plan_input_t;

/* Whether the command line names a file input (--graph or --deeppool). */
int plan_input_given(const cli_t *cli);
/* Load the input the command line names; cfg (a deck, or NULL) may give network constants. Notes
 * for the user (what the importer did) go to notes. Missing network constants are an input error
 * naming how to give them. */
void plan_input_load(const cli_t *cli, const config_t *cfg, plan_input_t *in, FILE *notes);
/* The same from named files (one of graph and deeppool; structure only with deeppool), without
 * network constants (the net fields stay as the file gives them). */
void plan_input_load_files(const char *graph, const char *deeppool, const char *structure, plan_input_t *in,
                           FILE *notes);
void plan_input_free(plan_input_t *in);
/* Apply the deck's and the command line's network constants over net (net's own come first). */
void plan_input_network(const cli_t *cli, const config_t *cfg, burst_net_t *net);
/* A per-layer amplification limit: a number >= 1 or "none" (flag names it in errors). */
double plan_parse_amp(const char *text, const char *flag);
/* A positive number (flag names it in errors). */
double plan_parse_positive(const char *text, const char *flag);
/* A rank-count policy: divisors, pow2 or any. */
burst_ranks_policy_t plan_parse_policy(const char *text);

#endif
