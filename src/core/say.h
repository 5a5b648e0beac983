/* A program's lines on standard output (a run's banners, progress and summaries). Where two jobs
 * share standard output (an MPMD launch of a foreground and its background, or an in-process
 * background in a thread of each foreground rank: doc/multiplexing.md), each job's thread sets its
 * label, and every line it says starts with "[label] ", set-up lines and summaries as well as
 * progress. Every line goes out whole, flushed on its own: text without a newline is kept (per
 * thread) until its line ends, so lines said in pieces by two threads never mix, and those of two
 * processes reach the terminal whole (a line that fits stdout's buffer, 4096 bytes on a pipe, is
 * one write, which a pipe does not split; a longer one may be cut where another process's lands).
 * Callers decide which rank speaks; nothing here filters by rank. */
#ifndef SURGE_SAY_H
#define SURGE_SAY_H

#include <stdarg.h>
#include <stdio.h>

/* The calling thread's label ("background", "background of rank 1"; "" or NULL: none). */
void say_set_label(const char *label);
const char *say_label(void); /* "" when none */

/* printf-style text, each line it ends put out whole with the label before it (not before an
 * empty line). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say_v(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
void say_text(const char *text);
/* At a thread's end: a line it left unfinished goes out (with a newline), its buffer is freed. */
void say_thread_end(void);

/* For a printer that writes to a FILE: say_open gives a stream into memory, say_close says what it
 * holds (as say_text) and frees it. */
typedef struct say_stream {
  FILE *f;
  char *text;
  size_t len;
} say_stream_t;
FILE *say_open(say_stream_t *s);
void say_close(say_stream_t *s);

#endif
