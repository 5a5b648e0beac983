#include "fuzz.h"

#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

jmp_buf fuzz_env;

enum { MAX_FDS = 4096 };
static unsigned char fd_kept[MAX_FDS]; /* open when fuzz_init ran: never closed here */

/* Call fn on every open file descriptor of this process (but the directory's own). */
static void each_fd(void (*fn)(int fd)) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) abort();
  int skip = dirfd(d);
  struct dirent *e;
  int fds[MAX_FDS], n = 0;
  while ((e = readdir(d)) && n < MAX_FDS) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd != skip && fd < MAX_FDS) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) fn(fds[i]);
}

static void keep_fd(int fd) { fd_kept[fd] = 1; }

static void close_new_fd(int fd) {
  if (!fd_kept[fd]) close(fd);
}

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
  each_fd(keep_fd);
}

void fuzz_fds_close(void) { each_fd(close_new_fd); }

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
