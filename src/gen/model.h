/* A gpt to generate from (surge-sample, and the samples a training run prints): its [model] sizes,
 * its vocabulary, the graph at full context and its parameters in a host slab of that graph's
 * layout. The engines (gen/engine.h) build graphs of the same model for other sequence lengths:
 * the parameter layout does not depend on the length (the position table is (context, C) for any),
 * so one slab serves them all. */
#ifndef SURGE_GEN_MODEL_H
#define SURGE_GEN_MODEL_H

#include "io/config.h"
#include "io/deck.h"
#include "nn/graph.h"
#include "nn/zoo.h"

typedef struct gen_model {
  zoo_opts_t zoo;
  int classes;   /* the vocabulary: the output's columns at or past it are padding, never chosen */
  int context;   /* the most positions of a sequence */
  int vocab_out; /* columns of the output (classes padded to [model] gpt_vocab_multiple) */
  graph_t g;     /* the model on sequences of `context` tokens */
  float *params; /* (g.params.total) host slab */
} gen_model_t;

/* Build cfg's model with `classes` outputs and a zeroed parameter slab. A model that is not a gpt,
 * or sizes that do not fit, are input errors blaming the deck's [model] keys. */
void gen_model_build(gen_model_t *m, const config_t *cfg, const deck_t *deck, int classes);
/* The same model on sequences of T tokens, 1 <= T <= context (a caller bug otherwise). */
void gen_model_graph(const gen_model_t *m, int T, graph_t *g);
void gen_model_free(gen_model_t *m);

#endif
