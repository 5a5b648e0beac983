#include "train/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "core/timer.h"

void progress_init(progress_t *p, long total_steps, long samples_per_step, long print_every) {
  memset(p, 0, sizeof *p);
  p->total_steps = total_steps;
  p->samples_per_step = samples_per_step;
  p->print_every = print_every > 0 ? print_every : 1;
  /* a live bar only on a terminal that no other job shares (its lines carry a label: core/say.h) */
  p->tty = surge_rank() == 0 && isatty(fileno(stdout)) && !say_label()[0];
}

void progress_format_duration(double sec, char *buf, int n) {
  long s = sec > 0 ? (long)(sec + 0.5) : 0;
  if (s >= 3600)
    snprintf(buf, (size_t)n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(buf, (size_t)n, "%ld:%02ld", s / 60, s % 60);
}

static void clear_bar(progress_t *p) {
  if (p->bar_drawn) {
    printf("\r\033[K");
    p->bar_drawn = 0;
    surge_set_partial_line(0);
  }
}

static void format_line(const progress_t *p, const train_stats_t *s, double ms, char *buf, size_t n) {
  char eta[32];
  double per_step = p->run_steps ? p->run_sec / (double)p->run_steps : 0;
  progress_format_duration(per_step * (double)(p->total_steps - s->step), eta, sizeof eta);
  int w = snprintf(NULL, 0, "%ld", p->total_steps);
  snprintf(buf, n, "step %*ld/%ld | loss %.4f | lr %.2e | %.1f ms/step | %.0f samples/s | ETA %s", w,
           s->step, p->total_steps, s->loss, s->lr, ms, ms > 0 ? (double)p->samples_per_step * 1e3 / ms : 0.0,
           eta);
}

void progress_step(progress_t *p, const train_stats_t *s) {
  if (surge_rank() != 0) return;
  p->window_sec += s->seconds;
  p->window_steps++;
  p->run_sec += s->seconds;
  p->run_steps++;
  char line[256];
  if (s->step % p->print_every == 0 || s->step == p->total_steps) {
    format_line(p, s, 1e3 * p->window_sec / (double)p->window_steps, line, sizeof line);
    clear_bar(p);
    say("%s\n", line);
    p->window_sec = 0;
    p->window_steps = 0;
  } else if (p->tty && surge_now() - p->bar_at >= 1.0 / PROGRESS_BARS_PER_S) {
    p->bar_at = surge_now();
    format_line(p, s, 1e3 * s->seconds, line, sizeof line);
    const int width = 20;
    int done = (int)((double)width * (double)s->step / (double)p->total_steps);
    char bar[width + 1];
    for (int i = 0; i < width; i++) bar[i] = i < done ? '#' : '.';
    bar[width] = 0;
    printf("\r\033[K[%s] %s", bar, line);
    p->bar_drawn = 1;
    surge_set_partial_line(1);
  }
  fflush(stdout);
}

void progress_eval(progress_t *p, long step, const eval_stats_t *e, const char *token_unit) {
  if (surge_rank() != 0) return;
  clear_bar(p);
  if (token_unit)
    say("eval step %ld | validation loss %.4f nats/%s | next-%s accuracy %.2f%% | %ld sequences\n", step, e->loss,
        token_unit, token_unit, 100.0 * e->accuracy, e->samples);
  else
    say("eval step %ld | test loss %.4f | test accuracy %.2f%% | %ld samples\n", step, e->loss, 100.0 * e->accuracy,
        e->samples);
}

void progress_note(progress_t *p, const char *line) {
  if (surge_rank() != 0) return;
  clear_bar(p);
  say("%s\n", line);
}
