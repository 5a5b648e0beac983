#include "burst/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan.h"
#include "core/error.h"
#include "core/exact.h"

void burst_profile_init(burst_profile_t *p, int nodes, const char *source) {
  memset(p, 0, sizeof *p);
  if (nodes < 1) surge_input_error("profile %s: %d nodes (need at least 1)", source, nodes);
  snprintf(p->source, sizeof p->source, "%s", source);
  p->nodes = nodes;
  p->row = xcalloc((size_t)nodes, sizeof *p->row);
}

void burst_profile_setting_note(const burst_profile_t *p, const burst_setting_t *run, char *note, size_t size) {
  const char *had[3] = {p->backend, p->precision, p->optimizer};
  const char *has[3] = {run->backend, run->precision, run->optimizer};
  int other = 0;
  for (int i = 0; i < 3; i++) other |= had[i][0] && strcmp(had[i], has[i]) != 0;
  note[0] = 0;
  if (other)
    snprintf(note, size, "profile %s was measured on backend %s in %s with %s, this run's is %s in %s with %s: its "
             "times (and the plan's predictions) are not this run's (hint: run surge-profile with this deck)",
             p->source, p->backend, p->precision[0] ? p->precision : "(not recorded)",
             p->optimizer[0] ? p->optimizer : "(not recorded)", run->backend, run->precision, run->optimizer);
}

void burst_profile_free(burst_profile_t *p) {
  for (int i = 0; i < p->nodes; i++) {
    free(p->row[i].batch);
    free(p->row[i].us);
  }
  free(p->row);
  memset(p, 0, sizeof *p);
}

/* Index of the first entry with batch >= b (binary search). */
static int row_lower_bound(const burst_profile_row_t *r, int b) {
  int lo = 0, hi = r->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (r->batch[mid] < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void burst_profile_set(burst_profile_t *p, int node, int batch, double us) {
  if (node < 0 || node >= p->nodes)
    surge_input_error("profile %s: node %d out of range 0..%d", p->source, node, p->nodes - 1);
  if (batch < 1) surge_input_error("profile %s: node %d: per-rank batch %d (need >= 1)", p->source, node, batch);
  if (!isfinite(us) || us < 0 || us > BURST_MAX_US) {
    char x[EXACT_LEN], hi[EXACT_LEN];
    surge_input_error("profile %s: node %d batch %d: time %s us is not a number in [0, %s]", p->source, node, batch,
                      exact_text(us, x), exact_text(BURST_MAX_US, hi));
  }
  burst_profile_row_t *r = &p->row[node];
  int k = row_lower_bound(r, batch);
  if (k < r->n && r->batch[k] == batch) {
    r->us[k] = us;
    return;
  }
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 8;
    r->batch = xrealloc(r->batch, (size_t)r->cap * sizeof *r->batch);
    r->us = xrealloc(r->us, (size_t)r->cap * sizeof *r->us);
  }
  memmove(r->batch + k + 1, r->batch + k, (size_t)(r->n - k) * sizeof *r->batch);
  memmove(r->us + k + 1, r->us + k, (size_t)(r->n - k) * sizeof *r->us);
  r->batch[k] = batch;
  r->us[k] = us;
  r->n++;
}

int burst_profile_find(const burst_profile_t *p, int node, int batch, double *us) {
  if (node < 0 || node >= p->nodes) return -1;
  const burst_profile_row_t *r = &p->row[node];
  int k = row_lower_bound(r, batch);
  if (k == r->n || r->batch[k] != batch) return -1;
  *us = r->us[k];
  return 0;
}

/* Interpolated time of row r at batch b (r->n >= 1): see burst_profile_t.interpolate. */
static double row_interpolate(const burst_profile_row_t *r, int b) {
  int k = row_lower_bound(r, b);
  if (k == 0) return r->us[0];
  if (k == r->n) return r->us[r->n - 1] * (double)b / (double)r->batch[r->n - 1];
  double f = (double)(b - r->batch[k - 1]) / (double)(r->batch[k] - r->batch[k - 1]);
  return r->us[k - 1] + f * (r->us[k] - r->us[k - 1]);
}

static _Noreturn void missing_batch(const burst_profile_t *p, const char *where, int node, const char *name,
                                    int batch) {
  char have[160] = "";
  const burst_profile_row_t *r = node < p->nodes ? &p->row[node] : NULL;
  for (int k = 0, used = 0; r && k < r->n && used < (int)sizeof have - 16; k++)
    used += snprintf(have + used, sizeof have - (size_t)used, "%s%d", k ? " " : "", r->batch[k]);
  surge_input_error("%sprofile %s: node %d '%s' has no time for per-rank batch %d (it has: %s; hint: profile "
                    "every per-rank batch the planner or the plan may choose, ceil(global_batch/n) for its rank "
                    "counts n: surge-profile --policy any measures every n)",
                    where, p->source, node, name, batch, have[0] ? have : "none");
}

double burst_profile_time(const burst_profile_t *p, const graph_t *g, int node, int batch) {
  if (g->l[node].kind == LAYER_INPUT) return 0;
  double us;
  if (burst_profile_find(p, node, batch, &us) != 0) missing_batch(p, "", node, g->l[node].name, batch);
  return us;
}

/* The per-sample step costs node bears at a per-rank batch (see burst_profile_t.step). */
static double sample_share_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch) {
  double us = 0;
  for (int k = 0; k < bg->v[node].nin; k++)
    if (bg->v[node].in[k] == 0) {
      us += p->step.data_us_per_sample * batch;
      break;
    }
  if (node == bg->n - 1) us += p->step.loss_us_per_sample * batch;
  return us;
}

double burst_profile_pass_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch) {
  if (strcmp(bg->v[node].kind, "input") == 0) return 0;
  double us;
  if (burst_profile_find(p, node, batch, &us) == 0) return us + sample_share_us(p, bg, node, batch);
  if (p->interpolate && node < p->nodes && p->row[node].n > 0)
    return row_interpolate(&p->row[node], batch) + sample_share_us(p, bg, node, batch);
  char where[320];
  missing_batch(p, bgraph_where(bg, node, where, sizeof where), node, bg->v[node].name, batch);
}

double burst_profile_rerun_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch) {
  double us = 0;
  for (int u = bg->v[node].recompute_from; u > 0 && u < node; u++) us += burst_profile_pass_us(p, bg, u, batch);
  return BURST_FORWARD_SHARE * us;
}

double burst_profile_update_us(const burst_profile_t *p, const bgraph_t *bg, int node, double grad_total) {
  if (!(grad_total > 0)) return node == bg->n - 1 ? p->step.step_us : 0;
  return p->step.step_us * (bg->v[node].grad_bytes / grad_total);
}

double burst_profile_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch) {
  return burst_profile_pass_us(p, bg, node, batch) + burst_profile_update_us(p, bg, node, bgraph_grad_total(bg));
}

void burst_step_costs_check(const burst_step_costs_t *s, const char *what) {
  const double v[3] = {s->data_us_per_sample, s->loss_us_per_sample, s->step_us};
  const char *name[3] = {"data time per sample", "loss time per sample", "step time"};
  for (int i = 0; i < 3; i++)
    if (!isfinite(v[i]) || v[i] < 0 || v[i] > BURST_MAX_US) {
      char x[EXACT_LEN], hi[EXACT_LEN];
      surge_input_error("%s: %s %s us is not a number in [0, %s]", what, name[i], exact_text(v[i], x),
                        exact_text(BURST_MAX_US, hi));
    }
}

static void check_bandwidth(const char *what, const char *name, double v) {
  if (!isfinite(v) || v < BURST_MIN_BYTES_PER_US || v > BURST_MAX_BYTES_PER_US) {
    char x[EXACT_LEN], lo[EXACT_LEN], hi[EXACT_LEN];
    surge_input_error("%s: %s = %s must be a number in [%s, %s]", what, name, exact_text(v, x),
                      exact_text(BURST_MIN_BYTES_PER_US, lo), exact_text(BURST_MAX_BYTES_PER_US, hi));
  }
}

static void check_latency(const char *what, const char *name, double v) {
  if (!isfinite(v) || v < 0 || v > BURST_MAX_LATENCY_US) {
    char x[EXACT_LEN], hi[EXACT_LEN];
    surge_input_error("%s: %s %s us must be a number in [0, %s]", what, name, exact_text(v, x),
                      exact_text(BURST_MAX_LATENCY_US, hi));
  }
}

void burst_net_check(const burst_net_t *net, const char *what) {
  check_latency(what, "p2p latency", net->p2p_alpha_us);
  check_latency(what, "allreduce latency", net->ar_alpha_us);
  check_bandwidth(what, "p2p bandwidth (bytes/us)", net->p2p_bytes_per_us);
  check_bandwidth(what, "allreduce bandwidth (bytes/us)", net->ar_bytes_per_us);
}

static void check_net_of(const burst_profile_t *p) {
  char what[300];
  snprintf(what, sizeof what, "profile %s", p->source);
  burst_net_check(&p->net, what);
}

void burst_profile_check(const burst_profile_t *p, const graph_t *g) {
  if (p->nodes != g->n)
    surge_input_error("profile %s covers %d nodes but the model graph has %d (a profile of another model?)",
                      p->source, p->nodes, g->n);
  if (p->fingerprint && p->fingerprint != burst_graph_fingerprint(g))
    surge_input_error("profile %s was measured on another model graph (fingerprint %016llx, this graph "
                      "%016llx): profile this model",
                      p->source, (unsigned long long)p->fingerprint,
                      (unsigned long long)burst_graph_fingerprint(g));
  check_net_of(p);
}

void burst_profile_check_bg(const burst_profile_t *p, const bgraph_t *bg) {
  if (p->nodes != bg->n)
    surge_input_error("profile %s covers %d nodes but the model graph has %d (%s; a profile of another model?)",
                      p->source, p->nodes, bg->n, bg->source);
  if (p->fingerprint && bg->fingerprint && p->fingerprint != bg->fingerprint)
    surge_input_error("profile %s was measured on another model graph (fingerprint %016llx, this graph "
                      "%016llx): profile this model",
                      p->source, (unsigned long long)p->fingerprint, (unsigned long long)bg->fingerprint);
  check_net_of(p);
}
