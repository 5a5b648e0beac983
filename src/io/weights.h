/* Weights in and out (doc/formats.md, "Weights in and out"): a model's parameters from and to the
 * files people hand around. Readers, each bounded like every reader of untrusted input (sizes and
 * offsets checked against the file before anything is allocated or read):
 *   model.h5 / a checkpoint   /params/<name> in Surge's names and PyTorch's shapes (io/model_file.h,
 *                             io/checkpoint.h): any zoo model
 *   safetensors               Hugging Face's GPT-2 names and layouts (io/gpt2_map.h), float32,
 *                             bfloat16 or float16; "transformer." before the names or not
 *   llm.c's model file        gpt2_124M.bin's layout: 256 int32 header (magic 20240326, version 3
 *                             float32 or 5 bfloat16), then the 16 tensors in llm.c's order
 * The format is told by the file's first bytes, never by its name. */
#ifndef SURGE_WEIGHTS_H
#define SURGE_WEIGHTS_H

#include "comm/comm.h"
#include "io/gpt2_map.h"
#include "nn/graph.h"

#define WEIGHTS_LLMC_MAGIC 20240326 /* llm.c's model file (int32 at offset 0) */

typedef enum weights_format { WEIGHTS_H5, WEIGHTS_SAFETENSORS, WEIGHTS_LLMC } weights_format_t;

/* The format of the file at path, from its first bytes; an input error naming the file when it is
 * none of them (or cannot be opened). */
weights_format_t weights_detect(const char *path);
const char *weights_format_name(weights_format_t f);

/* On one process: fill the whole host parameter slab params (g->params.total floats, g's layout,
 * PyTorch's shapes) from the file at path, in any of the formats. Every tensor of g must be in the
 * file with g's shape (GPT-2 formats: the shapes that map to g's); a tensor missing, of another
 * shape (the message names the tensor and both shapes), a vocabulary that differs, data the file
 * does not hold, or a model with no GPT-2 counterpart for a GPT-2 format, is an input error (exit
 * 2). Padding rows of the token table that the file does not hold are zeroed. */
void weights_read(const char *path, const graph_t *g, float *params);
/* Where a reader puts the tensors of a slab layout (g->params, or g->bufs): place(ctx, t) gives room
 * for tensor t's n floats, which the reader fills with its values (PyTorch's shapes) before it calls
 * put(ctx, t). A reader asks for every tensor once, one at a time. */
typedef struct weights_sink {
  float *(*place)(void *ctx, int t);
  void (*put)(void *ctx, int t);
  void *ctx;
} weights_sink_t;
/* The sink that reads each tensor in place into the slab base of layout L (s: its storage). */
typedef struct weights_slab {
  const slab_layout_t *L;
  float *base;
} weights_slab_t;
weights_sink_t weights_slab_sink(weights_slab_t *s);
/* weights_read's checks and values, each tensor handed to sink as it is read: a layout that holds
 * pieces of the model copies its pieces from it, holding a tensor at a time (and the reader its file's
 * copy of it), not the whole slab. */
void weights_read_each(const char *path, const graph_t *g, const weights_sink_t *sink);
/* On one process, for a model with buffers (g->bufs: batch norm's running statistics): fill the
 * host buffer slab bufs from the file's /buffers, each of g's buffers with its shape and nothing
 * else. Only Surge's HDF5 files (model.h5, checkpoints) hold buffers; any other file, or one without
 * them, is an input error (exit 2). */
void weights_read_bufs(const char *path, const graph_t *g, float *bufs);

/* The gpt a GPT-2 file (safetensors, llm.c's) or a gpt's model.h5 or checkpoint describes: its
 * sizes (safetensors: from the shapes and the config.json beside the file, for the heads; its
 * vocabulary padded to a multiple of 128, [model] gpt_vocab_multiple's default and llm.c's). Input
 * error when the file is not of a GPT-2-shaped model. */
void weights_gpt2_dims(const char *path, gpt2_dims_t *d);

/* ---- the formats (io/weights_h5.c, io/safetensors.c, io/llmc_file.c) */
void weights_read_h5(const char *path, const graph_t *g, const weights_sink_t *sink);
void weights_read_bufs_h5(const char *path, const graph_t *g, float *bufs);
void weights_read_safetensors(const char *path, const graph_t *g, const weights_sink_t *sink);
void weights_read_llmc(const char *path, const graph_t *g, const weights_sink_t *sink);
void weights_h5_gpt2_dims(const char *path, gpt2_dims_t *d);
void weights_safetensors_dims(const char *path, gpt2_dims_t *d);
void weights_llmc_dims(const char *path, gpt2_dims_t *d);

/* Writers of a gpt's parameters (g GPT-2-shaped, gpt2_dims_of; else an input error with the
 * reason). bf16: store bfloat16 (rounded to nearest even) instead of float32. The file is written
 * under a temporary name and renamed. */
/* path, and config.json in path's directory (Hugging Face's GPT2Config of g). */
void weights_write_safetensors(const char *path, const graph_t *g, const float *params, int bf16);
void weights_write_llmc(const char *path, const graph_t *g, const float *params, int bf16);
/* model.h5 of a gpt (io/model_file.h), its deck the [model] section of g's sizes; collective over
 * world (one rank is enough). */
void weights_write_h5(const char *path, const graph_t *g, const float *params, comm_t *world);

/* ---- shared by the formats (weights.c) */

/* Element types of the files: little-endian float32, bfloat16, float16. */
typedef enum weights_dtype { WEIGHTS_F32, WEIGHTS_BF16, WEIGHTS_F16 } weights_dtype_t;
size_t weights_dtype_bytes(weights_dtype_t t);
/* n values of type t (little-endian bytes) to floats (exact), and floats to t (bfloat16 and float16
 * rounded to nearest even; NaN stays NaN). */
void weights_decode(weights_dtype_t t, const unsigned char *in, size_t n, float *out);
void weights_encode(weights_dtype_t t, const float *in, size_t n, unsigned char *out);

/* A file written under PATH.tmp (core/outfile.h: a leftover there removed first) and renamed when
 * complete; any failure is a runtime error naming it (the temporary file removed). */
typedef struct weights_out {
  FILE *f;
  const char *path;
  char *tmp;
} weights_out_t;
void weights_out_open(weights_out_t *o, const char *path);
void weights_out_write(weights_out_t *o, const void *p, size_t bytes);
/* n floats of params as type t. */
void weights_out_floats(weights_out_t *o, const float *p, size_t n, weights_dtype_t t);
void weights_out_commit(weights_out_t *o);

#endif
