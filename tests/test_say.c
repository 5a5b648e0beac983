/* A program's lines on standard output (core/say.h): two threads, each with its label, say lines in
 * pieces at once, as a foreground and its in-process background do; stdout goes to a file:
 *  - every line arrives whole, its label first, its pieces in order, none lost (a line said in pieces
 *    with plain printf would interleave with the other thread's);
 *  - text that ends in several lines, and one longer than say's own buffer, arrives line by line,
 *    each labelled; an empty line keeps no label; without a label lines arrive as said;
 *  - say_open / say_close: what a printer wrote to the stream arrives as said;
 *  - surge_stdout_by_lines (core/error.h): stdout into a pipe goes out a whole line at a time, none
 *    held back and none cut (mpiexec's pipes then never end a block in the middle of a line);
 *  - a warning (stderr) after a burst of stdout lines into a pipe that a launcher reading both pipes
 *    takes in 4 KiB blocks and late: the warning comes after the whole burst, never inside one of its
 *    lines (Open MPI gives a rank a terminal device as stdout instead: core/error.c). */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "tap.h"

enum { LINES = 3000 };

static pthread_barrier_t start; /* both threads speak at once */

static void *speaker(void *arg) {
  const char *name = arg;
  say_set_label(name);
  pthread_barrier_wait(&start);
  for (int i = 0; i < LINES; i++) {
    say("line %d", i); /* one line in three pieces, the other thread let in between */
    sched_yield();
    say(" of %s", name);
    sched_yield();
    say_text(" ends\n");
  }
  return NULL;
}

/* stdout into a fresh temporary file while fn runs; returns the file, read back from its start */
static FILE *captured(void (*fn)(void)) {
  fflush(stdout);
  FILE *f = tmpfile();
  if (!f) exit(99);
  const int saved = dup(1);
  dup2(fileno(f), 1);
  fn();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  rewind(f);
  return f;
}

static void two_threads(void) {
  pthread_t a, b;
  pthread_barrier_init(&start, NULL, 2);
  pthread_create(&a, NULL, speaker, "fg");
  pthread_create(&b, NULL, speaker, "bg");
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  pthread_barrier_destroy(&start);
}

static void check_threads(void) {
  FILE *f = captured(two_threads);
  int next[2] = {0, 0}, bad = 0, total = 0;
  char line[256], want[256];
  while (fgets(line, sizeof line, f)) {
    total++;
    const int who = strncmp(line, "[bg] ", 5) == 0;
    const char *name = who ? "bg" : "fg";
    snprintf(want, sizeof want, "[%s] line %d of %s ends\n", name, next[who], name);
    if (strcmp(line, want) != 0) {
      if (bad++ < 3) tap_diag("unexpected line %d: %.80s (wanted %.80s)", total, line, want);
    } else {
      next[who]++;
    }
  }
  fclose(f);
  tap_ok(bad == 0 && next[0] == LINES && next[1] == LINES && total == 2 * LINES,
         "two threads saying %d lines each in pieces: every line whole, labelled and in order (%d lines, %d "
         "unexpected)", LINES, total, bad);
}

static void many_lines(void) {
  say_set_label("job 2");
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  say("a\n\nb\n%s\n", big);
  say_set_label(NULL);
  say("plain\n");
  say_stream_t s;
  fprintf(say_open(&s), "from a printer\nand more\n");
  say_close(&s);
}

static void check_many_lines(void) {
  FILE *f = captured(many_lines);
  char *text = NULL;
  size_t cap = 0;
  const ssize_t n = getdelim(&text, &cap, '\0', f);
  fclose(f);
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  char want[2200];
  snprintf(want, sizeof want, "[job 2] a\n\n[job 2] b\n[job 2] %s\nplain\nfrom a printer\nand more\n", big);
  tap_ok(n > 0 && strcmp(text, want) == 0,
         "several lines in one call, an empty one and one of 2000 bytes: each labelled but the empty one; no "
         "label: as said; a printer's stream: as written (%zd bytes)", n);
  free(text);
}

/* what the pipe holds now (the bytes read, -1 when nothing) */
static ssize_t pipe_holds(int fd, char *buf, size_t cap) {
  const ssize_t n = read(fd, buf, cap - 1);
  buf[n > 0 ? n : 0] = 0;
  return n;
}

static void check_stdout_by_lines(void) {
  surge_stdout_by_lines(); /* before stdout's first output, as every program's main */
  int p[2];
  if (pipe(p) != 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) exit(99);
  const int saved = dup(1);
  dup2(p[1], 1);
  char half[64], whole[64];
  printf("half a line");
  const ssize_t n_half = pipe_holds(p[0], half, sizeof half);
  printf(", then its end\nand half of the next");
  const ssize_t n_whole = pipe_holds(p[0], whole, sizeof whole);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(p[0]);
  close(p[1]);
  tap_ok(n_half < 0 && strcmp(whole, "half a line, then its end\n") == 0,
         "stdout into a pipe by lines: half a line waits, its end sends it whole, the next line's half waits (%zd "
         "bytes, then %zd)", n_half, n_whole);
}

/* ---- a launcher's reader: stdout and stderr pipes read apart, in 4 KiB blocks, into one stream */

typedef struct reader {
  int out, err;  /* the read ends */
  char *text;    /* what it read, in its order */
  size_t len, cap;
} reader_t;

static void *read_both(void *arg) {
  reader_t *r = arg;
  const struct timespec late = {0, 20000000}; /* 20 ms behind the writer */
  nanosleep(&late, NULL);
  struct pollfd fd[2] = {{r->out, POLLIN, 0}, {r->err, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0 && poll(fd, 2, -1) > 0)
    for (int k = 0; k < 2; k++) { /* one block from each ready pipe a round, as an event loop */
      if (fd[k].fd < 0 || !(fd[k].revents & (POLLIN | POLLHUP))) continue;
      if (r->len + 4096 > r->cap) r->text = realloc(r->text, r->cap = 2 * r->cap + 4096);
      ssize_t n = read(fd[k].fd, r->text + r->len, 4096);
      if (n <= 0) {
        fd[k].fd = -1;
        open_fds--;
      } else {
        r->len += (size_t)n;
      }
    }
  return NULL;
}

static void check_warning_after_stdout(void) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) exit(99);
  fflush(stdout);
  fflush(stderr);
  const int saved_out = dup(1), saved_err = dup(2);
  dup2(out[1], 1);
  dup2(err[1], 2);
  close(out[1]);
  close(err[1]);
  reader_t r = {out[0], err[0], NULL, 0, 0};
  pthread_t t;
  pthread_create(&t, NULL, read_both, &r);
  for (int i = 0; i < 200; i++) printf("a line of the burst, number %03d, about forty bytes\n", i); /* 10 KiB */
  surge_warning("after the burst");
  fflush(stdout);
  dup2(saved_out, 1); /* the pipes' last write ends close: the reader ends */
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  pthread_join(t, NULL);
  r.text = realloc(r.text, r.len + 1);
  r.text[r.len] = 0;
  const char *w = strstr(r.text, "surge: warning: after the burst\n");
  tap_ok(w && w > r.text && w[-1] == '\n' && strstr(r.text, "number 199, about forty bytes\n") < w,
         "a warning after 10 KiB of stdout lines, both pipes read apart in 4 KiB blocks by a late reader: after the "
         "whole burst, on a line of its own (at byte %td of %zu)", w ? w - r.text : (ptrdiff_t)-1, r.len);
  free(r.text);
  close(out[0]);
  close(err[0]);
}

int main(void) {
  check_stdout_by_lines();
  check_warning_after_stdout();
  check_threads();
  check_many_lines();
  return tap_done();
}
