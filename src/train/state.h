/* The trainer's state to and from checkpoints (io/checkpoint.h): parameters, optimizer moments and
 * counters move between backend memory and the host-side checkpoint buffers here. */
#ifndef SURGE_STATE_H
#define SURGE_STATE_H

#include <stddef.h>

#include "train/train.h"

/* Collective: write a checkpoint of t's current state into cfg.ckpt_dir; the path goes to written. */
void trainer_checkpoint(trainer_t *t, const char *deck_text, char *written, size_t written_len);

/* Collective: load the newest checkpoint of cfg.ckpt_dir into t. Returns 1 and its path in `from`,
 * or 0 (t untouched) when the directory holds none. */
int trainer_resume(trainer_t *t, char *from, size_t from_len);

#endif
