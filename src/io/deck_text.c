/* Text written from the schema: the resolved deck of a run, and the deck reference (doc/deck.md). */
#include <string.h>

#include "io/config_schema.h"
#include "io/deck.h"
#include "io/deck_value.h"
#include "io/strbuf.h"

char *deck_resolved_text(const config_t *cfg) {
  strbuf_t out = STRBUF_INIT;
  sb_puts(&out, "# Resolved deck: every key after defaults, -D overrides and ${...} expansion.\n");
  for (int s = 0; s < cfg_nsections; s++) {
    sb_printf(&out, "\n[%s]\n", cfg_sections[s].name);
    for (int i = 0; i < cfg_nkeys; i++) {
      if (strcmp(cfg_keys[i].section, cfg_sections[s].name) != 0) continue;
      sb_printf(&out, "%s = ", cfg_keys[i].key);
      cfg_value_format(&cfg_keys[i], cfg, &out);
      sb_putc(&out, '\n');
    }
  }
  return sb_take(&out);
}

/* A markdown table cell: '|' escaped, in backticks when code. */
static void md_cell(FILE *f, const char *text, int code) {
  fputs(code ? " `" : " ", f);
  for (const char *p = text; *p; p++) {
    if (*p == '|') fputc('\\', f);
    fputc(*p, f);
  }
  fputs(code ? "` |" : " |", f);
}

static const char *const syntax_md =
    "## Syntax\n"
    "\n"
    "```\n"
    "# a comment line\n"
    "[run]                          # a section header; the keys below belong to it\n"
    "name  = fmnist-mlp             # key = value, blanks around both are ignored\n"
    "out_dir = \"runs/${run.name} #1\" # quotes keep blanks and '#'\n"
    "[data]\n"
    "path = ${HOME}/data/fmnist     # an environment variable\n"
    "```\n"
    "\n"
    "- `[section]` starts a section. The same section may appear again; its keys add up.\n"
    "- `key = value` sets a key of the current section. Each key may be set once per deck.\n"
    "- `#` starts a comment, on a line of its own or after a value. Inside `\"...\"` a `#` is part of\n"
    "  the value; elsewhere write a literal `#` as `\\#`.\n"
    "- `\"...\"` quotes a value to keep blanks at its ends (an unquoted value is trimmed) or to write\n"
    "  an empty string.\n"
    "- Escapes, quoted or not: `\\#`, `\\$`, `\\\\` and `\\\"`; no other backslash sequence is accepted.\n"
    "- `${section.key}` expands to the resolved value of another key (its deck value, override or\n"
    "  default, itself expanded); `${NAME}` (no dot) to the environment variable NAME. An undefined\n"
    "  variable or a cycle of expansions is an error. A `$` not followed by `{` is literal, and so\n"
    "  is `\\$`. Expanded text is not expanded again.\n"
    "- `-D section.key=value` on the command line replaces the deck's value before expansion and\n"
    "  validation; its value follows the same rules except that `#` is literal. Of several `-D` for\n"
    "  one key the last wins.\n"
    "- A `[sweep]` section turns the deck into numbered variants, one run each; its lines are\n"
    "  `section.key = value, value, ...` with ranges allowed. See doc/sweeps.md, `surge-sweep` and\n"
    "  `surge-train --variant`.\n"
    "- Every key has a default unless it is marked **required**.\n"
    "- An error is one line, `DECK:LINE: [section] key: what is wrong (hint: ...)` (an override is\n"
    "  named `-D section.key=value` instead of `DECK:LINE`), and the program exits with code 2 before\n"
    "  doing anything else. Unknown sections and keys get a \"did you mean\" when one is close.\n"
    "- The resolved deck (every key, defaults included, variables expanded) is echoed when a run\n"
    "  starts and stored in the files it writes; it is itself a deck that reproduces the run.\n"
    "\n"
    "## Types\n"
    "\n"
    "| type | written as |\n"
    "| --- | --- |\n"
    "| integer | decimal digits with an optional sign: `100`, `-3` |\n"
    "| float | a finite decimal number, exponent allowed: `0.05`, `1e-8` |\n"
    "| bool | `true`, `false`, `yes`, `no`, `1`, `0` |\n"
    "| string | any text of the length shown |\n"
    "| name | letters, digits, `.`, `_` and `-`, starting with a letter or digit (safe in file names) |\n"
    "| enum | one of the listed words |\n"
    "| integer list | comma-separated integers: `512,256` |\n"
    "\n"
    "Ranges are written `[lo, hi]`; a parenthesis excludes its end.\n";

void deck_write_reference_md(FILE *f) {
  fputs("# Deck reference\n"
        "\n"
        "<!-- Generated from the parts' rows (core/keys.h, merged by src/io/config_schema.c) by "
        "`tests/test_deck --write-doc doc/deck.md`; "
        "do not edit. -->\n"
        "\n"
        "A deck is the text file that configures a run: `surge-train DECK [-D section.key=value ...]`.\n"
        "\n",
        f);
  fputs(syntax_md, f);
  strbuf_t cell = STRBUF_INIT;
  for (int s = 0; s < cfg_nsections; s++) {
    fprintf(f, "\n## [%s]\n\n%s.\n\n", cfg_sections[s].name, cfg_sections[s].doc);
    fputs("| key | type | default | accepted | meaning |\n| --- | --- | --- | --- | --- |\n", f);
    for (int i = 0; i < cfg_nkeys; i++) {
      const cfg_key_t *k = &cfg_keys[i];
      if (strcmp(k->section, cfg_sections[s].name) != 0) continue;
      fputc('|', f);
      md_cell(f, k->key, 1);
      md_cell(f, cfg_type_name(k->type), 0);
      if (!k->def) md_cell(f, "**required**", 0);
      else md_cell(f, *k->def ? k->def : "\"\"", 1);
      sb_clear(&cell);
      cfg_value_range(k, &cell);
      md_cell(f, sb_str(&cell), 0);
      md_cell(f, k->doc, 0);
      fputc('\n', f);
    }
  }
  sb_free(&cell);
}
