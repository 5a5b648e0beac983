#include "io/deck_value.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const bool_true[] = {"true", "yes", "1", NULL};
static const char *const bool_false[] = {"false", "no", "0", NULL};
#define BOOL_WORDS "true, false, yes, no, 1, 0"
#define NAME_CHARS "A-Z a-z 0-9 . _ -"

const char *cfg_type_name(cfg_type_t t) {
  switch (t) {
  case CFG_INT: return "integer";
  case CFG_FLOAT: return "float";
  case CFG_BOOL: return "bool";
  case CFG_STRING: return "string";
  case CFG_NAME: return "name";
  case CFG_ENUM: return "enum";
  case CFG_INT_LIST: return "integer list";
  }
  return "?";
}

static int list_capacity(const cfg_key_t *k) { return (int)(k->size / sizeof(int)); }

/* Shortest text that reads back as exactly v: whole numbers in plain digits, others by %g. */
static void format_double(double v, char buf[32]) {
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(buf, 32, "%.0f", v);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static void int_range(const cfg_key_t *k, strbuf_t *out) { sb_printf(out, "[%lld, %lld]", k->imin, k->imax); }

void cfg_value_range(const cfg_key_t *k, strbuf_t *out) {
  char lo[32], hi[32];
  switch (k->type) {
  case CFG_INT: int_range(k, out); break;
  case CFG_FLOAT:
    format_double(k->fmin, lo);
    format_double(k->fmax, hi);
    sb_printf(out, "%c%s, %s%c", k->fmin_open ? '(' : '[', lo, hi, k->fmax_open ? ')' : ']');
    break;
  case CFG_BOOL: sb_puts(out, BOOL_WORDS); break;
  case CFG_STRING: sb_printf(out, "%lld..%zu characters", k->imin, k->size - 1); break;
  case CFG_NAME: sb_printf(out, "%lld..%zu characters from " NAME_CHARS, k->imin, k->size - 1); break;
  case CFG_ENUM:
    for (int i = 0; k->values[i]; i++) sb_printf(out, "%s%s", i ? ", " : "", k->values[i]);
    break;
  case CFG_INT_LIST:
    sb_printf(out, "1..%d entries, each in ", list_capacity(k));
    int_range(k, out);
    break;
  }
}

void cfg_value_describe(const cfg_key_t *k, strbuf_t *out) {
  switch (k->type) {
  case CFG_INT: sb_puts(out, "an integer in "); break;
  case CFG_FLOAT: sb_puts(out, "a number in "); break;
  case CFG_BOOL: sb_puts(out, "a bool: "); break;
  case CFG_STRING: sb_puts(out, "a string of "); break;
  case CFG_NAME: sb_puts(out, "a name (starting with a letter or digit) of "); break;
  case CFG_ENUM: sb_puts(out, "one of: "); break;
  case CFG_INT_LIST: sb_puts(out, "a comma-separated list of integers, "); break;
  }
  cfg_value_range(k, out);
}

void cfg_value_printable(const char *s, size_t max_shown, strbuf_t *out) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n && i < max_shown; i++) sb_putc(out, iscntrl((unsigned char)s[i]) ? '?' : s[i]);
  if (n > max_shown) sb_puts(out, "...");
}

void cfg_value_quote(const char *s, strbuf_t *out) {
  sb_putc(out, '"');
  cfg_value_printable(s, 60, out);
  sb_putc(out, '"');
}

/* ---- text -> field ---- */

static void store_integer(void *field, size_t size, long long v) {
  if (size == sizeof(int)) {
    int x = (int)v;
    memcpy(field, &x, sizeof x);
  } else {
    int64_t x = (int64_t)v;
    memcpy(field, &x, sizeof x);
  }
}

static long long load_integer(const void *field, size_t size) {
  if (size == sizeof(int)) {
    int x;
    memcpy(&x, field, sizeof x);
    return x;
  }
  int64_t x;
  memcpy(&x, field, sizeof x);
  return (long long)x;
}

/* A decimal integer with an optional sign and nothing else. 0: ok; -1: not an integer; 1: too big. */
static int parse_integer(const char *s, long long *v) {
  const char *p = s + (*s == '+' || *s == '-');
  if (!isdigit((unsigned char)*p)) return -1;
  for (const char *q = p; *q; q++)
    if (!isdigit((unsigned char)*q)) return -1;
  errno = 0;
  *v = strtoll(s, NULL, 10);
  return errno == ERANGE ? 1 : 0;
}

static int in_int_range(const cfg_key_t *k, long long v) { return v >= k->imin && v <= k->imax; }

static int store_int(const cfg_key_t *k, const char *text, void *field, strbuf_t *msg, strbuf_t *hint) {
  long long v = 0;
  int rc = parse_integer(text, &v);
  if (rc < 0) {
    sb_puts(msg, "expected an integer, got ");
    cfg_value_quote(text, msg);
  } else if (rc > 0 || !in_int_range(k, v)) {
    sb_printf(msg, "%s is out of range ", text);
    int_range(k, msg);
  } else {
    store_integer(field, k->size, v);
    return 0;
  }
  cfg_value_describe(k, hint);
  return -1;
}

static int store_float(const cfg_key_t *k, const char *text, double *field, strbuf_t *msg, strbuf_t *hint) {
  char *end = NULL; /* decimal only: strtod also reads hex floats (0x1p-4) and inf/nan */
  const int decimal = *text && text[strspn(text, "+-0123456789.eE")] == '\0';
  double v = decimal ? strtod(text, &end) : 0;
  if (!end || *end || !isfinite(v)) {
    sb_puts(msg, "expected a finite decimal number, got ");
    cfg_value_quote(text, msg);
  } else if (v < k->fmin || v > k->fmax || (k->fmin_open && v == k->fmin) || (k->fmax_open && v == k->fmax)) {
    sb_printf(msg, "%s is out of range ", text);
    cfg_value_range(k, msg);
  } else {
    *field = v;
    return 0;
  }
  cfg_value_describe(k, hint);
  return -1;
}

static int word_in(const char *w, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (strcmp(w, list[i]) == 0) return 1;
  return 0;
}

static int store_bool(const cfg_key_t *k, const char *text, int *field, strbuf_t *msg, strbuf_t *hint) {
  if (word_in(text, bool_true) || word_in(text, bool_false)) {
    *field = word_in(text, bool_true);
    return 0;
  }
  sb_puts(msg, "expected a bool, got ");
  cfg_value_quote(text, msg);
  cfg_value_describe(k, hint);
  return -1;
}

static int is_name_char(char c) { return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-'; }

static int store_string(const cfg_key_t *k, const char *text, char *field, strbuf_t *msg, strbuf_t *hint) {
  size_t n = strlen(text);
  const char *bad = NULL;
  for (const char *p = text; *p && !bad; p++)
    if (iscntrl((unsigned char)*p) && *p != '\t') bad = "contains a control character";
    else if (k->type == CFG_NAME && !is_name_char(*p)) bad = "has a character other than " NAME_CHARS;
  if (!bad && k->type == CFG_NAME && n > 0 && !isalnum((unsigned char)text[0]))
    bad = "must start with a letter or digit";
  if (bad) {
    cfg_value_quote(text, msg);
    sb_printf(msg, " %s", bad);
  } else if ((long long)n < k->imin) {
    sb_puts(msg, n == 0 ? "must not be empty" : "is too short");
  } else if (n >= k->size) {
    sb_printf(msg, "is %zu characters long, more than the %zu allowed", n, k->size - 1);
  } else {
    memcpy(field, text, n + 1);
    return 0;
  }
  cfg_value_describe(k, hint);
  return -1;
}

static int store_enum(const cfg_key_t *k, const char *text, char *field, strbuf_t *msg, strbuf_t *hint) {
  if (word_in(text, k->values)) {
    memcpy(field, text, strlen(text) + 1);
    return 0;
  }
  cfg_value_quote(text, msg);
  sb_puts(msg, " is not an accepted value");
  const char *close = cfg_closest(text, k->values, -1);
  if (close) sb_printf(hint, "did you mean %s? ", close);
  sb_puts(hint, "accepted: ");
  cfg_value_range(k, hint);
  return -1;
}

static void trim_span(const char **b, const char **e) {
  while (*b < *e && isspace((unsigned char)**b)) (*b)++;
  while (*e > *b && isspace((unsigned char)(*e)[-1])) (*e)--;
}

static int store_int_list(const cfg_key_t *k, const char *text, config_t *cfg, strbuf_t *msg,
                          strbuf_t *hint) {
  int cap = list_capacity(k), count = 0;
  char *field = (char *)cfg + k->offset; // int[cap]
  int entries = 1;
  for (const char *p = text; *p; p++) entries += *p == ',';
  memset(field, 0, k->size);
  if (entries > cap) {
    sb_printf(msg, "has %d entries, at most %d allowed", entries, cap);
  } else {
    for (const char *p = text;; p++) {
      const char *b = p, *e = p;
      while (*e && *e != ',') e++;
      p = e;
      trim_span(&b, &e);
      char entry[32];
      size_t n = (size_t)(e - b);
      long long v = 0;
      if (n == 0) {
        sb_printf(msg, "entry %d is empty", count + 1);
        break;
      }
      snprintf(entry, sizeof entry, "%.*s", (int)(n < sizeof entry ? n : sizeof entry - 1), b);
      int rc = parse_integer(entry, &v);
      if (rc == 0 && n >= sizeof entry) rc = 1; /* digits beyond what fits */
      if (rc < 0) {
        sb_printf(msg, "entry %d ", count + 1);
        cfg_value_quote(entry, msg);
        sb_puts(msg, " is not an integer");
        break;
      }
      if (rc > 0 || !in_int_range(k, v)) {
        sb_printf(msg, "entry %d (%s) is out of range ", count + 1, entry);
        int_range(k, msg);
        break;
      }
      store_integer(field + (size_t)count++ * sizeof(int), sizeof(int), v);
      if (!*p) {
        memcpy((char *)cfg + k->count_offset, &count, sizeof count);
        return 0;
      }
    }
  }
  cfg_value_describe(k, hint);
  return -1;
}

int cfg_value_store(const cfg_key_t *k, const char *text, config_t *cfg, strbuf_t *msg, strbuf_t *hint) {
  void *field = (char *)cfg + k->offset;
  switch (k->type) {
  case CFG_INT: return store_int(k, text, field, msg, hint);
  case CFG_FLOAT: return store_float(k, text, field, msg, hint);
  case CFG_BOOL: return store_bool(k, text, field, msg, hint);
  case CFG_STRING:
  case CFG_NAME: return store_string(k, text, field, msg, hint);
  case CFG_ENUM: return store_enum(k, text, field, msg, hint);
  case CFG_INT_LIST: return store_int_list(k, text, cfg, msg, hint);
  }
  return -1;
}

/* ---- field -> deck text ---- */

static void format_string(const char *s, strbuf_t *out) {
  int quote = *s == '\0' || strpbrk(s, " \t") != NULL;
  if (quote) sb_putc(out, '"');
  for (; *s; s++) {
    if (strchr("\\#$\"", *s)) sb_putc(out, '\\');
    sb_putc(out, *s);
  }
  if (quote) sb_putc(out, '"');
}

void cfg_value_format(const cfg_key_t *k, const config_t *cfg, strbuf_t *out) {
  const char *field = (const char *)cfg + k->offset;
  char buf[32];
  switch (k->type) {
  case CFG_INT: sb_printf(out, "%lld", load_integer(field, k->size)); break;
  case CFG_FLOAT: {
    double v;
    memcpy(&v, field, sizeof v);
    format_double(v, buf);
    sb_puts(out, buf);
    break;
  }
  case CFG_BOOL: sb_puts(out, load_integer(field, sizeof(int)) ? "true" : "false"); break;
  case CFG_STRING:
  case CFG_NAME:
  case CFG_ENUM: format_string(field, out); break;
  case CFG_INT_LIST: {
    int count;
    memcpy(&count, (const char *)cfg + k->count_offset, sizeof count);
    for (int i = 0; i < count; i++)
      sb_printf(out, "%s%lld", i ? "," : "", load_integer(field + i * sizeof(int), sizeof(int)));
    break;
  }
  }
}
