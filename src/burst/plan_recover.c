/* Recovering a plan from a point of the search's sets: walk the back-pointers from the last node of
 * the top series to the input, and at every block solve it again for the fork's configuration of
 * that point, keeping its sets this time (the same computation gives the same sets, so the
 * back-pointers stay valid), and walk through its lanes. Lanes are placed from the enclosing
 * range's first rank: the first lane there, each next one right after the ranks the earlier ones
 * use. */
#include "burst/plan_impl.h"

void pf_recover_seq(const pf_engine_t *E, const sp_seq_t *s, int src, int cap, int moved_in, const pf_run_t *run,
                    int e_last, int idx, int base, burst_plan_t *plan) {
  const burst_ctx_t *c = E->c;
  int C = c->C, e = e_last, x = idx;
  for (int i = s->n - 1; i >= 0; i--) {
    int v = s->step[i].node;
    plan->n[v] = c->cn[e];
    plan->first[v] = base;
    const pf_pt_t *p = &run->st[(size_t)i * C + e].p[x];
    if (s->step[i].via) {
      int fork = i ? s->step[i - 1].node : src;
      pf_block_t *b = pf_block_solve(E, s->step[i].via, fork, v, p->k, cap, i == 0 && moved_in, 1);
      pf_recover_block(E, b, e, p->j, base, plan);
      pf_block_free(b);
    }
    e = p->k;
    x = p->i;
  }
}

/* Branch number x's nodes from its span point q (join in e). */
static void recover_span(pf_block_t *b, int x, int cap, int off, int e, int q, int base, burst_plan_t *plan) {
  const pf_set_t *sp = pf_block_span(b, x, cap, off);
  const pf_pt_t *p = &sp[e].p[q];
  const sp_seq_t *br = &b->blk->branch[b->bi[x]];
  const pf_span_t *s = &b->span[((size_t)x * b->E->c->C + (size_t)cap) * 2 + (size_t)off];
  pf_recover_seq(b->E, br, b->fork, cap, off || b->moved_in, &s->run, p->k, p->i, base, plan);
}

static void recover_serial(pf_block_t *b, int mask, int cap, int off, int e, int q, int base, burst_plan_t *plan) {
  int lo = 0;
  while (!(mask >> lo & 1)) lo++;
  int rest = mask & (mask - 1);
  if (!rest) {
    recover_span(b, lo, cap, off, e, q, base, plan);
    return;
  }
  const pf_pt_t *p = &pf_block_serial(b, mask, cap, off)[e].p[q];
  recover_span(b, lo, cap, off, e, p->i, base, plan);
  recover_serial(b, rest, cap, off, e, p->j, base, plan);
}

static void recover_lanes(pf_block_t *b, int mask, int width, int off, int e, int q, int base,
                          burst_plan_t *plan) {
  const burst_ctx_t *c = b->E->c;
  const pf_pt_t *p = &pf_block_lanes(b, mask, width, off)[e].p[q];
  if (p->k < 0) {
    recover_serial(b, mask, burst_ctx_cap_for(c, width), off, e, p->i, base, plan);
    return;
  }
  int first = p->k / c->C, f = p->k % c->C;
  recover_serial(b, first, f, off, e, p->i, base, plan);
  int lo = plan->ranks, hi = base;
  for (int x = 0; x < b->nb; x++)
    if (first >> x & 1) sp_seq_extent(&b->blk->branch[b->bi[x]], plan, &lo, &hi);
  recover_lanes(b, mask & ~first, width - c->cn[f], 1, e, p->j, hi, plan);
}

void pf_recover_block(const pf_engine_t *E, pf_block_t *b, int e, int idx, int base, burst_plan_t *plan) {
  (void)E;
  if (b->nb == 0) return;
  const pf_pt_t *p = &pf_block_arrival(b, e)->p[idx];
  recover_lanes(b, (int)((1u << b->nb) - 1), b->E->c->cn[b->jcap], 0, e, p->i, base, plan);
}
