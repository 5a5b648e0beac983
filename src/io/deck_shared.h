/* Reading a deck in an MPI program: rank 0 reads the file and checks it first, so its errors are
 * the only ones printed (the other ranks wait in the broadcast, and the abort ends them), then the
 * text goes to every rank, which parses the same text. */
#ifndef SURGE_DECK_SHARED_H
#define SURGE_DECK_SHARED_H

#include "comm/comm.h"
#include "io/config.h"

/* Collective over world. check(text, arg) runs on rank 0 only and exits on a bad deck. Returns the
 * deck text (malloc'd) on every rank. */
char *deck_read_checked(const char *path, comm_t *world, void (*check)(const char *text, void *arg), void *arg);

/* Collective over world: every rank resolved the same deck (deck_resolved_text) as rank 0. The
 * text is one, but a ${NAME} variable of the environment (or a -D value) may differ between ranks
 * or nodes, and ranks that disagree on the steps, the batch or a directory hang in a collective or
 * train wrongly: a rank that differs ends the job (exit 2) naming the first key that differs, while
 * the others wait for its end (none goes on to claim or write a file). */
void deck_check_same(const config_t *cfg, comm_t *world);

#endif
