/* Checkpoint files in their directory: names, creating the directory, pruning old checkpoints and
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

int ckpt_mkdirs(const char *dir, char *failed, size_t failed_len) {
  char path[CKPT_PATH];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) {
    snprintf(failed, failed_len, "%s", dir);
    errno = n ? ENAMETOOLONG : ENOENT;
    return -1;
  }
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char keep = path[i];
    path[i] = '\0';
    struct stat st;
    if (mkdir(path, 0777) != 0 && !(errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
      if (errno == EEXIST) errno = ENOTDIR;
      snprintf(failed, failed_len, "%s", path);
      return -1;
    }
    path[i] = keep;
  }
  return 0;
}

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
    fprintf(stderr, "surge: warning: cannot remove old checkpoint file %s: %s\n", path, strerror(errno));
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

int checkpoint_latest(const char *dir, char *path, size_t path_len, comm_t *world) {
  char found[CKPT_PATH] = "";
  if (world->rank == 0) {
    long *steps;
    int n = scan_steps(dir, 0, &steps);
    if (n > 0) ckpt_path(found, sizeof found, dir, steps[n - 1], 0);
    free(steps);
  }
  comm_bcast(world, found, sizeof found, 0, TRAFFIC_OTHER);
  if (!found[0]) return 0;
  if (strlen(found) >= path_len)
    surge_runtime_error("checkpoint path %s is longer than %zu characters", found, path_len - 1);
  memcpy(path, found, strlen(found) + 1);
  return 1;
}
