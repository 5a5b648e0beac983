/* The deck's [compress] section: Optimus-CC's techniques for a 3d run (doc/compression.md). */
#include "compress/options.h"

#define CFG_OPTS compress_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_BOOL_KEY("compress", "cb", cb, "false",
                 "3d: compressed back-propagation: the activation gradients a stage sends to the one before it "
                 "go as PowerSGD factors P, Q of rank cb_rank (needs pp > 1)"),
    CFG_INT_KEY("compress", "cb_rank", cb_rank, "16", 1, 65536,
                "3d: rank of the compressed activation gradients (at most the width and the tokens of a "
                "micro-batch; with scatter-gather, a tensor-parallel rank's part of the tokens)"),
    CFG_BOOL_KEY("compress", "lep", lep, "true",
                 "3d: lazy error propagation: what a compressed gradient missed is added to the next one sent "
                 "over the same boundary (across micro-batches and steps)"),
    CFG_BOOL_KEY("compress", "epilogue_only", epilogue_only, "true",
                 "3d: compress only the backward transfers after a stage's last forward (the cool-down of 1f1b: "
                 "pp - s of them from stage s, pp (pp - 1) / 2 per pipeline and step); false: all of them"),
    CFG_BOOL_KEY("compress", "fe", fe, "false",
                 "3d: fused embedding synchronisation: the word embedding's gradient is left out of the "
                 "data-parallel sum and summed once over the first and last stages' ranks of its "
                 "tensor-parallel index (2 dp ranks) (needs pp > 1)"),
    CFG_INT_KEY("compress", "sc_stages", sc_stages, "0", 0, 4096,
                "3d: selective stage compression: stages 0 .. sc_stages-1 sum their data-parallel gradients "
                "as PowerSGD factors of rank dp_rank (0: none; at most pp; needs dp > 1)"),
    CFG_INT_KEY("compress", "dp_rank", dp_rank, "128", 1, 65536,
                "3d: rank of the compressed data-parallel gradients (each matrix: at most its smaller side)"),
    CFG_FLOAT_KEY("compress", "warmup_fraction", warmup_fraction, "0", 0, CFG_CLOSED, 1, CFG_CLOSED,
                  "3d: the first warmup_fraction * [run] steps sum the data-parallel gradients exactly"),
    CFG_FLOAT_KEY("compress", "min_rate", min_rate, "0", 0, CFG_CLOSED, 1e6, CFG_CLOSED,
                  "3d: a matrix (data-parallel or activation gradient) is sent exact unless its factors are at "
                  "least min_rate times smaller: (n + m) r * min_rate <= n m (0: always compressed)"),
};
// clang-format on

const cfg_part_t compress_options = {
    .name = "compress", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(compress_opts_t)};
