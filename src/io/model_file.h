/* The model file a run leaves behind (OUT_DIR/model.h5): every parameter tensor as /params/<name>
 * with PyTorch's shape, every buffer (batch norm's running statistics) as /buffers/<name> where the
 * model has any, and attributes of /: program, version, step, model, deck (resolved text),
 * run_id (the run that wrote it, io/run_dir.h), and for token data vocab ("SIZE" or "SIZE:HASH" of
 * the tokenizer's files, the value checkpoints hold).
 * Written collectively like a checkpoint's /params (every rank its pieces, uncompressed, each
 * dataset with its hash64), under a temporary name that is renamed, so a crash never leaves a
 * half file. Readable by h5dump, h5py and tests. */
#ifndef SURGE_MODEL_FILE_H
#define SURGE_MODEL_FILE_H

#include "comm/comm.h"
#include "core/state.h"

/* Collective over world: regions[0] is the "/params" region of this rank's pieces (host memory), then
 * "/buffers" where nregions is 2. */
void model_file_write(const char *path, const state_region_t *regions, int nregions, long step, const char *model_name,
                      const char *deck_text, const char *run_id, const char *vocab, comm_t *world);

#endif
