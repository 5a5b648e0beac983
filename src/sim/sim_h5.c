/* surge-sim's HDF5 output (layout in doc/sim.md): /sim attributes, /sim/burst (one row per rank
 * count) with a group per rank count for its frontier, and /sim/pipeline for a 3D run. Every
 * dataset carries a units attribute. The file is written under its name + ".tmp" and renamed into
 * place once closed; a failed HDF5 call removes it and ends the program at once, without closing
 * the file (HDF5 1.10 crashes at exit after a failed close: a full disk ended surge-sim with 139 and
 * a damaged file under the final name). */
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/outfile.h"
#include "io/h5util.h"
#include "sim/sim.h"

typedef struct h5w {
  const char *path, *tmp;
} h5w_t;

static void ok(const h5w_t *w, int good, const char *what) {
  if (!good) {
    char msg[256];
    h5util_error_text(msg, sizeof msg, "unknown HDF5 error");
    remove(w->tmp);
    surge_abandon(SURGE_EXIT_RUNTIME, "surge-sim: writing %s: %s: %s (nothing was written)", w->path, what, msg);
  }
}

static void put(const h5w_t *w, hid_t loc, const char *name, hid_t type, size_t n, const void *data, const char *units) {
  hsize_t dims[1] = {(hsize_t)n};
  hid_t space = H5Screate_simple(1, dims, NULL);
  hid_t ds = space >= 0 ? H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  ok(w, ds >= 0 && (n == 0 || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0), name);
  ok(w, h5util_attr_write_string(ds, "units", units, H5T_CSET_ASCII) == 0, name);
  H5Dclose(ds);
  H5Sclose(space);
}

static void put_d(const h5w_t *w, hid_t loc, const char *name, size_t n, const double *v, const char *units) {
  put(w, loc, name, H5T_NATIVE_DOUBLE, n, v, units);
}

static void put_i(const h5w_t *w, hid_t loc, const char *name, size_t n, const int *v, const char *units) {
  put(w, loc, name, H5T_NATIVE_INT, n, v, units);
}

static void attr_d(const h5w_t *w, hid_t loc, const char *name, double v) {
  ok(w, h5util_attr_write_f64(loc, name, v) == 0, name);
}

static void attr_s(const h5w_t *w, hid_t loc, const char *name, const char *v) {
  ok(w, h5util_attr_write_string(loc, name, v ? v : "", H5T_CSET_UTF8) == 0, name);
}

static hid_t group(const h5w_t *w, hid_t loc, const char *name) {
  hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ok(w, g >= 0, name);
  return g;
}

/* One column of the per-rank-count table: field f of the points chosen by pick. */
enum { F_ITER, F_RANK, F_IDLE, F_FG, F_BG, F_BG_IDEAL, F_TOTAL, F_RANKS_USED, F_INDEX };
static double field(const sim_point_t *pt, int f) {
  switch (f) {
  case F_ITER: return pt->iter_us;
  case F_RANK: return pt->rank_us;
  case F_IDLE: return pt->idle_rank_us;
  case F_FG: return pt->fg_sps;
  case F_BG: return pt->bg_sps;
  case F_BG_IDEAL: return pt->bg_ideal_sps;
  case F_TOTAL: return pt->total_sps;
  case F_RANKS_USED: return pt->ranks_used;
  default: return pt->index;
  }
}

static const struct {
  const char *suffix, *units;
  int f;
} columns[] = {{"iter_us", "us", F_ITER},         {"rank_us", "rank-us", F_RANK},
               {"idle_rank_us", "rank-us", F_IDLE}, {"fg_samples_per_s", "samples/s", F_FG},
               {"bg_samples_per_s", "samples/s", F_BG}, {"bg_ideal_samples_per_s", "samples/s", F_BG_IDEAL},
               {"total_samples_per_s", "samples/s", F_TOTAL}, {"ranks_used", "ranks", F_RANKS_USED}};

static void put_points(const h5w_t *w, hid_t loc, const char *prefix, const sim_point_t *const *pts, size_t n) {
  double *v = xmalloc((n ? n : 1) * sizeof *v);
  char name[96];
  for (size_t c = 0; c < sizeof columns / sizeof columns[0]; c++) {
    for (size_t x = 0; x < n; x++) v[x] = field(pts[x], columns[c].f);
    snprintf(name, sizeof name, "%s%s", prefix, columns[c].suffix);
    put_d(w, loc, name, n, v, columns[c].units);
  }
  free(v);
}

static void write_burst(const h5w_t *w, hid_t top, const sim_result_t *res, int nres) {
  hid_t b = group(w, top, "burst");
  size_t n = (size_t)nres;
  int *iv = xmalloc((n ? n : 1) * sizeof *iv);
  double *dv = xmalloc((n ? n : 1) * sizeof *dv);
  const sim_point_t **pts = xmalloc((n ? n : 1) * sizeof *pts);
  for (size_t x = 0; x < n; x++) iv[x] = res[x].ranks;
  put_i(w, b, "ranks", n, iv, "ranks");
  for (size_t x = 0; x < n; x++) iv[x] = res[x].batch;
  put_i(w, b, "global_batch", n, iv, "samples");
  for (size_t x = 0; x < n; x++) iv[x] = res[x].nfront;
  put_i(w, b, "frontier_points", n, iv, "1");
  for (size_t x = 0; x < n; x++) dv[x] = res[x].seconds;
  put_d(w, b, "planner_s", n, dv, "s");
  for (size_t x = 0; x < n; x++) pts[x] = &res[x].dp;
  put_points(w, b, "dp_", pts, n);
  for (size_t x = 0; x < n; x++) pts[x] = &res[x].fastest;
  put_points(w, b, "fastest_", pts, n);
  for (size_t x = 0; x < n; x++) pts[x] = &res[x].best;
  put_points(w, b, "best_", pts, n);
  for (size_t x = 0; x < n; x++) iv[x] = res[x].best.index;
  put_i(w, b, "best_index", n, iv, "1");
  if (n == 1 && res[0].has_given) {
    pts[0] = &res[0].given;
    put_points(w, b, "plan_file_", pts, 1);
  }
  for (size_t x = 0; x < n; x++) dv[x] = res[x].fastest.total_sps / res[x].dp.total_sps;
  put_d(w, b, "fastest_over_dp", n, dv, "1");
  for (size_t x = 0; x < n; x++) dv[x] = res[x].best.total_sps / res[x].dp.total_sps;
  put_d(w, b, "best_over_dp", n, dv, "1");
  for (size_t x = 0; x < n; x++) {
    const sim_result_t *r = &res[x];
    char name[32];
    snprintf(name, sizeof name, "G%d", r->ranks);
    if (H5Lexists(b, name, H5P_DEFAULT) > 0) snprintf(name, sizeof name, "G%d_B%d", r->ranks, r->batch);
    hid_t gg = group(w, b, name);
    double *fi = xmalloc((size_t)(r->nfront ? r->nfront : 1) * sizeof *fi), *fr = xmalloc((size_t)(r->nfront ? r->nfront : 1) * sizeof *fr);
    for (int k = 0; k < r->nfront; k++) fi[k] = r->front[k].iter_us, fr[k] = r->front[k].rank_us;
    put_d(w, gg, "frontier_iter_us", (size_t)r->nfront, fi, "us");
    put_d(w, gg, "frontier_rank_us", (size_t)r->nfront, fr, "rank-us");
    free(fi);
    free(fr);
    const sim_point_t **ep = xmalloc((size_t)(r->neval ? r->neval : 1) * sizeof *ep);
    int *ei = xmalloc((size_t)(r->neval ? r->neval : 1) * sizeof *ei);
    for (int k = 0; k < r->neval; k++) ep[k] = &r->eval[k], ei[k] = r->eval[k].index;
    put_i(w, gg, "eval_index", (size_t)r->neval, ei, "1");
    put_points(w, gg, "eval_", ep, (size_t)r->neval);
    ok(w, h5util_attr_write_i64(gg, "ranks", r->ranks) == 0 && h5util_attr_write_i64(gg, "global_batch", r->batch) == 0, name);
    free(ei);
    free(ep);
    H5Gclose(gg);
  }
  free(pts);
  free(dv);
  free(iv);
  H5Gclose(b);
}

static void put_ops(const h5w_t *w, hid_t loc, const char *prefix, const sim3d_result_t *r) {
  size_t n = (size_t)r->nops;
  int *iv = xmalloc(n * sizeof *iv);
  double *dv = xmalloc(n * sizeof *dv);
  char name[64];
  struct { const char *s; int which; } ints[] = {{"stage", 0}, {"micro_batch", 1}, {"kind", 2}, {"compressed", 3}};
  for (int c = 0; c < 4; c++) {
    for (size_t x = 0; x < n; x++) {
      const sim3d_op_t *op = &r->ops[x];
      iv[x] = c == 0 ? op->stage : c == 1 ? op->mb : c == 2 ? op->kind : op->compressed;
    }
    snprintf(name, sizeof name, "%sop_%s", prefix, ints[c].s);
    put_i(w, loc, name, n, iv, c == 2 ? "0 forward, 1 backward" : "1");
  }
  struct { const char *s; int which; } dbl[] = {{"start_us", 0}, {"end_us", 1}, {"send_end_us", 2}};
  for (int c = 0; c < 3; c++) {
    for (size_t x = 0; x < n; x++) dv[x] = c == 0 ? r->ops[x].start_us : c == 1 ? r->ops[x].end_us : r->ops[x].send_end_us;
    snprintf(name, sizeof name, "%sop_%s", prefix, dbl[c].s);
    put_d(w, loc, name, n, dv, "us");
  }
  free(dv);
  free(iv);
}

static void write_pipeline(const h5w_t *w, hid_t top, const sim3d_opts_t *o, const sim3d_result_t *plain,
                           const sim3d_result_t *comp) {
  hid_t g = group(w, top, "pipeline");
  ok(w, h5util_attr_write_i64(g, "tp", o->tp) == 0 && h5util_attr_write_i64(g, "pp", o->pp) == 0 &&
            h5util_attr_write_i64(g, "dp", o->dp) == 0 && h5util_attr_write_i64(g, "micro_batches", o->micro_batches) == 0 &&
            h5util_attr_write_i64(g, "micro_batch", o->micro_batch) == 0 &&
            h5util_attr_write_i64(g, "cb_epilogue_only", o->cb_epilogue_only) == 0 &&
            h5util_attr_write_i64(g, "dp_stages", o->dp_stages) == 0,
     "/sim/pipeline attributes");
  attr_d(w, g, "cb_ratio", o->cb_ratio);
  attr_d(w, g, "dp_ratio", o->dp_ratio);
  attr_d(w, g, "fwd_fraction", o->fwd_fraction);
  ok(w, h5util_attr_write_string(g, "recompute", recompute_name(o->recompute), H5T_CSET_ASCII) == 0,
     "/sim/pipeline attribute recompute");
  const sim_link_t *links[3] = {&o->tp_link, &o->pp_link, &o->dp_link};
  const char *ln[3] = {"tp", "pp", "dp"};
  for (int k = 0; k < 3; k++) {
    char name[32];
    snprintf(name, sizeof name, "%s_alpha_us", ln[k]);
    attr_d(w, g, name, links[k]->alpha_us);
    snprintf(name, sizeof name, "%s_bytes_per_us", ln[k]);
    attr_d(w, g, name, links[k]->bytes_per_us);
  }
  const sim3d_result_t *rs[2] = {plain, comp};
  const char *pre[2] = {"plain_", "compressed_"};
  for (int k = 0; k < 2; k++) {
    const sim3d_result_t *r = rs[k];
    char name[64];
    size_t n = (size_t)r->nstage;
    snprintf(name, sizeof name, "%sstage_nodes", pre[k]);
    put_i(w, g, name, n, r->stage_nodes, "nodes");
    const struct { const char *s; const double *v; } per_stage[] = {
        {"fwd_us", r->fwd_us}, {"bwd_us", r->bwd_us}, {"rerun_us", r->rerun_us}, {"tp_us", r->tp_us},
        {"dp_us", r->dp_us},
        {"opt_us", r->opt_us}, {"stage_end_us", r->stage_end_us}};
    for (size_t q = 0; q < sizeof per_stage / sizeof per_stage[0]; q++) {
      snprintf(name, sizeof name, "%s%s", pre[k], per_stage[q].s);
      put_d(w, g, name, n, per_stage[q].v, "us");
    }
    double sc[6] = {r->iter_us, r->pipeline_us, r->bubble, r->bytes_pp, r->bytes_dp, r->pp_bwd_compressed_us};
    const char *sn[6] = {"iter_us", "pipeline_us", "bubble", "bytes_pp", "bytes_dp", "pp_bwd_transfer_us"};
    for (int q = 0; q < 6; q++) {
      snprintf(name, sizeof name, "%s%s", pre[k], sn[q]);
      attr_d(w, g, name, sc[q]);
    }
    put_ops(w, g, pre[k], r);
  }
  H5Gclose(g);
}

void sim_h5_write(const char *path, const sim_file_info_t *info, const sim_result_t *res, int nres,
                  const sim3d_opts_t *o3, const sim3d_result_t *plain, const sim3d_result_t *comp) {
  h5util_quiet_t q = h5util_quiet_begin();
  char *tmp = outfile_temp(path); /* a killed run's leftover there removed */
  h5w_t w = {path, tmp};
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) {
    char msg[256];
    h5util_error_text(msg, sizeof msg, "unknown HDF5 error");
    remove(tmp);
    surge_runtime_error("surge-sim: cannot create %s: %s", tmp, msg);
  }
  hid_t top = group(&w, f, "sim");
  attr_s(&w, top, "format", "surge-sim");
  ok(&w, h5util_attr_write_i64(top, "version", 1) == 0, "/sim version");
  attr_s(&w, top, "model", info->model);
  attr_s(&w, top, "source", info->source);
  attr_s(&w, top, "command", info->command);
  attr_d(&w, top, "p2p_alpha_us", info->net->p2p_alpha_us);
  attr_d(&w, top, "p2p_bytes_per_us", info->net->p2p_bytes_per_us);
  attr_d(&w, top, "ar_alpha_us", info->net->ar_alpha_us);
  attr_d(&w, top, "ar_bytes_per_us", info->net->ar_bytes_per_us);
  if (nres) {
    attr_s(&w, top, "background_model", info->bg_model);
    ok(&w, h5util_attr_write_i64(top, "background_batch", info->bg_batch) == 0, "/sim background_batch");
    attr_d(&w, top, "fg_slowdown", info->fg_slowdown);
    attr_d(&w, top, "frontier_tolerance", info->tol);
    write_burst(&w, top, res, nres);
  }
  if (o3) write_pipeline(&w, top, o3, plain, comp);
  H5Gclose(top);
  ok(&w, H5Fclose(f) >= 0, "closing");
  if (outfile_publish(tmp, path) != 0)
    surge_runtime_error("surge-sim: cannot rename %s to %s: %s (nothing was written)", tmp, path, strerror(errno));
  free(tmp);
  h5util_quiet_end(q);
}
