#include "gen/params_h5.h"

#include <stdio.h>

#include "core/error.h"
#include "io/h5util.h"

static void shape_text(char *out, size_t n, int ndim, const hsize_t *d) {
  int k = snprintf(out, n, "(");
  for (int i = 0; i < ndim && k > 0 && (size_t)k < n; i++) k += snprintf(out + k, n - (size_t)k, i ? ",%llu" : "%llu", (unsigned long long)d[i]);
  if (k > 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, ")");
}

void gen_params_read_h5(const char *path, const graph_t *g, float *params) {
  h5util_quiet_t q = h5util_quiet_begin();
  h5util_check_t chk = h5util_checker(path, H5UTIL_INPUT_ERROR);
  chk.lead = "model file: ";
  hid_t file = h5util_check(&chk, H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), "open", "");
  for (int t = 0; t < g->params.n; t++) {
    const slab_tensor_t *st = &g->params.t[t];
    char h5path[SLAB_NAME_MAX + 16], want[96], got[96];
    snprintf(h5path, sizeof h5path, "/params/%s", st->name);
    if (h5util_exists(file, h5path, H5I_DATASET) != 1)
      surge_input_error("%s: no tensor %s (hint: the deck must describe the model the file holds)", path, h5path);
    hid_t d = h5util_check(&chk, H5Dopen2(file, h5path, H5P_DEFAULT), "open", h5path);
    hid_t sp = h5util_check(&chk, H5Dget_space(d), "read the shape of", h5path);
    hsize_t dims[H5S_MAX_RANK], wd[SLAB_MAX_DIMS];
    int nd = h5util_check(&chk, H5Sget_simple_extent_ndims(sp), "read the shape of", h5path);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    int same = nd == st->ndim;
    for (int i = 0; i < st->ndim; i++) {
      wd[i] = (hsize_t)st->d[i];
      same = same && dims[i] == wd[i];
    }
    shape_text(want, sizeof want, st->ndim, wd);
    shape_text(got, sizeof got, nd, dims);
    if (!same) surge_input_error("%s: tensor %s has shape %s, the deck's model wants %s", path, h5path, got, want);
    hid_t type = h5util_check(&chk, H5Dget_type(d), "read the type of", h5path);
    if (H5Tget_class(type) != H5T_FLOAT) surge_input_error("%s: tensor %s is not floating point", path, h5path);
    unsigned long long bytes, need;
    if (h5util_chunks_whole(d, nd < 2 ? nd : 2, dims, H5Tget_size(type), &bytes, &need) != 1)
      surge_input_error("%s: tensor %s: its storage holds %llu bytes, its shape needs %llu", path, h5path, bytes, need);
    h5util_check(&chk, H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, params + st->off), "read", h5path);
    H5Tclose(type);
    H5Sclose(sp);
    H5Dclose(d);
  }
  H5Fclose(file);
  h5util_quiet_end(q);
}
