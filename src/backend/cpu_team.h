/* A team of threads for the cpu backend's own kernels where [backend] threads > 1 (OpenBLAS has its
 * own): the calling thread and up to CPU_TEAM_MAX - 1 kept workers, made when first needed and kept
 * until the process exits (as OpenBLAS keeps its). A kernel splits its outputs into T parts that no
 * two threads write, each part computed as one thread would compute it, so the bits do not depend on
 * T (tests/test_bf16, tests/test_cpu_team). */
#ifndef SURGE_BACKEND_CPU_TEAM_H
#define SURGE_BACKEND_CPU_TEAM_H

enum { CPU_TEAM_MAX = 64 };

typedef void (*cpu_team_fn)(void *arg, int t, int T);

/* fn(arg, t, T) for t = 0 .. T-1 (T capped at CPU_TEAM_MAX): t = 0 on the calling thread, the others
 * on the workers, each in the caller's floating-point mode (flush to zero, denormals are zero);
 * returns once every part has. Where T <= 1, or another thread holds the team (an in-process
 * background beside its foreground), or a worker cannot be made, the calling thread runs the parts
 * in turn. */
void cpu_team_run(int T, cpu_team_fn fn, void *arg);

/* Parts that ran on a worker since the process started (tests and benchmarks: the team did run). */
long cpu_team_worker_parts(void);

#endif
