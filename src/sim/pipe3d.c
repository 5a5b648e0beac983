/* One iteration of a 3D layout (Megatron-LM's, as Optimus-CC modifies it; doc/sim.md, "3D
 * parallelism"): tensor x pipeline x data parallelism over alpha-beta links.
 *
 * Stages: the graph's cut points (nodes no edge jumps over) split it into units; the units are
 * shared out among pp contiguous stages so that the slowest stage is as fast as possible.
 * A stage's time per micro-batch: its nodes' forward+backward at the micro-batch size divided by
 * tp (fwd_fraction of it forward), plus tensor parallelism's allreduces: Megatron pairs a
 * column-parallel linear with a row-parallel one and allreduces the row-parallel one's output
 * forward and its input gradient backward, so every second "linear" node in graph order costs one
 * ring allreduce of its output each way on the tp link (2 (tp-1) alpha + 2 (tp-1)/tp bytes / beta).
 * A pipeline transfer across a boundary: each tp rank sends its 1/tp share on the pp link, then the
 * receivers all-gather it on the tp link; non-blocking, as the trainer's (the sender computes on
 * while it goes), one at a time on each boundary's link in each direction. Compressed
 * backward transfers send bytes / cb_ratio on the pp link (all, or with cb_epilogue_only the last
 * pp - s micro-batches from stage s, the ones the cool-down waits on).
 * Schedule: non-interleaved 1F1B: stage s runs min(pp - s - 1, M) forwards, then alternates a
 * forward and a backward, then the remaining backwards. After its last backward a stage allreduces
 * its gradients (parameter bytes / tp) over dp ranks on the dp link (a ring), divided by dp_ratio on
 * stages 0 .. dp_stages-1 when compressed, then runs the optimizer on its share of the parameters
 * (the profile's per-step cost in proportion to the stage's parameter bytes). The iteration ends
 * with the slowest stage. Not modelled: the embedding synchronisation, compression's own compute. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sim/sim.h"

/* Nodes no edge jumps over, in order (node 0 and the last included). */
static int cut_points(const bgraph_t *g, int *cut) {
  int n = 0, reach = 0;
  int *far = xcalloc((size_t)g->n, sizeof *far); /* far[u]: the last consumer of u */
  for (int v = 1; v < g->n; v++)
    for (int k = 0; k < g->v[v].nin; k++)
      if (v > far[g->v[v].in[k]]) far[g->v[v].in[k]] = v;
  for (int v = 0; v < g->n; v++) {
    if (reach <= v) cut[n++] = v;
    if (far[v] > reach) reach = far[v];
  }
  free(far);
  return n;
}

static double ring_allreduce(const sim_link_t *l, int n, double bytes) {
  if (n <= 1 || bytes <= 0) return 0;
  return 2.0 * (n - 1) * l->alpha_us + 2.0 * (n - 1) / n * bytes / l->bytes_per_us;
}

static double allgather(const sim_link_t *l, int n, double bytes) {
  if (n <= 1) return 0;
  return (n - 1) * l->alpha_us + (double)(n - 1) / n * bytes / l->bytes_per_us;
}

static void check_link(const sim_link_t *l, const char *name) {
  if (!isfinite(l->alpha_us) || l->alpha_us < 0 || l->alpha_us > BURST_MAX_LATENCY_US ||
      !(l->bytes_per_us >= BURST_MIN_BYTES_PER_US && l->bytes_per_us <= BURST_MAX_BYTES_PER_US))
    surge_input_error("--%s-link %g:%g: the latency must lie in [0, %g] us and the bandwidth in [%g, %g] bytes/us",
                      name, l->alpha_us, l->bytes_per_us, BURST_MAX_LATENCY_US, BURST_MIN_BYTES_PER_US,
                      BURST_MAX_BYTES_PER_US);
}

void sim3d_check(const sim3d_opts_t *o, const bgraph_t *g) {
  if (o->tp < 1 || o->pp < 1 || o->dp < 1) surge_input_error("--tp, --pp and --dp must be at least 1");
  if ((double)o->tp * o->pp * o->dp > SIM3D_MAX_RANKS)
    surge_input_error("--tp %d x --pp %d x --dp %d: at most %d ranks", o->tp, o->pp, o->dp, SIM3D_MAX_RANKS);
  if (o->micro_batches < 1 || o->micro_batch < 1) surge_input_error("--micro-batches and --micro-batch must be at least 1");
  if ((double)o->pp * o->micro_batches > SIM3D_MAX_PASSES)
    surge_input_error("--pp %d x --micro-batches %d: at most %d forward passes an iteration are simulated", o->pp,
                      o->micro_batches, SIM3D_MAX_PASSES);
  if ((double)o->dp * o->micro_batches * o->micro_batch > INT_MAX)
    surge_input_error("--dp %d x --micro-batches %d x --micro-batch %d: a global batch beyond %d", o->dp,
                      o->micro_batches, o->micro_batch, INT_MAX);
  if (o->dp_stages > o->pp) surge_input_error("--dp-stages %d: the pipeline has %d stages", o->dp_stages, o->pp);
  if (!(o->fwd_fraction > 0 && o->fwd_fraction < 1)) surge_input_error("forward fraction %g must lie in (0, 1)", o->fwd_fraction);
  if (!(o->cb_ratio >= 1) || !(o->dp_ratio >= 1) || !isfinite(o->cb_ratio) || !isfinite(o->dp_ratio))
    surge_input_error("--cb-ratio and --dp-ratio must be finite numbers >= 1 (bytes before over after)");
  if (o->dp_stages < 0) surge_input_error("--dp-stages must be >= 0");
  if (o->pp > SIM3D_MAX_PP) surge_input_error("--pp %d: at most %d stages", o->pp, SIM3D_MAX_PP);
  check_link(&o->tp_link, "tp");
  check_link(&o->pp_link, "pp");
  check_link(&o->dp_link, "dp");
  int *cut = xmalloc((size_t)g->n * sizeof *cut);
  int units = cut_points(g, cut) - 1;
  free(cut);
  if (o->pp > units)
    surge_input_error("--pp %d: the graph %s has only %d places to cut it into stages", o->pp, g->source, units);
}

/* The first split point j in [lo, c) at which the last stage's time pre[i] - pre[j] is at most m
 * (pre[i] - pre[c - 1] is): it falls as j grows, so search leftwards by doubling steps, then halve. */
static int first_at_most(const double *pre, int i, int lo, int c, double m) {
  int at = c - 1, step = 1;
  while (at - step >= lo && pre[i] - pre[at - step] <= m) at -= step, step *= 2;
  int a = at - step > lo ? at - step : lo, b = at;
  while (a < b) {
    int mid = a + (b - a) / 2;
    if (pre[i] - pre[mid] <= m) b = mid;
    else a = mid + 1;
  }
  return a;
}

void sim3d_partition(const double *unit, int U, int pp, int *from) {
  /* best(i, s): the least slowest stage of the first i units in s stages, = min over j of
   * max(best(j, s - 1), pre[i] - pre[j]); the first term grows with j and the second falls, so the
   * minimum sits where they cross, and the crossing moves right as i grows: one pointer per row.
   * arg(i, s): the first j attaining it (the ties of the plain O(pp U^2) programme). */
  size_t cells = surge_mul_size((size_t)U + 1, (size_t)pp + 1, "the stage partition");
  int *arg = xmalloc(surge_mul_size(cells, sizeof *arg, "the stage partition"));
  double *pre = xmalloc((size_t)(U + 1) * sizeof *pre), *prev = xmalloc((size_t)(U + 1) * sizeof *prev);
  double *cur = xmalloc((size_t)(U + 1) * sizeof *cur);
  pre[0] = 0;
  for (int u = 0; u < U; u++) pre[u + 1] = pre[u] + unit[u];
  for (int i = 0; i <= U; i++) prev[i] = i ? HUGE_VAL : 0;
#define A(i, s) arg[(size_t)(i) * (pp + 1) + (s)]
  for (int s = 1; s <= pp; s++) {
    for (int i = 0; i < s && i <= U; i++) cur[i] = HUGE_VAL;
    int c = s - 1; /* the first j with best(j, s - 1) >= pre[i] - pre[j] (i: none) */
    for (int i = s; i <= U; i++) {
      while (c < i && prev[c] < pre[i] - pre[c]) c++;
      double right = c < i ? prev[c] : HUGE_VAL, left = c > s - 1 ? pre[i] - pre[c - 1] : HUGE_VAL;
      if (c > s - 1 && left <= right) {
        cur[i] = left;
        A(i, s) = first_at_most(pre, i, s - 1, c, left);
      } else {
        cur[i] = right;
        A(i, s) = c;
      }
    }
    double *t = prev;
    prev = cur, cur = t;
  }
  from[pp] = U;
  for (int s = pp; s >= 1; s--) from[s - 1] = A(from[s], s);
#undef A
  free(cur);
  free(prev);
  free(pre);
  free(arg);
}

/* The partition the user gave as nodes per stage: each stage must end where a unit ends. */
static void given_partition(const bgraph_t *g, const int *nodes, int U, const sim3d_opts_t *o, int *from) {
  int u = 0;
  from[0] = 0;
  for (int s = 0; s < o->pp; s++) {
    int want = o->stage_nodes[s], got = 0;
    while (u < U && got < want) got += nodes[u++];
    if (got == want && (s < o->pp - 1 || u == U)) {
      from[s + 1] = u;
      continue;
    }
    char ends[256] = "";
    for (int x = 0, sum = 0; x < U; x++) { /* the node counts at which a stage may end */
      sum += nodes[x];
      size_t len = strlen(ends);
      if (len + 16 < sizeof ends) snprintf(ends + len, sizeof ends - len, "%s%d", x ? " " : "", sum);
    }
    surge_input_error("--stage-nodes: stage %d does not end where the graph %s can be cut (the nodes after the "
                      "input, counted from the first, can be cut after: %s)", s, g->source, ends);
  }
}

/* The graph cut into units (unit u = nodes (cut[u], cut[u+1]], the nodes after a cut point up to the
 * next), each with its costs at one micro-batch on one tensor-parallel rank. */
typedef struct units {
  int U, *cut, *nodes;
  double *comp;  /* forward + backward compute */
  double *tpc;   /* tensor-parallel allreduces, per pass */
  double *grad;  /* parameter-gradient bytes */
  double *rerun; /* the forward a backward re-runs first (recompute) */
  double *cost;  /* what the partition balances: comp + both passes' allreduces + rerun */
} units_t;

static void units_of(const bgraph_t *g, const burst_profile_t *p, const sim3d_opts_t *o, units_t *x) {
  const int tp = o->tp;
  x->cut = xmalloc((size_t)g->n * sizeof *x->cut);
  x->U = cut_points(g, x->cut) - 1;
  const size_t U = (size_t)x->U;
  x->comp = xcalloc(U, sizeof *x->comp), x->tpc = xcalloc(U, sizeof *x->tpc);
  x->grad = xcalloc(U, sizeof *x->grad), x->cost = xcalloc(U, sizeof *x->cost);
  x->rerun = xcalloc(U, sizeof *x->rerun), x->nodes = xcalloc(U, sizeof *x->nodes);
  int linear = 0;
  for (int u = 0; u < x->U; u++)
    for (int v = x->cut[u] + 1; v <= x->cut[u + 1]; v++) {
      double pass = burst_profile_pass_us(p, g, v, o->micro_batch) / tp; /* the optimizer: opt_us below */
      x->comp[u] += pass;
      x->grad[u] += g->v[v].grad_bytes / tp;
      x->nodes[u]++;
      double sum = 0;
      if (strcmp(g->v[v].kind, "linear") == 0 && linear++ % 2 == 1)
        x->tpc[u] += sum = ring_allreduce(&o->tp_link, tp, g->v[v].act_bytes * o->micro_batch);
      /* block: a unit (the nodes after a cut point up to the next: a residual branch and its add)
       * keeps its last node's output only, so a gpt block's two units re-run all but its two adds
       * (the trainer re-runs the first add too: microseconds); attention: the attention core is
       * re-run, its projection kept */
      if ((o->recompute == RECOMPUTE_BLOCK && v < x->cut[u + 1]) ||
          (o->recompute == RECOMPUTE_ATTENTION && strcmp(g->v[v].kind, "attention") == 0))
        x->rerun[u] += o->fwd_fraction * pass + sum;
    }
  for (int u = 0; u < x->U; u++) x->cost[u] = x->comp[u] + 2 * x->tpc[u] + x->rerun[u];
}

static void units_free(units_t *x) {
  free(x->cut), free(x->nodes), free(x->comp), free(x->tpc), free(x->grad), free(x->rerun), free(x->cost);
}

/* Each stage's times into r (stage s holds units [from[s], from[s+1])): its forward and backward per
 * micro-batch, their re-runs and tensor-parallel allreduces, its data-parallel allreduce (compressed
 * on the first dp_stages when `compressed`) and optimizer share; the dp traffic into r->bytes_dp. */
static void stage_times(const burst_profile_t *p, const sim3d_opts_t *o, int compressed, const units_t *x,
                        const int *from, sim3d_result_t *r) {
  const int pp = o->pp;
  r->nstage = pp;
  r->stage_nodes = xcalloc((size_t)pp, sizeof *r->stage_nodes);
  r->fwd_us = xcalloc((size_t)pp, sizeof *r->fwd_us);
  r->bwd_us = xcalloc((size_t)pp, sizeof *r->bwd_us);
  r->rerun_us = xcalloc((size_t)pp, sizeof *r->rerun_us);
  r->tp_us = xcalloc((size_t)pp, sizeof *r->tp_us);
  r->dp_us = xcalloc((size_t)pp, sizeof *r->dp_us);
  r->opt_us = xcalloc((size_t)pp, sizeof *r->opt_us);
  r->stage_end_us = xcalloc((size_t)pp, sizeof *r->stage_end_us);
  double all_grad = 0;
  for (int u = 0; u < x->U; u++) all_grad += x->grad[u];
  for (int s = 0; s < pp; s++) {
    double c = 0, t = 0, gb = 0, re = 0;
    for (int u = from[s]; u < from[s + 1]; u++)
      c += x->comp[u], t += x->tpc[u], gb += x->grad[u], re += x->rerun[u], r->stage_nodes[s] += x->nodes[u];
    r->fwd_us[s] = o->fwd_fraction * c + t;
    r->bwd_us[s] = (1 - o->fwd_fraction) * c + t + re;
    r->rerun_us[s] = re;
    r->tp_us[s] = 2 * t;
    double ratio = compressed && s < o->dp_stages ? o->dp_ratio : 1;
    r->dp_us[s] = ring_allreduce(&o->dp_link, o->dp, gb / ratio);
    r->opt_us[s] = all_grad > 0 ? p->step.step_us * gb / all_grad / o->tp : 0; /* its share of the parameters */
    r->bytes_dp += o->dp > 1 ? 2.0 * (o->dp - 1) / o->dp * gb / ratio * o->tp : 0;
  }
}

/* The transfers across each boundary s -> s+1 on the pp link (and the tp allgather after them): the
 * bytes leaving stage s forward, and their time forward, back, and back compressed. */
typedef struct boundaries {
  double *bytes, *fwd_us, *bwd_us, *bwd_compressed_us;
} boundaries_t;

static void boundaries_of(const bgraph_t *g, const sim3d_opts_t *o, const units_t *x, const int *from,
                          boundaries_t *b) {
  const int pp = o->pp, tp = o->tp;
  b->bytes = xcalloc((size_t)pp, sizeof *b->bytes);
  b->fwd_us = xcalloc((size_t)pp, sizeof *b->fwd_us), b->bwd_us = xcalloc((size_t)pp, sizeof *b->bwd_us);
  b->bwd_compressed_us = xcalloc((size_t)pp, sizeof *b->bwd_compressed_us);
  for (int s = 0; s < pp; s++) b->bytes[s] = g->v[x->cut[from[s + 1]]].act_bytes * o->micro_batch;
  for (int s = 0; s + 1 < pp; s++) {
    double X = b->bytes[s];
    b->fwd_us[s] = o->pp_link.alpha_us + X / tp / o->pp_link.bytes_per_us + allgather(&o->tp_link, tp, X);
    b->bwd_us[s] = b->fwd_us[s];
    b->bwd_compressed_us[s] =
        o->pp_link.alpha_us + X / o->cb_ratio / tp / o->pp_link.bytes_per_us + allgather(&o->tp_link, tp, X);
  }
}

static void boundaries_free(boundaries_t *b) {
  free(b->bytes), free(b->fwd_us), free(b->bwd_us), free(b->bwd_compressed_us);
}

/* 1F1B over r's stage times, stage by stage in order, each op when its input has arrived: r->ops, the
 * stages' ends, the pipeline and iteration times, the bubble and the pp traffic. */
static void simulate_1f1b(const sim3d_opts_t *o, int compressed, const boundaries_t *b, sim3d_result_t *r) {
  const int pp = o->pp, M = o->micro_batches;
  r->nops = 2 * pp * M;
  r->ops = xcalloc((size_t)r->nops, sizeof *r->ops);
  int *next = xcalloc((size_t)pp, sizeof *next); /* the stage's next op in its order */
  double *free_at = xcalloc((size_t)pp, sizeof *free_at);   /* the stage's compute is free */
  double *sent_at = xcalloc((size_t)pp, sizeof *sent_at);   /* its sends so far have arrived */
  double *link_up = xcalloc((size_t)pp, sizeof *link_up);   /* link s -> s+1 is free */
  double *link_down = xcalloc((size_t)pp, sizeof *link_down); /* link s -> s-1 is free */
  sim3d_op_t **fwd = xcalloc((size_t)pp * M, sizeof *fwd), **bwd = xcalloc((size_t)pp * M, sizeof *bwd);
  int done = 0;
  while (done < r->nops) {
    int progress = 0;
    for (int s = 0; s < pp; s++) {
      int W = pp - s - 1 < M ? pp - s - 1 : M;
      while (next[s] < 2 * M) {
        int k = next[s], kind, m;
        if (k < W) kind = SIM3D_FWD, m = k;
        else if (k < W + 2 * (M - W)) kind = (k - W) % 2 ? SIM3D_BWD : SIM3D_FWD, m = kind == SIM3D_FWD ? W + (k - W) / 2 : (k - W) / 2;
        else kind = SIM3D_BWD, m = k - M; /* cool-down: micro-batches M - W .. M - 1 */
        double ready;
        if (kind == SIM3D_FWD) {
          if (s > 0 && !fwd[(size_t)(s - 1) * M + m]) break;
          ready = s > 0 ? fwd[(size_t)(s - 1) * M + m]->send_end_us : 0;
        } else {
          if (s + 1 < pp && !bwd[(size_t)(s + 1) * M + m]) break;
          ready = s + 1 < pp ? bwd[(size_t)(s + 1) * M + m]->send_end_us : fwd[(size_t)s * M + m]->end_us;
        }
        sim3d_op_t *op = &r->ops[done++];
        op->stage = s;
        op->mb = m;
        op->kind = kind;
        op->start_us = ready > free_at[s] ? ready : free_at[s];
        op->end_us = op->start_us + (kind == SIM3D_FWD ? r->fwd_us[s] : r->bwd_us[s]);
        double send = 0;
        if (kind == SIM3D_FWD && s + 1 < pp) {
          send = b->fwd_us[s];
          r->bytes_pp += b->bytes[s];
        } else if (kind == SIM3D_BWD && s > 0) {
          op->compressed = compressed && o->cb_ratio > 1 && (!o->cb_epilogue_only || m >= M - (pp - s));
          send = op->compressed ? b->bwd_compressed_us[s - 1] : b->bwd_us[s - 1];
          r->bytes_pp += b->bytes[s - 1] / (op->compressed ? o->cb_ratio : 1);
        }
        double *link = kind == SIM3D_FWD ? &link_up[s] : &link_down[s];
        op->send_end_us = op->end_us;
        if (send > 0) {
          op->send_end_us = (op->end_us > *link ? op->end_us : *link) + send;
          *link = op->send_end_us;
        }
        free_at[s] = op->end_us;
        if (op->send_end_us > sent_at[s]) sent_at[s] = op->send_end_us;
        (kind == SIM3D_FWD ? fwd : bwd)[(size_t)s * M + m] = op;
        next[s]++;
        progress = 1;
      }
    }
    if (!progress) surge_runtime_error("3D simulation: the 1F1B schedule is stuck (a bug)");
  }
  double busy = 0;
  for (int s = 0; s < pp; s++) {
    double end = free_at[s] > sent_at[s] ? free_at[s] : sent_at[s]; /* its compute and its sends */
    r->stage_end_us[s] = end;
    if (end > r->pipeline_us) r->pipeline_us = end;
    if (end + r->dp_us[s] + r->opt_us[s] > r->iter_us) r->iter_us = end + r->dp_us[s] + r->opt_us[s];
    busy += M * (r->fwd_us[s] + r->bwd_us[s]);
  }
  r->bubble = 1 - busy / (pp * r->pipeline_us);
  free(fwd);
  free(bwd);
  free(free_at);
  free(sent_at);
  free(link_up);
  free(link_down);
  free(next);
}

void sim3d_run(const bgraph_t *g, const burst_profile_t *p, const sim3d_opts_t *o, int compressed,
               sim3d_result_t *r) {
  sim3d_check(o, g);
  memset(r, 0, sizeof *r);
  units_t x;
  units_of(g, p, o, &x);
  int *from = xmalloc((size_t)(o->pp + 1) * sizeof *from);
  if (o->stage_nodes[0]) given_partition(g, x.nodes, x.U, o, from);
  else sim3d_partition(x.cost, x.U, o->pp, from);
  stage_times(p, o, compressed, &x, from, r);
  boundaries_t b;
  boundaries_of(g, o, &x, from, &b);
  if (o->pp > 1) {
    r->pp_fwd_us = b.fwd_us[0];
    r->pp_bwd_us = b.bwd_us[0];
    r->pp_bwd_compressed_us = b.bwd_compressed_us[0];
  }
  simulate_1f1b(o, compressed, &b, r);
  boundaries_free(&b);
  free(from);
  units_free(&x);
}

void sim3d_free(sim3d_result_t *r) {
  free(r->stage_nodes);
  free(r->fwd_us);
  free(r->bwd_us);
  free(r->rerun_us);
  free(r->tp_us);
  free(r->dp_us);
  free(r->opt_us);
  free(r->stage_end_us);
  free(r->ops);
  memset(r, 0, sizeof *r);
}
