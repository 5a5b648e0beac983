/* A byte-level BPE vocabulary (GPT-2 / Hugging Face): vocab.json maps each token, written in
 * GPT-2's byte symbols (tok/bytemap.h), to its id 0..n-1; merges.txt lists the merges in rank
 * order, one "A B" per line (after an optional "#version" line), each joining two tokens into a
 * third that vocab.json holds. Tokens of the form <|name|> are special (end of text): text never
 * encodes to them; they decode to their name. Everything is checked as it is read: a pair that does
 * not agree is refused naming the line (exit 2). */
#ifndef SURGE_TOK_BPE_H
#define SURGE_TOK_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tok/u64map.h"

#define BPE_VOCAB_MAX 65536             /* ids fit the shards' uint16 */
#define BPE_FILE_MAX ((size_t)64 << 20) /* the most bytes of vocab.json or merges.txt */
#define BPE_EOT "<|endoftext|>"

typedef struct bpe {
  int n;               /* vocabulary size (ids 0..n-1) */
  uint8_t **tok;       /* (n) the bytes of each token (a special one: its name) */
  uint32_t *len;       /* (n) their lengths */
  uint8_t *special;    /* (n) 1 for a special token */
  int eot;             /* the id of <|endoftext|>, -1 when the vocabulary has none */
  int byte_id[256];    /* the id of each single byte */
  u64map_t by_bytes;   /* hash of a normal token's bytes -> id */
  u64map_t merges;     /* (a << 32 | b) -> (rank << 32 | id of the merged token) */
  int nmerges;
  char hash[17];       /* FNV-1a of vocab.json then merges.txt as read, 16 hex digits */
} bpe_t;

/* Read and check a vocab.json + merges.txt pair. */
bpe_t *bpe_load(const char *vocab_path, const char *merges_path);
/* A tokenizer directory's two files, DIR/vocab.json and DIR/merges.txt, into vocab and merges of n
 * bytes each; a DIR too long for them is an input error naming it (never a name cut short). */
void bpe_dir_files(const char *dir, char *vocab, char *merges, size_t n);
/* The tokenizer of a directory (bpe_dir_files' two files, bpe_load). */
bpe_t *bpe_load_dir(const char *dir);
void bpe_free(bpe_t *b);
/* The id of a normal token's bytes, -1 when the vocabulary has none. */
int bpe_lookup(const bpe_t *b, const uint8_t *bytes, size_t n);
/* Write the vocabulary as vocab.json + merges.txt (new files; an existing one is an input error). */
void bpe_save(const bpe_t *b, const char *vocab_path, const char *merges_path);

/* Building one (the trainer, tests): an empty vocabulary of the 256 bytes in GPT-2's order, then
 * tokens added as merges and specials. */
bpe_t *bpe_new_bytes(void);
int bpe_add_merge(bpe_t *b, int left, int right); /* returns the new token's id */
int bpe_add_special(bpe_t *b, const char *name);

/* A growing array of token ids. */
typedef struct ids {
  uint32_t *v;
  size_t n, cap;
} ids_t;
void ids_push(ids_t *a, uint32_t id);
void ids_free(ids_t *a);

/* Encode bytes text[0..n) (any bytes: invalid UTF-8 is kept, byte for byte) by pre-tokenizing with
 * GPT-2's rule (tok/pretok.h) and merging each piece; appends the ids to out. */
typedef struct pretok pretok_t;
void bpe_encode(const bpe_t *b, pretok_t *p, const uint8_t *text, size_t n, ids_t *out);
/* Merge one piece's bytes by rank (the lowest rank first, the leftmost of equal ones, as Hugging
 * Face's BPE and GPT-2's encoder do); appends its ids to out. */
void bpe_merge_piece(const bpe_t *b, const uint8_t *piece, size_t n, ids_t *out);
/* The bytes of ids[0..n) appended to a malloc'd buffer (*buf, *len, *cap); special tokens as their
 * names unless skip_special. An id >= b->n is an input error naming its position. */
void bpe_decode(const bpe_t *b, const uint32_t *ids, size_t n, int skip_special, uint8_t **buf, size_t *len,
                size_t *cap);

#endif
