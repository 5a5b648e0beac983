/* Listing and reading the documents of a corpus. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "tok/files.h"

static void add(file_list_t *l, const char *path) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->path = xrealloc(l->path, l->cap * sizeof *l->path);
  }
  l->path[l->n++] = xstrdup(path);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void add_path(file_list_t *l, const char *path, int depth) {
  struct stat st;
  if (stat(path, &st) != 0) surge_input_error("%s: %s", path, strerror(errno));
  if (S_ISREG(st.st_mode)) {
    add(l, path);
    return;
  }
  if (!S_ISDIR(st.st_mode) || depth > 64) return; /* devices, sockets; link loops end here */
  DIR *d = opendir(path);
  if (!d) surge_input_error("%s: cannot read directory: %s", path, strerror(errno));
  file_list_t names = {0};
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') add(&names, e->d_name);
  closedir(d);
  if (names.n) qsort(names.path, names.n, sizeof *names.path, cmp_names);
  for (size_t i = 0; i < names.n; i++) {
    char sub[PATH_MAX];
    int k = snprintf(sub, sizeof sub, "%s/%s", path, names.path[i]);
    if (k < 0 || (size_t)k >= sizeof sub) surge_input_error("%s/%s: path too long", path, names.path[i]);
    add_path(l, sub, depth + 1);
  }
  file_list_free(&names);
}

void file_list_expand(file_list_t *l, char *const *paths, int npaths) {
  for (int i = 0; i < npaths; i++) add_path(l, paths[i], 0);
  if (l->n == 0) surge_input_error("no documents: the paths given hold no regular files");
}

void file_list_free(file_list_t *l) {
  for (size_t i = 0; i < l->n; i++) free(l->path[i]);
  free(l->path);
  *l = (file_list_t){0};
}

unsigned char *file_read_all(const char *path, size_t max, const char *what, const char *hint, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) surge_input_error("%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0) surge_input_error("%s: cannot stat: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) surge_input_error("%s: a directory, not %s (hint: name a file)", path, what);
  int regular = S_ISREG(st.st_mode);
  if (regular && (uint64_t)st.st_size > max)
    surge_input_error("%s: %" PRIu64 " bytes, more than %s may have (%zu MiB; hint: %s)", path,
                      (uint64_t)st.st_size, what, max >> 20, hint);
  /* read to the end: a regular file in one piece (its size), a pipe or device in growing pieces */
  size_t cap = regular ? (size_t)st.st_size + 1 : (size_t)1 << 16, n = 0;
  unsigned char *s = xmalloc(cap);
  int over = 0;
  for (;;) {
    n += fread(s + n, 1, cap - 1 - n, f);
    if (n < cap - 1) break; /* the end, or an error */
    int c = fgetc(f);
    if (c == EOF) break;
    if (n >= max) {
      over = 1;
      break;
    }
    cap = 2 * cap > max + 1 ? max + 1 : 2 * cap; /* room for c (n < max) and the NUL, never over max bytes */
    s = xrealloc(s, cap);
    s[n++] = (unsigned char)c;
  }
  int bad = ferror(f), why = errno;
  fclose(f);
  if (bad) surge_input_error("%s: read error: %s", path, strerror(why));
  if (over)
    surge_input_error("%s: more than %zu bytes, more than %s may have (%zu MiB; hint: %s)", path, max, what,
                      max >> 20, hint);
  s[n] = '\0';
  *len = n;
  return s;
}
