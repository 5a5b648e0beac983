/* The planner's Pareto frontier of (iteration time, rank-time) against brute force: random chains,
 * random series-parallel graphs of up to 8 nodes (blocks of two and three branches, identity edges,
 * nested blocks) and fans of three branches on G = 8 ranks (power-of-two rank counts: 1, 2, 4, 8),
 * random profiles and networks, with and without a per-layer limit; some nodes are batch norms,
 * whose sums the cost model charges less what their pass order hides (plan_bn.c).
 *
 * The brute force enumerates the plan space independently of the search: a rank count for every
 * node, and for every block an arrangement of its branches in lanes, written as a tree (a lane of
 * some branches one after another on the range's first ranks, on a candidate's ranks, then the
 * other branches' arrangement on the ranks after it, from any offset, or all in one lane), placed
 * by its own walk over the graph; every plan is priced by the evaluator (burst_ctx_evaluate). The
 * front of all those (time, rank-time) pairs must be the frontier, point for point, in both
 * measures; a frontier built with a tolerance must come within it of every brute-force point; the
 * frontier's queries must pick what the brute force picks; and every frontier point's plan
 * evaluates to that point (the frontier checks it). The space before lane offsets (the other lanes
 * on a candidate's last ranks of the range) is enumerated too: its front must never beat the
 * frontier's, and must lose to it on some graphs, so the check sees the offsets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"
#include "core/rng.h"
#include "tap.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))))
#define MAX_NODES 8
#define MAX_BLOCKS 3

/* ---- random series-parallel graphs ---- */

typedef struct gen {
  bgraph_t *g;
  rng_t *r;
  int budget; /* nodes left to add */
  int blocks; /* blocks made so far (at most MAX_BLOCKS) */
} gen_t;

static int add_node(gen_t *s, int nin, const int *in) {
  char name[16];
  snprintf(name, sizeof name, "n%d", s->g->n);
  double grad = rng_uniform(s->r) < 0.5 ? 0 : 1000 + 1e5 * rng_uniform(s->r);
  s->budget--;
  /* every other node with parameters a batch norm (no draw of its own: the graphs stay as they were),
   * so its sums, and what the pass order hides of them, are in the costs both sides compare */
  const char *kind = nin > 1 ? "join" : grad > 0 && s->g->n % 2 ? "batchnorm" : "node";
  return bgraph_add(s->g, name, kind, nin, in, 100 + 1e4 * rng_uniform(s->r), grad, 0);
}

static int gen_series(gen_t *s, int from, int steps, int allow_block);

/* A block from node `from`: 2 or 3 branches (one may be empty: an identity edge), then the join. */
static int gen_block(gen_t *s, int from) {
  s->blocks++;
  int nb = s->budget >= 4 && rng_uniform(s->r) < 0.4 ? 3 : 2;
  int in[3], nin = 0, empty = 0;
  for (int b = 0; b < nb; b++) {
    if (!empty && b == nb - 1 && rng_uniform(s->r) < 0.3) { /* identity edge */
      in[nin++] = from;
      empty = 1;
      continue;
    }
    int len = s->budget > nb - b + 1 && rng_uniform(s->r) < 0.5 ? 2 : 1;
    in[nin++] = gen_series(s, from, len, s->budget >= 5);
  }
  return add_node(s, nin, in);
}

/* A series of `steps` steps after node from; returns its last node. */
static int gen_series(gen_t *s, int from, int steps, int allow_block) {
  int x = from;
  for (int i = 0; i < steps && s->budget > 0; i++) {
    if (allow_block && s->budget >= 4 && s->blocks < MAX_BLOCKS && rng_uniform(s->r) < 0.45)
      x = gen_block(s, x);
    else
      x = add_node(s, 1, &x);
  }
  return x;
}

static void random_graph(bgraph_t *g, rng_t *r, int nodes, int branchy) {
  bgraph_init(g, "random", "random graph");
  bgraph_add(g, "input", "input", 0, NULL, 100 + 1e4 * rng_uniform(r), 0, 0);
  gen_t s = {g, r, nodes - 1, 0};
  gen_series(&s, 0, nodes - 1, branchy);
  g->fingerprint = bgraph_fingerprint(g);
}

/* A fan: input -> s -> three one-node branches -> join (6 nodes), where lanes at offsets (2 + 2 + 4
 * ranks of 8) are most often worth it. */
static void fan_graph(bgraph_t *g, rng_t *r) {
  bgraph_init(g, "fan", "random fan");
  bgraph_add(g, "input", "input", 0, NULL, 100 + 1e4 * rng_uniform(r), 0, 0);
  gen_t s = {g, r, 5, 0};
  int from = 0, fork = add_node(&s, 1, &from), in[3];
  for (int b = 0; b < 3; b++) in[b] = add_node(&s, 1, &fork);
  add_node(&s, 3, in);
  g->fingerprint = bgraph_fingerprint(g);
}

static void random_profile(burst_profile_t *p, const bgraph_t *g, const burst_opts_t *o, rng_t *r) {
  burst_profile_init(p, g->n, "random");
  /* a network fast enough that re-sharding and syncing trade against compute: fronts of many points */
  p->net = (burst_net_t){2 * rng_uniform(r), 1e3 * pow(100, rng_uniform(r)), 2 * rng_uniform(r),
                         1e3 * pow(100, rng_uniform(r))};
  int b[64];
  int C = burst_profile_batches(o, b);
  for (int v = 1; v < g->n; v++) {
    double base = 50 * rng_uniform(r), per = 10 * rng_uniform(r), gamma = 0.4 + 0.6 * rng_uniform(r);
    for (int k = 0; k < C; k++) burst_profile_set(p, v, b[k], base + per * pow(b[k], gamma));
  }
}

/* ---- brute force ---- */

/* A lane arrangement of a block's branches within a range of W ranks (any count): all in one lane
 * on the widest candidate within W, or the branches of `first` in a lane on candidate f's ranks and
 * then `rest` arranged on the `width` ranks after it (cn[f] + width <= W). The search's space has
 * width = W - cn[f], from any offset; the space before lane offsets (`legacy`) had f =
 * cap_for(W - cn[m]) and width = cn[m] for a candidate m: the other lanes on a candidate's ranks at
 * the range's end. */
typedef struct arr {
  int first, f, width; /* first = 0: all in one lane */
  struct arr *rest;
} arr_t;

#define MAX_ARRS 8192
typedef struct brute {
  burst_ctx_t c;
  burst_plan_t pl;
  const sp_block_t *blk[MAX_BLOCKS];
  int nblk;
  arr_t pool[MAX_ARRS];
  int npool;
  const arr_t *choice[MAX_BLOCKS]; /* the arrangement of each block in this plan */
  int nchoice;
  int valid;
  int node_cap[MAX_NODES]; /* candidate index of the range each node lies in, for this arrangement */
  int legacy;              /* enumerate the space before lane offsets */
  double A;
  int *cand;
  pf_set_t all;
  long plans;
} brute_t;

static int block_index(const brute_t *b, const sp_block_t *blk) {
  for (int x = 0; x < b->nblk; x++)
    if (b->blk[x] == blk) return x;
  return -1;
}

static void collect_blocks(brute_t *b, const sp_seq_t *s) {
  for (int i = 0; i < s->n; i++) {
    const sp_block_t *blk = s->step[i].via;
    if (!blk) continue;
    if (b->nblk < MAX_BLOCKS) b->blk[b->nblk++] = blk;
    for (int k = 0; k < blk->nbranch; k++) collect_blocks(b, &blk->branch[k]);
  }
}

static void place_seq(brute_t *b, const sp_seq_t *s, int cap, int base);

static int nonempty_mask(const sp_block_t *blk, int *bi) {
  int nb = 0;
  for (int k = 0; k < blk->nbranch; k++)
    if (blk->branch[k].n) bi[nb++] = k;
  return nb;
}

/* The candidate of the first lane of arrangement a in W ranks (-1: it does not fit). */
static int lane_cap(const brute_t *b, const arr_t *a, int W) {
  if (!a->first) return burst_ctx_cap_for(&b->c, W);
  return b->c.cn[a->f] + a->width <= W ? a->f : -1;
}

/* Place the branches of mask under arrangement a in W ranks from rank base. */
static void place_lanes(brute_t *b, const sp_block_t *blk, const int *bi, int mask, const arr_t *a, int W,
                        int base) {
  int lane = a->first ? a->first : mask, cap = lane_cap(b, a, W);
  if (cap < 0) {
    b->valid = 0;
    return;
  }
  int lo = b->pl.ranks, hi = base;
  for (int x = 0; x < 8; x++)
    if (lane >> x & 1) {
      place_seq(b, &blk->branch[bi[x]], cap, base);
      sp_seq_extent(&blk->branch[bi[x]], &b->pl, &lo, &hi);
    }
  if (a->first) place_lanes(b, blk, bi, mask & ~a->first, a->rest, a->width, hi);
}

/* Every node of s at base; a rank count above the range's cap makes the plan invalid. */
static void place_seq(brute_t *b, const sp_seq_t *s, int cap, int base) {
  for (int i = 0; i < s->n; i++) {
    int v = s->step[i].node;
    b->pl.first[v] = base;
    if (b->pl.n[v] > b->c.cn[cap]) b->valid = 0;
    const sp_block_t *blk = s->step[i].via;
    if (!blk) continue;
    int bi[8], nb = nonempty_mask(blk, bi);
    if (nb) place_lanes(b, blk, bi, (1 << nb) - 1, b->choice[block_index(b, blk)], b->c.cn[cap], base);
  }
}

static void evaluate_plan(brute_t *b) {
  b->valid = 1;
  place_seq(b, &b->c.top, b->c.C - 1, 0);
  for (int v = 0; v < b->pl.nodes; v++) b->valid &= b->pl.first[v] + b->pl.n[v] <= b->pl.ranks;
  if (!b->valid) return;
  burst_ctx_evaluate(&b->c, &b->pl);
  for (int v = 0; v < b->pl.nodes; v++)
    if (!isinf(b->A) && b->pl.amp[v] > b->A * (1 + 1e-12)) return;
  if (b->pl.ranks_used > b->pl.ranks) return;
  pf_push(&b->all, b->pl.iter_us, b->pl.rank_us, 0, 0, 0);
  b->plans++;
}

/* Every arrangement of the branches of mask in W ranks (appended to the pool); returns how many,
 * their indices from *start. */
static int arrangements(brute_t *b, int mask, int W, int *start) {
  const burst_ctx_t *c = &b->c;
  *start = b->npool;
  b->pool[b->npool++] = (arr_t){0, 0, 0, NULL};
  if (mask & (mask - 1))
    for (int first = (mask - 1) & mask; first; first = (first - 1) & mask)
      for (int k = 0; k < c->C && c->cn[k] < W; k++) {
        int f = b->legacy ? burst_ctx_cap_for(c, W - c->cn[k]) : k, width = b->legacy ? c->cn[k] : W - c->cn[k];
        int rs, rn = arrangements(b, mask & ~first, width, &rs);
        for (int x = 0; x < rn; x++) {
          if (b->npool == MAX_ARRS) abort();
          b->pool[b->npool++] = (arr_t){first, f, width, &b->pool[rs + x]};
        }
      }
  return b->npool - *start;
}

/* The range (its candidate cap) each node lies in under the chosen arrangements. */
static void caps_seq(brute_t *b, const sp_seq_t *s, int cap);

static void caps_lanes(brute_t *b, const sp_block_t *blk, const int *bi, int mask, const arr_t *a, int W) {
  int lane = a->first ? a->first : mask, cap = lane_cap(b, a, W);
  for (int x = 0; x < 8; x++)
    if (lane >> x & 1) caps_seq(b, &blk->branch[bi[x]], cap < 0 ? 0 : cap); /* cap < 0: placement rejects it */
  if (a->first) caps_lanes(b, blk, bi, mask & ~a->first, a->rest, a->width);
}

static void caps_seq(brute_t *b, const sp_seq_t *s, int cap) {
  for (int i = 0; i < s->n; i++) {
    b->node_cap[s->step[i].node] = cap;
    const sp_block_t *blk = s->step[i].via;
    if (!blk) continue;
    int bi[8], nb = nonempty_mask(blk, bi);
    if (nb) caps_lanes(b, blk, bi, (1 << nb) - 1, b->choice[block_index(b, blk)], b->c.cn[cap]);
  }
}

static void enum_nodes(brute_t *b, int v) {
  if (v == b->pl.nodes) {
    evaluate_plan(b);
    return;
  }
  for (int k = 0; k <= b->node_cap[v]; k++) {
    b->pl.n[v] = b->c.cn[k];
    enum_nodes(b, v + 1);
  }
}

static void enum_blocks(brute_t *b, int x, int *start, int *count) {
  if (x == b->nblk) {
    caps_seq(b, &b->c.top, b->c.C - 1);
    enum_nodes(b, 0);
    return;
  }
  for (int y = 0; y < count[x]; y++) {
    b->choice[x] = &b->pool[start[x] + y];
    enum_blocks(b, x + 1, start, count);
  }
}

/* Arrangements are enumerated for the widest range (the job's G); narrower ranges of nested blocks
 * reject arrangements whose widths do not fit through the rank-count check of place_seq. */
/* The brute force's plan count bound (rank counts times arrangements), to keep the test quick. */
static double brute_size(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o) {
  brute_t *b = xcalloc(1, sizeof *b);
  burst_ctx_init(&b->c, g, p, o);
  burst_ctx_tables(&b->c);
  collect_blocks(b, &b->c.top);
  double size = pow(b->c.C, g->n);
  for (int x = 0; x < b->nblk; x++) {
    int bi[8], nb = nonempty_mask(b->blk[x], bi), start;
    if (nb) size *= arrangements(b, (1 << nb) - 1, b->c.cn[b->c.C - 1], &start);
  }
  burst_ctx_free(&b->c);
  free(b);
  return size;
}

static long brute_front(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, int legacy,
                        pf_set_t *front) {
  brute_t *b = xcalloc(1, sizeof *b);
  burst_ctx_init(&b->c, g, p, o);
  burst_ctx_tables(&b->c);
  burst_plan_alloc(&b->pl, g->n, o);
  b->A = o->amp;
  b->legacy = legacy;
  collect_blocks(b, &b->c.top);
  int start[MAX_BLOCKS], count[MAX_BLOCKS];
  for (int x = 0; x < b->nblk; x++) {
    int bi[8], nb = nonempty_mask(b->blk[x], bi);
    count[x] = nb ? arrangements(b, (1 << nb) - 1, b->c.cn[b->c.C - 1], &start[x]) : 1;
    if (!nb) {
      start[x] = b->npool;
      b->pool[b->npool++] = (arr_t){0, 0, 0, NULL};
    }
  }
  enum_blocks(b, 0, start, count);
  pf_prune(&b->all, 0);
  *front = b->all;
  long plans = b->plans;
  burst_plan_free(&b->pl);
  burst_ctx_free(&b->c);
  free(b);
  return plans;
}

/* ---- checks ---- */

/* Whether the front a has a point that no point of front b matches or beats in both measures. */
static int beats_somewhere(const pf_set_t *a, const pf_set_t *b) {
  for (int x = 0; x < a->n; x++) {
    int covered = 0;
    for (int y = 0; y < b->n && !covered; y++)
      covered = b->p[y].t <= a->p[x].t * (1 + 1e-9) && b->p[y].r <= a->p[x].r * (1 + 1e-9);
    if (!covered) return 1;
  }
  return 0;
}

static int fronts_equal(const burst_frontier_t *f, const pf_set_t *bf) {
  if (f->n != bf->n) return 0;
  for (int x = 0; x < f->n; x++)
    if (!NEAR(f->pt[x].iter_us, bf->p[x].t) || !NEAR(f->pt[x].rank_us, bf->p[x].r)) return 0;
  return 1;
}

/* Every brute-force point has a frontier point within (1 + tol) in both measures, and no frontier
 * point beats the brute-force front (they are plans of the same space). */
static int covers(const burst_frontier_t *f, const pf_set_t *bf, double tol) {
  for (int y = 0; y < bf->n; y++) {
    int hit = 0;
    for (int x = 0; x < f->n && !hit; x++)
      hit = f->pt[x].iter_us <= bf->p[y].t * (1 + tol) * (1 + 1e-9) &&
            f->pt[x].rank_us <= bf->p[y].r * (1 + tol) * (1 + 1e-9);
    if (!hit) return 0;
  }
  return 1;
}

static int plans_agree(const burst_frontier_t *f) {
  for (int x = 0; x < f->n; x++) {
    burst_plan_t pl;
    burst_frontier_plan(f, x, &pl); /* stops with an error if the plan does not evaluate to the point */
    int ok = pl.ranks_used <= pl.ranks;
    burst_plan_free(&pl);
    if (!ok) return 0;
  }
  return 1;
}

/* The limits asked are nudged up by 1e-9 (relative): a front of one point asks its own rank-time,
 * which the search's and the brute force's sums may give a last bit apart. */
static int queries_agree(const burst_frontier_t *f, const pf_set_t *bf, rng_t *r) {
  for (int q = 0; q < 10; q++) {
    double R = (bf->p[bf->n - 1].r + (bf->p[0].r - bf->p[bf->n - 1].r) * rng_uniform(r) * 1.1) * (1 + 1e-9);
    double T = (bf->p[0].t + (bf->p[bf->n - 1].t - bf->p[0].t) * rng_uniform(r) * 1.1) * (1 + 1e-9);
    int x = burst_frontier_fastest_within(f, R), y = burst_frontier_leanest_within(f, T);
    double want_t = HUGE_VAL, want_r = HUGE_VAL;
    for (int z = 0; z < bf->n; z++) {
      if (bf->p[z].r <= R && bf->p[z].t < want_t) want_t = bf->p[z].t;
      if (bf->p[z].t <= T && bf->p[z].r < want_r) want_r = bf->p[z].r;
    }
    if ((x < 0) != isinf(want_t) || (x >= 0 && !NEAR(f->pt[x].iter_us, want_t))) return 0;
    if ((y < 0) != isinf(want_r) || (y >= 0 && !NEAR(f->pt[y].rank_us, want_r))) return 0;
  }
  return 1;
}

static void run_trials(const char *what, int branchy, int trials, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed);
  const double As[] = {BURST_NO_LIMIT, 2, 1.3, BURST_NO_LIMIT};
  int equal = 0, covered = 0, planned = 0, asked = 0, done = 0, blocks = 0, branches3 = 0, offsets = 0, worse = 0;
  long plans = 0, points = 0;
  for (int t = 0; t < trials; t++) {
    bgraph_t g;
    burst_opts_t o = {8, 16, As[t % 4], BURST_RANKS_POW2};
    burst_profile_t p;
    for (;;) { /* a graph of 5..8 nodes whose plan space is small enough to enumerate quickly */
      int nodes = 5 + (int)(rng_uniform(&r) * 4);
      if (branchy == 2)
        fan_graph(&g, &r);
      else
        random_graph(&g, &r, nodes, branchy);
      random_profile(&p, &g, &o, &r);
      if (brute_size(&g, &p, &o) <= 2e6) break;
      burst_profile_free(&p);
      bgraph_free(&g);
    }
    pf_set_t bf, old;
    plans += brute_front(&g, &p, &o, 0, &bf);
    if (branchy) { /* the space before lane offsets: never better, and worse where offsets pay */
      brute_front(&g, &p, &o, 1, &old);
      offsets += beats_somewhere(&bf, &old);
      worse += beats_somewhere(&old, &bf);
      pf_free(&old);
    }
    burst_frontier_t f, ft;
    burst_frontier_build(&g, &p, &o, 0, &f);
    burst_frontier_build(&g, &p, &o, 0.05, &ft);
    blocks += f.blocks;
    for (int v = 0; v < g.n; v++) branches3 += g.v[v].nin == 3;
    points += f.n;
    int eq = fronts_equal(&f, &bf);
    if (!eq) tap_diag("%s trial %d (%d nodes, %d blocks): frontier %d points, brute force %d", what, t, g.n,
                      f.blocks, f.n, bf.n);
    equal += eq;
    covered += covers(&ft, &bf, 0.05) && ft.n <= f.n;
    planned += plans_agree(&f);
    asked += queries_agree(&f, &bf, &r);
    done++;
    burst_frontier_free(&f);
    burst_frontier_free(&ft);
    pf_free(&bf);
    burst_profile_free(&p);
    bgraph_free(&g);
  }
  tap_diag("%s: %d graphs, %d blocks (%d joins of three), %ld plans enumerated, %ld frontier points", what, done,
           blocks, branches3, plans, points);
  tap_ok(equal == done, "%s: frontier equals the brute-force front in both measures (%d of %d)", what, equal, done);
  tap_ok(covered == done, "%s: with tolerance 0.05 every brute-force point is covered within 1.05 (%d of %d)", what,
         covered, done);
  tap_ok(planned == done, "%s: every frontier point's plan evaluates to it and fits the job (%d of %d)", what,
         planned, done);
  tap_ok(asked == done, "%s: fastest-within-rank-time and leanest-within-time match brute force (%d of %d)", what,
         asked, done);
  if (branchy) tap_ok(blocks >= trials / 2, "%s: the graphs have blocks (%d)", what, blocks);
  if (branchy)
    tap_ok(offsets > 0 && worse == 0,
           "%s: lanes at any offset beat the space of lanes on a candidate's last ranks in %d of %d graphs "
           "(never worse: %d)", what, offsets, done, worse);
}

/* The fastest plan of the search is the frontier's first point. */
static void test_search_is_fastest(void) {
  rng_t r;
  rng_seed(&r, 5);
  int ok = 0;
  for (int t = 0; t < 20; t++) {
    bgraph_t g;
    random_graph(&g, &r, 8, 1);
    burst_opts_t o = {8, 16, t % 2 ? 2.0 : BURST_NO_LIMIT, BURST_RANKS_POW2};
    burst_profile_t p;
    random_profile(&p, &g, &o, &r);
    burst_frontier_t f;
    burst_frontier_build(&g, &p, &o, 0, &f);
    burst_plan_t pl;
    burst_search(&g, &p, &o, &pl);
    ok += NEAR(pl.iter_us, f.pt[0].iter_us);
    burst_plan_free(&pl);
    burst_frontier_free(&f);
    burst_profile_free(&p);
    bgraph_free(&g);
  }
  tap_ok(ok == 20, "the fastest plan's time is the frontier's fastest (%d of 20)", ok);
}

int main(void) {
  run_trials("chains", 0, 12, 101);
  run_trials("series-parallel", 1, getenv("FRONTIER_TRIALS") ? atoi(getenv("FRONTIER_TRIALS")) : 40, 202);
  run_trials("fans of three", 2, 12, 303);
  test_search_is_fastest();
  return tap_done();
}
