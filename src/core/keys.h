/* Deck keys as data, declared by the part that owns them (ior's way: each module declares its
 * option rows beside its own options struct). A part (the compressor, multiplexing, a layout's
 * grid, the trainer's own keys) has one options struct and a table of rows, one row per deck key:
 * section, name, type, default, accepted range or values, where the value lands in that struct,
 * one line of meaning. The deck's schema (io/config_schema.h) only merges the parts' rows (their
 * order and sections: src/layout/deck_parts.c); the parser, the validation, the resolved-deck echo
 * and doc/deck.md read the merged table. A new key is one row and one field, in the part's files.
 *
 * A part reads its values from a parsed configuration with cfg_part: its struct lives in the
 * configuration's part area (io/config.h), so parts below the deck never see config_t's fields. */
#ifndef SURGE_CORE_KEYS_H
#define SURGE_CORE_KEYS_H

#include <stddef.h>

typedef enum cfg_type {
  CFG_INT,      /* decimal integer in [imin, imax]; field is int or a 64-bit integer (size says which) */
  CFG_FLOAT,    /* finite number in [fmin, fmax] (either end open when *_open); field is double */
  CFG_BOOL,     /* true/false/yes/no/1/0; field is int */
  CFG_STRING,   /* free text of imin..size-1 characters; field is char[size] */
  CFG_NAME,     /* like CFG_STRING, restricted to A-Z a-z 0-9 . _ - and starting with a letter or digit */
  CFG_ENUM,     /* one of values[]; field is char[size] */
  CFG_INT_LIST, /* 1..size/sizeof(int) comma-separated integers, each in [imin, imax]; field is int[],
                   the entry count goes to the int at count_offset */
} cfg_type_t;

typedef struct cfg_key {
  const char *section;
  const char *key;
  cfg_type_t type;
  const char *def;           /* default as deck text (may use ${...}); NULL: the key is required */
  long long imin, imax;      /* CFG_INT, CFG_INT_LIST entries; string types: imin = minimum length */
  double fmin, fmax;         /* CFG_FLOAT */
  int fmin_open, fmax_open;  /* CFG_FLOAT: the bound itself is excluded */
  const char *const *values; /* CFG_ENUM: accepted values, NULL-terminated */
  size_t offset, size;       /* the field: in the part's struct (a part's rows), in config_t (merged) */
  size_t count_offset;       /* CFG_INT_LIST: offset of the int receiving the entry count (same base) */
  const char *doc;           /* one line of meaning */
  const char *was;           /* NULL, or "section.key": the key's former name, which decks, -D and
                              * [sweep] may still use (stored decks of logs, model files) */
} cfg_key_t;

struct config;

/* What a part's check found wrong: the key to blame and the message (a hint as " (hint: ...)"). */
typedef struct cfg_problem {
  char key[80];    /* "section.key" */
  char or_key[80]; /* "", or the key to blame instead where `key` was left at its default */
  char msg[768];
} cfg_problem_t;

typedef struct cfg_part {
  const char *name;      /* the part, for messages ("compress") */
  const cfg_key_t *keys; /* its rows, grouped by section in deck order */
  int nkeys;
  size_t size;           /* sizeof its options struct, which gets a slot in config_t's part area;
                          * 0: the rows are fields of config_t itself (the trainer's own keys) */
  /* Checks that involve several keys (each key alone is already in range): 0 when the values
   * agree, else 1 with the problem filled in (the parser blames its key, file:line, exit 2). It
   * may read other parts' values (cfg_part). NULL: none. */
  int (*check)(const struct config *cfg, cfg_problem_t *p);
} cfg_part_t;

/* The part's options struct in a parsed configuration (zeroed, then every row's value); a
 * runtime error if the part is not one the schema merged. */
const void *cfg_part(const struct config *cfg, const cfg_part_t *part);
void *cfg_part_rw(struct config *cfg, const cfg_part_t *part);

/* Rows of a part's table: the file defines CFG_OPTS as its options struct's type first. */
#define CFG_FIELD(f) .offset = offsetof(CFG_OPTS, f), .size = sizeof(((CFG_OPTS *)0)->f)
#define CFG_VALUES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CFG_ROW(s, k, t, d, f, text) .section = s, .key = k, .type = t, .def = d, CFG_FIELD(f), .doc = text
#define CFG_INT_KEY(s, k, f, d, lo, hi, text)                                                                \
  { CFG_ROW(s, k, CFG_INT, d, f, text), .imin = lo, .imax = hi }
#define CFG_FLOAT_KEY(s, k, f, d, lo, lo_open, hi, hi_open, text)                                            \
  { CFG_ROW(s, k, CFG_FLOAT, d, f, text), .fmin = lo, .fmin_open = lo_open, .fmax = hi, .fmax_open = hi_open }
#define CFG_BOOL_KEY(s, k, f, d, text)                                                                       \
  { CFG_ROW(s, k, CFG_BOOL, d, f, text) }
#define CFG_STRING_KEY(s, k, f, d, minlen, text)                                                             \
  { CFG_ROW(s, k, CFG_STRING, d, f, text), .imin = minlen }
#define CFG_NAME_KEY(s, k, f, d, text)                                                                       \
  { CFG_ROW(s, k, CFG_NAME, d, f, text), .imin = 1 }
#define CFG_ENUM_KEY(s, k, f, d, vals, text)                                                                 \
  { CFG_ROW(s, k, CFG_ENUM, d, f, text), .values = vals }
#define CFG_LIST_KEY(s, k, f, count_f, d, lo, hi, text)                                                      \
  { CFG_ROW(s, k, CFG_INT_LIST, d, f, text), .imin = lo, .imax = hi, .count_offset = offsetof(CFG_OPTS, count_f) }
#define CFG_NROWS(rows) ((int)(sizeof rows / sizeof rows[0]))
enum { CFG_CLOSED = 0, CFG_OPEN = 1 };
#define CFG_MAX_COUNT 1000000000LL /* steps, samples, intervals */

#endif
