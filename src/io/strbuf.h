/* A growable NUL-terminated string for building deck text, values and messages. */
#ifndef SURGE_STRBUF_H
#define SURGE_STRBUF_H

#include <stddef.h>

typedef struct strbuf {
  char *s;    /* NUL-terminated once anything was appended; NULL before */
  size_t len; /* characters before the NUL */
  size_t cap; /* bytes allocated */
} strbuf_t;

#define STRBUF_INIT                                                                                          \
  { NULL, 0, 0 }

void sb_putc(strbuf_t *b, char c);
void sb_putn(strbuf_t *b, const char *s, size_t n);
void sb_puts(strbuf_t *b, const char *s);
void sb_printf(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empty the text, keeping the memory. */
void sb_clear(strbuf_t *b);
/* The text so far ("" when empty); stays owned by b. */
const char *sb_str(const strbuf_t *b);
/* Hand the text to the caller (malloc'd, never NULL) and leave b empty. */
char *sb_take(strbuf_t *b);
void sb_free(strbuf_t *b);

#endif
