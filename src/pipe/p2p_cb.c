#include "pipe/p2p_cb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/cb.h"
#include "compress/powersgd.h"
#include "compress/rank_state.h"
#include "core/error.h"
#include "core/timer.h"

/* "CB" as the stream id of every stage's initial Q (the stage in the low bits). */
#define CB_STREAM 0x43420000ull

typedef struct pipe_cb {
  pipe_cb_opts_t o;
  int *rows;             /* (M) this rank's part's rows: a micro-batch's tokens / parts */
  int part;              /* which part this rank compresses (its tensor-parallel rank), of o.parts */
  int first[2];          /* first compressed micro-batch sent by this stage [0] and the next one [1] */
  float *x_prev;         /* backend (rows, width): the stage input of the last compressed send ... */
  int prev_rows;         /* ... and its rows (0: none yet) */
  size_t msg_cap;        /* floats of the largest message */
  cb_sender_t tx;        /* stages > 0 */
  float *send_msg;       /* backend (ring, msg_cap) */
  float *recv_msg;       /* backend (slots, msg_cap) */
  float **dst;           /* (M) where a compressed receive is decoded to (the whole gradient) ... */
  size_t *dst_n;         /* (M) ... of these floats */
  rank_state_t st;
  pipe_cb_stats_t stats;
} pipe_cb_t;

static pipe_cb_t *cb_of(const pipe_p2p_t *p) { return p->grad_state; }

/* The rule, from the sender's epilogue and the minimum compression rate. */
static int compressed(const pipe_cb_t *c, int first, int k) {
  return k >= first && psgd_rank(c->rows[k], c->o.width, c->o.rank, c->o.min_rate) == c->o.rank;
}

/* The first micro-batch stage `sender` may send compressed (M: none; stage 0 sends nothing). */
static int first_of(const pipe_cb_opts_t *o, int PP, int M, int sender) {
  if (sender <= 0 || sender >= PP) return M;
  return o->epilogue_only ? pipe_epilogue_first(o->sched, PP, M, sender) : 0;
}

int pipe_cb_parts_of(const pipe_p2p_t *p) { return cb_of(p)->o.parts; }

int pipe_cb_compressed(const pipe_p2p_t *p, int sender, int k) {
  const pipe_cb_t *c = cb_of(p);
  return compressed(c, first_of(&c->o, p->stages, p->M, sender), k);
}

/* This rank's part of micro-batch k's buffer whose rows are the micro-batch's tokens. */
static size_t part_offset(const pipe_cb_t *c, int k) {
  return (size_t)c->part * (size_t)c->rows[k] * (size_t)c->o.width;
}

/* Before compressing micro-batch k: E is still the residual e of the previous compressed send, whose
 * stage input x_prev (the same part of its rows) was kept; cos(e, x_prev - x_k) over the rows both
 * have. Then x_k is kept. */
static void lep_diagnostic(pipe_cb_t *c, int k) {
  const backend_t *be = c->o.be;
  const float *x = c->o.inputs + (size_t)(k % c->o.slots) * c->o.slot_floats + part_offset(c, k);
  if (c->prev_rows > 0) {
    int rows = c->prev_rows < c->rows[k] ? c->prev_rows : c->rows[k];
    size_t n = (size_t)rows * (size_t)c->o.width;
    const float *e = c->tx.E, *a = c->x_prev;
    double ea = be->dot(e, a, n), eb = be->dot(e, x, n), ee = be->sumsq(e, n);
    double dd = be->sumsq(a, n) + be->sumsq(x, n) - 2.0 * be->dot(a, x, n);
    if (ee > 0 && dd > 0) {
      c->stats.cos_sum += (ea - eb) / sqrt(ee * dd);
      c->stats.cos_n++;
    }
  }
  be->copy(c->x_prev, x, (size_t)c->rows[k] * (size_t)c->o.width);
  c->prev_rows = c->rows[k];
}

static void cb_send(pipe_p2p_t *p, int mb, const float *g, size_t n) {
  pipe_cb_t *c = cb_of(p);
  if (!compressed(c, c->first[0], mb)) {
    p2p_isend_chunk(p, P2P_SEND_GRAD, mb, g, n);
    return;
  }
  lep_diagnostic(c, mb);
  double t0 = surge_now();
  float *msg = c->send_msg + (size_t)(mb % c->o.ring) * c->msg_cap;
  cb_encode(&c->tx, g + part_offset(c, mb), c->rows[mb], msg);
  c->stats.seconds += surge_now() - t0;
  c->stats.raw_bytes += (double)n / c->o.parts * sizeof(float);
  c->stats.sends++;
  p2p_isend_as(p, P2P_SEND_GRAD, mb, msg, cb_payload(&c->tx, c->rows[mb]), TRAFFIC_ACT_GRAD_COMPRESSED);
}

static void cb_post_recv(pipe_p2p_t *p, int mb, float *g, size_t n) {
  pipe_cb_t *c = cb_of(p);
  if (!compressed(c, c->first[1], mb)) {
    c->dst[mb] = NULL;
    p2p_irecv_chunk(p, P2P_RECV_GRAD, mb, g, n);
    return;
  }
  c->dst[mb] = g;
  c->dst_n[mb] = n;
  float *msg = c->recv_msg + (size_t)(mb % c->o.slots) * c->msg_cap;
  size_t payload = psgd_payload(c->rows[mb], c->o.width, c->o.rank);
  p2p_irecv_as(p, P2P_RECV_GRAD, mb, msg, payload, TRAFFIC_ACT_GRAD_COMPRESSED);
}

static void cb_wait_recv(pipe_p2p_t *p, int mb) {
  pipe_cb_t *c = cb_of(p);
  p2p_complete(p, P2P_RECV_GRAD, mb);
  if (!c->dst[mb]) return;
  double t0 = surge_now();
  cb_decode(c->o.be, c->recv_msg + (size_t)(mb % c->o.slots) * c->msg_cap, c->rows[mb], c->o.width, c->o.rank,
            c->dst[mb] + part_offset(c, mb));
  c->stats.seconds += surge_now() - t0;
  /* the other ranks' decoded parts: a collective of the stage after the receive's wait (its own events;
   * the timeline's receive interval ended with the wait) */
  if (c->o.parts > 1) p2p_gather(p, c->dst[mb], c->dst_n[mb]);
  c->stats.recvs++;
  c->dst[mb] = NULL;
}

static const pipe_grad_ops_t cb_ops = {"cb", cb_send, cb_post_recv, cb_wait_recv};

void pipe_cb_install(pipe_p2p_t *p, const pipe_cb_opts_t *o) {
  pipe_cb_t *c = xcalloc(1, sizeof *c);
  c->o = *o;
  int M = p->M, s = p->stage, PP = p->stages, rows_cap = 0;
  const int parts = o->parts > 1 ? o->parts : 1;
  c->o.parts = parts;
  if (parts > 1 && (!p->tp || p->tp->size != parts))
    surge_runtime_error("compressed back-propagation: %d parts of a gradient without scatter-gather over as many "
                        "tensor-parallel ranks", parts);
  c->part = parts > 1 ? p->tp->rank : 0;
  c->rows = xcalloc((size_t)M, sizeof *c->rows);
  for (int k = 0; k < M; k++) {
    if (o->rows[k] % parts != 0)
      surge_runtime_error("compressed back-propagation: micro-batch %d's %d tokens do not split into %d parts", k,
                          o->rows[k], parts);
    c->rows[k] = o->rows[k] / parts;
    if (c->rows[k] > rows_cap) rows_cap = c->rows[k];
  }
  c->o.rows = c->rows;
  c->first[0] = first_of(o, PP, M, s);
  c->first[1] = first_of(o, PP, M, s + 1);
  c->msg_cap = psgd_payload(rows_cap, o->width, o->rank);
  const backend_t *be = o->be;
  if (s > 0) {
    cb_sender_init(&c->tx, be, rows_cap, o->width, o->rank, o->lep, o->seed, CB_STREAM + (uint64_t)s);
    c->send_msg = be->alloc(c->msg_cap * (size_t)o->ring);
    c->x_prev = be->alloc((size_t)rows_cap * (size_t)o->width);
  }
  if (s + 1 < PP) c->recv_msg = be->alloc(c->msg_cap * (size_t)o->slots);
  c->dst = xcalloc((size_t)M, sizeof *c->dst);
  c->dst_n = xcalloc((size_t)M, sizeof *c->dst_n);
  const char *names[] = {"error", "q"};
  float *dev[] = {c->tx.E, c->tx.Q};
  size_t len[] = {s > 0 ? (size_t)rows_cap * (size_t)o->width : 0, s > 0 ? (size_t)o->width * (size_t)o->rank : 0};
  rank_state_init(&c->st, "/compress/cb", 2, names, dev, len, NULL, be, o->job);
  p->grad = &cb_ops;
  p->grad_state = c;
}

void pipe_cb_remove(pipe_p2p_t *p) {
  pipe_cb_t *c = cb_of(p);
  if (!c) return;
  const backend_t *be = c->o.be;
  rank_state_free(&c->st);
  cb_sender_free(&c->tx);
  if (c->send_msg) be->free(c->send_msg);
  if (c->x_prev) be->free(c->x_prev);
  if (c->recv_msg) be->free(c->recv_msg);
  free(c->rows);
  free(c->dst);
  free(c->dst_n);
  free(c);
  p->grad = &pipe_grad_exact;
  p->grad_state = NULL;
}

void pipe_cb_take_stats(pipe_p2p_t *p, pipe_cb_stats_t *out) {
  pipe_cb_t *c = cb_of(p);
  *out = c->stats;
  out->error_sumsq = c->tx.E ? c->o.be->sumsq(c->tx.E, (size_t)c->tx.rows * (size_t)c->tx.m) : 0;
  memset(&c->stats, 0, sizeof c->stats);
}

state_region_t *pipe_cb_state(pipe_p2p_t *p) { return rank_state_region(&cb_of(p)->st); }

void pipe_cb_loaded(pipe_p2p_t *p) { rank_state_loaded(&cb_of(p)->st); }
