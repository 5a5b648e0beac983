/* Checkpoints: the full training state in one HDF5 file per checkpoint, written collectively with
 * parallel HDF5 (MPI-IO), chunked, compressed and checksummed, under a temporary name that is
 * renamed when complete; the newest [checkpoint] keep are kept. Layout in doc/checkpoints.md.
 *
 * A checkpoint holds everything a restart needs to continue bit for bit: parameters, optimizer
 * state, the step (the data cursor and the sampler's epoch follow from it and the seed), the seed,
 * the format version and a fingerprint of the configuration that must not change across a restart
 * ([model], [data] except test_samples, [train]). The rank count may change. */
#ifndef SURGE_CHECKPOINT_H
#define SURGE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "io/config.h"
#include "core/state.h"

/* Version 2: state regions of global tensors written as hyperslabs by the ranks that hold them,
 * each dataset checked by a position-aware 64-bit hash (core/state.h). Version 1 (whole tensors,
 * CRC32, before layouts could shard state) is refused with its version named. */
#define CHECKPOINT_FORMAT_VERSION 2

/* The most steps a run may have ([run] steps): a checkpoint's step beyond it is damage. */
#define CHECKPOINT_MAX_STEP 1000000000L
/* A run identity: 16 hex digits and the NUL. */
#define CHECKPOINT_RUN_ID_LEN 17
#define CHECKPOINT_VOCAB_LEN 40
#define CHECKPOINT_GRID_LEN 160
/* The groups of state each rank owns (compressors' buffers: compress/rank_state.h), which belong to
 * the layout that wrote them (ckpt_state_t's rank_grid). */
#define CHECKPOINT_RANK_STATE_GROUPS "/compress/"

/* The state saved and restored: regions of global tensors, each rank holding the pieces its layout
 * gives it (host memory), and the counters. */
typedef struct ckpt_state {
  state_region_t *regions; /* "/params", "/optim/m", ... */
  int nregions;
  const char *layout;      /* the [parallel] mode that wrote it (informational) */
  long opt_t;              /* optimizer steps taken */
  long step;               /* training steps done */
  char vocab[CHECKPOINT_VOCAB_LEN];   /* the token data's vocabulary ("SIZE" or "SIZE:HASH" of the
                                       * tokenizer's files), "" for other data; a resume must match */
  char run_id[CHECKPOINT_RUN_ID_LEN]; /* the run it belongs to (io/run_dir.h); "" when the file has
                                       * none (written before runs had an identity) */
  char rank_grid[CHECKPOINT_GRID_LEN]; /* the layout that state of each rank's own (a compressor's
                                        * buffers, /compress/...) belongs to, "" when there is none;
                                        * a resume must match (a file without one is not checked) */
} ckpt_state_t;

/* Fingerprint of the configuration a checkpoint belongs to (see above). */
uint64_t checkpoint_fingerprint(const config_t *cfg);

/* Collective over world: write dir/ckpt-<step 8 digits>.h5 (creating dir), then remove all but
 * the newest cfg->ckpt_keep. Every rank passes its pieces; together they must tile every tensor
 * exactly once (counting each piece once per replica group), and replicas must agree.
 * Errors (disk full, unwritable dir) are runtime errors naming the file; the previous
 * checkpoints stay intact. Returns nothing; the path written is put in `written` (may be NULL). */
void checkpoint_write(const char *dir, const ckpt_state_t *s, const config_t *cfg, const char *deck_text,
                      comm_t *world, char *written, size_t written_len);

/* Whether this installation can write checkpoints with `compression` (a [checkpoint] compression
 * value): 1, or 0 with the reason and the fix in why (e.g. the missing bitshuffle plugin). Lets a
 * run refuse at start rather than at its first checkpoint. */
int checkpoint_compression_available(const char *compression, char *why, size_t why_len);

/* A checkpoint found in a directory, described by what it holds. */
typedef struct ckpt_found {
  char path[4096];
  long step;                          /* the step it holds (its name's when it cannot be read) */
  int readable;                       /* its attributes of / read back and match their checksum */
  char run_id[CHECKPOINT_RUN_ID_LEN]; /* the run it belongs to; "" when unknown */
  int count;                          /* checkpoints in the directory */
} ckpt_found_t;

/* On one process: the newest complete checkpoint in dir, by the step its attributes hold. Only
 * regular files named as checkpoint_write names them count; temporary files never do. A file whose
 * attributes do not read back counts with its name's step (checkpoint_read then says what is wrong
 * with it). A step outside 0..CHECKPOINT_MAX_STEP, or a name that says another step than the file
 * holds (renamed or copied by hand), is an input error naming the file: such a file would otherwise
 * shadow the real checkpoints. Returns 1 with *found filled, or 0 (found->count 0) when there is none. */
int checkpoint_newest(const char *dir, ckpt_found_t *found);

/* Collective: checkpoint_newest on rank 0, its path in `path` and 1, or 0 when there is none. Same
 * answer on every rank. */
int checkpoint_latest(const char *dir, char *path, size_t path_len, comm_t *world);

/* On one process: remove every checkpoint and temporary checkpoint file of dir (only exact checkpoint
 * names; anything else stays). Returns how many were removed; a failure is a runtime error. */
int checkpoint_remove_all(const char *dir);
/* Whether a file name (no directory) is one checkpoint_remove_all removes: a checkpoint's or a
 * temporary checkpoint's exact name. */
int checkpoint_is_name(const char *name);

/* Collective: read a checkpoint into s, every rank its own hyperslabs (of any layout, whatever layout
 * and rank count wrote the file); regions and tensors must be exactly those of s. Refuses,
 * with an input error naming the file and, where it applies, the dataset: a file that is not a
 * Surge checkpoint, another format version, another model or configuration (fingerprint), a
 * tensor missing or of another shape, a checksum mismatch, a truncated file, and counters out of
 * range (a step below 0 or beyond cfg's [run] steps, optimizer steps beyond the step, samples seen
 * that are not step x global batch, a rank count below 1). s->run_id receives the file's. */
void checkpoint_read(const char *path, ckpt_state_t *s, const config_t *cfg, comm_t *world);

#endif
