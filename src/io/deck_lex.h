/* The lexer of deck text, shared by the deck parser (io/deck.c: sections of keys, -D overrides)
 * and the [sweep] parser (io/sweep.c): lines and their numbers, blanks, '#' comments, "[section]"
 * headers, "name = ..." and values with "..." quotes and the escapes \# \$ \\ \" (kept as written;
 * the deck's expansion applies them). Syntax: doc/deck.md.
 *
 * The lexer says what is wrong and gives a hint; the parser's fail function names the place in
 * the parser's own format ("DECK:LINE: [section] key: ...", "DECK:LINE: [sweep] key: value N: ...")
 * and exits. */
#ifndef SURGE_DECK_LEX_H
#define SURGE_DECK_LEX_H

#include <stddef.h>

#include "io/strbuf.h"

/* Report `msg` (with `hint`, NULL for none) at the parser's current place; must not return. */
typedef void (*deck_lex_fail_fn)(void *ctx, const char *hint, const char *msg);

typedef struct deck_lexer {
  const char *next; /* start of the next line */
  int number;       /* lines read so far: the number of the current line */
  deck_lex_fail_fn fail;
  void *ctx;
} deck_lexer_t;

typedef enum deck_line_kind {
  DECK_LINE_BLANK,  /* only blanks, or a comment */
  DECK_LINE_HEADER, /* starts with '[' */
  DECK_LINE_TEXT,   /* anything else: "name = value" */
} deck_line_kind_t;

/* One line: [p, end) is its text after leading blanks, without "\n" or "\r\n". */
typedef struct deck_line {
  int number; /* 1-based */
  deck_line_kind_t kind;
  const char *start; /* the line before its leading blanks */
  const char *p, *end;
} deck_line_t;

/* Lex NUL-terminated text (text may be NULL when only the value functions are used, e.g. for a
 * command-line override). */
void deck_lex_init(deck_lexer_t *lx, const char *text, deck_lex_fail_fn fail, void *ctx);
/* The next line into *line: 1, or 0 at the end of the text. */
int deck_lex_next(deck_lexer_t *lx, deck_line_t *line);

/* Blanks (space, tab) from p skipped, not beyond end. */
const char *deck_lex_blanks(const char *p, const char *end);
/* Fail on a control character (other than tab) anywhere in the line: decks are plain text. */
void deck_lex_plain(const deck_lexer_t *lx, const deck_line_t *line);
/* The name of a header line "[ name ]  # comment" into name (n bytes, truncated): NULL, or what is
 * wrong (no ']', an empty name, text after the header) with its hint in *hint; the caller decides
 * whether that is an error. */
const char *deck_lex_header(const deck_line_t *line, char *name, size_t n, const char **hint);
/* The name before '=' of a text line into *name (emptied first): where the value starts, after
 * the '='. Fails when there is no '=' or no name; hint says what this parser's lines look like. */
const char *deck_lex_assignment(const deck_lexer_t *lx, const deck_line_t *line, strbuf_t *name,
                                const char *hint);
/* One value from p: blanks around it dropped; either "..." (quoted: *quoted = 1), after which only
 * blanks may come before a stop character or the end, or unquoted text up to the first stop
 * character (stops: e.g. "#" for a deck line, ",#" for a sweep's list, "" for a -D override),
 * which may not hold a quote. Escapes are checked and kept as written. Appends the value to out;
 * returns where it ends: end, or at a stop character. */
const char *deck_lex_value(const deck_lexer_t *lx, const char *p, const char *end, const char *stops,
                           strbuf_t *out, int *quoted);

#endif
