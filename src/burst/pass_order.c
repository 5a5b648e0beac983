#include "burst/pass_order.h"

#include <stdlib.h>

#include "core/error.h"

/* The buffer node i's output (and its gradient) lives in: a node fused with its ReLU shares the
 * ReLU's (model_t.fused). */
static int buffer_of(const int *fused, int i) { return fused[i] > 0 ? fused[i] : i; }

enum { UNSTARTED = 0, STARTED, FINISHED };

typedef struct sched {
  int n;                    /* nodes; node 0 is the input */
  const int *nin;           /* [n] inputs of each node */
  const int *const *in;     /* [n][nin] earlier nodes */
  const int *fused, *sums;
  int overlap, backward;
  int **readers, *nreaders; /* [nodes] per buffer: the nodes reading it as an input (its gradient's adders) */
  int *state;               /* [nodes] UNSTARTED, STARTED, FINISHED */
  int *pending, npending;   /* started nodes whose finish is deferred, in the order they started */
  int *since;               /* [nodes] a pending node: the nodes that did work since it started */
  int *final;               /* [nodes] backward: the node's parameter gradients are final */
  int frontier;             /* backward: every node >= frontier has final[] */
  pass_event_t *ev;
  int nev;
} sched_t;

/* Forward: every input finished. */
static int forward_ready(const sched_t *s, int k) {
  for (int m = 0; m < s->nin[k]; m++)
    if (s->state[s->in[k][m]] != FINISHED) return 0;
  return 1;
}

/* Whether every node but k that reads buffer b (above index `above`) has finished. */
static int readers_finished(const sched_t *s, int b, int k, int above) {
  for (int r = 0; r < s->nreaders[b]; r++) {
    int c = s->readers[b][r];
    if (c != k && c > above && s->state[c] != FINISHED) return 0;
  }
  return 1;
}

/* Backward: k's output gradient is complete (every reader of its buffer finished: its consumers, its
 * fused ReLU's), and every reader of its inputs' buffers after k in node order has added into them
 * (the blocking executor's order of additions into a shared gradient, so its bits). */
static int backward_ready(const sched_t *s, int k) {
  if (!readers_finished(s, buffer_of(s->fused, k), k, 0)) return 0;
  for (int m = 0; m < s->nin[k]; m++)
    if (!readers_finished(s, buffer_of(s->fused, s->in[k][m]), k, k)) return 0;
  return 1;
}

/* The backward pass tells the gradient sync when every node from `frontier` up has final parameter
 * gradients (gradsync_node_done's contract); the event that moves the frontier carries it. */
static void advance_frontier(sched_t *s, int node) {
  if (!s->backward) return;
  s->final[node] = 1;
  int f = s->frontier;
  while (f > 1 && s->final[f - 1]) f--;
  if (f != s->frontier) s->ev[s->nev - 1].sync_node = f;
  s->frontier = f;
}

static void push(sched_t *s, int node, int finish, int deferred) {
  s->ev[s->nev++] = (pass_event_t){.node = node, .finish = finish, .deferred = deferred};
}

static void finish(sched_t *s, int node, int deferred) {
  push(s, node, 1, deferred);
  s->state[node] = FINISHED;
  if (!deferred) advance_frontier(s, node); /* after its routes, as the blocking executor did */
}

static void start(sched_t *s, int node) {
  int defer = s->overlap && s->sums[node];
  push(s, node, 0, defer);
  s->state[node] = STARTED;
  for (int q = 0; q < s->npending && s->fused[node] >= 0; q++) s->since[s->pending[q]]++; /* a fused ReLU: no work */
  s->since[node] = 0;
  if (defer) {
    s->pending[s->npending++] = node;
    advance_frontier(s, node); /* a deferred node's parameter gradients are final at its start */
  } else {
    finish(s, node, 0);
  }
}

/* The ready node the pass runs next: forward the first in node order, backward the last; 0: none. */
static int next_ready(const sched_t *s) {
  const int n = s->n;
  for (int t = 1; t < n; t++) {
    int k = s->backward ? n - t : t;
    if (s->state[k] == UNSTARTED && (s->backward ? backward_ready(s, k) : forward_ready(s, k))) return k;
  }
  return 0;
}

/* One pass's events: the oldest deferred finish once another node worked since its start; else the
 * next ready node's start; else the oldest deferred finish. */
static void build_pass(sched_t *s) {
  for (int i = 0; i < s->n; i++) s->state[i] = s->final[i] = 0;
  s->state[0] = FINISHED; /* the input batch */
  s->frontier = s->n;
  s->npending = s->nev = 0;
  for (int done = 0; done < s->n - 1;) {
    int k = s->npending > 0 && s->since[s->pending[0]] > 0 ? 0 : next_ready(s);
    if (k > 0) {
      start(s, k);
      done += s->state[k] == FINISHED;
    } else if (s->npending > 0) {
      int p = s->pending[0];
      for (int q = 1; q < s->npending; q++) s->pending[q - 1] = s->pending[q];
      s->npending--;
      finish(s, p, 1);
      done++;
    } else {
      surge_runtime_error("pass order: no node of the %s pass is ready (a cycle in the graph: a bug)",
                          s->backward ? "backward" : "forward");
    }
  }
}

void pass_order_build_dag(pass_order_t *o, int nodes, const int *nin, const int *const *in, const int *fused,
                          const int *sums, int overlap) {
  size_t n = (size_t)nodes, cap = 2 * (n > 1 ? n - 1 : 1);
  sched_t s = {.n = nodes, .nin = nin, .in = in, .fused = fused, .sums = sums, .overlap = overlap};
  s.readers = xcalloc(n, sizeof *s.readers);
  s.nreaders = xcalloc(n, sizeof *s.nreaders);
  for (int c = 1; c < nodes; c++)
    for (int m = 0; m < nin[c]; m++) {
      int b = buffer_of(fused, in[c][m]);
      s.readers[b] = xrealloc(s.readers[b], (size_t)(s.nreaders[b] + 1) * sizeof **s.readers);
      s.readers[b][s.nreaders[b]++] = c;
    }
  s.state = xcalloc(n, sizeof *s.state);
  s.final = xcalloc(n, sizeof *s.final);
  s.pending = xcalloc(n, sizeof *s.pending);
  s.since = xcalloc(n, sizeof *s.since);
  s.ev = o->fwd = xcalloc(cap, sizeof *o->fwd);
  build_pass(&s);
  o->nfwd = s.nev;
  s.backward = 1;
  s.ev = o->bwd = xcalloc(cap, sizeof *o->bwd);
  build_pass(&s);
  o->nbwd = s.nev;
  for (size_t i = 0; i < n; i++) free(s.readers[i]);
  free(s.readers);
  free(s.nreaders);
  free(s.state);
  free(s.final);
  free(s.pending);
  free(s.since);
}

void pass_order_build(pass_order_t *o, const graph_t *g, const int *fused, const int *sums, int overlap) {
  int *nin = xcalloc((size_t)g->n, sizeof *nin);
  const int **in = xcalloc((size_t)g->n, sizeof *in);
  for (int i = 0; i < g->n; i++) {
    nin[i] = g->l[i].nin;
    in[i] = g->l[i].in;
  }
  pass_order_build_dag(o, g->n, nin, in, fused, sums, overlap);
  free(in);
  free(nin);
}

void pass_order_free(pass_order_t *o) {
  free(o->fwd);
  free(o->bwd);
  o->fwd = o->bwd = NULL;
  o->nfwd = o->nbwd = 0;
}
