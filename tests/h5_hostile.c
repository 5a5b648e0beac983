/* Hostile edits of an HDF5 file, as a program that knows the format would make them, for the
 * hardening tests (issue 36). One edit of OBJECT (a group or dataset) of FILE, in place:
 *   h5_hostile FILE DATASET rows=N       the 1-D dataset replaced by N doubles (its first values kept,
 *                                        the rest 0), contiguous like surge-sim's
 *   h5_hostile FILE OBJECT f64:NAME=X    attribute NAME (re)written as a double X (nan, inf, 1e300)
 *   h5_hostile FILE OBJECT i64:NAME=V    ... as a 64-bit integer V
 *   h5_hostile FILE OBJECT str:NAME=T    ... as a UTF-8 string T, in which \xHH is the byte HH
 *   h5_hostile FILE DATASET bits=B       the dataset (its extent and layout kept, its values as far
 *                                        as a 32-bit integer holds them) stored as 4-byte integers that claim
 *                                        B bits of precision (B > 32: a layout HDF5's own calls never
 *                                        make, which a crafted file can record)
 *   h5_hostile FILE OBJECT bad:NAME=B    attribute NAME (re)written as such an integer (value 1)
 * The last two write a marker type (4 bytes, 17 bits from bit 3), close the file and patch the
 * marker's precision in the file's bytes: the file must hold the marker once, in an object header
 * without a checksum (the default format, not a checkpoint's). Exit 0, or 99 when the file or the
 * edit fails. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int replace_rows(hid_t f, const char *name, hsize_t rows) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = d < 0 ? -1 : H5Dget_space(d);
  hsize_t old = 0;
  if (s < 0 || H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &old, NULL) != 1) return 1;
  double *v = calloc(rows > old ? rows + 1 : old + 1, sizeof *v);
  int rc = !v || (old && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0);
  H5Sclose(s), H5Dclose(d);
  for (hsize_t i = old; i < rows; i++) v[i] = 0;
  if (rc || H5Ldelete(f, name, H5P_DEFAULT) < 0) return 1;
  s = H5Screate_simple(1, &rows, NULL);
  d = H5Dcreate2(f, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  rc = d < 0 || (rows && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0);
  free(v);
  H5Dclose(d), H5Sclose(s);
  return rc;
}

/* The marker type: a 4-byte little-endian integer of 17 bits from bit 3. Its datatype message holds
 * size, bit offset and precision as the bytes MARK (size 4, offset 3, precision 17). */
static const unsigned char MARK[] = {4, 0, 0, 0, 3, 0, 17, 0};

static hid_t marker_type(void) {
  hid_t t = H5Tcopy(H5T_STD_I32LE);
  if (t >= 0 && (H5Tset_precision(t, 17) < 0 || H5Tset_offset(t, 3) < 0)) return -1;
  return t;
}

/* The only copy of MARK in file path gets precision bits: 0, or 1 when there is not exactly one. */
static int patch_precision(const char *path, unsigned bits) {
  FILE *f = fopen(path, "r+b");
  if (!f || fseek(f, 0, SEEK_END) != 0) return 1;
  long n = ftell(f);
  unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
  int rc = !b || fseek(f, 0, SEEK_SET) != 0 || fread(b, 1, (size_t)n, f) != (size_t)n;
  long at = -1, found = 0;
  for (long i = 0; !rc && i + (long)sizeof MARK <= n; i++)
    if (memcmp(b + i, MARK, sizeof MARK) == 0) at = i, found++;
  rc = rc || found != 1;
  unsigned char le[2] = {(unsigned char)(bits & 0xff), (unsigned char)(bits >> 8)};
  rc = rc || fseek(f, at + 6, SEEK_SET) != 0 || fwrite(le, 1, 2, f) != 2;
  free(b);
  return fclose(f) != 0 || rc;
}

/* Dataset name rewritten in the marker type, same extent and creation properties (a log's series
 * stay chunked and extendible), values converted through int. */
static int replace_marked(hid_t f, const char *name) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = d < 0 ? -1 : H5Dget_space(d);
  hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
  hssize_t n = s < 0 ? -1 : H5Sget_simple_extent_npoints(s);
  int *v = n < 0 ? NULL : calloc((size_t)n + 1, sizeof *v);
  int rc = !v || dcpl < 0 || (n && H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0);
  if (d >= 0) H5Dclose(d);
  hid_t t = marker_type();
  rc = rc || t < 0 || H5Ldelete(f, name, H5P_DEFAULT) < 0;
  d = rc ? -1 : H5Dcreate2(f, name, t, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  rc = rc || d < 0 || (n && H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0);
  free(v);
  if (d >= 0) H5Dclose(d);
  if (t >= 0) H5Tclose(t);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (s >= 0) H5Sclose(s);
  return rc;
}

/* \xHH escapes of text decoded in place */
static void unescape(char *text) {
  for (char *p = text; (p = strstr(p, "\\x")) != NULL; p++) {
    unsigned byte;
    if (sscanf(p + 2, "%2x", &byte) != 1) continue;
    *p = (char)byte;
    memmove(p + 1, p + 4, strlen(p + 4) + 1);
  }
}

static int write_attr(hid_t f, const char *obj, const char *edit) {
  char kind[4], name[64], value[1024];
  if (sscanf(edit, "%3[a-z0-9]:%63[^=]=%1023[^\n]", kind, name, value) != 3) return 1;
  hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
  if (o < 0 || (H5Aexists(o, name) > 0 && H5Adelete(o, name) < 0)) return 1;
  hid_t space = H5Screate(H5S_SCALAR), type = -1, mem = -1;
  double x = strtod(value, NULL);
  int64_t i = strtoll(value, NULL, 10);
  const void *buf = NULL;
  if (strcmp(kind, "f64") == 0) {
    type = H5Tcopy(H5T_IEEE_F64LE), mem = H5Tcopy(H5T_NATIVE_DOUBLE), buf = &x;
  } else if (strcmp(kind, "i64") == 0) {
    type = H5Tcopy(H5T_STD_I64LE), mem = H5Tcopy(H5T_NATIVE_INT64), buf = &i;
  } else if (strcmp(kind, "bad") == 0) {
    static const int one = 1;
    type = marker_type(), mem = H5Tcopy(H5T_NATIVE_INT), buf = &one;
  } else if (strcmp(kind, "str") == 0) {
    unescape(value);
    type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, strlen(value) + 1);
    H5Tset_cset(type, H5T_CSET_UTF8);
    mem = H5Tcopy(type), buf = value;
  }
  hid_t a = type < 0 ? -1 : H5Acreate2(o, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  int rc = a < 0 || H5Awrite(a, mem, buf) < 0;
  if (a >= 0) H5Aclose(a);
  if (type >= 0) H5Tclose(type), H5Tclose(mem);
  H5Sclose(space), H5Oclose(o);
  return rc;
}

int main(int argc, char **argv) {
  unsigned long long rows;
  unsigned bits = 0;
  if (argc != 4) {
    fprintf(stderr, "usage: h5_hostile FILE OBJECT rows=N|f64:NAME=X|i64:NAME=V|str:NAME=T|bits=B|bad:NAME=B\n");
    return 99;
  }
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  int rc = f < 0, dataset_bits = sscanf(argv[3], "bits=%u", &bits) == 1;
  const char *attr_bits = strncmp(argv[3], "bad:", 4) == 0 ? strchr(argv[3], '=') : NULL;
  if (!rc && sscanf(argv[3], "rows=%llu", &rows) == 1)
    rc = replace_rows(f, argv[2], (hsize_t)rows);
  else if (!rc && dataset_bits)
    rc = replace_marked(f, argv[2]);
  else if (!rc)
    rc = write_attr(f, argv[2], argv[3]);
  if (f >= 0 && H5Fclose(f) < 0) rc = 1;
  if (!rc && attr_bits) bits = (unsigned)strtoul(attr_bits + 1, NULL, 10);
  if (!rc && (dataset_bits || attr_bits)) rc = patch_precision(argv[1], bits);
  if (rc) fprintf(stderr, "h5_hostile: %s %s %s failed\n", argv[1], argv[2], argv[3]);
  return rc ? 99 : 0;
}
