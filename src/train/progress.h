/* Progress output of a training run (rank 0 only): a line every print_every steps with step, loss,
 * lr, ms/step, samples/s and ETA; on a terminal a live bar redrawn in between, at most
 * PROGRESS_BARS_PER_S times a second (Open MPI gives ranks a terminal even when mpiexec's output goes to a
 * file, where every redraw is a line: 400 of them in the demo's 48 KB before). */
#ifndef SURGE_PROGRESS_H
#define SURGE_PROGRESS_H

#include "train/train.h"

typedef struct progress {
  long total_steps;
  long samples_per_step;
  long print_every;
  int tty;            /* stdout is a terminal no other job shares: draw the live bar */
  int bar_drawn;      /* a live bar is on screen (erase before a normal line) */
  double bar_at;      /* surge_now() of the last redraw */
  double window_sec;  /* time of the steps since the last printed line */
  long window_steps;
  double run_sec;     /* time of all steps so far */
  long run_steps;
} progress_t;

enum { PROGRESS_BARS_PER_S = 5 }; /* redraws of the live bar a second, at most */

void progress_init(progress_t *p, long total_steps, long samples_per_step, long print_every);
/* After each step. */
void progress_step(progress_t *p, const train_stats_t *s);
/* After an evaluation; tokens: report per-byte loss (text) rather than accuracy. */
void progress_eval(progress_t *p, long step, const eval_stats_t *e, const char *token_unit); /* NULL: images */
/* Any other line (clears the live bar first). */
void progress_note(progress_t *p, const char *line);

/* "1:02:03" or "2:03" for a duration in seconds. */
void progress_format_duration(double sec, char *buf, int n);

#endif
