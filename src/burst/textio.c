#include "burst/textio.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/exact.h"
#include "core/infile.h"
#include "io/printable.h"

void tin_open(tin_t *t, const char *path) {
  memset(t, 0, sizeof *t);
  t->path = path;
  t->comments = 1;
  t->f = infile_fopen(path, NULL);
  if (!t->f) surge_input_error("cannot open %s: %s", path, strerror(errno));
  t->cap = 4096;
  t->buf = xmalloc(t->cap);
}

void tin_close(tin_t *t) {
  if (t->f) fclose(t->f);
  free(t->buf);
  free(t->raw);
  free(t->word);
  memset(t, 0, sizeof *t);
}

/* The message quotes the file's text: escaped (io/printable.h) like every string from a file shown. */
static void vtin_error(const char *path, int line, const char *fmt, va_list ap) {
  char msg[1024], shown[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  surge_input_error("%s:%d: %s", path, line, printable(msg, shown, sizeof shown));
}

_Noreturn void tin_error(const tin_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vtin_error(t->path, t->line, fmt, ap);
  va_end(ap);
  abort();
}

_Noreturn void tin_error_at(const char *path, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vtin_error(path, line, fmt, ap);
  va_end(ap);
  abort();
}

/* One whole line into buf (without its newline); 0 at the end of the file. A NUL byte or another
 * control character (but tab and CR) is an input error: text files have none; so is what the
 * terminal would show escaped (io/printable.h: invalid UTF-8, C1 controls, invisible characters). */
static int read_line(tin_t *t) {
  size_t len = 0;
  int c = 0;
  while ((c = getc(t->f)) != EOF && c != '\n') {
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
      tin_error_at(t->path, t->line + 1, "control character 0x%02x at byte %zu of the line (a text file has none: "
                   "is it binary or damaged?)", c, len + 1);
    if (len + 2 > t->cap) {
      if (t->cap >= TEXT_LINE_MAX) tin_error_at(t->path, t->line + 1, "line longer than %d bytes", TEXT_LINE_MAX);
      t->cap *= 2;
      t->buf = xrealloc(t->buf, t->cap);
    }
    t->buf[len++] = (char)c;
  }
  if (ferror(t->f)) tin_error(t, "cannot read: %s", strerror(errno));
  if (c == EOF && len == 0) return 0;
  t->buf[len] = '\0';
  t->line++;
  char esc[16];
  const char *hidden = printable_first_hidden(t->buf, esc);
  if (hidden)
    tin_error(t, "%s at byte %zu of the line: invalid UTF-8, a C1 control or an invisible or reordering character "
                 "(a text file of Surge's has none: it would hide or rearrange what the line shows)",
              esc, (size_t)(hidden - t->buf) + 1);
  return 1;
}

int tin_next(tin_t *t) {
  while (read_line(t)) {
    size_t len = strlen(t->buf) + 1;
    if (len > t->raw_cap) {
      t->raw_cap = len;
      t->raw = xrealloc(t->raw, t->raw_cap);
    }
    memcpy(t->raw, t->buf, len);
    if (t->comments) {
      char *hash = strchr(t->buf, '#');
      if (hash) *hash = '\0';
    }
    t->nword = 0;
    for (char *w = strtok(t->buf, " \t\r"); w; w = strtok(NULL, " \t\r")) {
      if (t->nword == t->wcap) {
        t->wcap = t->wcap ? 2 * t->wcap : 16;
        t->word = xrealloc(t->word, (size_t)t->wcap * sizeof *t->word);
      }
      t->word[t->nword++] = w;
    }
    if (t->nword) return 1;
  }
  return 0;
}

const char *tin_raw(const tin_t *t) { return t->raw ? t->raw : ""; }

long tin_long(const tin_t *t, const char *what, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end) tin_error(t, "%s '%s' is not a whole number", what, s);
  if (v < lo || v > hi) tin_error(t, "%s %ld out of range %ld..%ld", what, v, lo, hi);
  return v;
}

double tin_double(const tin_t *t, const char *what, const char *s, double lo, double hi) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || !isfinite(v)) tin_error(t, "%s '%s' is not a finite number", what, s);
  if (v < lo || v > hi) {
    char x[EXACT_LEN], a[EXACT_LEN], b[EXACT_LEN];
    tin_error(t, "%s %s out of range %s..%s", what, exact_text(v, x), exact_text(lo, a), exact_text(hi, b));
  }
  return v;
}
