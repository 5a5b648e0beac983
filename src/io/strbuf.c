#include "io/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static void sb_reserve(strbuf_t *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) cap = surge_mul_size(cap, 2, "text buffer");
  b->s = xrealloc(b->s, cap);
  b->cap = cap;
}

void sb_putn(strbuf_t *b, const char *s, size_t n) {
  sb_reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void sb_putc(strbuf_t *b, char c) { sb_putn(b, &c, 1); }

void sb_puts(strbuf_t *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_printf(strbuf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) surge_runtime_error("formatting text failed");
  sb_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void sb_clear(strbuf_t *b) {
  b->len = 0;
  if (b->s) b->s[0] = '\0';
}

const char *sb_str(const strbuf_t *b) { return b->s ? b->s : ""; }

char *sb_take(strbuf_t *b) {
  char *s = b->s ? b->s : xstrdup("");
  b->s = NULL;
  b->len = b->cap = 0;
  return s;
}

void sb_free(strbuf_t *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}
