#include "core/error.h"

#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/say.h"

/* The job this thread belongs to: MPI_COMM_WORLD, or its half of an MPMD world, or an in-process
 * background's own (every setting here is per thread: a process may run a foreground and an
 * in-process background, doc/multiplexing.md). */
static _Thread_local MPI_Comm job_comm = MPI_COMM_NULL;
static _Thread_local char job_label[64] = "";
static _Thread_local surge_escape_t escape = NULL; /* an in-process background's way out */
static atomic_int side_threads = 0;                 /* in-process backgrounds running */

void surge_set_job(MPI_Comm job, const char *label) {
  job_comm = job;
  snprintf(job_label, sizeof job_label, "%s", label ? label : "");
}

static _Thread_local int partial_line = 0;
static _Thread_local surge_fail_hook_t fail_hook = NULL;

void surge_set_escape(surge_escape_t e) { escape = e; }

int surge_escaping(void) { return escape != NULL; }

void surge_side_threads(int delta) { atomic_fetch_add(&side_threads, delta); }

enum { ABORT_STEPS = 4 };
static void (*abort_steps[ABORT_STEPS])(void);
static atomic_int nabort_steps;

void surge_at_abort(void (*undo)(void)) {
  const int i = atomic_fetch_add(&nabort_steps, 1);
  if (i >= ABORT_STEPS) surge_runtime_error("surge_at_abort: more than %d steps (a bug)", ABORT_STEPS);
  abort_steps[i] = undo;
}

static void run_abort_steps(void) {
  const int n = atomic_exchange(&nabort_steps, 0);
  for (int i = 0; i < n && i < ABORT_STEPS; i++) abort_steps[i]();
}

void surge_set_fail_hook(surge_fail_hook_t hook) { fail_hook = hook; }

/* A harness's hook takes the error instead of the process ending (it does not return). */
static void to_hook(int exit_code, const char *fmt, va_list ap) {
  if (!fail_hook) return;
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  fail_hook(exit_code, msg);
}

void surge_stdout_by_lines(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

/* Every program's standard output at its exit: a program that would exit 0 after a write to it failed
 * (a full disk, /dev/full) exits 1 with a line saying so, not 0 with its results lost (say() flushes
 * each line and cannot stop the program on the spot). Any other status stands: an error said its own
 * line, and a stopped run's status (--stopped-exit) is what a job script acts on. */
static void stdout_at_exit(int status, void *unused) {
  (void)unused;
  if (status != 0) return;
  errno = 0;
  const int flush_failed = fflush(stdout) != 0;
  if (!flush_failed && !ferror(stdout)) return;
  char line[256];
  snprintf(line, sizeof line, "surge: error: writing standard output failed%s%s: the output is incomplete\n",
           flush_failed && errno ? ": " : "", flush_failed && errno ? strerror(errno) : "");
  if (write(STDERR_FILENO, line, strlen(line)) < 0) { /* nothing more to say it with */
  }
  _exit(SURGE_EXIT_RUNTIME);
}

/* Before main, in every program of the library: a file that grows past RLIMIT_FSIZE fails its write
 * with EFBIG, which the writer reports naming the file (and a checkpoint write abandons its temporary
 * file), instead of SIGXFSZ's core-dumping end; and the check of standard output at exit. */
__attribute__((constructor)) static void program_start(void) {
  signal(SIGXFSZ, SIG_IGN);
  on_exit(stdout_at_exit, NULL); /* (glibc's: the handler learns the exit status) */
}

void surge_set_partial_line(int partial) { partial_line = partial; }

static MPI_Comm job(void) { return job_comm == MPI_COMM_NULL ? MPI_COMM_WORLD : job_comm; }

static int mpi_size(void) {
  int init = 0, fin = 0, n = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int surge_rank(void) {
  int init = 0, fin = 0, r = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(job(), &r);
  return r;
}

/* Wait, at most about 0.2 s, until a pipe on stdout has been read empty. A launcher that reads a
 * rank's stdout and stderr pipes apart, in blocks, puts a line written to stderr while stdout's pipe
 * still holds text (a reader behind a burst of lines) inside one of stdout's lines; once the pipe is
 * empty it has taken all of stdout first. Open MPI's mpiexec gives a rank a terminal device as
 * stdout, whose backlog no ioctl shows: there nothing is waited for, and an error can still land
 * inside a line printed just before it (tests match error lines anywhere in a line). */
static void stdout_read(void) {
  struct stat st;
  if (fstat(STDOUT_FILENO, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  const struct timespec ms = {0, 1000000};
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int unread = 0;
    if (ioctl(STDOUT_FILENO, FIONREAD, &unread) != 0 || unread <= 0) return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) > 0.2) return;
    nanosleep(&ms, NULL);
  }
}

/* Print the one line of an error or warning (kind; on a line of its own) and return how many ranks
 * the job has. The line goes out in one write: mpiexec forwards stdout and stderr separately, and a
 * progress bar's text could fall between two writes. */
static int print_line(const char *kind, const char *fmt, va_list ap) {
  char msg[2048], line[2200];
  vsnprintf(msg, sizeof msg, fmt, ap);
  fflush(stdout);
  stdout_read();
  const char *nl = partial_line ? "\n" : ""; /* the bar's line ends where the two streams meet */
  partial_line = 0;
  int n = mpi_size();
  if (escape) /* an in-process background: its label names it, its job is one rank */
    snprintf(line, sizeof line, "%ssurge: %s: %s: %s\n", nl, kind, job_label, msg);
  else if (n > 1)
    snprintf(line, sizeof line, "%ssurge: %s: %s%srank %d: %s\n", nl, kind, job_label, job_label[0] ? " " : "",
             surge_rank(), msg);
  else
    snprintf(line, sizeof line, "%ssurge: %s: %s\n", nl, kind, msg);
  fputs(line, stderr);
  fflush(stderr);
  return n;
}

/* A harness's hook, else the printed line; returns the job's rank count. */
static int report(int exit_code, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  to_hook(exit_code, fmt, again);
  va_end(again);
  return print_line("error", fmt, ap);
}

/* Report, and end the whole job at once when it has other ranks (none may be left waiting). An
 * in-process background's thread leaves by its escape instead, and ends only itself; any other
 * thread of a process that runs one ends the process at once (no exit handler may run while the
 * background thread still uses MPI and HDF5). */
static void report_or_abort(int exit_code, const char *fmt, va_list ap) {
  /* Bad input is mostly seen by every rank at once (a deck checked by each): rank 0 reports it and
   * its abort ends the others, which wait a moment first, so the job prints one line, not N. An
   * error only another rank sees is printed after that moment. */
  if (!escape) { /* a stop signal (train/run.h catches them) now ends a failing process, as the abort does */
    signal(SIGTERM, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
  }
  if (exit_code == SURGE_EXIT_INPUT && !escape && mpi_size() > 1 && surge_rank() != 0) {
    const struct timespec moment = {0, 300 * 1000 * 1000};
    nanosleep(&moment, NULL);
  }
  int ranks = report(exit_code, fmt, ap);
  if (escape) escape(exit_code);
  run_abort_steps(); /* (the process may end without its exit handlers below) */
  if (ranks > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  if (atomic_load(&side_threads) > 0) _exit(exit_code);
}

_Noreturn void surge_fail(int exit_code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report_or_abort(exit_code, fmt, ap);
  va_end(ap);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
  exit(exit_code);
}

_Noreturn void surge_abandon(int exit_code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report_or_abort(exit_code, fmt, ap);
  va_end(ap);
  _exit(exit_code);
}

void surge_warning(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  print_line("warning", fmt, ap);
  va_end(ap);
}

void surge_info(const char *fmt, ...) {
  if (surge_rank() != 0) return;
  va_list ap;
  va_start(ap, fmt);
  say_v(fmt, ap);
  va_end(ap);
}

void *surge_malloc_at(size_t bytes, const char *file, int line) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    surge_runtime_error("out of memory allocating %zu bytes at %s:%d (hint: a smaller batch or model)",
                        bytes, file, line);
  return p;
}

void *surge_calloc_at(size_t n, size_t size, const char *file, int line) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    surge_runtime_error("out of memory allocating %zu x %zu bytes at %s:%d (hint: a smaller batch or model)",
                        n, size, file, line);
  return p;
}

void *surge_realloc_at(void *p, size_t bytes, const char *file, int line) {
  void *q = realloc(p, bytes ? bytes : 1);
  if (!q) surge_runtime_error("out of memory reallocating %zu bytes at %s:%d", bytes, file, line);
  return q;
}

char *surge_strdup_at(const char *s, const char *file, int line) {
  size_t n = strlen(s) + 1;
  char *d = surge_malloc_at(n, file, line);
  memcpy(d, s, n);
  return d;
}

size_t surge_mul_size(size_t a, size_t b, const char *what) {
  if (a != 0 && b > SIZE_MAX / a)
    surge_input_error("size of %s overflows (%zu x %zu)", what, a, b);
  return a * b;
}
