/* Checkpoint files in their directory: names, pruning old checkpoints and
 * stale temporary files, finding the newest complete checkpoint. Only names that are exactly what
 * ckpt_path writes are ever looked at or removed: anything else in the directory is left alone. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/checkpoint_impl.h"
#include "io/h5serial.h"

static int name_of(char *out, size_t out_len, long step, int temporary) {
  return snprintf(out, out_len, temporary ? ".ckpt-%08ld.h5.tmp" : "ckpt-%08ld.h5", step);
}

void ckpt_path(char *out, size_t out_len, const char *dir, long step, int temporary) {
  char name[64];
  name_of(name, sizeof name, step, temporary);
  int n = snprintf(out, out_len, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= out_len)
    surge_runtime_error("checkpoint path %s/%s is longer than %zu characters", dir, name, out_len - 1);
}

long ckpt_name_step(const char *name, int temporary) {
  const char *digits = name + (temporary ? 6 : 5); // after ".ckpt-" or "ckpt-"
  if (strncmp(name, temporary ? ".ckpt-" : "ckpt-", (size_t)(digits - name)) != 0) return -1;
  size_t nd = strspn(digits, "0123456789");
  if (nd < 8 || nd > 18) return -1;
  long step = strtol(digits, NULL, 10);
  char canonical[64];
  name_of(canonical, sizeof canonical, step, temporary);
  return strcmp(canonical, name) == 0 ? step : -1; // no stray zeros, no suffixes
}

int checkpoint_is_name(const char *name) { return ckpt_name_step(name, 0) >= 0 || ckpt_name_step(name, 1) >= 0; }

/* Whether dir/name is a regular file (a directory or device named like a checkpoint is not one). */
static int is_regular(const char *dir, const char *name) {
  char path[CKPT_PATH];
  struct stat st;
  int n = snprintf(path, sizeof path, "%s/%s", dir, name);
  return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Steps of the checkpoints (temporary: of the temporary files) in dir, regular files only,
 * ascending. Returns the count (0 when dir cannot be read); *steps is malloc'd. */
static int scan_steps(const char *dir, int temporary, long **steps) {
  int n = 0, cap = 16;
  *steps = xmalloc((size_t)cap * sizeof **steps);
  DIR *d = opendir(dir);
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    long step = ckpt_name_step(e->d_name, temporary);
    if (step < 0 || !is_regular(dir, e->d_name)) continue;
    if (n == cap) *steps = xrealloc(*steps, (size_t)(cap *= 2) * sizeof **steps);
    (*steps)[n++] = step;
  }
  closedir(d);
  for (int i = 1; i < n; i++) // insertion sort: a directory holds a handful of checkpoints
    for (int j = i; j > 0 && (*steps)[j - 1] > (*steps)[j]; j--) {
      long t = (*steps)[j];
      (*steps)[j] = (*steps)[j - 1];
      (*steps)[j - 1] = t;
    }
  return n;
}

static void remove_file(const char *dir, long step, int temporary) {
  char path[CKPT_PATH];
  ckpt_path(path, sizeof path, dir, step, temporary);
  if (unlink(path) != 0 && errno != ENOENT)
    surge_warning("cannot remove old checkpoint file %s: %s", path, strerror(errno));
}

void ckpt_prune(const char *dir, long written_step, int keep) {
  long *steps;
  int n = scan_steps(dir, 0, &steps);
  int kept = 1; // the one just written
  for (int i = n - 1; i >= 0; i--) {
    if (steps[i] >= written_step) continue;
    if (kept < keep)
      kept++;
    else
      remove_file(dir, steps[i], 0);
  }
  free(steps);
  n = scan_steps(dir, 1, &steps);
  for (int i = 0; i < n; i++)
    if (steps[i] != written_step) remove_file(dir, steps[i], 1);
  free(steps);
}

/* What dir/ckpt-<name_step>.h5 holds, read from its attributes of / on this process alone. */
static void probe(const char *dir, long name_step, ckpt_found_t *f) {
  memset(f, 0, sizeof *f);
  ckpt_path(f->path, sizeof f->path, dir, name_step, 0);
  f->step = name_step;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0) H5Pset_file_locking(fapl, 0, 1); // a look at the attributes; a writer may hold the file
  hid_t file = fapl < 0 ? -1 : H5Fopen(f->path, H5F_ACC_RDONLY, fapl);
  if (fapl >= 0) H5Pclose(fapl);
  if (file < 0) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  ckpt_root_t root;
  memset(&root, 0, sizeof root);
  const char *attr;
  int64_t version = 0;
  if (h5util_attr_read_i64(file, "format_version", &version) == 0 && version == CHECKPOINT_FORMAT_VERSION &&
      ckpt_root_read(file, &root, &attr) == 0 && strcmp(root.format, CKPT_FORMAT_NAME) == 0 &&
      strlen(root.run_id) < CHECKPOINT_RUN_ID_LEN) {
    if (root.step < 0 || root.step > CHECKPOINT_MAX_STEP)
      surge_input_error("%s: step %lld is out of range (0 to %ld): the file was not written by a Surge run; remove "
                        "it to resume from an earlier checkpoint", f->path, (long long)root.step, CHECKPOINT_MAX_STEP);
    f->readable = 1;
    f->step = (long)root.step;
    snprintf(f->run_id, sizeof f->run_id, "%s", root.run_id);
  }
  ckpt_root_free(&root);
  H5Fclose(file);
  H5Eclear2(H5E_DEFAULT);
}

int checkpoint_newest(const char *dir, ckpt_found_t *found) {
  H5_SERIAL(); /* io/h5serial.h: one HDF5 call at a time in the process */
  memset(found, 0, sizeof *found);
  long *steps;
  int n = scan_steps(dir, 0, &steps);
  h5util_quiet_t quiet = h5util_quiet_begin();
  ckpt_found_t f;
  for (int i = 0; i < n; i++) {
    probe(dir, steps[i], &f);
    if (f.readable && f.step != steps[i])
      surge_input_error("%s holds step %ld, not the step its name says: it was renamed or copied by hand (hint: "
                        "name it ckpt-%08ld.h5, or remove it)", f.path, f.step, f.step);
    if (i == 0 || f.step > found->step) *found = f;
  }
  h5util_quiet_end(quiet);
  free(steps);
  found->count = n;
  return n > 0;
}

int checkpoint_latest(const char *dir, char *path, size_t path_len, comm_t *world) {
  H5_SERIAL_COLLECTIVE(world); /* io/h5serial.h: one HDF5 call at a time in the process */
  ckpt_found_t found = {.count = 0};
  if (world->rank == 0) checkpoint_newest(dir, &found);
  comm_bcast(world, found.path, sizeof found.path, 0, TRAFFIC_OTHER);
  if (!found.path[0]) return 0;
  if (strlen(found.path) >= path_len)
    surge_runtime_error("checkpoint path %s is longer than %zu characters", found.path, path_len - 1);
  memcpy(path, found.path, strlen(found.path) + 1);
  return 1;
}

int checkpoint_remove_all(const char *dir) {
  int removed = 0;
  for (int temporary = 0; temporary < 2; temporary++) {
    long *steps;
    int n = scan_steps(dir, temporary, &steps);
    for (int i = 0; i < n; i++) {
      char path[CKPT_PATH];
      ckpt_path(path, sizeof path, dir, steps[i], temporary);
      if (unlink(path) != 0 && errno != ENOENT)
        surge_runtime_error("cannot remove %s: %s (hint: the checkpoints of the run being replaced must go)", path,
                            strerror(errno));
      removed++;
    }
    free(steps);
  }
  return removed;
}
