#include "core/say.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static _Thread_local char label[64];
static _Thread_local char *pending; /* the thread's line so far: said without its newline yet */
static _Thread_local size_t npending, cap;

void say_set_label(const char *l) { snprintf(label, sizeof label, "%s", l ? l : ""); }

const char *say_label(void) { return label; }

void say_thread_end(void) {
  if (npending) say_text("\n");
  free(pending);
  pending = NULL;
  npending = cap = 0;
}

/* Room for `need` bytes of pending text (an allocation's failure ends the thread: never under the lock). */
static void reserve(size_t need) {
  if (need + 1 <= cap) return;
  cap = 2 * (need + 1);
  pending = xrealloc(pending, cap);
}

static void keep(const char *s, size_t n) {
  memcpy(pending + npending, s, n); /* (reserved before the lock) */
  npending += n;
}

void say_text(const char *text) {
  const char *last = strrchr(text, '\n');
  reserve(last ? strlen(last + 1) : npending + strlen(text)); /* the text that will be kept */
  flockfile(stdout); /* the lines of one call together, whatever other threads say */
  for (const char *s = text; *s;) {
    const char *nl = strchr(s, '\n');
    if (!nl) {
      keep(s, strlen(s));
      break;
    }
    const size_t n = (size_t)(nl - s);
    if (label[0] && npending + n > 0) fprintf(stdout, "[%s] ", label);
    if (npending) fwrite(pending, 1, npending, stdout);
    fwrite(s, 1, n + 1, stdout);
    fflush(stdout); /* a write of its own (up to stdout's buffer): no other process's output lands mid-line */
    npending = 0;
    s = nl + 1;
  }
  funlockfile(stdout);
}

void say_v(const char *fmt, va_list ap) {
  char small[512];
  va_list again;
  va_copy(again, ap);
  const int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= 0 && (size_t)n < sizeof small) {
    say_text(small);
  } else if (n >= 0) {
    char *big = xmalloc((size_t)n + 1);
    vsnprintf(big, (size_t)n + 1, fmt, again);
    say_text(big);
    free(big);
  }
  va_end(again);
}

void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say_v(fmt, ap);
  va_end(ap);
}

FILE *say_open(say_stream_t *s) {
  *s = (say_stream_t){0};
  s->f = open_memstream(&s->text, &s->len);
  if (!s->f) surge_runtime_error("out of memory for a stream of output lines");
  return s->f;
}

void say_close(say_stream_t *s) {
  if (fclose(s->f) != 0) surge_runtime_error("out of memory for a stream of output lines");
  say_text(s->text);
  free(s->text);
  *s = (say_stream_t){0};
}
