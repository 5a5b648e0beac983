/* A faked CUDA runtime and NCCL for the comm layer's device side on the host (tests/test_comm_dev.c
 * over src/comm/comm_nccl.c as built for GPUs): "device memory" is host pages that no code but the
 * fakes may touch (they are mapped PROT_NONE except inside a fake CUDA or NCCL call, so a device
 * buffer handed to MPI or read by the host crashes the run), NCCL's operations run as MPI operations
 * over a communicator of the same ranks (an NCCL group's operations at its ncclGroupEnd, together),
 * and the runtime's streams and events keep count. Every operation runs when it is issued, so what
 * these fakes can find is what the comm layer asks for (which bytes, which ranks, which kind of
 * copy, which completion, what it frees), not the order a real device would run it in.
 *
 * The backend's rules for recorded pieces (backend/cuda_device_calls.h) are faked too: a thread may
 * pretend to record (fake_record), and then a copy or a wait of the stream before the recording ended
 * (cuda_capture_leave) is misuse, as are NCCL's set-up, teardown and connections (a communicator
 * made with NCCL_RUNTIME_CONNECT other than 0, a pair's first send or receive) outside a device-wide
 * call.
 *
 * Every rank's GPU has its own PCI bus id, unless SURGE_FAKE_SHARED_GPU is set in the environment:
 * then all ranks share one (the case that NCCL refuses). */
#ifndef SURGE_TESTS_COMM_DEV_FAKES_H
#define SURGE_TESTS_COMM_DEV_FAKES_H

#include <stddef.h>

/* n floats of device memory (at most 16 buffers live), and their release. */
float *fake_dev_floats(size_t n);
void fake_dev_free(float *p);
/* Copies between a device buffer and host memory (the test's own view of its buffers). */
void fake_dev_put(float *dev, const float *host, size_t n);
void fake_dev_get(float *host, const float *dev, size_t n);

typedef struct fake_counts {
  int streams, events;     /* created and not destroyed */
  int nccl_comms;          /* NCCL communicators initialised and not destroyed */
  int ops;                 /* NCCL operations run (each send, receive, reduce, broadcast, allreduce) */
  int copies_out, copies_in; /* device-to-host and host-to-device copies */
  int not_ready;           /* event queries answered cudaErrorNotReady (each record's first query is) */
  int cuts;                /* recordings ended by cuda_capture_leave or a device-wide call */
  int misuse;              /* calls the real library would refuse or fault on, and calls Surge must not make
                            * (above; also work on the default stream, a wait on an event never recorded, a
                            * send to oneself); fake_misuse says the first */
} fake_counts_t;
fake_counts_t fake_counts(void);
const char *fake_misuse(void);
/* The calling thread records a piece from now until its recording is ended (a cut). */
void fake_record(void);

#endif
