/* Each part's options completed with what the run adds to them: the zoo's sizes with the model's
 * name, the optimizer's with the run's steps, the dataset's with the seed and what the model needs
 * of it, and the backend's ([backend]). The parts declare their own keys (core/keys.h: nn/zoo.h,
 * optim/optim.h, data/dataset.h); this is where the run's values join them. */
#ifndef SURGE_OPTIONS_H
#define SURGE_OPTIONS_H

#include "backend/backend.h"
#include "backend/backend_open.h"
#include "backend/options.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "io/config.h"
#include "io/deck.h"
#include "nn/zoo.h"
#include "optim/optim.h"

zoo_opts_t zoo_opts_of(const config_t *cfg);
/* The deck's model for the dataset's samples into g; a refusal is an input error at the deck key at
 * fault (zoo_build_blamed). */
void zoo_build_of(const config_t *cfg, const deck_t *deck, const dataset_t *ds, graph_t *g);
optim_opts_t optim_opts_of(const config_t *cfg);
/* A deck that is about to train (surge-train, surge-profile): its optimizer's constants are what they
 * say in float32, the arithmetic of the update (a beta or momentum the deck's [0, 1) admits but float32
 * rounds to 1: AdamW divided by 1 - 1^t = 0; an eps below float32's smallest normal number: flushed
 * to 0, and 0/0 made every parameter NaN), and nesterov has momentum (PyTorch refuses it without).
 * An input error at the key's deck line otherwise. Not a deck check: decks stored in earlier runs'
 * files, which readers parse, may hold such values. */
void optim_check_trainable(const config_t *cfg, const deck_t *deck);
data_opts_t data_opts_of(const config_t *cfg);
/* The backend's ([backend]); local_rank: this rank's index among its job's ranks on its node. */
backend_options_t backend_opts_of(const config_t *cfg, int local_rank);
/* The deck place a backend's refusal of its options points at (backend_open's `where`): the
 * precision key when it asks for bf16, else the name key. */
const char *backend_opts_where(const config_t *cfg, const deck_t *deck);
/* The deck's backend ([backend] name) opened with bo (backend_opts_of's, or a caller's variant of them)
 * for the ranks of job, with its [backend] threads; a refusal points at backend_opts_where's key. */
const backend_t *backend_open_of(const config_t *cfg, const deck_t *deck, const backend_options_t *bo, MPI_Comm job);
/* How device buffers travel between ranks ([backend] device_comm). */
comm_device_mode_t device_comm_of(const config_t *cfg);

#endif
