/* Errors that speak to people: one line naming what was wrong and where, then the whole job exits.
 * Exit code 2 (SURGE_EXIT_INPUT) for bad input (decks, data files, shapes), 1 for runtime failures.
 * Under MPI with more than one rank the job is brought down with MPI_Abort so nothing hangs. */
#ifndef SURGE_ERROR_H
#define SURGE_ERROR_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

enum { SURGE_EXIT_RUNTIME = 1, SURGE_EXIT_INPUT = 2 };

/* Print "surge: error: <msg>" (plus "rank N: " when MPI runs with more than one rank) and exit. */
_Noreturn void surge_fail(int exit_code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like surge_fail, but the process ends at once without MPI_Finalize and exit handlers: for a
 * failure that leaves a library's state unusable (HDF5 1.10 crashes when it closes, at exit or in
 * MPI_Finalize, a file whose write failed). Files keep what was written before. */
_Noreturn void surge_abandon(int exit_code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For fuzzing harnesses (fuzz/): while a hook is set, surge_fail and surge_abandon hand it the exit
 * code and the message instead of printing and exiting; the hook must not return (it longjmps back
 * to the harness). NULL restores the normal behaviour. */
typedef void (*surge_fail_hook_t)(int exit_code, const char *msg);
void surge_set_fail_hook(surge_fail_hook_t hook);
/* Bad input: exit code 2. */
#define surge_input_error(...) surge_fail(SURGE_EXIT_INPUT, __VA_ARGS__)
/* A failure of the run itself (out of memory, I/O): exit code 1. */
#define surge_runtime_error(...) surge_fail(SURGE_EXIT_RUNTIME, __VA_ARGS__)

/* Allocation that never returns NULL: failures name the caller's file:line and the size asked. */
void *surge_malloc_at(size_t bytes, const char *file, int line);
void *surge_calloc_at(size_t n, size_t size, const char *file, int line);
void *surge_realloc_at(void *p, size_t bytes, const char *file, int line);
char *surge_strdup_at(const char *s, const char *file, int line);
#define xmalloc(bytes) surge_malloc_at((bytes), __FILE__, __LINE__)
#define xcalloc(n, size) surge_calloc_at((n), (size), __FILE__, __LINE__)
#define xrealloc(p, bytes) surge_realloc_at((p), (bytes), __FILE__, __LINE__)
#define xstrdup(s) surge_strdup_at((s), __FILE__, __LINE__)

/* Multiply sizes with an overflow check (bounds before allocation). */
size_t surge_mul_size(size_t a, size_t b, const char *what);

/* Standard output written a whole line at a time (call before the first output; the main of every
 * program that runs under mpiexec does, through comm_init or itself). mpiexec forwards a rank's stdout
 * and stderr through two pipes and writes whatever it read from either: stdout in 4 KiB blocks (a
 * pipe's default) ends mid-line, and an error line then lands in the middle of another line. */
void surge_stdout_by_lines(void);

/* Whether standard output ends in the middle of a line (a progress bar drawn with '\r'): an error
 * then starts on a line of its own. */
void surge_set_partial_line(int partial);

/* A warning on stderr, one line, named as an error is: "surge: warning: msg" in a job of one rank,
 * "surge: warning: [LABEL ]rank N: msg" in a job of several, "surge: warning: LABEL: msg" in a
 * 1-rank in-process background; the run goes on. */
void surge_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational output: rank 0 of the job says it (core/say.h: the thread's label before each line). */
void surge_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int surge_rank(void); /* this process's rank in its job, 0 when MPI is not initialised */
/* The calling thread's job communicator when MPI_COMM_WORLD holds two jobs (mux/launch.h) or the
 * thread runs an in-process background (train/inproc.h); label ("background") prefixes the rank in
 * error messages. Errors still abort the whole MPI world, except in a thread with an escape. All
 * settings of this file (job, label, hook, partial line) are the calling thread's. */
void surge_set_job(MPI_Comm job, const char *label);
/* An in-process background's thread: an error prints "surge: error: LABEL: message" and calls
 * escape(exit_code), which must not return (it longjmps to the thread's start); nothing else of
 * the process ends. NULL: errors end the job as above. */
typedef void (*surge_escape_t)(int exit_code);
void surge_set_escape(surge_escape_t escape);
/* Whether the calling thread has an escape (an error ends the thread, not the process). */
int surge_escaping(void);
/* +1 when an in-process background thread starts, -1 when it has ended: while one runs, an error
 * in any other thread ends the process with _exit (after MPI_Abort where the job has other ranks),
 * not through exit handlers that would pull MPI and HDF5 from under the background. */
void surge_side_threads(int delta);
/* A step to take before a process ends at an error without its exit handlers (MPI_Abort where the job
 * has other ranks, _exit in surge_abandon or beside an in-process background): at most 4 such steps,
 * each run once, in the order given (e.g. putting a session's nice value back: mux/session.c). */
void surge_at_abort(void (*undo)(void));

#endif
