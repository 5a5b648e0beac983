/* surge-sample's job (doc/generate.md): load a model (a model file with its deck, or a deck and a
 * seed), turn the prompts into ids, spread the samples over the ranks in contiguous blocks, generate
 * on each rank's batch, and print every sample on rank 0 in order, with the job's tokens/s. Sample j
 * is prompt j / samples, and draws from stream j: the same seed gives the same samples on any rank
 * count. */
#ifndef SURGE_GEN_JOB_H
#define SURGE_GEN_JOB_H

#include <mpi.h>
#include <stdint.h>

#include "gen/pick.h"

typedef struct gen_prompt {
  const char *text; /* text (through the model's vocabulary) ... */
  const char *ids;  /* ... or token ids, space- or comma-separated */
} gen_prompt_t;

typedef struct gen_job_opts {
  const char *model;       /* a model file, or NULL with init_seed set */
  const char *deck;        /* NULL: the model file's own deck */
  int noverrides;
  char **overrides;        /* "section.key=value" */
  int has_init;            /* parameters from init_seed instead of a file */
  uint64_t init_seed;
  int nprompts;
  const gen_prompt_t *prompts;
  int samples, tokens;
  gen_pick_opts_t pick;
  int has_seed;
  uint64_t seed;           /* else the deck's [run] seed */
  const char *engine;      /* "cache" or "full" */
  int print_ids;
  int escape;              /* write the text as gen_vocab_printable does (control characters escaped) */
} gen_job_opts_t;

/* Collective over job. Bad input exits 2 with one line. */
void gen_job_run(const gen_job_opts_t *o, MPI_Comm job);

#endif
