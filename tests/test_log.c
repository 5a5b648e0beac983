/* The HDF5 metrics log (src/io/log.h). tests/test_log.sh runs the modes below under mpiexec and
 * passes their TAP lines through; every rank takes part in the log's collectives, rank 0 alone
 * reads the files back (HDF5 API, h5dump and h5ls) and prints TAP.
 *
 *   test_log write DIR          write DIR/log-<ranks>.h5 (12 steps, evals, an event), check it; resume
 *                               at step 8, append 9..10, check the truncation and the new rows
 *   test_log rerank FILE FROM   resume the log `write` left on FROM ranks at step 10 on this many:
 *                               /ranks widens (more ranks) or keeps NaN cells (fewer)
 *   test_log resume FILE STEP   resume at STEP, append two steps, check (a foreign FILE must end
 *                               the process with exit 2 before any output)
 *   test_log create FILE        create a log at FILE and close it (an unwritable path must fail)
 *   test_log until-killed FILE DIR   write 20 flushed steps, then one step every 20 ms until DIR/stop
 *                               appears, then 3 unflushed steps, write DIR/idle ("<pid> <last step>")
 *                               and sleep until killed
 *   test_log make-foreign DIR   DIR/norun.h5 (HDF5 without /run), DIR/other.h5 (/run@program "other",
 *                               newest file format) */
#include <errno.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "surge_build_config.h"
#include "comm/comm.h"
#include "core/error.h"
#include "io/log.h"
#include "nn/graph.h"
#include "tap.h"

#define BATCH 32
#define FLUSH_EVERY 5
static const char *const deck_text = "[run]\nsteps = 12\n\n[model]\nzoo = mlp\nmlp_hidden = 3\n";

/* ---- the rows the tests write: every value a function of (step, rank, generation) ---- */

/* A run's rows are written in segments (a first run, then resumed runs), each by its own rank
 * count; the generation of a row is the index of its segment, so rewritten rows are told apart. */
typedef struct segment {
  long first_step;
  int ranks;
} segment_t;

static double loss_of(long s, int gen) { return 2.5 - 0.1 * (double)s + 100.0 * gen; }
static double lr_of(long s, int gen) { return 0.001 * (double)s + gen; }
static double grad_norm_of(long s, int gen) { return 1.0 + 0.5 * (double)s + gen; }
static double step_sec_of(long s, int gen) { return 0.25 + 0.01 * (double)s + gen; }
static uint64_t bytes_of(long s, int t, int gen) { return (uint64_t)(1000 * s + 10 * t + gen); }
static double phase_of(long s, int rank, int p, int gen) {
  return rank + 0.1 * p + 0.001 * (double)s + 10.0 * gen;
}

static log_row_t make_row(long s, int rank, int gen) {
  log_row_t r = {.step = s,
                 .loss = loss_of(s, gen),
                 .lr = lr_of(s, gen),
                 .grad_norm = grad_norm_of(s, gen),
                 .step_sec = step_sec_of(s, gen),
                 .samples_per_sec = BATCH / step_sec_of(s, gen)};
  for (int t = 0; t < TRAFFIC_COUNT; t++) r.bytes[t] = bytes_of(s, t, gen);
  for (int p = 0; p < PHASE_COUNT; p++) r.phase[p] = phase_of(s, rank, p, gen);
  return r;
}

static void write_steps(run_log_t *log, int rank, long from, long to, int gen) {
  for (long s = from; s <= to; s++) {
    log_row_t r = make_row(s, rank, gen);
    run_log_step(log, &r);
  }
}

/* ---- the run around the log ---- */

typedef struct fixture {
  comm_t world;
  log_run_info_t info;
  graph_t g; /* 4 -> 3 linear: 15 parameters */
} fixture_t;

static void fixture_init(fixture_t *fx) {
  comm_world(&fx->world);
  fx->info = (log_run_info_t){.layout = "dp", .model = "mlp", .global_batch = BATCH, .flush_every = FLUSH_EVERY,
                              .phases = log_phases_plain()};
  graph_init(&fx->g, shape1(4), INIT_KAIMING_UNIFORM);
  if (nn_linear(&fx->g, 0, 3, 1, "fc") < 0) surge_runtime_error("test graph: %s", fx->g.err);
}

static void fixture_free(fixture_t *fx) {
  graph_free(&fx->g);
  comm_free(&fx->world);
}

static run_log_t *open_log(fixture_t *fx, const char *path, long resume_step) {
  return run_log_open(path, &fx->info, deck_text, &fx->g.params, &fx->world, resume_step);
}

/* A new log at path with steps 1..last, an evaluation (loss 1.5, accuracy 0.625) at step eval_at
 * and the event "checkpoint written" at step event_at (eval_at < event_at <= last); still open. */
static run_log_t *new_log_with_history(fixture_t *fx, const char *path, long eval_at, long event_at, long last) {
  run_log_t *log = open_log(fx, path, -1);
  write_steps(log, fx->world.rank, 1, eval_at, 0);
  run_log_eval(log, eval_at, 1.5, 0.625);
  write_steps(log, fx->world.rank, eval_at + 1, event_at, 0);
  run_log_event(log, event_at, "checkpoint written");
  write_steps(log, fx->world.rank, event_at + 1, last, 0);
  return log;
}

/* ---- reading back with the HDF5 API (rank 0) ---- */

static hid_t open_ro(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) surge_runtime_error("test: cannot open %s", path);
  return f;
}

/* Every value of a dataset as mem_type; dims gets its extent (up to 2 dimensions). Free the result. */
static void *read_all(hid_t f, const char *dset, hid_t mem_type, hsize_t dims[2]) {
  dims[0] = 0;
  dims[1] = 1;
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  if (d < 0) return NULL;
  hid_t space = H5Dget_space(d);
  int nd = H5Sget_simple_extent_ndims(space);
  if (nd >= 1 && nd <= 2) H5Sget_simple_extent_dims(space, dims, NULL);
  H5Sclose(space);
  size_t n = (size_t)(dims[0] * dims[1]);
  void *v = xcalloc(n ? n : 1, H5Tget_size(mem_type));
  if (n && H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
    free(v);
    v = NULL;
  }
  H5Dclose(d);
  return v;
}

static int attr_string(hid_t f, const char *obj, const char *name, char *buf, size_t n) {
  buf[0] = '\0';
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t type = H5Aget_type(a);
  size_t len = H5Tget_size(type);
  char *tmp = xcalloc(len + 1, 1);
  int ok = len < n && H5Aread(a, type, tmp) >= 0;
  if (ok) snprintf(buf, n, "%s", tmp);
  free(tmp);
  H5Tclose(type);
  H5Aclose(a);
  return ok;
}

static int64_t attr_int64(hid_t f, const char *obj, const char *name) {
  int64_t v = INT64_MIN;
  hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) return v;
  H5Aread(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  return v;
}

static int is_attached(hid_t f, const char *dset, const char *scale, unsigned dim) {
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT), s = H5Dopen2(f, scale, H5P_DEFAULT);
  int ok = d >= 0 && s >= 0 && H5DSis_scale(s) > 0 && H5DSis_attached(d, s, dim) > 0;
  if (d >= 0) H5Dclose(d);
  if (s >= 0) H5Dclose(s);
  return ok;
}

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (1.0 + fabs(b)); }

/* ---- what a log must hold ---- */

typedef struct expect {
  long steps; /* rows: steps 1..steps */
  int nseg;
  segment_t seg[4];
  int cols;   /* columns of /ranks */
  int ranks;  /* /run@ranks (the latest segment) */
  int n_eval;
  long eval_step[4];
  double eval_loss[4], eval_acc[4];
  int n_event;
  long event_step[4];
  const char *event_text[4];
} expect_t;

static const segment_t *segment_of(const expect_t *e, long s) {
  const segment_t *seg = &e->seg[0];
  for (int i = 0; i < e->nseg; i++)
    if (e->seg[i].first_step <= s) seg = &e->seg[i];
  return seg;
}

static int gen_of(const expect_t *e, long s) { return (int)(segment_of(e, s) - e->seg); }

static void check_run_group(hid_t f, const char *label, int ranks) {
  char s[256];
  tap_ok(attr_string(f, "/run", "program", s, sizeof s) && strcmp(s, "surge-train") == 0,
         "%s: /run@program = \"%s\"", label, s);
  tap_ok(attr_string(f, "/run", "version", s, sizeof s) && strcmp(s, PACKAGE_VERSION) == 0,
         "%s: /run@version = \"%s\"", label, s);
  tap_ok(attr_int64(f, "/run", "ranks") == ranks, "%s: /run@ranks = %lld", label,
         (long long)attr_int64(f, "/run", "ranks"));
  tap_ok(attr_string(f, "/run", "layout", s, sizeof s) && strcmp(s, "dp") == 0, "%s: /run@layout = \"%s\"", label, s);
  tap_ok(attr_string(f, "/run", "model", s, sizeof s) && strcmp(s, "mlp") == 0, "%s: /run@model = \"%s\"", label, s);
  tap_ok(attr_int64(f, "/run", "parameters") == 15, "%s: /run@parameters = 15 (4x3 weight + 3 bias)", label);
  tap_ok(attr_int64(f, "/run", "global_batch") == BATCH, "%s: /run@global_batch = %d", label, BATCH);
  int y, mo, d, h, mi, sec;
  char z = 0;
  int parsed = attr_string(f, "/run", "start_time", s, sizeof s) &&
               sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &sec, &z) == 7;
  tap_ok(parsed && z == 'Z' && y >= 2020 && strlen(s) == 20, "%s: /run@start_time is ISO 8601 UTC (\"%s\")", label,
         s);
  hid_t d_deck = H5Dopen2(f, "/run/deck", H5P_DEFAULT);
  int deck_ok = 0;
  if (d_deck >= 0) {
    hid_t type = H5Dget_type(d_deck);
    size_t len = H5Tget_size(type);
    char *text = xcalloc(len + 1, 1);
    deck_ok = H5Dread(d_deck, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0 && strcmp(text, deck_text) == 0;
    free(text);
    H5Tclose(type);
    H5Dclose(d_deck);
  }
  tap_ok(deck_ok, "%s: /run/deck holds the resolved deck text", label);
}

static void check_units(hid_t f, const char *label, const char *dset, const char *units) {
  char u[64], desc[256];
  int ok = attr_string(f, dset, "units", u, sizeof u) && strcmp(u, units) == 0;
  ok = ok && attr_string(f, dset, "description", desc, sizeof desc) && strlen(desc) > 10;
  tap_ok(ok, "%s: %s@units = \"%s\" and a description", label, dset, u);
}

static void check_metrics(hid_t f, const char *label, const expect_t *e) {
  hsize_t dims[2];
  int64_t *step = read_all(f, "/metrics/step", H5T_NATIVE_INT64, dims);
  int ok = step && dims[0] == (hsize_t)e->steps;
  for (long i = 0; ok && i < e->steps; i++) ok = step[i] == i + 1;
  tap_ok(ok, "%s: /metrics/step is 1..%ld (%llu rows)", label, e->steps, (unsigned long long)dims[0]);
  free(step);
  static const char *const names[] = {"loss", "lr", "grad_norm", "step_time", "samples_per_sec"};
  static const char *const units[] = {"nats", "1", "1", "s", "samples/s"};
  for (int m = 0; m < 5; m++) {
    char path[64];
    snprintf(path, sizeof path, "/metrics/%s", names[m]);
    double *v = read_all(f, path, H5T_NATIVE_DOUBLE, dims);
    ok = v && dims[0] == (hsize_t)e->steps;
    for (long s = 1; ok && s <= e->steps; s++) {
      log_row_t want = make_row(s, 0, gen_of(e, s));
      const double w[] = {want.loss, want.lr, want.grad_norm, want.step_sec, want.samples_per_sec};
      ok = near(v[s - 1], w[m]);
    }
    tap_ok(ok, "%s: %s holds the %ld rows written", label, path, e->steps);
    free(v);
    check_units(f, label, path, units[m]);
    tap_ok(is_attached(f, path, "/metrics/step", 0), "%s: /metrics/step is the dimension scale of %s", label, path);
  }
  for (int t = 0; t < TRAFFIC_COUNT; t++) {
    char path[64];
    snprintf(path, sizeof path, "/metrics/bytes_%s", traffic_name((traffic_t)t));
    uint64_t *v = read_all(f, path, H5T_NATIVE_UINT64, dims);
    ok = v && dims[0] == (hsize_t)e->steps;
    for (long s = 1; ok && s <= e->steps; s++) ok = v[s - 1] == bytes_of(s, t, gen_of(e, s));
    tap_ok(ok && is_attached(f, path, "/metrics/step", 0), "%s: %s holds the bytes written, step-scaled", label, path);
    free(v);
    check_units(f, label, path, "bytes");
  }
}

static void check_ranks(hid_t f, const char *label, const expect_t *e) {
  hsize_t dims[2];
  int *rank = read_all(f, "/ranks/rank", H5T_NATIVE_INT, dims);
  int ok = rank && dims[0] == (hsize_t)e->cols;
  for (int r = 0; ok && r < e->cols; r++) ok = rank[r] == r;
  tap_ok(ok, "%s: /ranks/rank is 0..%d", label, e->cols - 1);
  free(rank);
  for (int p = 0; p < PHASE_BACKGROUND; p++) { /* the phases of every run (not the multiplexed ones) */
    char path[64];
    snprintf(path, sizeof path, "/ranks/phase_%s", log_phase_name((log_phase_t)p));
    double *v = read_all(f, path, H5T_NATIVE_DOUBLE, dims);
    ok = v && dims[0] == (hsize_t)e->steps && dims[1] == (hsize_t)e->cols;
    long bad_step = 0;
    // v is (steps, cols); cells of ranks that did not run that step are NaN
    for (long s = 1; ok && s <= e->steps; s++)
      for (int r = 0; ok && r < e->cols; r++) {
        double got = v[(s - 1) * e->cols + r];
        ok = r < segment_of(e, s)->ranks ? near(got, phase_of(s, r, p, gen_of(e, s))) : isnan(got);
        if (!ok) bad_step = s;
      }
    tap_ok(ok, "%s: %s is (%ld, %d) with every rank's own times (bad step %ld)", label, path, e->steps, e->cols,
           bad_step);
    free(v);
    check_units(f, label, path, "s");
    tap_ok(is_attached(f, path, "/metrics/step", 0) && is_attached(f, path, "/ranks/rank", 1),
           "%s: %s has dimension scales /metrics/step and /ranks/rank", label, path);
  }
}

static void check_eval_events(hid_t f, const char *label, const expect_t *e) {
  hsize_t dims[2], d2[2], d3[2];
  int64_t *step = read_all(f, "/eval/step", H5T_NATIVE_INT64, dims);
  double *loss = read_all(f, "/eval/loss", H5T_NATIVE_DOUBLE, d2);
  double *acc = read_all(f, "/eval/accuracy", H5T_NATIVE_DOUBLE, d3);
  int ok = step && loss && acc && dims[0] == (hsize_t)e->n_eval && d2[0] == dims[0] && d3[0] == dims[0];
  for (int i = 0; ok && i < e->n_eval; i++)
    ok = step[i] == e->eval_step[i] && near(loss[i], e->eval_loss[i]) && near(acc[i], e->eval_acc[i]);
  tap_ok(ok, "%s: /eval holds %d evaluations (%llu rows)", label, e->n_eval, (unsigned long long)dims[0]);
  free(step);
  free(loss);
  free(acc);
  tap_ok(is_attached(f, "/eval/loss", "/eval/step", 0) && is_attached(f, "/eval/accuracy", "/eval/step", 0),
         "%s: /eval/step is the dimension scale of /eval/loss and /eval/accuracy", label);
  check_units(f, label, "/eval/loss", "nats");
  check_units(f, label, "/eval/accuracy", "1");

  step = read_all(f, "/events/step", H5T_NATIVE_INT64, dims);
  double *when = read_all(f, "/events/time", H5T_NATIVE_DOUBLE, d2);
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, H5T_VARIABLE);
  H5Tset_cset(str, H5T_CSET_UTF8);
  char **text = read_all(f, "/events/text", str, d3);
  ok = step && when && text && dims[0] == (hsize_t)e->n_event && d2[0] == dims[0] && d3[0] == dims[0];
  double now = (double)time(NULL);
  for (int i = 0; ok && i < e->n_event; i++)
    ok = step[i] == e->event_step[i] && strcmp(text[i], e->event_text[i]) == 0 && fabs(when[i] - now) < 600;
  tap_ok(ok, "%s: /events holds %d events (%llu rows)%s%s", label, e->n_event, (unsigned long long)dims[0],
         ok || !text || !dims[0] ? "" : ", the last: ", ok || !text || !dims[0] ? "" : text[dims[0] - 1]);
  if (text) {
    hid_t space = H5Screate_simple(1, d3, NULL);
    H5Dvlen_reclaim(str, space, H5P_DEFAULT, text);
    H5Sclose(space);
  }
  H5Tclose(str);
  free(text);
  free(step);
  free(when);
  tap_ok(is_attached(f, "/events/text", "/events/step", 0) && is_attached(f, "/events/time", "/events/step", 0),
         "%s: /events/step is the dimension scale of /events/text and /events/time", label);
}

static void check_log(const char *path, const char *label, const expect_t *e) {
  hid_t f = open_ro(path);
  check_run_group(f, label, e->ranks);
  check_metrics(f, label, e);
  check_ranks(f, label, e);
  check_eval_events(f, label, e);
  H5Fclose(f);
}

/* ---- reading back with the command-line tools (rank 0) ---- */

/* Run `tool_args 'path'`; its exit status and (up to n-1 bytes of) its output and errors. */
static int run_tool(const char *tool_args, const char *path, char *out, size_t n) {
  char cmd[PATH_MAX + 256];
  out[0] = '\0';
  if (snprintf(cmd, sizeof cmd, "%s '%s' 2>&1", tool_args, path) >= (int)sizeof cmd) return -1;
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t used = fread(out, 1, n - 1, p);
  out[used] = '\0';
  while (fgetc(p) != EOF) {
  }
  return pclose(p);
}

static void check_tools(const char *path, const char *label, int ranks) {
  static char out[1 << 16];
  char want[64];
  snprintf(want, sizeof want, "Dataset {12/Inf, %d/Inf}", ranks);
  int rc = run_tool("h5ls -r", path, out, sizeof out);
  tap_ok(rc == 0 && strstr(out, "/metrics/loss") && strstr(out, "Dataset {12/Inf}") &&
             strstr(out, "/ranks/phase_forward") && strstr(out, want) && strstr(out, "/events/text"),
         "%s: h5ls -r lists /metrics/loss {12/Inf} and /ranks/phase_forward {12/Inf, %d/Inf}", label, ranks);
  rc = run_tool("h5dump -A -d /metrics/loss", path, out, sizeof out);
  tap_ok(rc == 0 && strstr(out, "DIMENSION_LIST") && strstr(out, "\"nats\"") &&
             strstr(out, "( 12 ) / ( H5S_UNLIMITED )"),
         "%s: h5dump shows /metrics/loss (12 rows) with units \"nats\" and a DIMENSION_LIST", label);
  rc = run_tool("h5dump -A -d /metrics/step", path, out, sizeof out);
  tap_ok(rc == 0 && strstr(out, "\"DIMENSION_SCALE\"") && strstr(out, "REFERENCE_LIST"),
         "%s: h5dump shows /metrics/step as a DIMENSION_SCALE with its REFERENCE_LIST", label);
  rc = run_tool("h5dump -d /metrics/step -w 0", path, out, sizeof out);
  tap_ok(rc == 0 && strstr(out, "(0): 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12\n"),
         "%s: h5dump prints /metrics/step 1..12", label);
  rc = run_tool("h5dump -d /run/deck -a /run/program", path, out, sizeof out);
  tap_ok(rc == 0 && strstr(out, "zoo = mlp") && strstr(out, "\"surge-train\""),
         "%s: h5dump prints the deck text and /run@program", label);
}

/* ---- modes ---- */

static int is_root(const fixture_t *fx) { return fx->world.rank == 0; }

static void mode_write(fixture_t *fx, const char *dir) {
  char path[PATH_MAX], label[32];
  int n = fx->world.size;
  snprintf(path, sizeof path, "%s/log-%d.h5", dir, n);
  snprintf(label, sizeof label, "%d rank%s", n, n == 1 ? "" : "s");

  run_log_t *log = new_log_with_history(fx, path, 6, 7, 12);
  run_log_eval(log, 12, 1.25, 0.75);
  run_log_close(log);
  expect_t e = {.steps = 12, .nseg = 1, .seg = {{1, n}}, .cols = n, .ranks = n,
                .n_eval = 2, .eval_step = {6, 12}, .eval_loss = {1.5, 1.25}, .eval_acc = {0.625, 0.75},
                .n_event = 1, .event_step = {7}, .event_text = {"checkpoint written"}};
  char first_start[64] = "";
  if (is_root(fx)) {
    check_log(path, label, &e);
    check_tools(path, label, n);
    hid_t f = open_ro(path);
    attr_string(f, "/run", "start_time", first_start, sizeof first_start);
    H5Fclose(f);
  }

  char resumed[64], rlabel[48];
  snprintf(resumed, sizeof resumed, "resumed at step 8 on %d rank%s", n, n == 1 ? "" : "s");
  snprintf(rlabel, sizeof rlabel, "%s, resumed", label);
  log = open_log(fx, path, 8);
  write_steps(log, fx->world.rank, 9, 10, 1);
  run_log_close(log);
  expect_t r = {.steps = 10, .nseg = 2, .seg = {{1, n}, {9, n}}, .cols = n, .ranks = n,
                .n_eval = 1, .eval_step = {6}, .eval_loss = {1.5}, .eval_acc = {0.625},
                .n_event = 2, .event_step = {7, 8}, .event_text = {"checkpoint written", resumed}};
  if (is_root(fx)) {
    check_log(path, rlabel, &r);
    char start[64] = "";
    hid_t f = open_ro(path);
    attr_string(f, "/run", "start_time", start, sizeof start);
    H5Fclose(f);
    tap_ok(first_start[0] && strcmp(start, first_start) == 0, "%s: /run@start_time kept from the first start (%s)",
           rlabel, start);
  }
}

/* The log `write` left on `from` ranks (steps 1..10) continued on this many ranks from step 10:
 * /ranks widens when there are more ranks now, and the missing ranks' cells read NaN. */
static void mode_rerank(fixture_t *fx, const char *path, int from) {
  int n = fx->world.size;
  char resumed_then[64], resumed_now[64], label[48];
  snprintf(resumed_then, sizeof resumed_then, "resumed at step 8 on %d rank%s", from, from == 1 ? "" : "s");
  snprintf(resumed_now, sizeof resumed_now, "resumed at step 10 on %d rank%s", n, n == 1 ? "" : "s");
  snprintf(label, sizeof label, "%d rank%s, then %d", from, from == 1 ? "" : "s", n);
  run_log_t *log = open_log(fx, path, 10);
  write_steps(log, fx->world.rank, 11, 11, 2);
  run_log_close(log);
  expect_t e = {.steps = 11, .nseg = 3, .seg = {{1, from}, {9, from}, {11, n}}, .cols = n > from ? n : from,
                .ranks = n, .n_eval = 1, .eval_step = {6}, .eval_loss = {1.5}, .eval_acc = {0.625},
                .n_event = 3, .event_step = {7, 8, 10},
                .event_text = {"checkpoint written", resumed_then, resumed_now}};
  if (is_root(fx)) check_log(path, label, &e);
}

/* A log left by until-killed, resumed at `step` (a flushed step): the rows after it go, two new
 * rows follow. */
static void mode_resume(fixture_t *fx, const char *path, long step) {
  run_log_t *log = open_log(fx, path, step);
  write_steps(log, fx->world.rank, step + 1, step + 2, 1);
  run_log_close(log);
  char resumed[64];
  int n = fx->world.size;
  snprintf(resumed, sizeof resumed, "resumed at step %ld on %d rank%s", step, n, n == 1 ? "" : "s");
  expect_t e = {.steps = step + 2, .nseg = 2, .seg = {{1, n}, {step + 1, n}}, .cols = n, .ranks = n,
                .n_eval = 1, .eval_step = {10}, .eval_loss = {1.5}, .eval_acc = {0.625},
                .n_event = 2, .event_step = {15, step}, .event_text = {"checkpoint written", resumed}};
  if (is_root(fx)) check_log(path, "after a kill, resumed", &e);
}

static void mode_create(fixture_t *fx, const char *path) { run_log_close(open_log(fx, path, -1)); }

static void write_file_atomically(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void write_file_atomically(const char *path, const char *fmt, ...) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) surge_runtime_error("test: cannot write %s: %s", tmp, strerror(errno));
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  if (fclose(f) != 0 || rename(tmp, path) != 0) surge_runtime_error("test: cannot write %s", path);
}

static void mode_until_killed(fixture_t *fx, const char *path, const char *dir) {
  char stop[PATH_MAX], idle[PATH_MAX], writing[PATH_MAX];
  snprintf(stop, sizeof stop, "%s/stop", dir);
  snprintf(idle, sizeof idle, "%s/idle", dir);
  snprintf(writing, sizeof writing, "%s/writing", dir);
  run_log_t *log = new_log_with_history(fx, path, 10, 15, 20);
  write_file_atomically(writing, "%ld\n", (long)getpid());
  long s = 20;
  const struct timespec pause_20ms = {0, 20 * 1000 * 1000};
  while (access(stop, F_OK) != 0 && s < 3000) {
    write_steps(log, fx->world.rank, s + 1, s + 1, 0);
    s++;
    nanosleep(&pause_20ms, NULL);
  }
  if (s % FLUSH_EVERY >= FLUSH_EVERY - 3) { // three unflushed steps must not reach a flush
    write_steps(log, fx->world.rank, s + 1, s + FLUSH_EVERY - s % FLUSH_EVERY, 0);
    s += FLUSH_EVERY - s % FLUSH_EVERY;
  }
  write_steps(log, fx->world.rank, s + 1, s + 3, 0);
  s += 3;
  write_file_atomically(idle, "%ld %ld\n", (long)getpid(), s);
  sleep(60); // the test kills us long before
  surge_runtime_error("test: until-killed was not killed");
}

static void mode_make_foreign(const char *dir) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/norun.h5", dir);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = 3;
  hid_t space = H5Screate_simple(1, &n, NULL);
  hid_t d = H5Dcreate2(f, "data", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(d);
  H5Sclose(space);
  if (H5Fclose(f) < 0) surge_runtime_error("test: cannot write %s", path);
  // the newest file format: opening it for writing would mark its superblock, which the test sees
  snprintf(path, sizeof path, "%s/other.h5", dir);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  hid_t g = H5Gcreate2(f, "run", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5LTset_attribute_string(f, "/run", "program", "other");
  H5Gclose(g);
  if (H5Fclose(f) < 0) surge_runtime_error("test: cannot write %s", path);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 3) {
    fprintf(stderr, "usage: test_log write DIR | rerank FILE FROM | resume FILE STEP | create FILE\n"
                    "       | until-killed FILE DIR | make-foreign DIR\n");
    MPI_Finalize();
    return 2;
  }
  fixture_t fx;
  fixture_init(&fx);
  const char *mode = argv[1];
  int with_tap = 1;
  if (strcmp(mode, "write") == 0)
    mode_write(&fx, argv[2]);
  else if (strcmp(mode, "rerank") == 0 && argc > 3)
    mode_rerank(&fx, argv[2], atoi(argv[3]));
  else if (strcmp(mode, "resume") == 0 && argc > 3)
    mode_resume(&fx, argv[2], atol(argv[3]));
  else if (strcmp(mode, "until-killed") == 0 && argc > 3)
    mode_until_killed(&fx, argv[2], argv[3]);
  else {
    with_tap = 0;
    if (strcmp(mode, "create") == 0)
      mode_create(&fx, argv[2]);
    else if (strcmp(mode, "make-foreign") == 0 && is_root(&fx))
      mode_make_foreign(argv[2]);
  }
  int rc = with_tap && is_root(&fx) ? tap_done() : 0;
  fixture_free(&fx);
  MPI_Finalize();
  return rc;
}
