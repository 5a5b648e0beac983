/* llm.c's model file (gpt2_124M.bin, train_gpt2.c): a header of 256 little-endian int32,
 *   [0] magic 20240326, [1] version (3: float32, 5: bfloat16), [2] maxT, [3] V, [4] L, [5] NH,
 *   [6] C, [7] Vp (the padded vocabulary),
 * then the 16 tensors in llm.c's order (io/gpt2_map.h), each block's tensors stacked on L, in
 * PyTorch's Linear layout (no transposes), wte with all Vp rows. Read bounded: the sizes checked and
 * the file's length required to be exactly what they need before anything is allocated. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/infile.h"
#include "io/weights.h"

#define LLMC_HEADER_INTS 256
#define LLMC_F32 3
#define LLMC_BF16 5

typedef struct llmc_file {
  const char *path;
  FILE *f;
  gpt2_dims_t d;
  weights_dtype_t dtype;
} llmc_file_t;

/* Parameters of the whole model (blocks stacked). */
static uint64_t llmc_params(const gpt2_dims_t *d) {
  uint64_t n = 0;
  for (int k = 0; k < ZOO_GPT_PARAMS; k++) n += (uint64_t)gpt2_floats(d, k) * (zoo_gpt_param_per_block(k) ? (uint64_t)d->L : 1);
  return n;
}

static void llmc_open(llmc_file_t *l, const char *path) {
  *l = (llmc_file_t){.path = path};
  l->f = infile_fopen(path, NULL);
  if (!l->f) surge_input_error("%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(l->f), &sb) != 0) surge_input_error("%s: cannot stat: %s", path, strerror(errno));
  unsigned char raw[4 * LLMC_HEADER_INTS];
  if (fread(raw, 1, sizeof raw, l->f) != sizeof raw)
    surge_input_error("%s: truncated: %lld bytes, the header needs %zu", path, (long long)sb.st_size, sizeof raw);
  int32_t h[8];
  for (int i = 0; i < 8; i++)
    h[i] = (int32_t)((uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 | (uint32_t)raw[4 * i + 2] << 16 |
                     (uint32_t)raw[4 * i + 3] << 24);
  if (h[0] != WEIGHTS_LLMC_MAGIC) surge_input_error("%s: magic %d at offset 0, llm.c's model file has %d", path, h[0], WEIGHTS_LLMC_MAGIC);
  if (h[1] != LLMC_F32 && h[1] != LLMC_BF16)
    surge_input_error("%s: version %d at offset 4: Surge reads versions %d (float32) and %d (bfloat16)", path, h[1],
                      LLMC_F32, LLMC_BF16);
  l->dtype = h[1] == LLMC_F32 ? WEIGHTS_F32 : WEIGHTS_BF16;
  l->d = (gpt2_dims_t){.maxT = h[2], .V = h[3], .L = h[4], .NH = h[5], .C = h[6], .Vp = h[7]};
  char why[320];
  if (gpt2_dims_check(&l->d, why, sizeof why)) surge_input_error("%s: header: %s", path, why);
  uint64_t need = sizeof raw + llmc_params(&l->d) * weights_dtype_bytes(l->dtype);
  if ((uint64_t)sb.st_size != need)
    surge_input_error("%s: %lld bytes, its header's sizes need %llu: the file is %s", path, (long long)sb.st_size,
                      (unsigned long long)need, (uint64_t)sb.st_size < need ? "truncated" : "longer than its header says");
}

void weights_llmc_dims(const char *path, gpt2_dims_t *d) {
  llmc_file_t l;
  llmc_open(&l, path);
  *d = l.d;
  fclose(l.f);
}

void weights_read_llmc(const char *path, const graph_t *g, const weights_sink_t *sink) {
  gpt2_dims_t d;
  gpt2_dims_or_refuse(g, &d, path, "a GPT-2 file cannot fill this model");
  llmc_file_t l;
  llmc_open(&l, path);
  const gpt2_dims_t *f = &l.d;
  const struct {
    const char *what;
    int file, model;
  } sizes[] = {{"layers (L)", f->L, d.L}, {"width (C)", f->C, d.C}, {"heads (NH)", f->NH, d.NH},
               {"positions (maxT)", f->maxT, d.maxT}, {"vocabulary (V)", f->V, d.V}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i].file != sizes[i].model)
      surge_input_error("%s: %s %d in the header, %d in this model", path, sizes[i].what, sizes[i].file, sizes[i].model);
  /* the token table: all rows when both pad alike, else the V real ones (padding zeroed) */
  int rows = f->Vp == d.Vp ? d.Vp : d.V;
  size_t eb = weights_dtype_bytes(l.dtype), most = gpt2_max_floats(f) > gpt2_max_floats(&d) ? gpt2_max_floats(f) : gpt2_max_floats(&d);
  unsigned char *raw = xmalloc(most * eb);
  float *v = xmalloc(most * sizeof *v);
  long long at = 4 * LLMC_HEADER_INTS;
  for (int k = 0; k < ZOO_GPT_PARAMS; k++)
    for (int b = 0; b < (zoo_gpt_param_per_block(k) ? d.L : 1); b++) {
      size_t n = gpt2_floats(f, k);
      if (fread(raw, eb, n, l.f) != n) {
        char name[SLAB_NAME_MAX];
        zoo_gpt_param_name(k, b, name, sizeof name);
        surge_input_error("%s: %s: cannot read %zu values at offset %lld", path, name, n, at);
      }
      weights_decode(l.dtype, raw, n, v);
      const int t = gpt2_find(g, k, b);
      gpt2_import(&d, k, rows, 0, v, sink->place(sink->ctx, t));
      sink->put(sink->ctx, t);
      at += (long long)(n * eb);
    }
  free(raw);
  free(v);
  fclose(l.f);
}

void weights_write_llmc(const char *path, const graph_t *g, const float *params, int bf16) {
  gpt2_dims_t d;
  gpt2_dims_or_refuse(g, &d, path, "no exact GPT-2 conversion");
  unsigned char head[4 * LLMC_HEADER_INTS] = {0};
  int32_t h[8] = {WEIGHTS_LLMC_MAGIC, bf16 ? LLMC_BF16 : LLMC_F32, d.maxT, d.V, d.L, d.NH, d.C, d.Vp};
  for (int i = 0; i < 8; i++)
    for (int b = 0; b < 4; b++) head[4 * i + b] = (unsigned char)((uint32_t)h[i] >> 8 * b);
  weights_out_t o;
  weights_out_open(&o, path);
  weights_out_write(&o, head, sizeof head);
  for (int k = 0; k < ZOO_GPT_PARAMS; k++) /* llm.c's order: kind by kind, the blocks stacked within each */
    for (int b = 0; b < (zoo_gpt_param_per_block(k) ? d.L : 1); b++)
      weights_out_floats(&o, params + g->params.t[gpt2_find(g, k, b)].off, gpt2_floats(&d, k),
                         bf16 ? WEIGHTS_BF16 : WEIGHTS_F32);
  weights_out_commit(&o);
}
