/* The run's configuration: the trainer's own deck keys land in the fields here, and every part's
 * keys (a layout's, the compressor's, multiplexing's) in that part's own options struct, kept in
 * the part area below (core/keys.h: a part declares its rows beside its struct). The deck parser
 * (io/deck.h) fills it from the merged schema (io/config_schema.h), which also drives validation,
 * the resolved-deck echo and doc/deck.md, so a key is declared in exactly one place. */
#ifndef SURGE_CONFIG_H
#define SURGE_CONFIG_H

#include <stdint.h>

#define CFG_STR 256
#define CFG_MAX_LIST 16
#define CFG_PARTS_BYTES 4096 /* room for every part's options struct (checked when the schema merges) */

typedef struct config {
  /* [run] */
  char run_name[CFG_STR];
  long steps;          /* optimizer steps to run */
  uint64_t seed;
  long eval_every;     /* evaluate every N steps (0: only at the end) */
  long print_every;    /* progress line every N steps */
  long sample_every;   /* gpt: a sample after each evaluation at a multiple of N steps, and the last (0: never) */
  long sample_tokens;  /* new tokens of each such sample */
  char out_dir[CFG_STR]; /* where the run writes its files */
  int overwrite;       /* allow replacing the files of a finished run in out_dir */
  double stall_timeout_s; /* end a rank that makes no progress this long (core/watchdog.h; 0: never) */

  /* [model] */
  char zoo[32];        /* mlp | vgg-mini | resnet-mini | gpt */
  /* its sizes: the zoo's part (nn/zoo.h) */
  char model_init[CFG_STR]; /* start from these parameters (io/weights.h); "": from the seed */

  /* [data]: the dataset's part (data/dataset.h) */

  /* [train] */
  long global_batch;
  int micro_batches;   /* each step runs the global batch in this many micro-batches, summing gradients */
  /* the update rule: the optimizer's part (optim/optim.h) */

  /* [parallel] */
  char parallel_mode[16]; /* the layout (layout/layout.h); its own keys live in its part */

  /* [log] */
  char log_file[CFG_STR];
  long log_flush_every; /* flush the HDF5 log every N steps */

  /* [checkpoint] */
  long ckpt_every;     /* steps between checkpoints (0: only at the end and on a signal) */
  char ckpt_dir[CFG_STR];
  int ckpt_keep;       /* newest checkpoints kept */
  char ckpt_compression[24]; /* shuffle-deflate | bitshuffle-lz4 | none */
  int resume;          /* start from the newest checkpoint in ckpt_dir */

  /* [backend]: the backend's part (backend/options.h) */

  /* The parts' own options structs (a layout's grid, the compressor, multiplexing...), each in the
   * slot the schema gave it: read them with cfg_part (core/keys.h), never by offset here. */
  _Alignas(16) unsigned char parts[CFG_PARTS_BYTES];
} config_t;

#endif
