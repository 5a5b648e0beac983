#include "io/model_file.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "io/h5serial.h"
#include "surge_build_config.h"
#include "core/error.h"
#include "io/checkpoint_impl.h"

typedef struct model_root {
  const char *model, *deck, *run_id, *vocab;
  long step;
} model_root_t;

static int put_root(hid_t file, const void *arg, const char **failed) {
  const model_root_t *r = arg;
  const char *names[6] = {"program", "version", "model", "deck", "run_id", "vocab"};
  const char *values[6] = {"surge-train", PACKAGE_VERSION, r->model, r->deck ? r->deck : "",
                           r->run_id ? r->run_id : "", r->vocab ? r->vocab : ""};
  int n = values[5][0] ? 6 : 5; /* vocab: token data only */
  for (int i = 0; i < n; i++)
    if (h5util_attr_write_string(file, names[i], values[i], H5T_CSET_ASCII) < 0) {
      *failed = names[i];
      return -1;
    }
  *failed = "step";
  return h5util_attr_write_i64(file, "step", r->step);
}

void model_file_write(const char *path, const state_region_t *regions, int nregions, long step, const char *model_name,
                      const char *deck_text, const char *run_id, const char *vocab, comm_t *world) {
  H5_SERIAL_COLLECTIVE(world); /* io/h5serial.h: one HDF5 call at a time in the process */
  char tmp[CKPT_PATH], dir[CKPT_PATH];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) surge_input_error("%s: path too long", path);
  snprintf(dir, sizeof dir, "%s", path);
  model_root_t root = {.model = model_name, .deck = deck_text, .run_id = run_id, .vocab = vocab, .step = step};
  ckpt_file_t f = {.kind = "model file", .dir = dirname(dir), .final = path, .temp = tmp, .put_root = put_root,
                   .root_arg = &root, .regions = regions, .nregions = nregions, .compression = "none"};
  h5util_quiet_t quiet = h5util_quiet_begin();
  ckpt_file_write(&f, world);
  h5util_quiet_end(quiet);
}
