/* Activations and their gradients between neighbouring pipeline stages, per micro-batch, through the
 * comm layer (non-blocking; traffic categories activation and activation_grad). Each rank talks to
 * the rank of the same tensor- and data-parallel index in the stage before and after it, over its
 * pipeline group (rank in the group = stage). Each wait for a transfer is raised as an event
 * (core/events.h), which the timeline and multiplexing subscribe to.
 *
 * Scatter-gather (Megatron-LM's scatter_gather_tensors_in_pipeline; [parallel] scatter_gather): the
 * tensor-parallel ranks of a stage hold the same activation (and the same gradient of the stage's
 * input), so each sends only its 1/tp contiguous chunk of it, and the receivers all-gather the chunks
 * over their stage's tensor-parallel group (traffic tp) when the receive completes: the pipeline
 * carries each tensor once instead of tp times. It applies to activations, evaluation chunks and the
 * exact gradient transfer; CB (pipe/p2p_cb.h) compresses each rank's own part, gathers the decoded
 * parts after its receive completes, and chunks its exact sends.
 *
 * Activation gradients cross stages only through p2p.grad (send, post_recv, wait_recv): the exact
 * transfer here; a compressor of pipeline back-propagation (Optimus-CC's CB) installs its own table,
 * encoding before the send and decoding when the receive completes. Tags: 2 mb for activations,
 * 2 mb + 1 for gradients (MPI keeps one pair's messages of one tag in order, so steps may reuse them). */
#ifndef SURGE_PIPE_P2P_H
#define SURGE_PIPE_P2P_H

#include <stddef.h>

#include "comm/comm.h"

typedef struct pipe_p2p pipe_p2p_t;

typedef struct pipe_grad_ops {
  const char *name;
  /* Send the gradient of micro-batch mb's input (n floats) to the previous stage. */
  void (*send)(pipe_p2p_t *p, int mb, const float *g, size_t n);
  /* Receive the gradient of micro-batch mb's output (n floats) from the next stage into g ... */
  void (*post_recv)(pipe_p2p_t *p, int mb, float *g, size_t n);
  /* ... complete when wait_recv returns. */
  void (*wait_recv)(pipe_p2p_t *p, int mb);
} pipe_grad_ops_t;

/* The exact transfer of activation gradients. */
extern const pipe_grad_ops_t pipe_grad_exact;

enum { P2P_RECV_ACT = 0, P2P_RECV_GRAD, P2P_SEND_ACT, P2P_SEND_GRAD, P2P_KINDS };

struct pipe_p2p {
  comm_t *pp;            /* the pipeline group */
  int stage, stages, M;
  comm_request_t *req;   /* (P2P_KINDS, M) */
  unsigned char *live;   /* (P2P_KINDS, M): a request in flight */
  unsigned char *traffic; /* (P2P_KINDS, M): its traffic category */
  comm_t *tp;            /* scatter-gather over this tensor-parallel group; NULL: whole transfers */
  float **gather_buf;    /* (P2P_KINDS, M): a chunked receive's whole buffer, gathered at completion */
  size_t *gather_n;      /* (P2P_KINDS, M): its floats (0: nothing to gather) */
  size_t *part_off, *part_n; /* (tp size): scratch of the gathers */
  const pipe_grad_ops_t *grad;
  void *grad_state;      /* a compressor's */
};

void pipe_p2p_init(pipe_p2p_t *p, comm_t *pp, int M);
void pipe_p2p_free(pipe_p2p_t *p);
/* Scatter-gather over tp (its size > 1; every transfer's floats then a multiple of it): on every rank
 * of the job or on none, before the first transfer. */
void pipe_p2p_scatter_gather(pipe_p2p_t *p, comm_t *tp);

/* Activations: receive micro-batch mb's input from the previous stage, send its output onwards (n:
 * the micro-batch's floats, exactly: scatter-gather cuts them in chunks). */
void p2p_post_recv_act(pipe_p2p_t *p, int mb, float *x, size_t n);
void p2p_wait_recv_act(pipe_p2p_t *p, int mb);
void p2p_send_act(pipe_p2p_t *p, int mb, const float *y, size_t n);
/* Complete the send of kind (P2P_SEND_ACT, P2P_SEND_GRAD) of mb before its buffer is reused; every
 * send in flight, at the end of a step. */
void p2p_wait_send(pipe_p2p_t *p, int kind, int mb);
void p2p_wait_sends(pipe_p2p_t *p);

/* Blocking transfers of evaluation chunk c (forward only). */
void p2p_eval_recv(pipe_p2p_t *p, int c, float *x, size_t n);
void p2p_eval_send(pipe_p2p_t *p, int c, const float *y, size_t n);

/* For gradient transfers (pipe_grad_ops_t implementations): the exact isend / irecv of kind for mb
 * and completing a transfer in flight (its wait raised as events, core/events.h: the mux and the
 * timeline see it). */
void p2p_isend(pipe_p2p_t *p, int kind, int mb, const float *buf, size_t n);
void p2p_irecv(pipe_p2p_t *p, int kind, int mb, float *buf, size_t n);
/* The same, counted as traffic category t (a compressor's messages: activation_grad_compressed). */
void p2p_isend_as(pipe_p2p_t *p, int kind, int mb, const float *buf, size_t n, traffic_t t);
void p2p_irecv_as(pipe_p2p_t *p, int kind, int mb, float *buf, size_t n, traffic_t t);
void p2p_complete(pipe_p2p_t *p, int kind, int mb);
/* Scatter-gather's pieces (the whole of n floats without it): this rank's chunk [*off, *off + *len)
 * of n floats; the exact isend of its chunk; the irecv of its chunk into buf, the other chunks
 * gathered when p2p_complete completes it; and the gather itself, every rank's chunk of buf (host or
 * device memory) to every rank of the stage's tensor-parallel group (collective over it). */
void p2p_chunk(const pipe_p2p_t *p, size_t n, size_t *off, size_t *len);
void p2p_isend_chunk(pipe_p2p_t *p, int kind, int mb, const float *buf, size_t n);
void p2p_irecv_chunk(pipe_p2p_t *p, int kind, int mb, float *buf, size_t n);
void p2p_gather(pipe_p2p_t *p, float *buf, size_t n);

#endif
