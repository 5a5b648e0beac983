/* Hostile edits of an HDF5 file, as a program that knows the format would make them, for the
 * hardening tests (issue 36). One edit of OBJECT (a group or dataset) of FILE, in place:
 *   h5_hostile FILE DATASET rows=N       the 1-D dataset replaced by N doubles (its first values kept,
 *                                        the rest 0), contiguous like surge-sim's
 *   h5_hostile FILE OBJECT f64:NAME=X    attribute NAME (re)written as a double X (nan, inf, 1e300)
 *   h5_hostile FILE OBJECT i64:NAME=V    ... as a 64-bit integer V
 *   h5_hostile FILE OBJECT str:NAME=T    ... as a UTF-8 string T, in which \xHH is the byte HH
 * Exit 0, or 99 when the file or the edit fails. */
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
  if (argc != 4) {
    fprintf(stderr, "usage: h5_hostile FILE OBJECT rows=N|f64:NAME=X|i64:NAME=V|str:NAME=T\n");
    return 99;
  }
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  int rc = f < 0;
  if (!rc && sscanf(argv[3], "rows=%llu", &rows) == 1)
    rc = replace_rows(f, argv[2], (hsize_t)rows);
  else if (!rc)
    rc = write_attr(f, argv[2], argv[3]);
  if (f >= 0 && H5Fclose(f) < 0) rc = 1;
  if (rc) fprintf(stderr, "h5_hostile: %s %s %s failed\n", argv[1], argv[2], argv[3]);
  return rc ? 99 : 0;
}
