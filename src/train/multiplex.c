#include "train/multiplex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/options.h"
#include "core/error.h"
#include "core/say.h"
#include "core/timer.h"
#include "mux/launch.h"
#include "mux/mux_log.h"
#include "mux/options.h"
#include "report/report.h"

_Static_assert((int)BACKEND_MARKS >= (int)MUX_MARKS, "a device backend keeps the marks a foreground uses");

/* The channel both partners use: the deck's, the MPMD launch's, or slurm-JOBID inside Slurm. */
static void choose_channel(run_mux_t *x, const multiplex_opts_t *mo, const deck_t *deck) {
  const char *slurm = getenv("SLURM_JOB_ID");
  if (mo->channel[0]) {
    if (!mux_channel_name_ok(mo->channel))
      surge_input_error("%s: [multiplex] channel = '%s': expected 1..%d characters of A-Z a-z 0-9 . _ - (not "
                        "starting with '.')", deck_where(deck, "multiplex.channel"), mo->channel, MUX_CHANNEL_MAX);
    snprintf(x->channel, sizeof x->channel, "%.*s", MUX_CHANNEL_MAX, mo->channel);
  } else if (mo->auto_channel[0]) {
    snprintf(x->channel, sizeof x->channel, "%.*s", MUX_CHANNEL_MAX, mo->auto_channel);
  } else if (slurm && slurm[0] && strspn(slurm, "0123456789") == strlen(slurm) && strlen(slurm) < 32) {
    snprintf(x->channel, sizeof x->channel, "slurm-%s", slurm);
  } else {
    surge_input_error("a --%s job needs the [multiplex] channel its partner uses (hint: set the same "
                      "[multiplex] channel = NAME in both decks, or -D multiplex.channel=NAME; inside one MPMD "
                      "mpiexec or one Slurm job it is chosen for you)", mux_role_name(x->role));
  }
}

static int graphs_on(const config_t *cfg) { return strcmp(multiplex_opts(cfg)->graphs, "on") == 0; }

int run_mux_check_graphs(const config_t *cfg, const deck_t *deck, int ranks) {
  if (!graphs_on(cfg)) return 0;
  const char *backend = backend_deck(cfg)->name;
  if (strcmp(backend, "cuda") != 0)
    surge_input_error("%s: [multiplex] graphs = on, but backend %s records no graphs (hint: graphs are for a "
                      "background on [backend] name = cuda; set graphs = off)",
                      deck_where(deck, "multiplex.graphs"), backend);
  if (ranks > 1)
    surge_input_error("%s: [multiplex] graphs = on needs a 1-rank background, this one has %d ranks (hint: "
                      "graphs = off, or [multiplex] background_ranks = 1 in its foreground's deck)",
                      deck_where(deck, "multiplex.graphs"), ranks);
  return 1;
}

/* Background: its pieces recorded as CUDA graphs by its backend ([multiplex] graphs = on). */
static void choose_graphs(mux_options_t *o, const trainer_t *t, const deck_t *deck) {
  if (!run_mux_check_graphs(&t->cfg, deck, t->world->size)) return;
  o->graph_begin = t->be->capture_begin;
  o->graph_end = t->be->capture_end;
}

/* Foreground: the samples/s of a foreground-only run's log after its warm-up steps, read on rank 0
 * (a file that is not a Surge log is an input error naming it). */
static double read_baseline(const multiplex_opts_t *mo, const config_t *cfg, const deck_t *deck, comm_t *world) {
  double sps = 0;
  if (!mo->baseline[0]) return 0;
  if (world->rank == 0) {
    log_data_t *solo = log_read(mo->baseline);
    /* the same job alone: its samples/s compare with this one's only at the same model, batch and ranks */
    if ((solo->model[0] && strcmp(solo->model, cfg->zoo) != 0) || /* (an attribute a log lacks reads -1) */
        (solo->global_batch > 0 && solo->global_batch != cfg->global_batch) ||
        (solo->ranks > 0 && solo->ranks != world->size))
      surge_input_error("%s: [multiplex] baseline = %s: a run of %s, global batch %lld, on %lld ranks; this one is "
                        "%s, global batch %ld, on %d ranks (hint: the log of this foreground's deck run alone)",
                        deck_where(deck, "multiplex.baseline"), mo->baseline, solo->model, solo->global_batch,
                        solo->ranks, cfg->zoo, cfg->global_batch, world->size);
    sps = report_throughput(solo, MUX_WARMUP_STEPS);
    log_data_free(solo);
    if (!(sps > 0))
      surge_input_error("%s: [multiplex] baseline = %s: the log has no timed step (hint: the metrics log of a "
                        "foreground-only run of the same deck, e.g. runs/NAME/log.h5)",
                        deck_where(deck, "multiplex.baseline"), mo->baseline);
  }
  comm_bcast(world, &sps, sizeof sps, 0, TRAFFIC_OTHER);
  return sps;
}

/* Foreground: the slowdown so far, against the baseline run, or else steps with a partner against
 * steps without; NaN when neither is known. */
static double slowdown_so_far(const run_mux_t *x) {
  if (x->baseline_sps > 0) return x->warm_sec > 0 ? x->baseline_sps / (x->warm_samples / x->warm_sec) : NAN;
  if (x->with_n > 0 && x->without_n > 0)
    return (x->with_sec / (double)x->with_n) / (x->without_sec / (double)x->without_n);
  return NAN;
}

/* The job's waits poll and sleep at the deck's pace (core/pace.h) instead of spinning in MPI. */
static void polite_waits(comm_t *world, const multiplex_opts_t *mo) {
  world->poll_us = mo->poll_us;
  world->poll_fraction = mo->poll_fraction;
}

void run_mux_begin(run_mux_t *x, trainer_t *t, const deck_t *deck) {
  memset(x, 0, sizeof *x);
  const multiplex_opts_t *mo = multiplex_opts(&t->cfg);
  x->role = (mux_role_t)mo->role;
  x->priority = x->device_priority = "none";
  x->partner_slowdown = NAN;
  if (x->role == MUX_ROLE_NONE) return;
  if (x->role == MUX_ROLE_FOREGROUND) x->baseline_sps = read_baseline(mo, &t->cfg, deck, t->world);
  if (mo->in_process) /* the two threads of this process (train/inproc.h) */
    snprintf(x->channel, sizeof x->channel, "in-process");
  else
    choose_channel(x, mo, deck);
  comm_t node;
  comm_split_node(t->world, &node);
  int device = !t->be->host_memory; /* a GPU: the slowdown feedback's home ([multiplex] slowdown_feedback) */
  int feedback = strcmp(mo->slowdown_feedback, "always") == 0 ||
                 (device && strcmp(mo->slowdown_feedback, "device") == 0);
  mux_options_t o = {.index = node.rank + (int)mo->partner_offset,
                     .min_wait_us = mo->min_wait_us,
                     .partner_wait_s = mo->partner_wait_s,
                     .follow_affinity = mo->follow_affinity,
                     .lower_session = strcmp(mo->priority, "none") != 0,
                     .slowdown_limit = feedback ? mo->slowdown_limit : 0,
                     .piece_ms = mo->piece_ms,
                     .device_timed = device,
                     .in_process = mo->in_process};
  if (device) {
    mux_set_device_sync(t->be->synchronize);
    mux_marks_t marks = {.mark = t->be->mark, .passed = t->be->mark_passed, .ns = t->be->mark_ns};
    mux_set_device_marks(marks.mark ? &marks : NULL); /* (all three or none: tests/test_backend) */
  }
  comm_free(&node);
  snprintf(o.channel, sizeof o.channel, "%s", x->channel);
  if (x->role == MUX_ROLE_BACKGROUND) {
    choose_graphs(&o, t, deck);
    x->priority = mux_lower_priority(mo->priority);
    x->device_priority = t->be->set_priority(1);
    /* a multi-rank in-process background waits for its other ranks outside MPI: a thread waiting
     * inside it can hold the MPI progress its foreground's next call needs (train/inproc.h) */
    if (mo->in_process && t->world->size > 1) polite_waits(t->world, mo);
  } else {
    polite_waits(t->world, mo);
  }
  mux_launch_ready(); /* MPMD: both jobs got this far, so a failure before leaves no segment */
  mux_attach(x->role, &o);
  mux_launch_rendezvous();
  if (mo->auto_channel[0]) mux_forget_name(); /* MPMD: every job is attached now */
  if (t->world->rank == 0)
    say("multiplex: %s on channel %s (%d rank%s; CPU priority %s; device: %s)\n", mux_role_name(x->role),
        x->channel, t->world->size, t->world->size == 1 ? "" : "s", x->priority, x->device_priority);
}

void run_mux_step_begin(run_mux_t *x) {
  if (x->role == MUX_ROLE_NONE) return;
  mux_read(&x->bg0, &x->fg0);
  x->offered0 = mux_fg_offered_s();
  x->step_t0 = surge_now();
}

/* Foreground: the partner's work and samples during the step, summed over the job's ranks. */
static void foreground_row(run_mux_t *x, trainer_t *t, log_row_t *row, const mux_counters_t *bg, double span) {
  double lent = bg->bg_work_s - x->bg0.bg_work_s; /* the partner's CPU time in the step */
  double v[2] = {span > 0 ? (bg->bg_samples - x->bg0.bg_samples) / span : 0,
                 bg->bg_pieces > x->bg0.bg_pieces ? 1 : 0}; /* its gate let a piece through */
  if (v[0] < 0) v[0] = 0; /* a new partner restarted its counters */
  if (lent < 0) lent = 0;
  comm_allreduce_sum_double(t->world, v, 2, TRAFFIC_OTHER);
  row->phase[PHASE_BACKGROUND] = lent;
  double offered = mux_fg_offered_s();
  row->phase[PHASE_OFFERED] = offered - x->offered0;
  x->row[LOG_MUX_FG_SPS] = row->samples_per_sec;
  x->row[LOG_MUX_BG_SPS] = v[0];
  x->row[LOG_MUX_ACTIVE] = v[1];
  x->fg_sec += row->step_sec;
  x->fg_samples += (double)t->cfg.global_batch;
  if (++x->steps > MUX_WARMUP_STEPS) {
    x->warm_sec += row->step_sec;
    x->warm_samples += (double)t->cfg.global_batch;
  }
  x->bg_samples += v[0] * span;
  x->span_sec += span;
  if (v[1] > 0) {
    x->with_sec += row->step_sec;
    x->with_n++;
  } else {
    x->without_sec += row->step_sec;
    x->without_n++;
  }
  mux_fg_step_done(row->samples_per_sec, slowdown_so_far(x));
}

/* Background: its own throughput, its partner's (the foreground job's, the same on every rank),
 * and the time it was paused. */
static void background_row(run_mux_t *x, trainer_t *t, log_row_t *row, const mux_counters_t *me,
                           const mux_counters_t *fg, double span) {
  double paused = me->bg_paused_s - x->bg0.bg_paused_s;
  /* v: the partner's samples/s and slowdown (-1: not known), max over ranks; live partners, summed */
  double v[3] = {fg->live ? fg->fg_samples_per_sec : 0, isfinite(fg->fg_slowdown) ? fg->fg_slowdown : -1,
                 fg->live ? 1 : 0};
  comm_allreduce_max_double(t->world, v, 2, TRAFFIC_OTHER);
  comm_allreduce_sum_double(t->world, v + 2, 1, TRAFFIC_OTHER);
  if (v[1] > 0) x->partner_slowdown = v[1];
  row->phase[PHASE_PAUSED] = paused;
  x->row[LOG_MUX_BG_SPS] = row->samples_per_sec;
  x->row[LOG_MUX_FG_SPS] = v[0];
  x->row[LOG_MUX_ACTIVE] = v[2];
  x->bg_samples += (double)t->cfg.global_batch;
  x->span_sec += row->step_sec;
  x->fg_samples += v[0] * span;
  x->fg_sec += v[0] > 0 ? span : 0;
  x->paused_sec += paused;
  x->run_sec += span;
}

void run_mux_step_end(run_mux_t *x, trainer_t *t, log_row_t *row) {
  if (x->role == MUX_ROLE_NONE) return;
  if (x->role == MUX_ROLE_BACKGROUND) mux_bg_step_done((double)t->cfg.global_batch / t->world->size);
  mux_counters_t bg, fg;
  mux_read(&bg, &fg);
  double span = surge_now() - x->step_t0;
  if (x->role == MUX_ROLE_FOREGROUND)
    foreground_row(x, t, row, &bg, span);
  else
    background_row(x, t, row, &bg, &fg, span);
  x->row[LOG_MUX_TOTAL_SPS] = x->row[LOG_MUX_FG_SPS] + x->row[LOG_MUX_BG_SPS];
  const void *values[LOG_MUX_METRIC_COUNT];
  for (int m = 0; m < LOG_MUX_METRIC_COUNT; m++) values[m] = &x->row[m];
  run_log_append(x->rows, row->step, values);
}

run_mux_verdict_t run_mux_after_step(run_mux_t *x, trainer_t *t) {
  if (x->role != MUX_ROLE_BACKGROUND || x->alone) return RUN_MUX_GO_ON;
  double ended = mux_partner_ended();
  comm_allreduce_max_double(t->world, &ended, 1, TRAFFIC_OTHER);
  if (ended == 0) return RUN_MUX_GO_ON;
  if (strcmp(multiplex_opts(&t->cfg)->on_fg_end, "continue") != 0) return RUN_MUX_STOP;
  x->alone = 1;
  return RUN_MUX_ALONE_NOW;
}

/* /multiplex: DeepPool's accounting, a row each step (io/log_format.h names the columns). */
static log_rows_t *declare_rows(run_log_t *log) {
  log_column_decl_t col[LOG_MUX_METRIC_COUNT];
  for (int m = 0; m < LOG_MUX_METRIC_COUNT; m++) col[m] = (log_column_decl_t){log_multiplex_info[m], LOG_VALUE_REAL, 0};
  log_group_decl_t d = {.path = LOG_MUX_GROUP, .feature = "multiplexing", .each_step = 1,
                        .ncolumns = LOG_MUX_METRIC_COUNT, .column = col};
  return run_log_rows(log, &d);
}

void run_mux_log(run_mux_t *x, const config_t *cfg, run_log_t *log) {
  if (x->role == MUX_ROLE_NONE) return;
  if (!x->rows) x->rows = declare_rows(log);
  log_mux_info_t info;
  run_mux_info(x, cfg, &info);
  const log_attr_t attr[] = {
      LOG_ATTR_TEXT(LOG_MUX_ROLE, info.role),
      LOG_ATTR_TEXT(LOG_MUX_CHANNEL, info.channel),
      LOG_ATTR_TEXT(LOG_MUX_PRIORITY, info.priority),
      LOG_ATTR_TEXT(LOG_MUX_ON_FOREGROUND_END, info.on_foreground_end),
      LOG_ATTR_REAL(log_multiplex_info[LOG_MUX_FG_SPS].name, info.fg_samples_per_sec),
      LOG_ATTR_REAL(log_multiplex_info[LOG_MUX_BG_SPS].name, info.bg_samples_per_sec),
      LOG_ATTR_REAL(log_multiplex_info[LOG_MUX_TOTAL_SPS].name, info.total_samples_per_sec),
      LOG_ATTR_REAL(LOG_MUX_FOREGROUND_SLOWDOWN, info.fg_slowdown),
  };
  run_log_attrs(log, LOG_MUX_GROUP, attr, (int)(sizeof attr / sizeof attr[0]));
}

void run_mux_info(const run_mux_t *x, const config_t *cfg, log_mux_info_t *info) {
  memset(info, 0, sizeof *info);
  info->role = mux_role_name(x->role);
  info->channel = x->channel;
  info->priority = x->priority;
  info->on_foreground_end = multiplex_opts(cfg)->on_fg_end;
  int fg = x->role == MUX_ROLE_FOREGROUND;
  info->fg_samples_per_sec = x->fg_sec > 0 ? x->fg_samples / x->fg_sec : NAN;
  info->bg_samples_per_sec = x->span_sec > 0 ? x->bg_samples / x->span_sec : NAN;
  info->total_samples_per_sec = info->fg_samples_per_sec + info->bg_samples_per_sec;
  info->fg_slowdown = fg ? slowdown_so_far(x) : x->partner_slowdown;
}

/* A rate for the summary: "n/a" when it was never measured. */
static const char *rate_text(double v, char *buf, size_t n) {
  if (isfinite(v))
    snprintf(buf, n, "%.1f samples/s", v);
  else
    snprintf(buf, n, "n/a");
  return buf;
}

void run_mux_end(run_mux_t *x, trainer_t *t) {
  if (x->role == MUX_ROLE_NONE) return;
  log_mux_info_t info;
  run_mux_info(x, &t->cfg, &info);
  if (t->world->rank == 0) {
    char fg[48], bg[48], total[48];
    say("multiplex (%s, channel %s): foreground %s, background %s, total %s\n", info.role, x->channel,
        rate_text(info.fg_samples_per_sec, fg, sizeof fg), rate_text(info.bg_samples_per_sec, bg, sizeof bg),
        rate_text(info.total_samples_per_sec, total, sizeof total));
    if (x->role == MUX_ROLE_FOREGROUND && x->baseline_sps > 0)
      say("foreground slowdown %.3f against the foreground-only run %s (%.1f samples/s)\n", info.fg_slowdown,
          multiplex_opts(&t->cfg)->baseline, x->baseline_sps);
    else if (x->role == MUX_ROLE_FOREGROUND && isfinite(info.fg_slowdown))
      say("foreground slowdown %.3f (mean step with a background partner / without: %ld and %ld steps)\n",
          info.fg_slowdown, x->with_n, x->without_n);
    else if (x->role == MUX_ROLE_FOREGROUND)
      say("foreground slowdown: not measured (%ld steps had a background partner, %ld had none; give the log "
          "of a foreground-only run as [multiplex] baseline)\n", x->with_n, x->without_n);
    else {
      char slow[64] = "not measured by the foreground";
      if (isfinite(info.fg_slowdown)) snprintf(slow, sizeof slow, "%.3f (as the foreground measured it)", info.fg_slowdown);
      mux_counters_t me, fg;
      mux_read(&me, &fg);
      say("paused %.0f%% of the time waiting for the foreground (CPU priority %s); pieces through the gate %.0f; "
          "foreground slowdown %s\n", x->run_sec > 0 ? 100.0 * x->paused_sec / x->run_sec : 0.0, x->priority,
          me.bg_pieces, slow);
    }
  }
  mux_detach(); /* (a background's last recorded piece is launched here) */
  if (x->role == MUX_ROLE_BACKGROUND && graphs_on(&t->cfg) && t->world->rank == 0) {
    const backend_context_t *c = t->be->context();
    say("pieces recorded as CUDA graphs: %ld launched (%ld built, %ld updated in place), %ld recordings cut short "
        "by a wait\n", c->graphs_launched, c->graphs_built, c->graphs_updated, c->graphs_cut);
  }
}
