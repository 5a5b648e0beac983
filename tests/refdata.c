/* Reader of the PyTorch reference vectors: read-only HDF5, every failure names file and path. */
#include "refdata.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct refdata {
  hid_t file;
  char *path;
};

refdata_t *refdata_open(const char *path) {
  // our own messages name file and path; HDF5's error stacks would only add noise
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) surge_runtime_error("%s: cannot open as an HDF5 file (missing or not HDF5)", path);
  refdata_t *f = xmalloc(sizeof *f);
  f->file = file;
  f->path = xstrdup(path);
  return f;
}

refdata_t *refdata_open_reference(const char *name) {
  const char *top = getenv("SURGE_TOP_SRCDIR");
  if (!top || !*top) top = ".";
  size_t len = strlen(top) + strlen("/tests/data/reference/") + strlen(name) + 1;
  char *path = xmalloc(len);
  snprintf(path, len, "%s/tests/data/reference/%s", top, name);
  refdata_t *f = refdata_open(path);
  free(path);
  return f;
}

void refdata_close(refdata_t *f) {
  if (!f) return;
  H5Fclose(f->file);
  free(f->path);
  free(f);
}

const char *refdata_path(const refdata_t *f) { return f->path; }

int refdata_exists(const refdata_t *f, const char *h5path) {
  if (strcmp(h5path, "/") == 0) return 1;
  // every link on the way must exist before H5Lexists may be asked about the next one
  size_t len = strlen(h5path);
  char *prefix = xstrdup(h5path);
  int found = 1;
  for (size_t i = 1; i <= len && found; i++) {
    if (h5path[i] != '/' && h5path[i] != '\0') continue;
    prefix[i] = '\0';
    found = H5Lexists(f->file, prefix, H5P_DEFAULT) > 0;
    prefix[i] = h5path[i];
  }
  free(prefix);
  return found;
}

static hid_t open_dataset(const refdata_t *f, const char *h5path) {
  if (!refdata_exists(f, h5path)) surge_runtime_error("%s: no dataset %s", f->path, h5path);
  hid_t d = H5Dopen2(f->file, h5path, H5P_DEFAULT);
  if (d < 0) surge_runtime_error("%s: %s is not a dataset", f->path, h5path);
  return d;
}

// Read a whole dataset converted to mem_type (elements of elem_size bytes).
static void *read_converted(const refdata_t *f, const char *h5path, hid_t mem_type,
                            size_t elem_size, size_t *n, size_t dims[REFDATA_MAX_DIMS], int *ndim) {
  hid_t d = open_dataset(f, h5path);
  hid_t space = H5Dget_space(d);
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > REFDATA_MAX_DIMS)
    surge_runtime_error("%s: %s has rank %d (at most %d supported)", f->path, h5path, rank,
                        REFDATA_MAX_DIMS);
  hsize_t hd[REFDATA_MAX_DIMS];
  H5Sget_simple_extent_dims(space, hd, NULL);
  size_t count = 1;
  for (int i = 0; i < rank; i++) {
    count = surge_mul_size(count, (size_t)hd[i], h5path);
    if (dims) dims[i] = (size_t)hd[i];
  }
  hid_t file_type = H5Dget_type(d);
  H5T_class_t cls = H5Tget_class(file_type);
  H5Tclose(file_type);
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    surge_runtime_error("%s: %s is not a numeric dataset", f->path, h5path);
  void *buf = xmalloc(surge_mul_size(count ? count : 1, elem_size, h5path));
  if (H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
    surge_runtime_error("%s: cannot read dataset %s", f->path, h5path);
  H5Sclose(space);
  H5Dclose(d);
  if (n) *n = count;
  if (ndim) *ndim = rank;
  return buf;
}

double *refdata_read(const refdata_t *f, const char *h5path, size_t *n,
                     size_t dims[REFDATA_MAX_DIMS], int *ndim) {
  return read_converted(f, h5path, H5T_NATIVE_DOUBLE, sizeof(double), n, dims, ndim);
}

float *refdata_read_float(const refdata_t *f, const char *h5path, size_t *n,
                          size_t dims[REFDATA_MAX_DIMS], int *ndim) {
  return read_converted(f, h5path, H5T_NATIVE_FLOAT, sizeof(float), n, dims, ndim);
}

double refdata_scalar(const refdata_t *f, const char *h5path) {
  size_t n;
  double *x = refdata_read(f, h5path, &n, NULL, NULL);
  if (n != 1) surge_runtime_error("%s: %s holds %zu values, expected one", f->path, h5path, n);
  double v = x[0];
  free(x);
  return v;
}

int refdata_config_has(const refdata_t *f, const char *name) {
  return refdata_exists(f, "/config") &&
         H5Aexists_by_name(f->file, "/config", name, H5P_DEFAULT) > 0;
}

static hid_t open_config_attr(const refdata_t *f, const char *name) {
  if (!refdata_config_has(f, name))
    surge_runtime_error("%s: no attribute %s on /config", f->path, name);
  hid_t a = H5Aopen_by_name(f->file, "/config", name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) surge_runtime_error("%s: cannot open attribute %s on /config", f->path, name);
  hid_t space = H5Aget_space(a);
  hssize_t count = H5Sget_simple_extent_npoints(space);
  H5Sclose(space);
  if (count != 1)
    surge_runtime_error("%s: attribute %s on /config holds %lld values, expected one", f->path,
                        name, (long long)count);
  return a;
}

double refdata_config_number(const refdata_t *f, const char *name) {
  hid_t a = open_config_attr(f, name);
  hid_t type = H5Aget_type(a);
  H5T_class_t cls = H5Tget_class(type);
  H5Tclose(type);
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    surge_runtime_error("%s: attribute %s on /config is not a number", f->path, name);
  double v;
  if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0)
    surge_runtime_error("%s: cannot read attribute %s on /config", f->path, name);
  H5Aclose(a);
  return v;
}

char *refdata_config_string(const refdata_t *f, const char *name) {
  hid_t a = open_config_attr(f, name);
  hid_t type = H5Aget_type(a);
  if (H5Tget_class(type) != H5T_STRING)
    surge_runtime_error("%s: attribute %s on /config is not a string", f->path, name);
  char *s;
  if (H5Tis_variable_str(type) > 0) {
    hid_t mem = H5Tcopy(H5T_C_S1);
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(type)); // HDF5 converts no strings between ASCII and UTF-8
    char *vl = NULL;
    if (H5Aread(a, mem, &vl) < 0 || !vl)
      surge_runtime_error("%s: cannot read attribute %s on /config", f->path, name);
    s = xstrdup(vl);
    H5free_memory(vl);
    H5Tclose(mem);
  } else {
    size_t size = H5Tget_size(type);
    s = xcalloc(size + 1, 1);
    if (H5Aread(a, type, s) < 0)
      surge_runtime_error("%s: cannot read attribute %s on /config", f->path, name);
  }
  H5Tclose(type);
  H5Aclose(a);
  return s;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int refdata_list(const refdata_t *f, const char *group, char ***names) {
  if (!refdata_exists(f, group)) surge_runtime_error("%s: no group %s", f->path, group);
  hid_t g = H5Gopen2(f->file, group, H5P_DEFAULT);
  if (g < 0) surge_runtime_error("%s: %s is not a group", f->path, group);
  H5G_info_t info;
  if (H5Gget_info(g, &info) < 0) surge_runtime_error("%s: cannot list group %s", f->path, group);
  char **out = xcalloc(info.nlinks ? info.nlinks : 1, sizeof *out);
  int count = 0;
  for (hsize_t i = 0; i < info.nlinks; i++) {
    ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
    if (len < 0)
      surge_runtime_error("%s: cannot read link %llu of %s", f->path, (unsigned long long)i, group);
    char *name = xmalloc((size_t)len + 1);
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, (size_t)len + 1, H5P_DEFAULT);
    hid_t obj = H5Oopen(g, name, H5P_DEFAULT);
    int is_dataset = obj >= 0 && H5Iget_type(obj) == H5I_DATASET;
    if (obj >= 0) H5Oclose(obj);
    if (is_dataset)
      out[count++] = name;
    else
      free(name);
  }
  H5Gclose(g);
  qsort(out, (size_t)count, sizeof *out, compare_names);
  *names = out;
  return count;
}

void refdata_free_names(char **names, int count) {
  for (int i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

double refdata_rel_error(const float *a, const double *b, size_t n) {
  double diff = 0.0, ref = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)a[i] - b[i];
    diff += d * d;
    ref += b[i] * b[i];
  }
  return ref > 0.0 ? sqrt(diff / ref) : sqrt(diff);
}
