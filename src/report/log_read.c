/* Reading a Surge log into memory (report.h), checking it on the way: what makes a file a Surge
 * log, what a damaged one looks like, and the bounds checked before allocating. */
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/config.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "io/deck_value.h"
#include "io/strbuf.h"
#include "report/report.h"

#define SURGE_LOG_PROGRAM "surge-train"
enum { MAX_DATASETS = 1024 }; /* datasets read from one group */

/* ---- checked HDF5 calls: a failure after the file was recognised means it is damaged ---- */

static hid_t ok(hid_t result, const char *path, const char *what, const char *h5path) {
  if (result < 0)
    surge_input_error("%s: damaged Surge log: cannot %s %s (hint: was the file cut short or changed by "
                      "another program?)",
                      path, what, h5path);
  return result;
}

static void not_surge(const char *path, const char *why) {
  surge_input_error("%s: not a Surge log (%s) (hint: a metrics log is the log.h5 file surge-train writes)",
                    path, why);
}

/* A fixed-length string attribute of obj into buf; 0 (and buf "") when there is none or it is not
 * a fixed-length string. */
static int attr_string(hid_t obj, const char *obj_path, const char *name, char *buf, size_t n, const char *path) {
  buf[0] = '\0';
  if (ok(H5Aexists(obj, name), path, "look up an attribute of", obj_path) == 0) return 0;
  hid_t a = ok(H5Aopen(obj, name, H5P_DEFAULT), path, "open an attribute of", obj_path);
  hid_t t = ok(H5Aget_type(a), path, "get the type of an attribute of", obj_path);
  int got = 0;
  size_t len = H5Tget_size(t);
  if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 && len > 0 && len <= 4096) {
    char *tmp = xmalloc(len + 1);
    ok(H5Aread(a, t, tmp), path, "read an attribute of", obj_path);
    tmp[len] = '\0';
    snprintf(buf, n, "%s", tmp);
    free(tmp);
    got = 1;
  }
  ok(H5Tclose(t), path, "close a type of", obj_path);
  ok(H5Aclose(a), path, "close an attribute of", obj_path);
  return got;
}

/* A scalar integer attribute; -1 when there is none. */
static long long attr_int(hid_t obj, const char *obj_path, const char *name, const char *path) {
  if (ok(H5Aexists(obj, name), path, "look up an attribute of", obj_path) == 0) return -1;
  hid_t a = ok(H5Aopen(obj, name, H5P_DEFAULT), path, "open an attribute of", obj_path);
  hid_t t = ok(H5Aget_type(a), path, "get the type of an attribute of", obj_path);
  hid_t s = ok(H5Aget_space(a), path, "get the shape of an attribute of", obj_path);
  long long v = -1;
  if (H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_npoints(s) == 1)
    ok(H5Aread(a, H5T_NATIVE_LLONG, &v), path, "read an attribute of", obj_path);
  ok(H5Sclose(s), path, "close a dataspace of", obj_path);
  ok(H5Tclose(t), path, "close a type of", obj_path);
  ok(H5Aclose(a), path, "close an attribute of", obj_path);
  return v;
}

/* Whether loc/name exists and is an object of the given type (H5I_GROUP, H5I_DATASET). */
static int has_object(hid_t loc, const char *name, H5I_type_t type, const char *path) {
  if (ok(H5Lexists(loc, name, H5P_DEFAULT), path, "look up", name) == 0) return 0;
  hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
  if (o < 0) return 0; /* a dangling link */
  int is = H5Iget_type(o) == type;
  ok(H5Oclose(o), path, "close", name);
  return is;
}

/* ---- /run ---- */

/* A scalar fixed-length string dataset loc/name (h5path in messages) of at most max bytes; "" when
 * there is none. */
static char *read_text(hid_t loc, const char *name, const char *h5path, size_t max, const char *path) {
  if (!has_object(loc, name, H5I_DATASET, path)) return xstrdup("");
  hid_t d = ok(H5Dopen2(loc, name, H5P_DEFAULT), path, "open", h5path);
  hid_t t = ok(H5Dget_type(d), path, "get the type of", h5path);
  hid_t s = ok(H5Dget_space(d), path, "get the shape of", h5path);
  size_t len = H5Tget_size(t);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 || H5Sget_simple_extent_npoints(s) != 1)
    surge_input_error("%s: damaged Surge log: %s is not one fixed-length string", path, h5path);
  if (len == 0 || len > max)
    surge_input_error("%s: damaged Surge log: %s holds %zu bytes, more than the %zu allowed", path, h5path, len, max);
  char *text = xmalloc(len + 1);
  ok(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text), path, "read", h5path);
  text[len] = '\0';
  ok(H5Sclose(s), path, "close the dataspace of", h5path);
  ok(H5Tclose(t), path, "close the type of", h5path);
  ok(H5Dclose(d), path, "close", h5path);
  return text;
}

/* Every deck key with its resolved value, through the deck parser: a deck this version cannot
 * read is an error naming "PATH:/run/deck:LINE". */
static void parse_settings(report_log_t *L) {
  if (!L->deck[0]) return;
  char where[4200];
  snprintf(where, sizeof where, "%s:/run/deck", L->path);
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

static void read_run(report_log_t *L, hid_t f) {
  if (!has_object(f, "/run", H5I_GROUP, L->path)) not_surge(L->path, "no /run group");
  hid_t run = ok(H5Gopen2(f, "/run", H5P_DEFAULT), L->path, "open", "/run");
  if (!attr_string(run, "/run", "program", L->program, sizeof L->program, L->path) ||
      strcmp(L->program, SURGE_LOG_PROGRAM) != 0)
    not_surge(L->path, "/run@program is not \"" SURGE_LOG_PROGRAM "\"");
  attr_string(run, "/run", "version", L->version, sizeof L->version, L->path);
  attr_string(run, "/run", "start_time", L->start_time, sizeof L->start_time, L->path);
  attr_string(run, "/run", "layout", L->layout, sizeof L->layout, L->path);
  attr_string(run, "/run", "model", L->model, sizeof L->model, L->path);
  L->ranks = attr_int(run, "/run", "ranks", L->path);
  L->parameters = attr_int(run, "/run", "parameters", L->path);
  L->global_batch = attr_int(run, "/run", "global_batch", L->path);
  L->flush_every = attr_int(run, "/run", "flush_every", L->path);
  L->deck = read_text(run, "deck", "/run/deck", DECK_MAX_BYTES, L->path);
  ok(H5Gclose(run), L->path, "close", "/run");
  parse_settings(L);
}

/* ---- numeric groups ---- */

typedef struct name_list {
  char **name;
  int n;
  const char *path, *group;
} name_list_t;

static herr_t collect_name(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  (void)g;
  (void)info;
  name_list_t *l = data;
  if (l->n == MAX_DATASETS)
    surge_input_error("%s: not a Surge log (%s has more than %d entries)", l->path, l->group, MAX_DATASETS);
  l->name[l->n++] = xstrdup(name);
  return 0;
}

/* Read one numeric dataset of 1 or 2 dimensions (is_column) into c. */
static void read_column(hid_t g, const char *group, const char *name, report_column_t *c, size_t *rows,
                        const char *path) {
  char h5path[160];
  snprintf(h5path, sizeof h5path, "%s/%s", group, name);
  hid_t d = ok(H5Dopen2(g, name, H5P_DEFAULT), path, "open", h5path);
  hid_t s = ok(H5Dget_space(d), path, "get the shape of", h5path);
  hsize_t dims[2] = {0, 1};
  ok(H5Sget_simple_extent_dims(s, dims, NULL), path, "get the shape of", h5path);
  size_t cells = surge_mul_size((size_t)dims[0], (size_t)dims[1], h5path);
  if (cells > REPORT_MAX_CELLS)
    surge_input_error("%s: %s holds %zu values, more than the %zu surge-report reads", path, h5path, cells,
                      REPORT_MAX_CELLS);
  snprintf(c->name, sizeof c->name, "%s", name);
  attr_string(d, h5path, "units", c->units, sizeof c->units, path);
  c->cols = (size_t)dims[1];
  c->v = xmalloc(surge_mul_size(cells, sizeof(double), h5path));
  if (cells) ok(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->v), path, "read", h5path);
  *rows = (size_t)dims[0];
  ok(H5Sclose(s), path, "close the dataspace of", h5path);
  ok(H5Dclose(d), path, "close", h5path);
}

/* Whether dataset loc/name holds numbers (integer or floating point) in `ndims` dimensions: the
 * datasets a group's columns are read from. Others (strings, a newer log's other shapes) are left. */
static int is_column(hid_t g, const char *name, int ndims, const char *path) {
  hid_t d = ok(H5Dopen2(g, name, H5P_DEFAULT), path, "open", name);
  hid_t t = ok(H5Dget_type(d), path, "get the type of", name);
  hid_t s = ok(H5Dget_space(d), path, "get the shape of", name);
  H5T_class_t k = H5Tget_class(t);
  int nd = H5Sget_simple_extent_ndims(s);
  ok(H5Sclose(s), path, "close the dataspace of", name);
  ok(H5Tclose(t), path, "close the type of", name);
  ok(H5Dclose(d), path, "close", name);
  return (k == H5T_INTEGER || k == H5T_FLOAT) && nd == ndims;
}

static int column_before(const char *group, const report_column_t *a, const report_column_t *b) {
  int ra = report_column_rank(group, a->name), rb = report_column_rank(group, b->name);
  return ra != rb ? ra < rb : strcmp(a->name, b->name) < 0;
}

/* Every numeric `ndims`-D dataset of `group` whose name starts with `prefix`, ordered by
 * report_column_rank; the rows kept are those every one of them has. A missing group leaves
 * g->present 0. */
static void read_group(hid_t f, const char *group, const char *prefix, int ndims, report_group_t *g,
                       const char *path) {
  memset(g, 0, sizeof *g);
  if (!has_object(f, group, H5I_GROUP, path)) return;
  g->present = 1;
  hid_t gid = ok(H5Gopen2(f, group, H5P_DEFAULT), path, "open", group);
  name_list_t names = {xcalloc(MAX_DATASETS, sizeof(char *)), 0, path, group};
  ok(H5Literate(gid, H5_INDEX_NAME, H5_ITER_INC, NULL, collect_name, &names), path, "list", group);
  g->col = xcalloc((size_t)names.n + 1, sizeof *g->col);
  size_t min_rows = 0, max_rows = 0;
  for (int i = 0; i < names.n; i++) {
    const char *name = names.name[i];
    if (strncmp(name, prefix, strlen(prefix)) == 0 && has_object(gid, name, H5I_DATASET, path) &&
        is_column(gid, name, ndims, path)) {
      size_t rows;
      report_column_t c = {0};
      read_column(gid, group, name, &c, &rows, path);
      int j = g->ncol++;
      while (j > 0 && column_before(group, &c, &g->col[j - 1])) {
        g->col[j] = g->col[j - 1];
        j--;
      }
      g->col[j] = c;
      min_rows = g->ncol == 1 || rows < min_rows ? rows : min_rows;
      max_rows = rows > max_rows ? rows : max_rows;
    }
    free(names.name[i]);
  }
  free(names.name);
  g->rows = min_rows;
  g->rows_dropped = max_rows - min_rows;
  ok(H5Gclose(gid), path, "close", group);
}

/* Keep at most `rows` rows of g (the other rows do not belong to a row of its step scale). */
static void limit_rows(report_group_t *g, size_t rows) {
  if (g->rows <= rows) return;
  g->rows_dropped += g->rows - rows;
  g->rows = rows;
}

/* ---- /events and /plan ---- */

/* A 1-D dataset of variable-length strings (h5path), malloc'd strings; *n receives their count. */
static char **read_strings(hid_t f, const char *h5path, size_t *n, const char *path) {
  hid_t d = ok(H5Dopen2(f, h5path, H5P_DEFAULT), path, "open", h5path);
  hid_t t = ok(H5Dget_type(d), path, "get the type of", h5path);
  hid_t s = ok(H5Dget_space(d), path, "get the shape of", h5path);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0 || H5Sget_simple_extent_ndims(s) != 1)
    surge_input_error("%s: damaged Surge log: %s is not a 1-D dataset of variable-length strings", path, h5path);
  hsize_t len = 0;
  ok(H5Sget_simple_extent_dims(s, &len, NULL), path, "get the shape of", h5path);
  if (len > REPORT_MAX_CELLS)
    surge_input_error("%s: %s holds %llu strings, more than the %zu surge-report reads", path, h5path,
                      (unsigned long long)len, REPORT_MAX_CELLS);
  hid_t mt = ok(H5Tcopy(H5T_C_S1), path, "make a string type for", h5path);
  ok(H5Tset_size(mt, H5T_VARIABLE), path, "make a string type for", h5path);
  ok(H5Tset_cset(mt, H5Tget_cset(t)), path, "make a string type for", h5path); /* HDF5 converts no charsets */
  char **raw = xcalloc((size_t)len + 1, sizeof(char *)), **text = xcalloc((size_t)len + 1, sizeof(char *));
  if (len) ok(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw), path, "read", h5path);
  for (hsize_t i = 0; i < len; i++) text[i] = xstrdup(raw[i] ? raw[i] : "");
#if H5_VERSION_GE(1, 12, 0)
  if (len) ok(H5Treclaim(mt, s, H5P_DEFAULT, raw), path, "free the strings of", h5path);
#else
  if (len) ok(H5Dvlen_reclaim(mt, s, H5P_DEFAULT, raw), path, "free the strings of", h5path);
#endif
  free(raw);
  ok(H5Tclose(mt), path, "close a string type of", h5path);
  ok(H5Sclose(s), path, "close the dataspace of", h5path);
  ok(H5Tclose(t), path, "close the type of", h5path);
  ok(H5Dclose(d), path, "close", h5path);
  *n = (size_t)len;
  return text;
}

static void free_strings(char **text, size_t n) {
  for (size_t i = 0; i < n; i++) free(text[i]);
  free(text);
}

static void read_events(report_log_t *L, hid_t f) {
  report_group_t steps;
  read_group(f, "/events", "step", 1, &steps, L->path);
  const report_column_t *step = report_column(&steps, "step");
  if (steps.present && step && has_object(f, "/events/text", H5I_DATASET, L->path)) {
    size_t n;
    char **text = read_strings(f, "/events/text", &n, L->path);
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
  for (int i = 0; i < steps.ncol; i++) free(steps.col[i].v);
  free(steps.col);
}

/* A scalar floating-point (or integer) attribute; NaN when there is none. */
static double attr_double(hid_t obj, const char *obj_path, const char *name, const char *path) {
  if (ok(H5Aexists(obj, name), path, "look up an attribute of", obj_path) == 0) return NAN;
  hid_t a = ok(H5Aopen(obj, name, H5P_DEFAULT), path, "open an attribute of", obj_path);
  hid_t t = ok(H5Aget_type(a), path, "get the type of an attribute of", obj_path);
  hid_t s = ok(H5Aget_space(a), path, "get the shape of an attribute of", obj_path);
  double v = NAN;
  H5T_class_t k = H5Tget_class(t);
  if ((k == H5T_FLOAT || k == H5T_INTEGER) && H5Sget_simple_extent_npoints(s) == 1)
    ok(H5Aread(a, H5T_NATIVE_DOUBLE, &v), path, "read an attribute of", obj_path);
  ok(H5Sclose(s), path, "close a dataspace of", obj_path);
  ok(H5Tclose(t), path, "close a type of", obj_path);
  ok(H5Aclose(a), path, "close an attribute of", obj_path);
  return v;
}

static void read_plan(report_log_t *L, hid_t f) {
  report_plan_t *p = &L->plan;
  read_group(f, "/plan", "", 1, &p->nodes, L->path);
  p->present = p->nodes.present;
  p->text = xstrdup("");
  if (!p->present) return;
  if (!report_column(&p->nodes, "ranks") || !report_column(&p->nodes, "first_rank"))
    surge_input_error("%s: damaged Surge log: /plan has no ranks or first_rank dataset", L->path);
  p->name = xcalloc(p->nodes.rows + 1, sizeof(char *));
  size_t n = 0;
  char **names = has_object(f, "/plan/name", H5I_DATASET, L->path) ? read_strings(f, "/plan/name", &n, L->path) : NULL;
  for (size_t i = 0; i < p->nodes.rows; i++) p->name[i] = xstrdup(i < n ? names[i] : "");
  free_strings(names, n);
  hid_t g = ok(H5Gopen2(f, "/plan", H5P_DEFAULT), L->path, "open", "/plan");
  p->iteration_us = attr_double(g, "/plan", "predicted_iteration_us", L->path);
  p->rank_us = attr_double(g, "/plan", "predicted_rank_us", L->path);
  p->one_rank_us = attr_double(g, "/plan", "one_rank_us", L->path);
  p->amplification_limit = attr_double(g, "/plan", "amplification_limit", L->path);
  p->job_ranks = attr_int(g, "/plan", "job_ranks", L->path);
  p->global_batch = attr_int(g, "/plan", "global_batch", L->path);
  free(p->text);
  p->text = read_text(g, "text", "/plan/text", REPORT_MAX_CELLS, L->path);
  ok(H5Gclose(g), L->path, "close", "/plan");
}

/* ---- /multiplex ---- */

static void read_mux(report_log_t *L, hid_t f) {
  report_mux_t *m = &L->mux;
  read_group(f, "/multiplex", "", 1, &m->series, L->path);
  limit_rows(&m->series, L->metrics.rows);
  m->present = m->series.present;
  m->fg_samples_per_sec = m->bg_samples_per_sec = m->total_samples_per_sec = m->fg_slowdown = NAN;
  if (!m->present) return;
  hid_t g = ok(H5Gopen2(f, "/multiplex", H5P_DEFAULT), L->path, "open", "/multiplex");
  attr_string(g, "/multiplex", "role", m->role, sizeof m->role, L->path);
  attr_string(g, "/multiplex", "channel", m->channel, sizeof m->channel, L->path);
  attr_string(g, "/multiplex", "priority", m->priority, sizeof m->priority, L->path);
  attr_string(g, "/multiplex", "on_foreground_end", m->on_foreground_end, sizeof m->on_foreground_end, L->path);
  m->fg_samples_per_sec = attr_double(g, "/multiplex", "foreground_samples_per_sec", L->path);
  m->bg_samples_per_sec = attr_double(g, "/multiplex", "background_samples_per_sec", L->path);
  m->total_samples_per_sec = attr_double(g, "/multiplex", "total_samples_per_sec", L->path);
  m->fg_slowdown = attr_double(g, "/multiplex", "foreground_slowdown", L->path);
  ok(H5Gclose(g), L->path, "close", "/multiplex");
}

/* ---- the whole log ---- */

static hid_t open_log(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) surge_input_error("%s: cannot open: %s (hint: check the path)", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) not_surge(path, "not a regular file");
  if (H5Fis_hdf5(path) <= 0) not_surge(path, "not an HDF5 file");
  /* no locks: the writer takes none either, and a log may sit on a file system without them */
  hid_t fapl = ok(H5Pcreate(H5P_FILE_ACCESS), path, "make the access properties for", "/");
  ok(H5Pset_file_locking(fapl, 0, 1), path, "turn off file locking for", "/");
  hid_t f = ok(H5Fopen(path, H5F_ACC_RDONLY, fapl), path, "open the HDF5 file at", "/");
  ok(H5Pclose(fapl), path, "close the access properties for", "/");
  return f;
}

report_log_t *report_log_read(const char *path) {
  report_log_t *L = xcalloc(1, sizeof *L);
  L->path = xstrdup(path);
  hid_t f = open_log(path);
  read_run(L, f);
  read_group(f, "/metrics", "", 1, &L->metrics, path);
  if (!report_column(&L->metrics, "step")) not_surge(path, "no /metrics/step");
  read_group(f, "/ranks", "phase_", 2, &L->phases, path);
  limit_rows(&L->phases, L->metrics.rows);
  L->phase_ranks = L->phases.ncol ? L->phases.col[0].cols : 0;
  for (int i = 0; i < L->phases.ncol; i++)
    if (L->phases.col[i].cols < L->phase_ranks) L->phase_ranks = L->phases.col[i].cols;
  L->phase_shown = xcalloc((size_t)L->phases.ncol + 1, 1);
  for (int i = 0; i < L->phases.ncol; i++) L->phase_shown[i] = (unsigned char)report_phase_shown(L, i);
  read_group(f, "/eval", "", 1, &L->eval, path);
  if (L->eval.present && !report_column(&L->eval, "step"))
    surge_input_error("%s: damaged Surge log: /eval has no step dataset", path);
  read_events(L, f);
  read_plan(L, f);
  read_mux(L, f);
  ok(H5Fclose(f), path, "close", "/");
  return L;
}

static void group_free(report_group_t *g) {
  for (int i = 0; i < g->ncol; i++) free(g->col[i].v);
  free(g->col);
}

void report_log_free(report_log_t *L) {
  if (!L) return;
  for (int i = 0; i < L->nsettings; i++) {
    free(L->setting[i].key);
    free(L->setting[i].value);
  }
  free(L->setting);
  group_free(&L->metrics);
  group_free(&L->phases);
  free(L->phase_shown);
  group_free(&L->eval);
  for (size_t i = 0; i < L->nevents; i++) free(L->event_text[i]);
  free(L->event_text);
  free(L->event_step);
  group_free(&L->plan.nodes);
  for (size_t i = 0; L->plan.name && i < L->plan.nodes.rows; i++) free(L->plan.name[i]);
  free(L->plan.name);
  free(L->plan.text);
  group_free(&L->mux.series);
  free(L->deck);
  free(L->path);
  free(L);
}

const report_column_t *report_column(const report_group_t *g, const char *name) {
  for (int i = 0; i < g->ncol; i++)
    if (strcmp(g->col[i].name, name) == 0) return &g->col[i];
  return NULL;
}

const char *report_setting(const report_log_t *L, const char *key) {
  for (int i = 0; i < L->nsettings; i++)
    if (strcmp(L->setting[i].key, key) == 0) return L->setting[i].value;
  return NULL;
}

const char *report_run_name(const report_log_t *L) {
  const char *name = report_setting(L, "run.name");
  return name && name[0] ? name : L->path;
}
