/* 3D parallelism as a layout (layout/layout.h), mode "3d": the zoo's gpt on a tp x pp x dp grid of
 * ranks (pipe/exec.h) with a 1F1B (or GPipe) pipeline schedule. Checks the grid against the job and
 * the model (input errors name the deck's lines), splits the blocks into stages (balanced by FLOPs,
 * or [parallel] stages), initialises this rank's pieces with their part of the whole model's initial
 * values (computed a node at a time), and describes them to checkpoints as boxes of the global
 * tensors, so a 3D checkpoint is one file of global tensors that any layout resumes. */
#ifndef SURGE_PIPE_LAYOUT_H
#define SURGE_PIPE_LAYOUT_H

#include "layout/layout.h"

layout_t *pipe_layout_build(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world);

#endif
