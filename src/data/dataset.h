/* Datasets: every sample has a global id (0 .. n-1 within a split), so any parallel layout can fetch
 * exactly the samples of a global batch. Samples come out as floats: images (C,H,W) scaled to [0,1],
 * or token ids (T) stored as float; targets are class ids (1 per image) or next-token ids (T per
 * sequence) stored as float. */
#ifndef SURGE_DATASET_H
#define SURGE_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/shape.h"
#include "io/config.h"

typedef enum data_split { SPLIT_TRAIN = 0, SPLIT_TEST = 1 } data_split_t; /* TEST = validation for text */

typedef struct dataset dataset_t; /* opaque */

/* Open the dataset the config names ([data] source, path, limits; [model] gpt_context for text).
 * Bad input (missing file, bad IDX magic, sizes that do not match, a text too short for one
 * sequence) fails with surge_input_error naming the path and a hint. */
dataset_t *dataset_open(const config_t *cfg);
void dataset_close(dataset_t *ds);

const char *dataset_name(const dataset_t *ds);      /* e.g. "fashion-mnist", "text" */
shape_t dataset_sample_shape(const dataset_t *ds);  /* (1,28,28) or (T) */
int dataset_classes(const dataset_t *ds);           /* 10, or 256 for bytes */
int dataset_targets_per_sample(const dataset_t *ds); /* 1, or T */
int dataset_is_tokens(const dataset_t *ds);
uint64_t dataset_size(const dataset_t *ds, data_split_t split);

/* Fetch samples ids[0..n) of a split: x (n, sample shape), y (n, targets_per_sample). */
void dataset_get(const dataset_t *ds, data_split_t split, const uint64_t *ids, int n, float *x, float *y);

/* The global batch of a training step: ids of samples step*B .. step*B+B-1 of the endless stream
 * made of one seeded permutation of the training split per epoch (epoch e uses stream (seed, e)).
 * Identical on every rank and layout. */
typedef struct sampler {
  uint64_t seed, n;   /* training split size */
  uint64_t epoch;     /* epoch whose permutation is cached */
  uint32_t *perm;     /* (n) */
} sampler_t;

void sampler_init(sampler_t *s, uint64_t seed, uint64_t n);
void sampler_free(sampler_t *s);
void sampler_batch(sampler_t *s, long step, long global_batch, uint64_t *ids);

#endif
