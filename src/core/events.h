/* Engine events: what this rank's step is doing, raised where it happens (the model's node passes,
 * the waits of the pipeline's transfers, the executors' routes and syncs, the trainer's phases)
 * and delivered, in the raising thread, to every part that subscribed. A raiser knows nothing of
 * who listens: multiplexing subscribes (mux/events.c turns events into the states a background
 * partner reads), and a new executor that raises them gets every subscriber's feature.
 *
 * An event says what the rank does from now until the next event (its activity), in which part of
 * the step (its phase), and where in that phase (`where`: a node, a micro-batch; the same place
 * recurs at the same (phase, where) every step, so a subscriber can learn how long it lasts).
 * One list of subscribers per thread (a thread runs one trainer: a process may run a foreground
 * and an in-process background, each subscribed to its own events); raising with none costs a
 * branch. */
#ifndef SURGE_EVENTS_H
#define SURGE_EVENTS_H

typedef enum ev_activity {
  EV_WORK = 0,   /* this rank's own computation (and data, optimizer, logging) */
  EV_IDLE,       /* no work of this rank's own in this part of the step (a burst node without it) */
  EV_WAIT,       /* blocked on other ranks: a receive, a send's completion, a barrier */
  EV_COLLECTIVE, /* inside a collective that needs this rank's own progress (an allreduce) */
  EV_ACTIVITIES
} ev_activity_t;

typedef enum ev_phase {
  EV_STEP = 0,     /* the step's start: data order, the layout's step begins */
  EV_FORWARD,      /* a node's forward (where: the node) */
  EV_LOSS,         /* the loss */
  EV_BACKWARD,     /* a node's backward (where: the node) */
  EV_ROUTE_IN,     /* a node's inputs arriving from other ranks (where: the node) */
  EV_ROUTE_OUT,    /* a node's input gradients leaving for other ranks (where: the node) */
  EV_RECV_ACT,     /* a pipeline stage receiving micro-batch `where`'s activation (a wait; work in a
                    * transfer's phase: the transfer has completed) */
  EV_RECV_GRAD,    /* a pipeline stage receiving micro-batch `where`'s output gradient */
  EV_SEND,         /* a pipeline stage waiting for a send of micro-batch `where` to complete */
  EV_MB_FORWARD,   /* a pipeline stage's forward pass of micro-batch `where` (its nodes follow) */
  EV_MB_BACKWARD,  /* a pipeline stage's backward pass of micro-batch `where` */
  EV_MB_DONE,      /* the pass of micro-batch `where` is done */
  EV_TP_SUM,       /* a tensor-parallel sum inside a pass, or the all-gather of a pipeline transfer's
                    * chunks (pipe/p2p.h) */
  EV_SYNC,         /* the gradient reductions after the backward pass (where: 0 the data-parallel
                    * buckets, 1 the tied embedding's); work in this phase: the reduction is done */
  EV_METRICS,      /* the loss, norm and stop reduction */
  EV_UPDATE,       /* clipping and the optimizer */
  EV_PHASES
} ev_phase_t;

typedef struct ev {
  ev_activity_t activity;
  ev_phase_t phase;
  int where;
} ev_t;

/* A number for the event's place in the step, (phase, where), the same there every step. */
static inline int ev_site(const ev_t *e) { return (int)((unsigned)e->where * EV_PHASES + (unsigned)e->phase); }

typedef void (*ev_handler_t)(void *ctx, const ev_t *e);

enum { EV_MAX_SUBSCRIBERS = 8 };

/* Deliver every later event raised by the calling thread to fn(ctx, e) until ev_unsubscribe(fn, ctx); more than
 * EV_MAX_SUBSCRIBERS at once is a runtime error. */
void ev_subscribe(ev_handler_t fn, void *ctx);
void ev_unsubscribe(ev_handler_t fn, void *ctx);

/* Raise an event: every subscriber sees it, in the order they subscribed. */
void ev_raise(ev_activity_t activity, ev_phase_t phase, int where);

#endif
