#include "io/deck_shared.h"

#include <string.h>

#include "core/error.h"
#include "io/deck.h"

char *deck_read_checked(const char *path, comm_t *world, void (*check)(const char *text, void *arg), void *arg) {
  char *text = NULL;
  unsigned long long len = 0;
  if (world->rank == 0) {
    text = deck_read_file(path);
    len = strlen(text) + 1;
    check(text, arg);
  }
  comm_bcast(world, &len, sizeof len, 0, TRAFFIC_OTHER);
  if (world->rank != 0) text = xmalloc((size_t)len);
  comm_bcast(world, text, (size_t)len, 0, TRAFFIC_OTHER);
  return text;
}
