/* Damaged copies of a surge-profile file for tests/test_profile_plan.sh, made with the HDF5 API
 * (one process, no MPI):
 *   profile_damage IN OUT version0    /profile@version = 0
 *   profile_damage IN OUT version1    /profile@version = 1 (a profile before the step costs)
 *   profile_damage IN OUT huge        /profile/batch replaced by a dataset that declares 2^30 entries
 *                                     (chunked, nothing stored: the file stays small)
 *   profile_damage IN OUT time1e308   one /profile/median_us value set to 1e308
 * Exit 0, or 99 when the copy or the change fails. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_file(const char *in, const char *out) {
  FILE *a = fopen(in, "rb"), *b = fopen(out, "wb");
  char buf[65536];
  size_t n;
  int ok = a && b;
  while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
  if (a) fclose(a);
  if (b && fclose(b) != 0) ok = 0;
  return ok ? 0 : -1;
}

static int set_version(hid_t top, unsigned v) {
  hid_t at = H5Aopen(top, "version", H5P_DEFAULT);
  int rc = at < 0 || H5Awrite(at, H5T_NATIVE_UINT, &v) < 0 ? -1 : 0;
  if (at >= 0) H5Aclose(at);
  return rc;
}

static int huge_batch(hid_t top) {
  if (H5Ldelete(top, "batch", H5P_DEFAULT) < 0) return -1;
  hsize_t dims[1] = {(hsize_t)1 << 30}, chunk[1] = {1024};
  hid_t space = H5Screate_simple(1, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int rc = space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0 ? -1 : 0;
  hid_t ds = rc ? -1 : H5Dcreate2(top, "batch", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds < 0) rc = -1;
  if (ds >= 0) H5Dclose(ds);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  return rc;
}

static int time_1e308(hid_t top) {
  hid_t ds = H5Dopen2(top, "median_us", H5P_DEFAULT), space = ds < 0 ? -1 : H5Dget_space(ds);
  hsize_t d[2] = {0, 0};
  int rc = space < 0 || H5Sget_simple_extent_dims(space, d, NULL) != 2 || d[0] * d[1] == 0 ? -1 : 0;
  double *v = rc ? NULL : calloc((size_t)(d[0] * d[1]), sizeof *v);
  if (!rc) rc = !v || H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0 ? -1 : 0;
  if (!rc) {
    v[d[0] * d[1] - 1] = 1e308;
    rc = H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0 ? -1 : 0;
  }
  free(v);
  if (space >= 0) H5Sclose(space);
  if (ds >= 0) H5Dclose(ds);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: profile_damage IN OUT version0|version1|huge|time1e308\n");
    return 99;
  }
  if (copy_file(argv[1], argv[2]) != 0) return 99;
  hid_t f = H5Fopen(argv[2], H5F_ACC_RDWR, H5P_DEFAULT), top = f < 0 ? -1 : H5Gopen2(f, "profile", H5P_DEFAULT);
  int rc = -1;
  if (top >= 0 && strcmp(argv[3], "version0") == 0) rc = set_version(top, 0);
  if (top >= 0 && strcmp(argv[3], "version1") == 0) rc = set_version(top, 1);
  if (top >= 0 && strcmp(argv[3], "huge") == 0) rc = huge_batch(top);
  if (top >= 0 && strcmp(argv[3], "time1e308") == 0) rc = time_1e308(top);
  if (top >= 0) H5Gclose(top);
  if (f >= 0 && H5Fclose(f) < 0) rc = -1;
  if (rc != 0) fprintf(stderr, "profile_damage: %s %s %s failed\n", argv[1], argv[2], argv[3]);
  return rc == 0 ? 0 : 99;
}
