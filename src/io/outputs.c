/* Outputs against inputs (outputs.h). */
#include "io/outputs.h"

#include <errno.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/run_dir.h"

int io_same_file(const char *a, const char *b) { return strcmp(a, b) == 0 || run_dir_same(a, b); }

/* An output that does not exist yet: its directory must, or the program's work would be lost on it. */
static void check_directory(const io_output_t *o) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", o->path);
  const char *parent = dirname(dir);
  struct stat st;
  if (stat(parent, &st) != 0)
    surge_input_error("%s %s: its directory %s: %s (hint: make the directory first)", o->what, o->path, parent,
                      strerror(errno));
  if (!S_ISDIR(st.st_mode))
    surge_input_error("%s %s: %s is not a directory (hint: name a file in a directory)", o->what, o->path, parent);
}

void io_outputs_check(const io_path_t *in, int nin, const io_output_t *out, int nout) {
  for (int i = 0; i < nout; i++) {
    const io_output_t *o = &out[i];
    if (!o->path) continue;
    if (!o->path[0]) surge_input_error("%s: an empty file name (hint: name the file to write)", o->what);
    for (int k = 0; k < nin; k++)
      if (in[k].path && in[k].path[0] && io_same_file(o->path, in[k].path))
        surge_input_error("%s %s: %s %s is an input of this command: refusing to write over it (hint: give the "
                          "output another name)", o->what, o->path, in[k].what, in[k].path);
    for (int j = 0; j < i; j++)
      if (out[j].path && io_same_file(o->path, out[j].path))
        surge_input_error("%s %s and %s %s both name one file: one would replace the other (hint: give each its "
                          "own file)", out[j].what, out[j].path, o->what, o->path);
    struct stat st;
    int absent = stat(o->path, &st) != 0;
    if (absent && (errno == ENOENT || errno == ENOTDIR) && !o->dir_made) check_directory(o);
    if (absent || S_ISREG(st.st_mode)) continue;
    if (S_ISDIR(st.st_mode))
      surge_input_error("%s %s: it is a directory (hint: name a file)", o->what, o->path);
    if (!o->stream)
      surge_input_error("%s %s: it exists and is not a regular file (a device or fifo): refusing to replace it "
                        "(hint: name a file)", o->what, o->path);
  }
}
