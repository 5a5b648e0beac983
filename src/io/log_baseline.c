#include "io/log_baseline.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/h5util.h"

enum { MAX_ROWS = 100000000 }; /* bound before allocating: 800 MB of doubles */

/* The rows of a 1-D double dataset, or NULL with a reason. */
static double *read_series(hid_t f, const char *path, hsize_t *n, char *err, size_t err_len) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) {
    snprintf(err, err_len, "no %s dataset (not a Surge log?)", path);
    return NULL;
  }
  hid_t sp = H5Dget_space(d);
  int nd = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
  *n = 0;
  if (nd == 1) H5Sget_simple_extent_dims(sp, n, NULL);
  double *v = NULL;
  if (nd != 1 || *n == 0 || *n > MAX_ROWS)
    snprintf(err, err_len, "%s has %s", path, nd != 1 ? "not one dimension" : *n == 0 ? "no rows" : "too many rows");
  else {
    v = xcalloc((size_t)*n, sizeof *v);
    if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
      h5util_error_text(err, err_len, "unreadable");
      free(v);
      v = NULL;
    }
  }
  if (sp >= 0) H5Sclose(sp);
  H5Dclose(d);
  return v;
}

double log_baseline_samples_per_sec(const char *path, long skip, char *err, size_t err_len) {
  h5util_quiet_t q = h5util_quiet_begin();
  double result = 0;
  hid_t f = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
  if (f < 0) {
    snprintf(err, err_len, "cannot open it as an HDF5 file");
  } else {
    char *program = NULL;
    hid_t run = H5Lexists(f, "/run", H5P_DEFAULT) > 0 ? H5Gopen2(f, "/run", H5P_DEFAULT) : -1;
    if (run < 0 || h5util_attr_read_string(run, "program", &program) != 0 || strcmp(program, "surge-train") != 0) {
      snprintf(err, err_len, "not a Surge log (no /run@program = \"surge-train\")");
    } else {
      hsize_t n, n2;
      double *sps = read_series(f, "/metrics/samples_per_sec", &n, err, err_len);
      double *sec = sps ? read_series(f, "/metrics/step_time", &n2, err, err_len) : NULL;
      if (sec && n2 != n) snprintf(err, err_len, "/metrics/step_time and /metrics/samples_per_sec differ in length");
      if (sec && n2 == n) {
        // samples over seconds of the rows after the warm-up: sum(samples_per_sec * step_time) / sum(step_time)
        size_t first = (hsize_t)skip < n ? (size_t)skip : 0;
        double samples = 0, seconds = 0;
        for (size_t i = first; i < n; i++)
          if (isfinite(sps[i]) && isfinite(sec[i]) && sec[i] > 0) {
            samples += sps[i] * sec[i];
            seconds += sec[i];
          }
        if (seconds > 0 && samples > 0)
          result = samples / seconds;
        else
          snprintf(err, err_len, "no step with a positive time and throughput");
      }
      free(sps);
      free(sec);
    }
    free(program);
    if (run >= 0) H5Gclose(run);
    H5Fclose(f);
  }
  h5util_quiet_end(q);
  return result;
}
