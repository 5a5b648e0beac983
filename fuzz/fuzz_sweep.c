/* The [sweep] expander (io/sweep*.c): any deck is refused with an input error or expanded; each of
 * the first variants resolves, and its deck text (surge-sweep --write-deck) parses back to the same
 * config. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/deck.h"
#include "io/sweep.h"

#define VARIANTS_CHECKED 8

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > DECK_MAX_BYTES) return 0;
  char *text = fuzz_text(data, size);
  static config_t cfg, again;
  if (FUZZ_TRY()) {
    sweep_t *s = sweep_parse(text, "fuzz.deck");
    long n = s ? sweep_count(s) : 0; // NULL: no [sweep] section
    if (s && (n < 1 || n > SWEEP_MAX_VARIANTS)) abort();
    for (long i = 0; i < n && i < VARIANTS_CHECKED; i++) {
      sweep_resolve(s, i, text, 0, NULL, &cfg, NULL);
      char *variant = sweep_deck_text(s, i, text, 0, NULL);
      deck_parse(variant, "variant.deck", 0, NULL, &again, NULL);
      if (memcmp(&cfg, &again, sizeof cfg) != 0) abort(); // --write-deck must reproduce the variant
      free(variant);
      int nargs;
      char **args = sweep_variant_args(s, i, text, 0, NULL, &nargs);
      sweep_free_args(args, nargs);
    }
    if (s) sweep_free(s);
  }
  free(text);
  return 0;
}
