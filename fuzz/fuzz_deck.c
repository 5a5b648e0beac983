/* The deck parser (io/deck.c and its lexer): any text is refused with an input error or parsed; a
 * parsed deck's resolved text (what every output file stores) parses back to the same config. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/deck.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > DECK_MAX_BYTES) return 0; // deck_read_file refuses larger files
  char *text = fuzz_text(data, size);
  static config_t cfg, again;
  deck_t *deck = NULL;
  if (FUZZ_TRY()) {
    deck_parse(text, "fuzz.deck", 0, NULL, &cfg, &deck);
    char *resolved = deck_resolved_text(&cfg);
    deck_parse(resolved, "resolved.deck", 0, NULL, &again, NULL);
    if (memcmp(&cfg, &again, sizeof cfg) != 0) abort(); // the resolved deck must reproduce the run
    free(resolved);
    deck_free(deck);
  }
  free(text);
  return 0;
}
