/* surge-sim's library (doc/sim.md): what a graph, a profile and a network predict at cluster scale.
 *
 * Burst parallelism and multiplexing (cluster.c, timeline.c, background.c): for each rank count G
 * and global batch, the data-parallel plan, the fastest burst plan and the Pareto frontier of
 * iteration time against rank-time (burst/plan.h), the rank-time each leaves idle, and the
 * cluster's throughput when background jobs fill the idle ranks as the multiplexing runtime does
 * (doc/multiplexing.md): a background cuts its step into pieces, one per layer, and starts a
 * piece only in a stretch of its rank's idle time that it fits (the gate knows how long the
 * foreground stays inactive).
 *
 * 3D parallelism (pipe3d.c): one iteration of a tensor x pipeline x data layout with 1F1B over
 * alpha-beta links, with and without Optimus-CC's compression ratios. */
#ifndef SURGE_SIM_H
#define SURGE_SIM_H

#include "burst/plan.h"
#include "nn/recompute.h"

/* ---- a plan's ranks over one iteration (timeline.c) ---- */

/* Ranks that run the same nodes, hence are busy at the same times. Gaps are the idle stretches of
 * one iteration, the one around the iteration's end joined with the one at its start (the
 * iteration repeats); always_idle: the ranks run nothing. */
typedef struct sim_class {
  int first, count;
  int ngap;
  double *gap_us;
  double busy_us; /* per iteration */
  int always_idle;
} sim_class_t;

typedef struct sim_timeline {
  int nclass;
  sim_class_t *c;
  int ranks;
  double iter_us;
  double idle_rank_us; /* sum over ranks of idle time per iteration */
} sim_timeline_t;

/* Busy: a node's ranks from its start for its re-shards in, compute and sync (plan->start_us). */
void sim_timeline_of(const burst_plan_t *plan, sim_timeline_t *tl);
void sim_timeline_free(sim_timeline_t *tl);

/* ---- the background job (background.c) ---- */

typedef struct sim_bg {
  int batch;        /* its per-rank batch */
  int npiece;
  double *piece_us; /* forward+backward of each layer on one rank at that batch */
  double step_us;   /* their sum */
  char model[64];
} sim_bg_t;

void sim_bg_init(sim_bg_t *bg, const bgraph_t *g, const burst_profile_t *p, int batch);
void sim_bg_free(sim_bg_t *bg);
/* Samples per second the background trains beside the timeline's foreground: the exact long-run
 * rate of filling every rank's gaps with whole pieces in order (per class, until the piece the
 * iterations start with repeats). *ideal: the rate if every idle microsecond were used. */
double sim_bg_fill(const sim_bg_t *bg, const sim_timeline_t *tl, double *ideal);

/* ---- burst + background against data parallelism (cluster.c) ---- */

typedef struct sim_opts {
  burst_opts_t o;      /* ranks, batch, per-layer limit, policy */
  double tol;          /* frontier tolerance (0: exact) */
  int max_eval;        /* frontier points evaluated with a background (evenly spread) */
  double fg_slowdown;  /* the foreground's step time with a background beside it, over alone (>= 1) */
} sim_opts_t;

/* One plan's outcome. Samples per second. */
typedef struct sim_point {
  int index;           /* frontier index; -1 for the data-parallel plan */
  double iter_us, rank_us;
  int ranks_used;
  double idle_rank_us; /* per iteration, over all G ranks */
  double fg_sps, bg_sps, bg_ideal_sps, total_sps;
} sim_point_t;

typedef struct sim_result {
  int ranks, batch;
  sim_point_t dp, fastest, best; /* best: the evaluated plan with the most total throughput */
  int has_given;
  sim_point_t given;             /* a plan file's (sim_cluster_run's plan_path) */
  int nfront;
  burst_front_point_t *front;
  int neval;
  sim_point_t *eval;   /* [neval], fastest first */
  double seconds;      /* planner time (frontier included) */
} sim_result_t;

void sim_cluster_run(const bgraph_t *g, const burst_profile_t *p, const sim_bg_t *bg, const sim_opts_t *so,
                     sim_result_t *r);
/* The outcome of the plan in a plan file (read against g, so->o's ranks and batch) into r->given. */
void sim_cluster_given(const bgraph_t *g, const burst_profile_t *p, const sim_bg_t *bg, const sim_opts_t *so,
                       const char *plan_path, sim_result_t *r);
void sim_result_free(sim_result_t *r);

/* ---- 3D parallelism (pipe3d.c) ---- */

typedef struct sim_link {
  double alpha_us, bytes_per_us;
} sim_link_t;

enum { SIM3D_MAX_PP = 64 }; /* pipeline stages --stage-nodes can name */
#define SIM3D_MAX_RANKS (1 << 24)   /* tp x pp x dp, as --ranks for burst plans */
#define SIM3D_MAX_PASSES (1 << 21)  /* pp x micro-batches: the forward passes an iteration simulates */
typedef struct sim3d_opts {
  int tp, pp, dp;
  int micro_batches, micro_batch;
  double fwd_fraction;        /* forward share of a node's forward+backward time (default 1/3) */
  sim_link_t tp_link, pp_link, dp_link;
  double cb_ratio;            /* compressed pipeline backward: bytes divided by this (1: off) */
  int cb_epilogue_only;       /* compress only the cool-down backward transfers */
  double dp_ratio;            /* PowerSGD data-parallel gradients: bytes divided by this (1: off) */
  int dp_stages;              /* ... on stages 0 .. dp_stages-1 (selective stage compression) */
  int stage_nodes[SIM3D_MAX_PP]; /* nodes per stage in graph order (all 0: balanced by time) */
  int recompute;              /* recompute_mode_t (nn/recompute.h): each backward first re-runs the
                               * forward of every unit's nodes but its last (block; a unit runs from a
                               * cut point to the next), or of its attention nodes (attention), their
                               * tensor-parallel sums included */
} sim3d_opts_t;

enum { SIM3D_FWD = 0, SIM3D_BWD = 1 };
typedef struct sim3d_op {
  int stage, mb, kind;
  double start_us, end_us;    /* compute */
  double send_end_us;         /* its blocking send to the next (forward) or previous (backward) stage */
  int compressed;             /* a backward send that was compressed */
} sim3d_op_t;

typedef struct sim3d_result {
  int nstage;
  int *stage_nodes;           /* [pp] nodes per stage */
  double *fwd_us, *bwd_us;    /* [pp] per micro-batch, tensor parallelism's allreduces included */
  double *rerun_us;           /* [pp] of bwd_us: the forward it re-runs first (sim3d_opts_t.recompute) */
  double *tp_us;              /* [pp] of which tensor-parallel allreduces */
  double *dp_us;              /* [pp] data-parallel gradient allreduce after the last backward */
  double *opt_us;             /* [pp] the optimizer on the stage's share of the parameters, last */
  double *stage_end_us;       /* [pp] end of the last backward (and its send) */
  double pp_fwd_us, pp_bwd_us, pp_bwd_compressed_us; /* one transfer across a boundary */
  double pipeline_us;         /* end of the last backward on any stage */
  double iter_us;             /* with the data-parallel allreduces */
  double bubble;              /* 1 - busy compute over pipeline_us, mean over stages */
  double bytes_pp, bytes_dp;  /* bytes sent per iteration: pipeline (both ways), data parallel */
  int nops;
  sim3d_op_t *ops;            /* [pp * 2 * micro_batches] in execution order per stage */
} sim3d_result_t;

/* Check the options (tp, pp, dp >= 1; pp at most the graph's cut points; ratios >= 1; links
 * positive): an input error naming the option. */
void sim3d_check(const sim3d_opts_t *o, const bgraph_t *g);
/* Simulate one iteration; compressed: apply the ratios (else run without compression). */
void sim3d_run(const bgraph_t *g, const burst_profile_t *p, const sim3d_opts_t *o, int compressed,
               sim3d_result_t *r);
void sim3d_free(sim3d_result_t *r);
/* The least "slowest stage" split of U units (unit[u] >= 0: their times) into pp contiguous
 * non-empty stages: stage s takes units [from[s], from[s + 1]) (from has pp + 1 entries), among
 * equally slow splits the one with the earliest cuts, last stage first. O(pp U) time (plus a
 * search over units of equal cost), O(pp U) memory for the cuts. */
void sim3d_partition(const double *unit, int U, int pp, int *from);

/* ---- output (sim_h5.c): /sim in an HDF5 file (doc/sim.md) ---- */

typedef struct sim_file_info {
  const char *model, *source, *bg_model;
  const burst_net_t *net;
  int bg_batch;
  double fg_slowdown, tol;
  const char *command;
} sim_file_info_t;

void sim_h5_write(const char *path, const sim_file_info_t *info, const sim_result_t *res, int nres,
                  const sim3d_opts_t *o3, const sim3d_result_t *plain, const sim3d_result_t *comp);

#endif
