/* Parameter sweeps: a deck's [sweep] section turns one deck into N numbered variants, one run each
 * (syntax and examples: doc/sweeps.md).
 *
 *   [sweep]
 *   mode = product                    # every combination, the first line varying slowest; or zip
 *   train.lr = 1e-3:4e-3:1e-3         # start:stop:step (stop included when it lands), or
 *   model.mlp_hidden = "64", "64,64"  # a list of values; log:start:stop:count is geometric
 *
 * Variant I is the deck with each swept key set to its I-th combination of values, then the -D
 * overrides; its run.name gets the suffix "-vI" (zero-padded to the digits of N-1) unless the sweep
 * sets run.name or run.out_dir itself, so every variant writes its own files. Every error is one
 * line naming DECK:LINE and exits with code 2 (io/deck.h). Nothing here runs a shell. */
#ifndef SURGE_SWEEP_H
#define SURGE_SWEEP_H

#include <stdio.h>

#include "io/config.h"
#include "io/deck.h"
#include "io/strbuf.h"

/* Most variants one sweep may describe, checked before anything is expanded. */
#define SWEEP_MAX_VARIANTS 100000L

typedef struct sweep sweep_t;

/* The [sweep] section(s) of deck text (`path` names it in messages), every line checked: keys are
 * "section.key" of the deck's schema, values lists or ranges, the count within the limit. NULL if
 * the deck has no [sweep] section. Each value is checked against its key when variants are
 * resolved (sweep_resolve, sweep_check). Free with sweep_free. */
sweep_t *sweep_parse(const char *text, const char *path);

long sweep_count(const sweep_t *s);             /* N: the number of variants, at least 1 */
int sweep_nkeys(const sweep_t *s);              /* swept keys, in deck order */
const char *sweep_key(const sweep_t *s, int k); /* "section.key" of swept key k */
/* 1 when the sweep sets run.name or run.out_dir itself (variant names get no "-vI" suffix). */
int sweep_names_itself(const sweep_t *s);
/* Append the value of swept key k in variant i as the deck writes it (quotes removed, escapes kept). */
void sweep_value(const sweep_t *s, long i, int k, strbuf_t *out);

/* A variant number from the command line: plain decimal digits in 0..N-1, or exit 2 naming `what`
 * (e.g. "--variant") and the deck. */
long sweep_index_arg(const sweep_t *s, const char *what, const char *arg);

/* Variant i resolved: deck text, its swept values (errors blame their [sweep] line and the variant),
 * then the overrides, then the run name suffix. As deck_parse (io/deck.h): exits with code 2 on any
 * error; *out (when not NULL) receives the deck. */
void sweep_resolve(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides,
                   config_t *cfg, deck_t **out);

/* The -D arguments ("section.key=value", malloc'd, *n of them) that set variant i on top of the
 * deck, in the order they apply: its swept values, the command's own overrides, and, when
 * suffixed, its run.name. Free with sweep_free_args. */
char **sweep_variant_args(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides,
                          int *n);
void sweep_free_args(char **args, int n);

/* Resolve every variant (exits 2 at the first that is not valid), calling visit (may be NULL) on
 * each, then check that no two variants share run.out_dir, log.file or checkpoint.dir. */
typedef void (*sweep_visit_fn)(long i, const config_t *cfg, void *arg);
void sweep_check(const sweep_t *s, const char *text, int noverrides, char *const *overrides,
                 sweep_visit_fn visit, void *arg);

/* The configuration of one run of a program: deck text, then for a deck with a [sweep] section the
 * values of variant `variant_arg` (required there: "DECK sweeps N variants: pass --variant I
 * (0..N-1)"; refused on a deck without one; NULL when not given), then the overrides. check_all:
 * first sweep_check every variant (rank 0 does it once; the other ranks then need not). */
void sweep_parse_run(const char *text, const char *path, const char *variant_arg, int check_all,
                     int noverrides, char *const *overrides, config_t *cfg, deck_t **out);

/* What surge-sweep prints. The table of every variant (checked by sweep_check): its number, the
 * value of each swept key as the deck writes it, its run.name. */
void sweep_print_list(const sweep_t *s, const char *text, int noverrides, char *const *overrides, FILE *f);
/* sweep_variant_args of variant i, one "-D section.key=value" a line, each argument one shell word
 * (single-quoted where a shell would change it). */
void sweep_print_args(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides,
                      FILE *f);
/* The resolved deck of variant i (deck_resolved_text with a comment line naming the variant):
 * no [sweep] section, every key; surge-train runs it as that variant. malloc'd. */
char *sweep_deck_text(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides);

void sweep_free(sweep_t *s);

#endif
