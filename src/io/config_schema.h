/* The deck schema: one row per deck key (section, key, type, default, accepted range or values,
 * where it lands in config_t, one line of meaning). The parser, the validation, the resolved-deck
 * echo and doc/deck.md are all driven by this table, so adding a key is adding one row here and
 * one field in io/config.h. */
#ifndef SURGE_CONFIG_SCHEMA_H
#define SURGE_CONFIG_SCHEMA_H

#include <stddef.h>

#include "io/config.h"

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

typedef struct cfg_section {
  const char *name;
  const char *doc;
} cfg_section_t;

typedef struct cfg_key {
  const char *section;
  const char *key;
  cfg_type_t type;
  const char *def;           /* default as deck text (may use ${...}); NULL: the key is required */
  long long imin, imax;      /* CFG_INT, CFG_INT_LIST entries; string types: imin = minimum length */
  double fmin, fmax;         /* CFG_FLOAT */
  int fmin_open, fmax_open;  /* CFG_FLOAT: the bound itself is excluded */
  const char *const *values; /* CFG_ENUM: accepted values, NULL-terminated */
  size_t offset, size;       /* the field in config_t */
  size_t count_offset;       /* CFG_INT_LIST: offset of the int receiving the entry count */
  const char *doc;           /* one line of meaning */
} cfg_key_t;

/* Sections in deck order, and keys grouped by section in that same order. */
extern const cfg_section_t cfg_sections[];
extern const int cfg_nsections;
extern const cfg_key_t cfg_keys[];
extern const int cfg_nkeys;

/* Index of a section / of section.key in the tables, -1 if there is none. */
int cfg_find_section(const char *section);
int cfg_find_key(const char *section, const char *key);

/* The candidate closest to `word`: edit distance <= 2 (a swap of neighbours counts 1) and below
 * the word's length, or else one a prefix of the other; NULL if none is close. Candidates: n
 * strings (n < 0: NULL-terminated). */
const char *cfg_closest(const char *word, const char *const *cands, int n);
/* The "section.key" name of the schema closest to `name` (by cfg_closest), written into buf; NULL
 * if none is close. */
const char *cfg_closest_key(const char *name, char *buf, size_t size);

#endif
