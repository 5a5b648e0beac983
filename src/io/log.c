/* The HDF5 metrics log: layout (doc/formats.md), create / resume, and the per-step rows. One table
 * of series drives creation, reopening, truncation on resume and closing. */
#include "io/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "surge_build_config.h"
#include "core/error.h"
#include "io/log_h5.h"

#define LOG_PROGRAM "surge-train"

typedef enum metric {
  METRIC_LOSS = 0,
  METRIC_LR,
  METRIC_GRAD_NORM,
  METRIC_STEP_TIME,
  METRIC_SAMPLES_PER_SEC,
  METRIC_COUNT
} metric_t;

static const struct {
  const char *name, *units, *description;
} metric_info[METRIC_COUNT] = {
    [METRIC_LOSS] = {"loss", "nats", "training loss of the step: mean cross-entropy over the global batch"},
    [METRIC_LR] = {"lr", "1", "learning rate the step used"},
    [METRIC_GRAD_NORM] = {"grad_norm", "1", "global L2 norm of the gradient before clipping"},
    [METRIC_STEP_TIME] = {"step_time", "s", "wall time of the step on the slowest rank"},
    [METRIC_SAMPLES_PER_SEC] = {"samples_per_sec", "samples/s", "global batch divided by step_time"},
};

static const struct {
  const char *name, *description;
} phase_info[PHASE_COUNT] = {
    [PHASE_DATA] = {"data", "seconds each rank spent fetching its part of the batch"},
    [PHASE_FORWARD] = {"forward", "seconds each rank spent in the forward pass and the loss"},
    [PHASE_BACKWARD] = {"backward", "seconds each rank spent in the backward pass"},
    [PHASE_COMM] = {"comm", "seconds each rank spent inside collectives"},
    [PHASE_WAIT] = {"wait", "seconds each rank waited for the slowest rank before the gradient allreduce"},
    [PHASE_OPTIMIZER] = {"optimizer", "seconds each rank spent clipping and updating parameters"},
    [PHASE_BACKGROUND] = {"background", "foreground ranks: CPU seconds their background partner's process "
                                        "used during the step (0 without multiplexing)"},
    [PHASE_PAUSED] = {"paused", "background ranks: seconds of the step paused until their foreground partner "
                                "was idle (0 without multiplexing)"},
};

typedef enum mux_metric { MUX_FG_SPS = 0, MUX_BG_SPS, MUX_TOTAL_SPS, MUX_ACTIVE, MUX_METRIC_COUNT } mux_metric_t;

static const struct {
  const char *name, *units, *description;
} mux_info[MUX_METRIC_COUNT] = {
    [MUX_FG_SPS] = {"foreground_samples_per_sec", "samples/s",
                    "the foreground job's global batch over its slowest rank's step time"},
    [MUX_BG_SPS] = {"background_samples_per_sec", "samples/s",
                    "samples the background ranks finished per second during the foreground's step, summed"},
    [MUX_TOTAL_SPS] = {"total_samples_per_sec", "samples/s", "foreground plus background samples per second"},
    [MUX_ACTIVE] = {"background_ranks_active", "ranks", "foreground ranks whose background partner's gate let a piece of work through in the step"},
};

const char *log_phase_name(log_phase_t p) {
  if ((int)p < 0 || p >= PHASE_COUNT) return "unknown";
  return phase_info[p].name;
}

/* Groups holding series; the rows of every series in a group follow that group's step scale. */
typedef enum log_group {
  GROUP_METRICS = 0,
  GROUP_RANKS,
  GROUP_EVAL,
  GROUP_EVENTS,
  GROUP_MULTIPLEX, /* multiplexed runs only */
  GROUP_COUNT
} log_group_t;
static const char *const group_path[GROUP_COUNT] = {"/metrics", "/ranks", "/eval", "/events", "/multiplex"};

enum { SPEC_MAX = 1 + METRIC_COUNT + TRAFFIC_COUNT + PHASE_COUNT + 3 + 3 + 1 + MUX_METRIC_COUNT };

typedef struct series_spec {
  h5_series_t *s;
  log_group_t group;
  char name[48];
  h5_series_kind_t kind;
  int per_rank;         /* 2-D (steps, ranks) */
  char units[16];
  char description[160];
} series_spec_t;

typedef struct log_kinds {
  h5_series_kind_t step, real, count, rank, text;
} log_kinds_t;

struct run_log {
  comm_t *world;
  char *path;
  long flush_every;
  hid_t file, text_type;
  h5_series_t step, metric[METRIC_COUNT], bytes[TRAFFIC_COUNT];
  h5_series_t rank_scale, phase[PHASE_COUNT];
  h5_series_t eval_step, eval_loss, eval_accuracy;
  h5_series_t event_step, event_time, event_text;
  h5_series_t mux_step, mux[MUX_METRIC_COUNT];
  int multiplexed;   /* the log has /multiplex (and the two multiplexed phases): set when it is created */
  int run_multiplexed; /* this run is multiplexed (a resumed log keeps what it began as) */
  series_spec_t spec[SPEC_MAX];
  int nspec;
  double *gathered;  /* (ranks, PHASE_COUNT) from comm_gather_double, rank 0 */
  double *phase_row; /* (columns of /ranks) one phase's row, NaN beyond the ranks of this run */
};

static const double fill_nan = NAN;

static log_kinds_t log_kinds(hid_t text_type) {
  return (log_kinds_t){
      .step = {H5T_STD_I64LE, H5T_NATIVE_INT64, NULL},
      .real = {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &fill_nan},
      .count = {H5T_STD_U64LE, H5T_NATIVE_UINT64, NULL},
      .rank = {H5T_STD_I32LE, H5T_NATIVE_INT, NULL},
      .text = {text_type, text_type, NULL},
  };
}

static void add_spec(run_log_t *L, h5_series_t *s, log_group_t group, const char *name, h5_series_kind_t kind,
                     int per_rank, const char *units, const char *description) {
  series_spec_t *sp = &L->spec[L->nspec++];
  *sp = (series_spec_t){.s = s, .group = group, .kind = kind, .per_rank = per_rank};
  snprintf(sp->name, sizeof sp->name, "%s", name);
  snprintf(sp->units, sizeof sp->units, "%s", units);
  snprintf(sp->description, sizeof sp->description, "%s", description);
}

/* The background and paused phases exist in multiplexed runs only. */
static int has_phase(const run_log_t *L, int p) {
  return L->multiplexed || (p != PHASE_BACKGROUND && p != PHASE_PAUSED);
}

/* The table of every step-indexed series, scales first in each group. */
static void build_specs(run_log_t *L) {
  log_kinds_t k = log_kinds(L->text_type);
  const char *step_doc = "steps completed after the logged step (1-based)";
  add_spec(L, &L->step, GROUP_METRICS, "step", k.step, 0, "steps", step_doc);
  for (int m = 0; m < METRIC_COUNT; m++)
    add_spec(L, &L->metric[m], GROUP_METRICS, metric_info[m].name, k.real, 0, metric_info[m].units,
             metric_info[m].description);
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    char name[48], doc[160];
    snprintf(name, sizeof name, "bytes_%s", traffic_name((traffic_t)t));
    snprintf(doc, sizeof doc, "bytes handed to the comm layer as %s traffic during the step, summed over ranks",
             traffic_name((traffic_t)t));
    add_spec(L, &L->bytes[t], GROUP_METRICS, name, k.count, 0, "bytes", doc);
  }
  for (int p = 0; p < PHASE_COUNT; p++) {
    if (!has_phase(L, p)) continue;
    char name[48];
    snprintf(name, sizeof name, "phase_%s", phase_info[p].name);
    add_spec(L, &L->phase[p], GROUP_RANKS, name, k.real, 1, "s", phase_info[p].description);
  }
  add_spec(L, &L->eval_step, GROUP_EVAL, "step", k.step, 0, "steps", "steps completed when the evaluation ran");
  add_spec(L, &L->eval_loss, GROUP_EVAL, "loss", k.real, 0, "nats", "mean cross-entropy over the evaluation set");
  add_spec(L, &L->eval_accuracy, GROUP_EVAL, "accuracy", k.real, 0, "1",
           "fraction of evaluation targets predicted correctly");
  add_spec(L, &L->event_step, GROUP_EVENTS, "step", k.step, 0, "steps", "steps completed when the event happened");
  add_spec(L, &L->event_time, GROUP_EVENTS, "time", k.real, 0, "s",
           "wall-clock time of the event, seconds since 1970-01-01T00:00:00Z");
  add_spec(L, &L->event_text, GROUP_EVENTS, "text", k.text, 0, "text", "what happened, one line of text");
  if (!L->multiplexed) return;
  add_spec(L, &L->mux_step, GROUP_MULTIPLEX, "step", k.step, 0, "steps", step_doc);
  for (int m = 0; m < MUX_METRIC_COUNT; m++)
    add_spec(L, &L->mux[m], GROUP_MULTIPLEX, mux_info[m].name, k.real, 0, mux_info[m].units, mux_info[m].description);
}

/* The groups this log has (/multiplex only for multiplexed runs). */
static int has_group(const run_log_t *L, int g) { return g != GROUP_MULTIPLEX || L->multiplexed; }

/* The step scale of a group's rows. */
static h5_series_t *group_scale(run_log_t *L, log_group_t g) {
  switch (g) {
  case GROUP_EVAL: return &L->eval_step;
  case GROUP_EVENTS: return &L->event_step;
  case GROUP_MULTIPLEX: return &L->mux_step;
  default: return &L->step;
  }
}

/* Rank 0 alone opens the file: no locks (a reader such as h5dump may open it while the run writes)
 * and metadata kept in memory until a flush; rows wait in the series until then too, so the file on
 * disk is always the last flush (doc/formats.md, "Reading a log while it is written"). */
static hid_t log_fapl(const char *path) {
  hid_t fapl = h5_check(H5Pcreate(H5P_FILE_ACCESS), path, "make the access properties of the log", "");
  h5_check(H5Pset_file_locking(fapl, 0, 1), path, "turn off file locking for the log", "");
  H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
  h5_check(H5Pget_mdc_config(fapl, &mdc), path, "get the metadata cache settings of the log", "");
  mdc.evictions_enabled = 0;
  mdc.incr_mode = H5C_incr__off;
  mdc.flash_incr_mode = H5C_flash_incr__off;
  mdc.decr_mode = H5C_decr__off;
  h5_check(H5Pset_mdc_config(fapl, &mdc), path, "set the metadata cache of the log", "");
  return fapl;
}

static hid_t group_open(run_log_t *L, const char *gpath, int create) {
  if (create)
    return h5_check(H5Gcreate2(L->file, gpath, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), L->path, "create", gpath);
  if (h5_check(H5Lexists(L->file, gpath, H5P_DEFAULT), L->path, "look up", gpath) == 0)
    surge_input_error("%s: %s is missing (hint: a log of another Surge version? move it away to start a new log)",
                      L->path, gpath);
  return h5_check(H5Gopen2(L->file, gpath, H5P_DEFAULT), L->path, "open", gpath);
}

static void group_close(run_log_t *L, hid_t g, const char *gpath) {
  h5_check(H5Gclose(g), L->path, "close", gpath);
}

/* Create (or open) every series; a new file also gets its dimension scales attached. */
static void layout_open(run_log_t *L, int create, int ranks) {
  hid_t grp[GROUP_COUNT];
  for (int g = 0; g < GROUP_COUNT; g++) grp[g] = has_group(L, g) ? group_open(L, group_path[g], create) : -1;
  for (int i = 0; i < L->nspec; i++) {
    series_spec_t *sp = &L->spec[i];
    if (create)
      h5_series_create(sp->s, L->path, grp[sp->group], group_path[sp->group], sp->name, sp->kind,
                       sp->per_rank ? (hsize_t)ranks : 0, sp->units, sp->description);
    else
      h5_series_open(sp->s, L->path, grp[sp->group], group_path[sp->group], sp->name, sp->kind.mem_type);
    if (sp->s->ndims != (sp->per_rank ? 2 : 1))
      surge_input_error("%s: %s is %d-D where a Surge log has a %d-D dataset", L->path, sp->s->path, sp->s->ndims,
                        sp->per_rank ? 2 : 1);
  }
  if (create) {
    log_kinds_t k = log_kinds(L->text_type);
    h5_series_create(&L->rank_scale, L->path, grp[GROUP_RANKS], "/ranks", "rank", k.rank, 0, "1",
                     "rank in the run's world communicator (column of every /ranks dataset)");
    for (int r = 0; r < ranks; r++) h5_series_append(&L->rank_scale, &r);
    h5_series_make_scale(&L->rank_scale, "rank");
    for (int g = 0; g < GROUP_COUNT; g++)
      if (g != GROUP_RANKS && has_group(L, g)) h5_series_make_scale(group_scale(L, (log_group_t)g), "step");
    for (int i = 0; i < L->nspec; i++) {
      series_spec_t *sp = &L->spec[i];
      h5_series_t *scale = group_scale(L, sp->group);
      if (sp->s != scale) h5_series_attach_scale(sp->s, scale, 0);
      if (sp->per_rank) h5_series_attach_scale(sp->s, &L->rank_scale, 1);
    }
  } else {
    h5_series_open(&L->rank_scale, L->path, grp[GROUP_RANKS], "/ranks", "rank", H5T_NATIVE_INT);
  }
  for (int g = 0; g < GROUP_COUNT; g++)
    if (has_group(L, g)) group_close(L, grp[g], group_path[g]);
}

/* Rows of a step series up to and including resume_step (the rows after it are dropped). */
static hsize_t rows_through(h5_series_t *steps, long resume_step) {
  int64_t *v = h5_series_read_int64(steps);
  hsize_t n = 0;
  while (n < steps->rows && v[n] <= resume_step) n++;
  free(v);
  return n;
}

static void drop_rows_after(run_log_t *L, long resume_step) {
  hsize_t keep[GROUP_COUNT];
  for (int g = 0; g < GROUP_COUNT; g++)
    keep[g] = has_group(L, g) ? rows_through(group_scale(L, (log_group_t)g), resume_step) : 0;
  for (int i = 0; i < L->nspec; i++) h5_series_truncate(L->spec[i].s, keep[L->spec[i].group]);
}

/* A resumed run with more ranks than the log has columns: widen /ranks (old rows read NaN there). */
static void widen_ranks(run_log_t *L, int ranks) {
  for (int r = (int)h5_series_length(&L->rank_scale); r < ranks; r++) h5_series_append(&L->rank_scale, &r);
  for (int p = 0; p < PHASE_COUNT; p++)
    if (has_phase(L, p)) h5_series_widen(&L->phase[p], h5_series_length(&L->rank_scale));
}

/* An existing file must be a Surge log before a resumed run writes into it. It is checked
 * read-only, so a file of another program is never touched (opening a newer-format HDF5 file for
 * writing marks its superblock). */
static void require_surge_log(const char *path, hid_t fapl) {
  const char *hint = "(hint: [log] file names another file; move it away or choose another name)";
  if (h5_check(H5Fis_hdf5(path), path, "read the file", "") == 0)
    surge_input_error("%s: not a Surge log (not an HDF5 file) %s", path, hint);
  hid_t f = h5_check(H5Fopen(path, H5F_ACC_RDONLY, fapl), path, "open the file", "");
  char program[64] = "";
  int has_run = h5_check(H5Lexists(f, "/run", H5P_DEFAULT), path, "look up", "/run") > 0;
  if (has_run) {
    hid_t run = h5_check(H5Gopen2(f, "/run", H5P_DEFAULT), path, "open", "/run");
    h5_attr_get_string(run, "/run", "program", program, sizeof program, path);
    h5_check(H5Gclose(run), path, "close", "/run");
  }
  if (strcmp(program, LOG_PROGRAM) != 0)
    surge_input_error("%s: not a Surge log (%s) %s", path,
                      has_run ? "/run@program is not \"" LOG_PROGRAM "\"" : "no /run group", hint);
  h5_check(H5Fclose(f), path, "close the file", "");
}

static void iso8601_utc_now(char *buf, size_t n) {
  time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* /run: attributes and the resolved deck; a resumed run keeps the first start time. */
static void write_run_info(run_log_t *L, const config_t *cfg, const char *deck_text, const slab_layout_t *params,
                           int fresh) {
  hid_t run = group_open(L, "/run", fresh);
  if (fresh) {
    char start[32];
    iso8601_utc_now(start, sizeof start);
    h5_attr_put_string(run, "/run", "start_time", start, L->path);
  }
  h5_attr_put_string(run, "/run", "program", LOG_PROGRAM, L->path);
  h5_attr_put_string(run, "/run", "version", PACKAGE_VERSION, L->path);
  h5_attr_put_int64(run, "/run", "ranks", L->world->size, L->path);
  h5_attr_put_string(run, "/run", "layout", cfg->parallel_mode, L->path);
  h5_attr_put_string(run, "/run", "model", cfg->zoo, L->path);
  h5_attr_put_int64(run, "/run", "parameters", (int64_t)params->total, L->path);
  h5_attr_put_int64(run, "/run", "global_batch", cfg->global_batch, L->path);
  h5_attr_put_int64(run, "/run", "flush_every", cfg->log_flush_every, L->path);
  h5_text_put(run, "/run", "deck", deck_text ? deck_text : "", L->path);
  group_close(L, run, "/run");
}

/* Store every pending row, then make the file on disk complete up to here. */
static void log_flush(run_log_t *L) {
  for (int i = 0; i < L->nspec; i++) h5_series_write_pending(L->spec[i].s);
  h5_series_write_pending(&L->rank_scale);
  h5_check(H5Fflush(L->file, H5F_SCOPE_GLOBAL), L->path, "flush the log (hint: is the disk full?)", "");
}

static void append_event(run_log_t *L, long step, const char *text) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t s = step;
  double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
  h5_series_append(&L->event_step, &s);
  h5_series_append(&L->event_time, &t);
  h5_series_append(&L->event_text, &text);
}

/* Rank 0: create the file, or reopen it and drop the rows after resume_step. */
static void open_file(run_log_t *L, const config_t *cfg, const char *deck_text, const slab_layout_t *params,
                      long resume_step) {
  int resume = resume_step >= 0 && access(L->path, F_OK) == 0;
  L->text_type = h5_check(H5Tcopy(H5T_C_S1), L->path, "make the string type of", "/events/text");
  h5_check(H5Tset_size(L->text_type, H5T_VARIABLE), L->path, "make the string type of", "/events/text");
  h5_check(H5Tset_cset(L->text_type, H5T_CSET_UTF8), L->path, "make the string type of", "/events/text");
  hid_t fapl = log_fapl(L->path);
  if (resume) require_surge_log(L->path, fapl);
  if (resume)
    L->file = h5_check(H5Fopen(L->path, H5F_ACC_RDWR, fapl), L->path, "open the log for appending", "");
  else
    L->file = h5_check(H5Fcreate(L->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), L->path, "create the log", "");
  h5_check(H5Pclose(fapl), L->path, "close the access properties of the log", "");
  if (resume) L->multiplexed = h5_check(H5Lexists(L->file, "/multiplex", H5P_DEFAULT), L->path, "look up", "/multiplex") > 0;
  build_specs(L);
  layout_open(L, !resume, L->world->size);
  if (resume) {
    drop_rows_after(L, resume_step);
    widen_ranks(L, L->world->size);
  }
  write_run_info(L, cfg, deck_text, params, !resume);
  if (resume_step >= 0) {
    char text[160];
    snprintf(text, sizeof text, "resumed at step %ld on %d rank%s%s", resume_step, L->world->size,
             L->world->size == 1 ? "" : "s",
             L->multiplexed == L->run_multiplexed ? ""
             : L->multiplexed ? " without multiplexing (its /multiplex rows read NaN from here)"
                              : " multiplexed (this log began without /multiplex: the accounting is printed only)");
    append_event(L, resume_step, text);
  }
  log_flush(L);
}

run_log_t *run_log_open(const char *path, const config_t *cfg, const char *deck_text, const slab_layout_t *params,
                        comm_t *world, long resume_step) {
  run_log_t *L = xcalloc(1, sizeof *L);
  L->world = world;
  L->file = -1;
  L->flush_every = cfg->log_flush_every > 0 ? cfg->log_flush_every : 1;
  L->multiplexed = L->run_multiplexed = cfg->mux_role != 0;
  if (world->rank != 0) return L;
  L->path = xstrdup(path);
  h5util_quiet_t q = h5util_quiet_begin();
  open_file(L, cfg, deck_text, params, resume_step);
  h5util_quiet_end(q);
  L->gathered = xcalloc(surge_mul_size((size_t)world->size, PHASE_COUNT, "log phase gather"), sizeof(double));
  L->phase_row = xcalloc(h5_series_length(&L->rank_scale), sizeof(double));
  return L;
}

void run_log_step(run_log_t *L, const log_row_t *row) {
  comm_gather_double(L->world, row->phase, PHASE_COUNT, L->gathered, 0, TRAFFIC_OTHER);
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t step = row->step;
  const double metric[METRIC_COUNT] = {
      [METRIC_LOSS] = row->loss,
      [METRIC_LR] = row->lr,
      [METRIC_GRAD_NORM] = row->grad_norm,
      [METRIC_STEP_TIME] = row->step_sec,
      [METRIC_SAMPLES_PER_SEC] = row->samples_per_sec,
  };
  h5_series_append(&L->step, &step);
  for (int m = 0; m < METRIC_COUNT; m++) h5_series_append(&L->metric[m], &metric[m]);
  for (int t = 0; t < TRAFFIC_COUNT; t++) h5_series_append(&L->bytes[t], &row->bytes[t]);
  // gathered is (ranks, PHASE_COUNT); a /ranks row is (columns), NaN for columns without a rank
  hsize_t cols = h5_series_length(&L->rank_scale);
  for (int p = 0; p < PHASE_COUNT; p++) {
    if (!has_phase(L, p)) continue;
    for (hsize_t r = 0; r < cols; r++)
      L->phase_row[r] = (int)r < L->world->size ? L->gathered[r * PHASE_COUNT + (hsize_t)p] : NAN;
    h5_series_append(&L->phase[p], L->phase_row);
  }
  if (L->multiplexed) {
    int m = L->run_multiplexed;
    const double mux[MUX_METRIC_COUNT] = {
        [MUX_FG_SPS] = m ? row->fg_samples_per_sec : NAN,
        [MUX_BG_SPS] = m ? row->bg_samples_per_sec : NAN,
        [MUX_TOTAL_SPS] = m ? row->total_samples_per_sec : NAN,
        [MUX_ACTIVE] = m ? row->bg_ranks_active : NAN,
    };
    h5_series_append(&L->mux_step, &step);
    for (int m = 0; m < MUX_METRIC_COUNT; m++) h5_series_append(&L->mux[m], &mux[m]);
  }
  if (row->step % L->flush_every == 0) log_flush(L);
  h5util_quiet_end(q);
}

void run_log_eval(run_log_t *L, long step, double loss, double accuracy) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t s = step;
  h5_series_append(&L->eval_step, &s);
  h5_series_append(&L->eval_loss, &loss);
  h5_series_append(&L->eval_accuracy, &accuracy);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_event(run_log_t *L, long step, const char *text) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  append_event(L, step, text);
  log_flush(L);
  h5util_quiet_end(q);
}

/* A plan's per-node numbers: the plan's ranges always, its predicted times when it has them. */
static void put_plan_nodes(run_log_t *L, hid_t grp, const burst_plan_t *plan, const graph_t *g) {
  log_kinds_t k = log_kinds(L->text_type);
  size_t n = (size_t)plan->nodes;
  int *index = xcalloc(n + 1, sizeof *index);
  const char **name = xcalloc(n + 1, sizeof *name), **kind = xcalloc(n + 1, sizeof *kind);
  int costed = 0;
  for (int v = 0; v < plan->nodes; v++) {
    index[v] = v;
    name[v] = g->l[v].name;
    kind[v] = layer_kind_name(g->l[v].kind);
    costed |= plan->comp_us[v] > 0;
  }
  h5_array_put(grp, "/plan", "node", k.rank, n, index, "1", "index of the node in the model graph", L->path);
  h5_array_put(grp, "/plan", "name", k.text, n, name, "text", "name of the node", L->path);
  h5_array_put(grp, "/plan", "kind", k.text, n, kind, "text", "layer kind of the node", L->path);
  h5_array_put(grp, "/plan", "ranks", k.rank, n, plan->n, "ranks", "ranks the node runs on (n)", L->path);
  h5_array_put(grp, "/plan", "first_rank", k.rank, n, plan->first, "1",
               "first rank of the node's contiguous range [first, first + n)", L->path);
  h5_array_put(grp, "/plan", "per_rank_batch", k.rank, n, plan->per_rank, "samples",
               "samples of the busiest rank of the node: ceil(global batch / n)", L->path);
  if (costed) {
    h5_array_put(grp, "/plan", "compute_us", k.real, n, plan->comp_us, "us",
                 "predicted forward+backward time of the node on its busiest rank", L->path);
    h5_array_put(grp, "/plan", "transfer_in_us", k.real, n, plan->xfer_us, "us",
                 "predicted time of the re-shards into the node (activations and their gradients)", L->path);
    h5_array_put(grp, "/plan", "sync_us", k.real, n, plan->sync_us, "us",
                 "predicted time of the gradient allreduce over the node's ranks", L->path);
  }
  free(index);
  free(name);
  free(kind);
}

void run_log_plan(run_log_t *L, const burst_plan_t *plan, const graph_t *g, const char *plan_text) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  if (h5_check(H5Lexists(L->file, "/plan", H5P_DEFAULT), L->path, "look up", "/plan") > 0)
    h5_check(H5Ldelete(L->file, "/plan", H5P_DEFAULT), L->path, "replace", "/plan");
  hid_t grp = group_open(L, "/plan", 1);
  put_plan_nodes(L, grp, plan, g);
  int predicted = plan->one_rank_us > 0;
  h5_attr_put_double(grp, "/plan", "predicted_iteration_us", predicted ? plan->iter_us : NAN, L->path);
  h5_attr_put_double(grp, "/plan", "predicted_rank_us", predicted ? plan->rank_us : NAN, L->path);
  h5_attr_put_double(grp, "/plan", "one_rank_us", predicted ? plan->one_rank_us : NAN, L->path);
  h5_attr_put_int64(grp, "/plan", "job_ranks", plan->ranks, L->path);
  h5_attr_put_int64(grp, "/plan", "global_batch", plan->batch, L->path);
  h5_attr_put_double(grp, "/plan", "amplification_limit", plan->amp_limit, L->path);
  h5_text_put(grp, "/plan", "text", plan_text ? plan_text : "", L->path);
  group_close(L, grp, "/plan");
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_multiplex(run_log_t *L, const log_mux_info_t *info) {
  if (L->world->rank != 0 || !L->multiplexed || !L->run_multiplexed) return;
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t grp = group_open(L, "/multiplex", 0);
  h5_attr_put_string(grp, "/multiplex", "role", info->role, L->path);
  h5_attr_put_string(grp, "/multiplex", "channel", info->channel, L->path);
  h5_attr_put_string(grp, "/multiplex", "priority", info->priority, L->path);
  h5_attr_put_string(grp, "/multiplex", "on_foreground_end", info->on_foreground_end, L->path);
  h5_attr_put_double(grp, "/multiplex", "foreground_samples_per_sec", info->fg_samples_per_sec, L->path);
  h5_attr_put_double(grp, "/multiplex", "background_samples_per_sec", info->bg_samples_per_sec, L->path);
  h5_attr_put_double(grp, "/multiplex", "total_samples_per_sec", info->total_samples_per_sec, L->path);
  h5_attr_put_double(grp, "/multiplex", "foreground_slowdown", info->fg_slowdown, L->path);
  group_close(L, grp, "/multiplex");
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_close(run_log_t *L) {
  if (!L) return;
  if (L->world->rank == 0) {
    h5util_quiet_t q = h5util_quiet_begin();
    log_flush(L);
    for (int i = 0; i < L->nspec; i++) h5_series_close(L->spec[i].s);
    h5_series_close(&L->rank_scale);
    h5_check(H5Tclose(L->text_type), L->path, "close the string type of", "/events/text");
    h5_check(H5Fclose(L->file), L->path, "close the log (hint: is the disk full?)", "");
    h5util_quiet_end(q);
  }
  free(L->gathered);
  free(L->phase_row);
  free(L->path);
  free(L);
}
