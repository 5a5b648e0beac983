/* The comm layer over MPI: private communicators with MPI_ERRORS_RETURN, every MPI failure turned
 * into a one-line runtime error naming the call, and every call metered in its traffic category.
 *
 * Meter conventions (see comm.h for bytes): each call of this API counts one call in its category,
 * however many MPI operations it issues (a bucketed allreduce is one call). comm_barrier counts in
 * TRAFFIC_OTHER with no bytes; comm_waitall counts its wait with no bytes. comm_split, comm_free
 * and comm_meter_total are not metered (comm_meter_total reads the meters it would change).
 *
 * Device buffers (comm_use_device): each float call asks the device side (comm_dev.h) whether its
 * buffer is device memory; such a buffer goes through NCCL, or is staged: copied to the host, sent
 * with the same MPI calls (or Surge's ring) as a host buffer, copied back. Meters count them the
 * same way. */
#include "comm/comm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm_dev.h"
#include "comm/parts.h"
#include "comm/ring.h"
#include "core/error.h"
#include "core/pace.h"
#include "core/timer.h"

enum { COMM_DEFAULT_BUCKET_BYTES = 4 << 20 };

const char *traffic_name(traffic_t t) {
  static const char *const names[TRAFFIC_COUNT] = {
      [TRAFFIC_DP] = "dp",
      [TRAFFIC_ACT] = "activation",
      [TRAFFIC_ACT_GRAD] = "activation_grad",
      [TRAFFIC_EMBED] = "embedding",
      [TRAFFIC_TP] = "tp",
      [TRAFFIC_DP_COMPRESSED] = "dp_compressed",
      [TRAFFIC_ACT_GRAD_COMPRESSED] = "activation_grad_compressed",
      [TRAFFIC_BN] = "batchnorm",
      [TRAFFIC_DP_SCATTER] = "dp_scatter",
      [TRAFFIC_DP_GATHER] = "dp_gather",
      [TRAFFIC_OTHER] = "other",
  };
  if ((int)t < 0 || t >= TRAFFIC_COUNT) return "unknown";
  return names[t];
}

/* An MPI return code other than MPI_SUCCESS ends the job with the call and MPI's own words. */
void comm_check_mpi(int rc, const char *mpi_call, const char *api_call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error code %d", rc);
  surge_runtime_error("%s failed in %s: %s", mpi_call, api_call, text);
}

/* Calls on a group this rank is not part of are programming errors, named rather than crashed. */
static void require_member(const comm_t *c, traffic_t t, const char *api_call) {
  if (c->mpi == MPI_COMM_NULL)
    surge_runtime_error("%s on an empty group (this rank was split out of it, or it was freed)", api_call);
  if ((int)t < 0 || t >= TRAFFIC_COUNT)
    surge_runtime_error("%s: traffic category %d is not one of the %d known", api_call, (int)t, TRAFFIC_COUNT);
}

static void meter_one(comm_meter_t *m, traffic_t t, uint64_t bytes, int remote, double seconds, int calls) {
  m->bytes[t] += bytes;
  if (remote) m->internode_bytes[t] += bytes;
  m->seconds[t] += seconds;
  m->calls[t] += (uint64_t)calls;
}

/* A call over peer's link (peer < 0: a collective over the whole group). */
static void meter_call(comm_t *c, traffic_t t, uint64_t bytes, int peer, double start) {
  double seconds = surge_now() - start;
  int remote = peer < 0 ? c->nodes > 1 : c->node && peer < c->size && c->node[peer] != c->node[c->rank];
  meter_one(&c->meter, t, bytes, remote, seconds, 1);
  if (c->root_meter) meter_one(c->root_meter, t, bytes, remote, seconds, 1);
}

static void meter_add(comm_t *c, traffic_t t, uint64_t bytes, double start) { meter_call(c, t, bytes, -1, start); }

/* The node of every rank of c: c->node and c->nodes. */
static void find_nodes(comm_t *c, const char *api_call) {
  MPI_Comm node;
  comm_check_mpi(MPI_Comm_split_type(c->mpi, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node),
                 "MPI_Comm_split_type", api_call);
  int first = c->rank; /* the lowest rank of c on this rank's node */
  comm_check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce", api_call);
  comm_check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", api_call);
  c->node = xcalloc((size_t)c->size, sizeof *c->node);
  comm_check_mpi(MPI_Allgather(&first, 1, MPI_INT, c->node, 1, MPI_INT, c->mpi), "MPI_Allgather", api_call);
  c->nodes = 0;
  for (int r = 0; r < c->size; r++) c->node[r] = c->node[r] == r ? c->nodes++ : c->node[c->node[r]];
}

/* Fill the fields of c that follow from its MPI communicator (which may be MPI_COMM_NULL). */
static void comm_init_from(comm_t *c, MPI_Comm mpi, const char *api_call) {
  memset(c, 0, sizeof *c);
  c->mpi = mpi;
  c->bucket_bytes = COMM_DEFAULT_BUCKET_BYTES;
  if (mpi == MPI_COMM_NULL) {
    c->rank = -1;
    c->size = 0;
    return;
  }
  comm_check_mpi(MPI_Comm_set_errhandler(mpi, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", api_call);
  comm_check_mpi(MPI_Comm_rank(mpi, &c->rank), "MPI_Comm_rank", api_call);
  comm_check_mpi(MPI_Comm_size(mpi, &c->size), "MPI_Comm_size", api_call);
  find_nodes(c, api_call);
  comm_ring_open(c, api_call);
}

static void mpi_settings(void) {
  surge_stdout_by_lines();
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0); /* 3: Rabenseifner (0 would let libnbc pick) */
}

void comm_init(int *argc, char ***argv) {
  mpi_settings();
  MPI_Init(argc, argv);
}

int comm_init_threads(int *argc, char ***argv) {
  mpi_settings();
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  return provided;
}

/* A private duplicate of a predefined communicator (api_call names the caller in errors). */
static void dup_of(comm_t *c, MPI_Comm of, const char *api_call) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) surge_runtime_error("%s called before MPI_Init", api_call);
  MPI_Comm dup;
  /* The dup inherits the original's abort-on-error handler until comm_init_from replaces it. */
  comm_check_mpi(MPI_Comm_dup(of, &dup), "MPI_Comm_dup", api_call);
  comm_init_from(c, dup, api_call);
}

void comm_world(comm_t *c) { dup_of(c, MPI_COMM_WORLD, "comm_world"); }

void comm_self(comm_t *c) { dup_of(c, MPI_COMM_SELF, "comm_self"); }

void comm_split(const comm_t *parent, int color, int key, comm_t *child) {
  if (parent->mpi == MPI_COMM_NULL) {
    comm_init_from(child, MPI_COMM_NULL, "comm_split");
    return;
  }
  MPI_Comm split;
  comm_check_mpi(MPI_Comm_split(parent->mpi, color < 0 ? MPI_UNDEFINED : color, key, &split), "MPI_Comm_split",
                 "comm_split");
  comm_init_from(child, split, "comm_split");
  comm_dev_inherit(parent, child);
}

void comm_split_node(const comm_t *parent, comm_t *child) {
  if (parent->mpi == MPI_COMM_NULL) {
    comm_init_from(child, MPI_COMM_NULL, "comm_split_node");
    return;
  }
  MPI_Comm node;
  comm_check_mpi(MPI_Comm_split_type(parent->mpi, MPI_COMM_TYPE_SHARED, parent->rank, MPI_INFO_NULL, &node),
                 "MPI_Comm_split_type", "comm_split_node");
  comm_init_from(child, node, "comm_split_node");
  comm_dev_inherit(parent, child);
}

const char *comm_use_device(comm_t *c, comm_device_mode_t mode, void *stream) {
  require_member(c, TRAFFIC_OTHER, "comm_use_device");
  return comm_dev_attach(c, mode, stream);
}

void comm_group_begin(comm_t *c) {
  if (c->dev) c->in_group = 1;
}

void comm_free(comm_t *c) {
  comm_dev_free(c);
  comm_ring_close(c);
  if (c->mpi != MPI_COMM_NULL) comm_check_mpi(MPI_Comm_free(&c->mpi), "MPI_Comm_free", "comm_free");
  free(c->node);
  c->node = NULL;
  c->mpi = MPI_COMM_NULL;
  c->rank = -1;
  c->size = 0;
}

int comm_local_rank(const comm_t *c) {
  int local = 0;
  for (int r = 0; c->node && r < c->rank; r++) local += c->node[r] == c->node[c->rank];
  return local;
}

void comm_meter_reset(comm_t *c) { memset(&c->meter, 0, sizeof c->meter); }

/* buf (n,) of host memory reduced with MPI: in buckets of bucket_bytes (sums), or as one operation. */
static void allreduce_host(comm_t *c, float *buf, size_t n, MPI_Op op, int buckets, const char *api_call) {
  size_t per_bucket = buckets ? c->bucket_bytes / sizeof(float) : n;
  if (buckets && per_bucket == 0)
    surge_runtime_error("%s: bucket_bytes is %zu, less than one float", api_call, c->bucket_bytes);
  if (!buckets && n > INT_MAX)
    surge_runtime_error("%s: %zu floats is more than one MPI operation holds (%d)", api_call, n, INT_MAX);
  if (per_bucket > INT_MAX) per_bucket = INT_MAX;
  if (n == 0 && !buckets)
    comm_check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf, 0, MPI_FLOAT, op, c->mpi), "MPI_Allreduce", api_call);
  // consecutive buckets of per_bucket floats (the last may be shorter)
  for (size_t off = 0; off < n; off += per_bucket) {
    size_t len = n - off < per_bucket ? n - off : per_bucket;
    comm_check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)len, MPI_FLOAT, op, c->mpi), "MPI_Allreduce", api_call);
  }
}

/* An allreduce of buf wherever it lives: host memory through MPI; device memory through NCCL, or
 * staged through a host copy. */
static void allreduce_any(comm_t *c, float *buf, size_t n, MPI_Op op, int buckets, traffic_t t, const char *api_call) {
  require_member(c, t, api_call);
  double start = surge_now();
  if (!comm_dev_owns(c, buf)) {
    allreduce_host(c, buf, n, op, buckets, api_call);
  } else if (c->size == 1) {
    /* the sum of one rank's values: nothing to move (staging would copy and wait on the device, which a
     * background recording its piece as a graph must not) */
  } else if (comm_dev_nccl(c)) {
    comm_dev_allreduce(c, buf, n, op);
  } else {
    float *host = comm_dev_stage_out(c, buf, n * sizeof(float));
    allreduce_host(c, host, n, op, buckets, api_call);
    comm_dev_stage_in(c, buf, host, n * sizeof(float));
    free(host);
  }
  meter_add(c, t, (uint64_t)n * sizeof(float), start);
}

void comm_allreduce_sum(comm_t *c, float *buf, size_t n, traffic_t t) {
  allreduce_any(c, buf, n, MPI_SUM, 1, t, "comm_allreduce_sum");
}

static void allreduce_float(comm_t *c, float *buf, size_t n, MPI_Op op, traffic_t t, const char *api_call) {
  allreduce_any(c, buf, n, op, 0, t, api_call);
}

void comm_allreduce_max(comm_t *c, float *buf, size_t n, traffic_t t) {
  allreduce_float(c, buf, n, MPI_MAX, t, "comm_allreduce_max");
}

void comm_allreduce_min(comm_t *c, float *buf, size_t n, traffic_t t) {
  allreduce_float(c, buf, n, MPI_MIN, t, "comm_allreduce_min");
}

static void wait_requests(const comm_t *c, MPI_Request *req, int n, const char *api_call);

/* polite: with poll_us, wait at a polite pace (core/pace.h) rather than inside MPI (spinning): for
 * a rank that expects to wait long. Every rank of a collective must poll for it to progress, so a
 * sleeping rank delays the others by up to poll_us: ranks on the critical path wait inside MPI.
 * Every rank starts the same non-blocking reduction whichever way it waits (a blocking collective
 * does not match a non-blocking one). */
static void allreduce_double(comm_t *c, double *buf, int n, MPI_Op op, traffic_t t, int polite, const char *api_call) {
  require_member(c, t, api_call);
  if (n < 0) surge_runtime_error("%s: negative count %d", api_call, n);
  double start = surge_now();
  MPI_Request req;
  comm_check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, op, c->mpi, &req), "MPI_Iallreduce", api_call);
  if (polite && c->poll_us > 0)
    wait_requests(c, &req, 1, api_call);
  else
    comm_check_mpi(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", api_call);
  meter_add(c, t, (uint64_t)n * sizeof(double), start);
}

void comm_allreduce_sum_double(comm_t *c, double *buf, int n, traffic_t t) {
  allreduce_double(c, buf, n, MPI_SUM, t, 0, "comm_allreduce_sum_double");
}

void comm_allreduce_sum_double_waiting(comm_t *c, double *buf, int n, traffic_t t) {
  allreduce_double(c, buf, n, MPI_SUM, t, 1, "comm_allreduce_sum_double_waiting");
}

void comm_allreduce_max_double(comm_t *c, double *buf, int n, traffic_t t) {
  allreduce_double(c, buf, n, MPI_MAX, t, 0, "comm_allreduce_max_double");
}

int comm_allreduce_max_double_within(comm_t *c, double *buf, int n, double timeout_s, traffic_t t) {
  require_member(c, t, "comm_allreduce_max_double_within");
  double start = surge_now();
  MPI_Request req;
  comm_check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_MAX, c->mpi, &req), "MPI_Iallreduce",
                 "comm_allreduce_max_double_within");
  int done = 0;
  if (timeout_s < 0) {
    comm_check_mpi(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", "comm_allreduce_max_double_within");
    done = 1;
  }
  while (!done) {
    comm_check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test", "comm_allreduce_max_double_within");
    if (!done && surge_now() - start > timeout_s) break;
    if (!done) nanosleep(&(struct timespec){0, 200000}, NULL); /* 0.2 ms */
  }
  meter_add(c, t, (uint64_t)n * sizeof(double), start);
  return done;
}

static void bcast_host(comm_t *c, char *p, size_t bytes, int root) {
  size_t off = 0;
  // MPI counts are ints: more than INT_MAX bytes go as several broadcasts; 0 bytes is still one
  // (empty) broadcast, so a bad root is reported the same way
  do {
    size_t len = bytes - off < (size_t)INT_MAX ? bytes - off : (size_t)INT_MAX;
    comm_check_mpi(MPI_Bcast(p + off, (int)len, MPI_BYTE, root, c->mpi), "MPI_Bcast", "comm_bcast");
    off += len;
  } while (off < bytes);
}

void comm_bcast(comm_t *c, void *buf, size_t bytes, int root, traffic_t t) {
  require_member(c, t, "comm_bcast");
  double start = surge_now();
  if (!comm_dev_owns(c, buf)) {
    bcast_host(c, buf, bytes, root);
  } else if (c->size == 1 && root == 0) {
    /* the root's own bytes: nothing to move, as allreduce_any (a bad root still goes to MPI, which says so) */
  } else if (comm_dev_nccl(c)) {
    comm_dev_bcast(c, buf, bytes, root);
  } else { /* staged: the root sends its bytes, the others receive theirs into the host copy */
    char *host = c->rank == root ? comm_dev_stage_out(c, buf, bytes) : xmalloc(bytes ? bytes : 1);
    bcast_host(c, host, bytes, root);
    if (c->rank != root) comm_dev_stage_in(c, buf, host, bytes);
    free(host);
  }
  meter_add(c, t, (uint64_t)bytes, start);
}

void comm_gather_double(comm_t *c, const double *in, int count, double *out, int root, traffic_t t) {
  require_member(c, t, "comm_gather_double");
  if (count < 0) surge_runtime_error("comm_gather_double: negative count %d", count);
  double start = surge_now();
  // out is (size, count) on root, unused elsewhere
  comm_check_mpi(MPI_Gather(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, root, c->mpi), "MPI_Gather",
                 "comm_gather_double");
  meter_add(c, t, (uint64_t)count * sizeof(double), start);
}

void comm_gatherv_bytes(comm_t *c, const void *in, size_t bytes, void *out, const size_t *n, int root, traffic_t t) {
  require_member(c, t, "comm_gatherv_bytes");
  if (bytes > INT_MAX)
    surge_runtime_error("comm_gatherv_bytes: %zu bytes is more than one MPI operation holds (%d)", bytes, INT_MAX);
  int *ints = NULL; /* root: the counts, then the displacements */
  if (c->rank == root) {
    ints = xcalloc(2 * (size_t)c->size, sizeof *ints);
    size_t at = 0;
    for (int r = 0; r < c->size; r++) {
      if (n[r] > INT_MAX || at > INT_MAX)
        surge_runtime_error("comm_gatherv_bytes: rank %d's part (%zu bytes at %zu) is beyond what one MPI operation "
                            "holds (%d)", r, n[r], at, INT_MAX);
      ints[r] = (int)n[r];
      ints[c->size + r] = (int)at;
      at += n[r];
    }
  }
  double start = surge_now();
  comm_check_mpi(MPI_Gatherv(in, (int)bytes, MPI_BYTE, out, ints, ints ? ints + c->size : NULL, MPI_BYTE, root, c->mpi),
                 "MPI_Gatherv", "comm_gatherv_bytes");
  meter_add(c, t, (uint64_t)bytes, start);
  free(ints);
}

static int point_to_point_count(size_t n, const char *api_call) {
  if (n > INT_MAX)
    surge_runtime_error("%s: %zu floats is more than one MPI message holds (%d); split the transfer", api_call,
                        n, INT_MAX);
  return (int)n;
}

/* A device buffer in an open group of a group with NCCL goes with NCCL (comm_group_begin). */
static int grouped_device(const comm_t *c, const void *buf) {
  return c->in_group && comm_dev_nccl_ready(c) && comm_dev_owns(c, buf);
}

void comm_isend(comm_t *c, const float *buf, size_t n, int dest, int tag, traffic_t t, comm_request_t *r) {
  require_member(c, t, "comm_isend");
  int count = point_to_point_count(n, "comm_isend");
  double start = surge_now();
  *r = (comm_request_t){.req = MPI_REQUEST_NULL, .kind = COMM_KIND_HOST};
  if (grouped_device(c, buf)) {
    comm_dev_send(c, buf, n, dest);
    r->kind = COMM_KIND_NCCL;
  } else {
    const float *from = buf;
    if (comm_dev_owns(c, buf)) { /* staged: the host copy is what MPI sends */
      r->kind = COMM_KIND_STAGED_SEND;
      from = r->host = comm_dev_stage_out(c, buf, n * sizeof(float));
    }
    comm_check_mpi(MPI_Isend(from, count, MPI_FLOAT, dest, tag, c->mpi, &r->req), "MPI_Isend", "comm_isend");
  }
  meter_call(c, t, (uint64_t)n * sizeof(float), dest, start);
}

void comm_irecv(comm_t *c, float *buf, size_t n, int src, int tag, traffic_t t, comm_request_t *r) {
  require_member(c, t, "comm_irecv");
  int count = point_to_point_count(n, "comm_irecv");
  double start = surge_now();
  *r = (comm_request_t){.req = MPI_REQUEST_NULL, .kind = COMM_KIND_HOST};
  if (grouped_device(c, buf)) {
    comm_dev_recv(c, buf, n, src);
    r->kind = COMM_KIND_NCCL;
  } else {
    float *into = buf;
    if (comm_dev_owns(c, buf)) { /* staged: MPI receives into a host copy, uploaded at completion */
      *r = (comm_request_t){.kind = COMM_KIND_STAGED_RECV, .dev = buf, .n = n};
      into = r->host = xmalloc(n ? n * sizeof(float) : 1);
    }
    comm_check_mpi(MPI_Irecv(into, count, MPI_FLOAT, src, tag, c->mpi, &r->req), "MPI_Irecv", "comm_irecv");
  }
  meter_call(c, t, 0, src, start);
}

/* After a staged request or operation completed: its result, the n floats from `at` of the host copy,
 * goes to the same place of the device buffer; the host copy is freed. */
static void finish_staged(comm_t *c, float *dev, float **host, size_t at, size_t n, int kind) {
  if (kind == COMM_KIND_STAGED_RECV || kind == COMM_KIND_STAGED)
    comm_dev_stage_in(c, dev + at, *host + at, n * sizeof(float));
  free(*host);
  *host = NULL;
}

/* Complete *req (n requests): MPI's own blocking wait when poll_us is 0; otherwise at a polite
 * pace (core/pace.h), so that the core is free meanwhile. */
static void wait_requests(const comm_t *c, MPI_Request *req, int n, const char *api_call) {
  if (c->poll_us <= 0) {
    comm_check_mpi(MPI_Waitall(n, req, MPI_STATUSES_IGNORE), "MPI_Waitall", api_call);
    return;
  }
  pace_t pace = pace_start(c->poll_us, c->poll_fraction);
  for (;;) {
    int done = 0;
    comm_check_mpi(MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE), "MPI_Testall", api_call);
    if (done) return;
    pace_next(&pace);
  }
}

void comm_waitall(comm_t *c, comm_request_t *r, int n, traffic_t t) {
  require_member(c, t, "comm_waitall");
  double start = surge_now();
  if (c->in_group) { /* the group's device transfers go now, together, and complete */
    comm_dev_group_end(c);
    c->in_group = 0;
  }
  if (n > 0) {
    MPI_Request few[8], *req = n <= 8 ? few : xmalloc((size_t)n * sizeof *req); /* NCCL's: MPI_REQUEST_NULL */
    for (int i = 0; i < n; i++) req[i] = r[i].req;
    wait_requests(c, req, n, "comm_waitall");
    if (req != few) free(req);
    for (int i = 0; i < n; i++) {
      r[i].req = MPI_REQUEST_NULL;
      if (r[i].kind == COMM_KIND_STAGED_SEND || r[i].kind == COMM_KIND_STAGED_RECV)
        finish_staged(c, r[i].dev, &r[i].host, 0, r[i].n, r[i].kind);
      r[i].kind = COMM_KIND_HOST;
    }
  }
  meter_add(c, t, 0, start);
}

/* The counts (size) and then the displacements (size) of an in-place all-gather, as MPI takes them. */
static int *gatherv_ints(const comm_t *c, const size_t *off, const size_t *n, const char *api_call) {
  int *ints = xcalloc(2 * (size_t)c->size, sizeof *ints);
  for (int r = 0; r < c->size; r++) {
    if (n[r] > INT_MAX || off[r] > INT_MAX)
      surge_runtime_error("%s: rank %d's part (%zu floats at %zu) is beyond what one MPI operation holds (%d)",
                          api_call, r, n[r], off[r], INT_MAX);
    ints[r] = (int)n[r];
    ints[c->size + r] = (int)off[r];
  }
  return ints;
}

void comm_allgatherv_float(comm_t *c, float *buf, const size_t *off, const size_t *n, traffic_t t) {
  require_member(c, t, "comm_allgatherv_float");
  int *ints = gatherv_ints(c, off, n, "comm_allgatherv_float");
  double start = surge_now();
  comm_check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, ints, ints + c->size, MPI_FLOAT, c->mpi),
                 "MPI_Allgatherv", "comm_allgatherv_float");
  meter_add(c, t, (uint64_t)n[c->rank] * sizeof(float), start);
  free(ints);
}


void comm_barrier(comm_t *c) { comm_barrier_as(c, TRAFFIC_OTHER, 0); }

void comm_barrier_as(comm_t *c, traffic_t t, uint64_t bytes) {
  require_member(c, t, "comm_barrier");
  double start = surge_now();
  if (c->poll_us > 0) {
    MPI_Request req;
    comm_check_mpi(MPI_Ibarrier(c->mpi, &req), "MPI_Ibarrier", "comm_barrier");
    wait_requests(c, &req, 1, "comm_barrier");
  } else {
    comm_check_mpi(MPI_Barrier(c->mpi), "MPI_Barrier", "comm_barrier");
  }
  meter_add(c, t, bytes, start);
}

void comm_allreduce_sum_u64(comm_t *c, uint64_t *buf, int n, traffic_t t) {
  require_member(c, t, "comm_allreduce_sum_u64");
  if (n < 0) surge_runtime_error("comm_allreduce_sum_u64: negative count %d", n);
  double start = surge_now();
  comm_check_mpi(MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_UINT64_T, MPI_SUM, c->mpi), "MPI_Allreduce",
                 "comm_allreduce_sum_u64");
  meter_add(c, t, (uint64_t)n * sizeof(uint64_t), start);
}

/* ---- non-blocking collectives and their trace */

static _Thread_local struct { /* the calling thread's: an in-process background traces nothing of its foreground's */
  comm_event_t *ev;
  int n, cap;
} trace;

void comm_trace_begin(int capacity) {
  comm_trace_end();
  trace.ev = xcalloc(capacity > 0 ? (size_t)capacity : 1, sizeof *trace.ev);
  trace.cap = capacity > 0 ? capacity : 0;
}

int comm_trace_events(const comm_event_t **events) {
  *events = trace.ev;
  return trace.n;
}

void comm_trace_end(void) {
  free(trace.ev);
  memset(&trace, 0, sizeof trace);
}

static int trace_start(traffic_t t, uint64_t bytes, double start) {
  if (trace.n >= trace.cap) return -1;
  trace.ev[trace.n] = (comm_event_t){.t = t, .bytes = bytes, .start = start};
  return trace.n++;
}

static void trace_done(const comm_op_t *op) {
  if (op->event >= 0 && op->event < trace.n && trace.ev[op->event].end == 0) trace.ev[op->event].end = surge_now();
}

/* A device buffer in a group of one rank: the operation's result is the buffer as it is, so nothing is
 * copied or waited for (a staged copy would wait on the device, which a background recording its piece
 * as a graph must not, as allreduce_any). */
static int device_alone(const comm_t *c, int device) { return device && c->size == 1; }
static void op_done(comm_op_t *op);

/* A staged operation on the device buffer dev: the host copy of its first `out` floats, on which the
 * MPI operation (or the ring) runs; at completion the floats [at, at + back) of it go back to dev
 * (op_done). Returns the host copy. */
static float *stage_op(comm_t *c, comm_op_t *op, float *dev, size_t out, size_t at, size_t back) {
  op->kind = COMM_KIND_STAGED;
  op->dev = dev;
  op->at = at;
  op->n = back;
  return op->host = comm_dev_stage_out(c, dev, out * sizeof(float));
}

void comm_iallreduce_sum(comm_t *c, float *buf, size_t n, traffic_t t, comm_op_t *op) {
  require_member(c, t, "comm_iallreduce_sum");
  if (n > INT_MAX)
    surge_runtime_error("comm_iallreduce_sum: %zu floats is more than one MPI operation holds (%d); use smaller "
                        "buckets", n, INT_MAX);
  double start = surge_now();
  *op = (comm_op_t){.c = c, .t = t, .event = trace_start(t, (uint64_t)n * sizeof(float), start),
                    .req = MPI_REQUEST_NULL, .kind = COMM_KIND_HOST};
  int device = comm_dev_owns(c, buf);
  if (device_alone(c, device)) {
    op_done(op);
  } else if (device && comm_dev_nccl(c)) {
    comm_dev_iallreduce(c, buf, n, op);
  } else { /* host memory, or a staged host copy reduced and sent back whole at completion */
    float *host = device ? stage_op(c, op, buf, n, 0, n) : buf;
    comm_check_mpi(MPI_Iallreduce(MPI_IN_PLACE, host, (int)n, MPI_FLOAT, MPI_SUM, c->mpi, &op->req),
                   "MPI_Iallreduce", "comm_iallreduce_sum");
  }
  meter_add(c, t, (uint64_t)n * sizeof(float), start);
}

void comm_iallgatherv_float(comm_t *c, float *buf, const size_t *off, const size_t *n, traffic_t t, comm_op_t *op) {
  require_member(c, t, "comm_iallgatherv_float");
  double start = surge_now();
  *op = (comm_op_t){.c = c, .t = t, .event = trace_start(t, (uint64_t)n[c->rank] * sizeof(float), start),
                    .req = MPI_REQUEST_NULL, .kind = COMM_KIND_HOST};
  int device = comm_dev_owns(c, buf);
  if (device_alone(c, device)) {
    op_done(op);
  } else if (device && comm_dev_nccl(c)) {
    comm_dev_iallgatherv(c, buf, off, n, op);
  } else { /* host memory, or a staged host copy of the floats the parts span, gathered and sent back whole */
    size_t span = comm_parts_extent(c->size, off, n);
    float *host = device ? stage_op(c, op, buf, span, 0, span) : buf;
    op->counts = gatherv_ints(c, off, n, "comm_iallgatherv_float");
    comm_check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host, op->counts, op->counts + c->size,
                                   MPI_FLOAT, c->mpi, &op->req),
                   "MPI_Iallgatherv", "comm_iallgatherv_float");
  }
  meter_add(c, t, (uint64_t)n[c->rank] * sizeof(float), start);
}

void comm_ireduce_scatter_sum(comm_t *c, float *buf, size_t n, const size_t *off, const size_t *cnt, traffic_t t,
                              comm_op_t *op) {
  require_member(c, t, "comm_ireduce_scatter_sum");
  char why[256];
  if (comm_parts_consecutive(c->size, off, cnt, n, INT_MAX, why, sizeof why) != 0)
    surge_runtime_error("comm_ireduce_scatter_sum: %s", why);
  double start = surge_now();
  *op = (comm_op_t){.c = c, .t = t, .event = trace_start(t, (uint64_t)n * sizeof(float), start),
                    .req = MPI_REQUEST_NULL, .kind = COMM_KIND_HOST};
  int device = comm_dev_owns(c, buf);
  if (device_alone(c, device)) {
    op_done(op);
  } else if (device && comm_dev_nccl(c)) {
    comm_dev_ireduce_scatter(c, buf, off, cnt, op);
  } else { /* host memory, or a staged host copy of it, summed by the ring; this rank's part goes back */
    float *host = device ? stage_op(c, op, buf, n, off[c->rank], cnt[c->rank]) : buf;
    op->ring = comm_ring_start(c, host, off, cnt, "comm_ireduce_scatter_sum");
  }
  meter_add(c, t, (uint64_t)n * sizeof(float), start);
}

/* The time of a test or wait, counted in the operation's category without another call. */
static void meter_time(comm_t *c, traffic_t t, double start) {
  double seconds = surge_now() - start;
  meter_one(&c->meter, t, 0, 0, seconds, 0);
  if (c->root_meter) meter_one(c->root_meter, t, 0, 0, seconds, 0);
}

/* op has completed: a staged result goes back to the device. */
static void op_done(comm_op_t *op) {
  op->done = 1;
  comm_ring_free(op->ring);
  op->ring = NULL;
  free(op->counts);
  op->counts = NULL;
  if (op->kind == COMM_KIND_STAGED) finish_staged(op->c, op->dev, &op->host, op->at, op->n, op->kind);
  trace_done(op);
}

int comm_op_test(comm_op_t *op) {
  if (op->done) return 1;
  double start = surge_now();
  int done = 0;
  if (op->kind == COMM_KIND_NCCL)
    done = comm_dev_test(op);
  else if (op->ring)
    done = comm_ring_test(op->ring, "comm_op_test");
  else
    comm_check_mpi(MPI_Test(&op->req, &done, MPI_STATUS_IGNORE), "MPI_Test", "comm_op_test");
  if (done) op_done(op);
  meter_time(op->c, op->t, start);
  return op->done;
}

void comm_op_wait(comm_op_t *op) {
  if (op->done) return;
  double start = surge_now();
  if (op->kind == COMM_KIND_NCCL)
    comm_dev_wait(op);
  else if (op->ring)
    comm_ring_wait(op->ring, "comm_op_wait");
  else
    wait_requests(op->c, &op->req, 1, "comm_op_wait");
  op_done(op);
  meter_time(op->c, op->t, start);
}

double comm_clock_offset(comm_t *c, int rounds) {
  require_member(c, TRAFFIC_OTHER, "comm_clock_offset");
  double start = surge_now(), offset = 0, best = -1, t;
  enum { TAG = 31337 };
  for (int r = 1; r < c->size; r++)
    for (int k = 0; k < rounds; k++) {
      if (c->rank == 0) { /* answer r's ping with this clock */
        comm_check_mpi(MPI_Recv(&t, 1, MPI_DOUBLE, r, TAG, c->mpi, MPI_STATUS_IGNORE), "MPI_Recv", "comm_clock_offset");
        t = surge_now();
        comm_check_mpi(MPI_Send(&t, 1, MPI_DOUBLE, r, TAG, c->mpi), "MPI_Send", "comm_clock_offset");
      } else if (c->rank == r) {
        double a = surge_now();
        comm_check_mpi(MPI_Send(&a, 1, MPI_DOUBLE, 0, TAG, c->mpi), "MPI_Send", "comm_clock_offset");
        comm_check_mpi(MPI_Recv(&t, 1, MPI_DOUBLE, 0, TAG, c->mpi, MPI_STATUS_IGNORE), "MPI_Recv", "comm_clock_offset");
        double b = surge_now();
        if (best < 0 || b - a < best) best = b - a, offset = t - 0.5 * (a + b);
      }
    }
  meter_add(c, TRAFFIC_OTHER, (uint64_t)rounds * sizeof(double), start);
  return offset;
}

void comm_meter_total(comm_t *c, const comm_meter_t *local, comm_meter_t *total) {
  require_member(c, TRAFFIC_OTHER, "comm_meter_total");
  // counts is (3, TRAFFIC_COUNT): bytes, internode bytes, calls; local may be total itself
  uint64_t counts[3 * TRAFFIC_COUNT];
  double seconds[TRAFFIC_COUNT];
  memcpy(counts, local->bytes, sizeof local->bytes);
  memcpy(counts + TRAFFIC_COUNT, local->internode_bytes, sizeof local->internode_bytes);
  memcpy(counts + 2 * TRAFFIC_COUNT, local->calls, sizeof local->calls);
  memcpy(seconds, local->seconds, sizeof seconds);
  comm_check_mpi(MPI_Allreduce(MPI_IN_PLACE, counts, 3 * TRAFFIC_COUNT, MPI_UINT64_T, MPI_SUM, c->mpi),
                 "MPI_Allreduce", "comm_meter_total");
  comm_check_mpi(MPI_Allreduce(MPI_IN_PLACE, seconds, TRAFFIC_COUNT, MPI_DOUBLE, MPI_SUM, c->mpi), "MPI_Allreduce",
                 "comm_meter_total");
  memcpy(total->bytes, counts, sizeof total->bytes);
  memcpy(total->internode_bytes, counts + TRAFFIC_COUNT, sizeof total->internode_bytes);
  memcpy(total->calls, counts + 2 * TRAFFIC_COUNT, sizeof total->calls);
  memcpy(total->seconds, seconds, sizeof total->seconds);
}
