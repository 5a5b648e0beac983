/* Input decks: INI-like text that configures a run (syntax and every key: doc/deck.md).
 *
 *   [section]            # a section header; keys below belong to it
 *   key = value          # trailing comment; '\#' is a literal '#', "..." keeps blanks
 *   out_dir = runs/${run.name}-${USER}    # another key's resolved value / an environment variable
 *
 * Command-line overrides "section.key=value" (surge-train -D) replace deck values before expansion
 * and validation. Every error is one line "DECK:LINE: [section] key: what is wrong (hint: ...)"
 * (an override names "-D section.key=value" instead of DECK:LINE) and exits with code 2: nothing
 * else happens before the deck is valid. The schema (io/config_schema.c) defines the keys. */
#ifndef SURGE_DECK_H
#define SURGE_DECK_H

#include <stdio.h>

#include "io/config.h"

/* Where each key's value came from, kept to blame a key for errors found later (model shapes...). */
typedef struct deck deck_t;

/* Largest deck file deck_read_file accepts. */
#define DECK_MAX_BYTES (1 << 20)

/* surge-train's overrides of its in-process background's deck, -D bg:section.key=value: they keep
 * the prefix, so that an error names the override as it was typed. Only a program that called
 * deck_accept_background_prefix reads them (surge-train, once at its start); in any other the
 * prefix is part of the section's name, an unknown section. */
#define DECK_BACKGROUND_PREFIX "bg:"
void deck_accept_background_prefix(void);

/* An override's "section.key=value", after DECK_BACKGROUND_PREFIX when it has one and it is accepted. */
const char *deck_override_body(const char *arg);

/* Parse deck text (already read; `path` names it in messages), apply overrides "section.key=value"
 * (or DECK_BACKGROUND_PREFIX "section.key=value"),
 * expand, validate, and fill cfg (zeroed first, so the struct, padding included, depends only on
 * the resolved values). *out (when out is not NULL) receives the deck for deck_where/deck_key_error;
 * free it with deck_free. Exits with code 2 on any error. */
void deck_parse(const char *text, const char *path, int noverrides, char *const *overrides, config_t *cfg,
                deck_t **out);

/* A key that one variant of the deck's [sweep] section sets (io/sweep.h). */
typedef struct deck_setting {
  int key;           /* index into cfg_keys */
  const char *raw;   /* the value as a deck line writes it: quotes removed, escapes kept */
  const char *where; /* blamed by errors and deck_where: "DECK:LINE (variant I)" */
} deck_setting_t;

/* deck_parse for variant `variant` of a deck with a [sweep] section (its number named where a default
 * value is blamed): the settings replace the deck's own values, then the overrides replace theirs.
 * deck_parse refuses a deck with a [sweep] section (its lines are read by io/sweep.c), so no program
 * runs a sweep as if it were one run. */
void deck_parse_variant(const char *text, const char *path, long variant, int nsettings,
                        const deck_setting_t *settings, int noverrides, char *const *overrides, config_t *cfg,
                        deck_t **out);

/* Read a deck file into a malloc'd string: errors (missing, unreadable, not a regular file, over
 * DECK_MAX_BYTES, NUL bytes) name the path and exit with code 2. With MPI, rank 0 reads and
 * broadcasts the text; every rank then runs deck_parse on it. */
char *deck_read_file(const char *path);

/* deck_read_file then deck_parse. */
void deck_load(const char *path, int noverrides, char *const *overrides, config_t *cfg, deck_t **out);

/* Every key, sections in deck order, defaults included, values resolved: a valid deck that
 * reproduces cfg exactly (deck_parse of it gives a byte-identical config_t). malloc'd. */
char *deck_resolved_text(const config_t *cfg);

/* Where "section.key" got its value: "DECK:LINE", "-D section.key=value", "DECK (default value)" or
 * "DECK (variant I, default value)"; NULL for a key the schema does not have, or when d is NULL (a
 * config built in code, as benchmarks do). The string lives as long as d. */
const char *deck_where(const deck_t *d, const char *section_key);
/* 1 when "section.key" has the schema's default (neither the deck nor -D set it); 0 when d is NULL. */
int deck_is_default(const deck_t *d, const char *section_key);
/* 1 when "section.key" was set by -D or a [sweep] variant (the last word on it); 0 when d is NULL. */
int deck_is_override(const deck_t *d, const char *section_key);
/* The deck's file (NULL when d is NULL). */
const char *deck_path(const deck_t *d);

/* Blame a key for an error found after parsing, in the deck error format: prints
 * "WHERE: [section] key: <fmt...>" (WHERE from deck_where) and exits with code 2. Put a hint in the
 * message as " (hint: ...)". d may be NULL (WHERE is then "deck"). */
_Noreturn void deck_key_error(const deck_t *d, const char *section_key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The key an error about two keys blames: `prefer` where the deck or -D set it, else `other`. */
const char *deck_blamed_key(const deck_t *d, const char *prefer, const char *other);
/* Whether section.key holds another value in cfg than its default (for checks of one part's keys
 * against another's: a key left at its default never fails them). */
int deck_key_changed(const config_t *cfg, const char *section_key);

void deck_free(deck_t *d);

/* doc/deck.md: the syntax (comments, quoting, escapes, expansion, -D) and every key with its type,
 * default, accepted range or values and meaning, grouped by section. */
void deck_write_reference_md(FILE *f);

#endif
