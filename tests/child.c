/* Forked children for tests of paths that must exit: see child.h. */
#include "child.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

child_result_t run_in_child(void (*fn)(const void *), const void *arg) {
  int fd[2];
  if (pipe(fd) != 0) abort();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) abort();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], STDERR_FILENO);
    if (!freopen("/dev/null", "w", stdout)) _exit(99);
    fn(arg);
    _exit(0);
  }
  close(fd[1]);
  child_result_t r;
  memset(&r, 0, sizeof r);
  /* read all of stderr (a child blocked on a full pipe would never exit); keep what fits */
  size_t kept = 0;
  char chunk[1024];
  ssize_t got;
  while ((got = read(fd[0], chunk, sizeof chunk)) > 0) {
    for (ssize_t i = 0; i < got; i++) r.newlines += chunk[i] == '\n';
    r.ends_in_newline = chunk[got - 1] == '\n';
    size_t room = sizeof r.err - 1 - kept, take = (size_t)got < room ? (size_t)got : room;
    memcpy(r.err + kept, chunk, take);
    kept += take;
  }
  close(fd[0]);
  if (kept && r.err[kept - 1] == '\n') kept--;
  r.err[kept] = '\0';
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return r;
}

int child_wrote_one_line_with(const child_result_t *r, const char *const *needles, int n) {
  int ok = r->newlines == 1 && r->ends_in_newline;
  for (int i = 0; i < n && needles[i]; i++) ok &= strstr(r->err, needles[i]) != NULL;
  return ok;
}
