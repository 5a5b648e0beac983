#include "fuzz.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

jmp_buf fuzz_env;

static void on_fail(int exit_code, const char *msg) {
  if (exit_code != SURGE_EXIT_INPUT) { // bad input must be an input error, never a runtime failure
    fprintf(stderr, "fuzz: runtime error (exit %d) on input: %s\n", exit_code, msg);
    abort();
  }
  longjmp(fuzz_env, 1);
}

void fuzz_init(void) {
  surge_set_fail_hook(on_fail);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void fuzz_h5_close_all(void) {
  ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (n <= 0) return;
  hid_t *ids = malloc((size_t)n * sizeof *ids);
  n = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_ALL, (size_t)n, ids);
  for (ssize_t pass = 0; pass < 2; pass++) // objects first, then the files they keep open
    for (ssize_t i = 0; i < n; i++) {
      H5I_type_t t = H5Iget_type(ids[i]);
      if (pass == 0 && t == H5I_DATASET) H5Dclose(ids[i]);
      else if (pass == 0 && t == H5I_GROUP) H5Gclose(ids[i]);
      else if (pass == 0 && t == H5I_DATATYPE) H5Tclose(ids[i]);
      else if (pass == 0 && t == H5I_ATTR) H5Aclose(ids[i]);
      else if (pass == 1 && t == H5I_FILE) while (H5Iis_valid(ids[i]) > 0 && H5Fclose(ids[i]) >= 0) {}
    }
  free(ids);
  H5Eclear2(H5E_DEFAULT);
}

char *fuzz_text(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

const char *fuzz_dir(void) {
  static char dir[256] = "";
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/surge-fuzz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) abort();
  }
  return dir;
}

const char *fuzz_file(const uint8_t *data, size_t size, const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
  return path;
}
