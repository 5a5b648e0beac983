/* The dataset interface: picks the source the deck names, applies [data] train_samples /
 * test_samples, and bounds-checks every fetch by global sample id. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "data/dataset_impl.h"

typedef struct source_entry {
  const char *name;
  void (*open)(dataset_t *ds, const data_opts_t *o);
} source_entry_t;

static const source_entry_t sources[] = {
    {"fashion-mnist", fmnist_open},
    {"text", text_open},
    {"tokens", tokens_open},
    {"synthetic", synthetic_open},
};
#define NSOURCES (sizeof sources / sizeof sources[0])

static const char *split_name(const dataset_t *ds, data_split_t split) {
  return split == SPLIT_TRAIN ? "training" : ds->test_split;
}

/* Keep the first `limit` samples of a split (0: all). */
static void apply_limit(dataset_t *ds, data_split_t split, long limit, const char *key) {
  if (limit < 0) surge_input_error("[data] %s = %ld must be >= 0 (0: all samples)", key, limit);
  if (limit == 0) return;
  if ((uint64_t)limit > ds->size[split])
    surge_input_error("[data] %s = %ld, but %s has only %" PRIu64 " %s samples (hint: lower it, or 0 for all)",
                      key, limit, ds->name, ds->size[split], split_name(ds, split));
  ds->size[split] = (uint64_t)limit;
}

dataset_t *dataset_open(data_opts_t o) {
  const source_entry_t *src = NULL;
  char names[128] = "";
  for (size_t i = 0; i < NSOURCES; i++) {
    if (strcmp(o.source, sources[i].name) == 0) src = &sources[i];
    names_append(names, sizeof names, sources[i].name);
  }
  if (!src) surge_input_error("[data] source = '%s' is not one of %s", o.source, names);
  dataset_t *ds = xcalloc(1, sizeof *ds);
  src->open(ds, &o);
  apply_limit(ds, SPLIT_TRAIN, o.train_samples, "train_samples");
  apply_limit(ds, SPLIT_TEST, o.test_samples, "test_samples");
  if (ds->size[SPLIT_TRAIN] > UINT32_MAX && !ds->order_implicit)
    surge_input_error("%s: %" PRIu64 " training samples, more than the sampler's limit of %" PRIu32
                      " (hint: set [data] train_samples)", ds->name, ds->size[SPLIT_TRAIN], UINT32_MAX);
  return ds;
}

void dataset_close(dataset_t *ds) {
  if (!ds) return;
  if (ds->free_source) ds->free_source(ds->source);
  free(ds);
}

const char *dataset_name(const dataset_t *ds) { return ds->name; }
shape_t dataset_sample_shape(const dataset_t *ds) { return ds->sample_shape; }
int dataset_classes(const dataset_t *ds) { return ds->classes; }
int dataset_targets_per_sample(const dataset_t *ds) { return ds->targets_per_sample; }
int dataset_is_tokens(const dataset_t *ds) { return ds->is_tokens; }
const char *dataset_token_unit(const dataset_t *ds) { return ds->is_tokens ? (ds->token_unit ? ds->token_unit : "token") : NULL; }
int dataset_order_implicit(const dataset_t *ds) { return ds->order_implicit; }
const char *dataset_vocab_hash(const dataset_t *ds) { return ds->vocab_hash; }

uint64_t dataset_size(const dataset_t *ds, data_split_t split) {
  if (split != SPLIT_TRAIN && split != SPLIT_TEST) surge_runtime_error("dataset_size: no split %d", (int)split);
  return ds->size[split];
}

void dataset_get(const dataset_t *ds, data_split_t split, const uint64_t *ids, int n, float *x, float *y) {
  uint64_t size = dataset_size(ds, split);
  if (n < 0) surge_runtime_error("dataset_get: negative sample count %d", n);
  size_t xs = shape_size(ds->sample_shape), ys = (size_t)ds->targets_per_sample;
  for (int i = 0; i < n; i++) {
    if (ids[i] >= size)
      surge_runtime_error("dataset_get: sample id %" PRIu64 " is outside the %s split of %s (%" PRIu64 " samples)",
                          ids[i], split_name(ds, split), ds->name, size);
    ds->get_sample(ds, split, ids[i], x + (size_t)i * xs, y + (size_t)i * ys);
  }
}
