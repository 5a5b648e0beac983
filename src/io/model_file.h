/* The model file a run leaves behind (OUT_DIR/model.h5): every parameter tensor as /params/<name>
 * with PyTorch's shape, and attributes /: program, version, step, model, deck (resolved text).
 * Written under a temporary name and renamed, so a crash never leaves a half file. Readable by
 * h5dump, h5py and tests; checkpoints with optimizer state arrive with the checkpoint format. */
#ifndef SURGE_MODEL_FILE_H
#define SURGE_MODEL_FILE_H

#include "nn/graph.h"

/* params is host memory in g->params layout. */
void model_file_write(const char *path, const graph_t *g, const float *params, long step,
                      const char *model_name, const char *deck_text);
/* Read /params/<name> for every tensor of g into params (host), checking names and shapes; errors
 * name the file and the HDF5 path. */
void model_file_read(const char *path, const graph_t *g, float *params);

#endif
