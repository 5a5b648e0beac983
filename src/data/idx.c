#include "data/idx.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/error.h"

/* Deflate never expands data more than about 1032:1, so a file of N bytes holds at most this
 * many bytes of payload: the bound that keeps a lying header from a huge allocation. */
#define DEFLATE_MAX_RATIO 1032u
#define IDX_READ_CHUNK (1u << 30)
#define IDX_FIRST_ALLOC ((size_t)64 << 20) /* bytes allocated before the data shows there is more */

/* Fail if zlib saw bad or cut-short compressed data (gzread reports a cut-short stream as an end
 * of file and only gzerror tells). */
static void check_gzip(gzFile f, const char *path) {
  int zerr = Z_OK;
  const char *msg = gzerror(f, &zerr);
  if (zerr == Z_OK) return;
  size_t plen = strlen(path);
  if (strncmp(msg, path, plen) == 0 && msg[plen] == ':') /* zlib's message repeats the path */
    msg += plen + 1 + (msg[plen + 1] == ' ');
  surge_input_error("%s: corrupt gzip data (%s); is the download complete?", path, msg);
}

/* Read up to n bytes; returns the bytes read (fewer only at the end of the data). */
static size_t gz_read_all(gzFile f, const char *path, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    size_t want = n - got < IDX_READ_CHUNK ? n - got : IDX_READ_CHUNK;
    int r = gzread(f, (char *)buf + got, (unsigned)want);
    if (r <= 0) {
      check_gzip(f, path);
      break;
    }
    got += (size_t)r;
  }
  return got;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* "60000x28x28" for messages. */
static const char *dims_str(const uint32_t *dims, int ndim, char *buf, size_t n) {
  int k = 0;
  for (int i = 0; i < ndim && k >= 0 && (size_t)k < n; i++)
    k += snprintf(buf + k, n - (size_t)k, i ? "x%" PRIu32 : "%" PRIu32, dims[i]);
  return buf;
}

static uint64_t file_size_or_fail(const char *path, const char *missing_hint) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) surge_input_error("%s: no such file (hint: %s)", path, missing_hint);
    surge_input_error("%s: cannot open: %s", path, strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) surge_input_error("%s: not a regular file (hint: %s)", path, missing_hint);
  return (uint64_t)st.st_size;
}

/* The payload of a plain file is exactly what follows its header; a gzip file's is at most
 * DEFLATE_MAX_RATIO times the file (and is read into memory only as it arrives, below). */
static uint64_t payload_bound(uint64_t file_bytes, size_t header_bytes, int plain) {
  if (plain) return file_bytes > header_bytes ? file_bytes - header_bytes : 0;
  uint64_t most = file_bytes > UINT64_MAX / DEFLATE_MAX_RATIO ? UINT64_MAX : file_bytes * DEFLATE_MAX_RATIO;
  return most > SIZE_MAX ? SIZE_MAX : most;
}

/* Read the payload of `want` bytes: memory grows with the data that really arrives (doubling from
 * IDX_FIRST_ALLOC), so a header that lies costs at most twice what the file decompresses to.
 * Returns the bytes read into *data (malloc'd, want bytes when the file holds them). */
static size_t read_payload(gzFile f, const char *path, size_t want, uint8_t **data) {
  size_t cap = want < IDX_FIRST_ALLOC ? want : IDX_FIRST_ALLOC, got = 0;
  *data = xmalloc(cap);
  for (;;) {
    got += gz_read_all(f, path, *data + got, cap - got);
    if (got < cap || cap == want) return got;
    cap = cap > want / 2 ? want : 2 * cap;
    *data = xrealloc(*data, cap);
  }
}

/* Whether every gzip member of the file is inflated to its end, trailer (CRC32, size) checked: zlib's
 * gzread ends a stream cut short just before its trailer without an error when exactly its data
 * was asked for. Trailing bytes that start no member are ignored, as gzread ignores them. */
static int members_end(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  unsigned char in[1 << 16], out[1 << 16];
  z_stream s;
  memset(&s, 0, sizeof s);
  int ret = inflateInit2(&s, 15 + 16) == Z_OK ? Z_OK : Z_MEM_ERROR, ended = 0;
  while (ret == Z_OK || ret == Z_BUF_ERROR || ret == Z_STREAM_END) {
    if (s.avail_in == 0) {
      s.avail_in = (uInt)fread(in, 1, sizeof in, f);
      s.next_in = in;
      if (s.avail_in == 0) break;
    }
    if (ended) { /* another member, or bytes after the data */
      if (s.avail_in >= 2 && (s.next_in[0] != 0x1f || s.next_in[1] != 0x8b)) break;
      inflateReset(&s);
      ended = 0;
    }
    s.next_out = out;
    s.avail_out = sizeof out;
    ret = inflate(&s, Z_NO_FLUSH);
    ended = ret == Z_STREAM_END;
  }
  inflateEnd(&s);
  fclose(f);
  return ended;
}

/* Whether the gzip file ends with the trailer of the data read (header + payload): the last
 * member's CRC32 and size match at once for a file of one member, as Surge's inputs are; any other
 * file is inflated member by member to find its end (members_end). */
static int gzip_whole(const char *path, const uint8_t *header, size_t header_bytes, const idx_array_t *a) {
  FILE *f = fopen(path, "rb");
  uint8_t t[8];
  int read = f && fseeko(f, -8, SEEK_END) == 0 && fread(t, 1, 8, f) == 8;
  if (f) fclose(f);
  uLong crc = crc32(0L, header, (uInt)header_bytes);
  for (size_t at = 0; at < a->bytes; at += IDX_READ_CHUNK)
    crc = crc32(crc, a->data + at, (uInt)(a->bytes - at < IDX_READ_CHUNK ? a->bytes - at : IDX_READ_CHUNK));
  uint32_t size = (uint32_t)(header_bytes + a->bytes); /* (mod 2^32, as gzip keeps it) */
  uint32_t t_crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
  uint32_t t_size = (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
  if (read && t_crc == (uint32_t)crc && t_size == size) return 1;
  return members_end(path);
}

/* The header's dimensions against what the reader expects, before any data is read. */
static void check_expected(const char *path, const char *what, const idx_array_t *a, const idx_expect_t *e) {
  if (!e) return;
  char d[64];
  if (e->dims[0] && a->dims[0] != e->dims[0])
    surge_input_error("%s: %u %s, but %s holds %u; files from different sets?", path, (unsigned)a->dims[0], what,
                      e->from, (unsigned)e->dims[0]);
  for (int i = 1; i < a->ndim; i++)
    if (e->dims[i] && a->dims[i] != e->dims[i]) {
      char want[64];
      surge_input_error("%s: %s are %s, expected %s for %s", path, what,
                        dims_str(a->dims + 1, a->ndim - 1, d, sizeof d),
                        dims_str(e->dims + 1, a->ndim - 1, want, sizeof want), e->set);
    }
}

void idx_read(const char *path, int ndim, const char *what, const char *missing_hint, const idx_expect_t *expect,
              idx_array_t *out) {
  uint64_t file_bytes = file_size_or_fail(path, missing_hint);
  gzFile f = gzopen(path, "rb");
  if (!f) surge_input_error("%s: cannot open: %s", path, errno ? strerror(errno) : "zlib could not open it");

  uint8_t header[4 + 4 * IDX_MAX_DIMS];
  size_t header_bytes = 4 + 4 * (size_t)ndim;
  size_t have = gz_read_all(f, path, header, header_bytes);
  if (have < header_bytes)
    surge_input_error("%s: only %zu bytes%s, too short for an IDX header of %s (%zu bytes); truncated?", path, have,
                      gzdirect(f) ? "" : " after decompression", what, header_bytes);
  uint32_t magic = be32(header), expected_magic = 0x00000800u | (uint32_t)ndim;
  if (magic != expected_magic)
    surge_input_error("%s: bad IDX magic 0x%08" PRIx32 " (expected 0x%08" PRIx32 " for %s); is this an IDX file?",
                      path, magic, expected_magic, what);

  memset(out, 0, sizeof *out);
  out->ndim = ndim;
  int plain = gzdirect(f); /* zlib reads a file that is not gzip as it is */
  uint64_t payload = 1, most = payload_bound(file_bytes, header_bytes, plain);
  for (int i = 0; i < ndim; i++) {
    out->dims[i] = be32(header + 4 + 4 * i);
    if (out->dims[i] == 0) surge_input_error("%s: IDX header has size 0 in dimension %d; empty %s?", path, i, what);
    if (out->dims[i] > most / payload) {
      char d[64];
      surge_input_error("%s: IDX header claims %s %s, more than %s %" PRIu64 "-byte file can hold (%" PRIu64
                        " bytes at most); truncated or corrupt header?",
                        path, dims_str(out->dims, i + 1, d, sizeof d), what, plain ? "this uncompressed" : "a gzip",
                        file_bytes, most);
    }
    payload *= out->dims[i];
  }
  check_expected(path, what, out, expect);

  out->bytes = (size_t)payload;
  size_t got = read_payload(f, path, out->bytes, &out->data);
  char d[64];
  if (got < out->bytes)
    surge_input_error("%s: data ends after %zu of the %zu bytes the header describes (%s %s); truncated?",
                      path, got, out->bytes, dims_str(out->dims, ndim, d, sizeof d), what);
  uint8_t extra;
  if (gz_read_all(f, path, &extra, 1) != 0)
    surge_input_error("%s: more data than the header describes (%s %s); wrong header or a different file?",
                      path, dims_str(out->dims, ndim, d, sizeof d), what);
  gzclose(f);
  if (!plain && !gzip_whole(path, header, header_bytes, out))
    surge_input_error("%s: the gzip data ends before its trailer (CRC and size), so nothing checks it; truncated? "
                      "(is the download complete?)", path);
}

void idx_free(idx_array_t *a) {
  free(a->data);
  a->data = NULL;
  a->bytes = 0;
}
