/* weights_read and weights_gpt2_dims: the format from the file's first bytes, then its reader. */
#include "io/weights.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bf16.h"
#include "core/error.h"
#include "core/infile.h"
#include "core/outfile.h"
#include "io/h5serial.h"


weights_format_t weights_detect(const char *path) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  FILE *f = infile_fopen(path, NULL);
  if (!f) surge_input_error("%s: cannot open weights: %s", path, strerror(errno));
  unsigned char b[9] = {0};
  size_t n = fread(b, 1, sizeof b, f);
  fclose(f);
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (n >= 8 && memcmp(b, hdf5, 8) == 0) return WEIGHTS_H5;
  uint32_t magic = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  if (n >= 4 && magic == WEIGHTS_LLMC_MAGIC) return WEIGHTS_LLMC;
  if (n == 9 && b[8] == '{') return WEIGHTS_SAFETENSORS; /* 8-byte header length, then the JSON header */
  uint32_t version = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
  if (n < 9) surge_input_error("%s: %zu bytes: too short for any weights format (truncated?)", path, n);
  if (version == 3 || version == 5) /* llm.c's versions at offset 4 */
    surge_input_error("%s: magic %u at offset 0, not llm.c's %d (version %u at offset 4 is llm.c's): not a model "
                      "file Surge reads",
                      path, magic, WEIGHTS_LLMC_MAGIC, version);
  surge_input_error("%s: not a weights file Surge reads (expected HDF5 (model.h5, a checkpoint), safetensors (8-byte "
                    "header length, then '{') or llm.c's model file (magic %d)); its first bytes are none of them",
                    path, WEIGHTS_LLMC_MAGIC);
}

const char *weights_format_name(weights_format_t f) {
  return f == WEIGHTS_H5 ? "HDF5" : f == WEIGHTS_SAFETENSORS ? "safetensors" : "llm.c";
}

/* n floats of tensor `name` of path, all finite: else an input error naming the first that is not. */
static void check_finite_tensor(const char *path, const char *name, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i]))
      surge_input_error("%s: tensor %s: value %zu is %g, not finite: the model had diverged when it was written "
                        "(hint: start from an earlier checkpoint)", path, name, i, (double)x[i]);
}

/* A sink in front of another that checks each tensor the reader fills before passing it on. */
typedef struct finite_sink {
  const weights_sink_t *next;
  const slab_layout_t *L;
  const char *path;
  float *placed;
} finite_sink_t;

static float *finite_place(void *ctx, int t) {
  finite_sink_t *s = ctx;
  return s->placed = s->next->place(s->next->ctx, t);
}

static void finite_put(void *ctx, int t) {
  finite_sink_t *s = ctx;
  check_finite_tensor(s->path, s->L->t[t].name, s->placed, s->L->t[t].n);
  s->next->put(s->next->ctx, t);
}

void weights_read_each(const char *path, const graph_t *g, const weights_sink_t *sink) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  finite_sink_t fs = {.next = sink, .L = &g->params, .path = path};
  const weights_sink_t checked = {finite_place, finite_put, &fs};
  switch (weights_detect(path)) {
  case WEIGHTS_H5: weights_read_h5(path, g, &checked); break;
  case WEIGHTS_SAFETENSORS: weights_read_safetensors(path, g, &checked); break;
  case WEIGHTS_LLMC: weights_read_llmc(path, g, &checked); break;
  }
}

static float *slab_place(void *ctx, int t) {
  weights_slab_t *s = ctx;
  return s->base + s->L->t[t].off;
}
static void slab_put(void *ctx, int t) { (void)ctx, (void)t; }

weights_sink_t weights_slab_sink(weights_slab_t *s) { return (weights_sink_t){slab_place, slab_put, s}; }

void weights_read(const char *path, const graph_t *g, float *params) {
  weights_slab_t s = {&g->params, params};
  weights_sink_t sink = weights_slab_sink(&s);
  weights_read_each(path, g, &sink);
}

void weights_read_bufs(const char *path, const graph_t *g, float *bufs) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  weights_format_t f = weights_detect(path);
  if (f != WEIGHTS_H5)
    surge_input_error("%s: a %s file holds no running statistics, which this model's batch norms need (hint: start "
                      "from a Surge model.h5 or checkpoint)",
                      path, weights_format_name(f));
  weights_read_bufs_h5(path, g, bufs);
  for (int i = 0; i < g->bufs.n; i++)
    check_finite_tensor(path, g->bufs.t[i].name, bufs + g->bufs.t[i].off, g->bufs.t[i].n);
}

void weights_gpt2_dims(const char *path, gpt2_dims_t *d) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  switch (weights_detect(path)) {
  case WEIGHTS_H5: weights_h5_gpt2_dims(path, d); break;
  case WEIGHTS_SAFETENSORS: weights_safetensors_dims(path, d); break;
  case WEIGHTS_LLMC: weights_llmc_dims(path, d); break;
  }
  char why[320];
  if (gpt2_dims_check(d, why, sizeof why)) surge_input_error("%s: %s", path, why);
}

size_t weights_dtype_bytes(weights_dtype_t t) { return t == WEIGHTS_F32 ? 4 : 2; }

/* float16 bits to float (exact: every half is a float). */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | man << 13; /* inf, NaN */
  else if (exp) bits = sign | (exp + 112) << 23 | man << 13;
  else if (!man) bits = sign;
  else { /* subnormal: normalise */
    int e = -1;
    do { man <<= 1; e++; } while (!(man & 0x400));
    bits = sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13;
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* float to float16, rounded to nearest even. */
static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504 */
  if (ax < 0x38800000u) { /* a subnormal half (or zero) */
    float a;
    memcpy(&a, &ax, sizeof a);
    float scaled = a * 16777216.0f; /* 2^24: units of the smallest subnormal, rounded by the FPU */
    return (uint16_t)(sign | (uint16_t)__builtin_rintf(scaled));
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1); /* round to nearest even at bit 13 */
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

void weights_decode(weights_dtype_t t, const unsigned char *in, size_t n, float *out) {
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    if (t == WEIGHTS_F32) {
      bits = (uint32_t)in[4 * i] | (uint32_t)in[4 * i + 1] << 8 | (uint32_t)in[4 * i + 2] << 16 |
             (uint32_t)in[4 * i + 3] << 24;
    } else {
      uint16_t h = (uint16_t)(in[2 * i] | in[2 * i + 1] << 8);
      if (t == WEIGHTS_F16) {
        out[i] = half_to_float(h);
        continue;
      }
      bits = (uint32_t)h << 16;
    }
    memcpy(&out[i], &bits, sizeof bits);
  }
}

void weights_encode(weights_dtype_t t, const float *in, size_t n, unsigned char *out) {
  for (size_t i = 0; i < n; i++) {
    uint32_t x;
    memcpy(&x, &in[i], sizeof x);
    if (t == WEIGHTS_F32) {
      for (int b = 0; b < 4; b++) out[4 * i + b] = (unsigned char)(x >> 8 * b);
      continue;
    }
    uint16_t h;
    if (t == WEIGHTS_F16) h = float_to_half(in[i]);
    else h = bf16_bits(in[i]);
    out[2 * i] = (unsigned char)h;
    out[2 * i + 1] = (unsigned char)(h >> 8);
  }
}

void weights_out_open(weights_out_t *o, const char *path) {
  o->path = path;
  o->tmp = outfile_temp(path);
  o->f = fopen(o->tmp, "wb");
  if (!o->f) surge_runtime_error("%s: cannot create: %s", o->tmp, strerror(errno));
}

void weights_out_write(weights_out_t *o, const void *p, size_t bytes) {
  if (bytes && fwrite(p, 1, bytes, o->f) != bytes) {
    int e = errno;
    fclose(o->f);
    remove(o->tmp);
    surge_runtime_error("%s: cannot write: %s", o->tmp, strerror(e));
  }
}

void weights_out_floats(weights_out_t *o, const float *p, size_t n, weights_dtype_t t) {
  enum { CHUNK = 1 << 16 };
  unsigned char buf[CHUNK * 4];
  for (size_t at = 0; at < n; at += CHUNK) {
    size_t k = n - at < CHUNK ? n - at : CHUNK;
    weights_encode(t, p + at, k, buf);
    weights_out_write(o, buf, k * weights_dtype_bytes(t));
  }
}

void weights_out_commit(weights_out_t *o) {
  int bad = fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
  int e = errno;
  if (fclose(o->f) != 0 && !bad) bad = 1, e = errno;
  if (bad) remove(o->tmp);
  else if (outfile_publish(o->tmp, o->path) != 0) bad = 1, e = errno;
  if (bad) surge_runtime_error("%s: cannot write: %s", o->path, strerror(e));
  free(o->tmp);
  o->tmp = NULL;
}
