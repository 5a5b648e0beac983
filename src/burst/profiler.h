/* The burst profiler: measures what the planner plans from (burst/profile.h) on the job's own
 * backend and network, and the profile file that carries it to surge-plan (HDF5, doc/burst.md):
 *   - compute: forward+backward time of every node at every per-rank batch the planner may choose
 *     (burst_profile_batches for the deck's global batch and the job's G ranks), after warm-up
 *     runs, over repeats: the median (what the planner uses) and the spread (max - min);
 *   - network, on >= 2 ranks: ping-pong between rank 0 and a rank on another node (rank 1 when all
 *     share one node) and allreduce over the world, each fitted as alpha + bytes / beta
 *     (burst_fit_alpha_beta); on 1 rank, defaults marked as not measured. */
#ifndef SURGE_BURST_PROFILER_H
#define SURGE_BURST_PROFILER_H

#include <stdint.h>

#include "burst/plan.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "io/deck.h"
#include "nn/model.h"
#include "optim/optim.h"

/* Network numbers used when the profiling run has one rank (nothing to measure). */
#define BURST_DEFAULT_ALPHA_US 5.0
#define BURST_DEFAULT_BYTES_PER_US 1e4

/* One network measurement: message sizes and their median times. */
#define BURST_NET_SIZES 8
typedef struct burst_net_samples {
  int n;
  double bytes[BURST_NET_SIZES];
  double us[BURST_NET_SIZES];
} burst_net_samples_t;

/* Everything a profiling run measures, and what the profile file holds. */
typedef struct burst_measured {
  char model[32];          /* [model] zoo */
  char backend[16];
  char precision[8];       /* [backend] precision: fp32 | bf16 */
  char optimizer[16];      /* [train] optimizer: its update is in step_us */
  uint64_t fingerprint;    /* burst_graph_fingerprint */
  int global_batch;        /* B */
  int ranks;               /* G the batches were chosen for */
  int profiled_ranks;      /* world size of the profiling run */
  int warmup, repeats;
  int nbatch;
  int *batch;              /* [nbatch] per-rank batches, descending */
  double *median_us;       /* [node * nbatch + k]; the input node: 0 */
  double *spread_us;       /* [node * nbatch + k]: max - min over the repeats */
  int net_measured;        /* 0: net holds the defaults */
  burst_net_t net;
  burst_net_samples_t p2p, ar; /* the fitted points (empty when not measured) */
  int p2p_peer;            /* the rank the ping-pong ran with rank 0 (not in the profile file) */
  int p2p_other_node;      /* 1: p2p_peer is on another node than rank 0 (MPI's shared-memory view) */
  burst_step_costs_t step; /* the rest of a step (burst_profile_t.step) */
} burst_measured_t;

/* A command-line integer option (e.g. "--ranks", "8") of at least min (and at most max): an input
 * error otherwise. */
int burst_option_int(const char *option, const char *text, int min);
int burst_option_int_in(const char *option, const char *text, int min, int max);

/* Open the deck's data and build its model graph (shape errors blame [model] keys). */
dataset_t *burst_deck_graph(const config_t *cfg, const deck_t *deck, graph_t *g);

/* The deck's global batch against the ranks a profile or plan is made for (doing: "profiled for",
 * "planned for"): below them, an input error at [train] global_batch's line, as surge-train refuses
 * every such job (its burst layout gives every rank at least one sample). */
void burst_check_batch_ranks(const deck_t *deck, long batch, int ranks, const char *doing);

/* What a profiling run measures for: G ranks (the per-rank batches of its policy's rank counts), and
 * the runs of each measurement not counted (warmup) and counted (repeats). */
typedef struct burst_profile_opts {
  int ranks;
  burst_ranks_policy_t policy;
  int warmup, repeats;
} burst_profile_opts_t;

/* A whole profiling run of the deck's model on be, collective over world (surge-profile): the model's
 * graph into g and every measurement into ms (compute at each per-rank batch, the step's own costs,
 * the network). Free them with graph_free and burst_measured_free. */
void burst_profile_run(const config_t *cfg, const deck_t *deck, const backend_t *be, comm_t *world,
                       const burst_profile_opts_t *o, graph_t *g, burst_measured_t *ms);

/* Measure compute on this rank into out (its batch list and sizes set by the caller through
 * burst_measured_init): m holds the graph with buffers for at least batch[0] samples, filled with
 * a real batch and its loss gradient (burst_measure_prepare). Collective over world: each entry is
 * the busiest rank's (max over ranks). */
void burst_measured_init(burst_measured_t *out, const graph_t *g, const char *model, const char *backend,
                         int global_batch, int ranks, burst_ranks_policy_t policy, int profiled_ranks, int warmup,
                         int repeats);
void burst_measured_free(burst_measured_t *out);
void burst_measure_prepare(model_t *m, const dataset_t *ds, int batch);
void burst_measure_compute(model_t *m, comm_t *world, burst_measured_t *out);
/* Collective: the step costs beside the nodes (burst_profile_t.step) on m prepared as above: the data
 * fetch and the loss per sample at the largest per-rank batch, and per step the gradients' zeroing,
 * norm (a pass of its own where the deck clips, else taken by the update) and opt's update of the
 * whole slab with one reduction of the step's metrics; the largest over the ranks. */
void burst_measure_step(model_t *m, const dataset_t *ds, optim_t *opt, int clips, comm_t *world,
                        burst_measured_t *out);
/* The network (collective): measured on >= 2 ranks, the defaults on 1. Point to point: rank 0 with
 * the first rank on another node when there is one (the links a plan must spare), else rank 1. */
void burst_measure_network(comm_t *world, int repeats, burst_measured_t *out);
/* Fit of us = alpha + bytes * slope to samples in ascending size. The slope (cost per byte) is the
 * least-squares slope through the BURST_FIT_BULK largest sizes: what bulk transfers pay per byte,
 * whatever happens to small messages (another protocol below a size, or a link's token bucket that
 * lets a burst through at once; doc/cluster.md). alpha is the smallest message's time less its
 * bytes at that slope, clamped at 0. When noise (a loaded machine) makes the slope non-positive,
 * the bandwidth comes from the largest message alone (slope = its us / its bytes, an upper bound
 * on the cost per byte). Returns 0, or -1 without usable samples. */
#define BURST_FIT_BULK 3
int burst_fit_alpha_beta(const burst_net_samples_t *s, double *alpha_us, double *slope_us_per_byte);

/* The table of a measurement (one row per node: median and spread per batch; the network). */
void burst_measured_print(FILE *f, const graph_t *g, const burst_measured_t *ms);

/* Profile files (HDF5, group /profile; doc/burst.md). Errors name the file (and the dataset). */
void burst_profile_write(const char *path, const graph_t *g, const burst_measured_t *ms);
/* The file's header: model, fingerprint, global batch, G, profiled ranks, whether the network was
 * measured. An unreadable file or missing attribute is an input error. */
typedef struct burst_profile_meta {
  char model[32];
  char backend[16], precision[8], optimizer[16]; /* how it was measured; "" where the file does not say */
  uint64_t fingerprint;
  int version;             /* format version (1: no step costs) */
  int global_batch, ranks, profiled_ranks, net_measured;
  burst_step_costs_t step; /* 0 in a version 1 profile */
} burst_profile_meta_t;
void burst_profile_read_meta(const char *path, burst_profile_meta_t *meta);
/* Fill p (burst_profile_init'd here) with the medians and the network. Input errors (exit 2, one
 * line naming the file and dataset): another model name or graph, a per-rank batch the options o
 * need that the file lacks. */
void burst_profile_read(const char *path, const graph_t *g, const char *model, const burst_opts_t *o,
                        burst_profile_t *p);

#endif
