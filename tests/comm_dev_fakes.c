/* A faked CUDA runtime and NCCL over MPI, for the comm layer's device side on the host
 * (tests/comm_dev_fakes.h says what they model and what not). */
#include "comm_dev_fakes.h"

#include "cuda_fake_error.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static fake_counts_t counts;
static char misuse_text[256];

fake_counts_t fake_counts(void) { return counts; }
const char *fake_misuse(void) { return misuse_text; }

static void misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void misuse(const char *fmt, ...) {
  if (counts.misuse++) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(misuse_text, sizeof misuse_text, fmt, ap);
  va_end(ap);
}

static int world_rank(void) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/* ---- device memory: pages the host may touch only inside a fake call */

enum { MAX_REGIONS = 16 };
static struct region {
  char *p;
  size_t bytes, mapped;
} regions[MAX_REGIONS];
static int open_depth;

static void protect_all(int prot) {
  for (int i = 0; i < MAX_REGIONS; i++)
    if (regions[i].p && mprotect(regions[i].p, regions[i].mapped, prot) != 0) abort();
}

/* The device's side of a call: its buffers readable and writable until dev_close. */
static void dev_open(void) {
  if (open_depth++ == 0) protect_all(PROT_READ | PROT_WRITE);
}

static void dev_close(void) {
  if (--open_depth == 0) protect_all(PROT_NONE);
}

static const struct region *region_of(const void *p) {
  for (int i = 0; i < MAX_REGIONS; i++)
    if (regions[i].p && (const char *)p >= regions[i].p && (const char *)p < regions[i].p + regions[i].mapped)
      return &regions[i];
  return NULL;
}

/* Whether [p, p + bytes) is device memory, all of it within one allocation. */
static int on_device(const void *p, size_t bytes) {
  const struct region *r = region_of(p);
  return r && (size_t)((const char *)p - r->p) + bytes <= r->bytes;
}

/* The host touched device memory: say where, and end the run with exit 3. */
static void touched(int sig, siginfo_t *info, void *context) {
  (void)context;
  if (!region_of(info->si_addr)) {
    signal(sig, SIG_DFL); /* not ours: the fault happens again, as it would have */
    return;
  }
  char line[160];
  int n = snprintf(line, sizeof line, "fake cuda: the host touched device memory at %p outside a CUDA or NCCL call\n",
                   info->si_addr);
  if (write(2, line, (size_t)n) < 0) _exit(4);
  _exit(3);
}

float *fake_dev_floats(size_t n) {
  static int handler;
  if (!handler++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = touched;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float);
  size_t mapped = (bytes + page - 1) / page * page;
  if (!mapped) mapped = page;
  for (int i = 0; i < MAX_REGIONS; i++)
    if (!regions[i].p) {
      void *p = mmap(NULL, mapped, open_depth ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) abort();
      regions[i] = (struct region){.p = p, .bytes = bytes, .mapped = mapped};
      return p;
    }
  abort();
}

void fake_dev_free(float *p) {
  for (int i = 0; i < MAX_REGIONS; i++)
    if (regions[i].p == (char *)p) {
      munmap(regions[i].p, regions[i].mapped);
      regions[i].p = NULL;
      return;
    }
  misuse("fake_dev_free of %p, not an allocation", (void *)p);
}

void fake_dev_put(float *dev, const float *host, size_t n) {
  if (!on_device(dev, n * sizeof(float))) abort();
  dev_open();
  memcpy(dev, host, n * sizeof(float));
  dev_close();
}

void fake_dev_get(float *host, const float *dev, size_t n) {
  if (!on_device(dev, n * sizeof(float))) abort();
  dev_open();
  memcpy(host, dev, n * sizeof(float));
  dev_close();
}

/* ---- the backend's recorded pieces (backend/cuda_device_calls.h) */

static _Thread_local int recording, device_call; /* as the backend's: per thread */

void fake_record(void) { recording = 1; }

void cuda_capture_leave(void) {
  counts.cuts += recording;
  recording = 0;
}

void cuda_device_call_begin(void) {
  cuda_capture_leave();
  device_call++;
}

void cuda_device_call_end(void) { device_call--; }

/* A call that waits for the stream or copies with the host: not while the thread records. */
static void not_recording(const char *what) {
  if (recording) misuse("%s while the thread records a piece (no cuda_capture_leave before it)", what);
}

/* ---- the runtime: device, streams, events, copies, errors */

struct CUstream_st {
  int priority;
};
struct CUevent_st {
  int recorded, unpolled; /* a record's first query answers "not ready" */
};

cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device) {
  (void)device;
  snprintf(bus, (size_t)len, "0000:%02x:00.0", getenv("SURGE_FAKE_SHARED_GPU") ? 1 : 1 + world_rank());
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority) {
  (void)flags;
  *s = calloc(1, sizeof **s);
  (*s)->priority = priority;
  counts.streams++;
  return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority) {
  *priority = s ? s->priority : 0;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  (void)s;
  not_recording("cudaStreamSynchronize");
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s) misuse("cudaStreamDestroy of the default stream");
  free(s);
  counts.streams--;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int flags) {
  (void)flags;
  *ev = calloc(1, sizeof **ev);
  counts.events++;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev) {
  if (!ev) misuse("cudaEventDestroy of no event");
  free(ev);
  counts.events--;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s) {
  if (!s) misuse("cudaEventRecord on the default stream");
  ev->recorded = ev->unpolled = 1;
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t ev) {
  if (ev->unpolled) {
    ev->unpolled = 0;
    counts.not_ready++;
    return fake_cuda_error(cudaErrorNotReady);
  }
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
  ev->unpolled = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned int flags) {
  (void)flags;
  if (!s || !ev->recorded) misuse("cudaStreamWaitEvent on %s", s ? "an event never recorded" : "the default stream");
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
  memset(a, 0, sizeof *a);
  a->type = region_of(p) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t s) {
  (void)s;
  not_recording("cudaMemcpyAsync with the host");
  int out = kind == cudaMemcpyDeviceToHost;
  const void *dev = out ? src : dst, *host = out ? dst : src;
  if ((kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyHostToDevice) || !on_device(dev, bytes) ||
      region_of(host)) {
    misuse("cudaMemcpyAsync of %zu bytes %s: not the device range and host memory it names", bytes,
           out ? "to the host" : "to the device");
    return fake_cuda_error(cudaErrorInvalidValue);
  }
  dev_open();
  memcpy(dst, src, bytes);
  dev_close();
  if (out)
    counts.copies_out++;
  else
    counts.copies_in++;
  return cudaSuccess;
}

/* ---- NCCL over MPI */

struct ncclComm {
  MPI_Comm mpi; /* the same ranks, in NCCL's order */
  int rank, size;
  unsigned char *sent_to, *received_from; /* [size] pairs connected (NCCL connects a pair at its first transfer) */
};

static unsigned id_seq;

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  int made[2] = {world_rank(), (int)(id_seq++ % 4000)}; /* the root's world rank, which of its ids */
  memcpy(id->internal, made, sizeof made);
  return ncclSuccess;
}

/* The ranks of an id meet at its root (point to point on MPI_COMM_WORLD, tags of that id), which
 * sends every member the world ranks in NCCL's order; they make an MPI communicator of them. */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  if (!device_call) misuse("ncclCommInitRank outside a device-wide call (cuda_device_call_begin)");
  const char *connect = getenv("NCCL_RUNTIME_CONNECT");
  if (!connect || strcmp(connect, "0") != 0)
    misuse("ncclCommInitRank with NCCL_RUNTIME_CONNECT %s: the collectives would connect at their first call",
           connect ? connect : "unset (1)");
  int made[2];
  memcpy(made, id.internal, sizeof made);
  const int root = made[0], tag = 20000 + 2 * made[1];
  if (nranks < 1 || rank < 0 || rank >= nranks || (rank == 0) != (root == world_rank())) {
    misuse("ncclCommInitRank: rank %d of %d with an id made by world rank %d", rank, nranks, root);
    return ncclInvalidArgument;
  }
  int *world = calloc((size_t)nranks, sizeof *world);
  if (rank == 0) {
    world[0] = root;
    for (int i = 1; i < nranks; i++) {
      int who[2];
      MPI_Recv(who, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      world[who[0]] = who[1];
    }
    for (int i = 1; i < nranks; i++) MPI_Send(world, nranks, MPI_INT, world[i], tag + 1, MPI_COMM_WORLD);
  } else {
    int me[2] = {rank, world_rank()};
    MPI_Send(me, 2, MPI_INT, root, tag, MPI_COMM_WORLD);
    MPI_Recv(world, nranks, MPI_INT, root, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Group all, these;
  MPI_Comm_group(MPI_COMM_WORLD, &all);
  MPI_Group_incl(all, nranks, world, &these);
  ncclComm_t c = calloc(1, sizeof *c);
  MPI_Comm_create_group(MPI_COMM_WORLD, these, tag, &c->mpi);
  MPI_Group_free(&these);
  MPI_Group_free(&all);
  free(world);
  c->rank = rank, c->size = nranks;
  c->sent_to = calloc((size_t)nranks, 1);
  c->received_from = calloc((size_t)nranks, 1);
  *comm = c;
  counts.nccl_comms++;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!device_call) misuse("ncclCommDestroy outside a device-wide call (cuda_device_call_begin)");
  MPI_Comm_free(&comm->mpi);
  free(comm->sent_to);
  free(comm->received_from);
  free(comm);
  counts.nccl_comms--;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "fake nccl error"; }
const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return misuse_text;
}

/* An operation, run at once or at its group's end. */
typedef enum { OP_ALLREDUCE, OP_REDUCE, OP_BCAST, OP_SEND, OP_RECV } op_kind_t;
typedef struct nccl_op {
  op_kind_t kind;
  const void *send;
  void *recv;
  size_t count;
  MPI_Datatype type;
  MPI_Op red;
  int peer; /* the root of a reduce or broadcast, the other rank of a send or receive */
  ncclComm_t comm;
} nccl_op_t;

enum { MAX_GROUP = 64 };
static nccl_op_t group[MAX_GROUP];
static int group_depth, group_n;

static void run_ops(nccl_op_t *ops, int n) {
  MPI_Request req[MAX_GROUP];
  int nreq = 0;
  for (int i = 0; i < n; i++) { /* a pair's first transfer connects it: device memory, under the lock */
    nccl_op_t *o = &ops[i];
    unsigned char *seen = o->kind == OP_SEND ? o->comm->sent_to : o->kind == OP_RECV ? o->comm->received_from : NULL;
    if (!seen || seen[o->peer]) continue;
    seen[o->peer] = 1;
    if (!device_call)
      misuse("a first transfer with rank %d (NCCL connects the pair) outside a device-wide call", o->peer);
  }
  dev_open();
  for (int i = 0; i < n; i++) { /* sends and receives posted together, as NCCL issues a group */
    nccl_op_t *o = &ops[i];
    if (o->kind == OP_SEND) MPI_Isend(o->send, (int)o->count, o->type, o->peer, 0, o->comm->mpi, &req[nreq++]);
    if (o->kind == OP_RECV) MPI_Irecv(o->recv, (int)o->count, o->type, o->peer, 0, o->comm->mpi, &req[nreq++]);
  }
  for (int i = 0; i < n; i++) { /* collectives in the order issued, which is the same on every rank */
    nccl_op_t *o = &ops[i];
    int tsize = 0;
    MPI_Type_size(o->type, &tsize);
    int root = o->comm->rank == o->peer;
    if (o->kind != OP_SEND && o->kind != OP_RECV && o->send != o->recv && (o->kind != OP_BCAST || root) &&
        (o->kind != OP_REDUCE || root))
      memcpy(o->recv, o->send, o->count * (size_t)tsize); /* out of place: the same sum or copy in place */
    if (o->kind == OP_ALLREDUCE)
      MPI_Allreduce(MPI_IN_PLACE, o->recv, (int)o->count, o->type, o->red, o->comm->mpi);
    if (o->kind == OP_BCAST) MPI_Bcast(o->recv, (int)o->count, o->type, o->peer, o->comm->mpi);
    if (o->kind == OP_REDUCE)
      MPI_Reduce(root ? MPI_IN_PLACE : o->send, root ? o->recv : NULL, (int)o->count, o->type, o->red, o->peer,
                 o->comm->mpi);
  }
  MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
  dev_close();
  counts.ops += n;
}

/* Check an operation as NCCL would take it, then run it or keep it for its group's end. */
static ncclResult_t issue(nccl_op_t o, ncclDataType_t type, ncclRedOp_t red, cudaStream_t s, const char *what) {
  if (!o.comm || !s) {
    misuse("%s with %s", what, o.comm ? "the default stream" : "no communicator");
    return ncclInvalidArgument;
  }
  o.type = type == ncclFloat ? MPI_FLOAT : type == ncclChar ? MPI_CHAR : MPI_DATATYPE_NULL;
  o.red = red == ncclSum ? MPI_SUM : red == ncclMax ? MPI_MAX : red == ncclMin ? MPI_MIN : MPI_OP_NULL;
  size_t bytes = o.count * (type == ncclFloat ? 4 : 1);
  int root = o.comm->rank == o.peer;
  int reads = o.kind == OP_SEND || o.kind == OP_ALLREDUCE || o.kind == OP_REDUCE || (o.kind == OP_BCAST && root);
  int writes = o.kind == OP_RECV || o.kind == OP_ALLREDUCE || o.kind == OP_BCAST || (o.kind == OP_REDUCE && root);
  if (o.type == MPI_DATATYPE_NULL || o.count > INT32_MAX || o.peer < 0 || o.peer >= o.comm->size ||
      (o.kind == OP_ALLREDUCE || o.kind == OP_REDUCE ? o.red == MPI_OP_NULL : 0) ||
      (reads && !on_device(o.send, bytes)) || (writes && !on_device(o.recv, bytes)) ||
      ((o.kind == OP_SEND || o.kind == OP_RECV) && o.peer == o.comm->rank)) {
    misuse("%s of %zu bytes (rank %d of %d, peer or root %d): not what NCCL takes", what, bytes, o.comm->rank,
           o.comm->size, o.peer);
    return ncclInvalidArgument;
  }
  if (group_depth == 0) {
    run_ops(&o, 1);
  } else {
    if (group_n == MAX_GROUP) abort();
    group[group_n++] = o;
  }
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group_depth == 0) {
    misuse("ncclGroupEnd without ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--group_depth == 0) {
    run_ops(group, group_n);
    group_n = 0;
  }
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t s) {
  return issue((nccl_op_t){.kind = OP_ALLREDUCE, .send = send, .recv = recv, .count = count, .comm = comm}, type, op,
               s, "ncclAllReduce");
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t s) {
  return issue((nccl_op_t){.kind = OP_REDUCE, .send = send, .recv = recv, .count = count, .peer = root, .comm = comm},
               type, op, s, "ncclReduce");
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t s) {
  return issue((nccl_op_t){.kind = OP_BCAST, .send = send, .recv = recv, .count = count, .peer = root, .comm = comm},
               type, ncclSum, s, "ncclBroadcast");
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t s) {
  return issue((nccl_op_t){.kind = OP_SEND, .send = send, .count = count, .peer = peer, .comm = comm}, type, ncclSum,
               s, "ncclSend");
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t s) {
  return issue((nccl_op_t){.kind = OP_RECV, .recv = recv, .count = count, .peer = peer, .comm = comm}, type, ncclSum,
               s, "ncclRecv");
}
