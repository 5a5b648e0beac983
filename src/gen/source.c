#include "gen/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/h5util.h"

void gen_source_read(const char *path, gen_source_t *s) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen(path, "rb");
  if (!f) surge_input_error("%s: cannot open the model file (hint: a run's OUT_DIR/model.h5, a checkpoint, or an "
                            "imported safetensors or llm.c file)", path);
  fclose(f);
  h5util_quiet_t q = h5util_quiet_begin();
  h5util_check_t chk = h5util_checker(path, H5UTIL_INPUT_ERROR);
  chk.lead = "damaged model file: ";
  s->hdf5 = h5util_check(&chk, H5Fis_hdf5(path), "read the file", "") > 0;
  if (s->hdf5) {
    hid_t file = h5util_check(&chk, H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), "open", "");
    if (h5util_attr_read_string(file, "deck", &s->deck) == -1) h5util_fail(&chk, "read the attribute", "/deck");
    if (h5util_attr_read_string(file, "vocab", &s->vocab) == -1) h5util_fail(&chk, "read the attribute", "/vocab");
    if (s->deck && !s->deck[0]) { /* a model file of a run built in code (tests, benchmarks) */
      free(s->deck);
      s->deck = NULL;
    }
    H5Fclose(file);
  }
  h5util_quiet_end(q);
}

void gen_source_free(gen_source_t *s) {
  free(s->deck);
  free(s->vocab);
  memset(s, 0, sizeof *s);
}
