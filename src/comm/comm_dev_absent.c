/* The comm layer's device side in a build without CUDA: no group ever has one, so every buffer is
 * a host buffer and only comm_use_device has something to say. */
#include "comm/comm_dev.h"
#include "core/error.h"

const char *comm_dev_attach(comm_t *c, comm_device_mode_t mode, void *stream) {
  (void)c, (void)mode, (void)stream;
  surge_runtime_error("comm: device buffers need a build with CUDA and NCCL (configure found none)");
}

void comm_dev_inherit(const comm_t *parent, comm_t *child) {
  (void)parent;
  child->dev = NULL;
}

void comm_dev_free(comm_t *c) { c->dev = NULL; }

int comm_dev_owns(const comm_t *c, const void *p) {
  (void)c, (void)p;
  return 0;
}

int comm_dev_nccl(comm_t *c) {
  (void)c;
  return 0;
}

int comm_dev_nccl_ready(const comm_t *c) {
  (void)c;
  return 0;
}

/* Unreachable without a device side: a call is a programming error, named. */
_Noreturn static void no_device(const char *call) { surge_runtime_error("comm: %s without a device side (a build without CUDA)", call); }

void *comm_dev_stage_out(const comm_t *c, const void *dev, size_t bytes) {
  (void)c, (void)dev, (void)bytes;
  no_device("comm_dev_stage_out");
  return NULL;
}
void comm_dev_stage_in(const comm_t *c, void *dev, const void *host, size_t bytes) {
  (void)c, (void)dev, (void)host, (void)bytes;
  no_device("comm_dev_stage_in");
}
void comm_dev_allreduce(comm_t *c, float *buf, size_t n, MPI_Op op) {
  (void)c, (void)buf, (void)n, (void)op;
  no_device("comm_dev_allreduce");
}
void comm_dev_bcast(comm_t *c, void *buf, size_t bytes, int root) {
  (void)c, (void)buf, (void)bytes, (void)root;
  no_device("comm_dev_bcast");
}
void comm_dev_iallreduce(comm_t *c, float *buf, size_t n, comm_op_t *op) {
  (void)c, (void)buf, (void)n, (void)op;
  no_device("comm_dev_iallreduce");
}
void comm_dev_ireduce_scatter(comm_t *c, float *buf, const size_t *off, const size_t *cnt, comm_op_t *op) {
  (void)c, (void)buf, (void)off, (void)cnt, (void)op;
  no_device("comm_dev_ireduce_scatter");
}
void comm_dev_iallgatherv(comm_t *c, float *buf, const size_t *off, const size_t *cnt, comm_op_t *op) {
  (void)c, (void)buf, (void)off, (void)cnt, (void)op;
  no_device("comm_dev_iallgatherv");
}
int comm_dev_test(comm_op_t *op) {
  (void)op;
  no_device("comm_dev_test");
  return 1;
}
void comm_dev_wait(comm_op_t *op) {
  (void)op;
  no_device("comm_dev_wait");
}
void comm_dev_send(comm_t *c, const float *buf, size_t n, int peer) {
  (void)c, (void)buf, (void)n, (void)peer;
  no_device("comm_dev_send");
}
void comm_dev_recv(comm_t *c, float *buf, size_t n, int peer) {
  (void)c, (void)buf, (void)n, (void)peer;
  no_device("comm_dev_recv");
}
void comm_dev_group_end(comm_t *c) { (void)c; }
