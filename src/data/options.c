/* The deck's [data] section (data/dataset.h; doc/data.md). */
#include "data/dataset.h"

#define CFG_OPTS data_opts_t
// clang-format off: the table reads best one key per row
static const cfg_key_t rows[] = {
    CFG_ENUM_KEY("data", "source", source, "fashion-mnist", CFG_VALUES("fashion-mnist", "text", "tokens", "synthetic"),
                 "where samples come from (tokens: llm.c token shards, doc/data.md)"),
    CFG_STRING_KEY("data", "path", path, "", 0,
                   "fashion-mnist: directory; text: file or directory (its regular files in name order, not those "
                   "named .*; empty: the default location); tokens: the training shards, a glob "
                   "(shards/x_train_*.bin) or a directory (its *train*.bin)"),
    CFG_STRING_KEY("data", "val_path", val_path, "", 0,
                   "tokens: the validation shards, a glob or a directory (empty: the *val*.bin of path when path is a "
                   "directory; a path that is a glob needs val_path)"),
    CFG_STRING_KEY("data", "tokenizer", tokenizer, "", 0,
                   "tokens: directory of the vocab.json + merges.txt that made the shards (gives the vocabulary)"),
    CFG_INT_KEY("data", "vocab_size", vocab_size, "0", 0, 65536,
                "tokens: the vocabulary when no tokenizer is named (0: the tokenizer's; GPT-2: 50257)"),
    CFG_INT_KEY("data", "train_samples", train_samples, "0", 0, CFG_MAX_COUNT,
                "use the first N training samples (0: all)"),
    CFG_INT_KEY("data", "test_samples", test_samples, "0", 0, CFG_MAX_COUNT,
                "evaluate on the first N test/validation samples (0: all)"),
    CFG_FLOAT_KEY("data", "val_fraction", val_fraction, "0.05", 0, CFG_CLOSED, 1, CFG_OPEN,
                  "text: fraction held out at the end for validation, above 0 (every run evaluates on it)"),
    CFG_INT_KEY("data", "synthetic_samples", synthetic_samples, "4096", 1, CFG_MAX_COUNT,
                "synthetic: samples generated"),
};
// clang-format on

const cfg_part_t data_options = {.name = "data", .keys = rows, .nkeys = CFG_NROWS(rows), .size = sizeof(data_opts_t)};
