/* Inside the comm layer: a group's device side, for the buffers of a GPU backend. comm.c keeps the
 * API, the MPI calls and the meters; this side knows device memory: it tells device buffers from
 * host ones, copies them through host memory for MPI (staging), and runs NCCL. Implemented by
 * comm_nccl.c (CUDA builds) and comm_dev_absent.c (builds without CUDA: no group has a device side).
 *
 * NCCL communicators: one per group, made on the group's first device collective (every rank of the
 * group is in that call, so the unique id is broadcast over the group's MPI communicator there);
 * the group comm_use_device attached makes its own at once, so that its point-to-point groups can
 * use it from the start. */
#ifndef SURGE_COMM_DEV_H
#define SURGE_COMM_DEV_H

#include "comm/comm.h"

/* How a request or non-blocking operation completes (comm_request_t.kind, comm_op_t.kind). */
enum { COMM_KIND_HOST = 0, COMM_KIND_STAGED_SEND, COMM_KIND_STAGED_RECV, COMM_KIND_STAGED, COMM_KIND_NCCL };

/* Collective over c: give c a device side (comm_use_device). */
const char *comm_dev_attach(comm_t *c, comm_device_mode_t mode, void *stream);
/* A group split from parent gets parent's device side, its NCCL communicator made later. */
void comm_dev_inherit(const comm_t *parent, comm_t *child);
void comm_dev_free(comm_t *c);

/* Whether p is device memory (0 when c has no device side). */
int comm_dev_owns(const comm_t *c, const void *p);
/* Whether c's device buffers go through NCCL; collective (may make the NCCL communicator): call it
 * only where every rank of c is in the same call. */
int comm_dev_nccl(comm_t *c);
/* Whether c has an NCCL communicator already (not collective). */
int comm_dev_nccl_ready(const comm_t *c);

/* Staging: a malloc'd host copy of device bytes (after the device work queued before), and the
 * copy back (before the device work queued after). */
void *comm_dev_stage_out(const comm_t *c, const void *dev, size_t bytes);
void comm_dev_stage_in(const comm_t *c, void *dev, const void *host, size_t bytes);

/* NCCL collectives, blocking: op is MPI_SUM, MPI_MAX or MPI_MIN. */
void comm_dev_allreduce(comm_t *c, float *buf, size_t n, MPI_Op op);
void comm_dev_bcast(comm_t *c, void *buf, size_t bytes, int root);
/* The non-blocking sum: started here, completed by comm_dev_test (1 when done) or comm_dev_wait. */
void comm_dev_iallreduce(comm_t *c, float *buf, size_t n, comm_op_t *op);
/* The non-blocking reduce-scatter (sum) and all-gather of the parts (off, cnt) of buf (comm.h): one
 * NCCL group of rooted reduces or broadcasts (comm/parts.h), completed as comm_dev_iallreduce's. */
void comm_dev_ireduce_scatter(comm_t *c, float *buf, const size_t *off, const size_t *cnt, comm_op_t *op);
void comm_dev_iallgatherv(comm_t *c, float *buf, const size_t *off, const size_t *cnt, comm_op_t *op);
int comm_dev_test(comm_op_t *op);
void comm_dev_wait(comm_op_t *op);
/* Point to point in c's open group (comm_group_begin), issued together by comm_dev_group_end, which
 * returns when they have all completed. */
void comm_dev_send(comm_t *c, const float *buf, size_t n, int peer);
void comm_dev_recv(comm_t *c, float *buf, size_t n, int peer);
void comm_dev_group_end(comm_t *c);

#endif
