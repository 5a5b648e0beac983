/* Text from files (logs, checkpoints, decks) shown to people: control characters and bytes that are
 * not UTF-8 would act on the terminal (move the cursor, recolour, hide text) or show invisibly, so
 * they are written as escapes instead:
 *   newline, tab, carriage return    \n \t \r
 *   other C0 controls, DEL, bytes of invalid UTF-8     \xHH
 *   C1 controls (U+0080..U+009F), invisible or reordering characters (U+200B..U+200F zero-width and
 *   direction marks, U+202A..U+202E and U+2066..U+2069 bidirectional overrides, U+FEFF
 *   byte-order mark)                                   \u+HHHH
 * Everything else (printable ASCII and valid UTF-8 text) is kept as it is. */
#ifndef SURGE_PRINTABLE_H
#define SURGE_PRINTABLE_H

#include <stddef.h>

#include "io/strbuf.h"

/* Append s to b with the escapes above. */
void sb_put_printable(strbuf_t *b, const char *s);
/* A malloc'd escaped copy of s. */
char *printable_dup(const char *s);
/* The escaped s in buf (cut to n-1 bytes, never in the middle of an escape); returns buf. */
const char *printable(const char *s, char *buf, size_t n);
/* The invisible or reordering character (the \u+HHHH escapes above) that starts at s: its length in
 * bytes and its code point in *cp, or 0 when s starts with anything else. */
int printable_invisible_at(const char *s, unsigned *cp);
/* Whether s needs no escape. */
int printable_is_plain(const char *s);
/* The first character of s that needs an escape other than a tab or carriage return (a control
 * character, a byte of invalid UTF-8, a C1 control, an invisible or reordering character), or NULL;
 * its escape ("\x1b", "\xff", "\u+202E") in esc. */
const char *printable_first_hidden(const char *s, char esc[16]);

#endif
