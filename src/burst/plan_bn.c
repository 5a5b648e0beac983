/* Batch norm's sums in the cost model (plan.h): a batch norm on n > 1 ranks sums its statistics over
 * them twice a step (layer_batchnorm.c: forward n (1 + 3C) floats, each rank its slot; backward 2C
 * floats), each an allreduce priced as a gradient sync of those bytes (burst_sync_us). With the
 * executor's overlap ([parallel] bn_overlap, pass_order.h) a sum is in flight while the nodes that
 * the pass order starts between the batch norm's start and finish run: those nodes' forward (a third
 * of their profiled pass) or backward (two thirds) hides as much of the sum. */
#include <stdlib.h>
#include <string.h>

#include "burst/pass_order.h"
#include "burst/plan_impl.h"
#include "core/error.h"


double burst_bn_sum_us(const burst_net_t *net, double channels, int n, int backward) {
  if (n <= 1 || !(channels > 0)) return 0;
  double floats = backward ? 2 * channels : n * (1 + 3 * channels);
  return burst_sync_us(net, floats * sizeof(float), n);
}

/* The nodes each batch norm's sums hide behind, from the executor's pass order on this graph with
 * every batch norm summing (a plan that leaves one on 1 rank changes the order a little). */
void burst_ctx_bn_init(burst_ctx_t *c) {
  const bgraph_t *g = c->g;
  int n = g->n, any = 0;
  int *sums = xcalloc((size_t)n, sizeof *sums), *nin = xcalloc((size_t)n, sizeof *nin);
  int *fused = xcalloc((size_t)n, sizeof *fused); /* model_t.fused: a node's fused ReLU; that ReLU -1 */
  const int **in = xcalloc((size_t)n, sizeof *in);
  for (int v = 0; v < n; v++) {
    any |= sums[v] = g->v[v].bn_channels > 0;
    nin[v] = g->v[v].nin;
    in[v] = g->v[v].in;
    if (g->v[v].tied && g->v[v].nin == 1 && strcmp(g->v[v].kind, "relu") == 0) { /* (a fused GELU: no batch norm) */
      fused[g->v[v].in[0]] = v;
      fused[v] = -1;
    }
  }
  c->hid_lo = xcalloc((size_t)2 * n, sizeof *c->hid_lo);
  c->hid_hi = xcalloc((size_t)2 * n, sizeof *c->hid_hi);
  c->hid = NULL;
  if (any && !c->p->bn_blocking) {
    pass_order_t o;
    pass_order_build_dag(&o, n, nin, in, fused, sums, 1);
    size_t cap = 0, used = 0;
    for (int pass = 0; pass < 2; pass++) {
      const pass_event_t *ev = pass ? o.bwd : o.fwd;
      int nev = pass ? o.nbwd : o.nfwd;
      for (int i = 0; i < nev; i++) { /* a deferred start: the nodes that start (and work) before its finish */
        int b = ev[i].node;
        if (ev[i].finish || !ev[i].deferred) continue;
        c->hid_lo[2 * b + pass] = (int)used;
        for (int j = i + 1; j < nev && !(ev[j].node == b && ev[j].finish); j++) {
          if (ev[j].finish || fused[ev[j].node] < 0) continue; /* a fused ReLU does no work of its own */
          if (used == cap) c->hid = xrealloc(c->hid, (cap = cap ? 2 * cap : 16) * sizeof *c->hid);
          c->hid[used++] = ev[j].node;
        }
        c->hid_hi[2 * b + pass] = (int)used;
      }
    }
    pass_order_free(&o);
  }
  free(in);
  free(fused);
  free(nin);
  free(sums);
}

double burst_ctx_bn_us(const burst_ctx_t *c, int v, int batch, int n) {
  double channels = c->g->v[v].bn_channels, us = 0;
  if (n <= 1 || !(channels > 0)) return 0;
  for (int pass = 0; pass < 2; pass++) {
    double sum = burst_bn_sum_us(&c->p->net, channels, n, pass), work = 0;
    double share = pass ? 1 - BURST_FORWARD_SHARE : BURST_FORWARD_SHARE;
    for (int h = c->hid_lo[2 * v + pass]; h < c->hid_hi[2 * v + pass] && work < sum; h++)
      work += share * burst_profile_pass_us(c->p, c->g, c->hid[h], batch);
    us += sum > work ? sum - work : 0;
  }
  return us;
}

double burst_ctx_sync_us(const burst_ctx_t *c, int v, int batch, int n) {
  return burst_sync_us(&c->p->net, c->g->v[v].grad_bytes, n) + burst_ctx_bn_us(c, v, batch, n);
}

void burst_ctx_bn_free(burst_ctx_t *c) {
  free(c->hid_lo);
  free(c->hid_hi);
  free(c->hid);
  c->hid_lo = c->hid_hi = c->hid = NULL;
}
