/* The vocabulary of a model to generate from, as its deck's [data] section says: bytes (source =
 * text: token t is byte t), the run's tokenizer (source = tokens with [data] tokenizer: GPT-2 style
 * BPE, tok/bpe.h), or bare ids (tokens without a tokenizer, synthetic data: prompts as ids only). */
#ifndef SURGE_GEN_VOCAB_H
#define SURGE_GEN_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "io/config.h"
#include "io/deck.h"
#include "tok/bpe.h"

enum { GEN_BYTE_VOCAB = 256 }; /* a byte-level model's vocabulary: the text and synthetic sources' */

typedef struct gen_vocab {
  int classes;      /* ids 0..classes-1 */
  int bytes;        /* 1: byte-level */
  bpe_t *bpe;       /* the tokenizer, or NULL */
  char no_text[160]; /* why text cannot be encoded ("" when it can) */
} gen_vocab_t;

/* From cfg's [data]; model_vocab is what the model file says of the vocabulary it was trained with
 * ("SIZE" or "SIZE:HASH", "" or NULL when it says nothing): a tokenizer or size that does not match
 * it is an input error naming both. */
void gen_vocab_open(gen_vocab_t *v, const config_t *cfg, const deck_t *deck, const char *model_vocab);
void gen_vocab_free(gen_vocab_t *v);
/* What a model file recorded of its vocabulary (model_vocab: "SIZE" or "SIZE:HASH"; "" or NULL: not
 * checked) against `classes` ids, which `given_by` names, and a tokenizer (NULL: none) loaded from
 * dir: another size or another tokenizer's hash is an input error naming both, with `hint`. */
void gen_vocab_check_recorded(const char *model_vocab, int classes, const char *given_by, const bpe_t *bpe,
                              const char *dir, const char *hint);
/* Text (n bytes) to ids appended to out; an input error (v->no_text) where the vocabulary has no
 * text. */
void gen_vocab_encode(const gen_vocab_t *v, const uint8_t *text, size_t n, ids_t *out);
/* 1 if ids can be written as text (bytes or a tokenizer). */
int gen_vocab_has_text(const gen_vocab_t *v);
/* The bytes of ids[0..n) appended to a malloc'd buffer (*buf, *len, *cap). */
void gen_vocab_decode(const gen_vocab_t *v, const uint32_t *ids, size_t n, uint8_t **buf, size_t *len, size_t *cap);
/* ids[0..n) as text for people (io/printable.h): decoded, control characters, invalid UTF-8 and NUL
 * bytes escaped; the ids in brackets where the vocabulary has no text. malloc'd. */
char *gen_vocab_printable(const gen_vocab_t *v, const uint32_t *ids, size_t n);

#endif
