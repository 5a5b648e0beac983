/* The [sweep] section: its lines -> swept keys with lists and ranges of values -> the number of
 * variants and how a variant number picks one value per key. Other sections are left to io/deck.c. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/config_schema.h"
#include "io/deck_lex.h"
#include "io/sweep_impl.h"

/* Relative slack of float ranges: (stop - start) / step within this of a whole number lands. */
#define RANGE_TOLERANCE 1e-9
#define MAX_SHOWN_VALUE 60 /* longest value quoted in messages */

static const char *limit_hint(char buf[96]) {
  snprintf(buf, 96, "a sweep may have at most %ld variants", SWEEP_MAX_VARIANTS);
  return buf;
}

/* ---- errors: "DECK:LINE: [sweep] section.key: message (hint: ...)" ---- */

static _Noreturn void sweep_fail(const sweep_t *s, int line, const char *key, const char *hint,
                                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static _Noreturn void sweep_fail(const sweep_t *s, int line, const char *key, const char *hint,
                                 const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  strbuf_t out = STRBUF_INIT;
  sb_printf(&out, "%s:%d: [sweep]", s->path, line);
  if (key) sb_printf(&out, " %.*s", MAX_SHOWN_VALUE, key);
  sb_printf(&out, ": %s", msg);
  if (hint && *hint) sb_printf(&out, " (hint: %s)", hint);
  surge_input_error("%s", sb_str(&out));
}

/* ---- the key of a line ---- */

static void list_sections(strbuf_t *out) {
  for (int i = 0; i < cfg_nsections; i++) sb_printf(out, "%s%s", i ? ", " : "", cfg_sections[i].name);
}

/* Index of "section.key" in the schema, or a one-line error with a "did you mean". */
static int find_swept_key(const sweep_t *s, int line, const char *name) {
  const char *dot = strchr(name, '.');
  if (dot && dot - name < 64) {
    char section[64];
    snprintf(section, sizeof section, "%.*s", (int)(dot - name), name);
    int k = cfg_find_key_or_former(section, dot + 1);
    if (k >= 0) return k;
  }
  char buf[128];
  strbuf_t hint = STRBUF_INIT;
  const char *close = cfg_closest_key(name, buf, sizeof buf);
  for (int i = 0; !close && !dot && i < cfg_nkeys; i++) /* "lr": the key without its section */
    if (strcmp(cfg_keys[i].key, name) == 0) {
      snprintf(buf, sizeof buf, "%s.%s", cfg_keys[i].section, name);
      close = buf;
    }
  if (close) {
    sb_printf(&hint, "did you mean %s?", close);
  } else {
    sb_puts(&hint, "a swept key is section.key, e.g. train.lr; sections: ");
    list_sections(&hint);
  }
  sweep_fail(s, line, name, sb_str(&hint), dot ? "unknown key" : "expected section.key or mode");
}

/* ---- values as written (tokens: io/deck_lex.h) ---- */

/* Where the lexer's problems are blamed: the line, its key, the value's number (0: none). */
typedef struct blame {
  const sweep_t *s;
  int line;
  const char *key;
  int nth;
} blame_t;

static void lex_fail(void *ctx, const char *hint, const char *msg) {
  const blame_t *b = ctx;
  if (b->nth) sweep_fail(b->s, b->line, b->key, hint, "value %d: %s", b->nth, msg);
  sweep_fail(b->s, b->line, b->key, hint, "%s", msg);
}

/* Value number nth of line `line` (key named `key`) starting at p: "..." or unquoted text up to
 * ',' or '#', blanks around it dropped. Sets *quoted; returns where it ends (at ',', '#' or end). */
static const char *lex_word(const sweep_t *s, int line, const char *key, int nth, const char *p,
                            const char *end, strbuf_t *out, int *quoted) {
  blame_t blame = {s, line, key, nth};
  deck_lexer_t lx;
  deck_lex_init(&lx, NULL, lex_fail, &blame);
  p = deck_lex_value(&lx, p, end, ",#", out, quoted);
  if (!*quoted && out->len == 0)
    sweep_fail(s, line, key, "write \"\" for an empty string; a comma inside a value needs quotes",
               "value %d is empty", nth);
  return p;
}

/* ---- ranges: start:stop:step and log:start:stop:count ---- */

static int is_integer_text(const char *t) {
  t += *t == '+' || *t == '-';
  if (!*t) return 0;
  for (; *t; t++)
    if (!isdigit((unsigned char)*t)) return 0;
  return 1;
}

/* A finite decimal number written in full ("1e-3", "-2", ".5"; not "inf" or hex). */
static int parse_number(const char *t, double *v) {
  const char *p = t + (*t == '+' || *t == '-');
  if (!isdigit((unsigned char)*p) && *p != '.') return 0;
  if (strpbrk(t, "xXpP")) return 0;
  char *end = NULL;
  *v = strtod(t, &end);
  return end && end != t && !*end && isfinite(*v);
}

static void format_number(double v, strbuf_t *out) {
  if (v == 0) v = 0;          /* no "-0" */
  sb_printf(out, "%.15g", v); /* 15 digits: the drift of start + j*step rounds away */
}

#define RANGE_PARTS 4

/* Split text at ':' into at most RANGE_PARTS parts (copied into buf); returns the count, or
 * RANGE_PARTS + 1 when there are more. */
static int split_colons(const char *text, char buf[RANGE_PARTS][64], int *too_long) {
  int n = 0;
  *too_long = 0;
  for (const char *p = text;; n++) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (n == RANGE_PARTS) return RANGE_PARTS + 1;
    if (len >= 64) *too_long = 1;
    snprintf(buf[n], 64, "%.*s", (int)(len < 64 ? len : 63), p);
    if (!e) return n + 1;
    p = e + 1;
  }
}

/* 1 when every ':'-separated part of text is a number (text "made of numbers and colons only"). */
static int numbers_and_colons(const char *text) {
  for (const char *p = text;;) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char part[64];
    double v;
    if (len >= sizeof part) return 0;
    snprintf(part, sizeof part, "%.*s", (int)len, p);
    if (!parse_number(part, &v)) return 0;
    if (!e) return 1;
    p = e + 1;
  }
}

static _Noreturn void too_many_values(const sweep_t *s, int line, const char *key, int nth,
                                      const char *count) {
  char hint[96];
  sweep_fail(s, line, key, limit_hint(hint), "value %d: the range has %s values", nth, count);
}

static void int_range(const sweep_t *s, int line, const char *key, int nth, char part[][64],
                      sweep_item_t *it) {
  long long v[3];
  for (int i = 0; i < 3; i++) {
    errno = 0;
    v[i] = strtoll(part[i], NULL, 10);
    if (errno == ERANGE) sweep_fail(s, line, key, NULL, "value %d: %s is too large", nth, part[i]);
  }
  long long start = v[0], stop = v[1], step = v[2];
  const char *hint = "a range is start:stop:step, the step towards stop";
  if (step == 0) sweep_fail(s, line, key, hint, "value %d: the step is 0", nth);
  if ((stop > start && step < 0) || (stop < start && step > 0))
    sweep_fail(s, line, key, hint, "value %d: from %lld a step of %lld never reaches %lld", nth, start, step,
               stop);
  unsigned long long span = stop >= start ? (unsigned long long)stop - (unsigned long long)start
                                          : (unsigned long long)start - (unsigned long long)stop;
  unsigned long long astep = step > 0 ? (unsigned long long)step : 0ULL - (unsigned long long)step;
  unsigned long long steps = span / astep; /* (+ 1 wraps to 0 for a span of 2^64 - 1) */
  if (steps >= (unsigned long long)SWEEP_MAX_VARIANTS) {
    char text[32];
    if (steps < ULLONG_MAX) snprintf(text, sizeof text, "%llu", steps + 1);
    else snprintf(text, sizeof text, "2^64");
    too_many_values(s, line, key, nth, text);
  }
  *it = (sweep_item_t){.kind = ITEM_INT_RANGE, .count = (long)(steps + 1), .istart = start, .istep = step};
}

static void float_range(const sweep_t *s, int line, const char *key, int nth, const double v[3],
                        sweep_item_t *it) {
  double start = v[0], stop = v[1], step = v[2];
  const char *hint = "a range is start:stop:step, the step towards stop";
  if (step == 0) sweep_fail(s, line, key, hint, "value %d: the step is 0", nth);
  double q = (stop - start) / step; /* steps from start to stop */
  if (!isfinite(q)) sweep_fail(s, line, key, hint, "value %d: the range is too wide", nth);
  if (q < -RANGE_TOLERANCE)
    sweep_fail(s, line, key, hint, "value %d: from %g a step of %g never reaches %g", nth, start, step, stop);
  double whole = floor(q + RANGE_TOLERANCE); /* values: whole + 1 */
  if (whole >= (double)SWEEP_MAX_VARIANTS) {
    char text[32];
    snprintf(text, sizeof text, "%.0f", whole + 1);
    too_many_values(s, line, key, nth, text);
  }
  *it = (sweep_item_t){.kind = ITEM_FLOAT_RANGE,
                       .count = (long)whole + 1,
                       .start = start,
                       .step = step,
                       .stop = stop,
                       .lands = fabs(q - whole) <= RANGE_TOLERANCE};
}

static void log_range(const sweep_t *s, int line, const char *key, int nth, char part[][64], int nparts,
                      sweep_item_t *it) {
  const char *hint = "a log range is log:start:stop:count, start and stop above 0, count from 2, e.g. "
                     "log:1e-4:1e-1:4";
  double start, stop;
  if (nparts != 4 || !parse_number(part[1], &start) || !parse_number(part[2], &stop) ||
      !is_integer_text(part[3]))
    sweep_fail(s, line, key, hint, "value %d: not a log range", nth);
  if (start <= 0 || stop <= 0)
    sweep_fail(s, line, key, hint, "value %d: start and stop must be above 0", nth);
  errno = 0;
  long long count = strtoll(part[3], NULL, 10);
  if (count < 2) sweep_fail(s, line, key, hint, "value %d: count %s is below 2", nth, part[3]);
  if (errno == ERANGE || count > SWEEP_MAX_VARIANTS) too_many_values(s, line, key, nth, part[3]);
  *it = (sweep_item_t){.kind = ITEM_LOG_RANGE,
                       .count = (long)count,
                       .start = start,
                       .stop = stop,
                       .step = (log(stop) - log(start)) / (double)(count - 1)};
}

/* An unquoted value that is a range becomes one; "log:..." must be one, and so must text made of
 * numbers and colons only ("1:10" is an error, not a value). Returns 0 when text is a plain value. */
static int parse_range(const sweep_t *s, int line, const char *key, int nth, const char *text,
                       sweep_item_t *it) {
  char part[RANGE_PARTS][64];
  int too_long;
  int n = split_colons(text, part, &too_long);
  if (strncmp(text, "log:", 4) == 0) {
    if (too_long) sweep_fail(s, line, key, NULL, "value %d: not a log range", nth);
    log_range(s, line, key, nth, part, n, it);
    return 1;
  }
  if (n < 2 || too_long || !numbers_and_colons(text)) return 0;
  if (n != 3)
    sweep_fail(s, line, key,
               "a range is start:stop:step, e.g. 1:10:3 or 1e-3:4e-3:1e-3; quote a value with ':'",
               "value %d: \"%.*s\" is not a range", nth, MAX_SHOWN_VALUE, text);
  double v[3];
  for (int i = 0; i < 3; i++) parse_number(part[i], &v[i]);
  if (is_integer_text(part[0]) && is_integer_text(part[1]) && is_integer_text(part[2]))
    int_range(s, line, key, nth, part, it);
  else float_range(s, line, key, nth, v, it);
  return 1;
}

void sweep_item_value(const sweep_item_t *it, long j, strbuf_t *out) {
  switch (it->kind) {
  case ITEM_VALUE: sb_puts(out, it->raw); break;
  case ITEM_INT_RANGE: sb_printf(out, "%lld", it->istart + (long long)j * it->istep); break;
  case ITEM_FLOAT_RANGE: {
    double v = it->lands && j == it->count - 1 ? it->stop : it->start + (double)j * it->step;
    if (fabs(v) < fabs(it->step) * RANGE_TOLERANCE) v = 0; /* 0.3 - 3 * 0.1 */
    format_number(v, out);
    break;
  }
  case ITEM_LOG_RANGE:
    format_number(j == 0               ? it->start
                  : j == it->count - 1 ? it->stop
                                       : exp(log(it->start) + (double)j * it->step),
                  out);
    break;
  }
}

/* ---- the lines of [sweep] ---- */

/* The values after '=' of line `l` (its key named `key`) into l->items. */
static void parse_values(const sweep_t *s, sweep_line_t *l, const char *key, const char *p, const char *end) {
  p = deck_lex_blanks(p, end);
  if (p == end || *p == '#')
    sweep_fail(s, l->line, key, "list values: train.lr = 0.1, 0.05, or a range start:stop:step", "no values");
  strbuf_t word = STRBUF_INIT;
  int cap = 0;
  for (int nth = 1;; nth++) {
    int quoted;
    sb_clear(&word);
    p = lex_word(s, l->line, key, nth, p, end, &word, &quoted);
    if (l->nitems == cap) {
      cap = cap ? 2 * cap : 4;
      l->items = xrealloc(l->items, surge_mul_size((size_t)cap, sizeof *l->items, "sweep values"));
    }
    sweep_item_t *it = &l->items[l->nitems++];
    if (quoted || !parse_range(s, l->line, key, nth, sb_str(&word), it))
      *it = (sweep_item_t){.kind = ITEM_VALUE, .count = 1, .raw = xstrdup(sb_str(&word))};
    char hint[96];
    if (it->count > SWEEP_MAX_VARIANTS - l->count)
      sweep_fail(s, l->line, key, limit_hint(hint), "more than %ld values", SWEEP_MAX_VARIANTS);
    l->count += it->count;
    if (p == end || *p == '#') break;
    p++; /* the comma */
  }
  sb_free(&word);
}

static void parse_mode(sweep_t *s, int line, const char *p, const char *end, int *mode_line) {
  static const char *const modes[] = {"product", "zip", NULL};
  if (*mode_line) sweep_fail(s, line, "mode", "keep one of them", "set twice: first at line %d", *mode_line);
  *mode_line = line;
  strbuf_t word = STRBUF_INIT;
  int quoted;
  p = deck_lex_blanks(p, end);
  if (p == end || *p == '#') sweep_fail(s, line, "mode", "mode = product or mode = zip", "no value");
  p = lex_word(s, line, "mode", 1, p, end, &word, &quoted);
  const char *w = sb_str(&word);
  if (p < end && *p == ',') sweep_fail(s, line, "mode", "mode = product or mode = zip", "one mode only");
  if (strcmp(w, "product") != 0 && strcmp(w, "zip") != 0) {
    const char *close = cfg_closest(w, modes, -1);
    strbuf_t hint = STRBUF_INIT;
    if (close) sb_printf(&hint, "did you mean %s? ", close);
    sb_puts(&hint, "product: every combination; zip: the i-th value of every line");
    sweep_fail(s, line, "mode", sb_str(&hint), "\"%.*s\" is not a mode", MAX_SHOWN_VALUE, w);
  }
  s->zip = strcmp(w, "zip") == 0;
  sb_free(&word);
}

static void parse_sweep_line(sweep_t *s, const deck_line_t *dl, int *mode_line) {
  int line = dl->number;
  blame_t blame = {s, line, NULL, 0};
  deck_lexer_t lx;
  deck_lex_init(&lx, NULL, lex_fail, &blame);
  deck_lex_plain(&lx, dl);
  strbuf_t key = STRBUF_INIT;
  const char *p = deck_lex_assignment(&lx, dl, &key, "write section.key = value, value, ... or mode = product|zip");
  char *name = sb_take(&key);
  if (strcmp(name, "mode") == 0) {
    parse_mode(s, line, p, dl->end, mode_line);
    free(name);
    return;
  }
  int k = find_swept_key(s, line, name);
  for (int i = 0; i < s->nlines; i++)
    if (s->lines[i].key == k)
      sweep_fail(s, line, name, "keep one of them", "swept twice: first at line %d", s->lines[i].line);
  if (s->nlines == cfg_nkeys) surge_runtime_error("sweep: more lines than keys");
  sweep_line_t *l = &s->lines[s->nlines++];
  *l = (sweep_line_t){.key = k, .line = line, .name = name};
  parse_values(s, l, name, p, dl->end);
  const char *kname = cfg_keys[k].key;
  if (strcmp(cfg_keys[k].section, "run") == 0 && (strcmp(kname, "name") == 0 || strcmp(kname, "out_dir") == 0))
    s->names_itself = 1;
}

/* Whether a header line names [sweep] (a malformed header is io/deck.c's to report). */
static int is_sweep_header(const deck_line_t *l) {
  char name[64];
  const char *hint;
  return !deck_lex_header(l, name, sizeof name, &hint) && strcmp(name, "sweep") == 0;
}

/* The variant count, checked against the limit line by line; product strides. */
static void count_variants(sweep_t *s) {
  char hint[96];
  limit_hint(hint);
  s->count = s->lines[0].count;
  for (int i = 1; i < s->nlines; i++) {
    const sweep_line_t *l = &s->lines[i];
    if (s->zip && l->count != s->count)
      sweep_fail(s, l->line, l->name,
                 "with mode = zip every line lists as many values; mode = product takes every combination",
                 "%ld values, but %s (line %d) has %ld", l->count, s->lines[0].name, s->lines[0].line,
                 s->count);
    if (!s->zip && s->count * l->count > SWEEP_MAX_VARIANTS) /* both <= the limit: no overflow */
      sweep_fail(s, l->line, l->name, hint, "%ld x %ld = %ld variants so far", s->count, l->count,
                 s->count * l->count);
    if (!s->zip) s->count *= l->count;
  }
  long stride = 1;
  for (int i = s->nlines - 1; i >= 0; i--) {
    s->lines[i].stride = stride;
    stride *= s->lines[i].count;
  }
}

sweep_t *sweep_parse(const char *text, const char *path) {
  sweep_t *s = NULL;
  int in_sweep = 0, header_line = 0, mode_line = 0;
  deck_lexer_t lx;
  deck_lex_init(&lx, text, NULL, NULL); /* only lines here: parse_sweep_line lexes and blames */
  deck_line_t l;
  while (deck_lex_next(&lx, &l)) {
    if (l.kind == DECK_LINE_HEADER) {
      in_sweep = is_sweep_header(&l);
      if (in_sweep && !s) {
        s = xcalloc(1, sizeof *s);
        s->path = xstrdup(path);
        s->lines = xcalloc((size_t)cfg_nkeys, sizeof *s->lines);
        header_line = l.number;
      }
    } else if (in_sweep && l.kind == DECK_LINE_TEXT) {
      parse_sweep_line(s, &l, &mode_line);
    }
  }
  if (!s) return NULL;
  if (s->nlines == 0)
    sweep_fail(s, header_line, NULL, "add lines such as train.lr = 0.1, 0.05 (doc/sweeps.md)",
               "no key is swept");
  count_variants(s);
  return s;
}

long sweep_count(const sweep_t *s) { return s->count; }
int sweep_nkeys(const sweep_t *s) { return s->nlines; }
const char *sweep_key(const sweep_t *s, int k) { return s->lines[k].name; }
int sweep_names_itself(const sweep_t *s) { return s->names_itself; }

void sweep_free(sweep_t *s) {
  if (!s) return;
  for (int i = 0; i < s->nlines; i++) {
    for (int j = 0; j < s->lines[i].nitems; j++) free(s->lines[i].items[j].raw);
    free(s->lines[i].items);
    free(s->lines[i].name);
  }
  free(s->lines);
  free(s->path);
  free(s);
}
