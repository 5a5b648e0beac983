/* surge-report's outputs against its inputs (report.h): a log name typed after --csv, or a figure
 * directory that holds a log, must not cost that log. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/h5util.h"
#include "io/outputs.h"
#include "report/report.h"

static int is_hdf5(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  h5util_quiet_t q = h5util_quiet_begin();
  htri_t h = H5Fis_hdf5(path);
  H5Eclear2(H5E_DEFAULT);
  h5util_quiet_end(q);
  return h > 0;
}

void report_outputs_check(const char *const *logs, int nlogs, const char *csv, const char *json, const char *plot,
                          int nrow) {
  int nfig = 0;
  char **figs = plot ? report_figure_paths(plot, nrow, &nfig) : NULL;
  io_path_t *in = xcalloc((size_t)nlogs + 1, sizeof *in);
  io_output_t *out = xcalloc((size_t)nfig + 2, sizeof *out);
  for (int i = 0; i < nlogs; i++) in[i] = (io_path_t){"LOG", logs[i]};
  int n = 0;
  out[n++] = (io_output_t){"--csv", csv && strcmp(csv, "-") != 0 ? csv : NULL, 1, 0}; /* "-": standard output */
  out[n++] = (io_output_t){"--json", json && strcmp(json, "-") != 0 ? json : NULL, 1, 0};
  for (int i = 0; i < nfig; i++) out[n++] = (io_output_t){"--plot", figs[i], 1, 1}; /* (DIR made with its parents) */
  io_outputs_check(in, nlogs, out, n);
  for (int i = 0; i < n; i++)
    if (out[i].path && is_hdf5(out[i].path))
      surge_input_error("%s %s: %s is an HDF5 file (a log?): refusing to replace it (hint: the option's file comes "
                        "right after it: surge-report LOG.h5 --csv out.csv; remove the file first if it is really to "
                        "go)", out[i].what, out[i].path, out[i].path);
  for (int i = 0; i < nfig; i++) free(figs[i]);
  free(figs);
  free(in);
  free(out);
}
