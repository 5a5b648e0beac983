/* Deck parsing: lines -> raw values per schema key, then -D overrides, then ${...} expansion, then
 * conversion and validation into config_t, then the checks that involve several keys. */
#include "io/deck.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/infile.h"
#include "io/config_schema.h"
#include "io/deck_lex.h"
#include "io/deck_value.h"
#include "io/strbuf.h"
#include "nn/zoo.h"

#define MAX_EXPANDED 4096 /* longest value after ${...} expansion */
#define MAX_SHOWN_ARG 200 /* longest -D argument quoted in messages */

typedef enum { FROM_DEFAULT, FROM_DECK, FROM_OVERRIDE } origin_t;
typedef enum { UNRESOLVED, RESOLVING, RESOLVED } state_t;

typedef struct deck_entry {
  origin_t origin;
  int line;    /* FROM_DECK: line number */
  char *raw;   /* value as written: quotes and comment removed, escapes (\# \$ \\ \") kept */
  char *value; /* raw after ${...} expansion, escapes applied */
  char *where; /* "DECK:LINE", "-D section.key=value", "DECK (default value)" or "DECK (variant I, default value)" */
  state_t state;
} deck_entry_t;

struct deck {
  char *path;
  deck_entry_t *e; /* one per schema key: e[i] belongs to cfg_keys[i] */
  int *stack;      /* keys being expanded, outermost first (cycle reports) */
  int depth;
  int sweep_line; /* line of the first [sweep] header, 0 if none */
};

/* ---- errors: "WHERE: [section] key: message (hint: ...)" ---- */

static _Noreturn void fail(const char *where, const cfg_key_t *k, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static _Noreturn void fail(const char *where, const cfg_key_t *k, const char *hint, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (k && hint && *hint)
    surge_input_error("%s: [%s] %s: %s (hint: %s)", where, k->section, k->key, msg, hint);
  if (k) surge_input_error("%s: [%s] %s: %s", where, k->section, k->key, msg);
  if (hint && *hint) surge_input_error("%s: %s (hint: %s)", where, msg, hint);
  surge_input_error("%s: %s", where, msg);
}

static void list_sections(strbuf_t *out) {
  for (int i = 0; i < cfg_nsections; i++) sb_printf(out, "%s[%s]", i ? ", " : "", cfg_sections[i].name);
}

static _Noreturn void fail_unknown_section(const char *where, const char *section) {
  const char *names[64] = {NULL};
  int n = cfg_nsections < 64 ? cfg_nsections : 64;
  for (int i = 0; i < n; i++) names[i] = cfg_sections[i].name;
  if (n < 64) names[n++] = "sweep"; /* io/sweep.c reads it */
  const char *close = cfg_closest(section, names, n);
  strbuf_t hint = STRBUF_INIT;
  if (close) {
    sb_printf(&hint, "did you mean [%s]?", close);
  } else {
    sb_puts(&hint, "sections: ");
    list_sections(&hint);
  }
  fail(where, NULL, sb_str(&hint), "unknown section [%s]", section);
}

static _Noreturn void fail_unknown_key(const char *where, const char *section, const char *key) {
  const char *names[256] = {NULL};
  int n = 0, elsewhere = -1;
  for (int i = 0; i < cfg_nkeys && n < 256; i++) {
    if (strcmp(cfg_keys[i].section, section) == 0) names[n++] = cfg_keys[i].key;
    else if (strcmp(cfg_keys[i].key, key) == 0 && elsewhere < 0) elsewhere = i;
  }
  const char *close = cfg_closest(key, names, n);
  strbuf_t hint = STRBUF_INIT;
  if (close) {
    sb_printf(&hint, "did you mean %s?", close);
  } else if (elsewhere >= 0) {
    sb_printf(&hint, "did you mean [%s] %s? it belongs to section [%s]", cfg_keys[elsewhere].section, key,
              cfg_keys[elsewhere].section);
  } else {
    sb_printf(&hint, "keys of [%s]: ", section);
    for (int i = 0; i < n; i++) sb_printf(&hint, "%s%s", i ? ", " : "", names[i]);
  }
  fail(where, NULL, sb_str(&hint), "[%s] %s: unknown key", section, key);
}

static void set_entry(deck_entry_t *e, origin_t origin, int line, char *raw, const char *where) {
  free(e->raw);
  free(e->where);
  e->origin = origin;
  e->line = line;
  e->raw = raw;
  e->where = xstrdup(where);
}

/* ---- the deck's lines (tokens: io/deck_lex.h) ---- */

/* Where the lexer's problems are blamed: "DECK:LINE" or "-D ...", and the key once it is known. */
typedef struct blame {
  const char *where;
  const cfg_key_t *k;
} blame_t;

static void lex_fail(void *ctx, const char *hint, const char *msg) {
  const blame_t *b = ctx;
  fail(b->where, b->k, hint, "%s", msg);
}

/* The value of key k as written, from p to end: quotes and (with comments) a trailing comment
 * removed, escapes kept. Malloc'd. */
static char *lex_value(const deck_lexer_t *lx, const char *p, const char *end, int comments) {
  strbuf_t out = STRBUF_INIT;
  int quoted;
  deck_lex_value(lx, p, end, comments ? "#" : "", &out, &quoted);
  return sb_take(&out);
}

typedef struct line_ctx {
  deck_t *d;
  deck_lexer_t lx;
  blame_t blame;
  int section; /* index into cfg_sections, -1 before the first header, IN_SWEEP in [sweep] */
} line_ctx_t;

#define IN_SWEEP (-2) /* the lines of a [sweep] section are read by io/sweep.c */

static void parse_section_header(line_ctx_t *c, const deck_line_t *l) {
  char name[64];
  const char *hint, *wrong = deck_lex_header(l, name, sizeof name, &hint);
  if (wrong) fail(c->blame.where, NULL, hint, "%s", wrong);
  if (strcmp(name, "sweep") == 0) {
    c->section = IN_SWEEP;
    if (!c->d->sweep_line) c->d->sweep_line = l->number;
    return;
  }
  c->section = cfg_find_section(name);
  if (c->section < 0) fail_unknown_section(c->blame.where, name);
}

static void parse_assignment(line_ctx_t *c, const deck_line_t *l) {
  strbuf_t name = STRBUF_INIT;
  const char *value = deck_lex_assignment(&c->lx, l, &name, "write key = value");
  char key[64];
  snprintf(key, sizeof key, "%s", sb_str(&name));
  sb_free(&name);
  if (c->section < 0) {
    strbuf_t hint = STRBUF_INIT;
    sb_puts(&hint, "put it under a section header: ");
    list_sections(&hint);
    fail(c->blame.where, NULL, sb_str(&hint), "key \"%s\" before any [section]", key);
  }
  const char *section = cfg_sections[c->section].name;
  int i = cfg_find_key_or_former(section, key);
  if (i < 0) fail_unknown_key(c->blame.where, section, key);
  deck_entry_t *e = &c->d->e[i];
  if (e->origin == FROM_DECK)
    fail(c->blame.where, &cfg_keys[i], "keep one of them", "set twice: first at %s, again at line %d", e->where,
         l->number);
  c->blame.k = &cfg_keys[i];
  set_entry(e, FROM_DECK, l->number, lex_value(&c->lx, value, l->end, 1), c->blame.where);
}

static void parse_lines(deck_t *d, const char *text) {
  line_ctx_t c = {.d = d, .section = -1};
  deck_lex_init(&c.lx, text, lex_fail, &c.blame);
  strbuf_t where = STRBUF_INIT;
  deck_line_t l;
  while (deck_lex_next(&c.lx, &l)) {
    sb_clear(&where);
    sb_printf(&where, "%s:%d", d->path, l.number);
    c.blame = (blame_t){.where = sb_str(&where), .k = NULL};
    deck_lex_plain(&c.lx, &l);
    if (l.kind == DECK_LINE_HEADER) parse_section_header(&c, &l);
    else if (l.kind == DECK_LINE_TEXT && c.section != IN_SWEEP) parse_assignment(&c, &l);
  }
  sb_free(&where);
}

/* ---- -D section.key=value ---- */

static int background_prefix; /* set once, before any thread, by deck_accept_background_prefix */

void deck_accept_background_prefix(void) { background_prefix = 1; }

const char *deck_override_body(const char *arg) {
  size_t n = strlen(DECK_BACKGROUND_PREFIX);
  return background_prefix && strncmp(arg, DECK_BACKGROUND_PREFIX, n) == 0 ? arg + n : arg;
}

static void apply_override(deck_t *d, const char *typed) {
  strbuf_t where = STRBUF_INIT;
  sb_puts(&where, "-D ");
  cfg_value_printable(typed, MAX_SHOWN_ARG, &where); /* blamed as typed, prefix and all */
  const char *arg = deck_override_body(typed);
  const char *eq = strchr(arg, '=');
  const char *dot = eq ? memchr(arg, '.', (size_t)(eq - arg)) : NULL;
  if (!dot)
    fail(sb_str(&where), NULL, "write -D section.key=value, e.g. -D train.lr=0.1",
         "expected section.key=value");
  char section[64], key[64];
  snprintf(section, sizeof section, "%.*s", (int)(dot - arg), arg);
  snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
  if (!strcmp(section, "sweep")) /* (fail_unknown_section would ask "did you mean [sweep]?") */
    fail(sb_str(&where), NULL, "write the variants in the deck's [sweep] section; -D sets one key of every variant",
         "-D cannot set the [sweep] section");
  if (cfg_find_section(section) < 0) fail_unknown_section(sb_str(&where), section);
  int i = cfg_find_key_or_former(section, key);
  if (i < 0) fail_unknown_key(sb_str(&where), section, key);
  blame_t blame = {.where = sb_str(&where), .k = &cfg_keys[i]};
  deck_lexer_t lx;
  deck_lex_init(&lx, NULL, lex_fail, &blame);
  set_entry(&d->e[i], FROM_OVERRIDE, 0, lex_value(&lx, eq + 1, eq + strlen(eq), 0), sb_str(&where));
  sb_free(&where);
}

/* ---- ${section.key} and ${ENV} ---- */

static void resolve(deck_t *d, int i);

static _Noreturn void fail_cycle(deck_t *d, int i, int j) {
  strbuf_t chain = STRBUF_INIT;
  int from = 0;
  while (d->stack[from] != j) from++;
  for (int s = from; s < d->depth; s++)
    sb_printf(&chain, "%s.%s -> ", cfg_keys[d->stack[s]].section, cfg_keys[d->stack[s]].key);
  sb_printf(&chain, "%s.%s", cfg_keys[j].section, cfg_keys[j].key);
  fail(d->e[i].where, &cfg_keys[i], "break the loop with a literal value", "expansion cycle %s",
       sb_str(&chain));
}

static int is_env_name(const char *s) {
  if (!isalpha((unsigned char)*s) && *s != '_') return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

/* Append the value of variable `name` (a deck key "section.key" or an environment variable). */
static void expand_variable(deck_t *d, int i, const char *name, strbuf_t *out) {
  const char *where = d->e[i].where;
  const cfg_key_t *k = &cfg_keys[i];
  const char *dot = strchr(name, '.');
  if (!dot) {
    if (!is_env_name(name))
      fail(where, k, "write ${section.key} or ${ENV_VAR}; a literal '$' is \\$", "bad variable name ${%s}",
           name);
    const char *v = getenv(name);
    if (!v)
      fail(where, k, "set it in the environment, or write a literal '$' as \\$", "undefined variable ${%s}",
           name);
    sb_puts(out, v);
    return;
  }
  char section[64];
  snprintf(section, sizeof section, "%.*s", (int)(dot - name), name);
  int j = cfg_find_key(section, dot + 1);
  if (j < 0) {
    char buf[128];
    strbuf_t hint = STRBUF_INIT;
    const char *close = cfg_closest_key(name, buf, sizeof buf);
    if (close) sb_printf(&hint, "did you mean ${%s}?", close);
    else sb_puts(&hint, "${section.key} names a key of the deck (doc/deck.md)");
    fail(where, k, sb_str(&hint), "undefined variable ${%s}", name);
  }
  if (d->e[j].state == RESOLVING) fail_cycle(d, i, j);
  resolve(d, j);
  sb_puts(out, d->e[j].value);
}

static void resolve(deck_t *d, int i) {
  deck_entry_t *e = &d->e[i];
  if (e->state == RESOLVED) return;
  e->state = RESOLVING;
  d->stack[d->depth++] = i;
  strbuf_t out = STRBUF_INIT;
  for (const char *p = e->raw; *p;) {
    if (*p == '\\') {
      sb_putc(&out, p[1]);
      p += 2;
    } else if (p[0] == '$' && p[1] == '{') {
      const char *close = strchr(p + 2, '}');
      if (!close) fail(e->where, &cfg_keys[i], "write ${name}; a literal '$' is \\$", "unterminated ${");
      char name[128];
      if (close - p - 2 >= (long)sizeof name) fail(e->where, &cfg_keys[i], NULL, "variable name too long");
      snprintf(name, sizeof name, "%.*s", (int)(close - p - 2), p + 2);
      expand_variable(d, i, name, &out);
      p = close + 1;
    } else {
      sb_putc(&out, *p++);
    }
    if (out.len > MAX_EXPANDED)
      fail(e->where, &cfg_keys[i], NULL, "value longer than %d characters after expansion", MAX_EXPANDED);
  }
  e->value = sb_take(&out);
  d->depth--;
  e->state = RESOLVED;
}

/* ---- validation ---- */

static int origin_rank(const deck_entry_t *e) {
  return e->origin == FROM_DECK ? 0 : e->origin == FROM_OVERRIDE ? 1 : 2;
}

/* Deck lines first (in line order), then overrides, then defaults: the first error reported is
 * the first one in the file. */
static void validation_order(const deck_t *d, int *order) {
  for (int i = 0; i < cfg_nkeys; i++) order[i] = i;
  for (int i = 1; i < cfg_nkeys; i++) { /* insertion sort: a few dozen keys */
    int x = order[i], j = i;
    for (; j > 0; j--) {
      const deck_entry_t *a = &d->e[order[j - 1]], *b = &d->e[x];
      if (origin_rank(a) < origin_rank(b) || (origin_rank(a) == origin_rank(b) && a->line <= b->line)) break;
      order[j] = order[j - 1];
    }
    order[j] = x;
  }
}

static void check_required(const deck_t *d) {
  for (int i = 0; i < cfg_nkeys; i++) {
    const cfg_key_t *k = &cfg_keys[i];
    if (d->e[i].raw) continue;
    strbuf_t hint = STRBUF_INIT;
    sb_printf(&hint, "add \"%s = ...\" under [%s], %s: ", k->key, k->section,
              k->type == CFG_ENUM ? "one of" : "accepted");
    cfg_value_range(k, &hint);
    fail(d->path, k, sb_str(&hint), "required key is missing");
  }
}

const char *deck_blamed_key(const deck_t *d, const char *prefer, const char *other) {
  return deck_is_default(d, prefer) ? other : prefer;
}

int deck_key_changed(const config_t *c, const char *section_key) {
  const char *dot = strchr(section_key, '.');
  char section[32];
  if (!dot || dot - section_key >= (long)sizeof section)
    surge_runtime_error("deck_key_changed(%s): not a section.key name", section_key);
  snprintf(section, sizeof section, "%.*s", (int)(dot - section_key), section_key);
  int i = cfg_find_key(section, dot + 1);
  if (i < 0) surge_runtime_error("deck_key_changed(%s): no such key", section_key);
  const cfg_key_t *k = &cfg_keys[i];
  config_t *def = xcalloc(1, sizeof *def);
  strbuf_t msg = STRBUF_INIT, hint = STRBUF_INIT;
  int differs = cfg_value_store(k, k->def, def, &msg, &hint) != 0 ||
                memcmp((const char *)def + k->offset, (const char *)c + k->offset, k->size) != 0;
  sb_free(&msg);
  sb_free(&hint);
  free(def);
  return differs;
}

/* [run] sample_every: samples of a gpt, each after an evaluation, within its context. */
static void check_sampling(const deck_t *d, const config_t *c) {
  if (c->sample_every == 0) return;
  if (strcmp(c->zoo, "gpt") != 0)
    deck_key_error(d, "run.sample_every", "samples need a language model, but [model] zoo = %s (hint: "
                   "sample_every = 0)", c->zoo);
  if (c->eval_every > 0 && c->sample_every % c->eval_every != 0)
    deck_key_error(d, "run.sample_every", "%ld is not a multiple of eval_every (%ld): a sample follows an "
                   "evaluation (hint: sample_every = %ld)", c->sample_every, c->eval_every,
                   (c->sample_every / c->eval_every + 1) * c->eval_every);
  int context = zoo_opts(c)->gpt.context;
  if (c->sample_tokens >= context)
    deck_key_error(d, deck_blamed_key(d, "run.sample_tokens", "model.gpt_context"),
                   "sample_tokens (%ld) must be below gpt_context (%d): a sample starts from one token and fits "
                   "the context", c->sample_tokens, context);
}

/* Checks that involve several keys (each key alone is already in range). */
static void check_across_keys(const deck_t *d, const config_t *c) {
  check_sampling(d, c);
  cfg_check_parts(d, c); /* each part's own */
}

static void validate(deck_t *d, config_t *cfg) {
  int *order = xmalloc(sizeof(int) * (size_t)cfg_nkeys);
  validation_order(d, order);
  for (int n = 0; n < cfg_nkeys; n++) {
    int i = order[n];
    resolve(d, i);
    strbuf_t msg = STRBUF_INIT, hint = STRBUF_INIT;
    if (cfg_value_store(&cfg_keys[i], d->e[i].value, cfg, &msg, &hint) != 0)
      fail(d->e[i].where, &cfg_keys[i], sb_str(&hint), "%s", sb_str(&msg));
  }
  free(order);
  check_across_keys(d, cfg);
}

/* ---- public ---- */

/* variant: the [sweep] variant this deck is, or -1: named where a default value is blamed. */
static deck_t *deck_new(const char *path, long variant) {
  deck_t *d = xcalloc(1, sizeof *d);
  d->path = xstrdup(path);
  d->e = xcalloc((size_t)cfg_nkeys, sizeof *d->e);
  d->stack = xcalloc((size_t)cfg_nkeys, sizeof *d->stack);
  strbuf_t where = STRBUF_INIT;
  if (variant < 0) sb_printf(&where, "%s (default value)", path);
  else sb_printf(&where, "%s (variant %ld, default value)", path, variant);
  for (int i = 0; i < cfg_nkeys; i++)
    if (cfg_keys[i].def) set_entry(&d->e[i], FROM_DEFAULT, 0, xstrdup(cfg_keys[i].def), sb_str(&where));
  sb_free(&where);
  return d;
}

/* variant >= 0: settings of that [sweep] variant follow (possibly none); -1: a [sweep] section is refused. */
static void parse_deck(const char *text, const char *path, long variant, int nsettings,
                       const deck_setting_t *settings, int noverrides, char *const *overrides, config_t *cfg,
                       deck_t **out) {
  deck_t *d = deck_new(path, variant);
  parse_lines(d, text);
  if (d->sweep_line && variant < 0) {
    strbuf_t where = STRBUF_INIT;
    sb_printf(&where, "%s:%d", path, d->sweep_line);
    fail(sb_str(&where), NULL,
         "run one of them: surge-train --variant I; surge-sweep DECK --count counts them",
         "the deck's [sweep] section describes several runs");
  }
  for (int i = 0; i < nsettings; i++) {
    if (settings[i].key < 0 || settings[i].key >= cfg_nkeys)
      surge_runtime_error("deck setting for key index %d: no such key", settings[i].key);
    /* ranked with the overrides for the validation order */
    set_entry(&d->e[settings[i].key], FROM_OVERRIDE, 0, xstrdup(settings[i].raw), settings[i].where);
  }
  for (int i = 0; i < noverrides; i++) apply_override(d, overrides[i]);
  check_required(d);
  memset(cfg, 0, sizeof *cfg);
  validate(d, cfg);
  if (out) *out = d;
  else deck_free(d);
}

void deck_parse(const char *text, const char *path, int noverrides, char *const *overrides, config_t *cfg,
                deck_t **out) {
  parse_deck(text, path, -1, 0, NULL, noverrides, overrides, cfg, out);
}

void deck_parse_variant(const char *text, const char *path, long variant, int nsettings,
                        const deck_setting_t *settings, int noverrides, char *const *overrides, config_t *cfg,
                        deck_t **out) {
  parse_deck(text, path, variant, nsettings, settings, noverrides, overrides, cfg, out);
}

char *deck_read_file(const char *path) {
  FILE *f = infile_fopen(path, "pass the deck file itself");
  if (!f) surge_input_error("%s: cannot open the deck: %s (hint: check the path)", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0) surge_input_error("%s: cannot read the deck: %s", path, strerror(errno));
  if (st.st_size > DECK_MAX_BYTES)
    surge_input_error("%s: the deck is %lld bytes, more than the %d allowed (hint: is this the right file?)",
                      path, (long long)st.st_size, DECK_MAX_BYTES);
  char *text = xmalloc(DECK_MAX_BYTES + 2);
  size_t n = fread(text, 1, DECK_MAX_BYTES + 1, f);
  int failed = ferror(f);
  fclose(f);
  if (failed) surge_input_error("%s: cannot read the deck: %s", path, strerror(errno));
  if (n > DECK_MAX_BYTES)
    surge_input_error("%s: the deck is over %d bytes (hint: is this the right file?)", path, DECK_MAX_BYTES);
  if (memchr(text, '\0', n))
    surge_input_error("%s: the deck has NUL bytes (hint: decks are plain text)", path);
  text[n] = '\0';
  return xrealloc(text, n + 1);
}

void deck_load(const char *path, int noverrides, char *const *overrides, config_t *cfg, deck_t **out) {
  char *text = deck_read_file(path);
  deck_parse(text, path, noverrides, overrides, cfg, out);
  free(text);
}

const char *deck_path(const deck_t *d) { return d ? d->path : NULL; }

/* The entry of "section.key", or NULL (no such key; no deck: a config built in code). */
static const deck_entry_t *entry_of(const deck_t *d, const char *section_key) {
  const char *dot = strchr(section_key, '.');
  if (!d || !dot || dot - section_key >= 64) return NULL;
  char section[64];
  snprintf(section, sizeof section, "%.*s", (int)(dot - section_key), section_key);
  int i = cfg_find_key(section, dot + 1);
  return i < 0 ? NULL : &d->e[i];
}

const char *deck_where(const deck_t *d, const char *section_key) {
  const deck_entry_t *e = entry_of(d, section_key);
  return e ? e->where : NULL;
}

int deck_is_default(const deck_t *d, const char *section_key) {
  const deck_entry_t *e = entry_of(d, section_key);
  return e && e->origin == FROM_DEFAULT;
}

int deck_is_override(const deck_t *d, const char *section_key) {
  const deck_entry_t *e = entry_of(d, section_key);
  return e && e->origin == FROM_OVERRIDE;
}

_Noreturn void deck_key_error(const deck_t *d, const char *section_key, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *where = d ? deck_where(d, section_key) : NULL;
  const char *dot = strchr(section_key, '.');
  int slen = dot ? (int)(dot - section_key) : 0;
  surge_input_error("%s: [%.*s] %s: %s", where ? where : "deck", slen, section_key,
                    dot ? dot + 1 : section_key, msg);
}

void deck_free(deck_t *d) {
  if (!d) return;
  for (int i = 0; i < cfg_nkeys; i++) {
    free(d->e[i].raw);
    free(d->e[i].value);
    free(d->e[i].where);
  }
  free(d->e);
  free(d->stack);
  free(d->path);
  free(d);
}
