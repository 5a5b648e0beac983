/* The 3D executor: this rank's part of the gpt (pipe/gpt_part.h) run as one cell of the
 * tensor x pipeline x data grid with Megatron-LM's rank layout
 *   rank = pp_index * (TP * DP) + dp_index * TP + tp_index
 * (tensor-parallel groups are consecutive ranks, data-parallel groups have stride TP within a stage,
 * pipeline groups stride TP * DP), one communicator per axis group.
 *
 * A step on the global batch: data-parallel replica d takes positions [floor(B d/DP), floor(B (d+1)/DP))
 * and splits them into M micro-batches (micro-batch k: positions [floor(n k/M), floor(n (k+1)/M)) of
 * its share of n). Each stage runs its schedule (pipe/schedule.h); micro-batch k lives in slot
 * k mod S of the buffers (rows [slot mb_cap, (slot+1) mb_cap)), S = the most the schedule holds at
 * once, so 1F1B needs min(PP - s, M) slots on stage s and GPipe M. Per pass:
 *   forward   receive the input (or fetch the token ids on the first stage), run the part's nodes with
 *             the tensor-parallel sums after row-parallel layers (pipe/tp.h), then send the output
 *             onwards, or take the vocabulary-parallel loss on the last stage
 *   backward  receive the output's gradient (the last stage has it from the loss), run the nodes
 *             backwards with the sums of column-parallel layers' input gradients, send the input's
 *             gradient back
 * After the last backward pass: the data-parallel gradient sum (sync/gradsync.h over the data-parallel
 * group, buckets started during the last micro-batch's backward pass), then the tied word
 * embedding's gradient summed over the embedding group (the first and last stage ranks of one
 * tensor- and data-parallel index; traffic category embedding).
 *
 * A sharded optimizer (sync.shard, sync/shard.h) reduce-scatters the data-parallel buckets instead,
 * each rank of the group receiving the sum of its shard of the stage's slab (a layer norm, which every
 * tensor-parallel rank holds at another offset, never cut); the word embedding is then a bucket of the
 * fused embedding group (as fe's, the first and last stage ranks of one tensor-parallel index, every
 * data-parallel index), reduce-scattered over its 2 DP ranks: each receives the exact sum of both
 * stages' gradients over every replica for its 1/(2 DP) of the rows, and no embedding sum follows.
 * The layout updates the shards and all-gathers them over the same groups (before_forward waits).
 *
 * Optimus-CC's compression (compress/options.h, doc/compression.md) changes three of these:
 *   cb  activation gradients cross stages through pipe/p2p_cb.h (compressed in each stage's epilogue)
 *   fe  the word embedding's gradient is in no data-parallel bucket; after the data-parallel sum it is
 *       summed once over the fused group: the first and last stage ranks of one tensor-parallel index,
 *       every data-parallel index (2 dp ranks), in place of the two sums
 *   sc  the data-parallel sum is the PowerSGD reducer, compressing on stages below sc_stages (exact on
 *       the others, and in the first warmup_fraction of the steps) */
#ifndef SURGE_PIPE_EXEC_H
#define SURGE_PIPE_EXEC_H

#include "comm/comm.h"
#include "compress/options.h"
#include "data/dataset.h"
#include "layout/layout.h"
#include "nn/model.h"
#include "pipe/gpt_part.h"
#include "pipe/p2p.h"
#include "pipe/schedule.h"
#include "pipe/timeline.h"
#include "pipe/tp.h"
#include "sync/gradsync.h"

/* The grid and this rank's place in it. */
typedef struct pipe_grid {
  int tp, pp, dp;
  int t, p, d; /* this rank's tensor, pipeline (stage) and data-parallel index */
} pipe_grid_t;

/* The place of world rank r in a tp x pp x dp grid. */
pipe_grid_t pipe_grid_of(int tp, int pp, int dp, int r);

typedef struct pipe_exec {
  const graph_t *g;      /* the whole model */
  gpt_dims_t dims;
  pipe_grid_t grid;
  comm_t *world;
  comm_t tp, pp, embed;  /* axis groups; embed has size 0 unless PP > 1 and the stage is first or last */
  comm_t groups[2];      /* the gradient sync's groups: [PIPE_DP] the data-parallel group, [PIPE_FE] the
                          * fused embedding group (fe on, or a sharded optimizer's word embedding; first
                          * and last stage only, else size 0) */
  int shard;             /* a sharded optimizer over the data-parallel axis (gradsync_opts_t.shard) */
  compress_opts_t co;
  gpt_part_t part;
  graph_t lg;            /* this rank's part */
  model_t m;             /* its buffers: slots * mb_cap samples */
  pipe_sched_t sched;
  int M, slots, mb_cap, batch;
  pipe_op_t *ops;        /* (2M) this stage's schedule */
  unsigned char *reduce_out; /* (lg.n) sum the node's output over tp after its forward (g) */
  unsigned char *reduce_in;  /* (lg.n) sum its input's gradient over tp after its backward (f) */
  float *din;            /* (slots mb_cap, T C): gradient of the stage input (not on the first stage) */
  float *dsend;          /* (ring mb_cap, T C): micro-batch k's input gradient is sent from slice k mod ring */
  int ring;
  tp_xent_t xent;        /* last stage */
  pipe_p2p_t p2p;
  pipe_timeline_t tl;
  gradsync_t sync;
  int wte;               /* lg's slab tensor of the tied word embedding rows (first, last stage), or -1 */
  int *mb_rows;          /* (M) tokens of each micro-batch of this replica */
  float *x, *y;          /* host staging of up to slots * mb_cap samples' ids and targets */
  void (*before_forward)(void *arg, int node); /* NULL, or called before each node's forward pass (a
                                                * sharded optimizer's all-gather waits there) */
  void *before_arg;
} pipe_exec_t;

enum { PIPE_DP = 0, PIPE_FE = 1 }; /* pipe_exec_t.groups */

/* What a stage runs besides the model and its place in the grid. */
typedef struct pipe_exec_opts {
  int first_block, blocks; /* its transformer blocks: [first_block, first_block + blocks) */
  int M;                   /* micro-batches */
  pipe_sched_t sched;
  int B;                   /* the global batch (each replica's share holds at least M samples) */
  int scatter_gather;      /* pipeline transfers in 1/tp chunks, all-gathered by the receivers (pipe/p2p.h) */
  uint64_t seed;           /* compression's initial factors */
} pipe_exec_opts_t;

/* Collective over world: the communicators, the part of the stage (the caller checked the grid
 * against the model), its buffers and gradient sync, and the compression co asks for (checked by
 * the caller). */
void pipe_exec_init(pipe_exec_t *ex, const graph_t *g, const gpt_dims_t *dims, const pipe_grid_t *grid,
                    const pipe_exec_opts_t *o, const backend_t *be, comm_t *world, const gradsync_opts_t *sync,
                    const compress_opts_t *co);
void pipe_exec_free(pipe_exec_t *ex);

/* Collective: one step's gradients for the global batch ids[0..B) (scaled by grad_scale), summed
 * over the data-parallel group and, for the word embedding, the embedding group (or the fused
 * group). Fills this rank's
 * part of the loss sum (the last stage's tensor-parallel rank 0 reports its replica's) and its phase
 * times into out; not the squared norm (the layout's). */
void pipe_exec_step(pipe_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale, layout_step_t *out);

/* The run's compression choices in words, one line (what is compressed, how much), into buf. */
void pipe_compress_summary(const pipe_exec_t *ex, char *buf, size_t n);
/* Collective over world: the step's compression numbers for the log (pipe/exec_compress.c), the
 * compressors' counters read and zeroed; per_boundary holds 2 max(pp - 1, 1) doubles. */
void pipe_compress_row(pipe_exec_t *ex, log_compress_row_t *row, double *per_boundary);

/* Collective: loss sum and correct targets of this rank's part of positions [0, n) of split (each
 * replica its share, reported by its last stage's tensor-parallel rank 0). */
void pipe_exec_eval(pipe_exec_t *ex, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]);

#endif
