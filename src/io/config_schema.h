/* The deck schema: the rows of every part (core/keys.h) merged into one table, grouped by section
 * in deck order. The parser, the validation, the resolved-deck echo and doc/deck.md are all driven
 * by it. The trainer's own keys (run, model, data, train, the layout's name, log, checkpoint,
 * backend) are the core part here, with fields in config_t; every other part declares its rows
 * beside its options struct, and the list of parts with the deck's sections is
 * src/layout/deck_parts.c. Adding a key is one row and one field in its part's files. */
#ifndef SURGE_CONFIG_SCHEMA_H
#define SURGE_CONFIG_SCHEMA_H

#include <stddef.h>

#include "core/keys.h"
#include "io/config.h"

typedef struct cfg_section {
  const char *name;
  const char *doc;
} cfg_section_t;

/* The merged schema, built when the program starts: sections in deck order, and every part's keys
 * grouped by section in that same order (within a section: the parts in list order, each part's
 * rows in its own order). A merged row's offsets are into config_t. */
extern const cfg_section_t *cfg_sections;
extern int cfg_nsections;
extern const cfg_key_t *cfg_keys;
extern int cfg_nkeys;

/* What the schema merges (src/layout/deck_parts.c): the sections in deck order, and the parts
 * besides the core one (cfg_core_options). */
extern const cfg_section_t cfg_deck_sections[];
extern const int cfg_deck_nsections;
extern const cfg_part_t *const cfg_deck_parts[];
extern const int cfg_deck_nparts;
/* The trainer's own keys: fields of config_t. */
extern const cfg_part_t cfg_core_options;

/* Index of a section / of section.key in the tables, -1 if there is none. */
int cfg_find_section(const char *section);
int cfg_find_key(const char *section, const char *key);
/* The same, where section.key may also be a key's former name (cfg_key_t.was): what a deck line,
 * -D or [sweep] names. */
int cfg_find_key_or_former(const char *section, const char *key);
struct deck;
/* Every part's check of keys against each other, in list order (the core part's first). */
void cfg_check_parts(const struct deck *d, const config_t *cfg);

/* The candidate closest to `word`: edit distance <= 2 (a swap of neighbours counts 1) and below
 * the word's length, or else one a prefix of the other; NULL if none is close. Candidates: n
 * strings (n < 0: NULL-terminated). */
const char *cfg_closest(const char *word, const char *const *cands, int n);
/* The "section.key" name of the schema closest to `name` (by cfg_closest), written into buf; NULL
 * if none is close. */
const char *cfg_closest_key(const char *name, char *buf, size_t size);

#endif
