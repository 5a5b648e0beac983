/* The burst executor as a layout (layout/layout.h): "burst" runs a plan file, or the plan searched
 * at start-up from a profile; "dp" runs the plan in which every node has all ranks. */
#ifndef SURGE_BURST_LAYOUT_H
#define SURGE_BURST_LAYOUT_H

#include "layout/layout.h"

layout_t *burst_layout_build(const layout_opts_t *o, const graph_t *g, const backend_t *be, comm_t *world);

#endif
