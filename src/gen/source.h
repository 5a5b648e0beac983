/* What a model file says about itself. An HDF5 file (a run's model.h5, or a checkpoint) carries
 * its run's resolved deck and the vocabulary it was trained with as attributes of /; a file of
 * another format (safetensors, llm.c: io/weights.h) carries neither, and the deck describing the
 * model must come from the command line. */
#ifndef SURGE_GEN_SOURCE_H
#define SURGE_GEN_SOURCE_H

typedef struct gen_source {
  int hdf5;    /* 1: an HDF5 file */
  char *deck;  /* its deck attribute, or NULL (malloc'd) */
  char *vocab; /* its vocab attribute ("SIZE" or "SIZE:HASH"), or NULL (malloc'd) */
} gen_source_t;

/* A missing or unreadable file is an input error naming it. */
void gen_source_read(const char *path, gen_source_t *s);
void gen_source_free(gen_source_t *s);

#endif
