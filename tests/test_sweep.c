/* Parameter sweeps (io/sweep.h) in-process: product and zip expansion (counts, the value of every
 * key in every variant, the first line varying slowest), integer, float and log ranges with and
 * without landing on stop, lists mixing values and ranges, quoting and escapes, distinct run names
 * and out_dirs, -D over swept values, errors blamed on the [sweep] line, and the two ways out of a
 * variant (its -D arguments, its resolved deck) reproducing it byte for byte. Bad sweeps (exit 2)
 * and the programs are tested by tests/test_sweep_programs.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "io/deck.h"
#include "io/sweep.h"
#include "nn/zoo.h"
#include "optim/optim.h"
#include "tap.h"

static const char base_deck[] = "[run]\nname = demo\nsteps = 1\n[model]\nzoo = mlp\n";

/* base_deck followed by a [sweep] section (static; one deck at a time). */
static const char *with_sweep(const char *sweep_lines) {
  static char text[4096];
  snprintf(text, sizeof text, "%s[sweep]\n%s", base_deck, sweep_lines);
  return text;
}

/* Value of key k in variant i, as the deck writes it (static). */
static const char *value(const sweep_t *s, long i, int k) {
  static strbuf_t b = STRBUF_INIT;
  sb_clear(&b);
  sweep_value(s, i, k, &b);
  return sb_str(&b);
}

/* 1 if key k takes exactly the values want[0..n) in variants 0..n-1. */
static int values_are(const sweep_t *s, int k, const char *const *want, long n) {
  int ok = sweep_count(s) == n;
  for (long i = 0; ok && i < n; i++)
    if (strcmp(value(s, i, k), want[i]) != 0) {
      tap_diag("%s variant %ld: '%s', expected '%s'", sweep_key(s, k), i, value(s, i, k), want[i]);
      ok = 0;
    }
  return ok;
}

/* The values of a one-line sweep of `key = items`. */
static int line_values_are(const char *key, const char *items, const char *const *want, long n) {
  char line[512];
  snprintf(line, sizeof line, "%s = %s\n", key, items);
  sweep_t *s = sweep_parse(with_sweep(line), "t.deck");
  int ok = s && values_are(s, 0, want, n);
  if (s && sweep_count(s) != n) tap_diag("%s: %ld values, expected %ld", items, sweep_count(s), n);
  sweep_free(s);
  return ok;
}

static void test_product(void) {
  sweep_t *s = sweep_parse(with_sweep("train.lr = 0.1, 0.2, 0.3  # three\nmodel.mlp_hidden = 8, \"16,16\"\n"),
                           "p.deck");
  tap_ok(s && sweep_count(s) == 6 && sweep_nkeys(s) == 2, "product of 3 x 2 values: %ld variants",
         s ? sweep_count(s) : -1);
  tap_ok(strcmp(sweep_key(s, 0), "train.lr") == 0 && strcmp(sweep_key(s, 1), "model.mlp_hidden") == 0,
         "swept keys in deck order");
  static const char *const lr[] = {"0.1", "0.1", "0.2", "0.2", "0.3", "0.3"};
  static const char *const hidden[] = {"8", "16,16", "8", "16,16", "8", "16,16"};
  tap_ok(values_are(s, 0, lr, 6) && values_are(s, 1, hidden, 6), "product: the first line varies slowest");
  config_t c;
  deck_t *d;
  sweep_resolve(s, 3, with_sweep("train.lr = 0.1, 0.2, 0.3  # three\nmodel.mlp_hidden = 8, \"16,16\"\n"), 0,
                NULL, &c, &d);
  tap_ok(optim_opts(&c)->schedule.lr == 0.2 && zoo_opts(&c)->mlp.nhidden == 2 && zoo_opts(&c)->mlp.hidden[0] == 16 && zoo_opts(&c)->mlp.hidden[1] == 16 && c.steps == 1,
         "variant 3 resolved: lr %g, mlp_hidden %d entries", optim_opts(&c)->schedule.lr, zoo_opts(&c)->mlp.nhidden);
  tap_ok(strcmp(c.run_name, "demo-v3") == 0 && strcmp(c.out_dir, "runs/demo-v3") == 0,
         "variant 3 named '%s', out_dir '%s'", c.run_name, c.out_dir);
  const char *w = deck_where(d, "train.lr");
  tap_ok(w && strcmp(w, "p.deck:7 (variant 3)") == 0, "a swept value is blamed on its line: %s", w ? w : "-");
  w = deck_where(d, "run.steps");
  tap_ok(w && strcmp(w, "p.deck:3") == 0, "a deck value keeps its line: %s", w ? w : "-");
  deck_free(d);
  sweep_free(s);
}

static void test_zip(void) {
  const char *text = with_sweep("train.lr = 0.1, 0.2, 0.3\nmode = zip\nrun.seed = 7, 8, 9\n");
  sweep_t *s = sweep_parse(text, "z.deck");
  static const char *const lr[] = {"0.1", "0.2", "0.3"};
  static const char *const seed[] = {"7", "8", "9"};
  tap_ok(s && values_are(s, 0, lr, 3) && values_are(s, 1, seed, 3),
         "zip (mode after the keys): 3 variants, the i-th value of each line");
  config_t c;
  sweep_resolve(s, 2, text, 0, NULL, &c, NULL);
  tap_ok(optim_opts(&c)->schedule.lr == 0.3 && c.seed == 9 && strcmp(c.run_name, "demo-v2") == 0,
         "zip variant 2: lr %g seed %llu %s", optim_opts(&c)->schedule.lr, (unsigned long long)c.seed, c.run_name);
  sweep_free(s);
}

static void test_int_ranges(void) {
  static const char *const landing[] = {"1", "4", "7", "10"};
  tap_ok(line_values_are("run.seed", "1:10:3", landing, 4), "1:10:3 lands on 10: 1,4,7,10");
  static const char *const short_of[] = {"1", "4", "7"};
  tap_ok(line_values_are("run.seed", "1:9:3", short_of, 3), "1:9:3 stops before 9: 1,4,7");
  static const char *const down[] = {"10", "6", "2"};
  tap_ok(line_values_are("run.steps", "10:1:-4", down, 3), "10:1:-4 counts down: 10,6,2");
  static const char *const one[] = {"5"};
  tap_ok(line_values_are("run.seed", "5:5:2", one, 1), "5:5:2 is one value");
  static const char *const mixed[] = {"0", "5", "6", "7", "100"};
  tap_ok(line_values_are("run.seed", "0, 5:7:1, 100", mixed, 5), "values and ranges mix in one list");
  sweep_t *s = sweep_parse(with_sweep("run.seed = 0:9223372036854775807:92233720368547758\n"), "big.deck");
  tap_ok(s && sweep_count(s) == 101 && strcmp(value(s, 100, 0), "9223372036854775800") == 0,
         "a range over the whole int64 span: %ld values, last %s", s ? sweep_count(s) : -1,
         s ? value(s, 100, 0) : "-");
  sweep_free(s);
  s = sweep_parse(with_sweep("run.seed = 1:100000:1\n"), "max.deck");
  tap_ok(s && sweep_count(s) == SWEEP_MAX_VARIANTS && strcmp(value(s, 99999, 0), "100000") == 0,
         "exactly the limit of %ld variants is accepted", SWEEP_MAX_VARIANTS);
  sweep_free(s);
}

static void test_float_ranges(void) {
  static const char *const milli[] = {"0.001", "0.002", "0.003", "0.004"};
  tap_ok(line_values_are("train.lr", "1e-3:4e-3:1e-3", milli, 4), "1e-3:4e-3:1e-3: 0.001 .. 0.004, no drift");
  static const char *const tenths[] = {"0.1", "0.3", "0.5", "0.7"};
  tap_ok(line_values_are("train.lr", "0.1:0.7:0.2", tenths, 4), "0.1:0.7:0.2 lands on 0.7 despite rounding");
  static const char *const short_of[] = {"0", "0.3", "0.6", "0.9"};
  tap_ok(line_values_are("train.lr", "0:1:0.3", short_of, 4), "0:1:0.3 stops at 0.9");
  static const char *const through_zero[] = {"-0.3", "-0.2", "-0.1", "0", "0.1", "0.2", "0.3"};
  tap_ok(line_values_are("train.lr", "-0.3:0.3:0.1", through_zero, 7), "-0.3:0.3:0.1 passes exactly 0");
  static const char *const down[] = {"1", "0.5", "0"};
  tap_ok(line_values_are("train.lr", "1.0:0:-0.5", down, 3), "1.0:0:-0.5 counts down");
  static const char *const logs[] = {"0.0001", "0.001", "0.01", "0.1"};
  tap_ok(line_values_are("train.lr", "log:1e-4:1e-1:4", logs, 4), "log:1e-4:1e-1:4: four decades");
  static const char *const halves[] = {"1", "0.5", "0.25"};
  tap_ok(line_values_are("train.lr", "log:1:0.25:3", halves, 3), "log:1:0.25:3 halves");
  /* 1000 steps of 1e-3: every value reads back as the decimal start + j * step */
  sweep_t *s = sweep_parse(with_sweep("train.lr = 0:1:0.001\n"), "f.deck");
  int exact = s && sweep_count(s) == 1001;
  for (long j = 0; exact && j <= 1000; j++) {
    char want[32];
    snprintf(want, sizeof want, "%.15g", (double)j / 1000);
    exact = strcmp(value(s, j, 0), want) == 0;
    if (!exact) tap_diag("value %ld: %s, expected %s", j, value(s, j, 0), want);
  }
  tap_ok(exact, "0:1:0.001: 1001 values, each the decimal j/1000");
  sweep_free(s);
}

static void test_quoting(void) {
  const char *text = with_sweep("mode = zip\n"
                                "data.path = \"a b\", \"c#d\" , \\#x, \"\", \"q\\\"uote\", \"1:2:3\", "
                                "\" sp \", log.txt   # comment\n"
                                "run.seed = 0:7:1\n");
  sweep_t *s = sweep_parse(text, "q.deck");
  static const char *const raw[] = {"a b", "c#d", "\\#x", "", "q\\\"uote", "1:2:3", " sp ", "log.txt"};
  tap_ok(s && values_are(s, 0, raw, 8),
         "quoted values keep blanks, commas, '#' and ':'; escapes kept as written");
  static const char *const resolved[] = {"a b", "c#d", "#x", "", "q\"uote", "1:2:3", " sp ", "log.txt"};
  int ok = s != NULL;
  for (long i = 0; ok && i < 8; i++) {
    config_t c;
    sweep_resolve(s, i, text, 0, NULL, &c, NULL);
    ok = strcmp(data_opts(&c)->path, resolved[i]) == 0;
    if (!ok) tap_diag("variant %ld: data.path '%s', expected '%s'", i, data_opts(&c)->path, resolved[i]);
  }
  tap_ok(ok, "each variant's data.path is the value with its escapes applied");
  sweep_free(s);
  /* not made of numbers and colons only: a plain value, however many numbers lead it */
  static const char *const plain[] = {"1:2:3:4:x", "1:x:2", "a:1:2"};
  s = sweep_parse(with_sweep("data.path = 1:2:3:4:x, 1:x:2, a:1:2\n"), "p.deck");
  tap_ok(s && values_are(s, 0, plain, 3), "unquoted values with a part that is not a number are plain values");
  sweep_free(s);
}

static void test_names(void) {
  const char *text = with_sweep("run.seed = 1:12:1\n");
  sweep_t *s = sweep_parse(text, "n.deck");
  int distinct = 1;
  char names[12][CFG_STR];
  for (long i = 0; i < 12; i++) {
    config_t c;
    sweep_resolve(s, i, text, 0, NULL, &c, NULL);
    snprintf(names[i], CFG_STR, "%s", c.run_name);
    for (long j = 0; j < i; j++) distinct &= strcmp(names[i], names[j]) != 0;
  }
  tap_ok(distinct && strcmp(names[0], "demo-v00") == 0 && strcmp(names[11], "demo-v11") == 0,
         "12 variants: distinct names zero-padded to 2 digits (%s .. %s)", names[0], names[11]);
  tap_ok(!sweep_names_itself(s), "a sweep of other keys suffixes run.name");
  char *ov[] = {"run.name=mine"};
  config_t c;
  sweep_resolve(s, 4, text, 1, ov, &c, NULL);
  tap_ok(strcmp(c.run_name, "mine-v04") == 0 && strcmp(c.out_dir, "runs/mine-v04") == 0,
         "-D run.name gets the suffix too: %s in %s", c.run_name, c.out_dir);
  sweep_free(s);

  text = with_sweep("run.name = small, large\n");
  s = sweep_parse(text, "n.deck");
  sweep_resolve(s, 1, text, 0, NULL, &c, NULL);
  tap_ok(sweep_names_itself(s) && strcmp(c.run_name, "large") == 0 && strcmp(c.out_dir, "runs/large") == 0,
         "a swept run.name is used as is: %s", c.run_name);
  sweep_free(s);
  text = with_sweep("run.out_dir = \"/tmp/a b\", /tmp/c\n");
  s = sweep_parse(text, "n.deck");
  sweep_resolve(s, 0, text, 0, NULL, &c, NULL);
  tap_ok(sweep_names_itself(s) && strcmp(c.run_name, "demo") == 0 && strcmp(c.out_dir, "/tmp/a b") == 0,
         "a swept run.out_dir leaves run.name alone: %s in '%s'", c.run_name, c.out_dir);
  sweep_free(s);
}

static void count_visit(long i, const config_t *cfg, void *arg) {
  long *seen = arg;
  if (i == seen[0] && cfg->seed == (uint64_t)(10 + i)) seen[0]++;
}

static void test_overrides_and_check(void) {
  const char *text = with_sweep("train.lr = 0.1, 0.2\nrun.seed = 10:13:1\n");
  sweep_t *s = sweep_parse(text, "o.deck");
  char *ov[] = {"train.lr=0.5", "train.momentum=0"};
  config_t c;
  sweep_resolve(s, 6, text, 2, ov, &c, NULL);
  tap_ok(optim_opts(&c)->schedule.lr == 0.5 && optim_opts(&c)->momentum == 0 && c.seed == 12 && strcmp(c.run_name, "demo-v6") == 0,
         "-D wins over a swept value, the other swept values stay: lr %g seed %llu", optim_opts(&c)->schedule.lr,
         (unsigned long long)c.seed);
  long seen[1] = {0};
  sweep_free(s);
  text = with_sweep("run.seed = 10:17:1\n");
  s = sweep_parse(text, "o.deck");
  sweep_check(s, text, 0, NULL, count_visit, seen);
  tap_ok(seen[0] == 8, "sweep_check visits the %ld variants in order, resolved", seen[0]);
  sweep_free(s);
}

static void test_reproduce(void) {
  const char *sweep =
      "[sweep]\nmode = zip\ndata.path = \"a b\", \"\", \\#x, \" q\\\"\"\ntrain.lr = log:1e-3:1:4\n";
  char text[2048];
  snprintf(text, sizeof text, "%s[data]\nsource = synthetic\n%s[train]\nmomentum = 0.5\n", base_deck, sweep);
  char plain[2048]; /* the same deck without [sweep] */
  snprintf(plain, sizeof plain, "%s[data]\nsource = synthetic\n[train]\nmomentum = 0.5\n", base_deck);
  sweep_t *s = sweep_parse(text, "r.deck");
  int args_ok = s && sweep_count(s) == 4, deck_ok = args_ok;
  for (long i = 0; s && i < sweep_count(s); i++) {
    config_t want, got;
    sweep_resolve(s, i, text, 0, NULL, &want, NULL);
    int n;
    char **args = sweep_variant_args(s, i, text, 0, NULL, &n);
    deck_parse(plain, "plain.deck", n, args, &got, NULL);
    if (memcmp(&want, &got, sizeof want) != 0) args_ok = 0, tap_diag("variant %ld: -D arguments differ", i);
    sweep_free_args(args, n);
    char *resolved = sweep_deck_text(s, i, text, 0, NULL);
    deck_parse(resolved, "resolved.deck", 0, NULL, &got, NULL);
    if (memcmp(&want, &got, sizeof want) != 0) deck_ok = 0, tap_diag("variant %ld: resolved deck differs", i);
    free(resolved);
  }
  tap_ok(args_ok, "the deck without [sweep] plus sweep_variant_args gives each variant's config exactly");
  tap_ok(deck_ok, "sweep_deck_text of each variant re-parses to its config exactly");
  sweep_free(s);
}

static void test_sections(void) {
  tap_ok(sweep_parse(base_deck, "none.deck") == NULL, "a deck without [sweep] has no sweep");
  const char *text = "[sweep]\ntrain.lr = 0.1, 0.2\n[model]\nzoo = mlp\n[ sweep ]\nrun.seed = 1, 2, 3\n";
  sweep_t *s = sweep_parse(text, "two.deck");
  tap_ok(s && sweep_count(s) == 6 && sweep_nkeys(s) == 2, "two [sweep] sections add up: %ld variants",
         s ? sweep_count(s) : -1);
  config_t c;
  sweep_resolve(s, 5, text, 0, NULL, &c, NULL);
  tap_ok(optim_opts(&c)->schedule.lr == 0.2 && c.seed == 3 && strcmp(c.zoo, "mlp") == 0, "keys after a [sweep] section still count");
  sweep_free(s);
}

int main(void) {
  test_product();
  test_zip();
  test_int_ranges();
  test_float_ranges();
  test_quoting();
  test_names();
  test_overrides_and_check();
  test_reproduce();
  test_sections();
  return tap_done();
}
