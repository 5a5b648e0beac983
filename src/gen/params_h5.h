/* TEMPORARY until io/weights.h (issue 30 part B) lands: the parameters of an HDF5 model file
 * (model.h5 or a checkpoint: /params/<tensor name>, PyTorch's shapes) into a host slab of g's
 * layout. Every tensor of g must be there with its shape; anything else is an input error naming
 * the tensor and both shapes. */
#ifndef SURGE_GEN_PARAMS_H5_H
#define SURGE_GEN_PARAMS_H5_H

#include "nn/graph.h"

void gen_params_read_h5(const char *path, const graph_t *g, float *params);

#endif
