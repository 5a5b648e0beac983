/* eval_choices: multiple-choice scoring from JSONL (doc/eval.md), one example a line:
 *   {"context": TEXT or [IDS], "endings": [TEXT or [IDS], ...], "label": I}
 * or HellaSwag's own {"ctx": ..., "endings": ..., "label": ...}, whose text endings are encoded after
 * a space, as llm.c's hellaswag.py renders them (encode(" " + ending)).
 * Each ending is scored by the sum of its tokens' log-probabilities after the context (llm.c's
 * HellaSwag "acc"), and by their mean ("acc_norm"-like, per token). The file is untrusted: its size,
 * each line's length, the number of endings, every id and the tokens of each row are bounded, and
 * every error names FILE:LINE. */
#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "eval/eval.h"
#include "gen/vocab.h"
#include "tok/files.h"
#include "tok/pretok.h"

#define CHOICE_FILE_MAX ((size_t)1 << 30)
#define CHOICE_LINE_MAX ((size_t)1 << 20)
#define CHOICE_MAX_ENDINGS 16

typedef struct where {
  const char *path;
  long line;
} where_t;

#define BAD(w, ...) bad_line(w, __VA_ARGS__)
__attribute__((format(printf, 2, 3))) _Noreturn static void bad_line(const where_t *w, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  surge_input_error("%s:%ld: %s (format: doc/eval.md)", w->path, w->line, msg);
}

typedef struct coder {
  const bpe_t *tok;
  pretok_t *pre;
  int V;
} coder_t;

/* A text (after `space` blanks: 0 or 1) or an id list as ids (appended to out). */
static void tokens_of(const coder_t *c, const cJSON *v, int space, const char *what, const where_t *w, ids_t *out) {
  if (cJSON_IsString(v)) {
    if (!c->tok && c->V != GEN_BYTE_VOCAB)
      BAD(w, "%s: without --tokenizer a text is read as bytes, for a byte-level model (a vocabulary of %d), and this "
             "model's is %d (hint: --tokenizer DIR, the tokenizer the model was trained with; or token ids)",
          what, GEN_BYTE_VOCAB, c->V);
    size_t n = (size_t)space + strlen(v->valuestring);
    uint8_t *s = xmalloc(n + 1);
    memset(s, ' ', (size_t)space);
    memcpy(s + space, v->valuestring, n - (size_t)space + 1);
    if (c->tok) bpe_encode(c->tok, c->pre, s, n, out);
    else
      for (size_t i = 0; i < n; i++) ids_push(out, s[i]);
    free(s);
    return;
  }
  if (!cJSON_IsArray(v)) BAD(w, "%s: expected a text or a list of token ids", what);
  int i = 0;
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    double id = cJSON_IsNumber(e) ? e->valuedouble : -1;
    if (!(id >= 0 && id < c->V) || id != (double)(int)id)
      BAD(w, "%s: entry %d is not a token id of the model's vocabulary (0 to %d)", what, i, c->V - 1);
    ids_push(out, (uint32_t)id);
  }
}

/* One example: score its endings; 1 when the label's is the best by sum (bit 0) and by mean (bit 1). */
static int score_example(scorer_t *s, const coder_t *c, const cJSON *ex, const where_t *w, double *label_nats) {
  const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(ex, "context"),
              *ends = cJSON_GetObjectItemCaseSensitive(ex, "endings"),
              *lab = cJSON_GetObjectItemCaseSensitive(ex, "label");
  int hellaswag = !ctx; /* its own files: "ctx", and endings without their leading space */
  if (!ctx) ctx = cJSON_GetObjectItemCaseSensitive(ex, "ctx");
  if (!ctx || !ends || !lab) BAD(w, "an example needs \"context\" (or \"ctx\"), \"endings\" and \"label\"");
  int n = cJSON_IsArray(ends) ? cJSON_GetArraySize(ends) : 0;
  if (n < 2 || n > CHOICE_MAX_ENDINGS) BAD(w, "\"endings\": expected a list of 2 to %d endings", CHOICE_MAX_ENDINGS);
  if (!cJSON_IsNumber(lab) || !(lab->valuedouble >= 0 && lab->valuedouble < n) || lab->valuedouble != (int)lab->valuedouble)
    BAD(w, "\"label\": expected the index of an ending (0 to %d)", n - 1);
  int label = (int)lab->valuedouble;
  ids_t cx = {0};
  tokens_of(c, ctx, 0, "\"context\"", w, &cx);
  if (cx.n == 0) BAD(w, "\"context\" has no tokens");
  size_t T = (size_t)s->T;
  int32_t *x = xcalloc((size_t)n * T, sizeof *x), *y = xmalloc((size_t)n * T * sizeof *y);
  for (size_t i = 0; i < (size_t)n * T; i++) y[i] = -1;
  int k = 0;
  for (const cJSON *e = ends->child; e; e = e->next, k++) {
    ids_t row = {0};
    for (size_t i = 0; i < cx.n; i++) ids_push(&row, cx.v[i]);
    char what[32];
    snprintf(what, sizeof what, "ending %d", k);
    tokens_of(c, e, hellaswag, what, w, &row); /* llm.c encodes " " + ending for HellaSwag */
    if (row.n == cx.n) BAD(w, "%s has no tokens", what);
    if (row.n - 1 > T)
      BAD(w, "context and %s are %zu tokens, the model reads %zu (its context + 1)", what, row.n, T + 1);
    for (size_t t = 0; t + 1 < row.n; t++) {
      x[(size_t)k * T + t] = (int32_t)row.v[t];
      if (t + 1 >= cx.n) y[(size_t)k * T + t] = (int32_t)row.v[t + 1]; /* the ending's tokens only */
    }
    ids_free(&row);
  }
  double sum[CHOICE_MAX_ENDINGS];
  long count[CHOICE_MAX_ENDINGS];
  scorer_rows(s, x, y, n, sum, count);
  int best = 0, best_norm = 0;
  for (k = 1; k < n; k++) {
    if (sum[k] > sum[best]) best = k;
    if (sum[k] / (double)count[k] > sum[best_norm] / (double)count[best_norm]) best_norm = k;
  }
  *label_nats += -sum[label];
  free(x);
  free(y);
  ids_free(&cx);
  return (best == label) | (best_norm == label) << 1;
}

/* Whether a line of JSON writes a NUL character (\u0000) in a string, which a parsed string (NUL-
 * terminated) would silently end at. */
static int writes_nul(const char *s, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (s[i] == '\\') {
      if (s[i + 1] == 'u' && i + 5 < n && strncmp(s + i + 2, "0000", 4) == 0) return 1;
      i++; /* the escaped character */
    }
  return 0;
}

eval_choice_t eval_choices(scorer_t *s, const char *path, const bpe_t *tok, comm_t *world) {
  coder_t c = {.tok = tok, .pre = tok ? pretok_new() : NULL, .V = s->d.V};
  size_t len;
  char *text =
      (char *)file_read_all(path, CHOICE_FILE_MAX, "a choices file", "split the examples into several files", &len);
  double tot[4] = {0, 0, 0, 0}; /* examples, correct, correct by mean, label nats */
  where_t w = {path, 0};
  long index = 0;
  for (size_t at = 0; at < len;) {
    size_t end = at;
    while (end < len && text[end] != '\n') end++;
    w.line++;
    if (end - at > CHOICE_LINE_MAX) BAD(&w, "a line of %zu bytes, more than %zu", end - at, CHOICE_LINE_MAX);
    size_t blank = at;
    while (blank < end && (text[blank] == ' ' || text[blank] == '\t' || text[blank] == '\r')) blank++;
    if (blank < end) {
      if (writes_nul(text + at, end - at))
        BAD(&w, "a text holds \\u0000, a NUL character, which a text here cannot hold (hint: give it as token ids)");
      cJSON *ex = cJSON_ParseWithLength(text + at, end - at);
      if (!ex || !cJSON_IsObject(ex)) {
        const char *bad = cJSON_GetErrorPtr();
        long col = !ex && bad && bad >= text + at && bad <= text + end ? (long)(bad - (text + at)) + 1 : 0;
        if (col) BAD(&w, "not a JSON object (the JSON ends or breaks at column %ld)", col);
        BAD(&w, "not a JSON object");
      }
      if (index++ % world->size == world->rank) {
        int r = score_example(s, &c, ex, &w, &tot[3]);
        tot[0] += 1, tot[1] += r & 1, tot[2] += r >> 1;
      }
      cJSON_Delete(ex);
    }
    at = end + 1;
  }
  free(text);
  if (c.pre) pretok_free(c.pre);
  comm_allreduce_sum_double(world, tot, 4, TRAFFIC_OTHER);
  if (tot[0] == 0) surge_input_error("%s: no examples", path);
  return (eval_choice_t){.examples = (long)tot[0], .correct = (long)tot[1], .correct_norm = (long)tot[2], .label_nats = tot[3]};
}
