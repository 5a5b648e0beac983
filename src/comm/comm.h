/* The comm layer: every collective and point-to-point transfer of Surge goes through here, so a
 * NCCL implementation can fill the same interface for GPUs, and every call is metered: bytes and
 * seconds per traffic category, per group, for the HDF5 log.
 *
 * Byte counting: the payload this rank hands to the call (an allreduce of n floats counts 4n
 * bytes; a send counts its bytes, a receive counts nothing; a broadcast counts the bytes on every
 * rank). Of those, the bytes that cross nodes are counted again apart: a send to a rank on another
 * node (shared memory is not shared with it), and any collective over a group whose ranks span
 * more than one node. Seconds are wall time inside the call (including waiting for slower ranks). */
#ifndef SURGE_COMM_H
#define SURGE_COMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef enum traffic {
  TRAFFIC_DP = 0,     /* data-parallel gradient sync */
  TRAFFIC_ACT,        /* activations between layers or stages */
  TRAFFIC_ACT_GRAD,   /* activation gradients, backward */
  TRAFFIC_EMBED,      /* embedding synchronisation */
  TRAFFIC_TP,         /* tensor-parallel reductions inside a pipeline stage (3D parallelism) */
  TRAFFIC_DP_COMPRESSED,       /* data-parallel gradients as PowerSGD factors (sync/reducer.h) */
  TRAFFIC_ACT_GRAD_COMPRESSED, /* activation gradients as compressed messages (compress/cb.h) */
  TRAFFIC_BN,         /* batch norm's statistics summed over a node's rank set (nn/layer_batchnorm.c) */
  TRAFFIC_DP_SCATTER, /* data-parallel gradients reduce-scattered to their shards (sharded optimizer) */
  TRAFFIC_DP_GATHER,  /* updated parameter shards all-gathered (sharded optimizer) */
  TRAFFIC_OTHER,      /* metrics, control, checkpoints */
  TRAFFIC_COUNT
} traffic_t;

/* Names for logs: "dp", "activation", "activation_grad", "embedding", "tp", "dp_compressed",
 * "activation_grad_compressed", "batchnorm", "dp_scatter", "dp_gather", "other". */
const char *traffic_name(traffic_t t);

typedef struct comm_meter {
  uint64_t bytes[TRAFFIC_COUNT];
  uint64_t internode_bytes[TRAFFIC_COUNT]; /* of bytes, those that cross nodes (see above) */
  double seconds[TRAFFIC_COUNT];
  uint64_t calls[TRAFFIC_COUNT];
} comm_meter_t;

/* How device buffers (a GPU backend's memory) travel: NCCL (collectives, and grouped point to
 * point), or staged through host memory and sent with MPI; AUTO: NCCL unless two ranks of a group
 * share a GPU, which NCCL refuses. */
typedef enum comm_device_mode { COMM_DEVICE_AUTO = 0, COMM_DEVICE_NCCL, COMM_DEVICE_STAGED } comm_device_mode_t;

typedef struct comm_device comm_device_t; /* a group's device side (comm_dev.h) */

typedef struct comm {
  MPI_Comm mpi;        /* a private communicator (dup or split); never MPI_COMM_WORLD itself */
  int rank, size;
  int nodes;           /* distinct nodes (shared-memory domains) the group's ranks are on */
  int *node;           /* [size] the node of each rank: 0 .. nodes-1, numbered in the order of their
                        * lowest rank (so rank 0 is on node 0) */
  size_t bucket_bytes; /* allreduce of big buffers goes in buckets of this size (default 4 MiB) */
  comm_meter_t meter;  /* totals since creation or the last comm_meter_reset */
  double poll_us;      /* 0: waits and barriers block inside MPI (spinning); > 0: they poll for poll_us,
                        * then sleep up to poll_us between polls, leaving the core to other processes
                        * (a foreground with a background partner, mux/mux.h). Not inherited by splits. */
  double poll_fraction; /* with poll_us: each sleep this fraction of the time waited (core/pace.h; 0: 1/16) */
  comm_meter_t *root_meter; /* NULL, or a meter (which must outlive the group) where this group's calls are
                             * also counted: a layout points its subgroups at the job's meter, so the job's
                             * log sees all their traffic. NULL after comm_world and comm_split. */
  comm_device_t *dev;  /* NULL: host buffers only; else device buffers are accepted (comm_use_device) */
  int in_group;        /* comm_group_begin was called and its comm_waitall has not come yet */
  /* Surge's ring collectives (comm/ring.h), used by comm_ireduce_scatter_sum: */
  MPI_Comm ring_mpi;   /* their duplicate of mpi, made with the group (ring_ready) */
  int ring_ready;
  unsigned ring_ops;   /* rings started on the group: the next one's tag */
} comm_t;

/* MPI_Init with the settings Surge's communication relies on, set before MPI starts (a setting the
 * user gives, e.g. OMPI_MCA_... in the environment or mpiexec --mca, wins): Open MPI's non-blocking
 * allreduce (libnbc) otherwise picks a binomial tree for the gradient buckets' sizes, 15-20% slower
 * than its blocking allreduce; Rabenseifner's algorithm matches the blocking one. Every program that
 * trains calls this instead of MPI_Init. */
void comm_init(int *argc, char ***argv);
/* comm_init asking for MPI_THREAD_MULTIPLE (two trainers in one process, each calling MPI from its
 * own thread: an in-process background, doc/multiplexing.md); returns the level MPI provides. */
int comm_init_threads(int *argc, char ***argv);

/* An MPI return code other than MPI_SUCCESS ends the job with the call, the comm-layer function
 * it was made in (api_call) and MPI's own words (for the comm layer's own files). */
void comm_check_mpi(int rc, const char *mpi_call, const char *api_call);

/* A duplicate of MPI_COMM_WORLD. */
void comm_world(comm_t *c);
/* A duplicate of MPI_COMM_SELF: a job of this one rank (an in-process background's). */
void comm_self(comm_t *c);
/* Collective over c: from now on the float calls below (and comm_bcast) accept device buffers of
 * a GPU backend as well as host buffers, told apart by their address; a device buffer travels as
 * `mode` says. stream: the backend's stream (a cudaStream_t), on which the work that writes and reads
 * these buffers is queued; transfers start after the work queued before them and complete before the
 * call (or the wait) returns. Groups split from c later inherit it. Returns what it chose, for the
 * log. In a build without CUDA, an error. */
const char *comm_use_device(comm_t *c, comm_device_mode_t mode, void *stream);

/* Collective over parent: ranks with the same color form one child group, ordered by key
 * (MPI_Comm_split). color < 0 gives an empty child (c->mpi == MPI_COMM_NULL, size 0). Every rank
 * of the parent must call it, in the same order as the other splits. */
void comm_split(const comm_t *parent, int color, int key, comm_t *child);
/* Collective over parent: the ranks of parent that share this rank's node (shared memory), in
 * parent's order. */
void comm_split_node(const comm_t *parent, comm_t *child);
void comm_free(comm_t *c);
/* This rank's index among the group's ranks on its node (0 .. ranks there - 1), in group order. */
int comm_local_rank(const comm_t *c);
void comm_meter_reset(comm_t *c);

/* In-place sum over the group of n floats, in buckets of bucket_bytes (each bucket one
 * MPI_Allreduce); results are identical on every rank. */
void comm_allreduce_sum(comm_t *c, float *buf, size_t n, traffic_t t);
/* In-place element-wise max / min over the group of n floats (one MPI_Allreduce); identical on every
 * rank. */
void comm_allreduce_max(comm_t *c, float *buf, size_t n, traffic_t t);
void comm_allreduce_min(comm_t *c, float *buf, size_t n, traffic_t t);
/* In-place sum / max of a few doubles (losses, counters, flags). */
void comm_allreduce_sum_double(comm_t *c, double *buf, int n, traffic_t t);
/* The sum, for a rank that expects to wait long for the others (one idle all step): with poll_us,
 * it waits at a polite pace, leaving its core to a background, and may delay the others by up to
 * poll_us. It matches comm_allreduce_sum_double on the other ranks (both are one non-blocking
 * reduction). */
void comm_allreduce_sum_double_waiting(comm_t *c, double *buf, int n, traffic_t t);
void comm_allreduce_max_double(comm_t *c, double *buf, int n, traffic_t t);
/* Max of a few doubles like comm_allreduce_max_double, but give up after timeout_s seconds
 * (timeout_s < 0: wait as long as it takes). Returns 1 when done, 0 on timeout; after a timeout
 * the buffer is undefined and the group is not usable for collectives any more (abort the job).
 * For agreeing on a failure when other ranks may be stuck inside a library's collective. */
int comm_allreduce_max_double_within(comm_t *c, double *buf, int n, double timeout_s, traffic_t t);
/* Broadcast bytes from root. */
void comm_bcast(comm_t *c, void *buf, size_t bytes, int root, traffic_t t);
/* Gather `count` doubles from every rank to root's out (size*count), in rank order. */
void comm_gather_double(comm_t *c, const double *in, int count, double *out, int root, traffic_t t);
/* Gather bytes to root: this rank's `bytes` bytes of in, and on root every rank r's n[r] bytes into out, one
 * after another in rank order (n and out are root's alone; n[r] must be what rank r gives). Each rank's
 * part at most INT_MAX bytes (one MPI_Gatherv); bytes counted as this rank's part. */
void comm_gatherv_bytes(comm_t *c, const void *in, size_t bytes, void *out, const size_t *n, int root, traffic_t t);

/* Point to point (floats). Tags must be unique per pair and message in flight. Device buffers
 * (comm_use_device) are staged through host memory, unless the transfers are posted in a group. */
typedef struct comm_request {
  MPI_Request req;
  int kind;      /* how it completes: host MPI, staged send or receive, or in its NCCL group */
  float *dev;    /* a staged receive: the device buffer the host copy goes to */
  float *host;   /* a staged transfer's host copy, freed at completion */
  size_t n;
} comm_request_t;
void comm_isend(comm_t *c, const float *buf, size_t n, int dest, int tag, traffic_t t, comm_request_t *r);
void comm_irecv(comm_t *c, float *buf, size_t n, int src, int tag, traffic_t t, comm_request_t *r);
/* Wait for all requests; the wait time is counted in category t (see poll_us). */
void comm_waitall(comm_t *c, comm_request_t *r, int n, traffic_t t);
void comm_barrier(comm_t *c);
/* In place: rank r's part [off[r], off[r] + n[r]) of buf (host memory) to every rank (one
 * MPI_Allgatherv; each part at most INT_MAX floats). */
void comm_allgatherv_float(comm_t *c, float *buf, const size_t *off, const size_t *n, traffic_t t);
/* A barrier counted as one call of category t moving `bytes`: one that completes an exchange ranks
 * made through node-shared memory (comm/node_shm.h), which no MPI call carries. */
void comm_barrier_as(comm_t *c, traffic_t t, uint64_t bytes);
/* Post the next isends and irecvs of c as one group, completed by the next comm_waitall on c: their
 * device buffers then travel as one NCCL group (issued together at that wait, so their order does
 * not matter; NCCL matches one pair's messages in the order they were posted, so a pair exchanges
 * at most one message per direction in a group, as the burst executor's routes do). No other
 * device collective may run before that wait. Host buffers and groups without NCCL are unaffected. */
void comm_group_begin(comm_t *c);

/* In-place sum of a few unsigned 64-bit integers (counters, checksums; wraps modulo 2^64). */
void comm_allreduce_sum_u64(comm_t *c, uint64_t *buf, int n, traffic_t t);

/* Non-blocking collectives. A started operation must be completed with comm_op_wait (or a
 * comm_op_test that returned 1) before its buffer is read or the group is freed. Operations on one
 * group must be started in the same order on all of its ranks. MPI advances them only inside MPI
 * calls: callers that overlap them with compute call comm_op_test between pieces of work. Bytes
 * count at the start; seconds are the time inside the start, test and wait calls. On a device buffer
 * in a group of one rank they complete at their start and touch nothing (no copy, no wait on the
 * device: a background may be recording its piece as a CUDA graph). */
typedef struct comm_op {
  MPI_Request req;
  comm_t *c;
  traffic_t t;
  int event; /* index in the trace (comm_trace_begin), or -1 */
  int done;
  int kind;        /* host MPI, staged through host memory, or NCCL */
  float *dev;      /* staged: the device buffer the result goes back to */
  float *host;     /* staged: the host copy (freed at completion) */
  size_t at, n;    /* staged: the result, the floats [at, at + n) of host, goes to the same place of dev */
  void *completion; /* NCCL: the event the operation's end records (a cudaEvent_t) */
  struct comm_ring *ring; /* a ring reduce-scatter (comm/ring.h), freed at completion; NULL: none */
  int *counts;      /* a v-collective's counts and displacements, kept until completion (freed then) */
} comm_op_t;
/* Start an in-place sum over the group of n floats (one MPI_Iallreduce, however large). */
void comm_iallreduce_sum(comm_t *c, float *buf, size_t n, traffic_t t, comm_op_t *op);
/* Start an in-place reduce-scatter (sum) over the group of the n floats of buf (host memory): rank r
 * receives the sum of the floats [off[r], off[r] + cnt[r]) of every rank's buf, in place at that
 * position of its own buf at completion (the rest of its buf is then undefined). The parts are
 * consecutive (off[r + 1] = off[r] + cnt[r], off[0] = 0, their total n); a part may be empty. Surge's
 * ring (comm/ring.h: R-1 steps, each rank sending and receiving (R-1)/R of buf, scratch of one part,
 * each part summed in a fixed order), advanced by comm_op_test and comm_op_wait on any operation of
 * the group; bytes counted as n floats. A device buffer (comm_use_device) goes through NCCL as one
 * group of ncclReduce calls, each non-empty part summed to its owner in place (comm/parts.h), or is
 * staged: its host copy summed by the ring, this rank's part copied back at completion. */
void comm_ireduce_scatter_sum(comm_t *c, float *buf, size_t n, const size_t *off, const size_t *cnt, traffic_t t,
                              comm_op_t *op);
/* Start comm_allgatherv_float's in-place gather of rank r's part [off[r], off[r] + n[r]) of buf to every
 * rank, non-blocking (one MPI_Iallgatherv); bytes counted as this rank's part. A device buffer goes
 * through NCCL as one group of ncclBroadcast calls, each non-empty part from its owner in place
 * (comm/parts.h), or is staged: the floats up to the end of the last part copied to the host,
 * gathered there with MPI and copied back at completion. */
void comm_iallgatherv_float(comm_t *c, float *buf, const size_t *off, const size_t *n, traffic_t t, comm_op_t *op);
/* Progress op; 1 when it has completed (then it needs no wait). */
int comm_op_test(comm_op_t *op);
/* Complete op (see poll_us). */
void comm_op_wait(comm_op_t *op);

/* A process-wide trace of non-blocking collectives, for tests and benchmarks: while on, each
 * comm_iallreduce_sum records its category, bytes and start time, and the time its completion was
 * first seen (by comm_op_test or comm_op_wait), up to capacity events (later ones are not kept). */
typedef struct comm_event {
  traffic_t t;
  uint64_t bytes;
  double start, end; /* surge_now() seconds; end is 0 until completion was seen */
} comm_event_t;
void comm_trace_begin(int capacity);
/* The events recorded since comm_trace_begin (valid until comm_trace_end), and how many. */
int comm_trace_events(const comm_event_t **events);
void comm_trace_end(void);

/* Collective: what to add to this rank's surge_now() to read rank 0's clock (0 on rank 0), by
 * Cristian's method: `rounds` ping-pongs with rank 0, the one of the shortest round trip kept
 * (error at most half of it). For timelines that compare ranks on several nodes. */
double comm_clock_offset(comm_t *c, int rounds);

/* Sum of a meter over the ranks of c (to every rank). */
void comm_meter_total(comm_t *c, const comm_meter_t *local, comm_meter_t *total);

#endif
