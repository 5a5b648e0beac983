/* The burst executor's pass order (burst/pass_order.h) on the zoo's batch-norm networks in their
 * small forms (resnet18, resnet50, inception-v3, vgg16 with batch norm), every batch norm summing:
 * without overlap (and with overlap but no node summing) it is the blocking executor's order event
 * for event, the gradient sync told after each node; with overlap each pass is checked against
 * what the order promises: each node started and finished once, a finish right after its start
 * unless the node sums, a forward node's inputs finished before it starts, a backward node's output
 * gradient complete before it starts, the additions into every shared gradient in the blocking
 * order (its readers finishing in reverse node order), the gradient sync's frontier moving down to
 * node 1 only over nodes whose gradients are final. The branched networks have sums in flight while
 * another node starts, in both passes (vgg16, a chain, has none). On resnet18 the promises hold with
 * every node that has parameters deferred, and the checker rejects wrong orders (the backward order
 * as a forward pass; a deferred finish moved past a later addition into the same gradient). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/pass_order.h"
#include "core/error.h"
#include "nn/model.h"
#include "nn/zoo.h"
#include "tap.h"

static int buffer_of(const int *fused, int i) { return fused[i] > 0 ? fused[i] : i; }

/* Whether c reads buffer b (one of its inputs lives there). */
static int reads(const graph_t *g, const int *fused, int c, int b) {
  for (int m = 0; m < g->l[c].nin; m++)
    if (buffer_of(fused, g->l[c].in[m]) == b) return 1;
  return 0;
}

/* Check one pass's events; 0, or -1 with the first broken promise in why. */
static int check_pass(const graph_t *g, const int *fused, const int *sums, int overlap, const pass_event_t *ev,
                      int nev, int backward, char *why, size_t n) {
  int *started = xcalloc((size_t)g->n, sizeof *started), *finished = xcalloc((size_t)g->n, sizeof *finished);
  int *last_adder = xcalloc((size_t)g->n, sizeof *last_adder), frontier = g->n, rc = -1;
  finished[0] = 1;
  for (int e = 0; e < nev; e++) {
    int k = ev[e].node;
    if (k < 1 || k >= g->n || (ev[e].finish ? finished[k] || !started[k] : started[k])) {
      snprintf(why, n, "event %d: node %d started or finished twice, or finished before its start", e, k);
      goto out;
    }
    int defer = overlap && sums[k];
    if (ev[e].deferred != defer || (!ev[e].finish && !defer && !(e + 1 < nev && ev[e + 1].node == k))) {
      snprintf(why, n, "event %d: node %d's finish is %s", e, k, defer ? "not deferred" : "deferred");
      goto out;
    }
    if (!ev[e].finish && !backward) {
      for (int m = 0; m < g->l[k].nin; m++)
        if (!finished[g->l[k].in[m]]) {
          snprintf(why, n, "forward: node %d starts before its input %d finished", k, g->l[k].in[m]);
          goto out;
        }
    } else if (!ev[e].finish) {
      int b = buffer_of(fused, k);
      for (int c = 1; c < g->n; c++)
        if (c != k && reads(g, fused, c, b) && !finished[c]) {
          snprintf(why, n, "backward: node %d starts before %d, a reader of its buffer, finished", k, c);
          goto out;
        }
    } else if (backward) { /* k's finish adds into its inputs' gradients: after the later readers' */
      for (int m = 0; m < g->l[k].nin; m++) {
        int b = buffer_of(fused, g->l[k].in[m]);
        if (last_adder[b] && last_adder[b] < k) {
          snprintf(why, n, "backward: node %d adds into buffer %d after node %d did", k, b, last_adder[b]);
          goto out;
        }
        last_adder[b] = k;
      }
    }
    (ev[e].finish ? finished : started)[k] = 1;
    int f = ev[e].sync_node;
    if (f && (!backward || f >= frontier)) {
      snprintf(why, n, "event %d: the gradient sync told of node %d after %d", e, f, frontier);
      goto out;
    }
    for (int j = f; f && j < g->n; j++)
      if (!(sums[j] && overlap ? started[j] : finished[j])) {
        snprintf(why, n, "event %d: the sync told of nodes from %d, but node %d's gradients are not final", e, f, j);
        goto out;
      }
    if (f) frontier = f;
  }
  for (int k = 1; k < g->n; k++)
    if (!finished[k]) {
      snprintf(why, n, "node %d never finished", k);
      goto out;
    }
  if (backward && frontier != 1) {
    snprintf(why, n, "the gradient sync's frontier ends at %d, not 1", frontier);
    goto out;
  }
  rc = 0;
out:
  free(started);
  free(finished);
  free(last_adder);
  return rc;
}

/* Whether the pass is the blocking order: start, finish of each node in node order (backward:
 * reversed), the sync told of each node after it. */
static int blocking(const graph_t *g, const pass_event_t *ev, int nev, int backward) {
  if (nev != 2 * (g->n - 1)) return 0;
  for (int s = 1; s < g->n; s++) {
    int k = backward ? g->n - s : s;
    const pass_event_t *a = &ev[2 * (s - 1)], *b = a + 1;
    if (a->node != k || b->node != k || a->finish || !b->finish || a->deferred || b->deferred || a->sync_node ||
        b->sync_node != (backward ? k : 0))
      return 0;
  }
  return 1;
}

/* Sums started while another node starts: a deferred node's start and finish with a start between. */
static int overlapped(const pass_event_t *ev, int nev) {
  int count = 0;
  for (int e = 0; e < nev; e++) {
    if (ev[e].finish || !ev[e].deferred) continue;
    for (int f = e + 1; f < nev && !(ev[f].finish && ev[f].node == ev[e].node); f++)
      if (!ev[f].finish) {
        count++;
        break;
      }
  }
  return count;
}

/* Two nodes that read a common buffer (the block input both convolutions of a downsampling block
 * read; the shortcut and the next conv). */
static int share_input(const graph_t *g, const int *fused, int x, int y) {
  for (int m = 0; m < g->l[x].nin; m++)
    if (reads(g, fused, y, buffer_of(fused, g->l[x].in[m]))) return 1;
  return 0;
}

/* The order with every node that has parameters deferred (convolutions too, as if they summed) still
 * keeps its promises, and the checker can fail: the backward order checked as a forward pass; one
 * deferred finish moved after that of a later node adding into the same gradient. */
static void check_mutations(const graph_t *g, const int *fused, const pass_order_t *off) {
  int *all = xcalloc((size_t)g->n, sizeof *all);
  for (int i = 1; i < g->n; i++) all[i] = g->l[i].np > 0;
  pass_order_t o;
  pass_order_build(&o, g, fused, all, 1);
  char why[200] = "";
  int ok = check_pass(g, fused, all, 1, o.fwd, o.nfwd, 0, why, sizeof why) == 0 &&
           check_pass(g, fused, all, 1, o.bwd, o.nbwd, 1, why, sizeof why) == 0;
  tap_ok(ok, "resnet18 with every node that has parameters deferred: both passes keep the promises%s%s",
         ok ? "" : ": ", why);
  int *none = xcalloc((size_t)g->n, sizeof *none);
  int wrong = check_pass(g, fused, none, 0, off->bwd, off->nbwd, 0, why, sizeof why) != 0;
  tap_ok(wrong, "the checker rejects the backward order as a forward pass (%s)", why);
  pass_event_t *moved = xcalloc((size_t)o.nbwd, sizeof *moved);
  int found = 0;
  for (int e = 0; e < o.nbwd && !found; e++) {
    if (!o.bwd[e].finish || !o.bwd[e].deferred) continue;
    for (int f = e + 1; f < o.nbwd && !found; f++)
      if (!o.bwd[f].finish && reads(g, fused, o.bwd[e].node, buffer_of(fused, o.bwd[f].node)))
        break; /* a producer of e's node starts: moving past it would break another promise first */
      else if (o.bwd[f].finish && o.bwd[f].node != o.bwd[e].node &&
               share_input(g, fused, o.bwd[e].node, o.bwd[f].node)) {
        int t = 0; /* every event but e in order, e right after f */
        for (int k = 0; k < o.nbwd; k++) {
          if (k != e) moved[t++] = o.bwd[k];
          if (k == f) moved[t++] = o.bwd[e];
        }
        found = 1;
      }
  }
  why[0] = 0;
  wrong = found && check_pass(g, fused, all, 1, moved, o.nbwd, 1, why, sizeof why) != 0 && strstr(why, "adds into");
  tap_ok(wrong, "the checker rejects a deferred finish moved after a later addition into the same gradient (%s)", why);
  free(moved);
  free(none);
  free(all);
  pass_order_free(&o);
}

static void check_model(const char *model, const char *norm) {
  zoo_opts_t o;
  memset(&o, 0, sizeof o);
  snprintf(o.model, sizeof o.model, "%s", model);
  snprintf(o.norm, sizeof o.norm, "%s", norm);
  snprintf(o.batchnorm, sizeof o.batchnorm, "global");
  snprintf(o.nets.stem, sizeof o.nets.stem, "small");
  o.nets.width_mult = 0.0625;
  o.nets.wrn_factor = 2;
  graph_t g;
  char err[320];
  if (zoo_build(o, shape3(1, 28, 28), 10, &g, err, sizeof err) != 0) surge_input_error("%s: %s", model, err);
  model_t m;
  model_init_fused(&m, &g, &backend_ref, 1, model_allow_all, NULL);
  int *sums = xcalloc((size_t)g.n, sizeof *sums), *none = xcalloc((size_t)g.n, sizeof *none), nbn = 0;
  for (int i = 1; i < g.n; i++) nbn += sums[i] = g.l[i].kind == LAYER_BATCHNORM;

  pass_order_t off, bare, on;
  pass_order_build(&off, &g, m.fused, sums, 0);
  pass_order_build(&bare, &g, m.fused, none, 1);
  pass_order_build(&on, &g, m.fused, sums, 1);
  tap_ok(blocking(&g, off.fwd, off.nfwd, 0) && blocking(&g, off.bwd, off.nbwd, 1) &&
             blocking(&g, bare.fwd, bare.nfwd, 0) && blocking(&g, bare.bwd, bare.nbwd, 1),
         "%s (%d nodes, %d batch norms): without overlap, and with it but no node summing, the blocking order", model,
         g.n, nbn);
  char why[200] = "";
  int ok = check_pass(&g, m.fused, sums, 1, on.fwd, on.nfwd, 0, why, sizeof why) == 0 &&
           check_pass(&g, m.fused, sums, 1, on.bwd, on.nbwd, 1, why, sizeof why) == 0;
  int fo = overlapped(on.fwd, on.nfwd), bo = overlapped(on.bwd, on.nbwd);
  tap_ok(ok, "%s, overlap: both passes keep the order's promises%s%s; sums with another node started while in flight: "
             "forward %d, backward %d of %d", model, ok ? "" : ": ", why, fo, bo, nbn);
  if (strcmp(model, "vgg16") != 0)
    tap_ok(fo > 0 && bo > 0, "%s: some sums overlap another node in each pass (forward %d, backward %d)", model, fo, bo);
  if (strcmp(model, "resnet18") == 0) check_mutations(&g, m.fused, &off);
  pass_order_free(&off);
  pass_order_free(&bare);
  pass_order_free(&on);
  free(sums);
  free(none);
  model_free(&m);
  graph_free(&g);
}

int main(void) {
  check_model("resnet18", "none");
  check_model("resnet50", "none");
  check_model("inception-v3", "none");
  check_model("vgg16", "batchnorm");
  return tap_done();
}
