#include "pipe/p2p.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/events.h"
#include "core/timer.h"

enum { EVAL_TAG = 1 << 20 };

void pipe_p2p_init(pipe_p2p_t *p, comm_t *pp, int M) {
  *p = (pipe_p2p_t){.pp = pp, .stage = pp->rank, .stages = pp->size, .M = M, .grad = &pipe_grad_exact};
  const size_t slots = (size_t)P2P_KINDS * (size_t)M;
  p->req = xcalloc(slots, sizeof *p->req);
  p->live = xcalloc(slots, sizeof *p->live);
  p->traffic = xcalloc(slots, sizeof *p->traffic);
  p->gather_buf = xcalloc(slots, sizeof *p->gather_buf);
  p->gather_n = xcalloc(slots, sizeof *p->gather_n);
}

void pipe_p2p_scatter_gather(pipe_p2p_t *p, comm_t *tp) {
  p->tp = tp;
  p->part_off = xcalloc((size_t)tp->size, sizeof *p->part_off);
  p->part_n = xcalloc((size_t)tp->size, sizeof *p->part_n);
}

void pipe_p2p_free(pipe_p2p_t *p) {
  free(p->req);
  free(p->live);
  free(p->traffic);
  free(p->gather_buf);
  free(p->gather_n);
  free(p->part_off);
  free(p->part_n);
  *p = (pipe_p2p_t){0};
}

static size_t slot(const pipe_p2p_t *p, int kind, int mb) { return (size_t)kind * (size_t)p->M + (size_t)mb; }

/* The neighbour a kind of transfer goes to or comes from, its tag and its traffic category. */
static int peer(const pipe_p2p_t *p, int kind) {
  return kind == P2P_RECV_ACT || kind == P2P_SEND_GRAD ? p->stage - 1 : p->stage + 1;
}
static int tag(int kind, int mb) { return 2 * mb + (kind == P2P_RECV_GRAD || kind == P2P_SEND_GRAD); }
static traffic_t category(int kind) {
  return kind == P2P_RECV_ACT || kind == P2P_SEND_ACT ? TRAFFIC_ACT : TRAFFIC_ACT_GRAD;
}

void p2p_isend_as(pipe_p2p_t *p, int kind, int mb, const float *buf, size_t n, traffic_t t) {
  size_t s = slot(p, kind, mb);
  if (p->live[s]) surge_runtime_error("pipeline: a second send of micro-batch %d before the first completed", mb);
  comm_isend(p->pp, buf, n, peer(p, kind), tag(kind, mb), t, &p->req[s]);
  p->live[s] = 1;
  p->traffic[s] = (unsigned char)t;
}

void p2p_irecv_as(pipe_p2p_t *p, int kind, int mb, float *buf, size_t n, traffic_t t) {
  size_t s = slot(p, kind, mb);
  if (p->live[s]) surge_runtime_error("pipeline: a second receive of micro-batch %d before the first completed", mb);
  comm_irecv(p->pp, buf, n, peer(p, kind), tag(kind, mb), t, &p->req[s]);
  p->live[s] = 1;
  p->traffic[s] = (unsigned char)t;
}

void p2p_isend(pipe_p2p_t *p, int kind, int mb, const float *buf, size_t n) {
  p2p_isend_as(p, kind, mb, buf, n, category(kind));
}

void p2p_irecv(pipe_p2p_t *p, int kind, int mb, float *buf, size_t n) {
  p2p_irecv_as(p, kind, mb, buf, n, category(kind));
}

/* The engine's phase of waiting for a kind of transfer (core/events.h). */
static ev_phase_t wait_phase(int kind) {
  return kind == P2P_RECV_ACT ? EV_RECV_ACT : kind == P2P_RECV_GRAD ? EV_RECV_GRAD : EV_SEND;
}

/* ---- scatter-gather: this rank's chunk of n floats, and the chunks gathered */

void p2p_chunk(const pipe_p2p_t *p, size_t n, size_t *off, size_t *len) {
  *off = 0;
  *len = n;
  if (!p->tp) return;
  const size_t parts = (size_t)p->tp->size;
  if (n % parts != 0)
    surge_runtime_error("pipeline: a transfer of %zu floats does not split into %zu equal chunks (scatter-gather "
                        "needs the width a multiple of tp)", n, parts);
  *len = n / parts;
  *off = (size_t)p->tp->rank * *len;
}

void p2p_gather(pipe_p2p_t *p, float *buf, size_t n) {
  const size_t len = n / (size_t)p->tp->size;
  for (int r = 0; r < p->tp->size; r++) p->part_off[r] = (size_t)r * len, p->part_n[r] = len;
  ev_raise(EV_COLLECTIVE, EV_TP_SUM, 0); /* a collective of the stage (a background partner holds back) */
  comm_op_t op;
  comm_iallgatherv_float(p->tp, buf, p->part_off, p->part_n, TRAFFIC_TP, &op);
  comm_op_wait(&op);
  ev_raise(EV_WORK, EV_TP_SUM, 0);
}

void p2p_irecv_chunk(pipe_p2p_t *p, int kind, int mb, float *buf, size_t n) {
  size_t off, len;
  p2p_chunk(p, n, &off, &len);
  p2p_irecv(p, kind, mb, buf + off, len);
  if (p->tp) p->gather_buf[slot(p, kind, mb)] = buf, p->gather_n[slot(p, kind, mb)] = n; /* p2p_complete gathers */
}

void p2p_isend_chunk(pipe_p2p_t *p, int kind, int mb, const float *buf, size_t n) {
  size_t off, len;
  p2p_chunk(p, n, &off, &len);
  p2p_isend(p, kind, mb, buf + off, len);
}

void p2p_complete(pipe_p2p_t *p, int kind, int mb) {
  size_t s = slot(p, kind, mb);
  if (!p->live[s]) return;
  ev_raise(EV_WAIT, wait_phase(kind), mb); /* a bubble: the stage has nothing to do until it arrives */
  comm_waitall(p->pp, &p->req[s], 1, (traffic_t)p->traffic[s]);
  if (p->gather_n[s]) p2p_gather(p, p->gather_buf[s], p->gather_n[s]); /* (its group waits for its slowest) */
  ev_raise(EV_WORK, wait_phase(kind), mb);
  p->live[s] = 0;
  p->gather_n[s] = 0;
}

void p2p_post_recv_act(pipe_p2p_t *p, int mb, float *x, size_t n) { p2p_irecv_chunk(p, P2P_RECV_ACT, mb, x, n); }
void p2p_wait_recv_act(pipe_p2p_t *p, int mb) { p2p_complete(p, P2P_RECV_ACT, mb); }
void p2p_send_act(pipe_p2p_t *p, int mb, const float *y, size_t n) { p2p_isend_chunk(p, P2P_SEND_ACT, mb, y, n); }
void p2p_wait_send(pipe_p2p_t *p, int kind, int mb) { p2p_complete(p, kind, mb); }

void p2p_wait_sends(pipe_p2p_t *p) {
  for (int kind = P2P_SEND_ACT; kind <= P2P_SEND_GRAD; kind++)
    for (int mb = 0; mb < p->M; mb++) p2p_complete(p, kind, mb);
}

void p2p_eval_recv(pipe_p2p_t *p, int c, float *x, size_t n) {
  size_t off, len;
  p2p_chunk(p, n, &off, &len);
  comm_request_t r;
  comm_irecv(p->pp, x + off, len, p->stage - 1, EVAL_TAG + c, TRAFFIC_ACT, &r);
  comm_waitall(p->pp, &r, 1, TRAFFIC_ACT);
  if (p->tp) p2p_gather(p, x, n);
}

void p2p_eval_send(pipe_p2p_t *p, int c, const float *y, size_t n) {
  size_t off, len;
  p2p_chunk(p, n, &off, &len);
  comm_request_t r;
  comm_isend(p->pp, y + off, len, p->stage + 1, EVAL_TAG + c, TRAFFIC_ACT, &r);
  comm_waitall(p->pp, &r, 1, TRAFFIC_ACT);
}

/* ---- the exact gradient transfer */

static void exact_send(pipe_p2p_t *p, int mb, const float *g, size_t n) {
  p2p_isend_chunk(p, P2P_SEND_GRAD, mb, g, n);
}
static void exact_post_recv(pipe_p2p_t *p, int mb, float *g, size_t n) {
  p2p_irecv_chunk(p, P2P_RECV_GRAD, mb, g, n);
}
static void exact_wait_recv(pipe_p2p_t *p, int mb) { p2p_complete(p, P2P_RECV_GRAD, mb); }

const pipe_grad_ops_t pipe_grad_exact = {"exact", exact_send, exact_post_recv, exact_wait_recv};
