/* Values derived from one run's log: final and best metrics, throughput, step-time statistics.
 * Non-finite values (NaN cells of a killed or resumed run, a diverged loss) are skipped. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/log_format.h"
#include "report/report.h"

static const report_at_t none = {NAN, NAN};

/* The last finite value of g's column `name`, with its step. */
static report_at_t last_of(const log_table_t *g, const char *name) {
  const log_column_t *c = log_column(g, name), *step = log_column(g, LOG_STEP);
  if (!c || !step) return none;
  for (size_t i = g->rows; i-- > 0;)
    if (isfinite(c->v[i])) return (report_at_t){c->v[i], step->v[i]};
  return none;
}

/* The lowest (or highest) finite value of g's column `name`, with the first step reaching it. */
static report_at_t extreme_of(const log_table_t *g, const char *name, int highest) {
  const log_column_t *c = log_column(g, name), *step = log_column(g, LOG_STEP);
  report_at_t best = none;
  if (!c || !step) return none;
  for (size_t i = 0; i < g->rows; i++) {
    double v = c->v[i];
    if (isfinite(v) && (isnan(best.value) || (highest ? v > best.value : v < best.value)))
      best = (report_at_t){v, step->v[i]};
  }
  return best;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The finite values of column c (1-D) over rows, ascending, with their count and sum; malloc'd. */
static double *sorted_finite(const log_column_t *c, size_t rows, size_t *n, double *sum) {
  double *sorted = xmalloc(surge_mul_size(rows + 1, sizeof(double), "sorted values"));
  *n = 0;
  *sum = 0;
  for (size_t i = 0; i < rows; i++)
    if (isfinite(c->v[i * c->cols])) {
      sorted[(*n)++] = c->v[i * c->cols];
      *sum += c->v[i * c->cols];
    }
  qsort(sorted, *n, sizeof(double), compare_double);
  return sorted;
}

static double median_of_sorted(const double *sorted, size_t n) {
  if (!n) return NAN;
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

/* Mean, median, min and max of the finite step times. */
static void step_time_stats(const log_data_t *L, report_values_t *v) {
  v->step_mean = v->step_median = v->step_min = v->step_max = NAN;
  const log_column_t *t = log_column(&L->metrics, log_metric_info[LOG_STEP_TIME].name);
  if (!t) return;
  size_t n;
  double sum;
  double *sorted = sorted_finite(t, L->metrics.rows, &n, &sum);
  if (n) {
    v->step_mean = sum / (double)n;
    v->step_median = median_of_sorted(sorted, n);
    v->step_min = sorted[0];
    v->step_max = sorted[n - 1];
  }
  free(sorted);
}

double report_column_median(const log_column_t *c, size_t rows) {
  size_t n;
  double sum;
  double *sorted = sorted_finite(c, rows, &n, &sum);
  double median = median_of_sorted(sorted, n);
  free(sorted);
  return median;
}

double report_throughput(const log_data_t *L, size_t first_row) {
  const log_column_t *t = log_column(&L->metrics, log_metric_info[LOG_STEP_TIME].name),
                        *sps = log_column(&L->metrics, log_metric_info[LOG_SAMPLES_PER_SEC].name);
  if (!t || !sps) return NAN;
  if (first_row >= L->metrics.rows) first_row = 0;
  double samples = 0, seconds = 0;
  for (size_t i = first_row; i < L->metrics.rows; i++)
    if (isfinite(t->v[i]) && isfinite(sps->v[i]) && t->v[i] > 0) {
      samples += sps->v[i] * t->v[i];
      seconds += t->v[i];
    }
  return seconds > 0 ? samples / seconds : NAN;
}

report_values_t report_values(const log_data_t *L) {
  report_values_t v = {.steps = L->metrics.rows, .first_step = NAN, .last_step = NAN};
  const log_column_t *step = log_column(&L->metrics, LOG_STEP);
  if (L->metrics.rows) {
    v.first_step = step->v[0];
    v.last_step = step->v[L->metrics.rows - 1];
  }
  v.final_loss = last_of(&L->metrics, log_metric_info[LOG_LOSS].name);
  v.best_loss = extreme_of(&L->metrics, log_metric_info[LOG_LOSS].name, 0);
  v.final_eval_loss = last_of(&L->eval, log_eval_info[LOG_EVAL_LOSS].name);
  v.best_eval_loss = extreme_of(&L->eval, log_eval_info[LOG_EVAL_LOSS].name, 0);
  v.final_accuracy = last_of(&L->eval, log_eval_info[LOG_EVAL_ACCURACY].name);
  v.best_accuracy = extreme_of(&L->eval, log_eval_info[LOG_EVAL_ACCURACY].name, 1);
  v.samples_per_sec = report_throughput(L, 0);
  step_time_stats(L, &v);
  return v;
}

long report_median_row(const log_data_t *L) {
  const log_column_t *t = log_column(&L->metrics, log_metric_info[LOG_STEP_TIME].name);
  report_values_t v = {0};
  step_time_stats(L, &v);
  if (!t || isnan(v.step_median)) return L->metrics.rows ? (long)L->metrics.rows - 1 : -1;
  /* the row closest to the median (an even count's median is a mean of two rows) */
  long best = -1;
  for (size_t i = 0; i < L->metrics.rows; i++)
    if (isfinite(t->v[i]) && (best < 0 || fabs(t->v[i] - v.step_median) < fabs(t->v[best] - v.step_median)))
      best = (long)i;
  return best;
}

long report_row_of_step(const log_data_t *L, double step) {
  const log_column_t *s = log_column(&L->metrics, LOG_STEP);
  for (size_t i = 0; i < L->metrics.rows; i++)
    if (s->v[i] == step) return (long)i;
  return -1;
}

double report_column_mean(const log_column_t *c, size_t rows, size_t j) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = 0; i < rows; i++) {
    double x = c->v[i * c->cols + j];
    if (isfinite(x)) {
      sum += x;
      n++;
    }
  }
  return n ? sum / (double)n : NAN;
}

double report_column_sum(const log_column_t *c, size_t rows, size_t j) {
  double sum = 0;
  for (size_t i = 0; i < rows; i++)
    if (isfinite(c->v[i * c->cols + j])) sum += c->v[i * c->cols + j];
  return sum;
}
