/* surge-report's outputs against its inputs (report.h): a log name typed after --csv, or a figure
 * directory that holds a log, must not cost that log. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/h5util.h"
#include "io/run_dir.h"
#include "report/report.h"

/* Whether two paths name one file: the same text, or the same existing file. */
static int same_file(const char *a, const char *b) { return strcmp(a, b) == 0 || run_dir_same(a, b); }

static int is_hdf5(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  h5util_quiet_t q = h5util_quiet_begin();
  htri_t h = H5Fis_hdf5(path);
  H5Eclear2(H5E_DEFAULT);
  h5util_quiet_end(q);
  return h > 0;
}

typedef struct output {
  const char *option, *path;
} output_t;

static void check_one(const output_t *o, const char *const *logs, int nlogs) {
  const char *hint = "the option's file comes right after it: surge-report LOG.h5 --csv out.csv";
  for (int i = 0; i < nlogs; i++)
    if (same_file(o->path, logs[i]))
      surge_input_error("%s %s: %s is an input of this command: refusing to write over it (hint: %s)", o->option,
                        o->path, logs[i], hint);
  if (is_hdf5(o->path))
    surge_input_error("%s %s: %s is an HDF5 file (a log?): refusing to replace it (hint: %s; remove the file "
                      "first if it is really to go)", o->option, o->path, o->path, hint);
}

void report_outputs_check(const char *const *logs, int nlogs, const char *csv, const char *json, const char *plot,
                          int nrow) {
  int nfig = 0;
  char **figs = plot ? report_figure_paths(plot, nrow, &nfig) : NULL;
  output_t *out = xcalloc((size_t)nfig + 2, sizeof *out);
  int n = 0;
  if (csv && strcmp(csv, "-") != 0) out[n++] = (output_t){"--csv", csv};
  if (json && strcmp(json, "-") != 0) out[n++] = (output_t){"--json", json};
  for (int i = 0; i < nfig; i++) out[n++] = (output_t){"--plot", figs[i]};
  for (int i = 0; i < n; i++) {
    check_one(&out[i], logs, nlogs);
    for (int j = 0; j < i; j++)
      if (same_file(out[i].path, out[j].path))
        surge_input_error("%s %s and %s %s both name %s: one would replace the other (hint: give each its own file)",
                          out[j].option, out[j].path, out[i].option, out[i].path, out[i].path);
  }
  for (int i = 0; i < nfig; i++) free(figs[i]);
  free(figs);
  free(out);
}
