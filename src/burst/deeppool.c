/* The DeepPool profile importer (graph_file.h). Bytes come from each row's layer: output bytes
 * per sample (fp32, 4 bytes an element, as the original planner assumes) from the layer's
 * parameters and input dimensions, parameter bytes from its weights:
 *   conv2d            C_in C_out kh kw + C_out (a bias, or a following norm's scale)
 *   linear            in out + out
 *   ResnetBottleneck  its three convolutions (width = planes base_width / 64 groups), its norms
 *                     (2 floats a channel) and its downsample convolution and norm
 *   pools, ReLU, flatten, concat: none. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/graph_file.h"
#include "burst/textio.h"
#include "core/error.h"
#include "core/exact.h"

#define DP_MISSING_US 1.0 /* the original planner's charge for a layer its profile lacks */
#define DP_PARAMS_MAX 1024

typedef struct dp_row {
  char type[BGRAPH_KIND_MAX];
  char params[DP_PARAMS_MAX]; /* the JSON text between the braces */
  int batch;
  int dims[3], ndims;
  double us;   /* forward + backward */
  int line;
} dp_row_t;

typedef struct dp_layer {
  double in_bytes, out_bytes, param_bytes;
} dp_layer_t;

/* ---- the JSON parameters: only flat keys with a number, [a,b] or [[a,b,c],d] ---- */

/* The numbers of key (up to max), or 0 when the key is absent. */
static int json_numbers(const char *json, const char *key, long *out, int max) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (!p) return 0;
  p += strlen(pat);
  int n = 0, depth = 0;
  while (*p && n < max) {
    if (*p == '[') depth++;
    else if (*p == ']') {
      if (--depth <= 0) break;
    } else if (*p == ',' && depth == 0) break;
    else if ((*p >= '0' && *p <= '9') || *p == '-') {
      char *end;
      out[n++] = strtol(p, &end, 10);
      p = end;
      if (depth == 0) break;
      continue;
    } else if (depth == 0 && (*p == 't' || *p == 'f')) { /* true / false */
      out[n++] = *p == 't';
      break;
    }
    p++;
  }
  return n;
}

static long json_int(const tin_t *t, const dp_row_t *r, const char *key, long dflt) {
  long v[4];
  int n = json_numbers(r->params, key, v, 4);
  if (n == 0) {
    if (dflt >= 0) return dflt;
    tin_error(t, "%s row without '%s' in its parameters {%s}", r->type, key, r->params);
  }
  if (v[0] < 0 || v[0] > 1L << 24) tin_error(t, "%s row: '%s' = %ld out of range", r->type, key, v[0]);
  return v[0];
}

/* A size given as n or [h, w]. */
static void json_pair(const tin_t *t, const dp_row_t *r, const char *key, long dflt, long *h, long *w) {
  long v[4];
  int n = json_numbers(r->params, key, v, 2);
  if (n == 0) {
    if (dflt < 0) tin_error(t, "%s row without '%s' in its parameters {%s}", r->type, key, r->params);
    v[0] = v[1] = dflt;
  } else if (n == 1) {
    v[1] = v[0];
  }
  if (v[0] < 0 || v[1] < 0 || v[0] > 1L << 20 || v[1] > 1L << 20) tin_error(t, "%s row: '%s' out of range", r->type, key);
  *h = v[0];
  *w = v[1];
}

/* ---- one row ---- */

static void parse_row(tin_t *t, dp_row_t *r) {
  const char *key = t->word[0];
  const char *brace = strchr(key, '{'), *close = brace ? strchr(brace, '}') : NULL;
  if (!brace || !close || brace == key || (size_t)(brace - key) >= sizeof r->type ||
      (size_t)(close - brace - 1) >= sizeof r->params)
    tin_error(t, "not a DeepPool profile row: '%s' (expected type{params}[batch][dims] total_ms fwd_us bwd_us)", key);
  memcpy(r->type, key, (size_t)(brace - key));
  r->type[brace - key] = '\0';
  memcpy(r->params, brace + 1, (size_t)(close - brace - 1));
  r->params[close - brace - 1] = '\0';
  const char *p = close + 1;
  char *end;
  if (*p != '[') tin_error(t, "row '%s': no [batch] after the parameters", key);
  long b = strtol(p + 1, &end, 10);
  if (end == p + 1 || *end != ']' || b < 1 || b > 1L << 24) tin_error(t, "row '%s': bad [batch]", key);
  r->batch = (int)b;
  p = end + 1;
  r->ndims = 0;
  if (*p == '[') p++;
  while (*p && *p != ']') {
    long d = strtol(p, &end, 10);
    if (end == p || d < 1 || d > 1L << 24 || r->ndims == 3) tin_error(t, "row '%s': bad input dimensions", key);
    r->dims[r->ndims++] = (int)d;
    p = *end == ',' ? end + 1 : end;
  }
  if (!r->ndims) tin_error(t, "row '%s': no input dimensions", key);
  double fwd = tin_double(t, "forward time (us)", t->word[2], 0, BURST_MAX_US);
  double bwd = tin_double(t, "backward time (us)", t->word[3], 0, BURST_MAX_US);
  r->us = fwd + bwd;
  r->line = t->line;
}

static double dims_bytes(const dp_row_t *r) {
  double e = 4;
  for (int k = 0; k < r->ndims; k++) e *= r->dims[k];
  return e;
}

/* The graph reader's bounds (graph_file.c), so that what is imported is a graph that surge-plan
 * --write-graph writes and surge-plan --graph reads back. */
static void check_layer(const tin_t *t, const dp_row_t *r, const dp_layer_t *L) {
  const double v[3] = {L->in_bytes, L->out_bytes, L->param_bytes};
  const char *name[3] = {"input bytes per sample", "output bytes per sample", "parameter bytes"};
  for (int k = 0; k < 3; k++)
    if (!(v[k] >= 0 && v[k] <= BGRAPH_MAX_BYTES)) {
      char x[EXACT_LEN], hi[EXACT_LEN];
      tin_error(t, "%s{%s}: its %s, %s, are not in [0, %s]", r->type, r->params, name[k], exact_text(v[k], x),
                exact_text(BGRAPH_MAX_BYTES, hi));
    }
}

/* Output and parameter bytes of a row's layer. */
static dp_layer_t layer_of(const tin_t *t, const dp_row_t *r) {
  dp_layer_t L = {dims_bytes(r), 0, 0};
  long C = r->dims[0], H = r->ndims == 3 ? r->dims[1] : 1, W = r->ndims == 3 ? r->dims[2] : 1;
  const char *ty = r->type;
  if (strcmp(ty, "conv2d") == 0 || strcmp(ty, "maxPool2d") == 0 || strcmp(ty, "avgPool2d") == 0) {
    if (r->ndims != 3) tin_error(t, "%s row with %d input dimensions (expected C,H,W)", ty, r->ndims);
    long kh, kw, ph, pw, sh, sw;
    json_pair(t, r, "kernel_size", -1, &kh, &kw);
    json_pair(t, r, "padding", 0, &ph, &pw);
    json_pair(t, r, "stride", strcmp(ty, "conv2d") == 0 ? 1 : kh, &sh, &sw);
    if (kh < 1 || kw < 1) tin_error(t, "%s row: kernel_size %ldx%ld (each at least 1)", ty, kh, kw);
    if (sh < 1 || sw < 1 || H + 2 * ph < kh || W + 2 * pw < kw) tin_error(t, "%s row: the kernel does not fit the input", ty);
    long OH = (H + 2 * ph - kh) / sh + 1, OW = (W + 2 * pw - kw) / sw + 1, OC = C;
    if (strcmp(ty, "conv2d") == 0) {
      OC = json_int(t, r, "out_channels", -1);
      long in = json_int(t, r, "in_channels", C);
      if (in != C) tin_error(t, "conv2d row: in_channels %ld but input dimensions [%ld,...]", in, C);
      L.param_bytes = 4.0 * ((double)in * OC * kh * kw + OC);
    }
    L.out_bytes = 4.0 * OC * OH * OW;
  } else if (strcmp(ty, "ReLU2d") == 0 || strcmp(ty, "ReLU1d") == 0 || strcmp(ty, "ReLU") == 0) {
    L.out_bytes = L.in_bytes;
  } else if (strcmp(ty, "adAvgPool2d") == 0) {
    L.out_bytes = 4.0 * C * json_int(t, r, "output_height", 1) * json_int(t, r, "output_width", 1);
  } else if (strcmp(ty, "flatten") == 0) {
    L.out_bytes = L.in_bytes;
  } else if (strcmp(ty, "linear") == 0) {
    long in = json_int(t, r, "in_features", -1), out = json_int(t, r, "out_features", -1);
    L.out_bytes = 4.0 * out;
    L.param_bytes = 4.0 * ((double)in * out + (json_int(t, r, "bias", 1) ? out : 0));
  } else if (strcmp(ty, "ResnetBottleneck") == 0) {
    long inplanes = json_int(t, r, "inplanes", -1), planes = json_int(t, r, "planes", -1);
    long base = json_int(t, r, "base_width", 64), groups = json_int(t, r, "groups", 1);
    long stride = json_int(t, r, "stride", 1);
    if (groups < 1 || stride < 1) tin_error(t, "ResnetBottleneck row: groups and stride must be >= 1");
    double width = (double)planes * (double)base / 64.0 * (double)groups, out = 4.0 * planes;
    double params = inplanes * width + width * width * 9 / groups + width * out + 2 * (width + width + out);
    long ds[4];
    if (json_numbers(r->params, "downsampleParams", ds, 4) == 4) {
      for (int k = 0; k < 4; k++)
        if (ds[k] < 0 || ds[k] > 1L << 24)
          tin_error(t, "ResnetBottleneck row: 'downsampleParams' holds %ld, out of range 0..%ld", ds[k], 1L << 24);
      params += (double)ds[0] * ds[1] + 2.0 * ds[3];
    }
    L.out_bytes = 4.0 * out * ((H - 1) / stride + 1) * ((W - 1) / stride + 1);
    L.param_bytes = 4.0 * params;
  } else if (strcmp(ty, "concat") == 0 || strcmp(ty, "add") == 0) {
    L.out_bytes = L.in_bytes;
  } else {
    tin_error(t, "unknown layer type '%s' (the importer knows conv2d, maxPool2d, avgPool2d, adAvgPool2d, ReLU2d, "
                 "ReLU1d, flatten, linear, ResnetBottleneck, concat)",
              ty);
  }
  check_layer(t, r, &L);
  return L;
}

/* ---- the file: groups of rows, one per per-GPU batch, all with the same layers ---- */

typedef struct dp_file {
  const char *path;
  int nrow;       /* rows per group */
  int ngroup;
  dp_row_t *row;  /* [ngroup * nrow] */
  dp_layer_t *layer; /* [nrow] */
} dp_file_t;

static int same_layer(const dp_row_t *a, const dp_row_t *b) {
  if (strcmp(a->type, b->type) || strcmp(a->params, b->params) || a->ndims != b->ndims) return 0;
  for (int k = 0; k < a->ndims; k++)
    if (a->dims[k] != b->dims[k]) return 0;
  return 1;
}

static void read_prof(const char *path, dp_file_t *F) {
  tin_t t;
  tin_open(&t, path);
  int cap = 16, n = 0, group_start = 0; /* rows of 1 KB each: grown as they come */
  F->row = xmalloc((size_t)cap * sizeof *F->row);
  F->path = path;
  F->nrow = -1;
  F->ngroup = 0;
  int open_group = 0;
  for (;;) {
    int more = tin_next(&t);
    int sum = more && (strncmp(t.word[0], "SUM", 3) == 0 || strncmp(t.word[0], "sum", 3) == 0);
    if (more && !sum) {
      if (t.nword != 4 && t.nword != 5) tin_error(&t, "expected 'type{params}[batch][dims] total_ms fwd_us bwd_us'");
      if (n == cap) F->row = xrealloc(F->row, (size_t)(cap *= 2) * sizeof *F->row);
      parse_row(&t, &F->row[n]);
      if (n > group_start && F->row[n].batch != F->row[group_start].batch)
        tin_error(&t, "row for batch %d inside the group of batch %d (lines %d..): a 'SUM' line ends a group",
                  F->row[n].batch, F->row[group_start].batch, F->row[group_start].line);
      n++;
      open_group = 1;
      continue;
    }
    /* a group ends at a SUM line or at the end of the file */
    if (open_group) {
      int size = n - group_start;
      if (F->nrow < 0) F->nrow = size;
      if (size != F->nrow)
        tin_error_at(path, F->row[group_start].line, "the group of batch %d has %d rows, the first group %d",
                     F->row[group_start].batch, size, F->nrow);
      for (int i = 0; F->ngroup && i < size; i++)
        if (!same_layer(&F->row[group_start + i], &F->row[i]))
          tin_error_at(path, F->row[group_start + i].line, "row %d of batch %d is another layer (%s{%s}) than row %d "
                                                           "of batch %d (line %d, %s{%s})",
                       i + 1, F->row[group_start].batch, F->row[group_start + i].type, F->row[group_start + i].params,
                       i + 1, F->row[0].batch, F->row[i].line, F->row[i].type, F->row[i].params);
      for (int gidx = 0; gidx < F->ngroup; gidx++)
        if (F->row[gidx * F->nrow].batch == F->row[group_start].batch)
          tin_error_at(path, F->row[group_start].line, "batch %d has a second group", F->row[group_start].batch);
      F->ngroup++;
      group_start = n;
      open_group = 0;
    }
    if (!more) break;
  }
  if (F->ngroup == 0) surge_input_error("%s: no profile rows (not a DeepPool profile?)", path);
  F->layer = xmalloc((size_t)F->nrow * sizeof *F->layer);
  for (int i = 0; i < F->nrow; i++) {
    t.line = F->row[i].line;
    F->layer[i] = layer_of(&t, &F->row[i]);
  }
  tin_close(&t);
}

static void set_times(burst_profile_t *p, int node, const dp_file_t *F, int row, double extra_row) {
  for (int gidx = 0; gidx < F->ngroup; gidx++) {
    const dp_row_t *r = &F->row[gidx * F->nrow + row];
    double us = r->us + (extra_row >= 0 ? F->row[gidx * F->nrow + (int)extra_row].us : 0);
    if (us > BURST_MAX_US) {
      char x[EXACT_LEN], hi[EXACT_LEN];
      tin_error_at(F->path, r->line, "%s{%s}: forward + backward%s %s us, more than the %s a node may take", r->type,
                   r->params, extra_row >= 0 ? " (with its in-place ReLU's)" : "", exact_text(us, x),
                   exact_text(BURST_MAX_US, hi));
    }
    burst_profile_set(p, node, r->batch, us);
  }
}

static void note_missing(deeppool_report_t *rep, const char *name) {
  size_t used = strlen(rep->missing_names);
  if (used + strlen(name) + 8 < sizeof rep->missing_names)
    snprintf(rep->missing_names + used, sizeof rep->missing_names - used, "%s%s", used ? " " : "", name);
  else if (!strstr(rep->missing_names, "..."))
    snprintf(rep->missing_names + used, sizeof rep->missing_names - used, " ...");
  rep->missing++;
}

/* Chain in row order; an in-place ReLU joins the layer before it (its row holds that layer's
 * backward). */
static void import_chain(const dp_file_t *F, bgraph_t *g, burst_profile_t *p, deeppool_report_t *rep) {
  int *node_row = xmalloc((size_t)F->nrow * sizeof *node_row), *fused_row = xmalloc((size_t)F->nrow * sizeof *fused_row);
  int nn = 0;
  for (int i = 0; i < F->nrow; i++) {
    const dp_row_t *r = &F->row[i];
    int relu = strncmp(r->type, "ReLU", 4) == 0 && strstr(r->params, "\"inplace\":true");
    if (relu && nn > 0 && fused_row[nn - 1] < 0) {
      fused_row[nn - 1] = i;
      rep->fused++;
      continue;
    }
    node_row[nn] = i;
    fused_row[nn++] = -1;
  }
  burst_profile_init(p, nn + 1, g->source);
  bgraph_add(g, "input", "input", 0, NULL, F->layer[0].in_bytes, 0, 0);
  for (int x = 0; x < nn; x++) {
    const dp_row_t *r = &F->row[node_row[x]];
    char name[BGRAPH_NAME_MAX];
    snprintf(name, sizeof name, "%s_%d%s", r->type, x + 1, fused_row[x] >= 0 ? "+relu" : "");
    int prev = x;
    bgraph_add(g, name, r->type, 1, &prev, F->layer[node_row[x]].out_bytes, F->layer[node_row[x]].param_bytes, r->line);
    set_times(p, x + 1, F, node_row[x], fused_row[x]);
  }
  free(node_row);
  free(fused_row);
}

/* The structure's nodes take the rows in order. */
static void import_structure(const dp_file_t *F, const char *prof_path, const char *structure_path, bgraph_t *g,
                             burst_profile_t *p, deeppool_report_t *rep) {
  burst_profile_t none;
  graph_file_read(structure_path, 1, g, &none);
  burst_profile_free(&none);
  burst_profile_init(p, g->n, prof_path);
  int next = 0;
  for (int v = 0; v < g->n; v++) {
    bgraph_node_t *x = &g->v[v];
    char where[320];
    snprintf(where, sizeof where, "%s:%d", structure_path, x->line);
    if (strcmp(x->kind, "input") == 0) {
      if (isnan(x->act_bytes)) x->act_bytes = F->layer[0].in_bytes;
      if (isnan(x->grad_bytes)) x->grad_bytes = 0;
      continue;
    }
    if (next < F->nrow && strcmp(x->kind, F->row[next].type) == 0) {
      const dp_layer_t *L = &F->layer[next];
      double in = x->nin == 1 ? g->v[x->in[0]].act_bytes : NAN;
      if (x->nin == 1 && !(fabs(in - L->in_bytes) <= 1e-9 * L->in_bytes))
        surge_input_error("%s: node '%s' takes '%s' (%.0f bytes per sample) but its profile row (%s:%d, %s{%s}) "
                          "reads %.0f bytes: the structure does not match the profile",
                          where, x->name, g->v[x->in[0]].name, in, prof_path, F->row[next].line, F->row[next].type,
                          F->row[next].params, L->in_bytes);
      if (isnan(x->act_bytes)) x->act_bytes = L->out_bytes;
      if (isnan(x->grad_bytes)) x->grad_bytes = L->param_bytes;
      set_times(p, v, F, next, -1);
      next++;
      continue;
    }
    /* no row: a concatenation's output is its inputs side by side */
    if (isnan(x->act_bytes)) {
      if (strcmp(x->kind, "concat") != 0)
        surge_input_error("%s: node '%s' (%s) has no profile row (the next is %s:%d, %s) and no out_bytes", where,
                          x->name, x->kind, prof_path, next < F->nrow ? F->row[next].line : 0,
                          next < F->nrow ? F->row[next].type : "none left");
      x->act_bytes = 0;
      for (int k = 0; k < x->nin; k++) x->act_bytes += g->v[x->in[k]].act_bytes;
    }
    if (isnan(x->grad_bytes)) x->grad_bytes = 0;
    for (int gidx = 0; gidx < F->ngroup; gidx++) burst_profile_set(p, v, F->row[gidx * F->nrow].batch, DP_MISSING_US);
    note_missing(rep, x->name);
  }
  if (next < F->nrow)
    surge_input_error("%s:%d: profile row %d of %d (%s) matches no node of the structure %s (its nodes take the rows in "
                      "order by kind)",
                      prof_path, F->row[next].line, next + 1, F->nrow, F->row[next].type, structure_path);
  g->fingerprint = bgraph_fingerprint(g);
}

void deeppool_import(const char *prof_path, const char *structure_path, const char *model, bgraph_t *g,
                     burst_profile_t *p, deeppool_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  dp_file_t F;
  read_prof(prof_path, &F);
  rep->rows = F.nrow;
  rep->batches = F.ngroup;
  if (structure_path) {
    import_structure(&F, prof_path, structure_path, g, p, rep);
    if (model && model[0]) snprintf(g->model, sizeof g->model, "%s", model);
  } else {
    bgraph_init(g, model && model[0] ? model : "deeppool", prof_path);
    import_chain(&F, g, p, rep);
    g->fingerprint = bgraph_fingerprint(g);
  }
  p->interpolate = 1;
  p->net = (burst_net_t){BURST_NET_UNSET, BURST_NET_UNSET, BURST_NET_UNSET, BURST_NET_UNSET};
  free(F.row);
  free(F.layer);
}
