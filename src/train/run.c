#include "train/run.h"

#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/options.h"
#include "core/error.h"
#include "core/say.h"
#include "core/watchdog.h"
#include "io/checkpoint.h"
#include "io/log.h"
#include "io/strbuf.h"
#include "train/claim.h"
#include "mux/options.h"
#include "train/multiplex.h"
#include "train/progress.h"
#include "train/sample.h"
#include "train/state.h"
#include "train/train.h"

/* ---- stop signals: SIGTERM and SIGUSR1 (what Slurm sends before a time limit with --signal)
 * finish the current step, write a checkpoint and return TRAIN_STOPPED. The flag is a lock-free
 * atomic, not a volatile sig_atomic_t: an in-process background's thread reads it too, and only an
 * atomic is ordered between threads (a lock-free one is as safe in a handler). */
static atomic_int stop_signal = 0;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a stop signal's flag must be a lock-free atomic");

static void on_stop_signal(int sig) { atomic_store(&stop_signal, sig); }

void train_catch_stop_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART; /* (what a signal interrupts, MPI's start-up too, goes on) */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
}

/* Collective: whether a stop signal has reached any rank (while the run was set up, or during a step that
 * ends it anyway). */
static int stop_signalled(comm_t *world) {
  double any = atomic_load(&stop_signal) != 0;
  comm_allreduce_max_double(world, &any, 1, TRAFFIC_OTHER);
  return any != 0;
}

static void report_setup(const trainer_t *t) {
  if (surge_rank() != 0) return;
  say("model %s: %zu parameters, %.2f MFLOP forward per sample, %d nodes\n", t->cfg.zoo, t->g.params.total,
      graph_flops_per_sample(&t->g) / 1e6, t->g.n);
  say_stream_t table;
  graph_print(&t->g, say_open(&table));
  say_close(&table);
  const int bf16 = strcmp(t->be->context()->precision, "bf16") == 0;
  say("data %s: %llu training samples, %llu %s samples; global batch %ld on %d rank%s (%s); backend %s (%d thread%s "
      "per rank%s)\n",
      dataset_name(t->ds), (unsigned long long)dataset_size(t->ds, SPLIT_TRAIN),
      (unsigned long long)dataset_size(t->ds, SPLIT_TEST), dataset_is_tokens(t->ds) ? "validation" : "test",
      t->cfg.global_batch, t->world->size, t->world->size == 1 ? "" : "s", t->cfg.parallel_mode, t->be->name,
      backend_deck(&t->cfg)->threads, backend_deck(&t->cfg)->threads == 1 ? "" : "s", bf16 ? ", bf16 products" : "");
  if (bf16 && strcmp(t->be->name, "cpu") == 0 && backend_deck(&t->cfg)->threads > 1)
    say("note: in bf16 the cpu backend multiplies on its own kernels: [backend] threads = %d splits their matrix "
        "products; the direct convolutions and the other ops run on one thread (doc/design.md, \"bf16 on the "
        "host\")\n",
        backend_deck(&t->cfg)->threads);
  if (t->layout->note) say("%s\n", t->layout->note);
}

/* The log row of a step: the bytes since the previous row's reading (*since, moved on to this reading)
 * summed over ranks, the slowest rank's step time, and with with_phases every rank's phase times (for
 * the log's /ranks). One reduction: the byte counts as
 * doubles (exact below 2^53 bytes a step), then each rank's step time and phases in slots of its own
 * (a sum of one value and zeros is that value). sums: scratch of step_row_doubles(world, with_phases)
 * doubles, which the row's rank_phase points into. Without with_phases (a multiplexed run, whose
 * multiplexer adds phases after this reduction) rank_phase is NULL and the log gathers them. */
static int step_row_doubles(const comm_t *world, int with_phases) {
  return 2 * TRAFFIC_COUNT + world->size * (1 + (with_phases ? PHASE_COUNT : 0));
}

static log_row_t step_row(trainer_t *t, const train_stats_t *s, comm_meter_t *since, double *sums,
                          int with_phases) {
  log_row_t row;
  memset(&row, 0, sizeof row);
  row.step = s->step;
  row.loss = s->loss;
  row.lr = s->lr;
  row.grad_norm = s->grad_norm;
  memcpy(row.phase, s->phase, sizeof row.phase);
  const comm_meter_t *now = &t->world->meter;
  int R = t->world->size, n = step_row_doubles(t->world, with_phases);
  double *secs = sums + 2 * TRAFFIC_COUNT, *phases = secs + R; /* (R) step times, (R, PHASE_COUNT) phases */
  memset(sums, 0, sizeof *sums * (size_t)n);
  for (int c = 0; c < TRAFFIC_COUNT; c++) {
    sums[c] = (double)(now->bytes[c] - since->bytes[c]);
    sums[TRAFFIC_COUNT + c] = (double)(now->internode_bytes[c] - since->internode_bytes[c]);
  }
  *since = *now; /* this sum, the log's gathers, an evaluation or checkpoint: the next row's */
  secs[t->world->rank] = s->seconds;
  if (with_phases) memcpy(phases + (size_t)t->world->rank * PHASE_COUNT, s->phase, sizeof s->phase);
  comm_allreduce_sum_double(t->world, sums, n, TRAFFIC_OTHER);
  for (int c = 0; c < TRAFFIC_COUNT; c++) {
    row.bytes[c] = (uint64_t)sums[c];
    row.internode_bytes[c] = (uint64_t)sums[TRAFFIC_COUNT + c];
  }
  double slowest = 0;
  for (int r = 0; r < R; r++)
    if (secs[r] > slowest) slowest = secs[r];
  row.rank_phase = with_phases ? phases : NULL;
  row.step_sec = slowest;
  row.samples_per_sec = slowest > 0 ? (double)t->cfg.global_batch / slowest : 0;
  return row;
}

/* An evaluation, logged and printed. A loss that is not finite ends the run as a training step's does
 * (exit 1, no checkpoint or model file of this state): a run that diverged in its last steps finished
 * with exit 0, a NaN test loss and its checkpoint and model written. */
static eval_stats_t evaluate(trainer_t *t, run_log_t *log, progress_t *p, const char *tokens) {
  eval_stats_t e = trainer_eval(t);
  run_log_eval(log, t->step, e.loss, e.accuracy);
  progress_eval(p, t->step, &e, tokens);
  if (!isfinite(e.loss))
    surge_runtime_error("step %ld: the evaluation's loss is not finite (%g) (hint: lower [train] lr, or set "
                        "[train] clip_norm; the last checkpoint is untouched)", t->step, e.loss);
  return e;
}

static void checkpoint_now(trainer_t *t, run_log_t *log, progress_t *p, const char *deck_text) {
  char path[CFG_STR + 64], line[CFG_STR + 128];
  watchdog_beat("a checkpoint write", t->step);
  trainer_checkpoint(t, deck_text, path, sizeof path);
  snprintf(line, sizeof line, "checkpoint %s (step %ld)", path, t->step);
  run_log_event(log, t->step, line);
  progress_note(p, line);
}

/* The numbers the summary gathers from every rank: a row of COLS per rank. */
enum {
  COL_OPT_BYTES, COL_OPT_FLOATS,                                 /* the optimizer state's (its shard's) */
  COL_PEAK, COL_STEPS_PEAK, COL_BEFORE, COL_STATE, COL_ACTS,     /* memory_by_rank's, in its order */
  COL_GRAD_BUFFERS, COL_GRADS_SHARED,                            /* shared_grads's */
  COL_HELD16, COL_ADDS_PASSING,                                  /* counts_line's */
  COLS
};

/* Rank r's column col of the gathered rows. */
static double col_of(const double *rows, int r, int col) { return rows[(size_t)COLS * (size_t)r + (size_t)col]; }

/* Each rank's peak resident memory against what it holds, one ';'-separated list per quantity in bytes
 * (exact, where the memory line above rounds to MiB), rank order: the peak at exit and at the end of the
 * last step (before the final evaluation and checkpoint), the resident memory before the model existed,
 * the training state and, of it, the activations. */
static void memory_by_rank(const double *rows, int ranks) {
  static const char *const names[] = {"peak", "steps peak", "before model", "state", "activations"};
  say("memory by rank (bytes):");
  for (int q = 0; q <= COL_ACTS - COL_PEAK; q++) {
    say("%s %s", q ? ";" : "", names[q]);
    for (int r = 0; r < ranks; r++) say(" %.0f", col_of(rows, r, COL_PEAK + q));
  }
  say("\n");
}

/* Each rank's activation gradients in shared buffers (model_t.pool: those never live at once take
 * turns), rank order: the buffers, then the gradients in them. */
static void shared_grads(const double *rows, int ranks) {
  say("activation gradients per rank: shared buffers");
  for (int r = 0; r < ranks; r++) say(" %.0f", col_of(rows, r, COL_GRAD_BUFFERS));
  say(" for gradients");
  for (int r = 0; r < ranks; r++) say(" %.0f", col_of(rows, r, COL_GRADS_SHARED));
  say("\n");
}

/* A count per rank, rank order, after `text`, where some rank's is not 0. */
static void counts_line(const char *text, const double *rows, int ranks, int col) {
  double any = 0;
  for (int r = 0; r < ranks; r++) any += col_of(rows, r, col);
  if (!any) return;
  say("%s", text);
  for (int r = 0; r < ranks; r++) say(" %.0f", col_of(rows, r, col));
  say("\n");
}

/* A device backend's memory (rank 0's view of its device; ranks sharing a GPU all count there): the
 * most in use at the end of a step, what was in use before the model (the context, cuBLAS, NCCL, and
 * other processes), and the difference against the training state (the largest rank's). */
static void device_memory_line(const train_memory_t *m, double state_bytes) {
  double used = m->dev_peak_bytes - m->dev_before_bytes;
  say("device memory: peak %.1f MiB in use, %.1f MiB before the model, so %.1f MiB for training against a training "
      "state of %.1f MiB (%.2fx)\n", m->dev_peak_bytes / 1048576.0, m->dev_before_bytes / 1048576.0,
         used / 1048576.0, state_bytes / 1048576.0, state_bytes > 0 ? used / state_bytes : 0.0);
}

/* Rank 0's linear forwards with and without cuBLASLt's epilogues over the whole run, and its waits
 * for the device a step (a device backend). */
static void device_use_lines(const trainer_t *t) {
  const backend_context_t *c = t->be->context();
  const backend_epilogue_counts_t *n = &c->epilogue_counts;
  say("cuBLASLt epilogues %s: bias in %ld of %ld linear products with a bias, bias + GELU in %ld of %ld linear + GELU "
      "forwards (rank 0)\n", c->epilogues, n->bias, n->bias_all, n->gelu, n->gelu_all);
  say("waits for the device: %.2f a step (rank 0: uploads, downloads and values read back; a step on 1 rank reads "
      "its loss and norm in one)\n", t->steps_run ? (double)t->step_waits / (double)t->steps_run : 0.0);
}

/* Where the run starts: a checkpoint it resumes (--resume), else [model] init's parameters, else the
 * initial state; a line says which. Returns 1 when it starts from [model] init. */
static int start_state(trainer_t *t, const train_claim_t *claim, progress_t *p) {
  const config_t *cfg = &t->cfg;
  if (cfg->resume) {
    char line[sizeof claim->resume_from + 160];
    if (claim->resume_from[0]) {
      trainer_resume(t, claim->resume_from);
      snprintf(line, sizeof line, "resumed from %s at step %ld on %d rank%s", claim->resume_from, t->step,
               t->world->size, t->world->size == 1 ? "" : "s");
    } else {
      snprintf(line, sizeof line, "no checkpoint in %s: starting at step 0", cfg->ckpt_dir);
    }
    progress_note(p, line);
  }
  const int from_weights = cfg->model_init[0] && !claim->resume_from[0]; /* a checkpoint's state wins */
  if (from_weights) {
    trainer_load_params(t, cfg->model_init);
    char line[CFG_STR + 64];
    snprintf(line, sizeof line, "parameters from %s ([model] init), fresh optimizer state", cfg->model_init);
    progress_note(p, line);
  }
  return from_weights;
}

/* The end of a finished run, printed by rank 0 (collective: every rank gives its numbers): what ran
 * (`done` steps by this process), the final evaluation e, the outputs, the memory of every rank. */
static void print_summary(const trainer_t *t, const progress_t *p, const eval_stats_t *e, const char *tokens,
                          long done, const char *model_path) {
  const config_t *cfg = &t->cfg;
  comm_t *world = t->world;
  train_memory_t mem = trainer_memory(t);
  double worst[5] = {mem.state_bytes, mem.peak_bytes, mem.peak_bytes / mem.state_bytes, mem.window,
                     mem.process_bytes}; /* max over ranks */
  comm_allreduce_max_double(world, worst, 5, TRAFFIC_OTHER);
  const double mine[COLS] = {[COL_OPT_BYTES] = mem.optim_bytes,    [COL_OPT_FLOATS] = mem.optim_floats,
                             [COL_PEAK] = mem.process_bytes,       [COL_STEPS_PEAK] = mem.steps_peak_bytes,
                             [COL_BEFORE] = mem.before_bytes,      [COL_STATE] = mem.state_bytes,
                             [COL_ACTS] = mem.act_bytes,           [COL_GRAD_BUFFERS] = mem.grad_buffers,
                             [COL_GRADS_SHARED] = mem.grads_shared, [COL_HELD16] = mem.acts_held16,
                             [COL_ADDS_PASSING] = mem.adds_passing};
  double *rows = xcalloc(COLS * (size_t)world->size, sizeof *rows);
  comm_gather_double(world, mine, COLS, rows, 0, TRAFFIC_OTHER); /* (ranks, COLS) on rank 0 */
  if (world->rank == 0) {
    char dur[32];
    progress_format_duration(p->run_sec, dur, sizeof dur);
    say("done: %ld steps in %s (%.1f ms/step, %.0f samples/s)\n", done, dur,
        done ? 1e3 * p->run_sec / (double)done : 0.0,
        p->run_sec > 0 ? (double)(done * cfg->global_batch) / p->run_sec : 0.0);
    if (tokens)
      say("final validation loss %.4f nats/%s\n", e->loss, tokens);
    else
      say("final test accuracy %.2f%%\n", 100.0 * e->accuracy);
    say("output: %s (final parameters), %s (metrics log), %s (checkpoints)\n", model_path, cfg->log_file,
        cfg->ckpt_dir);
    say("memory per rank: training state %.1f MiB (parameters, gradients, optimizer moments, activations of %.0f "
        "samples), peak %.1f MiB above the data (%.2fx), process peak %.1f MiB (largest of the ranks)\n",
        worst[0] / 1048576.0, worst[3], worst[1] / 1048576.0, worst[2], worst[4] / 1048576.0);
    say("optimizer state per rank: bytes"); /* a sharded optimizer's: each its shard's moments */
    for (int r = 0; r < world->size; r++) say(" %.0f", col_of(rows, r, COL_OPT_BYTES));
    say(" for slab floats");
    for (int r = 0; r < world->size; r++) say(" %.0f", col_of(rows, r, COL_OPT_FLOATS));
    say(" of %zu\n", t->layout->local->total);
    memory_by_rank(rows, world->size);
    shared_grads(rows, world->size);
    counts_line("activations held in bfloat16 per rank ([backend] activations = auto):", rows, world->size, COL_HELD16);
    counts_line("add inputs whose gradient is the add's own buffer per rank (no copy):", rows, world->size,
                COL_ADDS_PASSING);
    if (!t->be->host_memory) {
      device_memory_line(&mem, worst[0]);
      device_use_lines(t);
    }
  }
  free(rows);
}

train_outcome_t train_run(const config_t *cfg, const deck_t *deck, const char *resume_cmd, comm_t *world) {
  char model_path[CFG_STR + 32];
  snprintf(model_path, sizeof model_path, "%s/model.h5", cfg->out_dir);
  char why[256];
  if (!checkpoint_compression_available(cfg->ckpt_compression, why, sizeof why))
    surge_input_error("%s: [checkpoint] compression = %s: %s", deck_where(deck, "checkpoint.compression"),
                      cfg->ckpt_compression, why);

  train_catch_stop_signals(); /* before the data loads and a checkpoint is read: a signal then stops too */
  trainer_t t;
  trainer_init(&t, cfg, deck, world);
  train_claim_t claim; /* the output directories, locked; what to resume (train/claim.h) */
  train_claim(cfg, deck, world, &claim);
  snprintf(t.run_id, sizeof t.run_id, "%s", claim.run_id);
  report_setup(&t);

  char *deck_text = deck_resolved_text(cfg);
  progress_t p;
  progress_init(&p, cfg->steps, cfg->global_batch, cfg->print_every);
  const multiplex_opts_t *mo = multiplex_opts(cfg);
  long resumed_at = -1;
  const int from_weights = start_state(&t, &claim, &p);
  if (claim.continue_log) resumed_at = t.step;
  log_run_info_t log_info = {.layout = cfg->parallel_mode, .model = cfg->zoo, .global_batch = cfg->global_batch,
                             .flush_every = cfg->log_flush_every,
                             .phases = mo->role ? ~0u : log_phases_plain()};
  run_log_t *log = run_log_open(cfg->log_file, &log_info, deck_text, &t.g.params, world, resumed_at);
  run_log_identify(log, t.run_id);
  if (t.layout->ops->log) t.layout->ops->log(t.layout, log);
  log_rows_t *samples = trainer_sample_log(&t, log);
  run_mux_t mux;
  run_mux_begin(&mux, &t, deck);
  run_mux_log(&mux, cfg, log);

  const char *tokens = dataset_token_unit(t.ds);
  eval_stats_t e = {0};
  int evaluated_last = 0, checkpointed_last = 0;
  train_outcome_t outcome = TRAIN_FINISHED;
  int row_phases = mux.role == MUX_ROLE_NONE; /* a multiplexer adds phases to the row after step_row */
  double *row_sums = xcalloc((size_t)step_row_doubles(world, row_phases), sizeof *row_sums);
  if (stop_signalled(world)) { /* the state is the checkpoint resumed, or the initial one */
    strbuf_t line = STRBUF_INIT;
    sb_printf(&line, "stopped by a signal before step %ld of %ld; resume with: %s", t.step + 1, cfg->steps, resume_cmd);
    run_log_event(log, t.step, "stopped by a signal before its first step");
    progress_note(&p, sb_str(&line));
    sb_free(&line);
    outcome = TRAIN_STOPPED;
  } else if (from_weights) { /* where the given weights start: the step-0 evaluation */
    e = evaluate(&t, log, &p, tokens);
  }
  const long first_step = t.step; /* a run resumed at its end (--resume of a finished run) takes no step */
  comm_meter_t since = world->meter; /* the traffic a row counts starts here */
  if (mux.role != MUX_ROLE_BACKGROUND) watchdog_start(cfg->stall_timeout_s, world->rank, world->size);
  while (t.step < cfg->steps && outcome == TRAIN_FINISHED) {
    watchdog_beat("the training step", t.step + 1);
    run_mux_step_begin(&mux);
    train_stats_t s = trainer_step(&t, atomic_load(&stop_signal) != 0);
    log_row_t row = step_row(&t, &s, &since, row_sums, row_phases);
    run_mux_step_end(&mux, &t, &row);
    run_log_step(log, &row);
    if (t.layout->ops->log_step) t.layout->ops->log_step(t.layout, t.step);
    progress_step(&p, &s);
    evaluated_last = checkpointed_last = 0;
    if (cfg->eval_every > 0 && t.step % cfg->eval_every == 0) {
      watchdog_beat("an evaluation", t.step);
      e = evaluate(&t, log, &p, tokens);
      if (trainer_samples_after(&t, t.step, t.step == cfg->steps)) trainer_sample(&t, samples, &p);
      evaluated_last = 1;
    }
    run_mux_verdict_t verdict = run_mux_after_step(&mux, &t);
    if (verdict == RUN_MUX_ALONE_NOW) {
      run_log_event(log, t.step, "the foreground ended: continuing at full speed");
      progress_note(&p, "the foreground ended: continuing at full speed ([multiplex] on_foreground_end = continue)");
    }
    int stop_alone = verdict == RUN_MUX_STOP && t.step < cfg->steps;
    if (stop_alone && !s.stop) s.stop = stop_signalled(world); /* a signal in this step: stopped, not alone */
    if ((cfg->ckpt_every > 0 && t.step % cfg->ckpt_every == 0) || s.stop || stop_alone) {
      checkpoint_now(&t, log, &p, deck_text);
      checkpointed_last = 1;
    }
    if (s.stop && t.step == cfg->steps) { /* a signal in the last step: the run is done, and finishes (exit 0) */
      run_log_event(log, t.step, "a stop signal in the last step: finishing");
      progress_note(&p, "a stop signal in the last step: the run finishes (its evaluation and model file)");
      s.stop = 0;
    }
    if (s.stop || stop_alone) {
      const char *why = s.stop ? "stopped by a signal" : "stopped: the foreground ended";
      strbuf_t line = STRBUF_INIT;
      sb_printf(&line, "%s after step %ld of %ld; resume with: %s", why, t.step, cfg->steps, resume_cmd);
      run_log_event(log, t.step, why);
      progress_note(&p, sb_str(&line));
      sb_free(&line);
      outcome = s.stop ? TRAIN_STOPPED : TRAIN_ALONE;
      break;
    }
  }
  free(row_sums);
  run_mux_log(&mux, cfg, log);
  run_mux_end(&mux, &t);
  if (outcome != TRAIN_FINISHED) {
    watchdog_stop();
    run_log_close(log);
    trainer_free(&t);
    free(deck_text);
    train_claim_release(&claim);
    return outcome;
  }
  const int stepped = t.step > first_step; /* else the run that wrote its checkpoint sampled and wrote it */
  if (!evaluated_last) {
    watchdog_beat("the final evaluation", t.step);
    e = evaluate(&t, log, &p, tokens); /* (its log keeps one row a step: io/log.h) */
    if (stepped && trainer_samples_after(&t, t.step, 1)) trainer_sample(&t, samples, &p);
  }
  if (!checkpointed_last && stepped) checkpoint_now(&t, log, &p, deck_text);

  watchdog_beat("writing the model file", t.step);
  trainer_write_model(&t, model_path, deck_text);
  run_log_close(log);
  watchdog_stop(); /* the rest gathers a few numbers */

  print_summary(&t, &p, &e, tokens, t.step - (resumed_at > 0 ? resumed_at : 0), model_path);
  trainer_free(&t);
  free(deck_text);
  train_claim_release(&claim);
  return TRAIN_FINISHED;
}
