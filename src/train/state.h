/* The trainer's state to and from checkpoints and the model file (io/checkpoint.h): the layout
 * describes this rank's piece of every parameter tensor; the parameters and optimizer moments of
 * those pieces move between backend memory and host buffers here, as state regions, with the
 * gradient reducer's own regions beside them. */
#ifndef SURGE_TRAIN_STATE_H
#define SURGE_TRAIN_STATE_H

#include <stddef.h>

#include "train/train.h"

/* Collective: write a checkpoint of t's current state into cfg.ckpt_dir; the path goes to written. */
void trainer_checkpoint(trainer_t *t, const char *deck_text, char *written, size_t written_len);

/* Collective: load the checkpoint at path into t (whatever layout and rank count wrote it); its
 * step, optimizer steps and run identity become t's. */
void trainer_resume(trainer_t *t, const char *path);

/* Collective: the parameters of the weights file at path (io/weights.h: model.h5, a checkpoint's,
 * safetensors, llm.c's), every rank reading the whole file and taking the pieces its layout holds;
 * the optimizer state stays as it is (fresh). Shapes that differ from the model's are input errors. */
void trainer_load_params(trainer_t *t, const char *path);
/* Collective: the whole parameter slab of t's graph (t->g.params layout) into full on rank 0
 * (full: t->g.params.total floats there; NULL elsewhere), whatever pieces the layout gives each rank. */
void trainer_params_on_root(trainer_t *t, float *full);

/* Collective: write the model file (the parameters) at path. */
void trainer_write_model(trainer_t *t, const char *path, const char *deck_text);

#endif
