/* Line-oriented text input for the planner's files (plan files, graph files, DeepPool profiles):
 * lines of any length up to a bound, '#' comments, words split on blanks, and errors that name
 * file:line. */
#ifndef SURGE_BURST_TEXTIO_H
#define SURGE_BURST_TEXTIO_H

#include <stdio.h>

#define TEXT_LINE_MAX (1 << 20) /* bytes of one line: far beyond any graph's widest node line */

typedef struct tin {
  const char *path;
  FILE *f;
  int line;    /* number of the current line (1-based) */
  char *buf;   /* the current line, split into words in place */
  size_t cap;
  char *raw;   /* the current line as read */
  size_t raw_cap;
  char **word; /* [nword] */
  int nword, wcap;
  int comments; /* '#' starts a comment (default 1) */
} tin_t;

/* Open path (an input error naming it when it cannot be opened). */
void tin_open(tin_t *t, const char *path);
void tin_close(tin_t *t);
/* Read the next line that has words; 0 at the end of the file. A line over TEXT_LINE_MAX bytes or
 * a read error is an input error naming file:line. */
int tin_next(tin_t *t);
/* The raw current line (before splitting), without its newline: valid until tin_next. */
const char *tin_raw(const tin_t *t);

/* An input error "path:line: message". */
_Noreturn void tin_error(const tin_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
_Noreturn void tin_error_at(const char *path, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Numbers in words: a whole number in [lo, hi], or a finite double in [lo, hi]; what names the
 * value in the error. */
long tin_long(const tin_t *t, const char *what, const char *s, long lo, long hi);
double tin_double(const tin_t *t, const char *what, const char *s, double lo, double hi);

#endif
