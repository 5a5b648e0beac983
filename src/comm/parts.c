#include "comm/parts.h"

#include <stdio.h>

int comm_parts_rooted(int size, const size_t *off, const size_t *cnt, comm_part_t *out) {
  int k = 0;
  for (int r = 0; r < size; r++)
    if (cnt[r] > 0) out[k++] = (comm_part_t){.root = r, .off = off[r], .n = cnt[r]};
  return k;
}

size_t comm_parts_extent(int size, const size_t *off, const size_t *cnt) {
  size_t end = 0;
  for (int r = 0; r < size; r++)
    if (cnt[r] > 0 && off[r] + cnt[r] > end) end = off[r] + cnt[r];
  return end;
}

int comm_parts_consecutive(int size, const size_t *off, const size_t *cnt, size_t n, size_t most, char *why,
                           size_t len) {
  size_t at = 0;
  for (int r = 0; r < size; r++) {
    if (off[r] != at || cnt[r] > most) {
      snprintf(why, len, "rank %d's part (%zu floats at %zu) does not follow the one before (at %zu) or is beyond "
               "one message (%zu floats)", r, cnt[r], off[r], at, most);
      return -1;
    }
    at += cnt[r];
  }
  if (at != n) {
    snprintf(why, len, "the parts hold %zu floats of %zu", at, n);
    return -1;
  }
  return 0;
}
