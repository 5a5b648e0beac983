/* The configuration a checkpoint belongs to: the canonical text of every value that must not
 * change across a restart, its fingerprint, and the first difference between two such texts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "io/deck_value.h"
#include "io/strbuf.h"

/* Keys that change the trajectory of training: the model, the data, the update rule. [data]
 * test_samples only limits evaluation, so it may change; [model] init only gives the parameters of
 * step 0, which a checkpoint replaces; [train] micro_batches only splits a step's work (the same
 * step, as a layout's rank count: doc/burst.md), and [train] recompute gives the same parameters
 * bit for bit (nn/recompute.h), so a restart may change either. */
static int in_fingerprint(const cfg_key_t *k) {
  if (strcmp(k->section, "data") == 0) return strcmp(k->key, "test_samples") != 0;
  if (strcmp(k->section, "model") == 0) return strcmp(k->key, "init") != 0;
  return strcmp(k->section, "train") == 0 && strcmp(k->key, "micro_batches") != 0 &&
         strcmp(k->key, "recompute") != 0;
}

char *ckpt_config_text(const config_t *cfg) {
  strbuf_t out = STRBUF_INIT;
  for (int i = 0; i < cfg_nkeys; i++) {
    if (!in_fingerprint(&cfg_keys[i])) continue;
    sb_printf(&out, "[%s] %s = ", cfg_keys[i].section, cfg_keys[i].key);
    cfg_value_format(&cfg_keys[i], cfg, &out);
    sb_putc(&out, '\n');
  }
  return sb_take(&out);
}

uint64_t ckpt_fnv1a64(const char *s) {
  uint64_t h = 14695981039346656037ULL; // FNV offset basis
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    h ^= *p;
    h *= 1099511628211ULL; // FNV prime
  }
  return h;
}

uint64_t checkpoint_fingerprint(const config_t *cfg) {
  char *text = ckpt_config_text(cfg);
  uint64_t h = ckpt_fnv1a64(text);
  free(text);
  return h;
}

/* Length of the line at s (without its newline). */
static size_t line_len(const char *s) { return strcspn(s, "\n"); }

/* Length of the "[section] key" part of a line (up to " = "), or the whole line. */
static size_t key_len(const char *line, size_t len) {
  const char *eq = strstr(line, " = ");
  return eq && (size_t)(eq - line) < len ? (size_t)(eq - line) : len;
}

/* The value after "[section] key = " of a line whose key part is k characters long. */
static const char *value_of(const char *line, size_t k, size_t len, int *vlen) {
  size_t skip = k + 3 <= len ? k + 3 : len;
  *vlen = (int)(len - skip);
  return line + skip;
}

/* The line of text whose "[section] key" part is the k bytes at key (its length in *len), or NULL. */
static const char *find_line(const char *text, const char *key, size_t k, size_t *len) {
  for (const char *a = text; *a; a += *len + (a[*len] == '\n')) {
    *len = line_len(a);
    if (key_len(a, *len) == k && memcmp(a, key, k) == 0) return a;
  }
  return NULL;
}

/* Whether the key of a "[section] key" part (k bytes) is one of the schema's and holds its default
 * in cfg. */
static int at_default(const config_t *cfg, const char *line, size_t k) {
  char section[64], key[64], name[132];
  const char *close = memchr(line, ']', k);
  if (line[0] != '[' || !close || close + 2 > line + k) return 0;
  size_t ls = (size_t)(close - line - 1), lk = (size_t)(line + k - close - 2);
  if (ls >= sizeof section || lk >= sizeof key) return 0;
  snprintf(section, sizeof section, "%.*s", (int)ls, line + 1);
  snprintf(key, sizeof key, "%.*s", (int)lk, close + 2);
  snprintf(name, sizeof name, "%s.%s", section, key);
  return cfg_find_key(section, key) >= 0 && !deck_key_changed(cfg, name);
}

int ckpt_config_first_diff(const char *stored, const char *now, const config_t *cfg, char *out, size_t out_len) {
  size_t la, lb;
  for (const char *b = now; *b; b += lb + (b[lb] == '\n')) { /* this run's keys against the checkpoint's */
    lb = line_len(b);
    size_t k = key_len(b, lb);
    const char *a = find_line(stored, b, k, &la);
    if (!a && at_default(cfg, b, k)) continue;
    if (!a) {
      snprintf(out, out_len, "%.*s is not in the checkpoint", (int)lb, b);
      return 1;
    }
    if (la != lb || memcmp(a, b, la) != 0) {
      int va_len, vb_len;
      const char *va = value_of(a, k, la, &va_len), *vb = value_of(b, k, lb, &vb_len);
      snprintf(out, out_len, "%.*s is %.*s in the checkpoint, %.*s in this run", (int)k, b, va_len, va, vb_len, vb);
      return 1;
    }
  }
  for (const char *a = stored; *a; a += la + (a[la] == '\n')) { /* keys this run does not have */
    la = line_len(a);
    if (la && !find_line(now, a, key_len(a, la), &lb)) {
      snprintf(out, out_len, "%.*s is in the checkpoint, not in this run", (int)la, a);
      return 1;
    }
  }
  return 0;
}
