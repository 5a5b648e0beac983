/* GPT-2's pre-tokenization: text is cut into pieces by the regular expression
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (contractions, letters, digits, other, whitespace) with Unicode letter, number and space classes
 * from PCRE2 for every code point. Bytes that are not valid UTF-8 match nothing; each run of them
 * is a piece of its own, so every byte of the text lands in exactly one piece. */
#ifndef SURGE_TOK_PRETOK_H
#define SURGE_TOK_PRETOK_H

#include <stddef.h>
#include <stdint.h>

typedef struct pretok pretok_t;

pretok_t *pretok_new(void); /* compiles the expression (JIT where PCRE2 has it) */
void pretok_free(pretok_t *p);
/* Call fn(piece, length, ctx) for each piece of s[0..n), in order. */
typedef void (*pretok_fn)(const uint8_t *piece, size_t n, void *ctx);
void pretok_split(pretok_t *p, const uint8_t *s, size_t n, pretok_fn fn, void *ctx);

#endif
