/* What the deck schema merges (io/config_schema.h): the deck's sections in order, and the parts
 * that declare keys beside their own options structs (core/keys.h). A new part is one line here;
 * a new key of a part is a row in the part's own file. */
#include "backend/options.h"
#include "burst/options.h"
#include "compress/options.h"
#include "data/dataset.h"
#include "io/config_schema.h"
#include "layout/layout.h"
#include "mux/options.h"
#include "train/recompute_options.h"
#include "nn/zoo.h"
#include "optim/optim.h"
#include "pipe/options.h"
#include "sync/options.h"

const cfg_section_t cfg_deck_sections[] = {
    {"run", "What the run is called, how long it runs, where it writes"},
    {"model", "The network: a model from the zoo and its shape"},
    {"data", "The training and evaluation data"},
    {"train", "Batch, optimizer, learning-rate schedule, clipping"},
    {"parallel", "How the ranks share the work"},
    {"compress", "Optimus-CC's compression of critical-path traffic in 3d runs (doc/compression.md)"},
    {"multiplex", "Foreground/background co-scheduling (surge-train --foreground / --background)"},
    {"log", "The HDF5 metrics log"},
    {"checkpoint", "Checkpoints (parallel HDF5) and restarts"},
    {"backend", "Where the arithmetic runs"},
};
const int cfg_deck_nsections = (int)(sizeof cfg_deck_sections / sizeof cfg_deck_sections[0]);

/* Within a section, the core part's keys come first, then these parts' in this order. */
const cfg_part_t *const cfg_deck_parts[] = {
    &zoo_options, &data_options, &optim_options, &recompute_options, &layout_options, &sync_options, &burst_options, &pipe_options, &compress_options, &multiplex_options,
    &backend_deck_options,
};
const int cfg_deck_nparts = (int)(sizeof cfg_deck_parts / sizeof cfg_deck_parts[0]);
