/* Compressed back-propagation on the pipeline (Optimus-CC's CB with lazy error propagation and
 * epilogue-only compression; compress/cb.h) as the gradient transfer table of pipe/p2p.h.
 *
 * With scatter-gather (pipe/p2p.h) each tensor-parallel rank compresses its own chunk of the
 * gradient, a (tokens / tp, width) matrix of whole rows, and the receivers all-gather the decoded
 * chunks, as Megatron-based Optimus-CC does; where the tokens do not split into whole rows (the
 * context not a multiple of tp) each rank compresses the whole gradient. Below, "the gradient" is
 * this rank's part of it.
 *
 * Stage s sends the gradient of micro-batch k's input, a (tokens, width) matrix, compressed when k is
 * in its epilogue (k >= pipe_epilogue_first of stage s; every k when epilogue_only is off) and the
 * minimum compression rate allows it; stage s - 1 applies the same rule with s's numbers, so both
 * ends agree on every message's size without telling each other. A compressed message is one packed
 * buffer [P | Q] (traffic activation_grad_compressed), decoded into the gradient buffer when its
 * receive completes; the others go exact (activation_grad). Only the sender keeps state: its error
 * E and warm-start Q, a checkpoint region /compress/cb (compress/rank_state.h).
 *
 * The LEP diagnostic (Optimus-CC's Fig. 11): cos(e, x - x') of the residual e of a compressed send
 * and the difference of its stage input x and that of the next compressed send over the boundary,
 * x' (in the same step or the next: the residual is carried there), over the rows both have. It is
 * taken when the next one is sent; a resumed run starts without the previous input. */
#ifndef SURGE_PIPE_P2P_CB_H
#define SURGE_PIPE_P2P_CB_H

#include <stdint.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "core/state.h"
#include "pipe/p2p.h"
#include "pipe/schedule.h"

typedef struct pipe_cb_opts {
  const backend_t *be;
  pipe_sched_t sched;
  int width, rank, lep, epilogue_only;
  int parts;            /* the gradient's parts, one per tensor-parallel rank (pipe_cb_parts); 0 or 1: whole */
  double min_rate;
  const int *rows;      /* (M) tokens of each micro-batch */
  int ring;             /* the stage's gradient sends of k and k + ring never overlap */
  int slots;            /* the stage holds micro-batches k .. k + slots - 1 at most: their receives */
  const float *inputs;  /* backend (slots, slot_floats): the stage input of micro-batch k in slot k % slots
                         * (read when k's gradient is sent) */
  size_t slot_floats;
  uint64_t seed;
  comm_t *job;          /* every rank of the job (state regions) */
} pipe_cb_opts_t;

/* A step's numbers on this rank. */
typedef struct pipe_cb_stats {
  double raw_bytes;     /* bytes its compressed sends would have taken exact */
  double seconds;       /* compressing and decompressing */
  double cos_sum;       /* LEP diagnostic: sum and count of cos(e, x - x') */
  long cos_n;
  long sends, recvs;    /* compressed messages sent and received */
  double error_sumsq;   /* ||E||^2 after the step (0 on the first stage) */
} pipe_cb_stats_t;

/* The parts CB splits each micro-batch's gradient into: tp with scatter-gather where every
 * micro-batch's tokens split into whole rows (context a multiple of tp), else 1. */
static inline int pipe_cb_parts(int scatter_gather, int tp, int context) {
  return scatter_gather && tp > 1 && context % tp == 0 ? tp : 1;
}

/* The parts each gradient is compressed in, as installed (1: whole). */
int pipe_cb_parts_of(const pipe_p2p_t *p);

/* Whether stage `sender` sends micro-batch k's gradient compressed (k in 0..M-1), as both ends
 * derive it. */
int pipe_cb_compressed(const pipe_p2p_t *p, int sender, int k);

/* Collective over o->job: CB becomes p's gradient transfer (p->grad, p->grad_state). */
void pipe_cb_install(pipe_p2p_t *p, const pipe_cb_opts_t *o);
/* Back to the exact transfer, state freed. */
void pipe_cb_remove(pipe_p2p_t *p);
/* This step's numbers so far, zeroed for the next. */
void pipe_cb_take_stats(pipe_p2p_t *p, pipe_cb_stats_t *out);
/* The checkpoint region (host views made current), and after a read, back into the sender. */
state_region_t *pipe_cb_state(pipe_p2p_t *p);
void pipe_cb_loaded(pipe_p2p_t *p);

#endif
