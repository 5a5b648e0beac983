/* Text about a sweep's variants, as surge-sweep prints it: the table of variants, the -D arguments
 * of one, and the resolved deck of one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/deck_value.h"
#include "io/sweep_impl.h"

/* ---- the table ---- */

typedef struct names {
  char **name;            /* name[i]: run.name of variant i */
  const char **overridden; /* overridden[k]: the -D value that replaces line k's in every variant, or NULL */
} names_t;

static void collect_name(long i, const config_t *cfg, void *arg) {
  ((names_t *)arg)->name[i] = xstrdup(cfg->run_name);
}

/* A value as a table cell: in quotes when it is empty or has blanks, commas or '#', as a [sweep]
 * line would write it. */
static void cell_text(const char *raw, strbuf_t *out) {
  int quote = !*raw || strpbrk(raw, " \t,#") != NULL;
  sb_printf(out, quote ? "\"%s\"" : "%s", raw);
}

/* Cell (row i, column c) of the table: c = 0 the variant, 1..nkeys the values, nkeys + 1 the name. */
static void table_cell(const sweep_t *s, const names_t *names, long i, int c, strbuf_t *out) {
  if (c == 0) {
    sb_printf(out, "%ld", i);
  } else if (c <= s->nlines && names->overridden[c - 1]) {
    cell_text(names->overridden[c - 1], out);
  } else if (c <= s->nlines) {
    strbuf_t raw = STRBUF_INIT;
    sweep_value(s, i, c - 1, &raw);
    cell_text(sb_str(&raw), out);
    sb_free(&raw);
  } else {
    sb_puts(out, names->name[i]);
  }
}

static const char *table_header(const sweep_t *s, int c) {
  return c == 0 ? "variant" : c <= s->nlines ? s->lines[c - 1].name : "run.name";
}

/* The value of the last -D that sets line k's key (as written after '='), or NULL: it wins over the
 * swept values (doc/sweeps.md), and the table shows what runs. */
static const char *override_of(const sweep_t *s, int k, int noverrides, char *const *overrides) {
  const char *value = NULL;
  for (int o = 0; o < noverrides; o++) {
    const char *arg = overrides[o], *eq = strchr(arg, '='), *dot = eq ? memchr(arg, '.', (size_t)(eq - arg)) : NULL;
    if (!dot || dot - arg >= 64 || eq - dot - 1 >= 64) continue; /* (the deck's parse refuses it) */
    char section[64], key[64];
    snprintf(section, sizeof section, "%.*s", (int)(dot - arg), arg);
    snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
    if (cfg_find_key_or_former(section, key) == s->lines[k].key) value = eq + 1;
  }
  return value;
}

void sweep_print_list(const sweep_t *s, const char *text, int noverrides, char *const *overrides, FILE *f) {
  names_t names = {xcalloc((size_t)s->count, sizeof(char *)), xcalloc((size_t)s->nlines, sizeof(char *))};
  sweep_check(s, text, noverrides, overrides, collect_name, &names);
  for (int k = 0; k < s->nlines; k++) {
    names.overridden[k] = override_of(s, k, noverrides, overrides);
    if (names.overridden[k])
      surge_warning("-D %s=%s replaces the swept values of %s (%s:%d) in every variant", s->lines[k].name,
                    names.overridden[k], s->lines[k].name, s->path, s->lines[k].line);
  }
  int ncols = s->nlines + 2; /* the name last, unless the sweep sets it (a column of its own already) */
  for (int k = 0; k < s->nlines; k++)
    if (!strcmp(s->lines[k].name, "run.name")) ncols = s->nlines + 1;
  size_t *width = xcalloc((size_t)ncols, sizeof *width);
  strbuf_t cell = STRBUF_INIT;
  for (int c = 0; c < ncols; c++) width[c] = strlen(table_header(s, c));
  for (long i = 0; i < s->count; i++)
    for (int c = 0; c < ncols; c++) {
      sb_clear(&cell);
      table_cell(s, &names, i, c, &cell);
      if (cell.len > width[c]) width[c] = cell.len;
    }
  for (long i = -1; i < s->count; i++) { /* row -1: the header */
    for (int c = 0; c < ncols; c++) {
      sb_clear(&cell);
      if (i < 0) sb_puts(&cell, table_header(s, c));
      else table_cell(s, &names, i, c, &cell);
      if (c == ncols - 1) fprintf(f, "%s\n", sb_str(&cell));
      else fprintf(f, "%-*s  ", (int)width[c], sb_str(&cell));
    }
  }
  sb_free(&cell);
  free(width);
  for (long i = 0; i < s->count; i++) free(names.name[i]);
  free(names.name);
  free(names.overridden);
}

/* ---- one variant ---- */

/* Append s as one shell word: as is when it has only characters no shell treats specially, else in
 * single quotes. */
static void shell_word(const char *s, strbuf_t *out) {
  const char *safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+@%^-";
  if (*s && strspn(s, safe) == strlen(s)) {
    sb_puts(out, s);
    return;
  }
  sb_putc(out, '\'');
  for (; *s; s++) {
    if (*s == '\'') sb_puts(out, "'\\''");
    else sb_putc(out, *s);
  }
  sb_putc(out, '\'');
}

void sweep_print_args(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides,
                      FILE *f) {
  int n;
  char **args = sweep_variant_args(s, i, text, noverrides, overrides, &n);
  strbuf_t line = STRBUF_INIT;
  for (int k = 0; k < n; k++) {
    sb_clear(&line);
    shell_word(args[k], &line);
    fprintf(f, "-D %s\n", sb_str(&line));
  }
  sb_free(&line);
  sweep_free_args(args, n);
}

char *sweep_deck_text(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides) {
  config_t cfg;
  sweep_resolve(s, i, text, noverrides, overrides, &cfg, NULL);
  char *resolved = deck_resolved_text(&cfg);
  strbuf_t out = STRBUF_INIT;
  sb_printf(&out, "# Variant %ld of the %ld that ", i, s->count);
  cfg_value_printable(s->path, 200, &out); /* a comment line, whatever the path holds */
  sb_puts(&out, " sweeps (surge-sweep --write-deck); run it with surge-train.\n");
  sb_puts(&out, resolved);
  free(resolved);
  return sb_take(&out);
}
