#include "io/deck_lex.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "io/printable.h"

#define MAX_SHOWN_NAME 60 /* longest name quoted in messages */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static int is_stop(char c, const char *stops) { return c && strchr(stops, c) != NULL; }

/* The parser's fail function, which does not return. */
static _Noreturn void lex_fail(const deck_lexer_t *lx, const char *hint, const char *msg) {
  lx->fail(lx->ctx, hint, msg);
  surge_runtime_error("deck lexer: the parser's fail function returned (%s)", msg);
}

void deck_lex_init(deck_lexer_t *lx, const char *text, deck_lex_fail_fn fail, void *ctx) {
  *lx = (deck_lexer_t){.next = text ? text : "", .number = 0, .fail = fail, .ctx = ctx};
}

int deck_lex_next(deck_lexer_t *lx, deck_line_t *line) {
  const char *p = lx->next;
  if (!*p) return 0;
  const char *eol = strchr(p, '\n');
  if (!eol) eol = p + strlen(p);
  lx->next = *eol ? eol + 1 : eol;
  const char *end = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
  line->number = ++lx->number;
  line->start = p;
  line->p = deck_lex_blanks(p, end);
  line->end = end;
  line->kind = line->p == end || *line->p == '#' ? DECK_LINE_BLANK
               : *line->p == '['                 ? DECK_LINE_HEADER
                                                 : DECK_LINE_TEXT;
  return 1;
}

const char *deck_lex_blanks(const char *p, const char *end) {
  while (p < end && is_blank(*p)) p++;
  return p;
}

void deck_lex_plain(const deck_lexer_t *lx, const deck_line_t *line) {
  for (const char *q = line->start; q < line->end; q++) {
    char msg[128];
    unsigned cp = 0;
    if (iscntrl((unsigned char)*q) && *q != '\t') {
      snprintf(msg, sizeof msg, "control character 0x%02x in the line", (unsigned char)*q);
      lex_fail(lx, "decks are plain text", msg);
    }
    if (!printable_invisible_at(q, &cp)) continue;
    if (cp == 0xfeff && q == line->start && line->number == 1)
      lex_fail(lx, "save the deck as UTF-8 without it, e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' DECK",
               "the deck starts with a byte-order mark (U+FEFF, bytes EF BB BF), invisible in most editors");
    snprintf(msg, sizeof msg, "invisible character U+%04X in the line (column %d)", cp, (int)(q - line->start) + 1);
    lex_fail(lx, "delete it: decks are plain text, and it hides or reorders what the line shows", msg);
  }
}

const char *deck_lex_header(const deck_line_t *line, char *name, size_t n, const char **hint) {
  const char *p = line->p, *end = line->end;
  *hint = "write [section]";
  if (n) name[0] = '\0';
  const char *close = memchr(p, ']', (size_t)(end - p));
  if (!close) return "section header without ']'";
  const char *b = deck_lex_blanks(p + 1, close), *e = close;
  while (e > b && is_blank(e[-1])) e--;
  if (e == b) return "empty section name";
  snprintf(name, n, "%.*s", (int)(e - b), b);
  const char *rest = deck_lex_blanks(close + 1, end);
  if (rest < end && *rest != '#') {
    *hint = "a comment starts with '#'";
    return "text after the section header";
  }
  *hint = NULL;
  return NULL;
}

const char *deck_lex_assignment(const deck_lexer_t *lx, const deck_line_t *line, strbuf_t *name,
                                const char *hint) {
  const char *p = line->p, *end = line->end;
  while (p < end && !is_blank(*p) && *p != '=' && *p != '#') p++;
  sb_clear(name);
  sb_putn(name, line->p, (size_t)(p - line->p));
  p = deck_lex_blanks(p, end);
  if (p >= end || *p != '=') {
    char msg[MAX_SHOWN_NAME + 32];
    snprintf(msg, sizeof msg, "expected '=' after \"%.*s\"", MAX_SHOWN_NAME, sb_str(name));
    lex_fail(lx, hint, msg);
  }
  if (name->len == 0) lex_fail(lx, hint, "no key before '='");
  return p + 1;
}

/* One escape at p ('\' then # $ \ or "): appended as written. */
static const char *lex_escape(const deck_lexer_t *lx, const char *p, const char *end, strbuf_t *out) {
  const char *hint = "the escapes are \\# \\$ \\\\ \\\"";
  if (p + 1 >= end) lex_fail(lx, hint, "a lone '\\' ends the value");
  if (!p[1] || !strchr("#$\\\"", p[1])) {
    char msg[32];
    snprintf(msg, sizeof msg, "unknown escape '\\%c'", p[1]);
    lex_fail(lx, hint, msg);
  }
  sb_putn(out, p, 2);
  return p + 2;
}

const char *deck_lex_value(const deck_lexer_t *lx, const char *p, const char *end, const char *stops,
                           strbuf_t *out, int *quoted) {
  const char *quote_hint = "quote the whole value; a literal quote is \\\"";
  p = deck_lex_blanks(p, end);
  *quoted = p < end && *p == '"';
  if (*quoted) {
    for (p++;;) {
      if (p >= end) lex_fail(lx, "end the value with '\"'", "unterminated quote");
      if (*p == '"') break;
      if (*p == '\\') p = lex_escape(lx, p, end, out);
      else sb_putc(out, *p++);
    }
    p = deck_lex_blanks(p + 1, end);
    if (p < end && !is_stop(*p, stops)) lex_fail(lx, quote_hint, "text after the closing quote");
    return p;
  }
  size_t start = out->len;
  while (p < end && !is_stop(*p, stops)) {
    if (*p == '"') lex_fail(lx, quote_hint, "a quote inside an unquoted value");
    if (*p == '\\') p = lex_escape(lx, p, end, out);
    else sb_putc(out, *p++);
  }
  while (out->len > start && is_blank(out->s[out->len - 1])) out->s[--out->len] = '\0'; /* blanks have no escape */
  return p;
}
