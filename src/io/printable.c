#include "io/printable.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (2 to 4 bytes, s[0] >= 0x80) and its code point, or 0
 * when the bytes there are not valid UTF-8 (overlong forms, surrogates and values past U+10FFFF
 * included). */
static int utf8_sequence(const unsigned char *s, unsigned *cp) {
  unsigned c = s[0];
  int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n) return 0;
  unsigned v = c & (0x7fu >> n);
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0; // also stops at the NUL
    v = v << 6 | (s[i] & 0x3fu);
  }
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

/* Code points that do nothing visible or change how the text around them shows. */
static int invisible(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

int printable_invisible_at(const char *s, unsigned *cp) {
  const unsigned char *p = (const unsigned char *)s;
  if (p[0] < 0x80) return 0;
  int n = utf8_sequence(p, cp);
  return n && invisible(*cp) ? n : 0;
}

/* The escape of the character at s into esc (empty when it needs none); returns its length in s. */
static int escape_at(const unsigned char *s, char esc[16]) {
  esc[0] = '\0';
  unsigned c = s[0], cp;
  if (c == '\n' || c == '\t' || c == '\r') {
    snprintf(esc, 16, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
    return 1;
  }
  if (c < 0x20 || c == 0x7f) {
    snprintf(esc, 16, "\\x%02x", c);
    return 1;
  }
  if (c < 0x80) return 1;
  int n = utf8_sequence(s, &cp);
  if (!n) {
    snprintf(esc, 16, "\\x%02x", c);
    return 1;
  }
  if (invisible(cp)) snprintf(esc, 16, "\\u+%04X", cp);
  return n;
}

void sb_put_printable(strbuf_t *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    char esc[16];
    int n = escape_at(p, esc);
    if (esc[0]) sb_puts(b, esc);
    else sb_putn(b, (const char *)p, (size_t)n);
    p += n;
  }
}

char *printable_dup(const char *s) {
  strbuf_t b = STRBUF_INIT;
  sb_put_printable(&b, s);
  return sb_take(&b);
}

const char *printable(const char *s, char *buf, size_t n) {
  if (!n) return buf;
  size_t len = 0;
  const unsigned char *p = (const unsigned char *)s;
  buf[0] = '\0';
  while (*p) {
    char esc[16];
    int k = escape_at(p, esc);
    const char *piece = esc[0] ? esc : (const char *)p;
    size_t plen = esc[0] ? strlen(esc) : (size_t)k;
    if (len + plen >= n) break;
    memcpy(buf + len, piece, plen);
    buf[len += plen] = '\0';
    p += k;
  }
  return buf;
}

const char *printable_first_hidden(const char *s, char esc[16]) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = escape_at(p, esc);
    if (esc[0] && *p != '\t' && *p != '\r') return (const char *)p;
    p += n;
  }
  esc[0] = '\0';
  return NULL;
}

int printable_is_plain(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    char esc[16];
    int n = escape_at(p, esc);
    if (esc[0]) return 0;
    p += n;
  }
  return 1;
}
