/* The [parallel] mode key: which layout of the table (layouts.c) runs. A file of its own, so that a
 * program that only reads decks (surge-report reading a log's deck) links no layout's code;
 * tests/test_options checks that its values are the table's names. */
#include "io/config.h"
#include "layout/layout.h"

#define CFG_OPTS config_t
static const cfg_key_t mode_row[] = {
    CFG_ENUM_KEY("parallel", "mode", parallel_mode, "dp", CFG_VALUES("dp", "burst", "3d"),
                 "dp: data parallelism, every layer on all ranks, gradients summed by allreduce; burst: every "
                 "layer on the ranks of the plan file (doc/burst.md); 3d: tensor x pipeline x data parallelism of "
                 "the gpt (doc/3d.md)"),
};
const cfg_part_t layout_options = {.name = "layout", .keys = mode_row, .nkeys = 1};
