/* surge-report's library (src/report/): unit checks on logs built in memory, and two ways to damage
 * a real log for tests/test_report.sh.
 *
 *   test_report_lib                the unit checks (TAP): nice axes, byte units, phase kinds, the
 *                                  swept columns and sorting of the table, CSV quoting, SVG escaping
 *   test_report_lib cut FILE N     shorten /metrics/loss and /ranks/phase_comm of log FILE by N rows,
 *                                  as a writer killed in the middle of a flush leaves them
 *   test_report_lib drop FILE GROUP delete GROUP (e.g. /eval) from log FILE
 *   test_report_lib damage FILE DATASET KIND   damage one dataset of log FILE as a hostile or broken
 *                                  program would: 2d (a 2-D dataset in its place), group, strings, short
 *                                  (3 rows left), narrow (a 2-D dataset cut to 1 column), extent=N (N
 *                                  rows claimed, none stored), value=X@I (row I set to X), text=T@I
 *                                  (string I of a string dataset set to T, with \e written as the
 *                                  escape character), deflated=N (a 1-D dataset of N zeros
 *                                  stored deflated: a large claim in a small file) */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/log_format.h"
#include "layout/log_parts.h"
#include "report/report.h"
#include "report/svg.h"
#include "tap.h"

/* ---- damaging real logs ---- */

static int cut(const char *path, hsize_t n) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return 1;
  const char *const names[] = {"/metrics/loss", "/ranks/phase_comm"};
  for (int i = 0; i < 2; i++) {
    hid_t d = H5Dopen2(f, names[i], H5P_DEFAULT), s = H5Dget_space(d);
    hsize_t dims[2];
    int nd = H5Sget_simple_extent_dims(s, dims, NULL);
    if (d < 0 || nd < 1 || dims[0] < n) return 1;
    dims[0] -= n;
    if (H5Dset_extent(d, dims) < 0) return 1;
    H5Sclose(s);
    H5Dclose(d);
  }
  return H5Fclose(f) < 0;
}

static int drop(const char *path, const char *group) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0 || H5Ldelete(f, group, H5P_DEFAULT) < 0) return 1;
  return H5Fclose(f) < 0;
}

/* DATASET replaced by another object of the same name. */
static int replace(hid_t f, const char *name, const char *kind, hsize_t rows) {
  if (H5Ldelete(f, name, H5P_DEFAULT) < 0) return 1;
  hid_t o = -1;
  if (strcmp(kind, "group") == 0) {
    o = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    return o < 0 || H5Gclose(o) < 0;
  }
  hsize_t dims[2] = {rows, 2};
  int two = strcmp(kind, "2d") == 0;
  hid_t type = two ? H5Tcopy(H5T_NATIVE_DOUBLE) : H5Tcopy(H5T_C_S1);
  if (!two) H5Tset_size(type, H5T_VARIABLE);
  hid_t space = H5Screate_simple(two ? 2 : 1, dims, NULL);
  o = H5Dcreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = o < 0;
  if (!rc && two) {
    double *v = xcalloc(rows * 2 + 1, sizeof *v);
    rc = H5Dwrite(o, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
    free(v);
  } else if (!rc) {
    const char **v = xcalloc(rows + 1, sizeof *v);
    for (hsize_t i = 0; i < rows; i++) v[i] = "1.5";
    rc = H5Dwrite(o, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
    free(v);
  }
  H5Dclose(o), H5Sclose(space), H5Tclose(type);
  return rc;
}

/* One element of dataset d (1-D) written from buf in memory type mt. */
static int write_one(hid_t d, hid_t mt, hsize_t i, const void *buf) {
  hid_t fs = H5Dget_space(d), ms = H5Screate(H5S_SCALAR);
  hsize_t one = 1;
  int rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, &i, NULL, &one, NULL) < 0 ||
           H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, buf) < 0;
  H5Sclose(ms), H5Sclose(fs);
  return rc;
}

/* DATASET (1-D) replaced by one of its type holding n zeros, deflated, written a chunk at a time. */
static int replace_deflated(hid_t f, const char *name, hsize_t n) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT), type = d < 0 ? -1 : H5Dget_type(d);
  if (d < 0 || type < 0 || H5Dclose(d) < 0 || H5Ldelete(f, name, H5P_DEFAULT) < 0) return 1;
  enum { CHUNK = 1 << 20 };
  hsize_t chunk = CHUNK, count;
  hid_t space = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int rc = H5Pset_chunk(dcpl, 1, &chunk) < 0 || H5Pset_deflate(dcpl, 6) < 0;
  d = rc ? -1 : H5Dcreate2(f, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  double *v = xmalloc(CHUNK * sizeof *v);
  for (hsize_t at = 0; d >= 0 && !rc && at < n; at += count) {
    count = n - at < CHUNK ? n - at : CHUNK;
    for (hsize_t i = 0; i < count; i++) v[i] = 0.0;
    hid_t mem = H5Screate_simple(1, &count, NULL);
    rc = H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &count, NULL) < 0 ||
         H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, v) < 0;
    H5Sclose(mem);
  }
  free(v);
  rc |= d < 0 || H5Dclose(d) < 0;
  H5Pclose(dcpl), H5Sclose(space), H5Tclose(type);
  return rc;
}

static int damage(const char *path, const char *name, const char *kind) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return 1;
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = H5Dget_space(d);
  hsize_t dims[2] = {0, 0};
  if (d < 0 || H5Sget_simple_extent_dims(s, dims, NULL) < 0) return 1;
  H5Sclose(s);
  int rc = 0;
  double x;
  long long i, n;
  char text[256];
  if (strcmp(kind, "2d") == 0 || strcmp(kind, "group") == 0 || strcmp(kind, "strings") == 0) {
    H5Dclose(d);
    d = -1;
    rc = replace(f, name, kind, dims[0]);
  } else if (strcmp(kind, "short") == 0) {
    dims[0] = 3;
    rc = H5Dset_extent(d, dims) < 0;
  } else if (strcmp(kind, "narrow") == 0) {
    dims[1] = 1;
    rc = H5Dset_extent(d, dims) < 0;
  } else if (sscanf(kind, "extent=%lld", &n) == 1) {
    dims[0] = (hsize_t)n;
    rc = H5Dset_extent(d, dims) < 0;
  } else if (sscanf(kind, "deflated=%lld", &n) == 1) {
    H5Dclose(d);
    d = -1;
    rc = n < 0 || replace_deflated(f, name, (hsize_t)n);
  } else if (sscanf(kind, "value=%lf@%lld", &x, &i) == 2) {
    rc = write_one(d, H5T_NATIVE_DOUBLE, (hsize_t)i, &x);
  } else if (sscanf(kind, "text=%255[^@]@%lld", text, &i) == 2) {
    for (char *p = text; (p = strstr(p, "\\e")) != NULL;) {
      *p = 0x1b;
      memmove(p + 1, p + 2, strlen(p + 2) + 1);
    }
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5T_CSET_UTF8);
    const char *p = text;
    rc = write_one(d, mt, (hsize_t)i, &p);
    H5Tclose(mt);
  } else {
    rc = 1;
  }
  if (d >= 0) H5Dclose(d);
  return H5Fclose(f) < 0 || rc;
}

/* ---- logs built in memory ---- */

static void add_column(log_table_t *g, const char *name, const double *v, size_t rows) {
  log_column_t *c = &g->col[g->ncol++];
  snprintf(c->name, sizeof c->name, "%s", name);
  c->cols = 1;
  c->v = xmalloc(rows * sizeof(double));
  memcpy(c->v, v, rows * sizeof(double));
}

/* A two-step log whose settings are the given "key=value" pairs; accuracy NaN: no /eval. */
static log_data_t *fake_log(const char *path, double final_loss, double accuracy, int nsettings,
                              const char *const *settings) {
  log_data_t *L = xcalloc(1, sizeof *L);
  L->path = xstrdup(path);
  L->deck = xstrdup("");
  L->ranks = 1;
  snprintf(L->program, sizeof L->program, "surge-train");
  L->setting = xcalloc((size_t)nsettings, sizeof *L->setting);
  for (int i = 0; i < nsettings; i++) {
    const char *eq = strchr(settings[i], '=');
    L->setting[i].key = strndup(settings[i], (size_t)(eq - settings[i]));
    L->setting[i].value = xstrdup(eq + 1);
  }
  L->nsettings = nsettings;
  const double step[] = {1, 2}, loss[] = {2.5, final_loss}, time[] = {0.5, 0.25}, sps[] = {64, 128};
  L->metrics = (log_table_t){.present = 1, .rows = 2, .col = xcalloc(4, sizeof(log_column_t))};
  add_column(&L->metrics, "step", step, 2);
  add_column(&L->metrics, "loss", loss, 2);
  add_column(&L->metrics, "step_time", time, 2);
  add_column(&L->metrics, "samples_per_sec", sps, 2);
  L->eval = (log_table_t){.present = !isnan(accuracy), .col = xcalloc(2, sizeof(log_column_t))};
  if (!isnan(accuracy)) {
    const double estep[] = {2}, acc[] = {accuracy};
    L->eval.rows = 1;
    add_column(&L->eval, "step", estep, 1);
    add_column(&L->eval, "accuracy", acc, 1);
  }
  L->phases.col = xcalloc(1, sizeof(log_column_t));
  return L;
}

/* The logs of column c of the table, in row order, as "a,b,c" of their paths. */
static const char *row_order(const report_table_t *t) {
  static char buf[256];
  buf[0] = '\0';
  for (int r = 0; r < t->nrow; r++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", r ? "," : "", t->log[r]->path);
  return buf;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return xstrdup("");
  char *text = xcalloc(1 << 16, 1);
  size_t n = fread(text, 1, (1 << 16) - 1, f);
  text[n] = '\0';
  fclose(f);
  return text;
}

/* ---- the checks ---- */

static void check_axes(void) {
  plot_axis_t a = plot_axis(0.53, 2.31, 6);
  tap_ok(a.lo == 0.5 && a.hi == 2.5 && a.step == 0.5 && a.decimals == 1,
         "axis of [0.53, 2.31]: %g..%g step %g, %d decimals (want 0.5..2.5 step 0.5, 1)", a.lo, a.hi, a.step,
         a.decimals);
  a = plot_axis(0, 40, 6);
  tap_ok(a.lo == 0 && a.hi == 40 && a.step == 10 && a.decimals == 0, "axis of [0, 40]: %g..%g step %g", a.lo, a.hi,
         a.step);
  a = plot_axis(0.3, 0.7, 4);
  tap_ok(fabs(a.lo - 0.3) < 1e-12 && fabs(a.hi - 0.7) < 1e-12 && fabs(a.step - 0.1) < 1e-12,
         "axis of [0.3, 0.7] keeps its ends despite rounding: %.17g..%.17g", a.lo, a.hi);
  a = plot_axis(5, 5, 6);
  tap_ok(a.lo < 5 && a.hi > 5, "an empty range is widened: %g..%g", a.lo, a.hi);
  a = plot_axis(NAN, 1, 6);
  tap_ok(a.lo == 0 && a.hi == 1, "a range without finite ends is 0..1: %g..%g", a.lo, a.hi);
}

static void check_units_and_phases(void) {
  char buf[32];
  report_format_bytes(1536, buf, sizeof buf);
  tap_ok(strcmp(buf, "1.50 KiB") == 0, "1536 bytes: \"%s\"", buf);
  report_format_bytes(160729440, buf, sizeof buf);
  tap_ok(strcmp(buf, "153 MiB") == 0, "160729440 bytes: \"%s\"", buf);
  report_format_bytes(0, buf, sizeof buf);
  tap_ok(strcmp(buf, "0 B") == 0, "0 bytes: \"%s\"", buf);
  tap_ok(strcmp(report_phase_kind("wait").category, "waiting") == 0 &&
             strcmp(report_phase_kind("comm").category, "communication") == 0 &&
             strcmp(report_phase_kind("forward").category, "compute") == 0,
         "phase categories: wait waiting, comm communication, forward compute");
  report_phase_kind_t unknown = report_phase_kind("lend");
  tap_ok(strcmp(unknown.category, "other") == 0 &&
             log_column_order("/ranks", "phase_lend") > log_column_order("/ranks", "phase_paused"),
         "an unknown phase is \"other\" and comes after the known ones");
  tap_ok(log_column_order("/ranks", "phase_data") < log_column_order("/ranks", "phase_forward") &&
             log_column_order("/ranks", "phase_wait") < log_column_order("/ranks", "phase_comm") &&
             log_column_order("/metrics", "step") < log_column_order("/metrics", "loss") &&
             log_column_order("/metrics", "samples_per_sec") < log_column_order("/metrics", "bytes_dp") &&
             log_column_order("/metrics", "bytes_dp") < log_column_order("/metrics", "bytes_other") &&
             log_column_order("/metrics", "bytes_other") < log_column_order("/metrics", "new_metric") &&
             log_column_order("/eval", "loss") < log_column_order("/eval", "accuracy") &&
             log_column_order("/multiplex", "step") < log_column_order("/multiplex", "background_ranks_active"),
         "columns in execution / documented order, unknown ones last");
}

static void check_table(void) {
  const char *a[] = {"run.name=b", "run.seed=1", "run.out_dir=/x/a", "train.global_batch=16", "train.lr=0.1",
                     "model.mlp_hidden=512,512"};
  const char *b[] = {"run.name=a", "run.seed=1", "run.out_dir=/x/b", "train.global_batch=8", "train.lr=0.02",
                     "model.mlp_hidden=64"};
  const char *c[] = {"run.name=c", "run.seed=1", "run.out_dir=/x/c", "train.global_batch=32", "train.lr=0.1",
                     "model.mlp_hidden=64"};
  log_data_t *logs[3] = {fake_log("A", 0.5, 0.9, 6, a), fake_log("B", 0.25, NAN, 6, b),
                           fake_log("C", 0.75, 0.8, 6, c)};
  report_table_t *t = report_table_build((const log_data_t *const *)logs, 3);
  char cols[512] = "";
  for (int i = 0; i < t->ncol; i++) snprintf(cols + strlen(cols), sizeof cols - strlen(cols), "%s ", t->col[i]);
  tap_ok(strcmp(cols, "log steps run.name train.global_batch train.lr model.mlp_hidden final_loss best_eval_loss "
                      "best_accuracy samples_per_sec ") == 0,
         "columns: the differing keys (not the output directory, not the equal seed): %s", cols);
  tap_ok(strcmp(t->label[0], "global_batch=16, lr=0.1, mlp_hidden=512,512") == 0,
         "legend label: the swept values but the run name: %s", t->label[0]);
  const report_cell_t *sps = &t->cell[report_table_column(t, "samples_per_sec")];
  double want = (64 * 0.5 + 128 * 0.25) / (0.5 + 0.25);
  tap_ok(sps->is_num && fabs(sps->num - want) < 1e-12, "samples/s is the samples of all steps over their time: %g (want %g)",
         sps->num, want);

  report_table_sort(t, report_table_column(t, "train.global_batch"), 0);
  tap_ok(strcmp(row_order(t), "B,A,C") == 0, "sort by global_batch is numeric (8, 16, 32): %s", row_order(t));
  report_table_sort(t, report_table_column(t, "run.name"), 1);
  tap_ok(strcmp(row_order(t), "C,A,B") == 0, "sort by run.name --desc is by text (c, b, a): %s", row_order(t));
  report_table_sort(t, report_table_column(t, "train.lr"), 0);
  tap_ok(strcmp(row_order(t), "B,C,A") == 0, "equal values keep their order (0.02, then 0.1 of C and A): %s",
         row_order(t));
  report_table_sort(t, report_table_column(t, "best_accuracy"), 0);
  tap_ok(strcmp(row_order(t), "C,A,B") == 0, "a run without a value sorts last ascending: %s", row_order(t));
  report_table_sort(t, report_table_column(t, "best_accuracy"), 1);
  tap_ok(strcmp(row_order(t), "A,C,B") == 0, "... and descending: %s", row_order(t));
  report_table_sort(t, report_table_column(t, "final_loss"), 0);
  tap_ok(strcmp(row_order(t), "B,A,C") == 0, "sort by final_loss (0.25, 0.5, 0.75): %s", row_order(t));
  tap_ok(report_table_column(t, "run.out_dir") < 0 && report_table_column(t, "nope") < 0,
         "no column for an output location or an unknown name");

  char path[] = "/tmp/surge-test-report-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  report_export_table_csv(path, t);
  char *csv = slurp(path);
  if (!tap_ok(strstr(csv, "\nA,2,b,16,0.1,\"512,512\",0.5,,0.9,85.3333333333333\n") != NULL,
              "CSV quotes a value with a comma and leaves a missing value empty"))
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) tap_diag("%s", line);
  free(csv);

  svg_t *s = svg_open(path, 100, 100, "t<i>tle & \"more\"");
  plot_t p = {s, 10, 10, 80, 80, plot_axis(0, 1, 2), plot_axis(0, 1, 2)};
  const double x[] = {0, 0.5, 1}, y[] = {0, NAN, 1};
  plot_series(&p, "series", "s-1", "a<b&'c'", x, y, 3, "#000000", "", 0);
  svg_close(s);
  char *svg = slurp(path);
  tap_ok(strstr(svg, "<title>t&lt;i&gt;tle &amp; &quot;more&quot;</title>") && strstr(svg, "a&lt;b&amp;&apos;c&apos;") &&
             !strstr(svg, "a<b"),
         "SVG text is escaped");
  char *d = strstr(svg, " d=\"");
  if (d) *strchr(d + 4, '"') = '\0';
  tap_ok(d && strcmp(d, " d=\" M10.00 90.00 M90.00 10.00") == 0, "a NaN point breaks the line:%s", d ? d : " no path");
  free(svg);
  unlink(path);
  report_table_free(t);
  for (int i = 0; i < 3; i++) log_data_free(logs[i]);
}

int main(int argc, char **argv) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  layout_log_parts_register();
  if (argc == 4 && strcmp(argv[1], "cut") == 0) return cut(argv[2], (hsize_t)atol(argv[3]));
  if (argc == 4 && strcmp(argv[1], "drop") == 0) return drop(argv[2], argv[3]);
  if (argc == 5 && strcmp(argv[1], "damage") == 0) return damage(argv[2], argv[3], argv[4]);
  if (argc != 1) {
    fprintf(stderr, "usage: test_report_lib [cut FILE N | drop FILE GROUP | damage FILE DATASET KIND]\n");
    return 2;
  }
  check_axes();
  check_units_and_phases();
  check_table();
  return tap_done();
}
