/* Flat slabs (llm.c style): all parameters live in one allocation, described by a table of named
 * tensors with offsets. Gradients and optimizer moments use the same layout in their own slabs, so
 * the optimizer is one loop, gradient sync one bucketed collective, a checkpoint one write per region. */
#ifndef SURGE_SLAB_H
#define SURGE_SLAB_H

#include <stddef.h>

#define SLAB_NAME_MAX 64
#define SLAB_MAX_DIMS 4

typedef struct slab_tensor {
  char name[SLAB_NAME_MAX]; /* PyTorch-style dotted name, e.g. "blocks.0.qkv.weight" */
  size_t off;               /* offset in floats from the start of the slab */
  size_t n;                 /* number of floats */
  int ndim;
  int d[SLAB_MAX_DIMS]; /* dims in PyTorch's order: linear (out,in), conv (out,in,kh,kw) */
  int owner;            /* index of the graph node that owns the tensor */
} slab_tensor_t;

typedef struct slab_layout {
  int n, cap;
  slab_tensor_t *t;
  size_t total; /* floats in the slab */
} slab_layout_t;

void slab_layout_init(slab_layout_t *L);
void slab_layout_free(slab_layout_t *L);
/* Append a tensor; returns its index. dims has ndim entries. */
int slab_layout_add(slab_layout_t *L, const char *name, int ndim, const int *dims, int owner);
/* Index of the tensor with this name, or -1. */
int slab_layout_find(const slab_layout_t *L, const char *name);
/* A zeroed float slab of L->total floats (64-byte aligned). Free with slab_free. */
float *slab_alloc(const slab_layout_t *L);
void slab_free(float *p);

#endif
