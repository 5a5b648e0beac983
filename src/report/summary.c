/* The text summary of one run: a list of sections, each printed only when the log has what it
 * shows (a section for something a newer log adds goes into `sections` with its own test). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"

enum { SETTINGS_WIDTH = 100, EVENTS_SHOWN = 20 };

/* "1.4396 (step 30)", or "-" when there is no value. */
static void format_at(report_at_t a, const char *fmt, char *buf, size_t n) {
  if (isnan(a.value)) {
    snprintf(buf, n, "-");
    return;
  }
  int len = snprintf(buf, n, fmt, a.value);
  if (len >= 0 && (size_t)len < n) snprintf(buf + len, n - (size_t)len, " (step %.0f)", a.step);
}

static int always(const log_data_t *L) {
  (void)L;
  return 1;
}

/* ---- run ---- */

static void print_run(FILE *f, const log_data_t *L, const report_values_t *v) {
  fprintf(f, "  log         %s\n", L->path);
  fprintf(f, "  written by  %s %s%s%s\n", L->program, L->version[0] ? L->version : "(unknown version)",
          L->start_time[0] ? ", started " : "", L->start_time);
  if (L->model[0]) fprintf(f, "  model       %s, %lld parameters\n", L->model, L->parameters);
  if (L->layout[0])
    fprintf(f, "  layout      %s on %lld rank%s, global batch %lld\n", L->layout, L->ranks, L->ranks == 1 ? "" : "s",
            L->global_batch);
  const char *planned = log_setting(L, "run.steps");
  if (v->steps)
    fprintf(f, "  steps       %zu logged (steps %.0f to %.0f)%s%s", v->steps, v->first_step, v->last_step,
            planned ? " of " : "", planned ? planned : "");
  else
    fprintf(f, "  steps       none logged yet");
  if (L->flush_every > 0) fprintf(f, "; log flushed every %lld steps", L->flush_every);
  fputc('\n', f);
  if (planned && (!v->steps || v->last_step < atof(planned)))
    fprintf(f, "  note        short of step %s: still running, stopped or killed (a killed run's log ends at its "
               "last flush)\n",
            planned);
  int nnotes;
  char **notes = report_dropped_lines(L, &nnotes);
  for (int i = 0; i < nnotes; i++) fprintf(f, "  note        %s\n", notes[i]);
  report_damage_free(notes, nnotes);
  int ndamaged;
  char **damaged = report_damage(L, &ndamaged);
  for (int i = 0; i < ndamaged; i++) fprintf(f, "  damaged     %s (shown without values)\n", damaged[i]);
  report_damage_free(damaged, ndamaged);
}

/* ---- settings: the resolved deck, one line per section, wrapped ---- */

static int has_settings(const log_data_t *L) { return L->nsettings > 0; }

static void print_settings(FILE *f, const log_data_t *L, const report_values_t *v) {
  (void)v;
  const char *section = "";
  size_t section_len = 0, col = 0, indent = 0;
  for (int i = 0; i < L->nsettings; i++) {
    const char *key = L->setting[i].key, *dot = strchr(key, '.');
    size_t slen = dot ? (size_t)(dot - key) : 0;
    if (slen != section_len || strncmp(key, section, slen) != 0) {
      if (col) fputc('\n', f);
      section = key;
      section_len = slen;
      col = (size_t)fprintf(f, "  [%.*s]", (int)slen, key);
      indent = col;
    }
    const char *name = dot ? dot + 1 : key;
    size_t len = strlen(name) + 1 + strlen(L->setting[i].value) + 1;
    if (col + len > SETTINGS_WIDTH && col > indent) col = (size_t)fprintf(f, "\n%*s", (int)indent, "") - 1;
    col += (size_t)fprintf(f, " %s=%s", name, L->setting[i].value);
  }
  if (col) fputc('\n', f);
}

/* ---- final and best metrics ---- */

static void metric_row(report_grid_t *g, const char *name, report_at_t final, report_at_t best, const char *fmt) {
  char a[64], b[64];
  format_at(final, fmt, a, sizeof a);
  format_at(best, fmt, b, sizeof b);
  report_grid_add(g, "%s", name);
  report_grid_add(g, "%s", a);
  report_grid_add(g, "%s", b);
}

static void print_metrics(FILE *f, const log_data_t *L, const report_values_t *v) {
  report_grid_t g;
  report_grid_init(&g, 3, "lrr");
  report_grid_add(&g, "metric");
  report_grid_add(&g, "final");
  report_grid_add(&g, "best");
  metric_row(&g, "training loss (nats)", v->final_loss, v->best_loss, "%.5g");
  if (L->eval.rows) {
    metric_row(&g, "eval loss (nats)", v->final_eval_loss, v->best_eval_loss, "%.5g");
    metric_row(&g, "eval accuracy (fraction)", v->final_accuracy, v->best_accuracy, "%.4f");
  }
  const report_at_t nothing = {NAN, NAN};
  const struct {
    log_metric_t column;
    const char *name;
  } last_only[] = {{LOG_LR, "learning rate"}, {LOG_GRAD_NORM, "gradient norm"}};
  for (size_t i = 0; i < sizeof last_only / sizeof last_only[0]; i++) {
    const log_column_t *c = log_column(&L->metrics, log_metric_info[last_only[i].column].name);
    if (c && L->metrics.rows)
      metric_row(&g, last_only[i].name, (report_at_t){c->v[L->metrics.rows - 1], v->last_step}, nothing, "%.4g");
  }
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
  if (!L->eval.rows) fprintf(f, "  no evaluation logged\n");
}

/* ---- throughput ---- */

static int has_steps(const log_data_t *L) { return L->metrics.rows > 0; }

static void print_throughput(FILE *f, const log_data_t *L, const report_values_t *v) {
  (void)L;
  fprintf(f, "  samples/s   %.1f (the samples of all %zu steps over their summed step time)\n", v->samples_per_sec,
          v->steps);
  fprintf(f, "  step time   mean %.2f ms, median %.2f ms, min %.2f ms, max %.2f ms\n", 1e3 * v->step_mean,
          1e3 * v->step_median, 1e3 * v->step_min, 1e3 * v->step_max);
}

/* ---- per-rank phase times and their categories ---- */

static int has_phases(const log_data_t *L) { return L->phases.ncol > 0 && L->phases.rows > 0 && L->phase_ranks > 0; }

/* Milliseconds per step of every rank in every phase, and a last row with the mean over ranks.
 * Returns (ranks + 1, phases), NaN where a rank has no value. */
static double *phase_means(const log_data_t *L) {
  const log_table_t *P = &L->phases;
  size_t ranks = L->phase_ranks, np = (size_t)P->ncol;
  double *ms = xcalloc(surge_mul_size(ranks + 1, np, "phase means"), sizeof(double));
  for (size_t p = 0; p < np; p++) {
    double sum = 0;
    size_t n = 0;
    for (size_t r = 0; r < ranks; r++) {
      double x = 1e3 * report_column_mean(&P->col[p], P->rows, r);
      ms[r * np + p] = x;
      if (!isnan(x)) {
        sum += x;
        n++;
      }
    }
    ms[ranks * np + p] = n ? sum / (double)n : NAN;
  }
  return ms;
}

static void add_rank_label(report_grid_t *g, size_t r, size_t ranks) {
  if (r < ranks) report_grid_add(g, "%zu", r);
  else report_grid_add(g, "mean");
}

static int overlaps(const log_data_t *L, size_t p) {
  return report_phase_kind(L->phases.col[p].name + strlen(LOG_PHASE_PREFIX)).overlap != NULL;
}

/* Milliseconds of row r of ms (phase_means) in the phases that add up to the step. */
static double step_total(const log_data_t *L, const double *ms, size_t r) {
  size_t np = (size_t)L->phases.ncol;
  double total = 0;
  for (size_t p = 0; p < np; p++)
    if (!overlaps(L, p) && !isnan(ms[r * np + p])) total += ms[r * np + p];
  return total;
}

/* The line under a table that shows overlapping phases (multiplexed runs): what they hold. */
static void print_overlap_note(FILE *f, const log_data_t *L, const char *what) {
  int any = 0;
  for (size_t p = 0; p < (size_t)L->phases.ncol; p++)
    if (overlaps(L, p) && report_phase_shown(L, p)) {
      report_phase_kind_t k = report_phase_kind(L->phases.col[p].name + strlen(LOG_PHASE_PREFIX));
      fprintf(f, "%s%s (%s)", any ? ", " : "  ", k.name, k.overlap);
      any = 1;
    }
  if (any) fprintf(f, ": within the other phases, %s\n", what);
}

static void print_phase_grid(FILE *f, const log_data_t *L, const double *ms) {
  const log_table_t *P = &L->phases;
  size_t ranks = L->phase_ranks, np = (size_t)P->ncol;
  int nshown = 0;
  for (size_t p = 0; p < np; p++) nshown += report_phase_shown(L, p);
  report_grid_t g;
  report_grid_init(&g, nshown + 2, "r");
  report_grid_add(&g, "rank");
  for (size_t p = 0; p < np; p++)
    if (report_phase_shown(L, p)) report_grid_add(&g, "%s", P->col[p].name + strlen(LOG_PHASE_PREFIX));
  report_grid_add(&g, "total");
  for (size_t r = 0; r <= ranks; r++) {
    add_rank_label(&g, r, ranks);
    for (size_t p = 0; p < np; p++) {
      double x = ms[r * np + p];
      if (!report_phase_shown(L, p)) continue;
      if (isnan(x)) report_grid_add(&g, "-");
      else report_grid_add(&g, "%.3f", x);
    }
    report_grid_add(&g, "%.3f", step_total(L, ms, r));
  }
  fprintf(f, "  milliseconds per step, mean over %zu steps\n", P->rows);
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
  print_overlap_note(f, L, "not in the total");
}

/* Each rank's share of its step per category (report_phase_categories), for the categories that
 * some shown phase of the log counts under. The shares of the phases that add up to the step sum
 * to 100%; an overlapping phase's share is of the same step, beside them. */
static void print_category_grid(FILE *f, const log_data_t *L, const double *ms) {
  const log_table_t *P = &L->phases;
  size_t ranks = L->phase_ranks, np = (size_t)P->ncol;
  int ncat = 0;
  while (report_phase_categories[ncat]) ncat++;
  int *cat_of = xmalloc(np * sizeof(int)), *used = xcalloc((size_t)ncat, sizeof(int));
  for (size_t p = 0; p < np; p++) {
    const char *category = report_phase_kind(P->col[p].name + strlen(LOG_PHASE_PREFIX)).category;
    for (int k = 0; k < ncat; k++)
      if (strcmp(report_phase_categories[k], category) == 0) cat_of[p] = k;
    if (report_phase_shown(L, p)) used[cat_of[p]] = 1;
  }
  report_grid_t g;
  int nused = 0;
  for (int k = 0; k < ncat; k++) nused += used[k];
  report_grid_init(&g, nused + 1, "r");
  report_grid_add(&g, "rank");
  for (int k = 0; k < ncat; k++)
    if (used[k]) report_grid_add(&g, "%s", report_phase_categories[k]);
  double *share = xmalloc((size_t)ncat * sizeof(double));
  for (size_t r = 0; r <= ranks; r++) {
    double total = step_total(L, ms, r);
    for (int k = 0; k < ncat; k++) share[k] = 0;
    for (size_t p = 0; p < np; p++)
      if (!isnan(ms[r * np + p])) share[cat_of[p]] += ms[r * np + p];
    add_rank_label(&g, r, ranks);
    for (int k = 0; k < ncat; k++)
      if (used[k]) {
        if (total > 0) report_grid_add(&g, "%.1f%%", 100 * share[k] / total);
        else report_grid_add(&g, "-");
      }
  }
  fprintf(f, "\n  share of each rank's step by category\n");
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
  print_overlap_note(f, L, "a share of the same step beside the others' 100%");
  free(share);
  free(cat_of);
  free(used);
}

static void print_phases(FILE *f, const log_data_t *L, const report_values_t *v) {
  (void)v;
  double *ms = phase_means(L);
  print_phase_grid(f, L, ms);
  print_category_grid(f, L, ms);
  free(ms);
}

/* ---- bytes per traffic category ---- */

static int is_bytes(const char *name) { return strncmp(name, LOG_BYTES_PREFIX, strlen(LOG_BYTES_PREFIX)) == 0; }

static int has_traffic(const log_data_t *L) {
  for (int i = 0; i < L->metrics.ncol; i++)
    if (is_bytes(L->metrics.col[i].name)) return L->metrics.rows > 0;
  return 0;
}

/* The internode_bytes_ column of a bytes_ column, or NULL (logs before the split had none). */
static const log_column_t *internode_of(const log_data_t *L, const char *bytes_name) {
  char name[128];
  snprintf(name, sizeof name, "%s%s", LOG_INTERNODE_PREFIX, bytes_name + strlen(LOG_BYTES_PREFIX));
  return log_column(&L->metrics, name);
}

static void print_traffic(FILE *f, const log_data_t *L, const report_values_t *v) {
  double all = 0;
  int split = 0;
  for (int i = 0; i < L->metrics.ncol; i++)
    if (is_bytes(L->metrics.col[i].name)) {
      all += report_column_sum(&L->metrics.col[i], v->steps, 0);
      split |= internode_of(L, L->metrics.col[i].name) != NULL;
    }
  report_grid_t g;
  report_grid_init(&g, split ? 6 : 5, "lrrrrr");
  report_grid_add(&g, "category");
  report_grid_add(&g, "per step");
  report_grid_add(&g, "total");
  if (split) report_grid_add(&g, "across nodes");
  report_grid_add(&g, "bytes");
  report_grid_add(&g, "share");
  for (int i = 0; i < L->metrics.ncol; i++) {
    const log_column_t *c = &L->metrics.col[i];
    if (!is_bytes(c->name)) continue;
    double total = report_column_sum(c, v->steps, 0);
    char per[32], tot[32];
    report_format_bytes(total / (double)v->steps, per, sizeof per);
    report_format_bytes(total, tot, sizeof tot);
    report_grid_add(&g, "%s", c->name + strlen(LOG_BYTES_PREFIX));
    report_grid_add(&g, "%s", per);
    report_grid_add(&g, "%s", tot);
    const log_column_t *across = split ? internode_of(L, c->name) : NULL;
    if (across) {
      char tot_across[32];
      report_format_bytes(report_column_sum(across, v->steps, 0), tot_across, sizeof tot_across);
      report_grid_add(&g, "%s", tot_across);
    } else if (split)
      report_grid_add(&g, "-");
    report_grid_add(&g, "%.0f", total);
    if (all > 0) report_grid_add(&g, "%.1f%%", 100 * total / all);
    else report_grid_add(&g, "-");
  }
  fprintf(f, "  handed to the comm layer, summed over ranks, over %zu steps\n", v->steps);
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
}

/* ---- events ---- */

static int has_events(const log_data_t *L) { return L->nevents > 0; }

static void print_events(FILE *f, const log_data_t *L, const report_values_t *v) {
  (void)v;
  size_t first = L->nevents > EVENTS_SHOWN ? L->nevents - EVENTS_SHOWN : 0;
  if (first) fprintf(f, "  (%zu earlier events not shown; --json exports them all)\n", first);
  for (size_t i = first; i < L->nevents; i++) fprintf(f, "  step %-8.0f %s\n", L->event_step[i], L->event_text[i]);
}

/* The sections every log may have, in order; the parts' views go after Throughput (early ones)
 * and after Traffic (the others). */
static const struct {
  const char *title;
  int (*present)(const log_data_t *L);
  void (*print)(FILE *f, const log_data_t *L, const report_values_t *v);
  int views_after; /* 1: the early views follow; 2: the others */
} sections[] = {
    {"Settings (the resolved deck)", has_settings, print_settings, 0},
    {"Metrics", always, print_metrics, 0},
    {"Throughput", has_steps, print_throughput, 1},
    {"Time per phase of a step, per rank", has_phases, print_phases, 0},
    {"Traffic per category", has_traffic, print_traffic, 2},
    {"Events", has_events, print_events, 0},
};

static void print_views(FILE *f, const log_data_t *L, const report_values_t *v, int early) {
  int n;
  const report_view_t *const *view = report_views(&n);
  for (int i = 0; i < n; i++) {
    const void *data = log_part_data(L, view[i]->part);
    if (!data || view[i]->early != early) continue;
    fprintf(f, "\n%s\n", view[i]->title);
    view[i]->print(f, L, data, v);
  }
}

void report_summary_print(FILE *f, const log_data_t *L) {
  report_values_t v = report_values(L);
  fprintf(f, "Run %s\n", log_run_name(L));
  print_run(f, L, &v);
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    if (sections[i].present(L)) {
      fprintf(f, "\n%s\n", sections[i].title);
      sections[i].print(f, L, &v);
    }
    if (sections[i].views_after) print_views(f, L, &v, sections[i].views_after == 1);
  }
}
