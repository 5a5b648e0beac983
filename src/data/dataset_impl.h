/* Inside the dataset module: the common record every source fills, and the sources' openers.
 * dataset.c owns the public interface (limits, bounds checks); a source only knows how to load
 * its data and fetch one sample by id. */
#ifndef SURGE_DATASET_IMPL_H
#define SURGE_DATASET_IMPL_H

#include "data/dataset.h"

struct dataset {
  char name[32];             /* "fashion-mnist", "text", "synthetic" */
  const char *test_split;    /* what SPLIT_TEST is called in messages: "test" or "validation" */
  shape_t sample_shape;      /* (1,28,28) or (T) */
  int classes;               /* 10, or the vocabulary */
  int targets_per_sample;    /* 1, or T */
  int is_tokens;
  const char *token_unit;     /* what one token is: "byte" (text) or "token" */
  int order_implicit;        /* 1: the sampler computes its permutation (a split too big for a table) */
  char vocab_hash[17];       /* the tokenizer files' hash, "" when none */
  uint64_t size[2];          /* samples per split (after [data] limits) */
  /* Fetch sample id of a split (id < size[split]): x (sample shape), y (targets_per_sample). */
  void (*get_sample)(const dataset_t *ds, data_split_t split, uint64_t id, float *x, float *y);
  void (*free_source)(void *source);
  void *source;              /* the source's own state */
};

/* Each opener fills ds (all fields but the limits) or fails with surge_input_error. */
void fmnist_open(dataset_t *ds, const data_opts_t *o);
void text_open(dataset_t *ds, const data_opts_t *o);
void tokens_open(dataset_t *ds, const data_opts_t *o);
void synthetic_open(dataset_t *ds, const data_opts_t *o);

#endif
