/* Datasets: every sample has a global id (0 .. n-1 within a split), so any parallel layout can fetch
 * exactly the samples of a global batch. Samples come out as floats: images (C,H,W) scaled to [0,1],
 * or token ids (T) stored as float; targets are class ids (1 per image) or next-token ids (T per
 * sequence) stored as float. */
#ifndef SURGE_DATASET_H
#define SURGE_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/keys.h"
#include "core/shape.h"

typedef enum data_split { SPLIT_TRAIN = 0, SPLIT_TEST = 1 } data_split_t; /* TEST = validation for text */

typedef struct dataset dataset_t; /* opaque */

#define DATA_PATH_MAX 256

/* Which data, and how much of it: the deck's [data] section (this part's rows, data/options.c),
 * and what the run and the model need of it (seed, sequences, context: io/options.h sets them). */
typedef struct data_opts {
  char source[32];          /* fashion-mnist | text | tokens | synthetic */
  char path[DATA_PATH_MAX]; /* directory (fashion-mnist), file/directory (text), shards (tokens) */
  char val_path[DATA_PATH_MAX];  /* tokens: validation shards ("" = *val*.bin of path's directory) */
  char tokenizer[DATA_PATH_MAX]; /* tokens: directory of vocab.json + merges.txt ("" = none) */
  long vocab_size;          /* tokens: the vocabulary without a tokenizer (0: the tokenizer's) */
  long train_samples;       /* use the first N training samples (0: all) */
  long test_samples;        /* evaluate on the first N test/validation samples (0: all) */
  double val_fraction;      /* text: held-out tail for validation */
  long synthetic_samples;   /* synthetic: samples generated */
  uint64_t seed;            /* synthetic: the generator's seed */
  int sequences;            /* synthetic: token sequences (for a gpt model) instead of images */
  int context;              /* tokens per sequence (text; synthetic sequences) */
} data_opts_t;

/* The [data] rows. */
extern const cfg_part_t data_options;

/* A parsed configuration's [data] values (seed, sequences and context left 0). */
static inline const data_opts_t *data_opts(const struct config *cfg) {
  return (const data_opts_t *)cfg_part(cfg, &data_options);
}

/* Open the dataset the options name. Bad input (missing file, bad IDX magic, sizes that do not
 * match, a text too short for one sequence) fails with surge_input_error naming the path and a
 * hint. */
dataset_t *dataset_open(data_opts_t o);
void dataset_close(dataset_t *ds);

const char *dataset_name(const dataset_t *ds);      /* e.g. "fashion-mnist", "text" */
shape_t dataset_sample_shape(const dataset_t *ds);  /* (1,28,28) or (T) */
int dataset_classes(const dataset_t *ds);           /* 10, or 256 for bytes */
int dataset_targets_per_sample(const dataset_t *ds); /* 1, or T */
int dataset_is_tokens(const dataset_t *ds);
const char *dataset_token_unit(const dataset_t *ds); /* "byte" or "token"; NULL for images */
int dataset_order_implicit(const dataset_t *ds); /* 1: draw with sampler_init_implicit */
/* The vocabulary's files' hash (16 hex digits), "" when the dataset has none (tokens source). */
const char *dataset_vocab_hash(const dataset_t *ds);
uint64_t dataset_size(const dataset_t *ds, data_split_t split);

/* Fetch samples ids[0..n) of a split: x (n, sample shape), y (n, targets_per_sample). */
void dataset_get(const dataset_t *ds, data_split_t split, const uint64_t *ids, int n, float *x, float *y);

/* The global batch of a training step: ids of samples step*B .. step*B+B-1 of the endless stream
 * made of one seeded permutation of the training split per epoch (epoch e uses stream (seed, e)).
 * Identical on every rank and layout. */
typedef struct sampler {
  uint64_t seed, n;   /* training split size */
  uint64_t epoch;     /* epoch whose permutation is cached */
  uint32_t *perm;     /* (n); NULL for an implicit permutation */
  int bits;           /* implicit: the Feistel network's domain is [0, 2^bits) */
} sampler_t;

void sampler_init(sampler_t *s, uint64_t seed, uint64_t n);
/* The same stream with each epoch's permutation computed per position (a seeded Feistel network
 * over [0, 2^bits), walked until it lands below n): no table, so memory does not grow with n (token
 * corpora of any size). Another order than sampler_init's; n up to 2^62. */
void sampler_init_implicit(sampler_t *s, uint64_t seed, uint64_t n);
/* Which one a dataset's training split is drawn with (dataset_order_implicit). */
void sampler_init_for(sampler_t *s, const dataset_t *ds, uint64_t seed);
void sampler_free(sampler_t *s);
void sampler_batch(sampler_t *s, long step, long global_batch, uint64_t *ids);

#endif
