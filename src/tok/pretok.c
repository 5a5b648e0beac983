/* GPT-2's pre-tokenization regex through PCRE2 (UTF + UCP: Unicode properties for \p{L}, \p{N}, \s;
 * MATCH_INVALID_UTF: bytes that are not UTF-8 never match and never make PCRE2 fail). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>

#include "core/error.h"
#include "tok/pretok.h"

static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

struct pretok {
  pcre2_code *re;
  pcre2_match_data *md;
};

pretok_t *pretok_new(void) {
  int code;
  PCRE2_SIZE at;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)gpt2_pattern, PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    surge_runtime_error("pre-tokenizer: PCRE2 cannot compile GPT-2's pattern at %zu: %s", (size_t)at, msg);
  }
  (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* without JIT PCRE2 interprets: slower, same pieces */
  pretok_t *p = xcalloc(1, sizeof *p);
  p->re = re;
  p->md = pcre2_match_data_create_from_pattern(re, NULL);
  if (!p->md) surge_runtime_error("pre-tokenizer: out of memory for PCRE2 match data");
  return p;
}

void pretok_free(pretok_t *p) {
  if (!p) return;
  pcre2_match_data_free(p->md);
  pcre2_code_free(p->re);
  free(p);
}

void pretok_split(pretok_t *p, const uint8_t *s, size_t n, pretok_fn fn, void *ctx) {
  size_t at = 0;
  while (at < n) {
    int rc = pcre2_match(p->re, (PCRE2_SPTR)s, n, at, 0, p->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      surge_runtime_error("pre-tokenizer: PCRE2 match failed at byte %zu: %s", at, msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
    if (ov[0] > at) fn(s + at, ov[0] - at, ctx); /* bytes no branch matched: not UTF-8 */
    if (ov[1] <= ov[0]) surge_runtime_error("pre-tokenizer: empty match at byte %zu", (size_t)ov[0]);
    fn(s + ov[0], ov[1] - ov[0], ctx);
    at = ov[1];
  }
  if (at < n) fn(s + at, n - at, ctx);
}
