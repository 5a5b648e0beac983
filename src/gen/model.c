#include "gen/model.h"

#include <string.h>

#include "core/error.h"
#include "io/options.h"

void gen_model_build(gen_model_t *m, const config_t *cfg, const deck_t *deck, int classes) {
  memset(m, 0, sizeof *m);
  if (strcmp(cfg->zoo, "gpt") != 0)
    deck_key_error(deck, "model.zoo", "%s is not a language model: generation needs zoo = gpt", cfg->zoo);
  m->zoo = zoo_opts_of(cfg);
  m->classes = classes;
  m->context = m->zoo.gpt.context;
  char err[320];
  if (zoo_build(m->zoo, shape1(m->context), classes, &m->g, err, sizeof err) != 0)
    deck_key_error(deck, "model.zoo", "%s (hint: check the [model] sizes)", err);
  m->vocab_out = (int)(shape_size(m->g.l[graph_output(&m->g)].out) / (size_t)m->context);
  m->params = slab_alloc(&m->g.params);
}

void gen_model_graph(const gen_model_t *m, int T, graph_t *g) {
  char err[320];
  if (T < 1 || T > m->context || zoo_build(m->zoo, shape1(T), m->classes, g, err, sizeof err) != 0)
    surge_runtime_error("the model at %d of %d positions does not build (a bug)", T, m->context);
  if (g->params.total != m->g.params.total)
    surge_runtime_error("the model at %d positions has another parameter layout (a bug)", T);
}

void gen_model_free(gen_model_t *m) {
  slab_free(m->params);
  graph_free(&m->g);
  memset(m, 0, sizeof *m);
}
