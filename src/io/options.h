/* The deck's configuration handed to each part as that part's own options: the model zoo's
 * ([model]), the optimizer's with its learning-rate schedule ([train]) and the dataset's ([data]
 * and what the model needs of it). nn, optim and data know nothing of decks; this is the one place
 * that knows both sides. Keys and their docs stay in the schema (io/config_schema.c). */
#ifndef SURGE_OPTIONS_H
#define SURGE_OPTIONS_H

#include "data/dataset.h"
#include "io/config.h"
#include "nn/zoo.h"
#include "optim/optim.h"

zoo_opts_t zoo_opts_of(const config_t *cfg);
optim_opts_t optim_opts_of(const config_t *cfg);
data_opts_t data_opts_of(const config_t *cfg);

#endif
