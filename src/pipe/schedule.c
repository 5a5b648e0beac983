#include "pipe/schedule.h"

#include <string.h>

const char *pipe_sched_name(pipe_sched_t k) { return k == PIPE_GPIPE ? "gpipe" : "1f1b"; }

int pipe_sched_of(const char *name) {
  if (strcmp(name, "1f1b") == 0) return PIPE_1F1B;
  if (strcmp(name, "gpipe") == 0) return PIPE_GPIPE;
  return -1;
}

int pipe_warmup(pipe_sched_t k, int PP, int M, int s) {
  if (k == PIPE_GPIPE) return M;
  int w = PP - s - 1;
  return w < M ? w : M;
}

int pipe_in_flight(pipe_sched_t k, int PP, int M, int s) {
  int w = pipe_warmup(k, PP, M, s);
  return w < M ? w + 1 : M;
}

void pipe_schedule(pipe_sched_t k, int PP, int M, int s, pipe_op_t *ops) {
  int w = pipe_warmup(k, PP, M, s), n = 0, f = 0, b = 0;
  while (f < w) ops[n++] = (pipe_op_t){PIPE_FORWARD, f++};
  while (f < M) { /* steady state: one forward, one backward */
    ops[n++] = (pipe_op_t){PIPE_FORWARD, f++};
    ops[n++] = (pipe_op_t){PIPE_BACKWARD, b++};
  }
  while (b < M) ops[n++] = (pipe_op_t){PIPE_BACKWARD, b++}; /* cool-down */
}

double pipe_bubble_theory(int PP, int M) { return (double)(PP - 1) / (double)(M + PP - 1); }
