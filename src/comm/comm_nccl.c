/* The comm layer's device side with CUDA: NCCL for device buffers, or staging through host memory.
 *
 * Ordering with the backend: its work runs on its stream (`compute`); NCCL runs on a stream of the
 * group's own, at the same priority. Before an NCCL operation the group's stream waits for an event
 * recorded on the compute stream (everything queued before has written its buffers); a blocking
 * call returns when the operation's end event has passed, a non-blocking one when a test or wait
 * has seen it pass. So a transfer overlaps the backend's later work (the gradient buckets with the
 * rest of the backward pass), and whatever the host queues after its completion sees the result.
 *
 * Waits honour comm_t.poll_us like MPI waits: poll the event, then sleep between polls.
 *
 * The backend's recorded pieces (backend/cuda_device_calls.h): staging waits for the compute stream,
 * so it first ends the calling thread's recording (an in-process background's piece, cut there as the
 * backend's own copies to the host cut it). NCCL allocates and frees device memory when it connects
 * ranks and at the communicator's end, so those run as device-wide calls, while no thread records:
 * the communicator's creation (after a barrier of the group, so that the lock is held while every
 * rank is there), with its collectives' connections made there (NCCL_RUNTIME_CONNECT=0 unless the
 * environment says otherwise: NCCL 2.22 and later would make them at each collective's first call),
 * a group of sends and receives with a pair's first transfer (NCCL connects a pair then), and the
 * destruction. (NCCL itself is never used by a thread that records: an in-process background on
 * cuda stages, doc/multiplexing.md.) */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_device_calls.h"
#include "backend/cuda_event.h"
#include "comm/comm_dev.h"
#include "comm/parts.h"
#include "core/error.h"
#include "core/pace.h"

struct comm_device {
  comm_device_mode_t mode;
  cudaStream_t compute; /* the backend's stream */
  int decided;          /* use_nccl is known (collective, at attach or the first device collective) */
  int use_nccl;
  ncclComm_t nccl;      /* NULL in a group of one rank, or staged */
  cudaStream_t stream;  /* NCCL's */
  cudaEvent_t ready, done;
  int group_open;       /* an NCCL group of this comm's sends and receives is open */
  unsigned char *sent_to, *received_from; /* [size] a send to, a receive from, each rank has run (connected) */
  int connects;         /* the open group has a pair's first send or receive: NCCL connects it at the group's end */
  char chose[192];
};

/* the device side whose NCCL group is open: one per thread, as NCCL's groups (an in-process
 * background's thread has its own comms beside its foreground's) */
static _Thread_local const comm_device_t *open_group;

static void cu(cudaError_t e, const char *what) {
  if (e != cudaSuccess) surge_runtime_error("comm: %s: %s", what, cudaGetErrorString(e));
}

static void nc(ncclResult_t r, const comm_device_t *d, const char *what) {
  if (r == ncclSuccess) return;
  const char *detail = d && d->nccl ? ncclGetLastError(d->nccl) : "";
  surge_runtime_error("comm: NCCL %s: %s%s%s", what, ncclGetErrorString(r), detail && detail[0] ? ": " : "",
                      detail ? detail : "");
}

static void mpi(int rc, const char *what) {
  if (rc != MPI_SUCCESS) surge_runtime_error("comm: %s failed (MPI error %d) while setting up device transfers", what, rc);
}

/* ---- which transport: NCCL refuses two ranks of one communicator on one GPU */

typedef struct gpu_key {
  int node;
  char bus[32]; /* PCI bus id of the rank's GPU */
} gpu_key_t;

/* Collective over c: the first two ranks (*a < *b) on one GPU, or 0 when every rank has its own. */
static int shared_gpu(const comm_t *c, int *a, int *b, char *bus, size_t buslen) {
  gpu_key_t mine;
  memset(&mine, 0, sizeof mine);
  int dev = 0;
  cu(cudaGetDevice(&dev), "cudaGetDevice");
  cu(cudaDeviceGetPCIBusId(mine.bus, sizeof mine.bus, dev), "cudaDeviceGetPCIBusId");
  mine.node = c->node ? c->node[c->rank] : 0;
  gpu_key_t *all = xcalloc((size_t)c->size, sizeof *all);
  mpi(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, c->mpi), "MPI_Allgather");
  int found = 0;
  for (int i = 0; i < c->size && !found; i++)
    for (int j = i + 1; j < c->size && !found; j++)
      if (all[i].node == all[j].node && strncmp(all[i].bus, all[j].bus, sizeof all[i].bus) == 0) {
        *a = i, *b = j, found = 1;
        snprintf(bus, buslen, "%.31s", all[i].bus);
      }
  free(all);
  return found;
}

static void make_nccl(comm_t *c, comm_device_t *d) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (c->rank == 0) nc(ncclGetUniqueId(&id), d, "ncclGetUniqueId");
  mpi(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->mpi), "MPI_Bcast of the NCCL id");
  setenv("NCCL_RUNTIME_CONNECT", "0", 0); /* the collectives' connections at creation (see the top) */
  mpi(MPI_Barrier(c->mpi), "MPI_Barrier before the NCCL communicator");
  cuda_device_call_begin();
  const ncclResult_t made = ncclCommInitRank(&d->nccl, c->size, id, c->rank);
  cuda_device_call_end();
  nc(made, d, "ncclCommInitRank");
  int prio = 0;
  cu(cudaStreamGetPriority(d->compute, &prio), "cudaStreamGetPriority");
  cu(cudaStreamCreateWithPriority(&d->stream, cudaStreamNonBlocking, prio), "cudaStreamCreateWithPriority");
  cu(cudaEventCreateWithFlags(&d->ready, cudaEventDisableTiming), "cudaEventCreate");
  cu(cudaEventCreateWithFlags(&d->done, cudaEventDisableTiming), "cudaEventCreate");
}

/* Collective over c: NCCL or staging for this group, and its NCCL communicator. */
static void decide(comm_t *c, comm_device_t *d) {
  int a = 0, b = 0;
  char bus[32] = "";
  if (d->mode == COMM_DEVICE_STAGED) {
    snprintf(d->chose, sizeof d->chose, "staged through host memory (device_comm = staged)");
  } else if (c->size > 1 && shared_gpu(c, &a, &b, bus, sizeof bus)) {
    if (d->mode == COMM_DEVICE_NCCL)
      surge_runtime_error("device_comm = nccl, but ranks %d and %d of a group share the GPU at %s, which NCCL "
                          "refuses (hint: [backend] device_comm = auto or staged, or one GPU per rank)", a, b, bus);
    snprintf(d->chose, sizeof d->chose, "staged through host memory (ranks %d and %d share the GPU at %s)", a, b, bus);
  } else {
    d->use_nccl = 1;
    d->sent_to = xcalloc((size_t)c->size, 1);
    d->received_from = xcalloc((size_t)c->size, 1);
    if (c->size > 1) make_nccl(c, d);
    snprintf(d->chose, sizeof d->chose, "nccl %d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  }
  d->decided = 1;
}

const char *comm_dev_attach(comm_t *c, comm_device_mode_t mode, void *stream) {
  if (c->dev) return c->dev->chose;
  comm_device_t *d = xcalloc(1, sizeof *d);
  d->mode = mode;
  d->compute = (cudaStream_t)stream;
  c->dev = d;
  decide(c, d);
  return d->chose;
}

void comm_dev_inherit(const comm_t *parent, comm_t *child) {
  child->dev = NULL;
  if (!parent->dev || child->mpi == MPI_COMM_NULL) return;
  comm_device_t *d = xcalloc(1, sizeof *d);
  d->mode = parent->dev->mode;
  d->compute = parent->dev->compute;
  child->dev = d;
}

void comm_dev_free(comm_t *c) {
  comm_device_t *d = c->dev;
  if (!d) return;
  if (d->nccl) {
    cu(cudaStreamSynchronize(d->stream), "cudaStreamSynchronize");
    cuda_device_call_begin();
    const ncclResult_t freed = ncclCommDestroy(d->nccl);
    cuda_device_call_end();
    nc(freed, d, "ncclCommDestroy");
    cu(cudaStreamDestroy(d->stream), "cudaStreamDestroy");
    cu(cudaEventDestroy(d->ready), "cudaEventDestroy");
    cu(cudaEventDestroy(d->done), "cudaEventDestroy");
  }
  free(d->sent_to);
  free(d->received_from);
  free(d);
  c->dev = NULL;
}

int comm_dev_owns(const comm_t *c, const void *p) {
  if (!c->dev || !p) return 0;
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError(); /* host memory the runtime has never seen: not an error */
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int comm_dev_nccl(comm_t *c) {
  if (!c->dev) return 0;
  if (!c->dev->decided) decide(c, c->dev);
  return c->dev->use_nccl;
}

int comm_dev_nccl_ready(const comm_t *c) { return c->dev && c->dev->decided && c->dev->use_nccl; }

/* ---- staging */

void *comm_dev_stage_out(const comm_t *c, const void *dev, size_t bytes) {
  void *host = xmalloc(bytes ? bytes : 1);
  if (bytes) {
    cuda_capture_leave();
    cu(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, c->dev->compute), "staging to the host");
    cu(cudaStreamSynchronize(c->dev->compute), "cudaStreamSynchronize");
  }
  return host;
}

void comm_dev_stage_in(const comm_t *c, void *dev, const void *host, size_t bytes) {
  if (!bytes) return;
  cuda_capture_leave();
  cu(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, c->dev->compute), "staging to the device");
  cu(cudaStreamSynchronize(c->dev->compute), "cudaStreamSynchronize"); /* the caller frees host next */
}

/* ---- NCCL */

/* The group's stream waits for everything queued on the compute stream so far. */
static void after_compute(comm_device_t *d) {
  cu(cudaEventRecord(d->ready, d->compute), "cudaEventRecord");
  cu(cudaStreamWaitEvent(d->stream, d->ready, 0), "cudaStreamWaitEvent");
}

/* 1 when ev has passed, 0 when not yet (cuda_event.h) */
static int event_passed(cudaEvent_t ev) {
  const cudaError_t e = cuda_event_poll(ev);
  if (e == cudaErrorNotReady) return 0;
  cu(e, "cudaEventQuery");
  return 1;
}

/* Wait until ev has passed: blocking when poll_us is 0, else at a polite pace (core/pace.h). */
static void wait_event(const comm_t *c, cudaEvent_t ev) {
  if (c->poll_us <= 0) {
    cu(cudaEventSynchronize(ev), "cudaEventSynchronize");
    return;
  }
  pace_t pace = pace_start(c->poll_us, c->poll_fraction);
  while (!event_passed(ev)) pace_next(&pace);
}

static void no_open_group(const char *call) {
  if (open_group)
    surge_runtime_error("comm: %s while a group of device sends and receives is open (comm_group_begin without its "
                        "comm_waitall)", call);
}

static ncclRedOp_t red_op(MPI_Op op) {
  if (op == MPI_SUM) return ncclSum;
  if (op == MPI_MAX) return ncclMax;
  if (op == MPI_MIN) return ncclMin;
  surge_runtime_error("comm: no NCCL reduction for this MPI operation");
}

void comm_dev_allreduce(comm_t *c, float *buf, size_t n, MPI_Op op) {
  no_open_group("an allreduce of device memory");
  comm_device_t *d = c->dev;
  if (c->size == 1 || n == 0) return;
  after_compute(d);
  nc(ncclAllReduce(buf, buf, n, ncclFloat, red_op(op), d->nccl, d->stream), d, "ncclAllReduce");
  cu(cudaEventRecord(d->done, d->stream), "cudaEventRecord");
  wait_event(c, d->done);
}

void comm_dev_bcast(comm_t *c, void *buf, size_t bytes, int root) {
  no_open_group("a broadcast of device memory");
  comm_device_t *d = c->dev;
  if (root < 0 || root >= c->size) surge_runtime_error("comm_bcast: root %d is not a rank of the group of %d", root, c->size);
  if (c->size == 1 || bytes == 0) return;
  after_compute(d);
  nc(ncclBroadcast(buf, buf, bytes, ncclChar, root, d->nccl, d->stream), d, "ncclBroadcast");
  cu(cudaEventRecord(d->done, d->stream), "cudaEventRecord");
  wait_event(c, d->done);
}

/* op completes when the work queued on the group's stream so far has (comm_dev_test, comm_dev_wait). */
static void complete_at_end(comm_device_t *d, comm_op_t *op) {
  cudaEvent_t ev;
  cu(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
  cu(cudaEventRecord(ev, d->stream), "cudaEventRecord");
  op->completion = ev;
}

void comm_dev_iallreduce(comm_t *c, float *buf, size_t n, comm_op_t *op) {
  no_open_group("an allreduce of device memory");
  comm_device_t *d = c->dev;
  op->kind = COMM_KIND_NCCL;
  op->completion = NULL;
  if (c->size == 1 || n == 0) return; /* nothing to wait for */
  after_compute(d);
  nc(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, d->nccl, d->stream), d, "ncclAllReduce");
  complete_at_end(d, op);
}

/* One NCCL group of an operation per non-empty part of buf, rooted at its owner (comm/parts.h):
 * reduce: ncclReduce (sum) to the owner, in place there (the reduce-scatter); else ncclBroadcast
 * from the owner, in place everywhere (the all-gather). Every rank issues the same operations in the
 * same order (the parts are the same on all). */
static void rooted_parts(comm_t *c, float *buf, const size_t *off, const size_t *cnt, int reduce, comm_op_t *op) {
  no_open_group(reduce ? "a reduce-scatter of device memory" : "an all-gather of device memory");
  comm_device_t *d = c->dev;
  op->kind = COMM_KIND_NCCL;
  op->completion = NULL;
  if (c->size == 1) return; /* the one part is its rank's already */
  comm_part_t *parts = xcalloc((size_t)c->size, sizeof *parts);
  int k = comm_parts_rooted(c->size, off, cnt, parts);
  if (k > 0) {
    after_compute(d);
    nc(ncclGroupStart(), d, "ncclGroupStart");
    for (int i = 0; i < k; i++) {
      float *p = buf + parts[i].off;
      if (reduce)
        nc(ncclReduce(p, p, parts[i].n, ncclFloat, ncclSum, parts[i].root, d->nccl, d->stream), d, "ncclReduce");
      else
        nc(ncclBroadcast(p, p, parts[i].n, ncclFloat, parts[i].root, d->nccl, d->stream), d, "ncclBroadcast");
    }
    nc(ncclGroupEnd(), d, "ncclGroupEnd");
    complete_at_end(d, op);
  }
  free(parts);
}

void comm_dev_ireduce_scatter(comm_t *c, float *buf, const size_t *off, const size_t *cnt, comm_op_t *op) {
  rooted_parts(c, buf, off, cnt, 1, op);
}

void comm_dev_iallgatherv(comm_t *c, float *buf, const size_t *off, const size_t *cnt, comm_op_t *op) {
  rooted_parts(c, buf, off, cnt, 0, op);
}

int comm_dev_test(comm_op_t *op) {
  if (!op->completion) return 1;
  if (!event_passed((cudaEvent_t)op->completion)) return 0;
  cu(cudaEventDestroy((cudaEvent_t)op->completion), "cudaEventDestroy");
  op->completion = NULL;
  return 1;
}

void comm_dev_wait(comm_op_t *op) {
  if (!op->completion) return;
  wait_event(op->c, (cudaEvent_t)op->completion);
  cu(cudaEventDestroy((cudaEvent_t)op->completion), "cudaEventDestroy");
  op->completion = NULL;
}

static void join_group(comm_t *c) {
  if (open_group && open_group != c->dev)
    surge_runtime_error("comm: device sends and receives on two groups at once (one comm_group_begin at a time)");
  if (!open_group) nc(ncclGroupStart(), c->dev, "ncclGroupStart");
  open_group = c->dev;
  c->dev->group_open = 1;
}

/* Whether this is the first transfer of its kind with peer (NCCL connects the pair for it); marked. */
static int first_with(const comm_t *c, unsigned char *seen, int peer) {
  if (peer < 0 || peer >= c->size)
    surge_runtime_error("comm: a device transfer with rank %d of a group of %d", peer, c->size);
  const int first = !seen[peer];
  seen[peer] = 1;
  return first;
}

void comm_dev_send(comm_t *c, const float *buf, size_t n, int peer) {
  join_group(c);
  c->dev->connects |= first_with(c, c->dev->sent_to, peer);
  nc(ncclSend(buf, n, ncclFloat, peer, c->dev->nccl, c->dev->stream), c->dev, "ncclSend");
}

void comm_dev_recv(comm_t *c, float *buf, size_t n, int peer) {
  join_group(c);
  c->dev->connects |= first_with(c, c->dev->received_from, peer);
  nc(ncclRecv(buf, n, ncclFloat, peer, c->dev->nccl, c->dev->stream), c->dev, "ncclRecv");
}

void comm_dev_group_end(comm_t *c) {
  comm_device_t *d = c->dev;
  if (!d || !d->group_open) return;
  after_compute(d); /* queued before the group's transfers, which ncclGroupEnd issues */
  const int connect = d->connects; /* NCCL connects new pairs now: a device-wide call */
  if (connect) cuda_device_call_begin();
  const ncclResult_t ended = ncclGroupEnd();
  if (connect) cuda_device_call_end();
  nc(ended, d, "ncclGroupEnd");
  d->connects = 0;
  open_group = NULL;
  d->group_open = 0;
  cu(cudaEventRecord(d->done, d->stream), "cudaEventRecord");
  wait_event(c, d->done);
}
