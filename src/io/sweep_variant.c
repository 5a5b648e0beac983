/* Variants of a [sweep]: a variant number -> one value per swept key -> a resolved deck; the checks
 * over all variants; the configuration of one run of a program. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/error.h"
#include "io/config_schema.h"
#include "io/deck_value.h"
#include "io/sweep_impl.h"

void sweep_value(const sweep_t *s, long i, int k, strbuf_t *out) {
  const sweep_line_t *l = &s->lines[k];
  long j = s->zip ? i : i / l->stride % l->count; /* product: the last line varies fastest */
  for (int n = 0; n < l->nitems; n++) {
    if (j < l->items[n].count) {
      sweep_item_value(&l->items[n], j, out);
      return;
    }
    j -= l->items[n].count;
  }
  surge_runtime_error("sweep: value %ld of %s out of range", j, l->name);
}

/* "surge-sweep DECK --list", the deck quoted for a shell (a hint is pasted). malloc'd. */
static char *list_command(const char *deck) {
  char *const argv[] = {(char *)"surge-sweep", (char *)deck, (char *)"--list"};
  return cli_command_line(3, argv, NULL);
}

long sweep_index_arg(const sweep_t *s, const char *what, const char *arg) {
  size_t n = strlen(arg);
  int digits = n > 0 && n <= 18;
  for (size_t c = 0; c < n && digits; c++) digits = isdigit((unsigned char)arg[c]);
  long v = digits ? strtol(arg, NULL, 10) : -1;
  if (v < 0 || v >= s->count) {
    strbuf_t shown = STRBUF_INIT;
    cfg_value_printable(arg, 40, &shown);
    char *list = list_command(s->path);
    surge_input_error("%s: %s %s: the deck sweeps %ld variant%s, numbered 0..%ld (hint: %s)", s->path, what,
                      sb_str(&shown), s->count, s->count == 1 ? "" : "s", s->count - 1, list);
  }
  return v;
}

/* ---- one variant ---- */

/* What variant i sets: one deck setting per swept key (its text in vals[k], its where in wheres[k]). */
typedef struct variant {
  int n;
  deck_setting_t *set;
  strbuf_t *vals, *wheres;
} variant_t;

static void variant_init(const sweep_t *s, long i, variant_t *v) {
  v->n = s->nlines;
  v->set = xcalloc((size_t)v->n, sizeof *v->set);
  v->vals = xcalloc((size_t)v->n, sizeof *v->vals);
  v->wheres = xcalloc((size_t)v->n, sizeof *v->wheres);
  for (int k = 0; k < v->n; k++) {
    sweep_value(s, i, k, &v->vals[k]);
    sb_printf(&v->wheres[k], "%s:%d (variant %ld)", s->path, s->lines[k].line, i);
  }
  for (int k = 0; k < v->n; k++) /* the texts are complete: their addresses stay */
    v->set[k] =
        (deck_setting_t){.key = s->lines[k].key, .raw = sb_str(&v->vals[k]), .where = sb_str(&v->wheres[k])};
}

static void variant_free(variant_t *v) {
  for (int k = 0; k < v->n; k++) {
    sb_free(&v->vals[k]);
    sb_free(&v->wheres[k]);
  }
  free(v->set);
  free(v->vals);
  free(v->wheres);
}

static int digits(long x) {
  int d = 1;
  while (x >= 10) x /= 10, d++;
  return d;
}

/* "run.name=NAME-vI" for variant i: NAME is run.name resolved with the variant's values and the
 * overrides, I zero-padded to the digits of N-1. Empty when the sweep names its variants itself. */
static void name_override(const sweep_t *s, long i, const char *text, const variant_t *v, int noverrides,
                          char *const *overrides, strbuf_t *out) {
  if (s->names_itself) return;
  config_t base;
  deck_parse_variant(text, s->path, i, v->n, v->set, noverrides, overrides, &base, NULL);
  int width = digits(s->count - 1);
  if (strlen(base.run_name) + 2 + (size_t)width >= sizeof base.run_name)
    surge_input_error(
        "%s: [run] name: \"%.40s...\" leaves no room for the variant suffix -v%0*ld (hint: at most "
        "%zu characters in a sweep of %ld variants)",
        s->path, base.run_name, width, i, sizeof base.run_name - 3 - (size_t)width, s->count);
  sb_printf(out, "run.name=%s-v%0*ld", base.run_name, width, i);
}

/* The overrides, and after them the name override when there is one (pointers into name). */
static char **overrides_with_name(int noverrides, char *const *overrides, strbuf_t *name, int *n) {
  char **all = xcalloc((size_t)noverrides + 1, sizeof *all);
  for (int k = 0; k < noverrides; k++) all[k] = overrides[k];
  *n = noverrides;
  if (name->len) all[(*n)++] = name->s;
  return all;
}

void sweep_resolve(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides,
                   config_t *cfg, deck_t **out) {
  if (i < 0 || i >= s->count) surge_runtime_error("sweep: variant %ld of %ld", i, s->count);
  variant_t v;
  variant_init(s, i, &v);
  strbuf_t name = STRBUF_INIT;
  name_override(s, i, text, &v, noverrides, overrides, &name);
  int n;
  char **all = overrides_with_name(noverrides, overrides, &name, &n);
  deck_parse_variant(text, s->path, i, v.n, v.set, n, all, cfg, out);
  free(all);
  sb_free(&name);
  variant_free(&v);
}

/* "section.key=value" that -D reads back as the value: quoted when blanks at its ends would be lost. */
static char *override_arg(const char *key, const char *raw) {
  strbuf_t arg = STRBUF_INIT;
  size_t n = strlen(raw);
  int quote = n == 0 || isspace((unsigned char)raw[0]) || isspace((unsigned char)raw[n - 1]);
  sb_printf(&arg, quote ? "%s=\"%s\"" : "%s=%s", key, raw);
  return sb_take(&arg);
}

char **sweep_variant_args(const sweep_t *s, long i, const char *text, int noverrides, char *const *overrides,
                          int *n) {
  variant_t v;
  variant_init(s, i, &v);
  strbuf_t name = STRBUF_INIT;
  name_override(s, i, text, &v, noverrides, overrides, &name);
  char **args = xcalloc((size_t)v.n + (size_t)noverrides + 1, sizeof *args);
  for (int k = 0; k < v.n; k++) args[k] = override_arg(s->lines[k].name, v.set[k].raw);
  *n = v.n;
  for (int k = 0; k < noverrides; k++) args[(*n)++] = xstrdup(overrides[k]); /* over the swept values */
  if (name.len) args[(*n)++] = sb_take(&name);
  sb_free(&name);
  variant_free(&v);
  return args;
}

void sweep_free_args(char **args, int n) {
  for (int k = 0; k < n; k++) free(args[k]);
  free(args);
}

/* ---- every variant ---- */

/* One output path of every variant, to find two that share it. */
typedef struct output {
  char *path;
  long variant;
} output_t;

static int output_cmp(const void *a, const void *b) {
  const output_t *x = a, *y = b;
  int c = strcmp(x->path, y->path);
  return c ? c : (x->variant > y->variant) - (x->variant < y->variant);
}

/* path as a file system reads it, without empty and "." components (runs//a/./b/ -> runs/a/b): two
 * spellings of one path compare equal (".." is kept: it depends on links). malloc'd. */
static char *lexical_path(const char *path) {
  size_t n = strlen(path);
  char *out = xmalloc(n + 2), *o = out;
  if (path[0] == '/') *o++ = '/';
  for (const char *p = path; *p;) {
    while (*p == '/') p++;
    const char *end = p;
    while (*end && *end != '/') end++;
    if (end > p && !(end - p == 1 && *p == '.')) {
      if (o > out && o[-1] != '/') *o++ = '/';
      memcpy(o, p, (size_t)(end - p));
      o += end - p;
    }
    p = end;
  }
  if (o == out) *o++ = '.';
  *o = '\0';
  return out;
}

static void check_distinct(const sweep_t *s, const char *key, output_t *outs) {
  qsort(outs, (size_t)s->count, sizeof *outs, output_cmp);
  for (long i = 1; i < s->count; i++)
    if (strcmp(outs[i - 1].path, outs[i].path) == 0)
      surge_input_error(
          "%s: [sweep]: variants %ld and %ld both write %s = %.200s (hint: every variant needs its "
          "own files: keep run.out_dir, log.file and checkpoint.dir under ${run.name} and give "
          "each variant its own run.name)",
          s->path, outs[i - 1].variant, outs[i].variant, key, outs[i].path);
}

void sweep_check(const sweep_t *s, const char *text, int noverrides, char *const *overrides,
                 sweep_visit_fn visit, void *arg) {
  enum { NPATHS = 3 };
  static const char *const keys[NPATHS] = {"run.out_dir", "log.file", "checkpoint.dir"};
  output_t *outs[NPATHS];
  for (int p = 0; p < NPATHS; p++) outs[p] = xcalloc((size_t)s->count, sizeof *outs[p]);
  for (long i = 0; i < s->count; i++) {
    config_t cfg;
    sweep_resolve(s, i, text, noverrides, overrides, &cfg, NULL);
    if (visit) visit(i, &cfg, arg);
    const char *paths[NPATHS] = {cfg.out_dir, cfg.log_file, cfg.ckpt_dir};
    for (int p = 0; p < NPATHS; p++) outs[p][i] = (output_t){.path = lexical_path(paths[p]), .variant = i};
  }
  for (int p = 0; p < NPATHS; p++) {
    check_distinct(s, keys[p], outs[p]);
    for (long i = 0; i < s->count; i++) free(outs[p][i].path);
    free(outs[p]);
  }
}

void sweep_parse_run(const char *text, const char *path, const char *variant_arg, int check_all,
                     int noverrides, char *const *overrides, config_t *cfg, deck_t **out) {
  sweep_t *s = sweep_parse(text, path);
  if (!s) {
    if (variant_arg) {
      strbuf_t shown = STRBUF_INIT;
      cfg_value_printable(variant_arg, 40, &shown);
      surge_input_error("%s: --variant %s: the deck has no [sweep] section (hint: run it without --variant)",
                        path, sb_str(&shown));
    }
    deck_parse(text, path, noverrides, overrides, cfg, out);
    return;
  }
  if (!variant_arg)
    surge_input_error("%s sweeps %ld variant%s: pass --variant I (0..%ld) (hint: %s shows them)", path, s->count,
                      s->count == 1 ? "" : "s", s->count - 1, list_command(path));
  long i = sweep_index_arg(s, "--variant", variant_arg);
  if (check_all) sweep_check(s, text, noverrides, overrides, NULL, NULL);
  sweep_resolve(s, i, text, noverrides, overrides, cfg, out);
  sweep_free(s);
}
