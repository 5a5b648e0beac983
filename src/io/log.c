/* The HDF5 metrics log's core: layout (doc/formats.md), create / resume, /run, and the rows every
 * run has (/metrics, /ranks, /eval, /events). One table of series drives creation, reopening,
 * truncation on resume and closing; the parts' own groups are log_parts.c's. */
#include "io/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "io/h5serial.h"
#include "surge_build_config.h"
#include "core/error.h"
#include "core/outfile.h"
#include "io/log_impl.h"
#include "io/run_dir.h"

/* Space reserved before each flush beyond the rows' own (reserve_space; per series: log_impl.h). */
#define LOG_RESERVE_METADATA_BYTES (64.0 * 1024)
#define LOG_PATH_MAX (PATH_MAX + 2)

const char *log_phase_name(log_phase_t p) {
  if ((int)p < 0 || p >= PHASE_COUNT) return "unknown";
  return log_phase_info[p].name;
}

static const double fill_nan = NAN;

h5_series_kind_t log_step_kind(void) { return (h5_series_kind_t){H5T_STD_I64LE, H5T_NATIVE_INT64, NULL}; }

h5_series_kind_t log_kind_of(const run_log_t *L, log_value_t v) {
  switch (v) {
  case LOG_VALUE_REAL: return (h5_series_kind_t){H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &fill_nan};
  case LOG_VALUE_INT: return (h5_series_kind_t){H5T_STD_I32LE, H5T_NATIVE_INT, NULL};
  case LOG_VALUE_COUNT: return (h5_series_kind_t){H5T_STD_U64LE, H5T_NATIVE_UINT64, NULL};
  case LOG_VALUE_TEXT: break;
  }
  return (h5_series_kind_t){L->text_type, L->text_type, NULL};
}

unsigned log_phases_plain(void) {
  unsigned m = 0;
  for (int p = 0; p < PHASE_COUNT; p++)
    if (!log_phase_multiplexed((log_phase_t)p)) m |= 1u << p;
  return m;
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

/* The /ranks phases this log has. */
static int has_phase(const run_log_t *L, int p) { return (L->phases >> p) & 1u; }

/* The step scale of a group's rows. */
static h5_series_t *group_scale(run_log_t *L, log_group_t g) { return &L->step[g == LOG_RANKS ? LOG_METRICS : g]; }

/* The table of every core series (io/log_format.h), scales first in each group. */
static void build_specs(run_log_t *L) {
  h5_series_kind_t real = log_kind_of(L, LOG_VALUE_REAL), count = log_kind_of(L, LOG_VALUE_COUNT);
  for (int g = 0; g < LOG_CORE_GROUPS; g++)
    if (g != LOG_RANKS) add_spec(L, &L->step[g], (log_group_t)g, "", &log_scale_info[g], log_step_kind(), 0);
  for (int m = 0; m < LOG_METRIC_COUNT; m++) add_spec(L, &L->metric[m], LOG_METRICS, "", &log_metric_info[m], real, 0);
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    char doc[160];
    snprintf(doc, sizeof doc, "bytes handed to the comm layer as %s traffic during the step (and since the "
             "previous row was read), summed over ranks", traffic_name((traffic_t)t));
    log_series_info_t info = {traffic_name((traffic_t)t), "bytes", doc};
    add_spec(L, &L->bytes[t], LOG_METRICS, LOG_BYTES_PREFIX, &info, count, 0);
  }
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    char doc[200];
    snprintf(doc, sizeof doc, "of bytes_%s, the bytes that crossed nodes: sends to a rank on another node and "
             "collectives over groups spanning nodes", traffic_name((traffic_t)t));
    log_series_info_t info = {traffic_name((traffic_t)t), "bytes", doc};
    add_spec(L, &L->internode[t], LOG_METRICS, LOG_INTERNODE_PREFIX, &info, count, 0);
  }
  for (int p = 0; p < PHASE_COUNT; p++)
    if (has_phase(L, p)) add_spec(L, &L->phase[p], LOG_RANKS, LOG_PHASE_PREFIX, &log_phase_info[p], real, 1);
  for (int e = 0; e < LOG_EVAL_COUNT; e++) add_spec(L, &L->eval[e], LOG_EVAL, "", &log_eval_info[e], real, 0);
  add_spec(L, &L->event[LOG_EVENT_TIME], LOG_EVENTS, "", &log_event_info[LOG_EVENT_TIME], real, 0);
  add_spec(L, &L->event[LOG_EVENT_TEXT], LOG_EVENTS, "", &log_event_info[LOG_EVENT_TEXT],
           log_kind_of(L, LOG_VALUE_TEXT), 0);
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

hid_t log_group_open(run_log_t *L, const char *gpath, int create) {
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

void log_group_close(run_log_t *L, hid_t g, const char *gpath) {
  h5util_check(&L->chk, H5Gclose(g), "close", gpath);
}

/* Create (or open) every core series; a new file also gets its dimension scales attached. */
static void layout_open(run_log_t *L, int create, int ranks) {
  hid_t grp[LOG_CORE_GROUPS];
  for (int g = 0; g < LOG_CORE_GROUPS; g++) grp[g] = log_group_open(L, log_group_path[g], create);
  for (int i = 0; i < L->nspec; i++) {
    series_spec_t *sp = &L->spec[i];
    if (create)
      h5_series_create(sp->s, &L->chk, grp[sp->group], log_group_path[sp->group], sp->name, sp->kind,
                       sp->per_rank ? (hsize_t)ranks : 0, sp->units, sp->description);
    else
      h5_series_open(sp->s, &L->chk, grp[sp->group], log_group_path[sp->group], sp->name, sp->kind.mem_type);
    if (sp->s->ndims != (sp->per_rank ? 2 : 1))
      surge_input_error("%s: %s is %d-D where a Surge log has a %d-D dataset", L->path, sp->s->path, sp->s->ndims,
                        sp->per_rank ? 2 : 1);
  }
  const log_series_info_t *rank = &log_scale_info[LOG_RANKS];
  const char *ranks_path = log_group_path[LOG_RANKS];
  if (create) {
    h5_series_create(&L->rank_scale, &L->chk, grp[LOG_RANKS], ranks_path, rank->name, log_kind_of(L, LOG_VALUE_INT), 0,
                     rank->units, rank->description);
    for (int r = 0; r < ranks; r++) h5_series_append(&L->rank_scale, &r);
    h5_series_make_scale(&L->rank_scale, rank->name);
    for (int g = 0; g < LOG_CORE_GROUPS; g++)
      if (g != LOG_RANKS) h5_series_make_scale(group_scale(L, (log_group_t)g), LOG_STEP);
    for (int i = 0; i < L->nspec; i++) {
      series_spec_t *sp = &L->spec[i];
      h5_series_t *scale = group_scale(L, sp->group);
      if (sp->s != scale) h5_series_attach_scale(sp->s, scale, 0);
      if (sp->per_rank) h5_series_attach_scale(sp->s, &L->rank_scale, 1);
    }
  } else {
    h5_series_open(&L->rank_scale, &L->chk, grp[LOG_RANKS], ranks_path, rank->name, H5T_NATIVE_INT);
  }
  for (int g = 0; g < LOG_CORE_GROUPS; g++) log_group_close(L, grp[g], log_group_path[g]);
}

/* Rows of a step series up to and including resume_step (the rows after it are dropped). */
hsize_t log_rows_through(h5_series_t *steps, long resume_step) {
  int64_t *v = h5_series_read_int64(steps);
  hsize_t n = 0;
  while (n < steps->rows && v[n] <= resume_step) n++;
  free(v);
  return n;
}

static void drop_rows_after(run_log_t *L, long resume_step) {
  hsize_t keep[LOG_CORE_GROUPS];
  for (int g = 0; g < LOG_CORE_GROUPS; g++) keep[g] = log_rows_through(group_scale(L, (log_group_t)g), resume_step);
  if (keep[LOG_EVAL]) {
    int64_t *v = h5_series_read_int64(group_scale(L, LOG_EVAL));
    L->eval_last = (long)v[keep[LOG_EVAL] - 1];
    free(v);
  }
  for (int i = 0; i < L->nspec; i++) h5_series_truncate(L->spec[i].s, keep[L->spec[i].group]);
}

/* A resumed run with more ranks than the log has columns: widen /ranks (old rows read NaN there). */
static void widen_ranks(run_log_t *L, int ranks) {
  for (int r = (int)h5_series_length(&L->rank_scale); r < ranks; r++) h5_series_append(&L->rank_scale, &r);
  for (int p = 0; p < PHASE_COUNT; p++)
    if (has_phase(L, p)) h5_series_widen(&L->phase[p], h5_series_length(&L->rank_scale));
}

/* A resumed log keeps the phases it has. */
static unsigned phases_in_file(run_log_t *L) {
  hid_t g = log_group_open(L, log_group_path[LOG_RANKS], 0);
  unsigned m = 0;
  for (int p = 0; p < PHASE_COUNT; p++) {
    char name[64];
    snprintf(name, sizeof name, "%s%s", LOG_PHASE_PREFIX, log_phase_info[p].name);
    if (h5util_check(&L->chk, H5Lexists(g, name, H5P_DEFAULT), "look up", name) > 0) m |= 1u << p;
  }
  log_group_close(L, g, log_group_path[LOG_RANKS]);
  return m;
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
static void write_run_info(run_log_t *L, const log_run_info_t *info, const char *deck_text,
                           const slab_layout_t *params, int fresh) {
  hid_t run = log_group_open(L, LOG_RUN, fresh);
  h5util_check_t *c = &L->chk;
  if (fresh) {
    char start[32];
    iso8601_utc_now(start, sizeof start);
    h5_attr_put_string(run, LOG_RUN, LOG_RUN_START_TIME, start, c);
  }
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_PROGRAM, LOG_PROGRAM, c);
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_VERSION, PACKAGE_VERSION, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_RANKS, L->world->size, c);
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_LAYOUT, info->layout, c);
  h5_attr_put_string(run, LOG_RUN, LOG_RUN_MODEL, info->model, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_PARAMETERS, (int64_t)params->total, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_GLOBAL_BATCH, info->global_batch, c);
  h5_attr_put_int64(run, LOG_RUN, LOG_RUN_FLUSH_EVERY, info->flush_every, c);
  h5_text_put(run, LOG_RUN, LOG_RUN_DECK, deck_text ? deck_text : "", c);
  log_group_close(L, run, LOG_RUN);
}

/* Reserve the file space a flush may take before it writes anything: a disk that is full then stops
 * the run with the file exactly as its last flush left it (a flush that fails half way leaves HDF5's
 * metadata half written, the file unreadable). A generous estimate: the chunks and strings the
 * pending rows need (a partly filled last chunk counted again), and room for HDF5's metadata. */
static void reserve_space(run_log_t *L) {
  if (!L->reserve) return;
  double bytes = LOG_RESERVE_METADATA_BYTES;
  for (int i = 0; i < L->nspec; i++) bytes += h5_series_pending_bytes(L->spec[i].s) + LOG_RESERVE_SERIES_BYTES;
  bytes += h5_series_pending_bytes(&L->rank_scale) + log_parts_pending_bytes(L);
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
  char dir[LOG_PATH_MAX], free_text[64] = "";
  run_dir_of(L->path, dir, sizeof dir);
  struct statvfs fs;
  if (statvfs(dir, &fs) == 0)
    snprintf(free_text, sizeof free_text, ", %.0f KiB free", (double)fs.f_bavail * (double)fs.f_frsize / 1024.0);
  if (!L->flushed) { // a new log that never held anything: not left behind half made (and a run's log it
    // would have replaced, [run] overwrite, kept)
    unlink(L->creating);
    surge_abandon(SURGE_EXIT_RUNTIME, "%s: cannot write the new log: %s (%.0f KiB needed%s) (hint: free space, or "
                  "another [log] file)", L->creating, strerror(err), bytes / 1024.0, free_text);
  }
  surge_abandon(SURGE_EXIT_RUNTIME,
                "%s: cannot write the log: %s (%.0f KiB needed%s): it holds the steps up to %ld, its last flush "
                "(hint: free space and resume the run from its last checkpoint)",
                L->path, strerror(err), bytes / 1024.0, free_text, L->flushed_step);
}

/* Store every pending row, then make the file on disk complete up to here. A new log whose first
 * flush fails is removed: it never held anything. */
void log_flush(run_log_t *L) {
  reserve_space(L);
  h5util_policy_t policy = L->chk.policy;
  if (!L->flushed) L->chk.policy = H5UTIL_RECORD;
  for (int i = 0; i < L->nspec; i++) h5_series_write_pending(L->spec[i].s);
  h5_series_write_pending(&L->rank_scale);
  log_parts_write_pending(L);
  h5util_check(&L->chk, H5Fflush(L->file, H5F_SCOPE_GLOBAL), "flush the log (hint: is the disk full?)", "");
  L->chk.policy = policy;
  if (L->chk.failed) {
    unlink(L->creating ? L->creating : L->path);
    surge_abandon(SURGE_EXIT_RUNTIME, "%s (the new log was removed)", L->chk.msg);
  }
  L->flushed_step = L->pending_step;
  L->flushed = 1;
}

void log_append_event(run_log_t *L, long step, const char *text) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t s = step;
  double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
  h5_series_append(&L->step[LOG_EVENTS], &s);
  h5_series_append(&L->event[LOG_EVENT_TIME], &t);
  h5_series_append(&L->event[LOG_EVENT_TEXT], &text);
}

/* A resumed log's first event, once the parts have declared their groups (before the first row
 * or event of the run): where it resumed, and which parts' groups this run continues or not. */
static void note_resume(run_log_t *L) {
  if (!L->resumed || L->resume_step < 0) return;
  char text[512], parts[400];
  log_parts_resume_note(L, parts, sizeof parts);
  snprintf(text, sizeof text, "resumed at step %ld on %d rank%s%s", L->resume_step, L->world->size,
           L->world->size == 1 ? "" : "s", parts);
  log_append_event(L, L->resume_step, text);
  L->resume_step = -1;
}

/* A new log is made under path + ".tmp" and renamed to path after its first flush, the file kept open
 * (its descriptor is HDF5's): a run killed while the log was being made (its first milliseconds) left a
 * file HDF5 cannot open under the log's name, and every --resume of the run failed on it. A leftover
 * temporary file of such a run is replaced. */
static void create_file(run_log_t *L, hid_t fapl) {
  L->creating = outfile_temp(L->path);
  L->chk.file = L->creating; /* messages name the file written until it takes its name (created) */
  const h5util_policy_t policy = L->chk.policy;
  L->chk.policy = H5UTIL_RECORD;
  L->file = h5util_check(&L->chk, H5Fcreate(L->creating, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), "create the log", "");
  L->chk.policy = policy;
  if (L->chk.failed) {
    unlink(L->creating);
    surge_abandon(SURGE_EXIT_RUNTIME, "%s", L->chk.msg);
  }
}

static void created(run_log_t *L) {
  if (!L->creating) return;
  if (outfile_publish(L->creating, L->path) != 0)
    surge_abandon(SURGE_EXIT_RUNTIME, "%s: cannot rename the new log %s to it: %s", L->path, L->creating,
                  strerror(errno));
  L->chk.file = L->path;
  free(L->creating);
  L->creating = NULL;
}

/* Rank 0: create the file, or reopen it and drop the rows after resume_step. */
static void open_file(run_log_t *L, const log_run_info_t *info, const char *deck_text, const slab_layout_t *params,
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
    create_file(L, fapl);
  h5util_check(&L->chk, H5Pclose(fapl), "close the access properties of the log", "");
  int *fd = NULL;
  if (H5Fget_vfd_handle(L->file, H5P_DEFAULT, (void **)&fd) >= 0 && fd) { // the sec2 driver's descriptor
    L->fd = *fd;
    L->reserve = 1;
  }
  H5Eclear2(H5E_DEFAULT);
  L->flushed_step = L->pending_step = resume ? resume_step : 0;
  L->flushed = resume;
  L->resumed = resume;
  L->resume_step = resume_step;
  if (resume) L->phases = phases_in_file(L);
  build_specs(L);
  layout_open(L, !resume, L->world->size);
  if (resume) {
    drop_rows_after(L, resume_step);
    widen_ranks(L, L->world->size);
    log_parts_resume(L, resume_step);
  }
  write_run_info(L, info, deck_text, params, !resume);
  log_flush(L);
  created(L);
}

run_log_t *run_log_open(const char *path, const log_run_info_t *info, const char *deck_text,
                        const slab_layout_t *params, comm_t *world, long resume_step) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  run_log_t *L = xcalloc(1, sizeof *L);
  L->world = world;
  L->file = -1;
  L->fd = -1;
  L->resume_step = -1;
  L->eval_last = -1;
  L->flush_every = info->flush_every > 0 ? info->flush_every : 1;
  L->phases = info->phases;
  if (world->rank != 0) return L;
  L->path = xstrdup(path);
  L->chk = h5util_checker(L->path, H5UTIL_RUNTIME_ABANDON); /* a failed write: exit at once (h5util.h) */
  h5util_quiet_t q = h5util_quiet_begin();
  open_file(L, info, deck_text, params, resume_step);
  h5util_quiet_end(q);
  L->gathered = xcalloc(surge_mul_size((size_t)world->size, PHASE_COUNT, "log phase gather"), sizeof(double));
  L->phase_row = xcalloc(h5_series_length(&L->rank_scale), sizeof(double));
  return L;
}

void run_log_step(run_log_t *L, const log_row_t *row) {
  H5_SERIAL_COLLECTIVE(L->world); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (!row->rank_phase) comm_gather_double(L->world, row->phase, PHASE_COUNT, L->gathered, 0, TRAFFIC_OTHER);
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  note_resume(L);
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
  log_parts_pad(L, row->step);
  if (row->step % L->flush_every == 0) log_flush(L);
  h5util_quiet_end(q);
}

void run_log_eval(run_log_t *L, long step, double loss, double accuracy) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  note_resume(L);
  if (step <= L->eval_last) { /* this step's evaluation is logged: the same state's */
    h5util_quiet_end(q);
    return;
  }
  L->eval_last = step;
  int64_t s = step;
  h5_series_append(&L->step[LOG_EVAL], &s);
  h5_series_append(&L->eval[LOG_EVAL_LOSS], &loss);
  h5_series_append(&L->eval[LOG_EVAL_ACCURACY], &accuracy);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_event(run_log_t *L, long step, const char *text) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  note_resume(L);
  log_append_event(L, step, text);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_identify(run_log_t *L, const char *run_id) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (L->world->rank != 0) return;
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t run = log_group_open(L, LOG_RUN, 0);
  if (h5util_check(&L->chk, H5Aexists(run, LOG_RUN_ID), "look up", LOG_RUN "@" LOG_RUN_ID) == 0)
    h5_attr_put_string(run, LOG_RUN, LOG_RUN_ID, run_id, &L->chk);
  log_group_close(L, run, LOG_RUN);
  log_flush(L);
  h5util_quiet_end(q);
}

void run_log_close(run_log_t *L) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (!L) return;
  if (L->world->rank == 0) {
    h5util_quiet_t q = h5util_quiet_begin();
    note_resume(L);
    log_flush(L);
    for (int i = 0; i < L->nspec; i++) h5_series_close(L->spec[i].s);
    h5_series_close(&L->rank_scale);
    log_parts_close(L);
    h5util_check(&L->chk, H5Tclose(L->text_type), "close the string type of", "/events/text");
    h5util_check(&L->chk, H5Fclose(L->file), "close the log (hint: is the disk full?)", "");
    h5util_quiet_end(q);
  }
  log_parts_free(L);
  free(L->gathered);
  free(L->phase_row);
  free(L->path);
  free(L);
}
