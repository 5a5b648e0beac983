/* Reading token ids for the decoder. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/shard.h"
#include "tok/corpus.h"
#include "tok/files.h"
#include "tok/shard_read.h"

void shard_read_all(const char *path, uint32_t vocab, ids_t *out) {
  FILE *f = fopen(path, "rb");
  if (!f) surge_input_error("%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  uint8_t h[SHARD_HEADER_BYTES];
  if (fstat(fileno(f), &st) != 0) surge_input_error("%s: cannot stat: %s", path, strerror(errno));
  size_t got = fread(h, 1, sizeof h, f);
  uint64_t n;
  char err[256];
  if (shard_header_check(h, got < sizeof h ? got : (uint64_t)st.st_size, &n, err, sizeof err) != 0)
    surge_input_error("%s: %s", path, err);
  uint8_t buf[1 << 16];
  for (uint64_t i = 0; i < n;) {
    size_t want = (size_t)(n - i) < sizeof buf / 2 ? (size_t)(n - i) : sizeof buf / 2;
    if (fread(buf, 2, want, f) != want)
      surge_input_error("%s: offset %" PRIu64 ": the file ends before its %" PRIu64 " tokens", path,
                        SHARD_HEADER_BYTES + 2 * i, n);
    for (size_t k = 0; k < want; k++, i++) {
      uint32_t id = (uint32_t)buf[2 * k] | (uint32_t)buf[2 * k + 1] << 8;
      if (id >= vocab)
        surge_input_error("%s: offset %" PRIu64 ": token %" PRIu32 " is outside the vocabulary of %" PRIu32, path,
                          SHARD_HEADER_BYTES + 2 * i, id, vocab);
      ids_push(out, id);
    }
  }
  fclose(f);
}

void ids_read_text(const char *path, uint32_t vocab, ids_t *out) {
  size_t len;
  char *s = (char *)file_read_all(path, CORPUS_DOC_MAX, "a list of ids", "is this the right file?", &len);
  for (char *p = s;;) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || errno || *p == '-')
      surge_input_error("%s: byte %td: expected a token id 0..%u", path, p - s, vocab - 1);
    if (v >= vocab)
      surge_input_error("%s: byte %td: id %lu is outside the vocabulary (0..%u)", path, p - s, v, vocab - 1);
    ids_push(out, (uint32_t)v);
    p = end;
  }
  free(s);
}
