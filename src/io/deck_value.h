/* Deck values and the config_t fields they land in: text -> field (with the checks of the key's
 * type and range), field -> deck text, and the words that describe what a key accepts. */
#ifndef SURGE_DECK_VALUE_H
#define SURGE_DECK_VALUE_H

#include "io/config.h"
#include "io/config_schema.h"
#include "io/strbuf.h"

/* Short type name for docs: "integer", "float", "bool", "string", "name", "enum", "integer list". */
const char *cfg_type_name(cfg_type_t t);
/* What the key accepts, without the type: "[1, 100]", "[0, 1)", "mlp, gpt", "1..255 characters". */
void cfg_value_range(const cfg_key_t *k, strbuf_t *out);
/* What the key accepts, as a phrase: "an integer in [1, 100]", "one of: mlp, gpt", ... */
void cfg_value_describe(const cfg_key_t *k, strbuf_t *out);

/* Convert resolved text into k's field of cfg. Returns 0, or -1 with msg (what is wrong) and hint
 * (what would be right) filled. */
int cfg_value_store(const cfg_key_t *k, const char *text, config_t *cfg, strbuf_t *msg, strbuf_t *hint);

/* Append k's value in cfg as deck text that parses back to the same field (escaped, quoted where it
 * has blanks or is empty). */
void cfg_value_format(const cfg_key_t *k, const config_t *cfg, strbuf_t *out);

/* Append s for an error message: control characters as '?', "..." after max_shown characters. */
void cfg_value_printable(const char *s, size_t max_shown, strbuf_t *out);
/* The same in double quotes, cut after 60 characters. */
void cfg_value_quote(const char *s, strbuf_t *out);

#endif
