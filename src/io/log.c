/* The HDF5 metrics log: layout (doc/formats.md), create / resume, and the per-step rows. One table
 * of series drives creation, reopening, truncation on resume and closing. */
#include "io/log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "surge_build_config.h"
#include "core/error.h"
#include "io/log_h5.h"
#include "io/run_dir.h"

/* Space reserved before each flush beyond the rows' own (reserve_space). */
#define LOG_RESERVE_METADATA_BYTES (64.0 * 1024)
#define LOG_RESERVE_SERIES_BYTES (2.0 * 1024)

/* Every step-indexed series of the log: its dataset, and how it is made. */
typedef struct series_spec {
  h5_series_t *s;
  log_group_t group;
  char name[48];
  h5_series_kind_t kind;
  int per_rank;         /* 2-D (steps, ranks) */
  int per_boundary;     /* 2-D (steps, pipeline boundaries) */
  char units[16];
  char description[160];
} series_spec_t;

enum { SPEC_MAX = LOG_GROUP_COUNT + LOG_METRIC_COUNT + 2 * TRAFFIC_COUNT + PHASE_COUNT + LOG_EVAL_COUNT +
                  LOG_EVENT_COUNT + LOG_MUX_METRIC_COUNT + LOG_PIPE_COLUMN_COUNT + LOG_CMP_METRIC_COUNT +
                  LOG_SAMPLE_COUNT };

typedef struct log_kinds {
  h5_series_kind_t step, real, count, rank, text;
} log_kinds_t;

struct run_log {
  comm_t *world;
  char *path;
  h5util_check_t chk; /* rank 0: every HDF5 call's failure is a runtime error naming path */
  long flush_every;
  hid_t file, text_type;
  h5_series_t step[LOG_GROUP_COUNT]; /* each group's step scale (/ranks rows follow /metrics/step) */
  h5_series_t rank_scale;            /* /ranks/rank: the columns of /ranks */
  h5_series_t metric[LOG_METRIC_COUNT], bytes[TRAFFIC_COUNT], internode[TRAFFIC_COUNT], phase[PHASE_COUNT];
  h5_series_t eval[LOG_EVAL_COUNT], event[LOG_EVENT_COUNT], mux[LOG_MUX_METRIC_COUNT];
  h5_series_t pipe[LOG_PIPE_COLUMN_COUNT];
  h5_series_t cmp[LOG_CMP_METRIC_COUNT];
  h5_series_t sample[LOG_SAMPLE_COUNT];
  int multiplexed;   /* the log has /multiplex (and the two multiplexed phases): set when it is created */
  int pipelined;     /* the log has /pipeline/events: created by a 3d run */
  int compressed;    /* the log has /compress: created by a 3d run with compression */
  int sampled;       /* the log has /samples: created by a run with [run] sample_every */
  hsize_t boundaries; /* columns of /compress's 2-D series */
  double *boundary_row; /* (boundaries) */
  int run_multiplexed; /* this run is multiplexed (a resumed log keeps what it began as) */
  series_spec_t spec[SPEC_MAX];
  int nspec;
  int fd;            /* the file's descriptor (space is reserved through it before a flush), -1: none */
  int reserve;       /* the file system can reserve space (fallocate) */
  long flushed_step; /* the last step the file on disk holds */
  int flushed;       /* the file on disk is a whole log (a reopened one, or flushed once) */
  long pending_step; /* the last step appended */
  double *gathered;  /* (ranks, PHASE_COUNT) from comm_gather_double, rank 0 */
  double *phase_row; /* (columns of /ranks) one phase's row, NaN beyond the ranks of this run */
};

const char *log_phase_name(log_phase_t p) {
  if ((int)p < 0 || p >= PHASE_COUNT) return "unknown";
  return log_phase_info[p].name;
}

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

/* Add series s of group: prefix + info's name, with info's units and description. */
static void add_spec(run_log_t *L, h5_series_t *s, log_group_t group, const char *prefix, const log_series_info_t *info,
                     h5_series_kind_t kind, int per_rank) {
  if (L->nspec == SPEC_MAX) surge_runtime_error("log: more series than SPEC_MAX (%d): raise it", SPEC_MAX);
  series_spec_t *sp = &L->spec[L->nspec++];
  *sp = (series_spec_t){.s = s, .group = group, .kind = kind, .per_rank = per_rank};
  snprintf(sp->name, sizeof sp->name, "%s%s", prefix, info->name);
  snprintf(sp->units, sizeof sp->units, "%s", info->units);
  snprintf(sp->description, sizeof sp->description, "%s", info->description);
}

/* The background and paused phases exist in multiplexed runs only. */
static int has_phase(const run_log_t *L, int p) { return L->multiplexed || !log_phase_multiplexed((log_phase_t)p); }

/* The groups this log has (/multiplex only for multiplexed runs, /pipeline/events for 3d runs,
 * /compress for 3d runs with compression, /samples for runs that sample). */
static int has_group(const run_log_t *L, int g) {
  return g == LOG_MULTIPLEX ? L->multiplexed : g == LOG_PIPELINE ? L->pipelined : g == LOG_COMPRESS ? L->compressed
         : g == LOG_SAMPLES ? L->sampled : 1;
}

/* The step scale of a group's rows. */
static h5_series_t *group_scale(run_log_t *L, log_group_t g) { return &L->step[g == LOG_RANKS ? LOG_METRICS : g]; }

/* The table of every step-indexed series (io/log_format.h), scales first in each group. */
static void build_specs(run_log_t *L) {
  log_kinds_t k = log_kinds(L->text_type);
  for (int g = 0; g < LOG_GROUP_COUNT; g++)
    if (g != LOG_RANKS && has_group(L, g)) add_spec(L, &L->step[g], (log_group_t)g, "", &log_scale_info[g], k.step, 0);
  for (int m = 0; m < LOG_METRIC_COUNT; m++) add_spec(L, &L->metric[m], LOG_METRICS, "", &log_metric_info[m], k.real, 0);
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    char doc[160];
    snprintf(doc, sizeof doc, "bytes handed to the comm layer as %s traffic during the step, summed over ranks",
             traffic_name((traffic_t)t));
    log_series_info_t info = {traffic_name((traffic_t)t), "bytes", doc};
    add_spec(L, &L->bytes[t], LOG_METRICS, LOG_BYTES_PREFIX, &info, k.count, 0);
  }
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    char doc[200];
    snprintf(doc, sizeof doc, "of bytes_%s, the bytes that crossed nodes: sends to a rank on another node and "
             "collectives over groups spanning nodes", traffic_name((traffic_t)t));
    log_series_info_t info = {traffic_name((traffic_t)t), "bytes", doc};
    add_spec(L, &L->internode[t], LOG_METRICS, LOG_INTERNODE_PREFIX, &info, k.count, 0);
  }
  for (int p = 0; p < PHASE_COUNT; p++)
    if (has_phase(L, p)) add_spec(L, &L->phase[p], LOG_RANKS, LOG_PHASE_PREFIX, &log_phase_info[p], k.real, 1);
  for (int e = 0; e < LOG_EVAL_COUNT; e++) add_spec(L, &L->eval[e], LOG_EVAL, "", &log_eval_info[e], k.real, 0);
  add_spec(L, &L->event[LOG_EVENT_TIME], LOG_EVENTS, "", &log_event_info[LOG_EVENT_TIME], k.real, 0);
  add_spec(L, &L->event[LOG_EVENT_TEXT], LOG_EVENTS, "", &log_event_info[LOG_EVENT_TEXT], k.text, 0);
  for (int m = 0; m < LOG_MUX_METRIC_COUNT && L->multiplexed; m++)
    add_spec(L, &L->mux[m], LOG_MULTIPLEX, "", &log_multiplex_info[m], k.real, 0);
  for (int c = 0; c < LOG_PIPE_COLUMN_COUNT && L->pipelined; c++)
    add_spec(L, &L->pipe[c], LOG_PIPELINE, "", &log_pipe_info[c], c >= LOG_PIPE_START ? k.real : k.rank, 0);
  for (int c = 0; c < LOG_SAMPLE_COUNT && L->sampled; c++)
    add_spec(L, &L->sample[c], LOG_SAMPLES, "", &log_sample_info[c], k.text, 0);
  for (int c = 0; c < LOG_CMP_METRIC_COUNT && L->compressed; c++) {
    add_spec(L, &L->cmp[c], LOG_COMPRESS, "", &log_compress_info[c], k.real, 0);
    L->spec[L->nspec - 1].per_boundary = c >= LOG_CMP_PER_BOUNDARY;
  }
}

/* Rank 0 alone opens the file: no locks (a reader such as h5dump may open it while the run writes)
 * and metadata kept in memory until a flush; rows wait in the series until then too, so the file on
 * disk is always the last flush (doc/formats.md, "Reading a log while it is written"). */
static hid_t log_fapl(h5util_check_t *chk) {
  hid_t fapl = h5util_check(chk, H5Pcreate(H5P_FILE_ACCESS), "make the access properties of the log", "");
  h5util_check(chk, H5Pset_file_locking(fapl, 0, 1), "turn off file locking for the log", "");
  H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
  h5util_check(chk, H5Pget_mdc_config(fapl, &mdc), "get the metadata cache settings of the log", "");
  mdc.evictions_enabled = 0;
  mdc.incr_mode = H5C_incr__off;
  mdc.flash_incr_mode = H5C_flash_incr__off;
  mdc.decr_mode = H5C_decr__off;
  h5util_check(chk, H5Pset_mdc_config(fapl, &mdc), "set the metadata cache of the log", "");
  return fapl;
}

static hid_t group_open(run_log_t *L, const char *gpath, int create) {
  if (create) { /* with the groups above it (/pipeline of /pipeline/events) */
    hid_t lcpl = h5util_check(&L->chk, H5Pcreate(H5P_LINK_CREATE), "make the link properties of", gpath);
    h5util_check(&L->chk, H5Pset_create_intermediate_group(lcpl, 1), "make the link properties of", gpath);
    hid_t g = h5util_check(&L->chk, H5Gcreate2(L->file, gpath, lcpl, H5P_DEFAULT, H5P_DEFAULT), "create", gpath);
    h5util_check(&L->chk, H5Pclose(lcpl), "close the link properties of", gpath);
    return g;
  }
  if (h5util_check(&L->chk, H5Lexists(L->file, gpath, H5P_DEFAULT), "look up", gpath) == 0)
    surge_input_error("%s: %s is missing (hint: a log of another Surge version? move it away to start a new log)",
                      L->path, gpath);
  return h5util_check(&L->chk, H5Gopen2(L->file, gpath, H5P_DEFAULT), "open", gpath);
}

static void group_close(run_log_t *L, hid_t g, const char *gpath) {
  h5util_check(&L->chk, H5Gclose(g), "close", gpath);
}

/* Create (or open) every series; a new file also gets its dimension scales attached. */
static void layout_open(run_log_t *L, int create, int ranks) {
  hid_t grp[LOG_GROUP_COUNT];
  for (int g = 0; g < LOG_GROUP_COUNT; g++) grp[g] = has_group(L, g) ? group_open(L, log_group_path[g], create) : -1;
  for (int i = 0; i < L->nspec; i++) {
    series_spec_t *sp = &L->spec[i];
    int two = sp->per_rank || sp->per_boundary;
    if (create)
      h5_series_create(sp->s, &L->chk, grp[sp->group], log_group_path[sp->group], sp->name, sp->kind,
                       sp->per_rank ? (hsize_t)ranks : sp->per_boundary ? L->boundaries : 0, sp->units,
                       sp->description);
    else
      h5_series_open(sp->s, &L->chk, grp[sp->group], log_group_path[sp->group], sp->name, sp->kind.mem_type);
    if (sp->s->ndims != (two ? 2 : 1))
      surge_input_error("%s: %s is %d-D where a Surge log has a %d-D dataset", L->path, sp->s->path, sp->s->ndims,
                        two ? 2 : 1);
  }
  const log_series_info_t *rank = &log_scale_info[LOG_RANKS];
  const char *ranks_path = log_group_path[LOG_RANKS];
  if (create) {
    log_kinds_t k = log_kinds(L->text_type);
    h5_series_create(&L->rank_scale, &L->chk, grp[LOG_RANKS], ranks_path, rank->name, k.rank, 0, rank->units,
                     rank->description);
    for (int r = 0; r < ranks; r++) h5_series_append(&L->rank_scale, &r);
    h5_series_make_scale(&L->rank_scale, rank->name);
    for (int g = 0; g < LOG_GROUP_COUNT; g++)
      if (g != LOG_RANKS && has_group(L, g)) h5_series_make_scale(group_scale(L, (log_group_t)g), LOG_STEP);
    for (int i = 0; i < L->nspec; i++) {
      series_spec_t *sp = &L->spec[i];
      h5_series_t *scale = group_scale(L, sp->group);
      if (sp->s != scale) h5_series_attach_scale(sp->s, scale, 0);
      if (sp->per_rank) h5_series_attach_scale(sp->s, &L->rank_scale, 1);
    }
  } else {
    h5_series_open(&L->rank_scale, &L->chk, grp[LOG_RANKS], ranks_path, rank->name, H5T_NATIVE_INT);
  }
  for (int g = 0; g < LOG_GROUP_COUNT; g++)
    if (has_group(L, g)) group_close(L, grp[g], log_group_path[g]);
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
  hsize_t keep[LOG_GROUP_COUNT];
  for (int g = 0; g < LOG_GROUP_COUNT; g++)
    keep[g] = has_group(L, g) ? rows_through(group_scale(L, (log_group_t)g), resume_step) : 0;
  for (int i = 0; i < L->nspec; i++) h5_series_truncate(L->spec[i].s, keep[L->spec[i].group]);
}

/* A resumed run with more ranks than the log has columns: widen /ranks (old rows read NaN there);
 * likewise /compress for more pipeline boundaries. */
static void widen_ranks(run_log_t *L, int ranks) {
  for (int r = (int)h5_series_length(&L->rank_scale); r < ranks; r++) h5_series_append(&L->rank_scale, &r);
  for (int p = 0; p < PHASE_COUNT; p++)
    if (has_phase(L, p)) h5_series_widen(&L->phase[p], h5_series_length(&L->rank_scale));
  for (int c = LOG_CMP_PER_BOUNDARY; c < LOG_CMP_METRIC_COUNT && L->compressed; c++) {
    if (L->cmp[c].cols < L->boundaries) h5_series_widen(&L->cmp[c], L->boundaries);
    L->boundaries = L->cmp[c].cols;
  }
}

/* An existing file must be a Surge log before a resumed run writes into it. It is checked
 * read-only, so a file of another program is never touched (opening a newer-format HDF5 file for
 * writing marks its superblock). */
static void require_surge_log(h5util_check_t *chk, hid_t fapl) {
  const char *path = chk->file;
  const char *hint = "(hint: [log] file names another file; move it away or choose another name)";
  if (h5util_check(chk, H5Fis_hdf5(path), "read the file", "") == 0)
    surge_input_error("%s: not a Surge log (not an HDF5 file) %s", path, hint);
  hid_t f = h5util_check(chk, H5Fopen(path, H5F_ACC_RDONLY, fapl), "open the file", "");
  const char *why = log_not_surge(f, chk);
  if (why) surge_input_error("%s: not a Surge log (%s) %s", path, why, hint);
  h5util_check(chk, H5Fclose(f), "close the file", "");
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
  hid_t run = group_open(L, LOG_RUN, fresh);
  h5util_check_t *c = &L->chk;
  if (fresh) {
    char start[32];
    iso8601_utc_now(start, sizeof start);
    h5_attr_put_string(run, LOG_RUN, LOG_RUN_START_TIME, start, c);
  }
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_PROGRAM, LOG_PROGRAM, c);
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_VERSION, PACKAGE_VERSION, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_RANKS, L->world->size, c);
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_LAYOUT, cfg->parallel_mode, c);
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_MODEL, cfg->zoo, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_PARAMETERS, (int64_t)params->total, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_GLOBAL_BATCH, cfg->global_batch, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_FLUSH_EVERY, cfg->log_flush_every, c);
  h5_text_put(run, LOG_RUN, LOG_RUN_DECK, deck_text ? deck_text : "", c);
  group_close(L, run, LOG_RUN);
}

/* Reserve the file space a flush may take before it writes anything: a disk that is full then stops
 * the run with the file exactly as its last flush left it (a flush that fails half way leaves HDF5's
 * metadata half written, the file unreadable). A generous estimate: the chunks and strings the
 * pending rows need (a partly filled last chunk counted again), and room for HDF5's metadata. */
static void reserve_space(run_log_t *L) {
  if (!L->reserve) return;
  double bytes = LOG_RESERVE_METADATA_BYTES;
  for (int i = 0; i < L->nspec; i++) bytes += h5_series_pending_bytes(L->spec[i].s) + LOG_RESERVE_SERIES_BYTES;
  bytes += h5_series_pending_bytes(&L->rank_scale);
  struct stat st;
  haddr_t eoa = 0;
  if (fstat(L->fd, &st) != 0) return;
  if (H5Fget_eoa(L->file, &eoa) < 0) H5Eclear2(H5E_DEFAULT);
  // HDF5 has allocated up to eoa what it holds in memory (metadata not flushed yet) and allocates
  // new space from there on: all of it, from the end of the file, is what the flush writes at most
  if ((off_t)eoa > st.st_size) bytes += (double)((off_t)eoa - st.st_size);
  if (fallocate(L->fd, FALLOC_FL_KEEP_SIZE, st.st_size, (off_t)bytes) == 0) return;
  int err = errno;
  if (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) { // a file system that cannot: write and hope
    L->reserve = 0;
    return;
  }
  char dir[CFG_STR + 2], free_text[64] = "";
  run_dir_of(L->path, dir, sizeof dir);
  struct statvfs fs;
  if (statvfs(dir, &fs) == 0)
    snprintf(free_text, sizeof free_text, ", %.0f KiB free", (double)fs.f_bavail * (double)fs.f_frsize / 1024.0);
  if (!L->flushed) { // a new log that never held anything: not left behind half made
    unlink(L->path);
    surge_abandon(SURGE_EXIT_RUNTIME, "%s: cannot write the log: %s (%.0f KiB needed%s) (hint: free space, or another "
                                      "[log] file)", L->path, strerror(err), bytes / 1024.0, free_text);
  }
  surge_abandon(SURGE_EXIT_RUNTIME,
                "%s: cannot write the log: %s (%.0f KiB needed%s): it holds the steps up to %ld, its last flush "
                "(hint: free space and resume the run from its last checkpoint)",
                L->path, strerror(err), bytes / 1024.0, free_text, L->flushed_step);
}

/* Store every pending row, then make the file on disk complete up to here. A new log whose first
 * flush fails is removed: it never held anything. */
static void log_flush(run_log_t *L) {
  reserve_space(L);
  h5util_policy_t policy = L->chk.policy;
  if (!L->flushed) L->chk.policy = H5UTIL_RECORD;
  for (int i = 0; i < L->nspec; i++) h5_series_write_pending(L->spec[i].s);
  h5_series_write_pending(&L->rank_scale);
  h5util_check(&L->chk, H5Fflush(L->file, H5F_SCOPE_GLOBAL), "flush the log (hint: is the disk full?)", "");
  L->chk.policy = policy;
  if (L->chk.failed) {
    unlink(L->path);
    surge_abandon(SURGE_EXIT_RUNTIME, "%s (the new log was removed)", L->chk.msg);
  }
  L->flushed_step = L->pending_step;
  L->flushed = 1;
}

static void append_event(run_log_t *L, long step, const char *text) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t s = step;
  double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
  h5_series_append(&L->step[LOG_EVENTS], &s);
  h5_series_append(&L->event[LOG_EVENT_TIME], &t);
  h5_series_append(&L->event[LOG_EVENT_TEXT], &text);
}

/* Rank 0: create the file, or reopen it and drop the rows after resume_step. */
static void open_file(run_log_t *L, const config_t *cfg, const char *deck_text, const slab_layout_t *params,
                      long resume_step) {
  int resume = resume_step >= 0 && access(L->path, F_OK) == 0;
  L->text_type = h5util_check(&L->chk, H5Tcopy(H5T_C_S1), "make the string type of", "/events/text");
  h5util_check(&L->chk, H5Tset_size(L->text_type, H5T_VARIABLE), "make the string type of", "/events/text");
  h5util_check(&L->chk, H5Tset_cset(L->text_type, H5T_CSET_UTF8), "make the string type of", "/events/text");
  hid_t fapl = log_fapl(&L->chk);
  if (resume) require_surge_log(&L->chk, fapl);
  if (resume)
    L->file = h5util_check(&L->chk, H5Fopen(L->path, H5F_ACC_RDWR, fapl), "open the log for appending", "");
  else
    L->file = h5util_check(&L->chk, H5Fcreate(L->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), "create the log", "");
  h5util_check(&L->chk, H5Pclose(fapl), "close the access properties of the log", "");
  int *fd = NULL;
  if (H5Fget_vfd_handle(L->file, H5P_DEFAULT, (void **)&fd) >= 0 && fd) { // the sec2 driver's descriptor
    L->fd = *fd;
    L->reserve = 1;
  }
  H5Eclear2(H5E_DEFAULT);
  L->flushed_step = L->pending_step = resume ? resume_step : 0;
  L->flushed = resume;
  const char *mux_path = log_group_path[LOG_MULTIPLEX];
  if (resume) L->multiplexed = h5util_check(&L->chk, H5Lexists(L->file, mux_path, H5P_DEFAULT), "look up", mux_path) > 0;
  const char *cmp_path = log_group_path[LOG_COMPRESS];
  if (resume) L->compressed = h5util_check(&L->chk, H5Lexists(L->file, cmp_path, H5P_DEFAULT), "look up", cmp_path) > 0;
  const char *samples_path = log_group_path[LOG_SAMPLES];
  if (resume)
    L->sampled = h5util_check(&L->chk, H5Lexists(L->file, samples_path, H5P_DEFAULT), "look up", samples_path) > 0;
  if (resume) L->pipelined = h5util_check(&L->chk, H5Lexists(L->file, LOG_PIPE, H5P_DEFAULT), "look up", LOG_PIPE) > 0 &&
                             h5util_check(&L->chk, H5Lexists(L->file, log_group_path[LOG_PIPELINE], H5P_DEFAULT),
                                          "look up", log_group_path[LOG_PIPELINE]) > 0;
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
  L->fd = -1;
  L->flush_every = cfg->log_flush_every > 0 ? cfg->log_flush_every : 1;
  L->multiplexed = L->run_multiplexed = cfg->mux_role != 0;
  L->pipelined = strcmp(cfg->parallel_mode, "3d") == 0;
  L->compressed = L->pipelined && (cfg->compress_cb || cfg->compress_fe || cfg->compress_sc_stages > 0);
  L->sampled = cfg->sample_every > 0;
  L->boundaries = cfg->pp > 1 ? (hsize_t)cfg->pp - 1 : 1;
  if (world->rank != 0) return L;
  L->path = xstrdup(path);
  L->chk = h5util_checker(L->path, H5UTIL_RUNTIME_ABANDON); /* a failed write: exit at once (h5util.h) */
  h5util_quiet_t q = h5util_quiet_begin();
  open_file(L, cfg, deck_text, params, resume_step);
  h5util_quiet_end(q);
  L->gathered = xcalloc(surge_mul_size((size_t)world->size, PHASE_COUNT, "log phase gather"), sizeof(double));
  L->phase_row = xcalloc(h5_series_length(&L->rank_scale), sizeof(double));
  L->boundary_row = xcalloc(L->boundaries, sizeof(double));
  return L;
}

void run_log_step(run_log_t *L, const log_row_t *row) {
  if (!row->rank_phase) comm_gather_double(L->world, row->phase, PHASE_COUNT, L->gathered, 0, TRAFFIC_OTHER);
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t step = row->step;
  const double metric[LOG_METRIC_COUNT] = {
      [LOG_LOSS] = row->loss,
      [LOG_LR] = row->lr,
      [LOG_GRAD_NORM] = row->grad_norm,
      [LOG_STEP_TIME] = row->step_sec,
      [LOG_SAMPLES_PER_SEC] = row->samples_per_sec,
  };
  h5_series_append(&L->step[LOG_METRICS], &step);
  L->pending_step = row->step;
  for (int m = 0; m < LOG_METRIC_COUNT; m++) h5_series_append(&L->metric[m], &metric[m]);
  for (int t = 0; t < TRAFFIC_COUNT; t++) h5_series_append(&L->bytes[t], &row->bytes[t]);
  for (int t = 0; t < TRAFFIC_COUNT; t++) h5_series_append(&L->internode[t], &row->internode_bytes[t]);
  // phases are (ranks, PHASE_COUNT); a /ranks row is (columns), NaN for columns without a rank
  const double *phases = row->rank_phase ? row->rank_phase : L->gathered;
  hsize_t cols = h5_series_length(&L->rank_scale);
  for (int p = 0; p < PHASE_COUNT; p++) {
    if (!has_phase(L, p)) continue;
    for (hsize_t r = 0; r < cols; r++)
      L->phase_row[r] = (int)r < L->world->size ? phases[r * PHASE_COUNT + (hsize_t)p] : NAN;
    h5_series_append(&L->phase[p], L->phase_row);
  }
  if (L->multiplexed) {
    int m = L->run_multiplexed;
    const double mux[LOG_MUX_METRIC_COUNT] = {
        [LOG_MUX_FG_SPS] = m ? row->fg_samples_per_sec : NAN,
        [LOG_MUX_BG_SPS] = m ? row->bg_samples_per_sec : NAN,
        [LOG_MUX_TOTAL_SPS] = m ? row->total_samples_per_sec : NAN,
        [LOG_MUX_ACTIVE] = m ? row->bg_ranks_active : NAN,
    };
    h5_series_append(&L->step[LOG_MULTIPLEX], &step);
    for (int m = 0; m < LOG_MUX_METRIC_COUNT; m++) h5_series_append(&L->mux[m], &mux[m]);
  }
  if (row->step % L->flush_every == 0) log_flush(L);
  h5util_quiet_end(q);
}

void run_log_eval(run_log_t *L, long step, double loss, double accuracy) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t s = step;
  h5_series_append(&L->step[LOG_EVAL], &s);
  h5_series_append(&L->eval[LOG_EVAL_LOSS], &loss);
  h5_series_append(&L->eval[LOG_EVAL_ACCURACY], &accuracy);
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

void run_log_sample(run_log_t *L, long step, const char *text) {
  if (L->world->rank != 0 || !L->sampled) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t s = step;
  h5_series_append(&L->step[LOG_SAMPLES], &s);
  h5_series_append(&L->sample[LOG_SAMPLE_TEXT], &text);
  log_flush(L);
  h5util_quiet_end(q);
}

/* Column c of /plan: n values of kind. */
static void put_plan_column(run_log_t *L, hid_t grp, log_plan_column_t c, h5_series_kind_t kind, size_t n,
                            const void *values) {
  const log_series_info_t *info = &log_plan_info[c];
  h5_array_put(grp, LOG_PLAN, info->name, kind, n, values, info->units, info->description, &L->chk);
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
  put_plan_column(L, grp, LOG_PLAN_NODE, k.rank, n, index);
  put_plan_column(L, grp, LOG_PLAN_NAME, k.text, n, name);
  put_plan_column(L, grp, LOG_PLAN_KIND, k.text, n, kind);
  put_plan_column(L, grp, LOG_PLAN_RANKS, k.rank, n, plan->n);
  put_plan_column(L, grp, LOG_PLAN_FIRST_RANK, k.rank, n, plan->first);
  put_plan_column(L, grp, LOG_PLAN_PER_RANK_BATCH, k.rank, n, plan->per_rank);
  if (costed) {
    put_plan_column(L, grp, LOG_PLAN_COMPUTE_US, k.real, n, plan->comp_us);
    put_plan_column(L, grp, LOG_PLAN_TRANSFER_IN_US, k.real, n, plan->xfer_us);
    put_plan_column(L, grp, LOG_PLAN_SYNC_US, k.real, n, plan->sync_us);
  }
  free(index);
  free(name);
  free(kind);
}

void run_log_plan(run_log_t *L, const burst_plan_t *plan, const graph_t *g, const char *plan_text) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  h5util_check_t *c = &L->chk;
  if (h5util_check(c, H5Lexists(L->file, LOG_PLAN, H5P_DEFAULT), "look up", LOG_PLAN) > 0)
    h5util_check(c, H5Ldelete(L->file, LOG_PLAN, H5P_DEFAULT), "replace", LOG_PLAN);
  hid_t grp = group_open(L, LOG_PLAN, 1);
  put_plan_nodes(L, grp, plan, g);
  int predicted = plan->one_rank_us > 0;
  h5_attr_put_double(grp, LOG_PLAN, LOG_PLAN_ITERATION_US, predicted ? plan->iter_us : NAN, c);
  h5_attr_put_double(grp, LOG_PLAN, LOG_PLAN_RANK_US, predicted ? plan->rank_us : NAN, c);
  h5_attr_put_double(grp, LOG_PLAN, LOG_PLAN_ONE_RANK_US, predicted ? plan->one_rank_us : NAN, c);
  h5_attr_put_int64(grp, LOG_PLAN, LOG_PLAN_JOB_RANKS, plan->ranks, c);
  h5_attr_put_int64(grp, LOG_PLAN, LOG_PLAN_GLOBAL_BATCH, plan->batch, c);
  h5_attr_put_double(grp, LOG_PLAN, LOG_PLAN_AMPLIFICATION_LIMIT, plan->amp_limit, c);
  h5_text_put(grp, LOG_PLAN, LOG_PLAN_TEXT, plan_text ? plan_text : "", c);
  group_close(L, grp, LOG_PLAN);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_pipeline(run_log_t *L, const log_pipe_info_t *info) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  h5util_check_t *c = &L->chk;
  int exists = h5util_check(c, H5Lexists(L->file, LOG_PIPE, H5P_DEFAULT), "look up", LOG_PIPE) > 0;
  hid_t grp = group_open(L, LOG_PIPE, !exists);
  h5_attr_put_int64(grp, LOG_PIPE, LOG_PIPE_TP, info->tp, c);
  h5_attr_put_int64(grp, LOG_PIPE, LOG_PIPE_PP, info->pp, c);
  h5_attr_put_int64(grp, LOG_PIPE, LOG_PIPE_DP, info->dp, c);
  h5_attr_put_int64(grp, LOG_PIPE, LOG_PIPE_MICRO_BATCHES, info->micro_batches, c);
  h5_attr_put_string(grp, LOG_PIPE, LOG_PIPE_SCHEDULE, info->schedule, c);
  char kinds[256] = "";
  for (int k = 0; k < LOG_PIPE_KIND_COUNT; k++)
    snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", k ? "," : "", log_pipe_kind_name[k]);
  h5_attr_put_string(grp, LOG_PIPE, LOG_PIPE_EVENT_KINDS, kinds, c);
  h5_attr_put_double(grp, LOG_PIPE, LOG_PIPE_BUBBLE_THEORY, info->bubble_theory, c);
  group_close(L, grp, LOG_PIPE);
  if (h5util_check(c, H5Lexists(L->file, LOG_PIPE_STAGES, H5P_DEFAULT), "look up", LOG_PIPE_STAGES) > 0)
    h5util_check(c, H5Ldelete(L->file, LOG_PIPE_STAGES, H5P_DEFAULT), "replace", LOG_PIPE_STAGES);
  grp = group_open(L, LOG_PIPE_STAGES, 1);
  log_kinds_t k = log_kinds(L->text_type);
  size_t n = (size_t)info->pp;
  int *index = xcalloc(n + 1, sizeof *index);
  for (size_t i = 0; i < n; i++) index[i] = (int)i;
  const void *col[LOG_PIPE_STAGE_COLUMN_COUNT] = {index, info->first_block, info->blocks, info->mflop, info->held,
                                                   info->act_bytes};
  for (int j = 0; j < LOG_PIPE_STAGE_COLUMN_COUNT; j++) {
    const log_series_info_t *s = &log_pipe_stage_info[j];
    h5_array_put(grp, LOG_PIPE_STAGES, s->name, j < LOG_PIPE_STAGE_MFLOP ? k.rank : k.real, n, col[j], s->units,
                 s->description, c);
  }
  free(index);
  group_close(L, grp, LOG_PIPE_STAGES);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_pipeline_events(run_log_t *L, long step, const log_pipe_event_t *ev, size_t n) {
  if (L->world->rank != 0 || !L->pipelined) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t s = step;
  for (size_t i = 0; i < n; i++) {
    const log_pipe_event_t *e = &ev[i];
    h5_series_append(&L->step[LOG_PIPELINE], &s);
    h5_series_append(&L->pipe[LOG_PIPE_RANK], &e->rank);
    h5_series_append(&L->pipe[LOG_PIPE_STAGE], &e->stage);
    h5_series_append(&L->pipe[LOG_PIPE_MICRO_BATCH], &e->mb);
    h5_series_append(&L->pipe[LOG_PIPE_KIND], &e->kind);
    h5_series_append(&L->pipe[LOG_PIPE_START], &e->start);
    h5_series_append(&L->pipe[LOG_PIPE_END], &e->end);
  }
  h5util_quiet_end(q);
}

void run_log_compress(run_log_t *L, long step, const log_compress_row_t *row) {
  if (L->world->rank != 0 || !L->compressed) return;
  h5util_quiet_t q = h5util_quiet_begin();
  int64_t s = step;
  const double one[LOG_CMP_PER_BOUNDARY] = {row->act_grad_raw_bytes, row->dp_raw_bytes, row->seconds,
                                            row->lep_cos_mean};
  h5_series_append(&L->step[LOG_COMPRESS], &s);
  for (int c = 0; c < LOG_CMP_PER_BOUNDARY; c++) h5_series_append(&L->cmp[c], &one[c]);
  const double *per[LOG_CMP_METRIC_COUNT] = {[LOG_CMP_ERROR_NORM] = row->error_norm, [LOG_CMP_COS] = row->lep_cos};
  for (int c = LOG_CMP_PER_BOUNDARY; c < LOG_CMP_METRIC_COUNT; c++) {
    for (hsize_t j = 0; j < L->boundaries; j++) L->boundary_row[j] = (int)j < row->boundaries ? per[c][j] : NAN;
    h5_series_append(&L->cmp[c], L->boundary_row);
  }
  h5util_quiet_end(q);
}

void run_log_compress_summary(run_log_t *L, const char *text) {
  if (L->world->rank != 0 || !L->compressed) return;
  h5util_quiet_t q = h5util_quiet_begin();
  const char *path = log_group_path[LOG_COMPRESS];
  hid_t grp = group_open(L, path, 0);
  h5_attr_put_string(grp, path, LOG_CMP_SUMMARY, text, &L->chk);
  group_close(L, grp, path);
  h5util_quiet_end(q);
}

void run_log_multiplex(run_log_t *L, const log_mux_info_t *info) {
  if (L->world->rank != 0 || !L->multiplexed || !L->run_multiplexed) return;
  h5util_quiet_t q = h5util_quiet_begin();
  const char *path = log_group_path[LOG_MULTIPLEX];
  h5util_check_t *c = &L->chk;
  hid_t grp = group_open(L, path, 0);
  h5_attr_put_string(grp, path, LOG_MUX_ROLE, info->role, c);
  h5_attr_put_string(grp, path, LOG_MUX_CHANNEL, info->channel, c);
  h5_attr_put_string(grp, path, LOG_MUX_PRIORITY, info->priority, c);
  h5_attr_put_string(grp, path, LOG_MUX_ON_FOREGROUND_END, info->on_foreground_end, c);
  h5_attr_put_double(grp, path, log_multiplex_info[LOG_MUX_FG_SPS].name, info->fg_samples_per_sec, c);
  h5_attr_put_double(grp, path, log_multiplex_info[LOG_MUX_BG_SPS].name, info->bg_samples_per_sec, c);
  h5_attr_put_double(grp, path, log_multiplex_info[LOG_MUX_TOTAL_SPS].name, info->total_samples_per_sec, c);
  h5_attr_put_double(grp, path, LOG_MUX_FOREGROUND_SLOWDOWN, info->fg_slowdown, c);
  group_close(L, grp, path);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_identify(run_log_t *L, const char *run_id) {
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t run = group_open(L, LOG_RUN, 0);
  if (h5util_check(&L->chk, H5Aexists(run, LOG_RUN_ID), "look up", LOG_RUN "@" LOG_RUN_ID) == 0)
    h5_attr_put_string(run, LOG_RUN, LOG_RUN_ID, run_id, &L->chk);
  group_close(L, run, LOG_RUN);
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
    h5util_check(&L->chk, H5Tclose(L->text_type), "close the string type of", "/events/text");
    h5util_check(&L->chk, H5Fclose(L->file), "close the log (hint: is the disk full?)", "");
    h5util_quiet_end(q);
  }
  free(L->gathered);
  free(L->phase_row);
  free(L->boundary_row);
  free(L->path);
  free(L);
}
