/* Optimus-CC's data-parallel compression: PowerSGD with error feedback over each bucket
 * (doc/compression.md, "The techniques"), as a reducer (sync/reducer.h).
 *
 * A bucket's tensors split into matrices to compress (2-D or more, viewed as (d0, rest), whose rank
 * r = psgd_rank(n, m, R, min_rate) is positive), grouped by shape, and exact tensors (1-D ones:
 * biases, norms; matrices the minimum compression rate leaves exact). Per step and bucket, with W
 * the group's ranks and M_k the local gradient of matrix k plus its error E_k:
 *   start  E_k += grad_k (E_k now holds M_k); P = M Q per shape (strided GEMM, warm Q);
 *          non-blocking sums of P (traffic dp_compressed) and of the exact tensors packed (dp)
 *   wait   P orthonormalised; Q = M^T P; Q summed (blocking, dp_compressed);
 *          grad_k = P Q^T = P P^T sum_w M_w (the approximated SUM, as every reducer returns);
 *          E_k = M_k - grad_k / W (the local part minus its share of the approximation: the errors
 *          of the group add up to exactly what the approximation missed); exact tensors unpacked
 * Only the bucket's own tensors are written back. Q starts from the same seeded random matrix on
 * every rank of the group (stream (seed, tensor index)) and stays equal there (it is a sum).
 * The first warmup_steps steps, and buckets with nothing to compress, are one exact in-place sum,
 * bitwise the exact reducer's. The state (E, Q, the steps counted) is the checkpoint region
 * /compress/dp (compress/rank_state.h). */
#include <stdlib.h>
#include <string.h>

#include "compress/powersgd.h"
#include "compress/rank_state.h"
#include "core/error.h"
#include "core/timer.h"
#include "sync/reducer.h"

/* The compressed matrices of one shape in one bucket. */
typedef struct shape_group {
  int n, m, r, count;
  size_t *at;       /* (count) offset of each matrix in the bucket */
  int *tensor;      /* (count) its slab tensor */
  float *E, *P, *Q; /* (count, n, m), (count, n, r), (count, m, r): views of the reducer's slabs */
} shape_group_t;

typedef struct pbucket {
  int ngroups, nexact;
  shape_group_t *g;
  size_t *x_at, *x_len;  /* (nexact) offset in the bucket and floats of each exact tensor */
  float *P, *Q, *X;      /* this bucket's factors of every group, and its exact tensors packed */
  size_t p_n, q_n, x_n;  /* their floats */
  size_t raw;            /* bytes of its compressed matrices */
  float *data;           /* this step's bucket (gradient slab) */
  comm_t *c;
  comm_op_t op_p, op_x, op_all;
  int compressed;        /* this step: compressed (else one exact sum, op_all) */
  int done;
} pbucket_t;

typedef struct psgd_reducer {
  const backend_t *be;
  reducer_psgd_opts_t o;
  int nb;
  pbucket_t *b;
  float *E, *P, *Q, *X, *count; /* slabs (backend); count: (1) the steps counted, for checkpoints */
  size_t e_n, p_n, q_n, x_n;
  long steps;                   /* steps begun, counted up to warmup_steps */
  int warm;                     /* this step is a warm-up step (exact) */
  rank_state_t st;
} psgd_reducer_t;

static psgd_reducer_t *impl(reducer_t *r) { return r->impl; }

/* ---- the buckets' groups and the slabs */

static int tensor_rank(const reducer_setup_t *s, int t, int *n, int *m) {
  const slab_tensor_t *x = &s->L->t[t];
  if (x->ndim < 2 || x->n == 0) return 0;
  *n = x->d[0];
  *m = (int)(x->n / (size_t)x->d[0]);
  return s->psgd.rank > 0 ? psgd_rank(*n, *m, s->psgd.rank, s->psgd.min_rate) : 0;
}

/* Group bucket k's matrices by shape; the others are exact. */
static void plan_bucket(psgd_reducer_t *p, const reducer_setup_t *s, int k) {
  const reducer_bucket_t *rb = &s->b[k];
  pbucket_t *b = &p->b[k];
  size_t cap = (size_t)rb->t_count + 1;
  b->g = xcalloc(cap, sizeof *b->g);
  b->x_at = xcalloc(cap, sizeof *b->x_at);
  b->x_len = xcalloc(cap, sizeof *b->x_len);
  for (int t = rb->t_first; t < rb->t_first + rb->t_count; t++) {
    const slab_tensor_t *x = &s->L->t[t];
    int n = 0, m = 0, r = tensor_rank(s, t, &n, &m);
    size_t at = x->off - rb->off;
    if (r == 0) {
      b->x_at[b->nexact] = at;
      b->x_len[b->nexact++] = x->n;
      b->x_n += x->n;
      continue;
    }
    int j = 0;
    while (j < b->ngroups && (b->g[j].n != n || b->g[j].m != m)) j++;
    shape_group_t *g = &b->g[j];
    if (j == b->ngroups) {
      *g = (shape_group_t){.n = n, .m = m, .r = r};
      g->at = xcalloc(cap, sizeof *g->at);
      g->tensor = xcalloc(cap, sizeof *g->tensor);
      b->ngroups++;
    }
    g->at[g->count] = at;
    g->tensor[g->count++] = t;
    b->raw += x->n * sizeof(float);
    b->p_n += (size_t)n * (size_t)r;
    b->q_n += (size_t)m * (size_t)r;
  }
}

/* The slabs: E per group, and per bucket its P, Q and packed exact tensors contiguous (one sum
 * each); each Q from its seeded stream. */
static void place(psgd_reducer_t *p) {
  const backend_t *be = p->be;
  for (int k = 0; k < p->nb; k++) {
    const pbucket_t *b = &p->b[k];
    for (int j = 0; j < b->ngroups; j++) p->e_n += (size_t)b->g[j].count * (size_t)b->g[j].n * (size_t)b->g[j].m;
    p->p_n += b->p_n, p->q_n += b->q_n, p->x_n += b->x_n;
  }
  p->E = be->alloc(p->e_n + 1);
  p->P = be->alloc(p->p_n + 1);
  p->Q = be->alloc(p->q_n + 1);
  p->X = be->alloc(p->x_n + 1);
  p->count = be->alloc(1);
  size_t e = 0, pf = 0, qf = 0, xf = 0;
  for (int k = 0; k < p->nb; k++) {
    pbucket_t *b = &p->b[k];
    b->P = p->P + pf, b->Q = p->Q + qf, b->X = p->X + xf;
    size_t bp = 0, bq = 0;
    for (int j = 0; j < b->ngroups; j++) {
      shape_group_t *g = &b->g[j];
      g->E = p->E + e, g->P = b->P + bp, g->Q = b->Q + bq;
      for (int i = 0; i < g->count; i++)
        psgd_init_q(be, g->Q + (size_t)i * (size_t)g->m * (size_t)g->r, 1, g->m, g->r, p->o.seed,
                    (uint64_t)g->tensor[i]);
      e += (size_t)g->count * (size_t)g->n * (size_t)g->m;
      bp += (size_t)g->count * (size_t)g->n * (size_t)g->r;
      bq += (size_t)g->count * (size_t)g->m * (size_t)g->r;
    }
    pf += b->p_n, qf += b->q_n, xf += b->x_n;
  }
}

/* ---- a step */

static void psgd_begin(reducer_t *r) {
  psgd_reducer_t *p = impl(r);
  p->warm = p->steps < p->o.warmup_steps;
  if (p->warm) p->steps++;
}

static void psgd_start(reducer_t *r, int k, comm_t *c, float *data, size_t n) {
  psgd_reducer_t *p = impl(r);
  pbucket_t *b = &p->b[k];
  const backend_t *be = p->be;
  b->data = data, b->c = c, b->done = 0;
  b->compressed = !p->warm && b->ngroups > 0;
  if (!b->compressed) {
    comm_iallreduce_sum(c, data, n, TRAFFIC_DP, &b->op_all);
    return;
  }
  double t0 = surge_now();
  for (int j = 0; j < b->ngroups; j++) {
    shape_group_t *g = &b->g[j];
    size_t nm = (size_t)g->n * (size_t)g->m;
    for (int i = 0; i < g->count; i++) be->axpy(nm, 1.0f, data + g->at[i], g->E + (size_t)i * nm);
    psgd_project(be, g->count, g->n, g->m, g->r, g->E, nm, g->Q, g->P, 0);
  }
  size_t x = 0;
  for (int i = 0; i < b->nexact; x += b->x_len[i], i++) be->copy(b->X + x, data + b->x_at[i], b->x_len[i]);
  r->seconds += surge_now() - t0;
  r->raw_bytes += (double)b->raw;
  comm_iallreduce_sum(c, b->P, b->p_n, TRAFFIC_DP_COMPRESSED, &b->op_p);
  if (b->x_n) comm_iallreduce_sum(c, b->X, b->x_n, TRAFFIC_DP, &b->op_x);
}

static int psgd_test(reducer_t *r, int k) {
  pbucket_t *b = &impl(r)->b[k];
  if (!b->compressed) return comm_op_test(&b->op_all);
  comm_op_test(&b->op_p);
  if (b->x_n) comm_op_test(&b->op_x);
  return b->done;
}

static void psgd_wait(reducer_t *r, int k) {
  psgd_reducer_t *p = impl(r);
  pbucket_t *b = &p->b[k];
  const backend_t *be = p->be;
  if (!b->compressed) {
    comm_op_wait(&b->op_all);
    return;
  }
  comm_op_wait(&b->op_p);
  double t0 = surge_now();
  for (int j = 0; j < b->ngroups; j++) {
    shape_group_t *g = &b->g[j];
    size_t nm = (size_t)g->n * (size_t)g->m;
    psgd_orth(be, g->count, g->n, g->r, g->P);
    psgd_back(be, g->count, g->n, g->m, g->r, g->E, nm, g->P, g->Q);
  }
  r->seconds += surge_now() - t0;
  comm_op_t q;
  comm_iallreduce_sum(b->c, b->Q, b->q_n, TRAFFIC_DP_COMPRESSED, &q);
  comm_op_wait(&q);
  t0 = surge_now();
  float share = -1.0f / (float)b->c->size;
  for (int j = 0; j < b->ngroups; j++) {
    shape_group_t *g = &b->g[j];
    size_t nm = (size_t)g->n * (size_t)g->m;
    for (int i = 0; i < g->count; i++) {
      float *out = b->data + g->at[i], *E = g->E + (size_t)i * nm;
      psgd_expand(be, g->n, g->m, g->r, 1.0f, g->P + (size_t)i * (size_t)g->n * (size_t)g->r,
                  g->Q + (size_t)i * (size_t)g->m * (size_t)g->r, 0.0f, out, g->m);
      be->axpy(nm, share, out, E);
    }
  }
  r->seconds += surge_now() - t0;
  if (b->x_n) {
    comm_op_wait(&b->op_x);
    size_t x = 0;
    for (int i = 0; i < b->nexact; x += b->x_len[i], i++) be->copy(b->data + b->x_at[i], b->X + x, b->x_len[i]);
  }
  b->done = 1;
}

/* ---- state */

static int psgd_state(reducer_t *r, state_region_t *out, int max) {
  psgd_reducer_t *p = impl(r);
  if (max < 1) surge_runtime_error("powersgd reducer: no room for its checkpoint region");
  float steps = (float)p->steps;
  p->be->upload(p->count, &steps, 1);
  out[0] = *rank_state_region(&p->st);
  return 1;
}

static void psgd_loaded(reducer_t *r) {
  psgd_reducer_t *p = impl(r);
  rank_state_loaded(&p->st);
  float steps;
  p->be->download(&steps, p->count, 1);
  p->steps = (long)steps;
}

static void psgd_free(reducer_t *r) {
  psgd_reducer_t *p = impl(r);
  rank_state_free(&p->st);
  for (int k = 0; k < p->nb; k++) {
    pbucket_t *b = &p->b[k];
    for (int j = 0; j < b->ngroups; j++) {
      free(b->g[j].at);
      free(b->g[j].tensor);
    }
    free(b->g);
    free(b->x_at);
    free(b->x_len);
  }
  free(p->b);
  const backend_t *be = p->be;
  be->free(p->E), be->free(p->P), be->free(p->Q), be->free(p->X), be->free(p->count);
  free(p);
}

static const reducer_ops_t psgd_ops = {.name = "powersgd", .begin = psgd_begin, .start = psgd_start,
                                       .test = psgd_test, .wait = psgd_wait, .state = psgd_state,
                                       .loaded = psgd_loaded, .free = psgd_free};

reducer_t *reducer_powersgd(const reducer_setup_t *s) {
  if (!s->be) surge_runtime_error("powersgd reducer: no backend given (gradsync_opts_t.be)");
  psgd_reducer_t *p = xcalloc(1, sizeof *p);
  p->be = s->be;
  p->o = s->psgd;
  p->nb = s->nbuckets;
  p->b = xcalloc((size_t)s->nbuckets + 1, sizeof *p->b);
  for (int k = 0; k < s->nbuckets; k++) plan_bucket(p, s, k);
  place(p);
  const char *names[] = {"error", "q", "steps"};
  float *dev[] = {p->E, p->Q, p->count};
  size_t len[] = {p->e_n, p->q_n, 1};
  /* steps: counted up to the warm-up's end, which is later in a run of more steps (a resume may lower
   * [run] steps, and a count past the warm-up then means it is over), never past [run] steps */
  double counter_max[] = {-1, -1, (double)(p->o.run_steps > p->o.warmup_steps ? p->o.run_steps : p->o.warmup_steps)};
  rank_state_init(&p->st, "/compress/dp", 3, names, dev, len, counter_max, s->be, s->job);
  reducer_t *r = xcalloc(1, sizeof *r);
  r->ops = &psgd_ops;
  r->nbuckets = s->nbuckets;
  r->impl = p;
  return r;
}
