#include "burst/profiler.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "io/options.h"
#include "nn/zoo.h"

int burst_option_int(const char *option, const char *text, int min) {
  return burst_option_int_in(option, text, min, INT32_MAX);
}

int burst_option_int_in(const char *option, const char *text, int min, int max) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (*text == 0 || *end || errno || v < min || v > max) {
    if (max == INT32_MAX) surge_input_error("%s %s: expected an integer >= %d", option, text, min);
    surge_input_error("%s %s: expected an integer from %d to %d", option, text, min, max);
  }
  return (int)v;
}

dataset_t *burst_deck_graph(const config_t *cfg, const deck_t *deck, graph_t *g) {
  dataset_t *ds = dataset_open(data_opts_of(cfg));
  zoo_build_of(cfg, deck, ds, g);
  return ds;
}

void burst_measured_init(burst_measured_t *out, const graph_t *g, const char *model, const char *backend,
                         int global_batch, int ranks, burst_ranks_policy_t policy, int profiled_ranks, int warmup,
                         int repeats) {
  memset(out, 0, sizeof *out);
  snprintf(out->model, sizeof out->model, "%s", model);
  snprintf(out->backend, sizeof out->backend, "%s", backend);
  out->fingerprint = burst_graph_fingerprint(g);
  out->global_batch = global_batch;
  out->ranks = ranks;
  out->profiled_ranks = profiled_ranks;
  out->warmup = warmup;
  out->repeats = repeats;
  burst_opts_t o = {.ranks = ranks, .batch = global_batch, .amp = BURST_NO_LIMIT, .policy = policy};
  out->batch = xcalloc((size_t)(ranks < global_batch ? ranks : global_batch) + 1, sizeof *out->batch);
  out->nbatch = burst_profile_batches(&o, out->batch);
  size_t cells = surge_mul_size((size_t)g->n, (size_t)out->nbatch, "profile table");
  out->median_us = xcalloc(cells, sizeof *out->median_us);
  out->spread_us = xcalloc(cells, sizeof *out->spread_us);
}

void burst_measured_free(burst_measured_t *out) {
  free(out->batch);
  free(out->median_us);
  free(out->spread_us);
  memset(out, 0, sizeof *out);
}

void burst_measure_prepare(model_t *m, const dataset_t *ds, int batch) {
  size_t xs = shape_size(dataset_sample_shape(ds)), ys = (size_t)dataset_targets_per_sample(ds);
  uint64_t n = dataset_size(ds, SPLIT_TRAIN);
  uint64_t *ids = xcalloc((size_t)batch, sizeof *ids);
  for (int i = 0; i < batch; i++) ids[i] = (uint64_t)i % n;
  float *x = xcalloc(surge_mul_size((size_t)batch, xs, "profile input"), sizeof *x);
  float *y = xcalloc(surge_mul_size((size_t)batch, ys, "profile targets"), sizeof *y);
  dataset_get(ds, SPLIT_TRAIN, ids, batch, x, y);
  model_set_batch(m, x, y, batch);
  model_zero_grads(m);
  model_forward(m, batch);
  double targets = (double)batch * (double)m->g->targets_per_sample;
  model_loss(m, 0, batch, (float)(1.0 / targets));
  model_backward(m, batch); /* every activation gradient holds a real value before the timing */
  free(ids);
  free(x);
  free(y);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_sorted(const double *v, int n) { return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]); }

typedef enum { PASS_ZERO, PASS_FORWARD, PASS_BACKWARD } pass_t;

/* Microseconds node i's part of a pass takes at batch b, from an idle device to its end (a GPU
 * queues the work). */
static double timed_pass(model_t *m, pass_t pass, int i, int b) {
  m->be->synchronize();
  double t0 = surge_now();
  if (pass == PASS_ZERO) model_zero_act_grad(m, i, 0, b);
  else if (pass == PASS_FORWARD) model_forward_node(m, i, 0, b);
  else model_backward_node(m, i, 0, b);
  m->be->synchronize();
  return (surge_now() - t0) * 1e6;
}

/* Each node's time at each batch, measured in step order as a step meets it: its output gradient
 * zeroed (once a step, before the passes), its forward inside a whole forward pass, its backward
 * inside a whole backward pass. Timing a node alone, repeated back to back, found it in warm caches
 * that a step does not leave it: runs took about 10% longer than such a profile said (doc/sim.md). */
void burst_measure_compute(model_t *m, comm_t *world, burst_measured_t *out) {
  const graph_t *g = m->g;
  size_t cells = surge_mul_size((size_t)g->n, (size_t)out->nbatch, "profile table"), R = (size_t)out->repeats;
  double *t = xcalloc(surge_mul_size(cells, R, "profile timings"), sizeof *t); /* [node][batch][repeat] */
  double *sorted = xcalloc(R, sizeof *sorted);
  double targets_per_sample = (double)g->targets_per_sample;
  for (int r = -out->warmup; r < out->repeats; r++)
    for (int k = 0; k < out->nbatch; k++) {
      int b = out->batch[k];
      /* node i's cell of this batch and repeat (warm-up repeats are timed, not kept) */
      double scratch = 0, *cell0 = r < 0 ? NULL : t + (size_t)k * R + (size_t)r;
      size_t node_stride = (size_t)out->nbatch * R;
#define CELL(i) (*(cell0 ? cell0 + (size_t)(i) * node_stride : &scratch))
      for (int i = 1; i < g->n; i++) CELL(i) = timed_pass(m, PASS_ZERO, i, b);
      for (int i = 1; i < g->n; i++) CELL(i) += timed_pass(m, PASS_FORWARD, i, b);
      model_loss(m, 0, b, (float)(1.0 / ((double)b * targets_per_sample)));
      for (int i = g->n - 1; i >= 1; i--) CELL(i) += timed_pass(m, PASS_BACKWARD, i, b);
#undef CELL
    }
  for (size_t c = 0; c < cells; c++) {
    if (g->l[c / (size_t)out->nbatch].kind == LAYER_INPUT) continue; /* costs nothing: 0 */
    memcpy(sorted, t + c * R, R * sizeof *sorted);
    qsort(sorted, R, sizeof *sorted, cmp_double);
    out->median_us[c] = median_sorted(sorted, out->repeats);
    out->spread_us[c] = sorted[R - 1] - sorted[0];
  }
  free(sorted);
  free(t);
  comm_allreduce_max_double(world, out->median_us, (int)cells, TRAFFIC_OTHER);
  comm_allreduce_max_double(world, out->spread_us, (int)cells, TRAFFIC_OTHER);
}

typedef struct step_piece {
  model_t *m;
  const dataset_t *ds;
  optim_t *opt;
  comm_t *world;
  int batch, clips;
  uint64_t *ids;
  float *x, *y;
} step_piece_t;

/* The median of `repeats` results of measure(arg) (microseconds it timed), after `warmup` calls
 * whose results are dropped. */
static double median_us_of(double (*measure)(step_piece_t *), step_piece_t *arg, int warmup, int repeats) {
  double *t = xcalloc((size_t)repeats, sizeof *t);
  for (int r = -warmup; r < repeats; r++) {
    double us = measure(arg);
    if (r >= 0) t[r] = us;
  }
  qsort(t, (size_t)repeats, sizeof *t, cmp_double);
  double med = median_sorted(t, repeats);
  free(t);
  return med;
}

static double us_since(double t0) { return (surge_now() - t0) * 1e6; }

static double fetch_us(step_piece_t *s) {
  double t0 = surge_now();
  dataset_get(s->ds, SPLIT_TRAIN, s->ids, s->batch, s->x, s->y);
  model_set_batch(s->m, s->x, s->y, s->batch);
  return us_since(t0);
}

static double loss_us(step_piece_t *s) {
  double t0 = surge_now();
  model_loss(s->m, 0, s->batch, 1.0f / (float)s->batch);
  return us_since(t0);
}

/* The per-step work around the passes, in a step's order and so in the caches a step leaves it:
 * the gradients zeroed before the forward pass, then (after a forward and backward pass, untimed)
 * the squared gradient norm the trainer takes every step (for the log and clipping: a pass of its
 * own where the deck clips, else the update's), the update and the metrics' reduction. Timed back
 * to back instead, these found their slabs in cache (mlp on 2 ranks: 493 us a step against ~530
 * in step order). */
static double update_us(step_piece_t *s) {
  model_t *m = s->m;
  double t0 = surge_now();
  m->be->fill(m->grads, m->g->params.total, 0.0f);
  m->be->synchronize();
  double zero = us_since(t0);
  model_forward(m, s->batch);
  model_loss(m, 0, s->batch, 1.0f / (float)s->batch);
  model_backward(m, s->batch);
  /* the norm's accumulator and the clipping factor in backend memory, as the trainer keeps them */
  double *sumsq = (double *)(void *)m->be->alloc(4);
  float *gs = (float *)(void *)(sumsq + 1);
  m->be->synchronize();
  comm_barrier(s->world); /* the ranks' passes end apart (more so on shared cores): their wait for each
                           * other belongs to the passes, not to the metrics reduction timed below */
  t0 = surge_now();
  if (s->clips) { /* the norm first, the factor from it; lr 0: the work of a step, parameters kept */
    m->be->sumsq_add(m->grads, m->g->params.total, sumsq);
    m->be->clip_factor(sumsq, 1.0, gs);
    optim_step_part(s->opt, m->params, m->grads, 0.0f, gs, 0, s->opt->n);
  } else {
    optim_step_part_sumsq(s->opt, m->params, m->grads, 0.0f, 0, m->g->params.total, NULL, 0, sumsq);
  }
  double metrics[3] = {0, 0, 0};
  comm_allreduce_sum_double(s->world, metrics, 3, TRAFFIC_OTHER);
  m->be->synchronize();
  double us = zero + us_since(t0);
  m->be->free((float *)(void *)sumsq);
  return us;
}

void burst_measure_step(model_t *m, const dataset_t *ds, optim_t *opt, int clips, comm_t *world,
                        burst_measured_t *out) {
  int b = out->batch[0];
  uint64_t n = dataset_size(ds, SPLIT_TRAIN);
  size_t xs = shape_size(dataset_sample_shape(ds)), ys = (size_t)dataset_targets_per_sample(ds);
  step_piece_t s = {.m = m, .ds = ds, .opt = opt, .world = world, .batch = b, .clips = clips};
  s.ids = xcalloc((size_t)b, sizeof *s.ids);
  for (int i = 0; i < b; i++) s.ids[i] = (uint64_t)i % n;
  s.x = xcalloc(surge_mul_size((size_t)b, xs, "profile input"), sizeof *s.x);
  s.y = xcalloc(surge_mul_size((size_t)b, ys, "profile targets"), sizeof *s.y);
  double v[3] = {median_us_of(fetch_us, &s, out->warmup, out->repeats) / b,
                 median_us_of(loss_us, &s, out->warmup, out->repeats) / b,
                 median_us_of(update_us, &s, out->warmup, out->repeats)};
  comm_allreduce_max_double(world, v, 3, TRAFFIC_OTHER);
  out->step = (burst_step_costs_t){.data_us_per_sample = v[0], .loss_us_per_sample = v[1], .step_us = v[2]};
  free(s.ids);
  free(s.x);
  free(s.y);
}

int burst_fit_alpha_beta(const burst_net_samples_t *s, double *alpha_us, double *slope_us_per_byte) {
  if (s->n < 2 || !(s->us[s->n - 1] > 0) || !(s->bytes[s->n - 1] > s->bytes[0])) return -1;
  /* plain least squares over the bulk sizes: their times are large, so absolute errors are fine */
  int first = s->n > BURST_FIT_BULK ? s->n - BURST_FIT_BULK : 0, k = s->n - first;
  double mx = 0, my = 0, sxx = 0, sxy = 0;
  for (int i = first; i < s->n; i++) {
    mx += s->bytes[i] / k;
    my += s->us[i] / k;
  }
  for (int i = first; i < s->n; i++) {
    sxx += (s->bytes[i] - mx) * (s->bytes[i] - mx);
    sxy += (s->bytes[i] - mx) * (s->us[i] - my);
  }
  double slope = sxx > 0 ? sxy / sxx : 0;
  if (!(slope > 0) || !isfinite(slope)) slope = s->us[s->n - 1] / s->bytes[s->n - 1]; /* noise */
  double alpha = s->us[0] - slope * s->bytes[0];
  *alpha_us = alpha > 0 && isfinite(alpha) ? alpha : 0;
  *slope_us_per_byte = slope;
  return 0;
}

/* Message sizes of the network measurements, in floats: 4 bytes .. 4 MiB. */
static const size_t net_floats[] = {1, 64, 1024, 16384, 65536, 262144, 1048576};
#define NET_NSIZES ((int)(sizeof net_floats / sizeof net_floats[0]))
#define NET_WARMUP 2


/* One ping-pong between rank 0 and rank peer (the others do nothing): seconds of the round trip on
 * rank 0. */
static double ping_pong(comm_t *w, int peer, float *buf, size_t n) {
  comm_request_t r;
  double t0 = surge_now();
  if (w->rank == 0) {
    comm_isend(w, buf, n, peer, 1, TRAFFIC_OTHER, &r);
    comm_waitall(w, &r, 1, TRAFFIC_OTHER);
    comm_irecv(w, buf, n, peer, 2, TRAFFIC_OTHER, &r);
    comm_waitall(w, &r, 1, TRAFFIC_OTHER);
  } else if (w->rank == peer) {
    comm_irecv(w, buf, n, 0, 1, TRAFFIC_OTHER, &r);
    comm_waitall(w, &r, 1, TRAFFIC_OTHER);
    comm_isend(w, buf, n, 0, 2, TRAFFIC_OTHER, &r);
    comm_waitall(w, &r, 1, TRAFFIC_OTHER);
  }
  return surge_now() - t0;
}

static double allreduce_once(comm_t *w, int peer, float *buf, size_t n) {
  (void)peer;
  comm_barrier(w);
  double t0 = surge_now();
  comm_allreduce_sum(w, buf, n, TRAFFIC_OTHER);
  return surge_now() - t0;
}

/* Median time in us of `repeats` runs of op per size (after warm-up), as rank 0 sees it (broadcast);
 * one_way halves it (a ping-pong's round trip). */
static void measure_sizes(comm_t *w, int repeats, double (*op)(comm_t *, int, float *, size_t), int peer,
                          int one_way, burst_net_samples_t *s) {
  float *buf = xcalloc(net_floats[NET_NSIZES - 1], sizeof *buf);
  double *t = xcalloc((size_t)repeats, sizeof *t);
  s->n = NET_NSIZES;
  for (int i = 0; i < NET_NSIZES; i++) {
    comm_barrier(w);
    for (int r = -NET_WARMUP; r < repeats; r++) {
      double dt = op(w, peer, buf, net_floats[i]);
      if (r >= 0) t[r] = dt * 1e6 / (one_way ? 2 : 1);
    }
    qsort(t, (size_t)repeats, sizeof *t, cmp_double);
    s->bytes[i] = (double)(net_floats[i] * sizeof(float));
    s->us[i] = median_sorted(t, repeats);
  }
  comm_bcast(w, s->us, sizeof s->us, 0, TRAFFIC_OTHER);
  free(t);
  free(buf);
}

void burst_measure_network(comm_t *world, int repeats, burst_measured_t *out) {
  if (world->size < 2) {
    out->net_measured = 0;
    out->net = (burst_net_t){.p2p_alpha_us = BURST_DEFAULT_ALPHA_US, .p2p_bytes_per_us = BURST_DEFAULT_BYTES_PER_US,
                             .ar_alpha_us = BURST_DEFAULT_ALPHA_US, .ar_bytes_per_us = BURST_DEFAULT_BYTES_PER_US};
    return;
  }
  /* the point-to-point partner: a rank on another node where there is one, since transfers between
   * nodes are the slow ones a plan must avoid; else rank 1 */
  const int *node = world->node;
  out->p2p_peer = 1;
  for (int r = world->size - 1; r > 0; r--)
    if (node[r] != node[0]) out->p2p_peer = r;
  out->p2p_other_node = node[out->p2p_peer] != node[0];
  measure_sizes(world, repeats, ping_pong, out->p2p_peer, 1, &out->p2p);
  measure_sizes(world, repeats, allreduce_once, 0, 0, &out->ar);
  double alpha, slope;
  if (burst_fit_alpha_beta(&out->p2p, &alpha, &slope) != 0)
    surge_runtime_error("surge-profile: the point-to-point measurements are unusable (a zero time for the "
                        "largest message)");
  out->net.p2p_alpha_us = alpha;
  out->net.p2p_bytes_per_us = 1.0 / slope;
  if (burst_fit_alpha_beta(&out->ar, &alpha, &slope) != 0)
    surge_runtime_error("surge-profile: the allreduce measurements are unusable (a zero time for the largest "
                        "message)");
  /* the planner's model of one allreduce over n ranks: 2 ceil(log2 n) alpha + 2 (n-1)/n bytes / beta */
  int n = world->size;
  double steps = 2 * ceil(log2((double)n));
  out->net.ar_alpha_us = alpha / steps;
  out->net.ar_bytes_per_us = 2.0 * (n - 1) / n / slope;
  out->net_measured = 1;
}

void burst_measured_print(FILE *f, const graph_t *g, const burst_measured_t *ms) {
  fprintf(f, "burst profile: model %s (fingerprint %016llx), global batch %d, planned for %d ranks, measured "
             "on %d, backend %s, %d warm-up + %d repeats\n",
          ms->model, (unsigned long long)ms->fingerprint, ms->global_batch, ms->ranks, ms->profiled_ranks,
          ms->backend, ms->warmup, ms->repeats);
  fprintf(f, "forward+backward per node, median us (spread = max - min) at per-rank batch b:\n");
  fprintf(f, "node  %-24s %-12s", "name", "kind");
  for (int k = 0; k < ms->nbatch; k++) fprintf(f, " %12s%-6d %9s", "b=", ms->batch[k], "spread");
  fprintf(f, "\n");
  for (int i = 0; i < g->n; i++) {
    fprintf(f, "%4d  %-24s %-12s", i, g->l[i].name, layer_kind_name(g->l[i].kind));
    for (int k = 0; k < ms->nbatch; k++)
      fprintf(f, " %18.3f %9.3f", ms->median_us[i * ms->nbatch + k], ms->spread_us[i * ms->nbatch + k]);
    fprintf(f, "\n");
  }
  fprintf(f, "rest of a step: data %.3f us and loss %.3f us per sample, optimizer and metrics %.3f us per step\n",
          ms->step.data_us_per_sample, ms->step.loss_us_per_sample, ms->step.step_us);
  fprintf(f, "network (%s): point-to-point %.3f us + bytes / %.1f bytes/us; allreduce step %.3f us, %.1f "
             "bytes/us\n",
          ms->net_measured ? "measured" : "NOT MEASURED on 1 rank: defaults", ms->net.p2p_alpha_us,
          ms->net.p2p_bytes_per_us, ms->net.ar_alpha_us, ms->net.ar_bytes_per_us);
  if (ms->net_measured)
    fprintf(f, "point-to-point measured between ranks 0 and %d (%s node)\n", ms->p2p_peer,
            ms->p2p_other_node ? "another" : "the same");
}

void burst_check_batch_ranks(const deck_t *deck, long batch, int ranks, const char *doing) {
  if (batch < ranks)
    deck_key_error(deck, "train.global_batch", "%ld is smaller than the %d ranks %s (hint: surge-train gives every "
                   "rank at least one sample: raise global_batch or use fewer ranks)", batch, ranks, doing);
}

void burst_profile_run(const config_t *cfg, const deck_t *deck, const backend_t *be, comm_t *world,
                       const burst_profile_opts_t *o, graph_t *g, burst_measured_t *ms) {
  optim_check_trainable(cfg, deck);
  dataset_t *ds = burst_deck_graph(cfg, deck, g);
  burst_measured_init(ms, g, cfg->zoo, backend_deck(cfg)->name, (int)cfg->global_batch, o->ranks, o->policy,
                      world->size, o->warmup, o->repeats);
  snprintf(ms->precision, sizeof ms->precision, "%s", backend_deck(cfg)->precision);
  snprintf(ms->optimizer, sizeof ms->optimizer, "%s", optim_opts(cfg)->name);
  /* the largest per-rank batch (the whole batch on one rank), as the executor runs it: each fusable
   * ReLU fused, and a linear's GELU (its node's row holds the pair's cost, the ReLU's or GELU's the
   * rest, and the planner keeps the two on one rank set: bgraph_node_t.tied), and a gradient a conv2d
   * overwrites not zeroed (model_t.writer). Never recomputed (g.recompute none): surge-plan adds the
   * re-run forwards of the deck's [train] recompute to these rows (burst_ctx_comp_us), so one profile
   * serves every mode. */
  model_t m;
  model_init_fused(&m, g, be, ms->batch[0], model_allow_all, NULL);
  model_init_params(&m, cfg->seed);
  burst_measure_prepare(&m, ds, ms->batch[0]);
  burst_measure_compute(&m, world, ms);
  optim_t optimizer;
  optim_init(&optimizer, optim_opts_of(cfg), be, g->params.total);
  burst_measure_step(&m, ds, &optimizer, optim_opts(cfg)->clip_norm > 0, world, ms);
  optim_free(&optimizer);
  burst_measure_network(world, o->repeats, ms);
  model_free(&m);
  dataset_close(ds);
}
