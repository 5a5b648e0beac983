/* The tokenizer (src/tok): the first byte picks what the rest is.
 *   0: text, encoded with the test vocabulary (tests/data/tok/hf) and decoded: must give the text
 *      back byte for byte (invalid UTF-8 included);
 *   1: a vocab.json read with the test merges.txt;
 *   2: a merges.txt read with the test vocab.json.
 * A vocabulary accepted by 1 or 2 then encodes and decodes the input itself: again byte for byte.
 * The test files are found under $SURGE_TOP_SRCDIR (default ..: the fuzz build directory's parent). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tok/bpe.h"
#include "tok/pretok.h"

static char vocab_path[4096], merges_path[4096];
static pretok_t *pt;
static bpe_t *test_vocab; /* mode 0's, read once */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *top = getenv("SURGE_TOP_SRCDIR") ? getenv("SURGE_TOP_SRCDIR") : "..";
  snprintf(vocab_path, sizeof vocab_path, "%s/tests/data/tok/hf/vocab.json", top);
  snprintf(merges_path, sizeof merges_path, "%s/tests/data/tok/hf/merges.txt", top);
  pt = pretok_new();
  test_vocab = bpe_load(vocab_path, merges_path);
  fuzz_init();
  return 0;
}

static void round_trip(const bpe_t *b, const uint8_t *text, size_t n) {
  ids_t ids = {0};
  bpe_encode(b, pt, text, n, &ids);
  uint8_t *back = NULL;
  size_t len = 0, cap = 0;
  bpe_decode(b, ids.v, ids.n, 0, &back, &len, &cap);
  if (len != n || (n && memcmp(back, text, n) != 0)) abort(); // decode(encode(x)) must be x
  free(back);
  ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int mode = data[0] % 3;
  const uint8_t *rest = data + 1;
  size_t n = size - 1;
  if (mode == 0) {
    round_trip(test_vocab, rest, n); /* no input error can stop it: every byte string encodes */
    return 0;
  }
  if (FUZZ_TRY()) {
    const char *v = mode == 1 ? fuzz_file(rest, n, "vocab.json") : vocab_path;
    const char *m = mode == 2 ? fuzz_file(rest, n, "merges.txt") : merges_path;
    bpe_t *b = bpe_load(v, m);
    round_trip(b, rest, n);
    bpe_free(b);
  }
  fuzz_fds_close();
  return 0;
}
