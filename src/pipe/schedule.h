/* Pipeline schedules: the order in which one stage runs the forward and backward passes of the M
 * micro-batches of a step (no MPI here; tests/test_pipe_schedule checks every (PP, M) up to 8 x 16).
 *
 *   1f1b   non-interleaved 1F1B ("PipeDream-flush", Megatron-LM's default): stage s of PP runs
 *          W_s = min(PP - s - 1, M) warm-up forwards, then M - W_s times one forward and one
 *          backward, then the W_s cool-down backwards. It holds at most min(PP - s, M) micro-batches'
 *          activations at once.
 *   gpipe  all M forwards, then all M backwards (GPipe): M micro-batches held at once.
 * Both run the backwards in micro-batch order 0, 1, ..., M - 1.
 *
 * Transfers follow from the order: a forward of micro-batch k on stage s > 0 first receives k's
 * activation from stage s - 1; a forward on s < PP - 1 then sends its output to s + 1; a backward on
 * s < PP - 1 first receives the gradient of k's output from s + 1; a backward on s > 0 then sends
 * the gradient of its input to s - 1. Sends never block, so with receives waited for just before
 * the pass that needs them both schedules finish on every stage (no deadlock). */
#ifndef SURGE_PIPE_SCHEDULE_H
#define SURGE_PIPE_SCHEDULE_H

typedef enum pipe_sched { PIPE_1F1B = 0, PIPE_GPIPE } pipe_sched_t;

typedef enum pipe_pass { PIPE_FORWARD = 0, PIPE_BACKWARD } pipe_pass_t;

typedef struct pipe_op {
  pipe_pass_t pass;
  int mb; /* micro-batch, 0 .. M-1 */
} pipe_op_t;

/* The schedule's name ("1f1b", "gpipe") and back; -1 for an unknown name. */
const char *pipe_sched_name(pipe_sched_t k);
int pipe_sched_of(const char *name);

/* Warm-up forwards of stage s (forwards before its first backward). */
int pipe_warmup(pipe_sched_t k, int PP, int M, int s);
/* Most micro-batches stage s holds at once (forward done, backward not yet). */
int pipe_in_flight(pipe_sched_t k, int PP, int M, int s);
/* The 2M passes of stage s in order, into ops[2M]. */
void pipe_schedule(pipe_sched_t k, int PP, int M, int s, pipe_op_t *ops);

/* The pipeline's idle share when every stage takes the same time per pass: (PP-1) / (M+PP-1). */
double pipe_bubble_theory(int PP, int M);

#endif
