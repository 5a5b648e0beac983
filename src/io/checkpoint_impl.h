/* Internals shared by the checkpoint files (io/checkpoint.h is the interface):
 *   checkpoint_config.c  the canonical configuration text, its fingerprint and the first difference
 *   checkpoint_files.c   file names, the directory scan, pruning, checkpoint_latest
 *   checkpoint_h5.c      HDF5 pieces: file access, dataset creation, CRC32
 *   checkpoint_agree.c   one decision for all ranks after each step that can fail
 *   checkpoint_layout.c  what the file holds: the attributes of /, how pieces are chunked and split
 *   checkpoint_write.c   writing state regions into a new file (checkpoints and the model file)
 *   checkpoint.c         checkpoint_write
 *   checkpoint_read.c    checkpoint_read */
#ifndef SURGE_CHECKPOINT_IMPL_H
#define SURGE_CHECKPOINT_IMPL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "core/state.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/h5util.h"

#define CKPT_FORMAT_NAME "surge-checkpoint"
#define CKPT_MSG 1024
#define CKPT_PATH 4096

/* ---- configuration (checkpoint_config.c) */

/* "[section] key = value\n" for every key of [model], [data] (but test_samples) and [train], in
 * schema order, values as deck text. malloc'd. */
char *ckpt_config_text(const config_t *cfg);
/* 64-bit FNV-1a of a NUL-terminated string. */
uint64_t ckpt_fnv1a64(const char *s);
/* Describe the first key whose value differs between the checkpoint's configuration text and
 * this run's (cfg's), key by key, e.g. "[train] lr is 0.1 in the checkpoint, 0.05 in this run".
 * A key the checkpoint lacks counts as equal where this run leaves it at its default (a key added
 * after the checkpoint was written, whose default keeps the old behaviour). Returns 0 when no key
 * differs. */
int ckpt_config_first_diff(const char *stored, const char *now, const config_t *cfg, char *out, size_t out_len);

/* ---- files and directories (checkpoint_files.c) */

/* dir/ckpt-<step, 8 digits>.h5, or the hidden temporary dir/.ckpt-<step>.h5.tmp. Errors when the
 * path does not fit (runtime error naming it). */
void ckpt_path(char *out, size_t out_len, const char *dir, long step, int temporary);
/* The step of a file name that is exactly what ckpt_path writes (temporary or not), else -1. */
long ckpt_name_step(const char *name, int temporary);
/* On one rank: remove the checkpoints older than the newest `keep` (the one just written counts
 * and is never removed; files with a higher step, left by another run, are not touched) and every
 * temporary file but `written_step`'s. Only exact checkpoint names are ever removed. */
void ckpt_prune(const char *dir, long written_step, int keep);

/* ---- HDF5 (checkpoint_h5.c) */

/* The quiet scope, HDF5's error text and the typed attributes are io/h5util.h's; a missing
 * error text reads CKPT_H5_NO_ERROR. */
#define CKPT_H5_NO_ERROR "unknown HDF5 error"

/* File access over the communicator with MPI-IO; transfer list for collective transfers. */
hid_t ckpt_h5_fapl(const comm_t *world);
hid_t ckpt_h5_dxpl_collective(void);

/* Whether the filter of `compression` can encode here: 0, or -1 with why. */
int ckpt_h5_compression_check(const char *compression, char *why, size_t why_len);
/* Whether a filter of dataset dset cannot decode here: 1 with what is missing and the fix in why,
 * else 0. */
int ckpt_h5_missing_filter(hid_t dset, char *why, size_t why_len);
/* Rows [lo, hi) of this rank's piece t of dataset dset as a transfer's spaces: *fspace selects them in
 * the file, *mspace has the selection's shape (HDF5 then maps it to chunks block by block); lo == hi:
 * both select nothing (a rank takes part in a collective transfer without data). 0, or -1 with
 * HDF5's error stack set (the spaces that were made are in *fspace, *mspace, else -1). */
int ckpt_h5_select_rows(hid_t dset, const state_tensor_t *t, size_t lo, size_t hi, hid_t *fspace, hid_t *mspace);

/* Creation list of a dataset of ndim dimensions in chunks of chunk[] (ckpt_chunking's rows), the
 * compression's filter, Fletcher32. Negative on failure. */
hid_t ckpt_h5_dcpl(int ndim, const hsize_t *chunk, const char *compression);

/* zlib CRC32 of a string's bytes. */
uint32_t ckpt_crc32_text(const char *s);

/* ---- agreement (checkpoint_agree.c) */

/* The first failure of a collective operation on this rank (message kept, later ones ignored). */
typedef struct ckpt_status {
  comm_t *world;
  int failed;
  int reporter; /* after ckpt_any_failed: the lowest failing rank, or -1 */
  int alone;    /* after ckpt_any_failed: this rank failed and the others did not come to agree
                   (stuck in a collective HDF5 call): clean up without collective calls */
  char msg[CKPT_MSG];
} ckpt_status_t;

void ckpt_status_init(ckpt_status_t *st, comm_t *world);
void ckpt_fail(ckpt_status_t *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Collective: 1 when any rank has failed (the same answer everywhere), else 0. A rank that failed
 * waits a few seconds at most; then it answers 1 with st->alone set. */
int ckpt_any_failed(ckpt_status_t *st);
/* Collective, after ckpt_any_failed said 1 and any cleanup was done: the lowest failing rank
 * reports its message (surge_fail with exit_code); the other ranks wait until the job ends. */
_Noreturn void ckpt_report(ckpt_status_t *st, int exit_code);
/* The same, but the reporter ends its process at once (surge_abandon): no exit handler, so HDF5
 * never closes what is left open. */
_Noreturn void ckpt_abandon(ckpt_status_t *st, int exit_code);

/* ---- layout (checkpoint_layout.c) */

/* The attributes of / (strings are borrowed when writing, malloc'd when read). */
typedef struct ckpt_root {
  char *format;           /* CKPT_FORMAT_NAME */
  int64_t format_version; /* CHECKPOINT_FORMAT_VERSION */
  char *model;            /* [model] zoo */
  uint64_t fingerprint;   /* checkpoint_fingerprint */
  char *config;           /* ckpt_config_text: what the fingerprint covers */
  int64_t step, opt_t;
  uint64_t seed;
  int64_t global_batch, samples_seen; /* samples_seen = step * global_batch */
  int64_t ranks;                      /* ranks that wrote the file */
  char *layout;                       /* the [parallel] mode that wrote it */
  char *created;                      /* ISO 8601 UTC */
  char *compression;                  /* [checkpoint] compression */
  char *deck;                         /* the resolved deck, for people */
  char *run_id;                       /* the run it belongs to; optional: "" when absent, and then
                                       * left out of state_crc32 (files written before it existed) */
  char *vocab;                        /* the token data's vocabulary, "SIZE" or "SIZE:HASH" of its
                                       * files (tokens source); optional like run_id */
  char *rank_grid;                    /* ckpt_state_t's rank_grid; optional like run_id */
} ckpt_root_t;

/* Write every attribute of r and "state_crc32" (CRC32 of all of them) on obj. 0 or -1 with the
 * name of the attribute that failed in *failed. An empty optional attribute is not written. */
int ckpt_root_write(hid_t obj, const ckpt_root_t *r, const char **failed);
/* Read them back: 0, or -1 with the attribute that is missing or of another type in *failed, or
 * -2 when they do not match their state_crc32. A missing optional one reads "". Strings longer
 * than the file cannot be, and are refused unread. Free with ckpt_root_free (also after a failure). */
int ckpt_root_read(hid_t obj, ckpt_root_t *r, const char **failed);
void ckpt_root_free(ckpt_root_t *r);

/* How the replicas of a piece write it: chunks of whole rows of the piece's first dimension, at
 * most 1 MiB (or one row), at least 64 KiB where the piece allows, enough to give every replica one
 * where it can, split evenly (HDF5 stores a partial edge chunk at full size); each replica writes
 * whole chunks, so parallel HDF5 compresses them where they are, without moving data between ranks.
 * chunk_rows: rows per chunk; this replica writes rows [lo, hi) of the piece (lo == hi: nothing).
 * Reading uses the same split to give every element of a tensor to exactly one rank's checksum. */
typedef struct ckpt_chunking {
  size_t chunk_rows, lo, hi;
} ckpt_chunking_t;
ckpt_chunking_t ckpt_chunking(const state_tensor_t *t);

/* Chunks a rank filters in one collective transfer, writing or reading (ckpt_call_chunks; 64 unless
 * a test set fewer). Parallel HDF5 keeps every filtered chunk of a transfer in memory until it
 * completes, so one transfer per tensor held a second copy of the largest tensor (147 MiB for a 124M
 * gpt's token embedding: most of a run's peak over its steps', and of a resumed run's set-up). More
 * transfers cost time: at 16 chunks the 124M checkpoint's writes took up to 35% longer, at 64 about
 * as long as one transfer per tensor (doc/checkpoints.md). */
int ckpt_call_chunks(void);
/* Tests only (tests/test_checkpoint.c): fewer chunks a transfer, so small tensors take several. */
void ckpt_set_call_chunks(int chunks);

/* ---- writing state regions (checkpoint_write.c) */

/* A file of state regions: created as temp, given its root attributes by put_root (0, or -1 with
 * the attribute that failed in *failed), the regions written, synced, renamed to final. */
typedef struct ckpt_file {
  const char *kind; /* "checkpoint", "model file": what messages call it */
  const char *dir, *final, *temp;
  int (*put_root)(hid_t file, const void *arg, const char **failed);
  const void *root_arg;
  const state_region_t *regions;
  int nregions;
  const char *compression; /* [checkpoint] compression */
} ckpt_file_t;

/* Collective over world: write f. Any failure on any rank removes the temporary file and ends the
 * job with one message naming the file (earlier files are untouched). Returns after the rename,
 * with rank 0 still holding nothing open. */
void ckpt_file_write(const ckpt_file_t *f, comm_t *world);

#endif
