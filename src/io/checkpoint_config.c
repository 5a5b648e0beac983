/* The configuration a checkpoint belongs to: the canonical text of every value that must not
 * change across a restart, its fingerprint, and the first difference between two such texts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"
#include "io/config_schema.h"
#include "io/deck_value.h"
#include "io/strbuf.h"

/* Keys that change the trajectory of training: the model, the data, the update rule. [data]
 * test_samples only limits evaluation, so it may change; [model] init only gives the parameters of
 * step 0, which a checkpoint replaces. */
static int in_fingerprint(const cfg_key_t *k) {
  if (strcmp(k->section, "data") == 0) return strcmp(k->key, "test_samples") != 0;
  if (strcmp(k->section, "model") == 0) return strcmp(k->key, "init") != 0;
  return strcmp(k->section, "train") == 0;
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

int ckpt_config_first_diff(const char *stored, const char *now, char *out, size_t out_len) {
  const char *a = stored, *b = now;
  while (*a || *b) {
    size_t la = line_len(a), lb = line_len(b);
    if (la != lb || memcmp(a, b, la) != 0) {
      size_t ka = key_len(a, la), kb = key_len(b, lb);
      if (la == 0 && *a == '\0')
        snprintf(out, out_len, "%.*s is not in the checkpoint", (int)lb, b);
      else if (lb == 0 && *b == '\0')
        snprintf(out, out_len, "%.*s is in the checkpoint, not in this run", (int)la, a);
      else if (ka == kb && memcmp(a, b, ka) == 0) {
        int va_len, vb_len;
        const char *va = value_of(a, ka, la, &va_len), *vb = value_of(b, kb, lb, &vb_len);
        snprintf(out, out_len, "%.*s is %.*s in the checkpoint, %.*s in this run", (int)ka, a, va_len, va, vb_len,
                 vb);
      } else
        snprintf(out, out_len, "the checkpoint has \"%.*s\" where this run has \"%.*s\"", (int)la, a, (int)lb, b);
      return 1;
    }
    a += la + (a[la] == '\n');
    b += lb + (b[lb] == '\n');
  }
  return 0;
}
