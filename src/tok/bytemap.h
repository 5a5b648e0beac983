/* GPT-2's byte-to-symbol map: every byte is shown as one printable Unicode code point, so a
 * byte-level BPE vocabulary is a set of ordinary strings (vocab.json keys, merges.txt words).
 * Printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the
 * other 68 bytes map, in byte order, to U+0100, U+0101, ... (space 0x20 -> U+0120 'Ġ'). */
#ifndef SURGE_TOK_BYTEMAP_H
#define SURGE_TOK_BYTEMAP_H

#include <stddef.h>
#include <stdint.h>

/* The code point byte b is shown as. */
uint32_t bytemap_symbol(uint8_t b);
/* The byte code point cp stands for, or -1 when cp is not one of the 256 symbols. */
int bytemap_byte(uint32_t cp);
/* The i-th byte of GPT-2's order (i in 0..255: the printable ones first, then the rest), the order
 * of the first 256 ids of GPT-2's vocab.json. */
uint8_t bytemap_order(int i);

/* The symbols of bytes b[0..n) as UTF-8 into out (at most 2 bytes per byte; out holds 2n + 1),
 * NUL-terminated. Returns the length. */
size_t bytemap_show(const uint8_t *b, size_t n, char *out);
/* The bytes that the UTF-8 symbol string s[0..n) stands for, into out (at most n bytes). Returns
 * the byte count, or -1 when s is not valid UTF-8 or holds a code point that is not a symbol. */
long bytemap_unshow(const char *s, size_t n, uint8_t *out);

#endif
