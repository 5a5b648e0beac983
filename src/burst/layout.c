#include "burst/layout.h"
#include "burst/plan_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/options.h"
#include "burst/executor.h"
#include "burst/options.h"
#include "burst/plan_text.h"
#include "burst/profiler.h"
#include "core/error.h"
#include "core/say.h"
#include "optim/optim.h"
#include "sync/shard.h"
#include "sync/shard_gather.h"

typedef struct burst_layout {
  layout_t base;
  burst_exec_t ex;
  burst_plan_t plan;
  char *plan_text; /* the plan file's text, for the log (burst mode) */
  char note[800];   /* layout_t.note: how dp sums and the micro-batches, where it is worth saying */
  size_t *norm_ranges; /* layout_t.norm's ranges, where the plan has them */
  size_t *update_ranges; /* layout_t.update_ranges, where the plan has them */
  size_t *shard;         /* a sharded optimizer's bounds (world->size + 1, sync/shard.h), or NULL */
  shard_gather_t gather; /* its all-gather of the updated parameters (sync/shard_gather.h) */
} burst_layout_t;

static burst_layout_t *impl(const layout_t *l) { return l->impl; }

/* The deck's profile, its batch norm sums costed as this run does them ([parallel] bn_overlap). */
static void read_profile(const burst_deck_t *deck, const graph_t *g, const char *model, const burst_opts_t *bo,
                         burst_profile_t *prof) {
  burst_profile_read(deck->profile_file, g, model, bo, prof);
  prof->bn_blocking = !deck->bn_overlap;
}

/* [parallel] KEY = path can be read, or an input error naming the key (the readers name only the path). */
static void check_readable(const layout_opts_t *o, const char *key, const char *path, const char *hint) {
  if (access(path, R_OK) == 0) return;
  char section_key[64];
  snprintf(section_key, sizeof section_key, "parallel.%s", key);
  surge_input_error("%s: [parallel] %s = %s: %s (hint: %s)", layout_where(o, section_key), key, path,
                    strerror(errno), hint);
}

/* Burst mode: the plan is the plan file (its errors name file:line) or, without one, searched at
 * start-up from the profile under the amplification limit (rank 0 prints its table). With both,
 * the profile predicts the plan file's costs. */
static void plan_burst(burst_layout_t *b, const layout_opts_t *o, const graph_t *g, comm_t *world) {
  burst_opts_t bo = {.ranks = world->size, .batch = (int)o->global_batch, .amp = BURST_NO_LIMIT,
                     .policy = BURST_RANKS_DIVISORS};
  burst_profile_t prof;
  const burst_deck_t *deck = burst_deck(o->cfg);
  int profiled = deck->profile_file[0] != 0;
  if (deck->plan_file[0])
    check_readable(o, "plan", deck->plan_file,
                   "a plan file written by surge-plan -o, or no plan: planned at start-up from [parallel] profile");
  if (profiled) check_readable(o, "profile", deck->profile_file, "a profile written by surge-profile (doc/burst.md)");
  if (deck->plan_file[0]) {
    burst_plan_read(deck->plan_file, g, o->model, &bo, &b->plan);
    if (profiled) {
      read_profile(deck, g, o->model, &bo, &prof);
      burst_plan_evaluate(g, &prof, &bo, &b->plan);
    }
    b->plan_text = plan_text_read(deck->plan_file);
    if (!profiled && b->plan.stale_predictions_line && world->rank == 0)
      say("note: %s:%d: the node lines are not those the plan's predictions were made for (edited since?): the "
          "run logs no prediction (hint: [parallel] profile = the profile predicts this plan; or surge-plan "
          "writes a new one)\n", deck->plan_file, b->plan.stale_predictions_line);
  } else {
    bo.amp = deck->amplification;
    read_profile(deck, g, o->model, &bo, &prof);
    burst_plan_search(g, &prof, &bo, &b->plan);
    b->plan_text = plan_text_of(g, o->model, &b->plan);
  }
  if (profiled) {
    if (world->rank == 0) {
      burst_plan_t dp;
      burst_plan_data_parallel(g, &prof, &bo, &dp);
      say("burst plan from profile %s%s\n", deck->profile_file,
          deck->plan_file[0] ? " (evaluating the plan file)" : "");
      char note[700];
      burst_setting_t run = {backend_deck(o->cfg)->name, backend_deck(o->cfg)->precision,
                             optim_opts(o->cfg)->name};
      burst_profile_setting_note(&prof, &run, note, sizeof note);
      if (note[0]) say("note: %s\n", note);
      say_stream_t table;
      burst_plan_print(say_open(&table), g, &b->plan, &dp);
      say_close(&table);
      burst_plan_free(&dp);
    }
    burst_profile_free(&prof);
  }
}

/* Data parallelism: every node on all ranks. */
static void plan_everywhere(burst_layout_t *b, const layout_opts_t *o, const graph_t *g, comm_t *world) {
  burst_opts_t bo = {.ranks = world->size, .batch = (int)o->global_batch, .amp = BURST_NO_LIMIT};
  burst_plan_alloc(&b->plan, g->n, &bo);
  for (int i = 0; i < g->n; i++) {
    b->plan.n[i] = world->size;
    b->plan.per_rank[i] = burst_per_rank((int)o->global_batch, world->size);
  }
}

/* The norm's plan (optim/norm.h): node-shared ranks count their slice, the slices summed at the
 * barrier after the update; a sharded optimizer's ranks their shard, summed over the job; where
 * every rank holds every summed gradient (summed), every rank counts all and its part is the norm;
 * else each tensor is counted by the first rank of its node's set, the parts summed over the job. */
static norm_plan_t plan_norm(burst_layout_t *b) {
  const burst_exec_t *ex = &b->ex;
  if (ex->shared) return (norm_plan_t){.sum = NORM_SUM_LAYOUT};
  if (b->base.sharded_state && ex->sync.shard) /* its shard, summed with the metrics */
    return (norm_plan_t){.ranges = b->base.update_ranges, .nranges = b->base.nupdate_ranges, .sum = NORM_SUM_JOB};
  if (b->base.sharded_state) return (norm_plan_t){.sum = NORM_SUM_JOB};
  if (ex->summed) return (norm_plan_t){.sum = NORM_SUM_NONE};
  const slab_layout_t *L = &ex->g->params;
  b->norm_ranges = xcalloc(2 * (size_t)(L->n ? L->n : 1), sizeof *b->norm_ranges);
  int n = 0;
  for (int t = 0; t < L->n; t++)
    if (ex->world->rank == ex->first[L->t[t].owner]) norm_ranges_push(b->norm_ranges, &n, L->t[t].off, L->t[t].n);
  return (norm_plan_t){.ranges = b->norm_ranges, .nranges = norm_ranges_merge(b->norm_ranges, n), .sum = NORM_SUM_JOB};
}

/* The parameters this rank updates (layout_t.update_ranges): where some node is not on every rank,
 * the tensors of the nodes whose set holds it, so a node's update costs its ranks only, as the
 * planner charges it (burst_profile_update_us); the others' stay stale here, never read before
 * burst_exec_gather brings them. Everywhere else: the whole slab (NULL). */
static void plan_update(burst_layout_t *b) {
  const burst_exec_t *ex = &b->ex;
  if (ex->shared || ex->all_ranks_everywhere || b->base.sharded_state) return;
  const slab_layout_t *L = &ex->g->params;
  b->update_ranges = xcalloc(2 * (size_t)(L->n ? L->n : 1), sizeof *b->update_ranges);
  int n = 0, r = ex->world->rank;
  for (int t = 0; t < L->n; t++) {
    int v = L->t[t].owner;
    if (r >= ex->first[v] && r < ex->first[v] + ex->n[v]) norm_ranges_push(b->update_ranges, &n, L->t[t].off, L->t[t].n);
  }
  b->base.update_ranges = b->update_ranges;
  b->base.nupdate_ranges = norm_ranges_merge(b->update_ranges, n);
}

static void step(layout_t *l, const dataset_t *ds, const uint64_t *ids, float grad_scale, layout_step_t *out) {
  burst_exec_t *ex = &impl(l)->ex;
  burst_times_t t;
  burst_metrics_t mx = {.stop = out->stop, .step = out->step, .loss_acc = out->loss_acc};
  memset(out, 0, sizeof *out);
  burst_exec_step(ex, ds, ids, grad_scale, &mx, &t);
  out->loss = mx.loss;
  out->loss_acc = mx.loss_acc;
  out->loss_on_device = mx.loss_on_device;
  out->stop = mx.stop;
  out->summed = mx.summed;
  out->idle = burst_exec_idle(ex);
  out->data = t.data;
  out->forward = t.forward;
  out->backward = t.backward;
  out->comm = t.comm;
  out->wait = t.wait;
  out->backward_done = t.backward_done;
  out->sums = mx.sums;
  out->sums_overlapped = mx.sums_overlapped;
}

/* A sharded optimizer's all-gather of the last update is waited for first (nothing to wait for
 * without one). */
static void eval(layout_t *l, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]) {
  shard_gather_finish(&impl(l)->gather);
  burst_exec_eval(&impl(l)->ex, ds, split, n, sums);
}

/* With node-shared memory the parameters are one slab; each rank's other slabs (moments) are right
 * on its slice only. A sharded optimizer's all-gather of the last update completes the parameters
 * first. */
static void sync_replicas(layout_t *l, float *slabs[], int nslabs) {
  shard_gather_finish(&impl(l)->gather);
  burst_exec_t *ex = &impl(l)->ex;
  burst_exec_gather_bufs(ex);
  if (!ex->shared) {
    burst_exec_gather(ex, slabs, nslabs);
    return;
  }
  for (int s = 0; s < nslabs; s++)
    if (slabs[s] && slabs[s] != ex->m.params) node_sum_gather(ex->shared, slabs[s]);
}

/* Every rank wrote the same values into the node's one parameter slab: all are done before any
 * step reads it. */
static void shared_written(layout_t *l) { node_sum_updated(impl(l)->ex.shared, 0.0); }

static double shared_updated(layout_t *l, double norm_part) { return node_sum_updated(impl(l)->ex.shared, norm_part); }

static double shared_norm_sum(layout_t *l, double norm_part) { return node_sum_total(impl(l)->ex.shared, norm_part); }

/* A sharded optimizer: every rank updated its shard of the parameters; their all-gather starts, waited
 * for node by node in the next step's forward pass (before_forward), or whole before anything else
 * reads the slab (eval, sync_replicas). */
static double sharded_updated(layout_t *l, double norm_part) {
  shard_gather_start(&impl(l)->gather);
  (void)norm_part; /* the norm's parts ride on the trainer's metrics (NORM_SUM_JOB) */
  return 0.0;
}

/* After sync_replicas every rank holds every tensor whole. */
static void describe(const layout_t *l, state_tensor_t *out) {
  const burst_exec_t *ex = &impl(l)->ex;
  for (int t = 0; t < l->local->n; t++) state_tensor_replicated(&out[t], &l->local->t[t], ex->world->rank, ex->world->size);
}

static void log_plan(layout_t *l, run_log_t *log) {
  burst_layout_t *b = impl(l);
  if (b->plan_text) burst_plan_log(&b->plan, b->ex.g, b->plan_text, log);
}

static void free_layout(layout_t *l) {
  burst_layout_t *b = impl(l);
  if (b->shard) shard_gather_free(&b->gather); /* before the slab it gathers into goes */
  burst_exec_free(&b->ex);
  burst_plan_free(&b->plan);
  free(b->plan_text);
  free(b->norm_ranges);
  free(b->update_ranges);
  free(b->shard);
  free(b);
}

static const layout_ops_t burst_layout_ops = {
    .step = step, .eval = eval, .sync_replicas = sync_replicas, .describe = describe, .log = log_plan,
    .free = free_layout};
/* Data parallelism through node-shared memory (burst_exec_t.shared). */
static const layout_ops_t shared_layout_ops = {
    .step = step, .eval = eval, .sync_replicas = sync_replicas, .describe = describe, .log = log_plan,
    .state_loaded = shared_written, .updated = shared_updated, .norm_sum = shared_norm_sum, .free = free_layout};

/* [train] micro_batches against the batch and the model: every micro-batch has a sample, and no
 * layer normalises by batch statistics (a micro-batch's differ from the batch's: no longer the
 * step M = 1 takes). */
static void check_micro(const layout_opts_t *o, const graph_t *g) {
  int M = o->micro_batches;
  if (M > o->global_batch)
    surge_input_error("%s: [train] micro_batches = %d, but [train] global_batch = %ld: a micro-batch would have no "
                      "samples (hint: 1 <= micro_batches <= global_batch)",
                      layout_where(o, "train.micro_batches"), M, o->global_batch);
  for (int i = 1; i < g->n && M > 1; i++)
    if (g->l[i].kind == LAYER_BATCHNORM)
      surge_input_error("%s: [train] micro_batches = %d, but model %s normalises by batch statistics (node %d '%s'): "
                        "in %s mode they would be each micro-batch's, not the step's, and the run would no longer "
                        "take the step of micro_batches = 1 (hint: micro_batches = 1 for a batch-norm model, or a "
                        "model without batch norm; doc/burst.md)",
                        layout_where(o, "train.micro_batches"), M, o->model, i, g->l[i].name, o->mode);
}

/* A distributed optimizer over the dp ranks ([parallel] shard_optimizer, sync/shard.h): gradients
 * reduce-scattered to the shards, each rank updating its own, the parameters all-gathered at
 * `updated`. */
static const layout_ops_t sharded_layout_ops = {
    .step = step, .eval = eval, .sync_replicas = sync_replicas, .describe = describe,
    .log = log_plan, .updated = sharded_updated, .free = free_layout};

/* [parallel] shard_optimizer: the gradient sync plans the shards of each rank set's tensors (sync), and
 * node-shared memory takes the world's bounds as its slices where it runs (b->shard); nothing where it
 * does not apply (1 rank). */
static void plan_shards(burst_layout_t *b, const layout_opts_t *o, const graph_t *g, comm_t *world,
                        gradsync_opts_t *sync) {
  if (!o->shard_optimizer || world->size < 2) return;
  b->shard = xcalloc((size_t)world->size + 1, sizeof *b->shard);
  shard_bounds(&g->params, world->size, b->shard);
  sync->shard = 1;
}

/* A sharded optimizer without node-shared memory: this rank updates its shard (the gradient sync's
 * plan: one range for data parallelism, a range per rank set's piece in a burst plan), counts it in
 * the norm and holds its moments alone; the parameters are all-gathered over each set at `updated`. */
static void use_shards(burst_layout_t *b) {
  burst_exec_t *ex = &b->ex;
  const shard_plan_t *p = ex->sync.shard;
  b->base.ops = &sharded_layout_ops;
  b->base.sharded_state = 1;
  b->base.update_lo = p->nranges ? p->ranges[0] : 0;
  b->base.update_hi = p->nranges ? p->ranges[2 * p->nranges - 1] : 0;
  if (p->nranges > 1) { /* else [update_lo, update_hi) says it all */
    b->base.update_ranges = p->ranges;
    b->base.nupdate_ranges = p->nranges;
  }
  shard_gather_init(&b->gather, &ex->sync, &ex->g->params, ex->m.params);
  ex->before_forward = shard_gather_hook;
  ex->before_arg = &b->gather;
}

layout_t *burst_layout_build(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world) {
  check_micro(o, g);
  if (o->global_batch < world->size)
    surge_input_error("%s: [train] global_batch = %ld is smaller than the %d ranks (hint: every rank needs at least "
                      "one sample: raise global_batch or use fewer ranks)",
                      layout_where(o, "train.global_batch"), o->global_batch, world->size);
  burst_layout_t *b = xcalloc(1, sizeof *b);
  gradsync_opts_t sync = o->sync;
  plan_shards(b, o, g, world, &sync);
  if (strcmp(o->mode, "burst") == 0)
    plan_burst(b, o, g, world);
  else
    plan_everywhere(b, o, g, world);
  int node_shared = o->node_shared && strcmp(o->mode, "dp") == 0 && strcmp(o->sync.reducer, "exact") == 0;
  burst_exec_init(&b->ex, &b->plan, g, be, world, (int)o->global_batch, o->micro_batches, &sync, node_shared,
                  burst_deck(o->cfg)->bn_overlap);
  model_init_params(&b->ex.m, o->seed);
  b->ex.m.seed = o->seed; /* dropout's masks */
  b->base = (layout_t){.ops = &burst_layout_ops, .m = &b->ex.m, .local = &g->params, .sync = &b->ex.sync,
                       .window = b->ex.window, .impl = b};
  if (b->ex.shared) {
    b->base.ops = &shared_layout_ops;
    if (b->shard) { /* the slices are the shards: the moments are held for them alone */
      node_sum_set_slices(b->ex.shared, b->shard);
      b->base.sharded_state = 1;
    }
    b->base.update_lo = b->ex.shared->lo;
    b->base.update_hi = b->ex.shared->hi;
    shared_written(&b->base);
    snprintf(b->note, sizeof b->note, "dp: the ranks share one node: gradients summed and parameters updated through "
             "node-shared memory, each rank its slice ([parallel] node_shared%s)",
             b->shard ? "; with shard_optimizer the slices are its shards, each rank holding the moments of its "
                        "own alone" : "");
  } else if (b->ex.sync.shard) {
    use_shards(b);
    if (strcmp(o->mode, "dp") == 0)
      snprintf(b->note, sizeof b->note, "dp: sharded optimizer ([parallel] shard_optimizer): gradients "
               "reduce-scattered in buckets, each rank updating its 1/%d shard with moments for it alone, parameters "
               "all-gathered in buckets before the next forward pass reads them%s%s",
               world->size, b->ex.shared_refused[0] ? "; not node-shared memory: " : "", b->ex.shared_refused);
    else
      snprintf(b->note, sizeof b->note, "burst: sharded optimizer ([parallel] shard_optimizer): each rank set's "
               "gradients reduce-scattered in buckets over the set, each rank updating its shard of every set it is "
               "in (rank 0: %zu floats) with moments for it alone, parameters all-gathered over each set before the "
               "next forward pass reads them", b->ex.sync.shard->floats);
  } else if (b->ex.shared_refused[0]) {
    snprintf(b->note, sizeof b->note, "dp: allreduce, not node-shared memory: %s", b->ex.shared_refused);
  } else if (o->shard_optimizer && world->size == 1) { /* said, not silent: plan_shards had nothing to do */
    snprintf(b->note, sizeof b->note, "%s: [parallel] shard_optimizer has nothing to shard on 1 rank", o->mode);
  }
  if (o->micro_batches > 1) {
    double most = b->ex.window; /* the banner (rank 0's) states the job's largest window */
    comm_allreduce_max_double(world, &most, 1, TRAFFIC_OTHER);
    size_t len = strlen(b->note);
    snprintf(b->note + len, sizeof b->note - len, "%s%s: %d micro-batches per step, their gradients summed; "
             "buffers of at most %.0f samples per rank ([train] micro_batches)", len ? "\n" : "", o->mode,
             o->micro_batches, most);
  }
  if (b->note[0]) b->base.note = b->note;
  b->base.norm = plan_norm(b);
  plan_update(b);
  return &b->base;
}
