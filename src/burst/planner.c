/* The burst planner's search: dynamic programming over the graph's series-parallel tree
 * (plan_graph.c) with the cost tables of plan_cost.c, carrying Pareto sets of (time, rank-time)
 * (plan_pareto.c) instead of single times.
 *
 * Along a series, the set of step i and configuration e holds every undominated (time, rank-time)
 * from the series' start to the end of the step's node in e; a direct edge advances the sets of
 * the previous node by the re-shard and the node's cost (time x + w, rank-time n (x + w)) and takes
 * the front of their union over the previous configurations.
 *
 * A fork/join block is solved for each configuration a of its fork (pf_block_solve): each non-empty
 * branch is a series from the fork in a, ending with the re-shard into the join, giving a span set
 * for every configuration e of the join. The branches are arranged in lanes: contiguous rank
 * ranges side by side inside the enclosing range, the branches of one lane one after another (spans
 * add), the lanes at once (the block takes the longest lane's time; rank-times add). Every ordered
 * arrangement is "a first lane at the range's start, then the other branches' arrangement on the
 * ranks after it", so lanes(S, W) on W ranks = serial(S, the widest candidate within W) united
 * with, for every first lane S1 within S and every candidate f < W, the max-combination of
 * serial(S1, f) and lanes(S \ S1, W - f) placed after it (whose branches start on other ranks than
 * the fork: full re-shards in and out). W is a rank count, not only a candidate, so a lane may
 * start at any offset (four 2-rank lanes on 8 ranks: the last three on 6, 4 and 2 ranks). Every
 * lane's own width is a candidate; the enclosing range caps every lane, so no plan needs more ranks
 * than the job has. Direct fork -> join edges (residual identities) re-shard alongside. Blocks with
 * more than PF_LANE_BRANCHES non-empty branches run them one after another.
 *
 * Only configurations the per-layer amplification limit allows (w < inf) are visited. With
 * keep_one the sets hold only their fastest point (the fastest plan: burst_plan_search); with
 * eps > 0 the sets after each block are thinned to (1 + eps) (plan_frontier.c states the bound). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

int burst_ctx_cap_for(const burst_ctx_t *c, int n) {
  int k = 0;
  while (k + 1 < c->C && c->cn[k + 1] <= n) k++;
  return k;
}

void pf_run_free(pf_run_t *run) {
  for (int x = 0; x < run->n * run->C; x++) pf_free(&run->st[x]);
  free(run->st);
  memset(run, 0, sizeof *run);
}

/* Whether nodes u and v must run on the same ranks (bgraph_node_t.with). */
static int one_set(const burst_ctx_t *c, int u, int v) { return bgraph_set_of(c->g, u) == bgraph_set_of(c->g, v); }

/* ---- blocks ---- */

static int memo_index(const pf_block_t *b, int x, int cap, int off) { return (x * b->E->c->C + cap) * 2 + off; }

static int lowest_bit(int mask) {
  int x = 0;
  while (!(mask >> x & 1)) x++;
  return x;
}

/* Memo slot of a set of branches: the mask itself where lanes are searched; beyond that only the
 * suffixes "branch x and all after it" occur, named by x. */
static int mask_slot(const pf_block_t *b, int mask) { return b->nb <= PF_LANE_BRANCHES ? mask : lowest_bit(mask); }

/* Span sets of branch number x (index into bi) on configurations <= cap, placed at the enclosing
 * range's start (off = 0: enters as the block does, leaves without moving) or after another lane
 * (off = 1: every sample moves in and out). */
const pf_set_t *pf_block_span(pf_block_t *b, int x, int cap, int off) {
  const burst_ctx_t *c = b->E->c;
  int C = c->C;
  pf_span_t *s = &b->span[memo_index(b, x, cap, off)];
  if (s->done) return s->sp;
  s->done = 1;
  const sp_seq_t *br = &b->blk->branch[b->bi[x]];
  pf_seq_run(b->E, br, b->fork, b->a, cap, off || b->moved_in, &s->run);
  s->sp = xcalloc((size_t)C, sizeof *s->sp);
  int last = br->step[br->n - 1].node;
  const pf_set_t *end = s->run.st + (size_t)(br->n - 1) * C;
  /* a join that must run on the branch's last node's ranks: in its configuration, from the range's start */
  int with_last = one_set(c, b->join, last);
  for (int e = 0; e <= b->jcap; e++) {
    if (c->w[(size_t)b->join * C + e] == BURST_INF) continue;
    for (int f = 0; f <= cap; f++) {
      if (with_last && (f != e || off)) continue;
      double x_out = burst_ctx_xfer(c, last, f, e, off);
      pf_merge_shifted(&s->sp[e], &end[f], x_out, c->cn[e] * x_out, f, -1, b->E->keep_one, &b->tmp);
    }
  }
  if (!b->keep) pf_run_free(&s->run);
  return s->sp;
}

/* The branches of mask one after another: a point has i = its index in the lowest branch's span
 * set, j = in serial(the others). */
const pf_set_t *pf_block_serial(pf_block_t *b, int mask, int cap, int off) {
  int lo = lowest_bit(mask), rest = mask & (mask - 1);
  if (!rest) return pf_block_span(b, lo, cap, off);
  pf_set_t **slot = &b->serial[memo_index(b, mask_slot(b, mask), cap, off)];
  if (*slot) return *slot;
  const burst_ctx_t *c = b->E->c;
  const pf_set_t *one = pf_block_span(b, lo, cap, off), *others = pf_block_serial(b, rest, cap, off);
  pf_set_t *res = xcalloc((size_t)c->C, sizeof *res);
  for (int e = 0; e <= b->jcap; e++) pf_merge_sum(&res[e], &one[e], &others[e], 0, 0, -1, b->E->keep_one, &b->tmp);
  return *slot = res;
}

/* The memo slot of lanes(mask, width, off): found, or added empty (sets NULL). */
static pf_set_t **lanes_slot(pf_block_t *b, int mask, int width, int off) {
  pf_lane_memo_t *m = &b->lanes[mask_slot(b, mask) * 2 + off];
  for (int x = 0; x < m->n; x++)
    if (m->width[x] == width) return &m->sets[x];
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 4;
    m->width = xrealloc(m->width, (size_t)m->cap * sizeof *m->width);
    m->sets = xrealloc(m->sets, (size_t)m->cap * sizeof *m->sets);
  }
  m->width[m->n] = width;
  m->sets[m->n] = NULL;
  return &m->sets[m->n++];
}

/* Every lane arrangement of the branches of mask in `width` ranks (any count, not only a
 * candidate): a point has k = -1 and i = its index in serial(mask, the widest candidate that fits),
 * or k = first * C + f (the first lane's branches on candidate f's ranks, the others on the
 * width - cn[f] ranks after it, from any offset), i = its index in serial(first, f), j = in
 * lanes(the others, width - cn[f], 1). */
const pf_set_t *pf_block_lanes(pf_block_t *b, int mask, int width, int off) {
  pf_set_t **slot = lanes_slot(b, mask, width, off);
  if (*slot) return *slot;
  const burst_ctx_t *c = b->E->c;
  int C = c->C, keep_one = b->E->keep_one;
  pf_set_t *res = xcalloc((size_t)C, sizeof *res);
  const pf_set_t *ser = pf_block_serial(b, mask, burst_ctx_cap_for(c, width), off);
  for (int e = 0; e <= b->jcap; e++) pf_merge_shifted(&res[e], &ser[e], 0, 0, -1, -1, keep_one, &b->tmp);
  if ((mask & (mask - 1)) && b->nb <= PF_LANE_BRANCHES)
    for (int first = (mask - 1) & mask; first; first = (first - 1) & mask)
      for (int f = 0; f < C && c->cn[f] < width; f++) {
        const pf_set_t *l1 = pf_block_serial(b, first, f, off);
        const pf_set_t *l2 = pf_block_lanes(b, mask & ~first, width - c->cn[f], 1);
        for (int e = 0; e <= b->jcap; e++) pf_merge_max(&res[e], &l1[e], &l2[e], first * C + f, keep_one, &b->tmp);
      }
  /* the memo may have grown (and moved) during the recursion */
  return *lanes_slot(b, mask, width, off) = res;
}

pf_block_t *pf_block_solve(const pf_engine_t *E, const sp_block_t *blk, int fork, int join, int a, int jcap,
                           int moved_in, int keep) {
  const burst_ctx_t *c = E->c;
  int C = c->C;
  pf_block_t *b = xcalloc(1, sizeof *b);
  *b = (pf_block_t){.E = E, .blk = blk, .fork = fork, .join = join, .a = a, .jcap = jcap, .moved_in = moved_in,
                    .keep = keep};
  b->bi = xmalloc((size_t)blk->nbranch * sizeof *b->bi);
  b->dmax = xcalloc((size_t)C, sizeof *b->dmax);
  b->dsum = xcalloc((size_t)C, sizeof *b->dsum);
  for (int k = 0; k < blk->nbranch; k++) {
    if (blk->branch[k].n) {
      b->bi[b->nb++] = k;
      continue;
    }
    for (int e = 0; e <= jcap; e++) {
      double x = burst_ctx_xfer(c, fork, a, e, moved_in);
      b->dsum[e] += x;
      if (x > b->dmax[e]) b->dmax[e] = x;
    }
  }
  if (b->nb > 30) surge_input_error("node %d '%s' joins %d branches (at most 30)", join, c->g->v[join].name, b->nb);
  int slots = b->nb <= PF_LANE_BRANCHES ? 1 << b->nb : b->nb + 1;
  b->span = xcalloc((size_t)(b->nb ? b->nb : 1) * C * 2, sizeof *b->span);
  b->serial = xcalloc((size_t)slots * C * 2, sizeof *b->serial);
  b->lanes = xcalloc((size_t)slots * 2, sizeof *b->lanes);
  b->arr = xcalloc((size_t)C, sizeof *b->arr);
  const pf_set_t *all = b->nb ? pf_block_lanes(b, (int)((1u << b->nb) - 1), c->cn[jcap], 0) : NULL;
  for (int e = 0; e <= jcap; e++) {
    double dr = c->cn[e] * b->dsum[e];
    if (!all) {
      pf_push(&b->arr[e], b->dmax[e], dr, -1, -1, -1);
      continue;
    }
    for (int x = 0; x < all[e].n; x++) {
      const pf_pt_t *q = &all[e].p[x];
      pf_push(&b->arr[e], q->t > b->dmax[e] ? q->t : b->dmax[e], q->r + dr, -1, x, -1);
    }
    pf_prune(&b->arr[e], E->keep_one);
    pf_thin(&b->arr[e], E->eps);
  }
  return b;
}

const pf_set_t *pf_block_arrival(const pf_block_t *b, int e) { return &b->arr[e]; }

static void free_sets(pf_set_t **v, int n, int C) {
  for (int x = 0; x < n; x++) {
    if (!v[x]) continue;
    for (int e = 0; e < C; e++) pf_free(&v[x][e]);
    free(v[x]);
  }
  free(v);
}

void pf_block_free(pf_block_t *b) {
  int C = b->E->c->C, slots = b->nb <= PF_LANE_BRANCHES ? 1 << b->nb : b->nb + 1;
  for (int x = 0; x < (b->nb ? b->nb : 1) * C * 2; x++) {
    pf_span_t *s = &b->span[x];
    if (s->run.st) pf_run_free(&s->run);
    if (s->sp)
      for (int e = 0; e < C; e++) pf_free(&s->sp[e]);
    free(s->sp);
  }
  free(b->span);
  /* a single branch's serial set is its span's: only sets of two or more were allocated here */
  free_sets(b->serial, slots * C * 2, C);
  for (int x = 0; x < slots * 2; x++) {
    free_sets(b->lanes[x].sets, b->lanes[x].n, C);
    free(b->lanes[x].width);
  }
  free(b->lanes);
  for (int e = 0; e < C; e++) pf_free(&b->arr[e]);
  free(b->arr);
  pf_free(&b->tmp);
  free(b->dmax);
  free(b->dsum);
  free(b->bi);
  free(b);
}

/* ---- series ---- */

/* Step i of a series reached through a block: the arrival sets of every live fork configuration k,
 * then for each e one front over the streams "from_k + arrival point + the join's cost". */
static void block_step(const pf_engine_t *E, const sp_step_t *step, int fork, const pf_set_t *from, int cap,
                       int moved, pf_set_t *out) {
  const burst_ctx_t *c = E->c;
  int C = c->C, v = step->node;
  const double *w = c->w + (size_t)v * C;
  pf_set_t *arr = xcalloc((size_t)C * C, sizeof *arr); /* [k * C + e] */
  int nstreams = 0;
  for (int k = 0; k < C; k++) {
    if (from[k].n == 0) continue;
    pf_block_t *b = pf_block_solve(E, step->via, fork, v, k, cap, moved, 0);
    for (int e = 0; e <= cap; e++) {
      pf_set_t *a = &arr[(size_t)k * C + e];
      *a = b->arr[e];
      b->arr[e] = (pf_set_t){0, 0, NULL};
      nstreams += a->n;
    }
    pf_block_free(b);
  }
  pf_stream_t *st = xmalloc((size_t)(nstreams ? nstreams : 1) * sizeof *st);
  for (int e = 0; e <= cap; e++) {
    if (w[e] == BURST_INF) continue;
    int n = 0;
    for (int k = 0; k < C; k++)
      /* a join on its fork's ranks: the same count, and not in a branch that starts elsewhere */
      for (int y = 0; y < arr[(size_t)k * C + e].n && !(one_set(c, v, fork) && (k != e || moved)); y++) {
        const pf_pt_t *q = &arr[(size_t)k * C + e].p[y];
        st[n++] = (pf_stream_t){&from[k], q->t + w[e], q->r + c->cn[e] * w[e], k, y, PF_TAG_I, 0};
      }
    pf_front_of(st, n, &out[e], E->keep_one);
    pf_thin(&out[e], E->eps);
  }
  free(st);
  for (int x = 0; x < C * C; x++) pf_free(&arr[x]);
  free(arr);
}

void pf_seq_run(const pf_engine_t *E, const sp_seq_t *s, int src, int a, int cap, int moved_in, pf_run_t *run) {
  const burst_ctx_t *c = E->c;
  int C = c->C;
  run->n = s->n;
  run->C = C;
  run->st = xcalloc(surge_mul_size((size_t)s->n, (size_t)C, "planner sets"), sizeof *run->st);
  /* before step 0: the source's single start point in configuration a */
  pf_set_t *start = xcalloc((size_t)C, sizeof *start);
  if (src >= 0) pf_push(&start[a], 0, 0, -1, -1, -1);
  pf_stream_t *st = xmalloc((size_t)C * sizeof *st);
  int prev = src;
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node, moved = i == 0 && moved_in;
    const double *w = c->w + (size_t)v * C;
    pf_set_t *out = run->st + (size_t)i * C;
    const pf_set_t *from = i ? run->st + (size_t)(i - 1) * C : start;
    if (prev < 0) { /* the input node of the top series */
      for (int e = 0; e <= cap; e++)
        if (w[e] < BURST_INF) pf_push(&out[e], w[e], c->cn[e] * w[e], -1, -1, -1);
    } else if (s->step[i].via) {
      block_step(E, &s->step[i], prev, from, cap, moved, out);
    } else {
      for (int e = 0; e <= cap; e++) {
        if (w[e] == BURST_INF) continue;
        int n = 0;
        for (int k = 0; k < C; k++) {
          /* bgraph_node_t.with: the same count, and the same first rank (not a moved start) */
          if (from[k].n == 0 || (one_set(c, v, prev) && (k != e || moved))) continue;
          double d = burst_ctx_xfer(c, prev, k, e, moved) + w[e];
          st[n++] = (pf_stream_t){&from[k], d, c->cn[e] * d, k, -1, PF_TAG_I, 0};
        }
        pf_front_of(st, n, &out[e], E->keep_one);
      }
    }
    prev = v;
  }
  free(st);
  for (int k = 0; k < C; k++) pf_free(&start[k]);
  free(start);
}
