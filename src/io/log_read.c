/* Reading a Surge log into memory (io/log_read.h). Every HDF5 call goes through the reader's
 * checker: once the file is recognised as a Surge log, a failing call means it is damaged. */
#include "io/log_read.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/config.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "io/deck_value.h"
#include "io/h5util.h"
#include "io/log_format.h"
#include "io/strbuf.h"

enum { MAX_DATASETS = 1024 }; /* datasets read from one group */

/* The file being read and its checker. */
typedef struct reader {
  const char *path;
  h5util_check_t chk;
} reader_t;

static _Noreturn void not_surge(const reader_t *r, const char *why) {
  surge_input_error("%s: not a Surge log (%s) (hint: a metrics log is the log.h5 file surge-train writes)", r->path,
                    why);
}

static _Noreturn void damaged(const reader_t *r, const char *what, const char *h5path) {
  surge_input_error("%s: damaged Surge log: %s %s", r->path, h5path, what);
}

static hid_t ok(reader_t *r, hid_t result, const char *what, const char *h5path) {
  return h5util_check(&r->chk, result, what, h5path);
}

static int has_object(reader_t *r, hid_t loc, const char *name, H5I_type_t type, const char *h5path) {
  return ok(r, h5util_exists(loc, name, type), "look up", h5path) > 0;
}

/* ---- attributes: absent, or of another kind, reads as "", -1 or NaN ---- */

static void attr_string(reader_t *r, hid_t obj, const char *obj_path, const char *name, char *buf, size_t n) {
  char *value = NULL, where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  int rc = h5util_attr_read_string(obj, name, &value);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  snprintf(buf, n, "%s", rc == 0 ? value : "");
  free(value);
}

static long long attr_int(reader_t *r, hid_t obj, const char *obj_path, const char *name) {
  char where[192];
  snprintf(where, sizeof where, "%s@%s", obj_path, name);
  int64_t v = -1;
  int rc = h5util_attr_read_i64(obj, name, &v);
  if (rc == -1) h5util_fail(&r->chk, "read", where);
  return rc == 0 ? (long long)v : -1;
}

static double attr_double(reader_t *r, hid_t obj, const char *obj_path, const char *name) {
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
static char *read_text(reader_t *r, hid_t loc, const char *name, const char *h5path, size_t max) {
  if (!has_object(r, loc, name, H5I_DATASET, h5path)) return xstrdup("");
  hid_t d = ok(r, H5Dopen2(loc, name, H5P_DEFAULT), "open", h5path);
  hid_t t = ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  size_t len = H5Tget_size(t);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 || H5Sget_simple_extent_npoints(s) != 1)
    damaged(r, "is not one fixed-length string", h5path);
  if (len == 0 || len > max)
    surge_input_error("%s: damaged Surge log: %s holds %zu bytes, more than the %zu allowed", r->path, h5path, len,
                      max);
  char *text = xmalloc(len + 1);
  ok(r, H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), "read", h5path);
  text[len] = '\0';
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Tclose(t), "close the type of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
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

static void read_run(reader_t *r, log_data_t *L, hid_t f) {
  const char *why = log_not_surge(f, &r->chk);
  if (why) not_surge(r, why);
  hid_t run = ok(r, H5Gopen2(f, LOG_RUN, H5P_DEFAULT), "open", LOG_RUN);
  attr_string(r, run, LOG_RUN, LOG_RUN_PROGRAM, L->program, sizeof L->program);
  attr_string(r, run, LOG_RUN, LOG_RUN_VERSION, L->version, sizeof L->version);
  attr_string(r, run, LOG_RUN, LOG_RUN_START_TIME, L->start_time, sizeof L->start_time);
  attr_string(r, run, LOG_RUN, LOG_RUN_LAYOUT, L->layout, sizeof L->layout);
  attr_string(r, run, LOG_RUN, LOG_RUN_MODEL, L->model, sizeof L->model);
  L->ranks = attr_int(r, run, LOG_RUN, LOG_RUN_RANKS);
  L->parameters = attr_int(r, run, LOG_RUN, LOG_RUN_PARAMETERS);
  L->global_batch = attr_int(r, run, LOG_RUN, LOG_RUN_GLOBAL_BATCH);
  L->flush_every = attr_int(r, run, LOG_RUN, LOG_RUN_FLUSH_EVERY);
  L->deck = read_text(r, run, LOG_RUN_DECK, LOG_RUN "/" LOG_RUN_DECK, DECK_MAX_BYTES);
  ok(r, H5Gclose(run), "close", LOG_RUN);
  parse_settings(L);
}

/* ---- numeric groups ---- */

typedef struct name_list {
  char **name;
  int n;
  const reader_t *r;
  const char *group;
} name_list_t;

static herr_t collect_name(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  (void)g;
  (void)info;
  name_list_t *l = data;
  if (l->n == MAX_DATASETS) {
    char why[128];
    snprintf(why, sizeof why, "%s has more than %d entries", l->group, MAX_DATASETS);
    not_surge(l->r, why);
  }
  l->name[l->n++] = xstrdup(name);
  return 0;
}

/* Read one numeric dataset of 1 or 2 dimensions (is_column) into c. */
static void read_column(reader_t *r, hid_t g, const char *group, const char *name, log_column_t *c, size_t *rows) {
  char h5path[160];
  snprintf(h5path, sizeof h5path, "%s/%s", group, name);
  hid_t d = ok(r, H5Dopen2(g, name, H5P_DEFAULT), "open", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  hsize_t dims[2] = {0, 1};
  ok(r, H5Sget_simple_extent_dims(s, dims, NULL), "get the shape of", h5path);
  size_t cells = surge_mul_size((size_t)dims[0], (size_t)dims[1], h5path);
  if (cells > LOG_READ_MAX_CELLS)
    surge_input_error("%s: %s holds %zu values, more than the %zu a log may have", r->path, h5path, cells,
                      LOG_READ_MAX_CELLS);
  snprintf(c->name, sizeof c->name, "%s", name);
  attr_string(r, d, h5path, LOG_UNITS, c->units, sizeof c->units);
  c->cols = (size_t)dims[1];
  c->v = xmalloc(surge_mul_size(cells, sizeof(double), h5path));
  if (cells) ok(r, H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->v), "read", h5path);
  *rows = (size_t)dims[0];
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
}

/* Whether dataset g/name holds numbers (integer or floating point) in `ndims` dimensions: the
 * datasets a group's columns are read from. Others (strings, a newer log's other shapes) are left. */
static int is_column(reader_t *r, hid_t g, const char *group, const char *name, int ndims) {
  char h5path[160];
  snprintf(h5path, sizeof h5path, "%s/%s", group, name);
  hid_t d = ok(r, H5Dopen2(g, name, H5P_DEFAULT), "open", h5path);
  hid_t t = ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  H5T_class_t k = H5Tget_class(t);
  int nd = H5Sget_simple_extent_ndims(s);
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Tclose(t), "close the type of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
  return (k == H5T_INTEGER || k == H5T_FLOAT) && nd == ndims;
}

static int column_before(const char *group, const log_column_t *a, const log_column_t *b) {
  int ra = log_column_order(group, a->name), rb = log_column_order(group, b->name);
  return ra != rb ? ra < rb : strcmp(a->name, b->name) < 0;
}

/* Every numeric `ndims`-D dataset of `group` whose name starts with `prefix`, in log_column_order;
 * the rows kept are those every one of them has. A missing group leaves t->present 0. */
static void read_group(reader_t *r, hid_t f, const char *group, const char *prefix, int ndims, log_table_t *t) {
  memset(t, 0, sizeof *t);
  if (!has_object(r, f, group, H5I_GROUP, group)) return;
  t->present = 1;
  hid_t gid = ok(r, H5Gopen2(f, group, H5P_DEFAULT), "open", group);
  name_list_t names = {xcalloc(MAX_DATASETS, sizeof(char *)), 0, r, group};
  ok(r, H5Literate(gid, H5_INDEX_NAME, H5_ITER_INC, NULL, collect_name, &names), "list", group);
  t->col = xcalloc((size_t)names.n + 1, sizeof *t->col);
  size_t min_rows = 0, max_rows = 0;
  for (int i = 0; i < names.n; i++) {
    const char *name = names.name[i];
    if (strncmp(name, prefix, strlen(prefix)) == 0 && has_object(r, gid, name, H5I_DATASET, group) &&
        is_column(r, gid, group, name, ndims)) {
      size_t rows;
      log_column_t c = {0};
      read_column(r, gid, group, name, &c, &rows);
      int j = t->ncol++;
      while (j > 0 && column_before(group, &c, &t->col[j - 1])) {
        t->col[j] = t->col[j - 1];
        j--;
      }
      t->col[j] = c;
      min_rows = t->ncol == 1 || rows < min_rows ? rows : min_rows;
      max_rows = rows > max_rows ? rows : max_rows;
    }
    free(names.name[i]);
  }
  free(names.name);
  t->rows = min_rows;
  t->rows_dropped = max_rows - min_rows;
  ok(r, H5Gclose(gid), "close", group);
}

/* Keep at most `rows` rows of t (the other rows do not belong to a row of its step scale). */
static void limit_rows(log_table_t *t, size_t rows) {
  if (t->rows <= rows) return;
  t->rows_dropped += t->rows - rows;
  t->rows = rows;
}

/* ---- /events and /plan ---- */

/* A 1-D dataset of variable-length strings (h5path), malloc'd strings; *n receives their count. */
static char **read_strings(reader_t *r, hid_t f, const char *h5path, size_t *n) {
  hid_t d = ok(r, H5Dopen2(f, h5path, H5P_DEFAULT), "open", h5path);
  hid_t t = ok(r, H5Dget_type(d), "get the type of", h5path);
  hid_t s = ok(r, H5Dget_space(d), "get the shape of", h5path);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0 || H5Sget_simple_extent_ndims(s) != 1)
    damaged(r, "is not a 1-D dataset of variable-length strings", h5path);
  hsize_t len = 0;
  ok(r, H5Sget_simple_extent_dims(s, &len, NULL), "get the shape of", h5path);
  if (len > LOG_READ_MAX_CELLS)
    surge_input_error("%s: %s holds %llu strings, more than the %zu a log may have", r->path, h5path,
                      (unsigned long long)len, LOG_READ_MAX_CELLS);
  hid_t mt = ok(r, H5Tcopy(H5T_C_S1), "make a string type for", h5path);
  ok(r, H5Tset_size(mt, H5T_VARIABLE), "make a string type for", h5path);
  ok(r, H5Tset_cset(mt, H5Tget_cset(t)), "make a string type for", h5path); /* HDF5 converts no charsets */
  char **raw = xcalloc((size_t)len + 1, sizeof(char *)), **text = xcalloc((size_t)len + 1, sizeof(char *));
  if (len) ok(r, H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw), "read", h5path);
  for (hsize_t i = 0; i < len; i++) text[i] = xstrdup(raw[i] ? raw[i] : "");
#if H5_VERSION_GE(1, 12, 0)
  if (len) ok(r, H5Treclaim(mt, s, H5P_DEFAULT, raw), "free the strings of", h5path);
#else
  if (len) ok(r, H5Dvlen_reclaim(mt, s, H5P_DEFAULT, raw), "free the strings of", h5path);
#endif
  free(raw);
  ok(r, H5Tclose(mt), "close a string type of", h5path);
  ok(r, H5Sclose(s), "close the dataspace of", h5path);
  ok(r, H5Tclose(t), "close the type of", h5path);
  ok(r, H5Dclose(d), "close", h5path);
  *n = (size_t)len;
  return text;
}

static void free_strings(char **text, size_t n) {
  for (size_t i = 0; i < n; i++) free(text[i]);
  free(text);
}

static void free_table(log_table_t *t) {
  for (int i = 0; i < t->ncol; i++) free(t->col[i].v);
  free(t->col);
}

static void read_events(reader_t *r, log_data_t *L, hid_t f) {
  const char *group = log_group_path[LOG_EVENTS];
  char text_path[64];
  snprintf(text_path, sizeof text_path, "%s/%s", group, log_event_info[LOG_EVENT_TEXT].name);
  log_table_t steps;
  read_group(r, f, group, LOG_STEP, 1, &steps);
  const log_column_t *step = log_column(&steps, LOG_STEP);
  if (steps.present && step && has_object(r, f, text_path, H5I_DATASET, text_path)) {
    size_t n;
    char **text = read_strings(r, f, text_path, &n);
    L->nevents = steps.rows < n ? steps.rows : n;
    L->event_step = xcalloc(L->nevents + 1, sizeof(double));
    L->event_text = xcalloc(L->nevents + 1, sizeof(char *));
    for (size_t i = 0; i < L->nevents; i++) {
      L->event_step[i] = step->v[i];
      L->event_text[i] = text[i];
      text[i] = NULL;
    }
    free_strings(text, n);
  }
  free_table(&steps);
}

static void read_plan(reader_t *r, log_data_t *L, hid_t f) {
  log_plan_t *p = &L->plan;
  read_group(r, f, LOG_PLAN, "", 1, &p->nodes);
  p->present = p->nodes.present;
  p->text = xstrdup("");
  if (!p->present) return;
  if (!log_column(&p->nodes, log_plan_info[LOG_PLAN_RANKS].name) ||
      !log_column(&p->nodes, log_plan_info[LOG_PLAN_FIRST_RANK].name))
    damaged(r, "has no ranks or first_rank dataset", LOG_PLAN);
  p->name = xcalloc(p->nodes.rows + 1, sizeof(char *));
  size_t n = 0;
  char name_path[64];
  snprintf(name_path, sizeof name_path, LOG_PLAN "/%s", log_plan_info[LOG_PLAN_NAME].name);
  char **names = has_object(r, f, name_path, H5I_DATASET, name_path) ? read_strings(r, f, name_path, &n) : NULL;
  for (size_t i = 0; i < p->nodes.rows; i++) p->name[i] = xstrdup(i < n ? names[i] : "");
  free_strings(names, n);
  hid_t g = ok(r, H5Gopen2(f, LOG_PLAN, H5P_DEFAULT), "open", LOG_PLAN);
  p->iteration_us = attr_double(r, g, LOG_PLAN, LOG_PLAN_ITERATION_US);
  p->rank_us = attr_double(r, g, LOG_PLAN, LOG_PLAN_RANK_US);
  p->one_rank_us = attr_double(r, g, LOG_PLAN, LOG_PLAN_ONE_RANK_US);
  p->amplification_limit = attr_double(r, g, LOG_PLAN, LOG_PLAN_AMPLIFICATION_LIMIT);
  p->job_ranks = attr_int(r, g, LOG_PLAN, LOG_PLAN_JOB_RANKS);
  p->global_batch = attr_int(r, g, LOG_PLAN, LOG_PLAN_GLOBAL_BATCH);
  free(p->text);
  p->text = read_text(r, g, LOG_PLAN_TEXT, LOG_PLAN "/" LOG_PLAN_TEXT, LOG_READ_MAX_CELLS);
  ok(r, H5Gclose(g), "close", LOG_PLAN);
}

/* ---- /multiplex ---- */

static void read_mux(reader_t *r, log_data_t *L, hid_t f) {
  log_mux_t *m = &L->mux;
  const char *group = log_group_path[LOG_MULTIPLEX];
  read_group(r, f, group, "", 1, &m->series);
  limit_rows(&m->series, L->metrics.rows);
  m->present = m->series.present;
  m->fg_samples_per_sec = m->bg_samples_per_sec = m->total_samples_per_sec = m->fg_slowdown = NAN;
  if (!m->present) return;
  hid_t g = ok(r, H5Gopen2(f, group, H5P_DEFAULT), "open", group);
  attr_string(r, g, group, LOG_MUX_ROLE, m->role, sizeof m->role);
  attr_string(r, g, group, LOG_MUX_CHANNEL, m->channel, sizeof m->channel);
  attr_string(r, g, group, LOG_MUX_PRIORITY, m->priority, sizeof m->priority);
  attr_string(r, g, group, LOG_MUX_ON_FOREGROUND_END, m->on_foreground_end, sizeof m->on_foreground_end);
  m->fg_samples_per_sec = attr_double(r, g, group, log_multiplex_info[LOG_MUX_FG_SPS].name);
  m->bg_samples_per_sec = attr_double(r, g, group, log_multiplex_info[LOG_MUX_BG_SPS].name);
  m->total_samples_per_sec = attr_double(r, g, group, log_multiplex_info[LOG_MUX_TOTAL_SPS].name);
  m->fg_slowdown = attr_double(r, g, group, LOG_MUX_FOREGROUND_SLOWDOWN);
  ok(r, H5Gclose(g), "close", group);
}

/* ---- /compress ---- */

static void read_compress(reader_t *r, log_data_t *L, hid_t f) {
  log_compress_t *c = &L->compress;
  const char *group = log_group_path[LOG_COMPRESS];
  read_group(r, f, group, "", 1, &c->series);
  read_group(r, f, group, "", 2, &c->boundary);
  c->present = c->series.present;
  if (!c->present) return;
  if (!log_column(&c->series, LOG_STEP)) damaged(r, "has no step dataset", group);
  limit_rows(&c->boundary, c->series.rows);
  limit_rows(&c->series, c->boundary.ncol ? c->boundary.rows : c->series.rows);
  hid_t g = ok(r, H5Gopen2(f, group, H5P_DEFAULT), "open", group);
  attr_string(r, g, group, LOG_CMP_SUMMARY, c->summary, sizeof c->summary);
  ok(r, H5Gclose(g), "close", group);
}

/* ---- /pipeline ---- */

static void read_pipe(reader_t *r, log_data_t *L, hid_t f) {
  log_pipe_t *p = &L->pipe;
  p->tp = p->pp = p->dp = p->micro_batches = -1;
  p->bubble_theory = NAN;
  if (!has_object(r, f, LOG_PIPE, H5I_GROUP, LOG_PIPE)) return;
  p->present = 1;
  hid_t g = ok(r, H5Gopen2(f, LOG_PIPE, H5P_DEFAULT), "open", LOG_PIPE);
  p->tp = attr_int(r, g, LOG_PIPE, LOG_PIPE_TP);
  p->pp = attr_int(r, g, LOG_PIPE, LOG_PIPE_PP);
  p->dp = attr_int(r, g, LOG_PIPE, LOG_PIPE_DP);
  p->micro_batches = attr_int(r, g, LOG_PIPE, LOG_PIPE_MICRO_BATCHES);
  attr_string(r, g, LOG_PIPE, LOG_PIPE_SCHEDULE, p->schedule, sizeof p->schedule);
  p->bubble_theory = attr_double(r, g, LOG_PIPE, LOG_PIPE_BUBBLE_THEORY);
  ok(r, H5Gclose(g), "close", LOG_PIPE);
  read_group(r, f, LOG_PIPE_STAGES, "", 1, &p->stages);
  const char *events = log_group_path[LOG_PIPELINE];
  read_group(r, f, events, "", 1, &p->events);
  for (int c = 0; c < LOG_PIPE_COLUMN_COUNT && p->events.present; c++)
    if (!log_column(&p->events, log_pipe_info[c].name)) damaged(r, "lacks a column of the pipeline events", events);
  if (p->events.present && !log_column(&p->events, LOG_STEP)) damaged(r, "has no step dataset", events);
}

/* ---- the whole log ---- */

static hid_t open_log(reader_t *r) {
  struct stat st;
  if (stat(r->path, &st) != 0)
    surge_input_error("%s: cannot open: %s (hint: check the path)", r->path, strerror(errno));
  if (!S_ISREG(st.st_mode)) not_surge(r, "not a regular file");
  if (H5Fis_hdf5(r->path) <= 0) not_surge(r, "not an HDF5 file");
  /* no locks: the writer takes none either, and a log may sit on a file system without them */
  hid_t fapl = ok(r, H5Pcreate(H5P_FILE_ACCESS), "make the access properties for", "/");
  ok(r, H5Pset_file_locking(fapl, 0, 1), "turn off file locking for", "/");
  hid_t f = ok(r, H5Fopen(r->path, H5F_ACC_RDONLY, fapl), "open the HDF5 file at", "/");
  ok(r, H5Pclose(fapl), "close the access properties for", "/");
  return f;
}

log_data_t *log_read(const char *path) {
  log_data_t *L = xcalloc(1, sizeof *L);
  L->path = xstrdup(path);
  reader_t r = {.path = L->path, .chk = h5util_checker(L->path, H5UTIL_INPUT_ERROR)};
  r.chk.lead = "damaged Surge log: ";
  r.chk.hint = "was the file cut short or changed by another program?";
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t f = open_log(&r);
  read_run(&r, L, f);
  read_group(&r, f, log_group_path[LOG_METRICS], "", 1, &L->metrics);
  if (!log_column(&L->metrics, LOG_STEP)) not_surge(&r, "no /metrics/step");
  read_group(&r, f, log_group_path[LOG_RANKS], LOG_PHASE_PREFIX, 2, &L->phases);
  limit_rows(&L->phases, L->metrics.rows);
  L->phase_ranks = L->phases.ncol ? L->phases.col[0].cols : 0;
  for (int i = 0; i < L->phases.ncol; i++)
    if (L->phases.col[i].cols < L->phase_ranks) L->phase_ranks = L->phases.col[i].cols;
  read_group(&r, f, log_group_path[LOG_EVAL], "", 1, &L->eval);
  if (L->eval.present && !log_column(&L->eval, LOG_STEP)) damaged(&r, "has no step dataset", "/eval");
  read_events(&r, L, f);
  read_plan(&r, L, f);
  read_mux(&r, L, f);
  read_pipe(&r, L, f);
  read_compress(&r, L, f);
  ok(&r, H5Fclose(f), "close", "/");
  h5util_quiet_end(q);
  return L;
}

void log_data_free(log_data_t *L) {
  if (!L) return;
  for (int i = 0; i < L->nsettings; i++) {
    free(L->setting[i].key);
    free(L->setting[i].value);
  }
  free(L->setting);
  free_table(&L->metrics);
  free_table(&L->phases);
  free_table(&L->eval);
  for (size_t i = 0; i < L->nevents; i++) free(L->event_text[i]);
  free(L->event_text);
  free(L->event_step);
  free_table(&L->plan.nodes);
  for (size_t i = 0; L->plan.name && i < L->plan.nodes.rows; i++) free(L->plan.name[i]);
  free(L->plan.name);
  free(L->plan.text);
  free_table(&L->mux.series);
  free_table(&L->pipe.stages);
  free_table(&L->pipe.events);
  free_table(&L->compress.series);
  free_table(&L->compress.boundary);
  free(L->deck);
  free(L->path);
  free(L);
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
