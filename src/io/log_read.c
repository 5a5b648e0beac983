/* Reading a Surge log into memory (io/log_read.h). Every HDF5 call goes through the reader's
 * checker: once the file is recognised as a Surge log, a failing call means it is damaged. */
#include "io/log_read.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/infile.h"
#include "io/config.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "io/deck_value.h"
#include "io/h5serial.h"
#include "io/h5util.h"
#include "io/log_check.h"
#include "io/log_format.h"
#include "io/log_part.h"
#include "io/log_read_impl.h"
#include "io/printable.h"
#include "io/strbuf.h"

#define LOG_READ_CHUNK_SLACK (1024.0 * 1024) /* bytes of values a dataset may claim beyond its storage */

_Noreturn void log_reader_not_surge(const log_reader_t *r, const char *why) {
  surge_input_error("%s: not a Surge log (%s) (hint: a metrics log is the log.h5 file surge-train writes)", r->path,
                    why);
}

_Noreturn void log_reader_damaged(const log_reader_t *r, const char *what, const char *h5path) {
  surge_input_error("%s: damaged Surge log: %s %s", r->path, h5path, what);
}

hid_t log_reader_ok(log_reader_t *r, hid_t result, const char *what, const char *h5path) {
  return h5util_check(&r->chk, result, what, h5path);
}

int log_reader_has_object(log_reader_t *r, hid_t loc, const char *name, H5I_type_t type, const char *h5path) {
  int has = h5util_exists(loc, name, type);
  if (has == H5UTIL_NOT_HARD) log_reader_damaged(r, "is " H5UTIL_NOT_HARD_TEXT, h5path);
  return log_reader_ok(r, has, "look up", h5path) > 0;
}

/* Bytes of the dataset's values in the file, times the most its filters may expand them: no more
 * values than this are read (a damaged extent with no stored data behind it is refused unread). */
double log_reader_stored_bound(log_reader_t *r, hid_t d, const char *h5path) {
  hid_t dcpl = log_reader_ok(r, H5Dget_create_plist(d), "get the creation properties of", h5path);
  int filters = log_reader_ok(r, H5Pget_nfilters(dcpl), "get the filters of", h5path);
  hsize_t chunk[H5S_MAX_RANK];
  double slack = 0; /* one chunk: a writer stopped by a full disk may leave its last one unallocated */
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    int nd = log_reader_ok(r, H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk), "get the chunks of", h5path);
    slack = sizeof(double);
    for (int i = 0; i < nd; i++) slack *= (double)chunk[i];
    if (slack > LOG_READ_CHUNK_SLACK) slack = LOG_READ_CHUNK_SLACK;
  }
  log_reader_ok(r, H5Pclose(dcpl), "close the creation properties of", h5path);
  return (double)H5Dget_storage_size(d) * (filters > 0 ? 1032.0 : 1.0) + slack;
}

/* The chunks a read of dims touches must be whole (h5util_chunks_whole), and the chunk index sound
 * (h5util_chunk_index_sane: a Surge log writes no filters, a crafted one may), or the log is damaged. */
void log_reader_check_chunks(log_reader_t *r, hid_t d, const char *h5path, int ndims, const hsize_t *dims,
                             size_t type_bytes) {
  unsigned long long bytes, want;
  int rc = h5util_chunks_whole(d, ndims, dims, type_bytes, &bytes, &want);
  if (rc < 0) h5util_fail(&r->chk, "look up the chunks of", h5path);
  if (rc == 0)
    surge_input_error("%s: damaged Surge log: %s has a chunk of %llu bytes where its chunks hold %llu", r->path,
                      h5path, bytes, want);
  char why[256];
  rc = h5util_chunk_index_sane(d, why, sizeof why);
  if (rc < 0) h5util_fail(&r->chk, "look up the chunk index of", h5path);
  if (rc == 0) surge_input_error("%s: damaged Surge log: %s: %s", r->path, h5path, why);
}

/* ---- attributes: absent, or of another kind, reads as "", -1 or NaN ---- */

/* A string attribute with control characters and the like escaped (io/printable.h): it is shown. */
void log_reader_attr_string(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, char *buf, size_t n) {
  char *value = NULL, where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  int rc = h5util_attr_read_string(obj, name, &value);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  printable(rc == 0 ? value : "", buf, n);
  free(value);
}

/* Whether the integer attribute is there (its value in *v); a failing read is damage. */
static int attr_int(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, long long *v) {
  char where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  int64_t x = 0;
  int rc = h5util_attr_read_i64(obj, name, &x);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  *v = (long long)x;
  return rc == 0;
}

static _Noreturn void out_of_range(const log_reader_t *r, const char *obj_path, const char *name, double v, double lo,
                                    double hi) {
  surge_input_error("%s: damaged Surge log: %s@%s is %.17g, outside %.17g to %.17g (hint: was the file changed by "
                    "another program?)", r->path, obj_path, name, v, lo, hi);
}

/* An integer attribute in [lo, hi] (lo >= 0); -1 when absent (a -1 in the file is out of range). */
long long log_reader_attr_int(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, long long lo,
                                 long long hi) {
  long long v;
  if (!attr_int(r, obj, obj_path, name, &v)) return -1;
  if (v < lo || v > hi) out_of_range(r, obj_path, name, (double)v, (double)lo, (double)hi);
  return v;
}

static double attr_double(log_reader_t *r, hid_t obj, const char *obj_path, const char *name);

/* A number attribute in [lo, hi] (infinite hi: +infinity allowed); NaN when absent or NaN. */
double log_reader_attr_real(log_reader_t *r, hid_t obj, const char *obj_path, const char *name, double lo, double hi) {
  double v = attr_double(r, obj, obj_path, name);
  if (!isnan(v) && !(v >= lo && v <= hi)) out_of_range(r, obj_path, name, v, lo, hi);
  return v;
}

static double attr_double(log_reader_t *r, hid_t obj, const char *obj_path, const char *name) {
  char where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  double v = NAN;
  int rc = h5util_attr_read_f64(obj, name, &v);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  return rc == 0 ? v : NAN;
}

/* ---- /run ---- */

/* A scalar fixed-length string dataset loc/name (h5path in messages) of at most max bytes; "" when
 * there is none. */
char *log_reader_text(log_reader_t *r, hid_t loc, const char *name, const char *h5path, size_t max) {
  if (!log_reader_has_object(r, loc, name, H5I_DATASET, h5path)) return xstrdup("");
  hid_t d = log_reader_ok(r, H5Dopen2(loc, name, H5P_DEFAULT), "open", h5path);
  hid_t t = log_reader_ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = log_reader_ok(r, H5Dget_space(d), "get the shape of", h5path);
  size_t len = H5Tget_size(t);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 || H5Sget_simple_extent_npoints(s) != 1)
    log_reader_damaged(r, "is not one fixed-length string", h5path);
  if (len == 0 || len > max)
    surge_input_error("%s: damaged Surge log: %s holds %zu bytes, more than the %zu allowed", r->path, h5path, len,
                      max);
  if ((double)len > log_reader_stored_bound(r, d, h5path))
    surge_input_error("%s: damaged Surge log: %s claims %zu bytes, but the file stores %llu of them", r->path,
                      h5path, len, (unsigned long long)H5Dget_storage_size(d));
  char *text = xmalloc(len + 1);
  log_reader_ok(r, H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), "read", h5path);
  text[len] = '\0';
  log_reader_ok(r, H5Sclose(s), "close the dataspace of", h5path);
  log_reader_ok(r, H5Tclose(t), "close the type of", h5path);
  log_reader_ok(r, H5Dclose(d), "close", h5path);
  return text;
}

/* Every deck key with its resolved value, through the deck parser: a deck this version cannot
 * read is an error naming "PATH:/run/deck:LINE". */
static void parse_settings(log_data_t *L) {
  if (!L->deck[0]) return;
  char where[4200];
  snprintf(where, sizeof where, "%s:" LOG_RUN "/" LOG_RUN_DECK, L->path);
  config_t *cfg = xmalloc(sizeof *cfg);
  deck_parse(L->deck, where, 0, NULL, cfg, NULL);
  L->setting = xcalloc((size_t)cfg_nkeys, sizeof *L->setting);
  strbuf_t b = STRBUF_INIT;
  for (int i = 0; i < cfg_nkeys; i++) {
    sb_clear(&b);
    sb_printf(&b, "%s.%s", cfg_keys[i].section, cfg_keys[i].key);
    L->setting[i].key = xstrdup(sb_str(&b));
    sb_clear(&b);
    cfg_value_format(&cfg_keys[i], cfg, &b);
    L->setting[i].value = xstrdup(sb_str(&b));
  }
  L->nsettings = cfg_nkeys;
  sb_free(&b);
  free(cfg);
}

static void read_run(log_reader_t *r, log_data_t *L, hid_t f) {
  const char *why = log_not_surge(f, &r->chk);
  if (why) log_reader_not_surge(r, why);
  hid_t run = log_reader_ok(r, H5Gopen2(f, LOG_RUN, H5P_DEFAULT), "open", LOG_RUN);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_PROGRAM, L->program, sizeof L->program);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_VERSION, L->version, sizeof L->version);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_START_TIME, L->start_time, sizeof L->start_time);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_ID, L->run_id, sizeof L->run_id);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_LAYOUT, L->layout, sizeof L->layout);
  log_reader_attr_string(r, run, LOG_RUN, LOG_RUN_MODEL, L->model, sizeof L->model);
  L->ranks = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_RANKS, 1, LOG_READ_MAX_RANKS);
  L->parameters = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_PARAMETERS, 0, (long long)1 << 50);
  L->global_batch = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_GLOBAL_BATCH, 1, 2147483647LL);
  L->flush_every = log_reader_attr_int(r, run, LOG_RUN, LOG_RUN_FLUSH_EVERY, 1, 1000000000LL);
  L->deck = log_reader_text(r, run, LOG_RUN_DECK, LOG_RUN "/" LOG_RUN_DECK, DECK_MAX_BYTES);
  log_reader_ok(r, H5Gclose(run), "close", LOG_RUN);
  parse_settings(L);
}

static void read_events(log_reader_t *r, log_data_t *L, hid_t f) {
  const char *group = log_group_path[LOG_EVENTS];
  char text_path[64];
  snprintf(text_path, sizeof text_path, "%s/%s", group, log_event_info[LOG_EVENT_TEXT].name);
  log_table_t steps;
  log_table_spec_t g = {.group = group, .prefix = "", .ndims = 1, .tolerance = r->tolerance, .rows_share_step = 1};
  log_reader_table(r, &g, &steps);
  const log_column_t *step = log_column(&steps, LOG_STEP);
  if (steps.present && step && log_reader_has_object(r, f, text_path, H5I_DATASET, text_path)) {
    size_t n;
    char **text = log_reader_strings(r, text_path, &n);
    L->nevents = steps.rows < n ? steps.rows : n;
    L->event_step = xcalloc(L->nevents + 1, sizeof(double));
    L->event_text = xcalloc(L->nevents + 1, sizeof(char *));
    for (size_t i = 0; i < L->nevents; i++) {
      L->event_step[i] = step->v[i];
      L->event_text[i] = text[i];
      text[i] = NULL;
    }
    log_strings_free(text, n);
  }
  log_table_free(&steps);
}

/* ---- the whole log ---- */

/* Columns of /ranks: the length of its rank scale /ranks/rank (1-D, bounded by what is stored), 0
 * without /ranks. */
static size_t rank_columns(log_reader_t *r, hid_t f) {
  const char *group = log_group_path[LOG_RANKS];
  if (!log_reader_has_object(r, f, group, H5I_GROUP, group)) return 0;
  char path[64];
  snprintf(path, sizeof path, "%s/%s", group, log_scale_info[LOG_RANKS].name);
  if (log_reader_column_kind(r, f, "", path + 1, 1))
    log_reader_damaged(r, "is missing or not a 1-D numeric dataset", path);
  hid_t d = log_reader_ok(r, H5Dopen2(f, path, H5P_DEFAULT), "open", path);
  hid_t s = log_reader_ok(r, H5Dget_space(d), "get the shape of", path);
  hsize_t n = 0;
  log_reader_ok(r, H5Sget_simple_extent_dims(s, &n, NULL), "get the shape of", path);
  if ((double)n * sizeof(int32_t) > log_reader_stored_bound(r, d, path) || n > LOG_READ_MAX_RANKS)
    surge_input_error("%s: damaged Surge log: %s claims %llu ranks, but the file stores %llu bytes of them", r->path,
                      path, (unsigned long long)n, (unsigned long long)H5Dget_storage_size(d));
  log_reader_ok(r, H5Sclose(s), "close the dataspace of", path);
  log_reader_ok(r, H5Dclose(d), "close", path);
  return (size_t)n;
}

static hid_t open_log(log_reader_t *r) {
  if (infile_check(r->path, 0, NULL) != 0)
    surge_input_error("%s: cannot open: %s (hint: check the path)", r->path, strerror(errno));
  if (H5Fis_hdf5(r->path) <= 0) log_reader_not_surge(r, "not an HDF5 file");
  /* no locks: the writer takes none either, and a log may sit on a file system without them */
  hid_t fapl = log_reader_ok(r, H5Pcreate(H5P_FILE_ACCESS), "make the access properties for", "/");
  log_reader_ok(r, H5Pset_file_locking(fapl, 0, 1), "turn off file locking for", "/");
  hid_t f = log_reader_ok(r, H5Fopen(r->path, H5F_ACC_RDONLY, fapl), "open the HDF5 file at", "/");
  log_reader_ok(r, H5Pclose(fapl), "close the access properties for", "/");
  return f;
}

int log_peek_run_id(const char *path, char *id, size_t n) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (n) id[0] = '\0';
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f = -1, run = -1;
  if (fapl >= 0 && H5Pset_file_locking(fapl, 0, 1) >= 0 && H5Fis_hdf5(path) > 0)
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  char *value = NULL;
  if (f >= 0 && h5util_exists(f, LOG_RUN, H5I_GROUP) > 0) run = H5Gopen2(f, LOG_RUN, H5P_DEFAULT);
  if (run >= 0 && h5util_attr_read_string(run, LOG_RUN_ID, &value) == 0 && n) snprintf(id, n, "%s", value);
  free(value);
  if (run >= 0) H5Gclose(run);
  if (f >= 0) H5Fclose(f);
  if (fapl >= 0) H5Pclose(fapl);
  H5Eclear2(H5E_DEFAULT);
  h5util_quiet_end(q);
  return n && id[0];
}

/* ---- the parts (io/log_part.h) ---- */

static const log_part_t *log_parts[LOG_PARTS_MAX]; /* a log holds at most every registered part */
static int log_parts_n;

void log_part_register(const log_part_t *part) {
  for (int i = 0; i < log_parts_n; i++)
    if (log_parts[i] == part) return;
  if (log_parts_n == LOG_PARTS_MAX)
    surge_runtime_error("log: more than %d parts registered", log_parts_n);
  log_parts[log_parts_n++] = part;
}

const log_group_format_t *log_group_format(const char *group) {
  for (int i = 0; i < log_parts_n; i++)
    for (int k = 0; k < log_parts[i]->nformats; k++)
      if (strcmp(log_parts[i]->formats[k]->group, group) == 0) return log_parts[i]->formats[k];
  return NULL;
}

/* The parts the file has, read by their own readers. */
static void read_parts(log_reader_t *r, log_data_t *L) {
  for (int i = 0; i < log_parts_n; i++) {
    const log_part_t *p = log_parts[i];
    if (!log_reader_has_object(r, r->file, p->group, H5I_GROUP, p->group)) continue;
    L->part[L->nparts].part = p;
    L->part[L->nparts].data = p->read(r, L);
    L->nparts++;
  }
}

/* Whether the log has any of the multiplexed phases (then it is expected to have them all). */
static int multiplexed_phases(log_reader_t *r, hid_t f) {
  for (int p = 0; p < PHASE_COUNT; p++) {
    char path[96];
    snprintf(path, sizeof path, "%s/%s%s", log_group_path[LOG_RANKS], LOG_PHASE_PREFIX, log_phase_info[p].name);
    if (log_phase_multiplexed((log_phase_t)p) && log_reader_has_object(r, f, path, H5I_DATASET, path)) return 1;
  }
  return 0;
}

log_data_t *log_read(const char *path) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  log_data_t *L = xcalloc(1, sizeof *L);
  L->path = xstrdup(path);
  log_reader_t r = {.path = L->path, .chk = h5util_checker(L->path, H5UTIL_INPUT_ERROR)};
  r.chk.lead = "damaged Surge log: ";
  r.chk.hint = "was the file cut short or changed by another program?";
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t f = r.file = open_log(&r);
  read_run(&r, L, f);
  r.tolerance = L->flush_every > 0 ? (size_t)L->flush_every : 1;
  int multiplexed = multiplexed_phases(&r, f);
  log_table_spec_t metrics = {.group = log_group_path[LOG_METRICS], .prefix = "", .ndims = 1, .tolerance = r.tolerance};
  log_reader_table(&r, &metrics, &L->metrics);
  const log_column_t *step = log_column(&L->metrics, LOG_STEP);
  if (!step) log_reader_not_surge(&r, "no /metrics/step");
  /* /ranks: (rows of /metrics/step, ranks of /ranks/rank) at most, both bounded by what is stored */
  log_table_spec_t ranks = {.group = log_group_path[LOG_RANKS], .prefix = LOG_PHASE_PREFIX, .ndims = 2,
                            .multiplexed = multiplexed, .scale = step->stored_rows, .tolerance = r.tolerance,
                            .max_cols = rank_columns(&r, f), .exact_cols = 1};
  log_reader_table(&r, &ranks, &L->phases);
  log_table_limit_rows(&L->phases, L->metrics.rows);
  L->phase_ranks = L->phases.ncol ? L->phases.col[0].cols : 0;
  for (int i = 0; i < L->phases.ncol; i++)
    if (L->phases.col[i].cols < L->phase_ranks) L->phase_ranks = L->phases.col[i].cols;
  log_table_spec_t eval = {.group = log_group_path[LOG_EVAL], .prefix = "", .ndims = 1, .tolerance = r.tolerance};
  log_reader_table(&r, &eval, &L->eval);
  if (L->eval.present && !log_column(&L->eval, LOG_STEP)) log_reader_damaged(&r, "has no step dataset", "/eval");
  read_events(&r, L, f);
  read_parts(&r, L);
  log_reader_ok(&r, H5Fclose(f), "close", "/");
  h5util_quiet_end(q);
  return L;
}

void log_data_free(log_data_t *L) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  if (!L) return;
  for (int i = 0; i < L->nsettings; i++) {
    free(L->setting[i].key);
    free(L->setting[i].value);
  }
  free(L->setting);
  log_table_free(&L->metrics);
  log_table_free(&L->phases);
  log_table_free(&L->eval);
  for (size_t i = 0; i < L->nevents; i++) free(L->event_text[i]);
  free(L->event_text);
  free(L->event_step);
  for (int i = 0; i < L->nparts; i++) L->part[i].part->free(L->part[i].data);
  free(L->deck);
  free(L->path);
  free(L);
}

const void *log_part_data(const log_data_t *L, const char *name) {
  for (int i = 0; i < L->nparts; i++)
    if (strcmp(L->part[i].part->name, name) == 0) return L->part[i].data;
  return NULL;
}

/* ---- the parts' access to the reader ---- */

size_t log_reader_tolerance(const log_reader_t *r) { return r->tolerance; }

int log_reader_has(log_reader_t *r, const char *path, H5I_type_t type) {
  return log_reader_has_object(r, r->file, path, type, path);
}

hid_t log_reader_group(log_reader_t *r, const char *path) {
  return log_reader_ok(r, H5Gopen2(r->file, path, H5P_DEFAULT), "open", path);
}

void log_reader_group_close(log_reader_t *r, hid_t g, const char *path) {
  log_reader_ok(r, H5Gclose(g), "close", path);
}

const log_column_t *log_column(const log_table_t *t, const char *name) {
  for (int i = 0; i < t->ncol; i++)
    if (strcmp(t->col[i].name, name) == 0) return &t->col[i];
  return NULL;
}

const char *log_setting(const log_data_t *L, const char *key) {
  for (int i = 0; i < L->nsettings; i++)
    if (strcmp(L->setting[i].key, key) == 0) return L->setting[i].value;
  return NULL;
}

const char *log_run_name(const log_data_t *L) {
  const char *name = log_setting(L, "run.name");
  return name && name[0] ? name : L->path;
}
