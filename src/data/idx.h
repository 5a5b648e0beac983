/* IDX files (the MNIST family's format): a big-endian header of magic 0x000008NN (unsigned bytes,
 * NN dimensions) and NN 32-bit sizes, then the bytes in row-major order. Read through zlib, so a
 * file may be gzip-compressed or plain. */
#ifndef SURGE_IDX_H
#define SURGE_IDX_H

#include <stddef.h>
#include <stdint.h>

#define IDX_MAX_DIMS 3

typedef struct idx_array {
  int ndim;
  uint32_t dims[IDX_MAX_DIMS];
  uint8_t *data; /* (dims[0], ..., dims[ndim-1]) */
  size_t bytes;
} idx_array_t;

/* What a reader expects of an IDX file's dimensions, checked on its header before the data is
 * read (a small gzip file may claim gigabytes): dims[i] = 0 takes any size; `set` names the data
 * set in messages ("Fashion-MNIST"), `from` what gives the first size ("the labels file ..."). */
typedef struct idx_expect {
  uint32_t dims[IDX_MAX_DIMS];
  const char *set, *from;
} idx_expect_t;

/* Read an IDX file of unsigned bytes with ndim dimensions ("images" or "labels" in messages).
 * Any fault (missing file, bad magic, a header the file cannot hold, dimensions other than expect
 * asks (NULL: any), truncated or extra data, corrupt gzip) fails with surge_input_error naming the
 * path; missing_hint ends the missing-file message. */
void idx_read(const char *path, int ndim, const char *what, const char *missing_hint, const idx_expect_t *expect,
              idx_array_t *out);
void idx_free(idx_array_t *a);

#endif
