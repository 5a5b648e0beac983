#include "gen/vocab.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/dataset.h"
#include "io/printable.h"
#include "io/strbuf.h"
#include "tok/pretok.h"

static void open_tokenizer(gen_vocab_t *v, const data_opts_t *cfg, const deck_t *deck) {
  v->bpe = bpe_load_dir(cfg->tokenizer);
  v->classes = v->bpe->n;
  if (cfg->vocab_size && cfg->vocab_size != v->classes)
    deck_key_error(deck, "data.vocab_size", "%ld, but the tokenizer %s has %d tokens (hint: leave vocab_size 0)",
                   cfg->vocab_size, cfg->tokenizer, v->classes);
}

void gen_vocab_check_recorded(const char *model_vocab, int classes, const char *given_by, const bpe_t *bpe,
                              const char *dir, const char *hint) {
  if (!model_vocab || !model_vocab[0]) return;
  char *end;
  long size = strtol(model_vocab, &end, 10);
  if (size != classes)
    surge_input_error("the model was trained on a vocabulary of %ld tokens, but %s gives %d (hint: %s)", size,
                      given_by, classes, hint);
  if (*end == ':' && bpe && strcmp(end + 1, bpe->hash) != 0)
    surge_input_error("the tokenizer %s (files' hash %s) is not the one the model was trained with (hash %s; "
                      "hint: %s)", dir, bpe->hash, end + 1, hint);
}

void gen_vocab_open(gen_vocab_t *v, const config_t *run, const deck_t *deck, const char *model_vocab) {
  memset(v, 0, sizeof *v);
  const data_opts_t *cfg = data_opts(run);
  if (!strcmp(cfg->source, "text")) {
    v->classes = GEN_BYTE_VOCAB;
    v->bytes = 1;
  } else if (!strcmp(cfg->source, "synthetic")) {
    v->classes = GEN_BYTE_VOCAB;
    snprintf(v->no_text, sizeof v->no_text, "the model was trained on synthetic tokens, which are no text: give the "
             "prompt as ids (--ids)");
  } else if (!strcmp(cfg->source, "tokens") && cfg->tokenizer[0]) {
    open_tokenizer(v, cfg, deck);
  } else if (!strcmp(cfg->source, "tokens")) {
    if (cfg->vocab_size < 1)
      deck_key_error(deck, "data.tokenizer", "the vocabulary is unknown: name the tokenizer's directory, or set [data] "
                     "vocab_size");
    if (cfg->vocab_size > INT_MAX) deck_key_error(deck, "data.vocab_size", "%ld is too large", cfg->vocab_size);
    v->classes = (int)cfg->vocab_size;
    snprintf(v->no_text, sizeof v->no_text, "the deck names no tokenizer ([data] tokenizer): give the prompt as ids "
             "(--ids), or the tokenizer with -D data.tokenizer=DIR");
  } else {
    deck_key_error(deck, "data.source", "%s holds no token sequences: generation needs a language model",
                   cfg->source);
  }
  gen_vocab_check_recorded(model_vocab, v->classes, "[data]", v->bpe, cfg->tokenizer,
                           "the deck's [data] tokenizer or vocab_size must be the model's");
}

void gen_vocab_free(gen_vocab_t *v) {
  if (v->bpe) bpe_free(v->bpe);
  v->bpe = NULL;
}

int gen_vocab_has_text(const gen_vocab_t *v) { return v->bytes || v->bpe; }

void gen_vocab_encode(const gen_vocab_t *v, const uint8_t *text, size_t n, ids_t *out) {
  if (v->bytes) {
    for (size_t i = 0; i < n; i++) ids_push(out, text[i]);
  } else if (v->bpe) {
    pretok_t *p = pretok_new();
    bpe_encode(v->bpe, p, text, n, out);
    pretok_free(p);
  } else {
    surge_input_error("a text prompt: %s", v->no_text);
  }
}

void gen_vocab_decode(const gen_vocab_t *v, const uint32_t *ids, size_t n, uint8_t **buf, size_t *len,
                      size_t *cap) {
  if (v->bpe) {
    bpe_decode(v->bpe, ids, n, 0, buf, len, cap);
    return;
  }
  if (*len + n + 1 > *cap) {
    *cap = *len + n + 1;
    *buf = xrealloc(*buf, *cap);
  }
  for (size_t i = 0; i < n; i++) (*buf)[(*len)++] = (uint8_t)ids[i];
}

char *gen_vocab_printable(const gen_vocab_t *v, const uint32_t *ids, size_t n) {
  strbuf_t b = STRBUF_INIT;
  if (!gen_vocab_has_text(v)) {
    sb_printf(&b, "[");
    for (size_t i = 0; i < n; i++) sb_printf(&b, i ? " %u" : "%u", ids[i]);
    sb_printf(&b, "]");
  } else {
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    gen_vocab_decode(v, ids, n, &buf, &len, &cap);
    buf = xrealloc(buf, len + 1);
    buf[len] = 0;
    for (size_t at = 0; at <= len; at += strlen((char *)buf + at) + 1) { /* the pieces between NUL bytes */
      sb_put_printable(&b, (char *)buf + at);
      if (at + strlen((char *)buf + at) < len) sb_printf(&b, "\\x00");
    }
    free(buf);
  }
  char *s = xstrdup(sb_str(&b));
  sb_free(&b);
  return s;
}
