#include "comm/ring.h"

#include <stdlib.h>

#include "comm/comm_dev.h"
#include "core/error.h"
#include "core/pace.h"

enum { RING_TAGS = 32768 }; /* MPI guarantees tags up to 32767 */
/* A step's part travels in pieces of at most this many floats (1 MiB), received one after the other
 * into one piece of scratch: a part can be a large share of a large bucket (a word embedding's
 * gradient, one bucket, may be one rank's whole shard). */
enum { RING_PIECE = 1 << 18 };

struct comm_ring {
  comm_t *c;
  comm_ring_t *next;  /* the next ring in flight in this thread (rings, oldest first) */
  float *buf;
  size_t *off, *cnt;  /* [R] the parts */
  float *scratch;     /* the piece received in flight: RING_PIECE floats or the largest part if less;
                       * made at the first piece this rank receives, freed when the ring is done */
  size_t scratch_n;
  int rank, size, tag;
  int step;           /* the step in flight, 0 .. size-2; size-1 (or more): done */
  size_t piece;       /* the step's piece in flight */
  MPI_Request req[2]; /* the piece's receive and send (MPI_REQUEST_NULL: none, or complete) */
};

/* The calling thread's rings in flight, on all of its groups (an in-process background's thread has
 * its own). */
static _Thread_local comm_ring_t *rings;

static int mod(int a, int m) { return ((a % m) + m) % m; }
static int done(const comm_ring_t *g) { return g->step >= g->size - 1; }
/* The part rank sends in step s (its partial sums), and the one it receives (and adds to its own). */
static int send_part(const comm_ring_t *g, int s) { return mod(g->rank - 1 - s, g->size); }
static int recv_part(const comm_ring_t *g, int s) { return mod(g->rank - 2 - s, g->size); }
/* Piece k of part p: its floats (0 past the part's end), from buf + *at. */
static size_t piece_of(const comm_ring_t *g, int p, size_t k, size_t *at) {
  size_t from = k * RING_PIECE;
  *at = g->off[p] + from;
  return from >= g->cnt[p] ? 0 : g->cnt[p] - from < RING_PIECE ? g->cnt[p] - from : RING_PIECE;
}
/* The pieces of the step in flight: those of the larger of its two parts (1 where both are empty). */
static size_t pieces(const comm_ring_t *g) {
  size_t in = g->cnt[recv_part(g, g->step)], out = g->cnt[send_part(g, g->step)], most = in > out ? in : out;
  return most == 0 ? 1 : (most + RING_PIECE - 1) / RING_PIECE;
}

static void post_piece(comm_ring_t *g, const char *api_call) {
  size_t in_at, out_at, in_n = piece_of(g, recv_part(g, g->step), g->piece, &in_at),
                        out_n = piece_of(g, send_part(g, g->step), g->piece, &out_at);
  g->req[0] = g->req[1] = MPI_REQUEST_NULL;
  if (in_n > 0) {
    if (!g->scratch) {
      for (int r = 0; r < g->size; r++) g->scratch_n = g->cnt[r] > g->scratch_n ? g->cnt[r] : g->scratch_n;
      g->scratch_n = g->scratch_n < RING_PIECE ? g->scratch_n : RING_PIECE;
      g->scratch = xmalloc(g->scratch_n * sizeof(float));
    }
    comm_check_mpi(MPI_Irecv(g->scratch, (int)in_n, MPI_FLOAT, mod(g->rank - 1, g->size), g->tag, g->c->ring_mpi,
                             &g->req[0]),
                   "MPI_Irecv", api_call);
  }
  if (out_n > 0)
    comm_check_mpi(MPI_Isend(g->buf + out_at, (int)out_n, MPI_FLOAT, mod(g->rank + 1, g->size), g->tag,
                             g->c->ring_mpi, &g->req[1]),
                   "MPI_Isend", api_call);
}

/* Both requests of the piece in flight have completed: add the received floats in, post the next
 * piece (of this step or the next); the scratch goes when the last step is done. */
static void finish_piece(comm_ring_t *g, const char *api_call) {
  size_t at, n = piece_of(g, recv_part(g, g->step), g->piece, &at);
  float *own = g->buf + at;
  for (size_t i = 0; i < n; i++) own[i] += g->scratch[i]; /* own + (the ranks to the left's sum) */
  if (++g->piece == pieces(g)) {
    g->piece = 0;
    g->step++;
  }
  if (!done(g)) {
    post_piece(g, api_call);
  } else {
    free(g->scratch);
    g->scratch = NULL;
  }
}

/* Advance g without blocking, through as many pieces as have arrived. */
static void advance(comm_ring_t *g, const char *api_call) {
  while (!done(g)) {
    int complete = 0;
    comm_check_mpi(MPI_Testall(2, g->req, &complete, MPI_STATUSES_IGNORE), "MPI_Testall", api_call);
    if (!complete) return;
    finish_piece(g, api_call);
  }
}

static void advance_all(const char *api_call) {
  for (comm_ring_t *g = rings; g; g = g->next) advance(g, api_call);
}

comm_ring_t *comm_ring_start(comm_t *c, float *buf, const size_t *off, const size_t *cnt, const char *api_call) {
  if (!c->ring_ready) surge_runtime_error("%s: the group has no ring communicator (a bug)", api_call);
  comm_ring_t *g = xcalloc(1, sizeof *g);
  *g = (comm_ring_t){.c = c, .buf = buf, .rank = c->rank, .size = c->size, .tag = (int)(c->ring_ops++ % RING_TAGS),
                     .req = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
  g->off = xcalloc(2 * (size_t)c->size, sizeof *g->off);
  g->cnt = g->off + c->size;
  for (int r = 0; r < c->size; r++) {
    g->off[r] = off[r];
    g->cnt[r] = cnt[r];
  }
  if (!done(g)) post_piece(g, api_call);
  comm_ring_t **end = &rings;
  while (*end) end = &(*end)->next;
  *end = g;
  return g;
}

int comm_ring_test(comm_ring_t *g, const char *api_call) {
  advance_all(api_call);
  return done(g);
}

/* Block until some request of a ring in flight completes (MPI's own wait: poll_us is 0). */
static void wait_any(const char *api_call) {
  int n = 0;
  for (comm_ring_t *g = rings; g; g = g->next) n += 2 * !done(g);
  MPI_Request few[16], *req = n <= 16 ? few : xmalloc((size_t)n * sizeof *req);
  int k = 0;
  for (comm_ring_t *g = rings; g; g = g->next)
    if (!done(g)) req[k++] = g->req[0], req[k++] = g->req[1];
  int which = MPI_UNDEFINED;
  comm_check_mpi(MPI_Waitany(n, req, &which, MPI_STATUS_IGNORE), "MPI_Waitany", api_call);
  k = 0; /* the completed request is MPI_REQUEST_NULL now: back into its ring */
  for (comm_ring_t *g = rings; g; g = g->next)
    if (!done(g)) g->req[0] = req[k++], g->req[1] = req[k++];
  if (req != few) free(req);
}

void comm_ring_wait(comm_ring_t *g, const char *api_call) {
  pace_t pace = pace_start(g->c->poll_us, g->c->poll_fraction);
  for (advance_all(api_call); !done(g); advance_all(api_call)) {
    if (g->c->poll_us > 0)
      pace_next(&pace);
    else
      wait_any(api_call);
  }
}

void comm_ring_free(comm_ring_t *g) {
  if (!g) return;
  if (!done(g)) surge_runtime_error("comm_ring_free: a ring still in flight (a bug)");
  comm_ring_t **at = &rings;
  while (*at && *at != g) at = &(*at)->next;
  if (*at) *at = g->next;
  free(g->off);
  free(g);
}

void comm_ring_open(comm_t *c, const char *api_call) {
  comm_check_mpi(MPI_Comm_dup(c->mpi, &c->ring_mpi), "MPI_Comm_dup", api_call);
  c->ring_ready = 1;
}

void comm_ring_close(comm_t *c) {
  for (comm_ring_t *g = rings; g; g = g->next)
    if (g->c == c) surge_runtime_error("comm_free: a group with a ring still in flight (complete its operation first)");
  if (c->ring_ready) comm_check_mpi(MPI_Comm_free(&c->ring_mpi), "MPI_Comm_free", "comm_free");
  c->ring_ready = 0;
}
