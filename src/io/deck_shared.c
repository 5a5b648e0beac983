#include "io/deck_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "core/error.h"
#include "io/deck.h"

/* The line of text starting at p, into out (without its newline). */
static void line_at(const char *p, char *out, size_t n) {
  size_t len = strcspn(p, "\n");
  snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p);
}

void deck_check_same(const config_t *cfg, comm_t *world) {
  char *mine = deck_resolved_text(cfg), *first = mine;
  unsigned long long len = strlen(mine) + 1;
  comm_bcast(world, &len, sizeof len, 0, TRAFFIC_OTHER);
  if (world->rank != 0) first = xmalloc((size_t)len);
  comm_bcast(world, first, (size_t)len, 0, TRAFFIC_OTHER);
  /* every rank learns whether one differs, so none goes on to claim or write a file: the others wait
   * in a barrier that the rank that differs never joins, and its error ends the job */
  double differs = strcmp(mine, first) != 0;
  comm_allreduce_max_double(world, &differs, 1, TRAFFIC_OTHER);
  if (differs && strcmp(mine, first) == 0) MPI_Barrier(world->mpi);
  if (differs) {
    size_t at = 0, line = 0; /* the first line that differs, and the section above it */
    for (size_t i = 0; mine[i] == first[i]; i++)
      if (mine[i] == '\n') line = i + 1;
    at = line;
    char section[64] = "", here[160], there[160];
    for (size_t i = 0; i < at; i = i + strcspn(mine + i, "\n") + 1)
      if (mine[i] == '[') line_at(mine + i, section, sizeof section);
    line_at(mine + at, here, sizeof here);
    line_at(first + at, there, sizeof there);
    surge_input_error("the deck resolves otherwise on this rank than on rank 0: %s %s here, %s on rank 0 (hint: a "
                      "${NAME} variable of the environment or a -D value that differs between ranks or nodes; every "
                      "rank of a job must resolve the same deck)", section, here, there);
  }
  if (first != mine) free(first);
  free(mine);
}

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
