/* What a checkpoint file holds besides the tensors: the attributes of /, described once in a
 * table that drives writing, reading and their CRC32, and the tensor groups of a state. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/share.h"
#include "io/checkpoint_impl.h"
#include "io/strbuf.h"

typedef enum { ATTR_STRING, ATTR_I64, ATTR_U64 } attr_kind_t;

typedef struct root_attr {
  const char *name;
  attr_kind_t kind;
  size_t offset; /* of the field in ckpt_root_t */
  int optional;  /* a string that older files lack: absent reads "", and "" is neither written nor in the CRC */
} root_attr_t;

#define ROOT_ATTR(field, kind) {#field, kind, offsetof(ckpt_root_t, field), 0}
#define OPTIONAL_ROOT_ATTR(field) {#field, ATTR_STRING, offsetof(ckpt_root_t, field), 1}
static const root_attr_t root_attrs[] = {
    ROOT_ATTR(format, ATTR_STRING),  ROOT_ATTR(format_version, ATTR_I64), ROOT_ATTR(model, ATTR_STRING),
    ROOT_ATTR(fingerprint, ATTR_U64), ROOT_ATTR(config, ATTR_STRING),      ROOT_ATTR(step, ATTR_I64),
    ROOT_ATTR(opt_t, ATTR_I64),       ROOT_ATTR(seed, ATTR_U64),           ROOT_ATTR(global_batch, ATTR_I64),
    ROOT_ATTR(samples_seen, ATTR_I64), ROOT_ATTR(ranks, ATTR_I64),         ROOT_ATTR(layout, ATTR_STRING),
    ROOT_ATTR(created, ATTR_STRING),
    ROOT_ATTR(compression, ATTR_STRING), ROOT_ATTR(deck, ATTR_STRING), OPTIONAL_ROOT_ATTR(run_id),
    OPTIONAL_ROOT_ATTR(vocab), OPTIONAL_ROOT_ATTR(rank_grid),
};
enum { NROOT_ATTRS = sizeof root_attrs / sizeof root_attrs[0] };
#define STATE_CRC_ATTR "state_crc32"

static void *field(const ckpt_root_t *r, const root_attr_t *a) { return (char *)r + a->offset; }

/* An optional attribute left out: absent from the file and from the CRC. */
static int left_out(const ckpt_root_t *r, const root_attr_t *a) {
  const char *s = *(char *const *)field(r, a);
  return a->optional && (!s || !s[0]);
}

/* CRC32 of "name=value\n" for every attribute, in table order. */
static uint32_t root_crc(const ckpt_root_t *r) {
  strbuf_t text = STRBUF_INIT;
  for (int i = 0; i < NROOT_ATTRS; i++) {
    const root_attr_t *a = &root_attrs[i];
    const void *f = field(r, a);
    if (left_out(r, a)) continue;
    sb_printf(&text, "%s=", a->name);
    if (a->kind == ATTR_STRING)
      sb_puts(&text, *(char *const *)f);
    else if (a->kind == ATTR_I64)
      sb_printf(&text, "%lld", (long long)*(const int64_t *)f);
    else
      sb_printf(&text, "%llu", (unsigned long long)*(const uint64_t *)f);
    sb_putc(&text, '\n');
  }
  uint32_t crc = ckpt_crc32_text(sb_str(&text));
  sb_free(&text);
  return crc;
}

int ckpt_root_write(hid_t obj, const ckpt_root_t *r, const char **failed) {
  for (int i = 0; i < NROOT_ATTRS; i++) {
    const root_attr_t *a = &root_attrs[i];
    const void *f = field(r, a);
    if (left_out(r, a)) continue;
    int rc = a->kind == ATTR_STRING ? h5util_attr_write_string(obj, a->name, *(char *const *)f, H5T_CSET_ASCII)
             : a->kind == ATTR_I64  ? h5util_attr_write_i64(obj, a->name, *(const int64_t *)f)
                                    : h5util_attr_write_u64(obj, a->name, *(const uint64_t *)f);
    if (rc != 0) {
      *failed = a->name;
      return -1;
    }
  }
  *failed = STATE_CRC_ATTR;
  return h5util_attr_write_u32(obj, STATE_CRC_ATTR, root_crc(r));
}

int ckpt_root_read(hid_t obj, ckpt_root_t *r, const char **failed) {
  memset(r, 0, sizeof *r);
  for (int i = 0; i < NROOT_ATTRS; i++) {
    const root_attr_t *a = &root_attrs[i];
    void *f = field(r, a);
    int rc = a->kind == ATTR_STRING ? h5util_attr_read_string(obj, a->name, (char **)f)
             : a->kind == ATTR_I64  ? h5util_attr_read_i64(obj, a->name, (int64_t *)f)
                                    : h5util_attr_read_u64(obj, a->name, (uint64_t *)f);
    if (rc == H5UTIL_ABSENT && a->optional && H5Aexists(obj, a->name) == 0) {
      *(char **)f = xstrdup("");
      continue;
    }
    if (rc != 0) {
      *failed = a->name;
      return -1;
    }
  }
  uint32_t stored;
  *failed = STATE_CRC_ATTR;
  if (h5util_attr_read_u32(obj, STATE_CRC_ATTR, &stored) != 0) return -1;
  return stored == root_crc(r) ? 0 : -2;
}

void ckpt_root_free(ckpt_root_t *r) {
  for (int i = 0; i < NROOT_ATTRS; i++)
    if (root_attrs[i].kind == ATTR_STRING) {
      char **s = field(r, &root_attrs[i]);
      free(*s);
      *s = NULL;
    }
}

#define CKPT_CHUNK_MAX_BYTES (1u << 20)
#define CKPT_CHUNK_MIN_BYTES (64u << 10)

static int call_chunks = 64;

int ckpt_call_chunks(void) { return call_chunks; }

void ckpt_set_call_chunks(int chunks) { call_chunks = chunks > 0 ? chunks : 1; }

ckpt_chunking_t ckpt_chunking(const state_tensor_t *t) {
  ckpt_chunking_t none = {0, 0, 0};
  size_t rows = t->count[0], floats = state_tensor_floats(t);
  if (rows == 0 || floats == 0 || t->replicas < 1 || t->replica < 0 || t->replica >= t->replicas) return none;
  size_t row_bytes = sizeof(float) * (floats / rows), ranks = (size_t)t->replicas, rank = (size_t)t->replica;
  size_t max_rows = row_bytes >= CKPT_CHUNK_MAX_BYTES ? 1 : CKPT_CHUNK_MAX_BYTES / row_bytes;
  size_t min_rows = row_bytes >= CKPT_CHUNK_MIN_BYTES ? 1 : CKPT_CHUNK_MIN_BYTES / row_bytes;
  size_t nchunks = (rows + max_rows - 1) / max_rows, spread = (rows + min_rows - 1) / min_rows;
  if (spread > ranks) spread = ranks;
  if (nchunks < spread) nchunks = spread;
  ckpt_chunking_t c = {.chunk_rows = (rows + nchunks - 1) / nchunks};
  nchunks = (rows + c.chunk_rows - 1) / c.chunk_rows;
  share_t mine = share_of(nchunks, rank, ranks); /* rank r writes chunks [lo, hi) */
  size_t first = (size_t)mine.lo, end = (size_t)mine.hi;
  c.lo = first * c.chunk_rows < rows ? first * c.chunk_rows : rows;
  c.hi = end * c.chunk_rows < rows ? end * c.chunk_rows : rows;
  return c;
}
