#include "io/model_file.h"

#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "surge_build_config.h"
#include "core/error.h"
#include "io/h5util.h"

static void put_attr_string(hid_t obj, const char *name, const char *value) {
  if (h5util_attr_write_string(obj, name, value, H5T_CSET_ASCII) < 0)
    surge_runtime_error("cannot write HDF5 attribute %s", name);
}

static void put_attr_int64(hid_t obj, const char *name, int64_t value) {
  if (h5util_attr_write_i64(obj, name, value) < 0) surge_runtime_error("cannot write HDF5 attribute %s", name);
}

void model_file_write(const char *path, const graph_t *g, const float *params, long step,
                      const char *model_name, const char *deck_text) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) surge_input_error("%s: path too long", path);
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) surge_runtime_error("%s: cannot create the model file (hint: is the directory writable?)", tmp);
  put_attr_string(f, "program", "surge-train");
  put_attr_string(f, "version", PACKAGE_VERSION);
  put_attr_string(f, "model", model_name);
  put_attr_string(f, "deck", deck_text);
  put_attr_int64(f, "step", step);
  hid_t grp = H5Gcreate2(f, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (grp < 0) surge_runtime_error("%s: cannot create /params", tmp);
  for (int i = 0; i < g->params.n; i++) {
    const slab_tensor_t *t = &g->params.t[i];
    hsize_t dims[SLAB_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++) dims[k] = (hsize_t)t->d[k];
    hid_t space = H5Screate_simple(t->ndim, dims, NULL);
    hid_t d = H5Dcreate2(grp, t->name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = d < 0 ? -1 : H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, params + t->off);
    if (d >= 0) H5Dclose(d);
    H5Sclose(space);
    if (rc < 0) surge_runtime_error("%s: cannot write /params/%s (hint: is the disk full?)", tmp, t->name);
  }
  H5Gclose(grp);
  if (H5Fclose(f) < 0) surge_runtime_error("%s: cannot close the model file (hint: is the disk full?)", tmp);
  if (rename(tmp, path) != 0) surge_runtime_error("%s: cannot rename to %s", tmp, path);
}

void model_file_read(const char *path, const graph_t *g, float *params) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) surge_input_error("%s: cannot open as HDF5 (hint: is it a Surge model file?)", path);
  for (int i = 0; i < g->params.n; i++) {
    const slab_tensor_t *t = &g->params.t[i];
    char dpath[SLAB_NAME_MAX + 16];
    snprintf(dpath, sizeof dpath, "/params/%s", t->name);
    hid_t d = H5Dopen2(f, dpath, H5P_DEFAULT);
    if (d < 0) surge_input_error("%s: %s is missing (a file of another model?)", path, dpath);
    hid_t space = H5Dget_space(d);
    hsize_t dims[8];
    int nd = H5Sget_simple_extent_ndims(space);
    int ok = nd == t->ndim && H5Sget_simple_extent_dims(space, dims, NULL) == nd;
    for (int k = 0; ok && k < nd; k++) ok = dims[k] == (hsize_t)t->d[k];
    H5Sclose(space);
    if (!ok) surge_input_error("%s: %s has another shape than the model's tensor", path, dpath);
    if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, params + t->off) < 0)
      surge_input_error("%s: cannot read %s", path, dpath);
    H5Dclose(d);
  }
  H5Fclose(f);
}
