/* Input decks: good decks fill config_t as written (types, comments, quoting, escapes, expansion,
 * -D overrides, defaults), the resolved deck reproduces the config byte for byte, doc/deck.md is
 * what the schema generates, and every bad deck exits with code 2 and one line naming the place and
 * the problem (each error case runs deck_parse in a forked child whose stderr is captured).
 *
 *   tests/test_deck                      run the tests
 *   tests/test_deck --write-doc FILE     regenerate doc/deck.md */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/options.h"
#include "data/dataset.h"
#include "io/config_schema.h"
#include "io/deck.h"
#include "nn/zoo.h"
#include "optim/optim.h"
#include "child.h"
#include "tap.h"

static const char *srcdir(void) {
  const char *s = getenv("SURGE_TOP_SRCDIR");
  return s && *s ? s : ".";
}

static char *src_path(const char *rel) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", srcdir(), rel);
  return buf;
}

/* ---- good decks ---- */

static void test_full_deck(config_t *cfg) {
  deck_t *d = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s", src_path("tests/data/decks/full.deck"));
  deck_load(path, 0, NULL, cfg, &d);
  tap_ok(strcmp(cfg->run_name, "full-1") == 0, "name with trailing comment: '%s'", cfg->run_name);
  tap_ok(cfg->steps == 250 && cfg->eval_every == 50 && cfg->print_every == 5, "run integers");
  tap_ok(cfg->seed == 12345678901ULL, "64-bit seed: %llu", (unsigned long long)cfg->seed);
  tap_ok(strcmp(cfg->out_dir, "/home/deck-tester/out dir/full-1") == 0,
         "quoted out_dir expands ${HOME} and ${run.name}: '%s'", cfg->out_dir);
  tap_ok(strcmp(cfg->zoo, "gpt") == 0, "enum zoo");
  tap_ok(zoo_opts(cfg)->mlp.nhidden == 3 && zoo_opts(cfg)->mlp.hidden[0] == 64 && zoo_opts(cfg)->mlp.hidden[1] == 32 &&
             zoo_opts(cfg)->mlp.hidden[2] == 16 && zoo_opts(cfg)->mlp.hidden[3] == 0,
         "int list with blanks: %d entries", zoo_opts(cfg)->mlp.nhidden);
  tap_ok(zoo_opts(cfg)->vgg.nstages == 1 && zoo_opts(cfg)->vgg.channels[0] == 8, "one-entry list");
  tap_ok(zoo_opts(cfg)->vgg.fc == 48 && zoo_opts(cfg)->resnet.width == 12 && zoo_opts(cfg)->resnet.blocks == 3 && zoo_opts(cfg)->resnet.stages == 1,
         "model ints");
  tap_ok(zoo_opts(cfg)->gpt.layers == 2 && zoo_opts(cfg)->gpt.width == 96 && zoo_opts(cfg)->gpt.heads == 6 && zoo_opts(cfg)->gpt.context == 64,
         "gpt shape");
  tap_ok(strcmp(data_opts(cfg)->source, "text") == 0, "data source");
  tap_ok(strcmp(data_opts(cfg)->path, "corpus#1.txt") == 0, "escaped '#' kept, comment dropped: '%s'",
         data_opts(cfg)->path);
  tap_ok(data_opts(cfg)->train_samples == 1000 && data_opts(cfg)->test_samples == 200 && data_opts(cfg)->synthetic_samples == 512,
         "sample counts");
  tap_ok(data_opts(cfg)->val_fraction == 0.1, "val_fraction %g", data_opts(cfg)->val_fraction);
  tap_ok(cfg->global_batch == 32 && strcmp(optim_opts(cfg)->name, "adamw") == 0, "batch and optimizer");
  tap_ok(optim_opts(cfg)->schedule.lr == 3e-4 && optim_opts(cfg)->momentum == 0 && optim_opts(cfg)->weight_decay == 0.01 && optim_opts(cfg)->beta1 == 0.85 &&
             optim_opts(cfg)->beta2 == 0.999 && optim_opts(cfg)->eps == 1e-10 && optim_opts(cfg)->schedule.min_lr == 1e-5 && optim_opts(cfg)->clip_norm == 1.0,
         "floats, exponent notation included");
  tap_ok(optim_opts(cfg)->nesterov == 1, "bool 'yes'");
  tap_ok(strcmp(optim_opts(cfg)->schedule.kind, "cosine") == 0 && optim_opts(cfg)->schedule.warmup_steps == 20, "schedule");
  tap_ok(strcmp(backend_deck(cfg)->name, "ref") == 0 && backend_deck(cfg)->threads == 2, "backend (tab-indented key)");
  const char *w = deck_where(d, "run.steps");
  tap_ok(w && strstr(w, "tests/data/decks/full.deck:4") && strcmp(w + strlen(w) - 2, ":4") == 0,
         "where run.steps: %s", w ? w : "(null)");
  w = deck_where(d, "backend.threads");
  tap_ok(w && strstr(w, "full.deck:48"), "where backend.threads: %s", w ? w : "(null)");
  tap_ok(deck_where(d, "run.bogus") == NULL && deck_where(d, "nodot") == NULL,
         "where of unknown keys is NULL");
  deck_free(d);
}

static void test_defaults(void) {
  config_t c;
  deck_t *d = NULL;
  deck_parse("[model]\nzoo = mlp\n", "min.deck", 0, NULL, &c, &d);
  tap_ok(strcmp(c.run_name, "run") == 0 && c.steps == 100 && c.seed == 1 && c.eval_every == 0 &&
             c.print_every == 10,
         "run defaults");
  tap_ok(strcmp(c.out_dir, "runs/run") == 0, "default out_dir expands ${run.name}: '%s'", c.out_dir);
  tap_ok(zoo_opts(&c)->mlp.nhidden == 2 && zoo_opts(&c)->mlp.hidden[0] == 512 && zoo_opts(&c)->mlp.hidden[1] == 512, "mlp_hidden 512,512");
  tap_ok(zoo_opts(&c)->vgg.nstages == 2 && zoo_opts(&c)->vgg.channels[0] == 32 && zoo_opts(&c)->vgg.channels[1] == 64 && zoo_opts(&c)->vgg.fc == 256,
         "vgg defaults");
  tap_ok(zoo_opts(&c)->resnet.width == 16 && zoo_opts(&c)->resnet.blocks == 2 && zoo_opts(&c)->resnet.stages == 2, "resnet defaults");
  tap_ok(zoo_opts(&c)->gpt.layers == 4 && zoo_opts(&c)->gpt.width == 256 && zoo_opts(&c)->gpt.heads == 4 && zoo_opts(&c)->gpt.context == 128, "gpt defaults");
  tap_ok(strcmp(data_opts(&c)->source, "fashion-mnist") == 0 && data_opts(&c)->path[0] == '\0' && data_opts(&c)->train_samples == 0 &&
             data_opts(&c)->test_samples == 0 && data_opts(&c)->val_fraction == 0.05 && data_opts(&c)->synthetic_samples == 4096,
         "data defaults");
  tap_ok(c.global_batch == 128 && strcmp(optim_opts(&c)->name, "sgd") == 0 && optim_opts(&c)->schedule.lr == 0.05 && optim_opts(&c)->momentum == 0.9 &&
             optim_opts(&c)->nesterov == 0 && optim_opts(&c)->weight_decay == 0 && optim_opts(&c)->beta1 == 0.9 && optim_opts(&c)->beta2 == 0.95 && optim_opts(&c)->eps == 1e-8,
         "optimizer defaults");
  tap_ok(strcmp(optim_opts(&c)->schedule.kind, "constant") == 0 && optim_opts(&c)->schedule.warmup_steps == 0 && optim_opts(&c)->schedule.min_lr == 0 && optim_opts(&c)->clip_norm == 0,
         "schedule defaults");
  tap_ok(strcmp(backend_deck(&c)->name, "cpu") == 0 && backend_deck(&c)->threads == 1, "backend defaults");
  int defaults = 0;
  for (int i = 0; i < cfg_nkeys; i++) {
    char sk[128];
    snprintf(sk, sizeof sk, "%s.%s", cfg_keys[i].section, cfg_keys[i].key);
    const char *w = deck_where(d, sk);
    defaults += deck_is_default(d, sk) && w && strcmp(w, "min.deck (default value)") == 0;
  }
  tap_ok(defaults == cfg_nkeys - 1 && strcmp(deck_where(d, "model.zoo"), "min.deck:2") == 0,
         "every key but zoo comes from its default (%d of %d)", defaults, cfg_nkeys);
  deck_free(d);
}

static void test_overrides(void) {
  const char *text = "[run]\nname = a\n[model]\nzoo = mlp\n[train]\nlr = 0.1   # deck value\n";
  char *ov[] = {"train.lr=0.2", "run.name=b",      "run.out_dir=/tmp/${run.name}/x",
                "train.lr=0.3", "data.path=a#b c", "model.mlp_hidden=7"};
  config_t c;
  deck_t *d = NULL;
  deck_parse(text, "ov.deck", 6, ov, &c, &d);
  tap_ok(optim_opts(&c)->schedule.lr == 0.3, "-D wins over the deck, the last -D wins: lr %g", optim_opts(&c)->schedule.lr);
  tap_ok(strcmp(c.run_name, "b") == 0 && strcmp(c.out_dir, "/tmp/b/x") == 0,
         "-D values expand and see other overrides: out_dir '%s'", c.out_dir);
  tap_ok(strcmp(data_opts(&c)->path, "a#b c") == 0, "'#' in a -D value is literal: '%s'", data_opts(&c)->path);
  tap_ok(zoo_opts(&c)->mlp.nhidden == 1 && zoo_opts(&c)->mlp.hidden[0] == 7 && zoo_opts(&c)->mlp.hidden[1] == 0, "-D replaces a whole list");
  tap_ok(strcmp(deck_where(d, "train.lr"), "-D train.lr=0.3") == 0, "where of an overridden key: %s",
         deck_where(d, "train.lr"));
  tap_ok(strcmp(deck_where(d, "model.zoo"), "ov.deck:4") == 0, "where of a deck key: %s",
         deck_where(d, "model.zoo"));
  deck_free(d);
}

static void test_syntax_corners(void) {
  config_t c;
  /* CRLF line endings, blank lines, a reopened section, '$' without '{', empty quoted string,
   * escapes in quotes, a key set only through a later section header */
  const char *text =
      "\r\n[data]\r\npath = \"\"\r\n[model]  # comment after header\r\nzoo=resnet-mini\r\n"
      "[run]\nname=x\n[data]\nsource = synthetic\n[run]\nout_dir = \"  a\\\"b\\\\c \\$d $e \"\n";
  deck_parse(text, "corner.deck", 0, NULL, &c, NULL);
  tap_ok(strcmp(c.zoo, "resnet-mini") == 0 && strcmp(data_opts(&c)->source, "synthetic") == 0 &&
             data_opts(&c)->path[0] == '\0',
         "CRLF, reopened sections, empty quoted string");
  tap_ok(strcmp(c.out_dir, "  a\"b\\c $d $e ") == 0, "quoted blanks and escapes: '%s'", c.out_dir);
  for (const char *const *v = (const char *const[]){"true", "1", "no", "0", NULL}; *v; v++) {
    char buf[128];
    snprintf(buf, sizeof buf, "[model]\nzoo=mlp\n[train]\nnesterov = %s\n", *v);
    deck_parse(buf, "bool.deck", 0, NULL, &c, NULL);
    tap_ok(optim_opts(&c)->nesterov == (strcmp(*v, "true") == 0 || strcmp(*v, "1") == 0), "bool '%s' -> %d", *v,
           optim_opts(&c)->nesterov);
  }
}

/* deck_resolved_text of cfg parses back to the same bytes. */
static void check_round_trip(const config_t *cfg, const char *what) {
  char *text = deck_resolved_text(cfg);
  config_t again;
  memset(&again, 0xA5, sizeof again); /* deck_parse must zero it */
  deck_parse(text, "resolved.deck", 0, NULL, &again, NULL);
  tap_ok(memcmp(cfg, &again, sizeof again) == 0, "resolved deck of %s re-parses to an identical config_t",
         what);
  free(text);
}

static void test_resolved_text(const config_t *full) {
  char *text = deck_resolved_text(full);
  tap_ok(strstr(text, "\n[run]\nname = full-1\n") &&
             strstr(text, "out_dir = \"/home/deck-tester/out dir/full-1\"\n") &&
             strstr(text, "mlp_hidden = 64,32,16\n") && strstr(text, "lr = 0.0003\n") &&
             strstr(text, "nesterov = true\n") && strstr(text, "path = corpus\\#1.txt\n"),
         "resolved text holds expanded, escaped, re-quoted values");
  int headers = 0;
  for (const char *p = text; (p = strstr(p, "\n[")) != NULL; p++) headers++;
  tap_ok(headers == cfg_nsections, "resolved text has every section once (%d)", headers);
  free(text);
  check_round_trip(full, "full.deck");
  config_t c;
  deck_parse("[model]\nzoo=vgg-mini\n", "min.deck", 0, NULL, &c, NULL);
  check_round_trip(&c, "the defaults");
  char *ov[] = {"data.path=\\\"q\\\" \\$x \\\\ #1 ", "train.lr=0.1", "train.eps=1e-300",
                "run.seed=9223372036854775807"};
  deck_parse("[model]\nzoo=mlp\n", "min.deck", 4, ov, &c, NULL);
  tap_ok(strcmp(data_opts(&c)->path, "\"q\" $x \\ #1") == 0 && c.seed == 9223372036854775807ULL,
         "awkward values parsed: '%s'", data_opts(&c)->path);
  check_round_trip(&c, "awkward strings and extreme numbers");
}

static void test_schema(void) {
  int ok = 1;
  for (int i = 0; i < cfg_nkeys; i++) {
    const cfg_key_t *k = &cfg_keys[i];
    if (cfg_find_section(k->section) < 0)
      ok = 0, tap_diag("%s.%s: section not in cfg_sections", k->section, k->key);
    if (cfg_find_key(k->section, k->key) != i) ok = 0, tap_diag("%s.%s: declared twice", k->section, k->key);
    if (k->type == CFG_INT &&
        !(k->size == sizeof(int) ? k->imax <= INT_MAX && k->imin >= INT_MIN : k->size == 8))
      ok = 0, tap_diag("%s.%s: range does not fit the field", k->section, k->key);
    if (k->type == CFG_ENUM)
      for (int v = 0; k->values[v]; v++)
        if (strlen(k->values[v]) >= k->size)
          ok = 0, tap_diag("%s.%s: '%s' does not fit", k->section, k->key, k->values[v]);
    if ((k->type == CFG_BOOL || k->type == CFG_FLOAT) &&
        k->size != (k->type == CFG_BOOL ? sizeof(int) : sizeof(double)))
      ok = 0, tap_diag("%s.%s: field size", k->section, k->key);
    if (k->type == CFG_INT_LIST && k->size / sizeof(int) > CFG_MAX_LIST)
      ok = 0, tap_diag("%s.%s: list longer than CFG_MAX_LIST", k->section, k->key);
  }
  tap_ok(ok, "schema: %d keys in %d sections, each once, fields match types and ranges", cfg_nkeys,
         cfg_nsections);
  const char *words[] = {"momentum", "warmup_steps", "gpt_width", NULL}, *zoo[] = {"mlp", "gpt", NULL};
  tap_ok(cfg_closest("momentun", words, -1) == words[0] && cfg_closest("warmup", words, -1) == words[1] &&
             cfg_closest("gpt_widht", words, -1) == words[2] && cfg_closest("gtp", zoo, -1) == zoo[1] &&
             cfg_closest("xyz", words, -1) == NULL,
         "did-you-mean: distance <= 2 (a swap counts 1) or a prefix");
}

static void test_reference_doc(void) {
  char *want = NULL;
  size_t want_len = 0;
  FILE *m = open_memstream(&want, &want_len);
  deck_write_reference_md(m);
  fclose(m);
  const char *path = src_path("doc/deck.md");
  FILE *f = fopen(path, "rb");
  char *have = calloc(want_len + 2, 1);
  size_t have_len = 0;
  if (f) {
    have_len = fread(have, 1, want_len + 1, f);
    fclose(f);
  }
  int same = have_len == want_len && memcmp(have, want, want_len) == 0;
  if (!same) tap_diag("regenerate it: tests/test_deck --write-doc %s", path);
  tap_ok(same, "doc/deck.md is what deck_write_reference_md writes (%zu bytes)", want_len);
  tap_ok(strstr(want, "| `lr` | float | `0.05` | [0, 10] |") &&
             strstr(want, "| `zoo` | enum | **required** |") && strstr(want, "## [backend]"),
         "reference lists keys with type, default and range");
  free(have);
  free(want);
}

/* ---- bad decks: each must exit 2 with one line holding every expected phrase ---- */

typedef struct err_case {
  const char *what;
  const char *text; /* deck text; NULL: deck_load(path) */
  const char *path;
  int nov;
  const char *ov[3];
  const char *expect[5]; /* phrases the message must contain */
} err_case_t;

#define Z "[model]\nzoo = mlp\n" /* the required key, lines 1-2 */
#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10

static const err_case_t err_cases[] = {
    {"unknown key, close match",
     Z "[train]\nmomentun = 0.9\n",
     "bad.deck",
     0,
     {0},
     {"surge: error: bad.deck:4: [train] momentun: unknown key (hint: did you mean momentum?)"}},
    {"unknown key, no match",
     Z "[train]\nfoo = 1\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] foo: unknown key", "keys of [train]: global_batch, micro_batches, optimizer, lr,"}},
    {"key of another section",
     "[train]\nzoo = mlp\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:2: [train] zoo: unknown key", "did you mean [model] zoo?"}},
    {"unknown section, close match",
     "[trian]\n",
     "bad.deck",
     0,
     {0},
     {"surge: error: bad.deck:1: unknown section [trian] (hint: did you mean [train]?)"}},
    {"unknown section, no match",
     Z "[optimizer]\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:3: unknown section [optimizer]", "sections: [run], [model], [data], [train], [parallel], [compress], [multiplex], [log], [checkpoint], [backend]"}},
    {"wrong type",
     Z "[run]\nsteps = ten\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] steps: expected an integer, got \"ten\"", "an integer in [1, 1000000000]"}},
    {"integer out of range",
     Z "[run]\nsteps = 0\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] steps: 0 is out of range [1, 1000000000]"}},
    {"integer overflow",
     Z "[run]\nseed = 99999999999999999999\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] seed:", "out of range [0, 9223372036854775807]"}},
    {"float at an open bound",
     Z "[train]\nbeta1 = 1\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] beta1: 1 is out of range [0, 1)"}},
    {"float at an open lower bound",
     Z "[train]\neps = 0\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] eps: 0 is out of range (0, 1]"}},
    {"a default value blamed",
     Z "[run]\nname = nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
       "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
       "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck (default value): [run] out_dir: is 256 characters long"}},
    {"float not finite",
     Z "[train]\nlr = nan\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] lr: expected a finite decimal number, got \"nan\"", "a number in [0, 10]"}},
    {"float in hex (strtod reads it; a deck's numbers are decimal)",
     Z "[train]\nlr = 0x1p-4\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] lr: expected a finite decimal number, got \"0x1p-4\""}},
    {"bad bool",
     Z "[train]\nnesterov = maybe\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] nesterov: expected a bool, got \"maybe\"", "true, false, yes, no, 1, 0"}},
    {"bad enum value",
     "[model]\nzoo = vgg\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:2: [model] zoo: \"vgg\" is not an accepted value",
      "did you mean vgg16? accepted: mlp, vgg-mini, resnet-mini, gpt, vgg16, resnet18, resnet50, wrn50, wrn101"}},
    {"list too long",
     Z "mlp_hidden = 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:3: [model] mlp_hidden: has 17 entries, at most 16 allowed"}},
    {"list entry out of range",
     Z "mlp_hidden = 64, 0\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:3: [model] mlp_hidden: entry 2 (0) is out of range [1, 65536]"}},
    {"list entry empty",
     Z "mlp_hidden = 64,,3\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:3: [model] mlp_hidden: entry 2 is empty"}},
    {"list entry not an integer",
     Z "mlp_hidden = 64,1.5\n",
     "bad.deck",
     0,
     {0},
     {"[model] mlp_hidden: entry 2 \"1.5\" is not an integer"}},
    {"name with a slash",
     Z "[run]\nname = a/b\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] name: \"a/b\" has a character other than A-Z a-z 0-9 . _ -"}},
    {"empty string",
     Z "[run]\nout_dir = \"\"\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: must not be empty"}},
    {"string too long",
     Z "[run]\nout_dir = ${run.name}${run.name}${run.name}${run.name}\nname = " X100 "\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: is 400 characters long, more than the 255 allowed"}},
    {"duplicate key",
     Z "[train]\nlr = 0.1\n\nlr = 0.2\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:6: [train] lr: set twice: first at bad.deck:4, again at line 6"}},
    {"duplicate key in a reopened section",
     "[train]\nlr = 0.1\n" Z "[train]\nlr = 0.2\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:6: [train] lr: set twice: first at bad.deck:2"}},
    {"undefined ${section.key}",
     Z "[run]\nout_dir = x/${run.nme}\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: undefined variable ${run.nme} (hint: did you mean ${run.name}?)"}},
    {"undefined ${ENV}",
     Z "[data]\npath = ${SURGE_TEST_UNDEFINED_VARIABLE}/x\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [data] path: undefined variable ${SURGE_TEST_UNDEFINED_VARIABLE}"}},
    {"expansion cycle",
     Z "[run]\nname = ${run.out_dir}\nout_dir = x${run.name}\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:5: [run] out_dir: expansion cycle run.name -> run.out_dir -> run.name"}},
    {"self reference",
     Z "[train]\nlr = ${train.lr}\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] lr: expansion cycle train.lr -> train.lr"}},
    {"unterminated ${",
     Z "[run]\nout_dir = a${run.name\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: unterminated ${"}},
    {"environment value with a newline",
     Z "[run]\nout_dir = ${SURGE_TEST_NEWLINE}\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: \"a?b\" contains a control character"}},
    {"-D without '='",
     Z,
     "bad.deck",
     1,
     {"run.name"},
     {"surge: error: -D run.name: expected section.key=value"}},
    {"-D without a section",
     Z,
     "bad.deck",
     1,
     {"steps=3"},
     {"-D steps=3: expected section.key=value", "-D train.lr=0.1"}},
    {"-D unknown key",
     Z,
     "bad.deck",
     1,
     {"run.nmae=x"},
     {"-D run.nmae=x: [run] nmae: unknown key (hint: did you mean name?)"}},
    {"-D unknown section",
     Z,
     "bad.deck",
     1,
     {"rnu.name=x"},
     {"-D rnu.name=x: unknown section [rnu] (hint: did you mean [run]?)"}},
    {"-D wrong type",
     Z,
     "bad.deck",
     2,
     {"train.lr=0.1", "train.lr=abc"},
     {"-D train.lr=abc: [train] lr: expected a finite decimal number, got \"abc\""}},
    {"missing required zoo",
     "[run]\nname = x\n",
     "bad.deck",
     0,
     {0},
     {"surge: error: bad.deck: [model] zoo: required key is missing",
      "one of: mlp, vgg-mini, resnet-mini, gpt"}},
    {"unterminated quote",
     Z "[run]\nout_dir = \"abc\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: unterminated quote"}},
    {"text after a quote",
     Z "[run]\nout_dir = \"a\" b\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [run] out_dir: text after the closing quote"}},
    {"quote inside a value",
     Z "[run]\nout_dir = a\"b\n",
     "bad.deck",
     0,
     {0},
     {"a quote inside an unquoted value"}},
    {"unknown escape",
     Z "[data]\npath = a\\qb\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [data] path: unknown escape '\\q'"}},
    {"key before any section",
     "steps = 3\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:1: key \"steps\" before any [section]", "[run], [model]"}},
    {"line without '='",
     Z "[run]\nsteps 3\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: expected '=' after \"steps\""}},
    {"no key before '='", Z "[run]\n = 3\n", "bad.deck", 0, {0}, {"bad.deck:4: no key before '='"}},
    {"header without ']'", Z "[run\n", "bad.deck", 0, {0}, {"bad.deck:3: section header without ']'"}},
    {"control character",
     Z "[run]\nname = a\001b\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: control character 0x01"}},
    {"gpt heads do not divide width",
     Z "gpt_heads = 5\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:3: [model] gpt_heads: gpt_heads (5) must divide gpt_width (256)"}},
    {"gpt width blamed when heads is a default",
     Z "gpt_width = 250\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:3: [model] gpt_width: gpt_heads (4) must divide gpt_width (250)"}},
    {"min_lr above lr",
     Z "[train]\nlr = 0.01\nmin_lr = 0.1\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:5: [train] min_lr: min_lr (0.1) is above lr (0.01)"}},
    {"first error in file order",
     Z "[train]\nlr = x\n[run]\nsteps = y\n",
     "bad.deck",
     0,
     {0},
     {"bad.deck:4: [train] lr:"}},
    {"missing file",
     NULL,
     "/nonexistent/surge.deck",
     0,
     {0},
     {"surge: error: /nonexistent/surge.deck: cannot open the deck: No such file or directory"}},
    {"directory instead of a file", NULL, "/", 0, {0}, {"/: not a regular file"}},
};

static void run_err_case(const void *arg) {
  const err_case_t *c = arg;
  config_t cfg;
  if (c->text) deck_parse(c->text, c->path, c->nov, (char *const *)c->ov, &cfg, NULL);
  else deck_load(c->path, c->nov, (char *const *)c->ov, &cfg, NULL);
}

static void test_error_cases(void) {
  setenv("SURGE_TEST_NEWLINE", "a\nb", 1);
  unsetenv("SURGE_TEST_UNDEFINED_VARIABLE");
  for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++) {
    const err_case_t *c = &err_cases[i];
    expect_input_error_all(run_err_case, c, c->what, c->expect, 5);
  }
}

static void write_big_file_and_load(const void *path) {
  config_t cfg;
  deck_load(path, 0, NULL, &cfg, NULL);
}

static void test_file_limits(void) {
  char path[] = "/tmp/surge-test-deck-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    tap_ok(0, "mkstemp");
    return;
  }
  FILE *f = fdopen(fd, "wb");
  for (int i = 0; i < DECK_MAX_BYTES; i++) fputc('#', f);
  fputs("\n", f);
  fclose(f);
  char expect[128];
  snprintf(expect, sizeof expect, "the deck is %d bytes, more than the %d allowed", DECK_MAX_BYTES + 1,
           DECK_MAX_BYTES);
  const char *e[] = {path, expect};
  expect_input_error_all(write_big_file_and_load, path, "deck over 1 MiB", e, 2);
  f = fopen(path, "wb");
  fputs("[model]\nzoo = mlp\0[run]\n", f); /* fputs stops at the NUL: write it explicitly */
  fwrite("\0", 1, 1, f);
  fclose(f);
  expect_input_error(write_big_file_and_load, path, "NUL byte in a deck", "the deck has NUL bytes");
  unlink(path);
}

static void key_error_after_parse(const void *arg) {
  (void)arg;
  config_t cfg;
  deck_t *d = NULL;
  deck_parse("[model]\nzoo = gpt\ngpt_width = 64\n", "shape.deck", 0, NULL, &cfg, &d);
  deck_key_error(d, "model.gpt_width", "too narrow for %d heads (hint: at least %d)", 128, 128);
}

static void test_key_error(void) {
  expect_input_error(key_error_after_parse, NULL, "deck_key_error blames the key's line",
                     "surge: error: shape.deck:3: [model] gpt_width: too narrow for 128 heads (hint: at least 128)");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-doc") == 0) {
    FILE *f = fopen(argv[2], "wb");
    if (!f) {
      perror(argv[2]);
      return 1;
    }
    deck_write_reference_md(f);
    return fclose(f) == 0 ? 0 : 1;
  }
  setenv("HOME", "/home/deck-tester", 1);
  config_t full;
  test_schema();
  test_full_deck(&full);
  test_defaults();
  test_overrides();
  test_syntax_corners();
  test_resolved_text(&full);
  test_reference_doc();
  test_error_cases();
  test_file_limits();
  test_key_error();
  return tap_done();
}
